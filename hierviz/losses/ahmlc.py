"""A-HMLC: hierarchical contrastive learning with one feature-attention head per level (Paper 02 (HMLC), §3, Eq. 5).

Each level ``h`` has single-layer query and key maps ``Q_h, K_h: ℝ^d → ℝ^d`` on the embedding;
their attention weights ``softmax(Q_h z ⊙ K_h z / √d)`` form a *soft* feature mask that
multiplies the embedding before level ``h``'s contrastive term (Eq. 4 with ``z → z ⊙ M_h``).
The heads are trainable; a training objective owns them, so the loop trains and checkpoints
their parameters with the head's learning rate.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedParameter

from ._validation import _NOT_GIVEN, DEFAULT_TAU
from .hmlc import _MaskedHMLC

__all__ = ["LevelAttention", "AHMLCLoss"]


class LevelAttention(LazyModuleMixin, nn.Module):
    """``L`` feature-attention heads: ``a_h(z) = softmax((Q_h z + b^Q_h) ⊙ (K_h z + b^K_h) / √d)`` (Paper 02 (HMLC), Eq. 5).

    Our reading of Eq. 5's shapes: ``Q·K`` is the element-wise product of the query and key
    vectors of *one* embedding (``d`` numbers), and the softmax runs over the ``d`` features,
    so ``a_h ∈ Δ^{d-1}`` is a soft selection of features for level ``h``. (Vaswani-style
    token attention would need several tokens per image; an embedding is one vector.) The
    mask returned by :meth:`masks` is ``d · a_h``, so that uniform attention leaves ``z``
    unchanged and the similarity keeps its scale.

    Parameters
    ----------
    levels : int, ≥ 1
        ``L``, one head per level.
    dim : int or None, default None
        ``d``; None infers it at the first call (a lazy module, like ``nn.LazyLinear``).

    Attributes
    ----------
    q_weight, k_weight : Parameter, shape (L, d, d)
    q_bias, k_bias : Parameter, shape (L, d)
        Initialised like ``nn.Linear`` (uniform ±1/√d).

    Examples
    --------
    >>> import torch
    >>> att = LevelAttention(2, dim=4)
    >>> a = att(torch.randn(3, 2, 4))
    >>> tuple(a.shape), torch.allclose(a.sum(-1), torch.ones(2, 3, 2))
    ((2, 3, 2, 4), True)
    """

    cls_to_become = None

    def __init__(self, levels: int, dim: int | None = None):
        super().__init__()
        if isinstance(levels, bool) or not isinstance(levels, int) or levels < 1:
            raise ValueError(f"levels must be an integer >= 1, got {levels!r}")
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
            raise ValueError(f"dim must be None or an integer >= 1, got {dim!r}")
        self.levels = levels
        if dim is None:
            self.q_weight = UninitializedParameter()
            self.k_weight = UninitializedParameter()
            self.q_bias = UninitializedParameter()
            self.k_bias = UninitializedParameter()
        else:
            self.q_weight = nn.Parameter(torch.empty(levels, dim, dim))
            self.k_weight = nn.Parameter(torch.empty(levels, dim, dim))
            self.q_bias = nn.Parameter(torch.empty(levels, dim))
            self.k_bias = nn.Parameter(torch.empty(levels, dim))
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """``nn.Linear``'s default initialisation, head by head."""
        if self.has_uninitialized_params():
            return
        bound = 1.0 / math.sqrt(self.q_weight.shape[-1])
        for p in (self.q_weight, self.k_weight, self.q_bias, self.k_bias):
            nn.init.uniform_(p, -bound, bound)

    def initialize_parameters(self, z: torch.Tensor) -> None:  # called by LazyModuleMixin before the first forward
        if self.has_uninitialized_params():
            d = z.shape[-1]
            with torch.no_grad():
                for name in ("q_weight", "k_weight"):
                    getattr(self, name).materialize((self.levels, d, d), dtype=z.dtype, device=z.device)
                for name in ("q_bias", "k_bias"):
                    getattr(self, name).materialize((self.levels, d), dtype=z.dtype, device=z.device)
            self.reset_parameters()

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Attention weights ``(L, *batch, d)`` of embeddings ``z`` (``*batch``, d); each sums to 1 over d."""
        d = z.shape[-1]
        if d != self.q_weight.shape[-1]:
            raise ValueError(f"z has d={d} features but the attention heads were built for d={self.q_weight.shape[-1]}")
        q = torch.einsum("...i,hoi->h...o", z, self.q_weight)
        k = torch.einsum("...i,hoi->h...o", z, self.k_weight)
        shape = (self.levels,) + (1,) * (z.ndim - 1) + (d,)
        q = q + self.q_bias.view(shape)
        k = k + self.k_bias.view(shape)
        return torch.softmax(q * k / math.sqrt(d), dim=-1)

    def masks(self, z: torch.Tensor) -> torch.Tensor:
        """Soft masks ``d · a_h(z)``, shape ``(L, *batch, d)`` (1 everywhere under uniform attention)."""
        return z.shape[-1] * self(z)


class AHMLCLoss(_MaskedHMLC):
    """A-HMLC: HMCE on attention-weighted embeddings, one head per level (Paper 02 (HMLC), §3, Eqs. 4-5).

    Level ``h`` compares ``z ⊙ M_h(z)`` with the soft mask ``M_h = d · a_h(z)`` of
    :class:`LevelAttention` (computed per view), inside :class:`HMLCLoss` in ``"paper"`` mode.
    Gradients reach both ``z`` and the attention heads. With all query weights and biases at
    zero the attention is uniform and A-HMLC equals HMLC with the same settings.

    Parameters
    ----------
    tree : LabelTree, optional
        Gives ``L = tree.height`` and derives level labels from leaf labels.
    levels : int, optional
        ``L`` when no tree is given.
    dim : int or None, default None
        Embedding dimension ``d`` (None: inferred at the first call).
    tau : float, > 0, default 0.1
        The temperature τ (``temperature`` before 0.3, still accepted with a DeprecationWarning).
    loss_type : {"hmc", "hce", "hmce"}, default "hmce"
    layer_penalty : {"exp", "pow2", "linear"}, default "linear"
        "a linear scaling was employed" (§3).
    order : {"class", "category"}, default "class"
    features : callable or None, default None
        Map applied to ``z`` (B, V, d) before masking, e.g. ``geometry.logmap0`` so that a
        hyperbolic embedding is masked in the tangent space at the origin (what the
        ``"g-hmlc"``/``"a-hmlc"`` methods do in a hyperbolic geometry; the paper is Euclidean).

    Attributes
    ----------
    attention : LevelAttention
        The trainable heads.
    last_attention : torch.Tensor or None
        ``(L, B, V, d)`` attention weights of the last call, detached (for figures).

    Raises
    ------
    ValueError
        Neither ``tree`` nor ``levels``; level labels with a number of columns other than
        ``L``; the errors of :class:`HMLCLoss`.

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import AHMLCLoss, HMLCLoss
    >>> g = torch.Generator().manual_seed(0)
    >>> z = torch.nn.functional.normalize(torch.randn(4, 2, 8, generator=g), dim=-1)
    >>> y = torch.tensor([[0, 0], [1, 0], [2, 1], [2, 1]])
    >>> loss = AHMLCLoss(levels=2, dim=8, tau=0.5)
    >>> _ = [torch.nn.init.zeros_(p) for p in (loss.attention.q_weight, loss.attention.q_bias)]
    >>> torch.allclose(loss(z, y), HMLCLoss("hmce", "linear", 0.5)(z, y))  # uniform attention
    True
    """

    def __init__(
        self,
        tree: Any = None,
        *,
        levels: int | None = None,
        dim: int | None = None,
        tau: float = DEFAULT_TAU,
        loss_type: str = "hmce",
        layer_penalty: str = "linear",
        order: str = "class",
        similarity: Any = None,
        features: Any = None,
        temperature: Any = _NOT_GIVEN,
    ):
        super().__init__(tree, tau, temperature, features, loss_type, layer_penalty, order, similarity)
        if levels is None:
            if tree is None:
                raise ValueError("AHMLCLoss needs tree= (L = tree.height) or levels= (the number of label columns)")
            levels = int(tree.height)
        self.attention = LevelAttention(levels, dim)
        self.last_attention: torch.Tensor | None = None

    def forward(self, z: torch.Tensor, labels: Any) -> torch.Tensor:
        """Loss of one batch: ``z`` (B, V, d), ``labels`` (B, L) level labels or (B,) leaf labels with ``tree``.

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z`` and the attention heads.
        """
        z, y = self._inputs(z, labels)
        ncol = torch.as_tensor(y).shape[-1] if torch.as_tensor(y).ndim == 2 else None
        if ncol != self.attention.levels:
            raise ValueError(
                f"level labels have {ncol} columns but AHMLCLoss has {self.attention.levels} attention heads "
                "(levels=); they must match"
            )
        a = self.attention(z)  # (L, B, V, d)
        self.last_attention = a.detach()
        return self.hmlc(z, y, masks=z.shape[-1] * a)
