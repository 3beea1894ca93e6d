"""SupCon: the supervised contrastive loss (Khosla et al. 2020), hierarchy-agnostic.

Leaf labels only; the tree is used to check the label range. The views layout, the
similarity and the reductions are described in :mod:`hierviz.losses._core`.
"""

from __future__ import annotations

from typing import Any

from ._core import _PairwiseContrastive
from ._validation import DEFAULT_TAU

__all__ = ["SupConLoss"]


class SupConLoss(_PairwiseContrastive):
    """SupCon: supervised contrastive loss on leaf labels, hierarchy-agnostic (Khosla et al. 2020, ``L_out``, Eq. 2).

    ``P(i)`` = all other embeddings with the same leaf label (the other views of the
    same image included); ``N(i)`` = the rest. ``L = −log exp(s_ij)/Σ_{k≠i} exp(s_ik)``
    averaged per ``reduction``. Equals ``pytorch_metric_learning.losses.SupConLoss``
    (``reduction="anchor"``) on the flattened batch.

    Parameters
    ----------
    tree : LabelTree or None
        Only used to check that labels lie in [0, C-1]; may be None.
    geometry : Geometry or str
        Supplies the similarity (cosine in Euclidean space, −d_M in hyperbolic space).
    tau : float, > 0, default 0.1
        Temperature τ.
    reduction : {"anchor", "pairs"}, default "anchor"
        Khosla's per-anchor mean (default) or paper 01 Eq. 7's mean over all positive pairs.
    similarity : None, "geometry", "cosine", "neg_dist" or callable
        Override of the similarity (see module docstring).

    Raises
    ------
    ValueError
        ``tau`` ≤ 0; unknown ``reduction``/``similarity``; ``z`` of the wrong shape or with
        NaN/inf; ``labels`` of the wrong shape or outside the tree.
    TypeError
        Non-numeric hyperparameters, non-integer ``labels``, missing ``labels``.

    Notes
    -----
    Calling convention: ``loss(z, labels)`` with ``z`` (B, V, d) float on the manifold, V ≥ 1, B·V ≥ 2, and
    ``labels`` (B,) long leaf indices → scalar tensor ≥ 0.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import get_geometry
    >>> from hierviz.losses import SupConLoss
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"benign": ["a", "f"], "malignant": ["d", "l"]}})
    >>> geometry = get_geometry("euclidean")
    >>> z = torch.nn.functional.normalize(torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> loss = SupConLoss(tree, geometry, tau=0.5)
    >>> round(loss(z, torch.tensor([0, 0, 1, 2])).item(), 3)
    1.873
    """

    def __init__(
        self, tree: Any, geometry: Any, *, tau: float = DEFAULT_TAU, reduction: str = "anchor", similarity: Any = None
    ):
        super().__init__(tree, geometry, tau=tau, reduction=reduction, similarity=similarity)

    def _logits_and_weights(self, sim, lab, B, V):
        return sim / self.tau, self._off_diagonal(self._tile(lab[:, None] == lab[None, :], V)).to(sim.dtype)
