"""Shared core of the pairwise contrastive losses (SupCon, SimCLR, HWC, outside-softmax HC).

:func:`contrastive_log_prob` and :func:`_reduce` are the functional core;
:class:`_PairwiseContrastive` holds what the four modules share: validation, the
similarity, the masks of P(i), the ρ lookups and ``forward`` (each loss gives its logits
and pair weights). Every loss built on it is an
:class:`torch.nn.Module` made with a :class:`~hierviz.hierarchy.LabelTree` and a
:class:`~hierviz.geometry.Geometry` and called as ``loss(z, labels)``.
:class:`_LeafLogitLoss` is the same kind of base for the classification losses on leaf
logits (HXE, soft labels), called as ``loss(logits, labels)``.

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
the bug of HobbitLong/SupContrast#141); a batch without any positive pair gives a loss of 0 that
is still attached to the graph.
"""

from __future__ import annotations

import abc
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ._validation import (
    _check_choice,
    _check_embeddings,
    _check_labels,
    _check_logits,
    _check_tau,
    _check_tree,
    _is_hyperbolic,
    _resolve_geometry,
)

__all__ = ["REDUCTIONS", "SIMILARITIES", "INPUT_KINDS", "contrastive_log_prob"]

#: Normalisations of the per-pair terms (see the module docstring).
REDUCTIONS = ("pairs", "anchor")
#: Names accepted by ``similarity=`` (a callable is accepted too).
SIMILARITIES = ("geometry", "cosine", "neg_dist")
#: What a loss consumes, declared by its ``input_kind`` class attribute: ``"embeddings"``
#: (called ``loss(z (B, V, d), labels)``) or ``"logits"`` (called ``loss(logits (B, C), labels)``).
INPUT_KINDS = ("embeddings", "logits")


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

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import contrastive_log_prob
    >>> logp = contrastive_log_prob(torch.tensor([[0.0, 1.0, 1.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    >>> round(float(logp[0, 1].exp()), 4)  # anchor 0: two equal competitors → 1/2 each
    0.5
    """
    n = logits.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=logits.device)
    lse = torch.logsumexp(logits.masked_fill(eye, float("-inf")), dim=1, keepdim=True)
    return logits - lse


def _rescale_tiny(x: torch.Tensor) -> torch.Tensor:
    """Rows of ``x`` (N, d) with max-abs entry below 1e-6 divided by it; others unchanged (bit for bit).

    A cosine similarity does not depend on the norms, but ``F.normalize`` divides by
    ``max(‖x‖, 1e-12)``, so rows of norm ≤ 1e-12 came out shorter than 1 and the loss changed
    (SupCon gave 2.41 for ``z·1e-13`` and 7.66 for ``z``). Rescaling by the
    largest entry first (exact for powers of two, no overflow, no host sync) restores the
    direction; an all-zero row stays zero.
    """
    amax = x.detach().abs().amax(dim=-1, keepdim=True)
    return torch.where(amax < 1e-6, x / amax.clamp_min(torch.finfo(x.dtype).tiny), x)


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


class _PairwiseContrastive(nn.Module, metaclass=abc.ABCMeta):
    """Base of the pairwise contrastive losses: validation, similarity and the masks of P(i).

    Not a loss by itself. Subclasses set ``_needs_tree`` (True when ρ is used),
    ``_min_views`` and ``_needs_labels``, and implement ``_logits_and_weights``: the
    logits ``s_ik`` and the weights of the pairs (i, k) that :meth:`forward` reduces.

    Attributes
    ----------
    input_kind : str
        ``"embeddings"``: the loss is called ``loss(z (B, V, d), labels (B,))`` (see
        :data:`INPUT_KINDS`); a training objective routes its inputs by this attribute.
    """

    input_kind = "embeddings"
    _needs_tree = False
    _min_views = 1
    _needs_labels = True

    def __init__(self, tree: Any, geometry: Any, *, tau: float, reduction: str, similarity: Any):
        super().__init__()
        self.tree = _check_tree(tree, self._needs_tree, type(self).__name__)
        self.geometry = _resolve_geometry(geometry)
        self.tau = _check_tau(tau)
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
        _check_tau(self.tau)
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
            if not _is_hyperbolic(self.geometry):  # cosine: scale-free, also for norms <= 1e-12
                x = _rescale_tiny(x)
            return self.geometry.similarity(x)
        if sim == "cosine":
            xn = F.normalize(_rescale_tiny(x), dim=-1)
            return xn @ xn.T
        if sim == "neg_dist":
            return -self.geometry.pairwise_dist(x)
        out = sim(x)
        if not isinstance(out, torch.Tensor) or out.shape != (x.shape[0], x.shape[0]):
            raise ValueError(
                f"similarity callable must return an (N, N) tensor, got {getattr(out, 'shape', type(out))}"
            )
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

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, d), float32/float64
            Embeddings on the manifold, views laid out along dim 1.
        labels : LongTensor, shape (B,), or None
            Leaf indices in [0, C-1]. Required, except by SimCLR, which ignores them (it
            uses view positives only).

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring of the loss.
        """
        flat, sim, lab, B, V = self._prepare(z, labels, need_labels=self._needs_labels)
        logits, weights = self._logits_and_weights(sim, lab, B, V)
        return _reduce(contrastive_log_prob(logits), weights, self.reduction)

    @abc.abstractmethod
    def _logits_and_weights(
        self, sim: torch.Tensor, lab: torch.Tensor | None, B: int, V: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (N, N) and pair weights (N, N) of ``sim`` (N, N) and labels ``lab`` (B,), N = V·B."""

    @staticmethod
    def _scale_blocks(sim: torch.Tensor, scale_b: torch.Tensor, B: int, V: int) -> torch.Tensor:
        """``sim * tile(scale_b)`` for the view-major layout, by broadcasting (no (N, N) tile)."""
        if scale_b.ndim == 0 or V == 1:
            return sim * scale_b
        return (sim.view(V, B, V, B) * scale_b[None, :, None, :]).view(V * B, V * B)


class _LeafLogitLoss(nn.Module, metaclass=abc.ABCMeta):
    """Base of the classification losses on ``(B, C)`` leaf logits: validation and device.

    Not a loss by itself. Subclasses set ``self.tree``, register their buffers and
    implement ``_loss(logits, labels)`` on validated inputs.
    """

    input_kind = "logits"

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        logits : torch.Tensor, shape (B, C), float32/float64
            Classifier scores over the tree's leaves (leaf order of ``tree``).
        labels : LongTensor, shape (B,)
            Leaf indices in [0, C-1].

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0 (batch mean), differentiable w.r.t. ``logits``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring of the loss.
        """
        logits = _check_logits(logits, int(self.tree.num_leaves))
        lab = _check_labels(labels, logits.shape[0], int(self.tree.num_leaves), logits.device)
        if next(self.buffers()).device != logits.device:
            self.to(logits.device)
        return self._loss(logits, lab)

    @abc.abstractmethod
    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Batch-mean loss of validated ``logits`` (B, C) and ``labels`` (B,) on one device."""
