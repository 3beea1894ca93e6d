"""HWC: the Hierarchy-Weighted Contrastive loss (paper 01, §3.2, Eqs. 5–8).

:func:`hwc_omega` gives the pair multipliers ω (Eqs. 5–6 and the §3.4 clamp),
:func:`hwc_logit_gradient` the analytic gradient of Eq. 8 and :class:`HWCLoss` the loss
(Eq. 7). The views layout, the similarity and the reductions are described in
:mod:`hierviz.losses._core`.
"""

from __future__ import annotations

from typing import Any

import torch

from ._core import _PairwiseContrastive
from ._validation import DEFAULT_TAU, _check_choice, _check_labels, _check_real

__all__ = ["OMEGA_MODES", "HWCLoss", "hwc_omega", "hwc_logit_gradient"]

#: ``omega=`` modes of :class:`HWCLoss`: per-pair ω (Eqs. 5–6) or its batch mean ω̄ (§3.2 control).
OMEGA_MODES = ("pair", "constant")


def hwc_omega(
    rho: torch.Tensor,
    pos_mask: torch.Tensor,
    alpha: float,
    gamma: float,
    alpha_max: float | None = None,
) -> torch.Tensor:
    """Pair multipliers ω_ik of HWC (paper 01, Eqs. 5–6, clamp of §3.4).

    ``ω_ik = a_ik = 1 + α ρ_ik`` for positives ``k ∈ P(i)`` and
    ``ω_ik = b_ik = 1 + γ (1 − ρ_ik)`` for negatives, then clamped to ``[1, 1 + α_max]``
    (no upper clamp when ``alpha_max`` is None).

    Parameters
    ----------
    rho : torch.Tensor, shape (N, N), float, values in [0, 1]
        Tree similarity ρ(y_i, y_k) (paper 01, Eq. 4).
    pos_mask : torch.Tensor, shape (N, N), bool
        ``True`` where k ∈ P(i).
    alpha, gamma : float, ≥ 0
        Positive and negative hierarchy strengths.
    alpha_max : float or None, ≥ 0
        Upper clamp of ω − 1.

    Returns
    -------
    torch.Tensor, shape (N, N), dtype of ``rho``, values in ``[1, 1 + max(α, γ)]``.

    Raises
    ------
    ValueError
        ``alpha``, ``gamma`` or ``alpha_max`` negative or not finite.

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import hwc_omega
    >>> rho = torch.tensor([[1.0, 0.5], [0.5, 1.0]])
    >>> hwc_omega(rho, torch.eye(2, dtype=torch.bool), alpha=0.5, gamma=0.5)  # diagonal positive, off-diagonal negative
    tensor([[1.5000, 1.2500],
            [1.2500, 1.5000]])
    """
    alpha = _check_real(alpha, "alpha", low=0.0)
    gamma = _check_real(gamma, "gamma", low=0.0)
    omega = torch.where(pos_mask, 1.0 + alpha * rho, 1.0 + gamma * (1.0 - rho))
    hi = None if alpha_max is None else 1.0 + _check_real(alpha_max, "alpha_max", low=0.0)
    return omega.clamp(min=1.0, max=hi)


def hwc_logit_gradient(s: torch.Tensor, omega: torch.Tensor | float, pos_mask: torch.Tensor) -> torch.Tensor:
    """Analytic gradient of the per-anchor HWC loss w.r.t. the logits (paper 01, Eq. 8).

    For anchor i with ``L_i = -(1/|P(i)|) Σ_{j∈P(i)} log π_ij`` and
    ``π_ik = exp(ω_ik s_ik) / Σ_{k'≠i} exp(ω_ik' s_ik')``::

        ∂L_i/∂s_iq = (1/|P(i)|) Σ_{j∈P(i)} (−a_ij 1[q=j] + ω_iq π_iq)
                   = ω_iq (π_iq − 1[q∈P(i)] / |P(i)|).

    Rows of anchors with no positive and the diagonal are 0. With ω ≡ 1 this is the
    SupCon gradient ``π_iq − 1[q∈P(i)]/|P(i)|`` (Khosla et al. 2020, Eq. 4 / supp.).
    Summing over i gives the gradient of ``Σ_i L_i``; the ``"anchor"`` reduction divides
    it by the number of anchors with a positive.

    Parameters
    ----------
    s : torch.Tensor, shape (N, N), float
        Logits ``s_ik`` (similarity already divided by τ).
    omega : torch.Tensor (N, N) or float
        Multipliers ω_ik (treated as constants), e.g. from :func:`hwc_omega`.
    pos_mask : torch.Tensor, shape (N, N), bool
        ``True`` where q ∈ P(i); the diagonal is ignored.

    Returns
    -------
    torch.Tensor, shape (N, N), dtype of ``s``.

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import hwc_logit_gradient
    >>> s = torch.zeros(3, 3)
    >>> pos = torch.tensor([[False, True, False], [True, False, False], [False, False, False]])
    >>> hwc_logit_gradient(s, 1.0, pos)  # SupCon: π − 1[P]/|P|; anchor 2 has no positive
    tensor([[ 0.0000, -0.5000,  0.5000],
            [-0.5000,  0.0000,  0.5000],
            [ 0.0000,  0.0000,  0.0000]])
    """
    n = s.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=s.device)
    omega_t = torch.as_tensor(omega, dtype=s.dtype, device=s.device)
    pi = torch.softmax((omega_t * s).masked_fill(eye, float("-inf")), dim=1)
    pos = (pos_mask.bool() & ~eye).to(s.dtype)
    npos = pos.sum(dim=1, keepdim=True)
    grad = omega_t * (pi - pos / npos.clamp_min(1.0))
    grad = torch.where(npos > 0, grad, torch.zeros_like(grad))
    return grad.masked_fill(eye, 0.0)


class HWCLoss(_PairwiseContrastive):
    """HWC, Hierarchy-Weighted Contrastive: SupCon with tree-scaled logits inside the softmax (paper 01, Eqs. 5–7).

    ``L = (1/Σ_i|P(i)|) Σ_i Σ_{j∈P(i)} −log exp(ω_ij s_ij) / Σ_{k≠i} exp(ω_ik s_ik)``
    with ``ω_ij = 1 + α ρ(y_i, y_j)`` on positives (Eq. 5), ``ω_ik = 1 + γ (1 − ρ(y_i, y_k))``
    on negatives (Eq. 6), ω clamped to ``[1, 1 + α_max]`` (§3.4) and ρ the normalised LCA
    depth (Eq. 4, ``tree.rho_matrix``). ω sits *inside* the anchor's softmax: a pair-specific
    temperature ``τ/ω_ik``.

    Reductions and controls:

    * α = γ = 0 → :class:`SupConLoss` (same ``reduction``); with ``positives="view"`` →
      :class:`SimCLRLoss`.
    * ``omega="constant"`` replaces every ω_ik by the batch mean ω̄ over all pairs k ≠ i
      (§3.2): exactly SupCon at the global temperature ``τ/ω̄``.
    * The outside-softmax control is :class:`~hierviz.losses.OutsideSoftmaxHCLoss`.

    Parameters
    ----------
    tree : LabelTree
        Gives ρ = ``tree.rho_matrix`` (C, C).
    geometry : Geometry or str
        Supplies the similarity: cosine/τ on the unit sphere (Euclidean), −d_M/τ (Eq. 1)
        in hyperbolic spaces, unless ``similarity`` overrides it.
    tau : float, > 0, default 0.1
    alpha, gamma : float, ≥ 0, default 0.5
        Positive (Eq. 5) and negative (Eq. 6) strengths.
    alpha_max : float ≥ 0 or None, default None
        ω is clamped to ``[1, 1 + alpha_max]``; None leaves it unclamped above
        (ω ≤ 1 + max(α, γ) anyway).
    omega : {"pair", "constant"}, default "pair"
    positives : {"label", "view"}, default "label"
        ``"label"``: P(i) = other views ∪ same-leaf samples (supervised, as in the paper);
        ``"view"``: P(i) = other views only (SimCLR positives, ω still from the labels).
    reduction : {"pairs", "anchor"}, default "pairs"
        Eq. 7's mean over all positive pairs, or Khosla's per-anchor mean.
    similarity : None, "geometry", "cosine", "neg_dist" or callable

    Raises
    ------
    ValueError
        α or γ < 0, ``alpha_max`` < 0, τ ≤ 0, unknown option, wrong shapes, NaN/inf in
        ``z``, a single view with ``positives="view"``, labels outside the tree.
    TypeError
        ``tree`` missing, non-numeric hyperparameters, non-integer labels.

    Notes
    -----
    Calling convention: ``loss(z, labels)``: ``z`` (B, V, d) float32/float64 on the manifold (V ≥ 1 for
    ``positives="label"``, V ≥ 2 for ``"view"``), ``labels`` (B,) long in [0, C-1] →
    scalar tensor ≥ 0.

    Cost: one (BV × BV) similarity matrix plus O(B²) label-only work for ω (computed
    without gradient on the (B, B) image block and broadcast over the views); no Python
    loop over the batch or the classes. ``benchmarks/bench_losses.py`` measures ≈1.1× our
    SupCon at 2B = 1024, d = 128 on a CPU.

    Sign of the similarity: with cosine, ``s`` can be positive, and a larger ω on a
    distant negative raises its logit and its repulsion (the reading of §3.2). With the
    hyperbolic ``s = −d/τ ≤ 0`` a larger ω *lowers* the logit ``ω s``; the gradient
    factor ``ω_iq π_iq`` of Eq. 8 then trades a larger ω against a smaller softmax share.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import get_geometry
    >>> from hierviz.losses import HWCLoss
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"benign": ["a", "f"], "malignant": ["d", "l"]}})
    >>> ball = get_geometry("poincare")
    >>> z = ball.expmap0(0.3 * torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(0)))
    >>> loss = HWCLoss(tree, ball, tau=0.5, alpha=0.5, gamma=0.5)
    >>> round(loss(z, torch.tensor([0, 1, 2, 3])).item(), 3)
    3.52
    """

    _needs_tree = True

    def __init__(
        self,
        tree: Any,
        geometry: Any,
        *,
        tau: float = DEFAULT_TAU,
        alpha: float = 0.5,
        gamma: float = 0.5,
        alpha_max: float | None = None,
        omega: str = "pair",
        positives: str = "label",
        reduction: str = "pairs",
        similarity: Any = None,
    ):
        super().__init__(tree, geometry, tau=tau, reduction=reduction, similarity=similarity)
        self.alpha = _check_real(alpha, "alpha", low=0.0)
        self.gamma = _check_real(gamma, "gamma", low=0.0)
        self.alpha_max = None if alpha_max is None else _check_real(alpha_max, "alpha_max", low=0.0)
        self.omega = _check_choice(omega, "omega", OMEGA_MODES)
        self.positives = _check_choice(positives, "positives", ("label", "view"))
        self._min_views = 2 if positives == "view" else 1

    def _check_hparams(self) -> None:
        super()._check_hparams()
        _check_real(self.alpha, "alpha", low=0.0)
        _check_real(self.gamma, "gamma", low=0.0)
        if self.alpha_max is not None:
            _check_real(self.alpha_max, "alpha_max", low=0.0)
        _check_choice(self.omega, "omega", OMEGA_MODES)
        _check_choice(self.positives, "positives", ("label", "view"))
        self._min_views = 2 if self.positives == "view" else 1

    def _masks(self, lab: torch.Tensor, B: int, V: int, dtype: torch.dtype, tile: bool = True):
        """Positive mask (N, N) bool and ω — (N, N), or (B, B) if not ``tile``, or a 0-d ω̄ — from labels only."""
        with torch.no_grad():
            if self.positives == "label":
                pos_b = lab[:, None] == lab[None, :]
            else:
                pos_b = torch.eye(B, dtype=torch.bool, device=lab.device)
            omega_b = hwc_omega(self._rho(lab, dtype), pos_b, self.alpha, self.gamma, self.alpha_max)
            pos = self._off_diagonal(self._tile(pos_b, V))
            if self.omega == "constant":
                n = B * V
                # mean of ω_ik over all i and k ≠ i (§3.2): tile sums, remove the diagonal
                total = omega_b.sum() * V * V - omega_b.diagonal().sum() * V
                omega = total / (n * (n - 1))
            else:
                omega = self._tile(omega_b, V) if tile else omega_b
        return pos, omega

    def omega_matrix(self, labels: torch.Tensor, views: int = 2) -> torch.Tensor:
        """ω for a batch, as the loss uses it (for plots and teaching).

        Parameters
        ----------
        labels : LongTensor (B,)
            Leaf indices.
        views : int, ≥ 1, default 2
            V; the result is laid out view-major.

        Returns
        -------
        torch.Tensor, shape (V·B, V·B), float32 (a 0-d tensor ω̄ when ``omega="constant"``).
        The diagonal is meaningless (self pairs are excluded from the softmax).
        """
        self._check_hparams()
        lab = _check_labels(labels, len(labels), self.tree.num_leaves, torch.device("cpu"))
        return self._masks(lab, lab.shape[0], int(views), torch.float32)[1]

    def _logits_and_weights(self, sim, lab, B, V):
        pos, omega_b = self._masks(lab, B, V, sim.dtype, tile=False)
        # ω_ik s_ik with s = sim/τ, folded into one broadcast multiply (no tiled (N, N) ω)
        return self._scale_blocks(sim, omega_b / self.tau, B, V), pos.to(sim.dtype)
