"""Contrastive losses: SimCLR (NT-Xent), SupCon, HWC and the outside-softmax control.

Every loss here is an :class:`torch.nn.Module` built with a :class:`~hierviz.tree.LabelTree`
and a :class:`~hierviz.geometry.Geometry` and called as ``loss(z, labels)``.

Layout of the views
-------------------
``z`` has shape ``(B, V, d)``: B images, V augmented views each, already on the
manifold of ``geometry`` (unit sphere for Euclidean, inside the ball for Poincaré,
on the hyperboloid for Lorentz). Internally the views are stacked *view-major*, as in
Khosla et al.'s reference code (``torch.cat(torch.unbind(z, 1))``): flat index
``a = v * B + b`` is view ``v`` of image ``b``. ``labels`` has shape ``(B,)`` and holds
leaf indices of the tree (0..C-1); every view of an image shares its label.

Similarity
----------
``s_ik = sim(z_i, z_k) / τ`` with ``sim = geometry.similarity`` unless ``similarity=``
overrides it: cosine for the Euclidean geometry, ``-d_M`` (paper 01, Eq. 1) for the
hyperbolic ones. ``similarity="cosine"`` forces cosine, ``"neg_dist"`` forces
``-geometry.pairwise_dist`` (Eq. 1 in every space), and a callable ``f(x (N, d)) -> (N, N)``
is used as is.

Normalisation (``reduction``)
-----------------------------
``"pairs"``  — paper 01 Eq. 7: the per-pair terms ``-log p_ij`` are summed over all
anchors and their positives and divided by ``Σ_i |P(i)|``.
``"anchor"`` — Khosla et al. 2020 (Eq. 2, ``L_out``) and pytorch-metric-learning: each
anchor's terms are averaged over its own positives, then averaged over the anchors that
have at least one positive. The two agree whenever every anchor has the same number of
positives (e.g. SimCLR). Compare losses only under the same reduction.

An anchor without any positive contributes nothing under either reduction (never a NaN:
the SupContrast issue #141 bug); a batch without any positive pair gives a loss of 0 that
is still attached to the graph.
"""
from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "REDUCTIONS",
    "SIMILARITIES",
    "OMEGA_MODES",
    "SimCLRLoss",
    "SupConLoss",
    "HWCLoss",
    "HierarchicalContrastiveLoss",
    "hwc_omega",
    "hwc_logit_gradient",
    "contrastive_log_prob",
]

REDUCTIONS = ("pairs", "anchor")
SIMILARITIES = ("geometry", "cosine", "neg_dist")
OMEGA_MODES = ("pair", "constant")

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


# ---------------------------------------------------------------------------- validation
def _check_real(value: Any, name: str, *, low: float | None = None, strict: bool = False,
                high: float | None = None) -> float:
    """Return ``float(value)`` after checking it is a finite real number in range.

    Raises
    ------
    TypeError
        ``value`` is not a real number (bool included).
    ValueError
        ``value`` is NaN/inf, below ``low`` (or equal when ``strict``) or above ``high``.
    """
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v <= low if strict else v < low):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def _resolve_geometry(geometry: Any):
    """Accept a Geometry object or a geometry name ("euclidean", "poincare", "lorentz")."""
    if isinstance(geometry, str):
        from hierviz.geometry import get_geometry

        return get_geometry(geometry)
    if geometry is None:
        raise TypeError("geometry is required (a hierviz.geometry.Geometry or a name such as 'euclidean')")
    for attr in ("similarity", "pairwise_dist"):
        if not callable(getattr(geometry, attr, None)):
            raise TypeError(f"geometry must be a hierviz Geometry (missing .{attr}), got {type(geometry).__name__}")
    return geometry


def _is_hyperbolic(geometry: Any) -> bool:
    return getattr(geometry, "name", "euclidean") != "euclidean"


def _check_embeddings(z: Any, geometry: Any, *, min_views: int, who: str) -> tuple[torch.Tensor, int, int]:
    """Validate ``z`` (B, V, d) and return the view-major flat (V*B, d) tensor, B and V.

    Raises
    ------
    TypeError
        ``z`` is not a floating tensor/array.
    ValueError
        Wrong number of dimensions, fewer than ``min_views`` views, fewer than two
        embeddings in all, NaN/inf entries, or (hyperbolic) points off the manifold.
    """
    if not isinstance(z, torch.Tensor):
        z = torch.as_tensor(np.asarray(z))
    if not torch.is_floating_point(z):
        raise TypeError(f"z must be a floating-point tensor, got dtype {z.dtype}")
    if z.ndim != 3:
        raise ValueError(
            f"z must have shape (B, V, d) (B images, V views); got shape {tuple(z.shape)}. "
            "For one view per image use z.unsqueeze(1)."
        )
    B, V, _ = z.shape
    if V < min_views:
        raise ValueError(f"z has V={V} view(s) but {who} needs at least {min_views} views per image (z of shape (B, V, d))")
    if B * V < 2:
        raise ValueError(f"z holds {B * V} embedding(s); {who} needs at least 2 (z of shape (B, V, d))")
    if not bool(torch.isfinite(z).all()):
        raise ValueError(f"z contains NaN or inf ({int((~torch.isfinite(z)).sum())} entries); check the encoder output")
    flat = z.transpose(0, 1).reshape(V * B, z.shape[-1])
    if _is_hyperbolic(geometry) and hasattr(geometry, "check_point"):
        geometry.check_point(flat, name="z")
    return flat, B, V


def _check_labels(labels: Any, batch: int, num_leaves: int | None, device: torch.device) -> torch.Tensor:
    """Validate ``labels`` (B,) integer leaf indices in [0, C-1]; returns a long tensor on ``device``.

    Raises
    ------
    TypeError
        ``labels`` is None or not integer.
    ValueError
        Wrong shape, or a value outside [0, C-1] (C = the tree's number of leaves).
    """
    if labels is None:
        raise TypeError("labels is required (LongTensor of leaf indices, shape (B,))")
    if not isinstance(labels, torch.Tensor):
        arr = np.asarray(labels)
        if arr.dtype == object or arr.dtype.kind not in "iu":
            raise TypeError(f"labels must be integer leaf indices, got dtype {arr.dtype}")
        labels = torch.as_tensor(arr)
    if labels.dtype not in _INT_DTYPES:
        raise TypeError(f"labels must hold integer leaf indices, got dtype {labels.dtype}")
    if labels.shape != (batch,):
        raise ValueError(f"labels must have shape (B,) = ({batch},) to match z, got {tuple(labels.shape)}")
    labels = labels.to(device=device, dtype=torch.long)
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or (num_leaves is not None and hi >= num_leaves):
        rng = f"[0, {num_leaves - 1}] (the tree has C = {num_leaves} leaves)" if num_leaves is not None else ">= 0"
        raise ValueError(f"labels has values outside {rng}: min {lo}, max {hi}")
    return labels


def _check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def _check_tree(tree: Any, required: bool, who: str):
    if tree is None:
        if required:
            raise TypeError(f"{who} needs a LabelTree (tree=None given)")
        return None
    if not hasattr(tree, "rho_matrix") or not hasattr(tree, "num_leaves"):
        raise TypeError(f"tree must be a hierviz LabelTree, got {type(tree).__name__}")
    return tree


# ---------------------------------------------------------------------------- functional core
def contrastive_log_prob(logits: torch.Tensor) -> torch.Tensor:
    """Row-wise log-softmax over ``k ≠ i`` of an (N, N) logit matrix.

    The diagonal (self-similarity) is excluded with ``-inf`` before a max-subtracted
    ``logsumexp``; the returned diagonal holds the finite value ``logits_ii - lse_i``
    (meaningless, but finite so that multiplying it by a zero weight never gives NaN).

    Parameters
    ----------
    logits : torch.Tensor, shape (N, N), float32/float64, N ≥ 2
        ``ω_ik s_ik`` (HWC) or ``s_ik`` (SupCon/SimCLR), finite.

    Returns
    -------
    torch.Tensor, shape (N, N)
        ``log p_ik = logits_ik − log Σ_{k'≠i} exp(logits_ik')``.
    """
    n = logits.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=logits.device)
    lse = torch.logsumexp(logits.masked_fill(eye, float("-inf")), dim=1, keepdim=True)
    return logits - lse


def _reduce(log_prob: torch.Tensor, weights: torch.Tensor, reduction: str) -> torch.Tensor:
    """Weighted negative log-likelihood, normalised per ``reduction`` (see module docstring)."""
    per_anchor = -(weights * log_prob).sum(dim=1)
    count = weights.sum(dim=1)
    if reduction == "pairs":
        return per_anchor.sum() / count.sum().clamp_min(1e-12)
    valid = count > 0
    mean_anchor = per_anchor / count.clamp_min(1e-12)
    nvalid = valid.sum().clamp_min(1).to(log_prob.dtype)
    return torch.where(valid, mean_anchor, torch.zeros_like(mean_anchor)).sum() / nvalid


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


# ---------------------------------------------------------------------------- modules
class _PairwiseContrastive(nn.Module):
    """Shared machinery: validation, similarity and the masks of P(i)."""

    _needs_tree = False
    _min_views = 1

    def __init__(self, tree: Any, geometry: Any, *, tau: float, reduction: str, similarity: Any):
        super().__init__()
        self.tree = _check_tree(tree, self._needs_tree, type(self).__name__)
        self.geometry = _resolve_geometry(geometry)
        self.tau = _check_real(tau, "tau", low=0.0, strict=True)
        self.reduction = _check_choice(reduction, "reduction", REDUCTIONS)
        if not (similarity is None or callable(similarity)):
            _check_choice(similarity, "similarity", SIMILARITIES)
        self.similarity = similarity
        self._rho_cache: dict[tuple[str, torch.dtype], torch.Tensor] = {}

    def extra_repr(self) -> str:
        keys = ("tau", "alpha", "gamma", "alpha_max", "omega", "positives", "reduction")
        parts = [f"{k}={getattr(self, k)!r}" for k in keys if hasattr(self, k)]
        return ", ".join(parts + [f"geometry={self.geometry!r}"])

    # -- hyperparameters are plain attributes (sliders may set them); re-checked each call
    def _check_hparams(self) -> None:
        _check_real(self.tau, "tau", low=0.0, strict=True)
        _check_choice(self.reduction, "reduction", REDUCTIONS)

    def pairwise_similarity(self, x: torch.Tensor) -> torch.Tensor:
        """(N, N) similarity ``sim(x_i, x_k)`` before dividing by τ.

        Parameters
        ----------
        x : torch.Tensor, shape (N, d), on the manifold

        Returns
        -------
        torch.Tensor, shape (N, N)
            ``geometry.similarity(x)`` by default (cosine / −d_M, paper 01 Eq. 1).
        """
        sim = self.similarity
        if sim is None or sim == "geometry":
            return self.geometry.similarity(x)
        if sim == "cosine":
            xn = F.normalize(x, dim=-1)
            return xn @ xn.T
        if sim == "neg_dist":
            return -self.geometry.pairwise_dist(x)
        out = sim(x)
        if not isinstance(out, torch.Tensor) or out.shape != (x.shape[0], x.shape[0]):
            raise ValueError(f"similarity callable must return an (N, N) tensor, got {getattr(out, 'shape', type(out))}")
        return out

    def _rho(self, labels: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        key = (str(labels.device), dtype)
        if key not in self._rho_cache:
            self._rho_cache[key] = self.tree.rho_matrix.to(device=labels.device, dtype=dtype)
        rho = self._rho_cache[key]
        return rho[labels][:, labels]

    @staticmethod
    def _tile(m: torch.Tensor, views: int) -> torch.Tensor:
        """(B, B) → (V·B, V·B) for the view-major layout."""
        return m if views == 1 else m.repeat(views, views)

    @staticmethod
    def _off_diagonal(m: torch.Tensor) -> torch.Tensor:
        return m.fill_diagonal_(False)

    def _prepare(self, z: Any, labels: Any, *, need_labels: bool):
        self._check_hparams()
        flat, B, V = _check_embeddings(z, self.geometry, min_views=self._min_views, who=type(self).__name__)
        lab = None
        if need_labels or labels is not None:
            lab = _check_labels(labels, B, None if self.tree is None else self.tree.num_leaves, flat.device)
        sim = self.pairwise_similarity(flat)
        return flat, sim, lab, B, V

    @staticmethod
    def _scale_blocks(sim: torch.Tensor, scale_b: torch.Tensor, B: int, V: int) -> torch.Tensor:
        """``sim * tile(scale_b)`` for the view-major layout, by broadcasting (no (N, N) tile)."""
        if scale_b.ndim == 0 or V == 1:
            return sim * scale_b
        return (sim.view(V, B, V, B) * scale_b[None, :, None, :]).view(V * B, V * B)


class SupConLoss(_PairwiseContrastive):
    """Supervised contrastive loss (Khosla et al. 2020, ``L_out``, Eq. 2).

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
    """

    def __init__(self, tree: Any, geometry: Any, *, tau: float = 0.1, reduction: str = "anchor",
                 similarity: Any = None):
        super().__init__(tree, geometry, tau=tau, reduction=reduction, similarity=similarity)

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, d), float32/float64
            Embeddings on the manifold, views laid out along dim 1.
        labels : LongTensor, shape (B,)
            Leaf indices in [0, C-1].

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring.
        """
        flat, sim, lab, B, V = self._prepare(z, labels, need_labels=True)
        pos = self._off_diagonal(self._tile(lab[:, None] == lab[None, :], V))
        return _reduce(contrastive_log_prob(sim / self.tau), pos.to(sim.dtype), self.reduction)


class SimCLRLoss(_PairwiseContrastive):
    """SimCLR / NT-Xent loss (Chen et al. 2020): view positives only.

    ``P(i)`` = the other V − 1 views of the same image; every other embedding is a
    negative, whatever its label. Equivalent to :class:`SupConLoss` with the image index
    as the label (Khosla et al.'s "unsupervised" mode). With V = 2 it equals
    ``pytorch_metric_learning.losses.NTXentLoss`` with the image index as label; for V > 2
    NTXentLoss leaves the other positives out of each denominator, we keep them in (as
    Khosla et al.). Both reductions coincide here (every anchor has V − 1 positives).

    Parameters
    ----------
    tree : LabelTree or None
        Unused (accepted so that every loss is built the same way).
    geometry : Geometry or str
        Supplies the similarity.
    tau : float, > 0, default 0.1
        Temperature τ.
    similarity : None, "geometry", "cosine", "neg_dist" or callable
        Override of the similarity.

    Raises
    ------
    ValueError
        ``tau`` ≤ 0; V < 2 ("a single view where the loss needs two"); NaN/inf in ``z``.

    Notes
    -----
    Calling convention: ``loss(z, labels=None)``; ``z`` (B, V, d), V ≥ 2; ``labels`` are ignored (checked when
    given) → scalar tensor ≥ 0.
    """

    _min_views = 2

    def __init__(self, tree: Any, geometry: Any, *, tau: float = 0.1, similarity: Any = None):
        super().__init__(tree, geometry, tau=tau, reduction="pairs", similarity=similarity)

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, d), float32/float64
            Embeddings on the manifold, views laid out along dim 1.
        labels : LongTensor, shape (B,) or None
            Leaf indices in [0, C-1]. Ignored (SimCLR uses view positives only).

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring.
        """
        flat, sim, _, B, V = self._prepare(z, labels, need_labels=False)
        eye_b = torch.eye(B, dtype=torch.bool, device=flat.device)
        pos = self._off_diagonal(self._tile(eye_b, V))
        return _reduce(contrastive_log_prob(sim / self.tau), pos.to(sim.dtype), self.reduction)


class HWCLoss(_PairwiseContrastive):
    """Hierarchy-Weighted Contrastive loss (paper 01, §3.2, Eqs. 5–7).

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
    * The outside-softmax control is :class:`HierarchicalContrastiveLoss`.

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
    """

    _needs_tree = True

    def __init__(self, tree: Any, geometry: Any, *, tau: float = 0.1, alpha: float = 0.5, gamma: float = 0.5,
                 alpha_max: float | None = None, omega: str = "pair", positives: str = "label",
                 reduction: str = "pairs", similarity: Any = None):
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

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, d), float32/float64
            Embeddings on the manifold, views laid out along dim 1.
        labels : LongTensor, shape (B,)
            Leaf indices in [0, C-1].

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring.
        """
        flat, sim, lab, B, V = self._prepare(z, labels, need_labels=True)
        pos, omega_b = self._masks(lab, B, V, sim.dtype, tile=False)
        # ω_ik s_ik with s = sim/τ, folded into one broadcast multiply (no tiled (N, N) ω)
        logits = self._scale_blocks(sim, omega_b / self.tau, B, V)
        return _reduce(contrastive_log_prob(logits), pos.to(sim.dtype), self.reduction)


class HierarchicalContrastiveLoss(_PairwiseContrastive):
    """Outside-softmax "Hierarchical Contrastive" baseline (paper 01, §4.3 and §4.6).

    Per-pair weights multiply the per-pair losses; the softmax is SupCon's, untouched::

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
    """

    _needs_tree = True

    def __init__(self, tree: Any, geometry: Any, *, tau: float = 0.1, alpha: float = 0.5,
                 reduction: str = "pairs", similarity: Any = None):
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

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, d), float32/float64
            Embeddings on the manifold, views laid out along dim 1.
        labels : LongTensor, shape (B,)
            Leaf indices in [0, C-1].

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring.
        """
        flat, sim, lab, B, V = self._prepare(z, labels, need_labels=True)
        return _reduce(contrastive_log_prob(sim / self.tau), self.pair_weights(lab, V, sim.dtype), self.reduction)
