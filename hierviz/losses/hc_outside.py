"""Outside-softmax hierarchical contrastive baseline (paper 01, §4.3 and §4.6).

:class:`OutsideSoftmaxHCLoss` weights SupCon's per-pair losses by tree similarity and
leaves the softmax untouched: the control that separates HWC's in-softmax scaling from
plain loss reweighting. ``HierarchicalContrastiveLoss`` is its deprecated 0.1 name.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from ._core import _PairwiseContrastive
from ._validation import DEFAULT_TAU, _check_real

__all__ = ["OutsideSoftmaxHCLoss", "HierarchicalContrastiveLoss"]


class OutsideSoftmaxHCLoss(_PairwiseContrastive):
    """Outside-softmax HC baseline: SupCon with tree-weighted per-pair losses (paper 01, §4.3, §4.6).

    A *baseline*, not a method of paper 01: the "Hierarchical Contrastive (outside-softmax)"
    control that the paper compares HWC against (0.1 called it
    ``HierarchicalContrastiveLoss``). Per-pair weights multiply the per-pair losses; the
    softmax is SupCon's, untouched::

        L = Σ_i Σ_{k≠i} w_ik (−log p_ik) / Σ_i Σ_{k≠i} w_ik,   p_ik = exp(s_ik)/Σ_{k'≠i} exp(s_ik')

    with ``w_ik = 1`` for k ∈ P(i) (same leaf or other view) and ``w_ik = α ρ(y_i, y_k)``
    otherwise: samples that share ancestors become soft positives in proportion to the
    tree similarity. (Paper 01 gives no equation for this baseline; this is our
    instantiation of "multiplies per-pair losses by tree similarity without altering the
    within-softmax competition".) ``reduction="anchor"`` normalises each anchor by its own
    Σ_k w_ik, then averages the anchors. α = 0, or a flat tree (ρ = 0 across leaves), gives
    exactly :class:`SupConLoss` with the same reduction.

    Parameters
    ----------
    tree : LabelTree
    geometry : Geometry or str
    tau : float, > 0, default 0.1
    alpha : float, ≥ 0, default 0.5
        Weight of tree-similar (non-positive) pairs.
    reduction : {"pairs", "anchor"}, default "pairs"
    similarity : None, "geometry", "cosine", "neg_dist" or callable

    Raises
    ------
    ValueError
        α < 0, τ ≤ 0, bad shapes, NaN/inf in ``z``, labels outside the tree.

    Notes
    -----
    Calling convention: ``loss(z, labels)``: ``z`` (B, V, d), ``labels`` (B,) → scalar tensor ≥ 0.
    Compare with :class:`~hierviz.losses.HWCLoss`, which puts the tree inside the softmax.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import get_geometry
    >>> from hierviz.losses import OutsideSoftmaxHCLoss
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"benign": ["a", "f"], "malignant": ["d", "l"]}})
    >>> geometry = get_geometry("euclidean")
    >>> z = torch.nn.functional.normalize(torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> loss = OutsideSoftmaxHCLoss(tree, geometry, tau=0.5, alpha=0.5)
    >>> round(loss(z, torch.tensor([0, 1, 2, 3])).item(), 3)
    2.067
    """

    _needs_tree = True

    def __init__(
        self,
        tree: Any,
        geometry: Any,
        *,
        tau: float = DEFAULT_TAU,
        alpha: float = 0.5,
        reduction: str = "pairs",
        similarity: Any = None,
    ):
        super().__init__(tree, geometry, tau=tau, reduction=reduction, similarity=similarity)
        self.alpha = _check_real(alpha, "alpha", low=0.0)

    def _check_hparams(self) -> None:
        super()._check_hparams()
        _check_real(self.alpha, "alpha", low=0.0)

    def pair_weights(self, labels: torch.Tensor, views: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(V·B, V·B) weights w_ik (view-major, zero diagonal).

        Parameters
        ----------
        labels : LongTensor (B,)
        views : int ≥ 1
        dtype : torch.dtype

        Returns
        -------
        torch.Tensor, shape (V·B, V·B), values in [0, 1] ∪ {1}.
        """
        lab = torch.as_tensor(labels)
        with torch.no_grad():
            pos_b = lab[:, None] == lab[None, :]
            w_b = torch.where(pos_b, torch.ones((), dtype=dtype, device=lab.device), self.alpha * self._rho(lab, dtype))
            w = self._tile(w_b, views)
            w.fill_diagonal_(0.0)
        return w

    def _logits_and_weights(self, sim, lab, B, V):
        return sim / self.tau, self.pair_weights(lab, V, sim.dtype)


class HierarchicalContrastiveLoss(OutsideSoftmaxHCLoss):
    """Deprecated alias of :class:`OutsideSoftmaxHCLoss`; will be removed in 0.3.

    Same arguments and arithmetic; building one emits a :class:`DeprecationWarning`.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        warnings.warn(
            "HierarchicalContrastiveLoss is deprecated (it is the outside-softmax baseline): "
            "use hierviz.losses.OutsideSoftmaxHCLoss; the old name will be removed in 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)
