"""The :class:`Objective`: a weighted sum of named loss terms with one calling convention.

Methods (:mod:`hierviz.methods`) build objectives; a training loop calls
``loss, terms = objective(z, labels, logits=None)`` or, with a model's output dict,
``objective.loss_from_output(out, labels)``. Build a registered method's objective with
:func:`hierviz.methods.build_objective`; the registry is :data:`hierviz.methods.METHODS` and the
hyperparameters :data:`hierviz.methods.LOSS_HPARAMS` (``hierviz.losses`` imports no method code).

The methods themselves (names, terms, hyperparameters) are listed in :mod:`hierviz.methods.paper01`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

__all__ = ["Objective", "mean_over_view_logits"]


class Objective(nn.Module):
    """A weighted sum of loss terms with one calling convention.

    Parameters
    ----------
    name : str
        One of :data:`OBJECTIVES`.
    terms : Mapping[str, nn.Module]
        Term name → loss module. Contrastive and LAM terms are called as ``m(z, labels)``,
        the ``"hxe"`` term as ``m(logits, labels)``.
    weights : Mapping[str, float]
        Term name → weight in the total (missing → 1).
    requires_logits : bool
        True when the objective needs classifier logits (``"hxe"``).

    Attributes
    ----------
    terms : nn.ModuleDict
    weights : dict[str, float]
    requires_logits : bool

    Raises
    ------
    ValueError
        ``logits`` missing for an objective that needs them, ``z`` missing for one that
        needs embeddings, or any error of the underlying losses.

    Notes
    -----
    Calling convention: ``objective(z, labels, logits=None) -> (loss, terms)``: ``z`` (B, V, d) embeddings on
    the manifold (may be None for ``"hxe"``), ``labels`` (B,) long leaf indices (may be None
    for ``"simclr"``), ``logits`` (B, C) for ``"hxe"``. ``loss`` is a differentiable scalar;
    ``terms`` maps each term name (e.g. ``"hwc"``, ``"lam"``) to its *unweighted*, detached
    value.
    """

    def __init__(
        self,
        name: str,
        terms: Mapping[str, nn.Module],
        weights: Mapping[str, float] | None = None,
        requires_logits: bool = False,
    ):
        super().__init__()
        self.name = name
        self.terms = nn.ModuleDict(dict(terms))
        self.weights = {k: float((weights or {}).get(k, 1.0)) for k in terms}
        self.requires_logits = bool(requires_logits)

    def term(self, key: str) -> nn.Module | None:
        """The loss module of a term (e.g. ``objective.term("lam")`` to read its prototypes), or None."""
        return self.terms[key] if key in self.terms else None

    def extra_repr(self) -> str:
        parts = [(f"{w:g}·" if w != 1.0 else "") + f"L_{k}" for k, w in self.weights.items()]
        return f"name={self.name!r}, L = " + " + ".join(parts)

    def forward(
        self, z: torch.Tensor | None, labels: torch.Tensor | None, logits: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Total loss and its terms for one batch.

        Parameters
        ----------
        z : torch.Tensor (B, V, d) or None
            Embeddings on the manifold (unused by ``"hxe"``).
        labels : LongTensor (B,) or None
            Leaf indices (may be None for ``"simclr"``).
        logits : torch.Tensor (B, C), optional
            Classifier logits, required when ``requires_logits``.

        Returns
        -------
        loss : torch.Tensor
            Differentiable scalar ``Σ_k weight_k · term_k``.
        terms : dict[str, torch.Tensor]
            Unweighted detached value of each term.

        Raises
        ------
        ValueError
            Missing ``logits``/``z``, or any error of the underlying losses.
        """
        if self.requires_logits and logits is None:
            raise ValueError(f"objective {self.name!r} requires logits (B, C) from a classifier head; got logits=None")
        values: dict[str, torch.Tensor] = {}
        total: torch.Tensor | None = None
        for key, module in self.terms.items():
            if getattr(module, "input_kind", "embeddings") == "logits":
                val = module(logits, labels)
            else:
                if z is None:
                    raise ValueError(f"objective {self.name!r} needs embeddings z (B, V, d); got z=None")
                val = module(z, labels)
            values[key] = val.detach()
            w = self.weights[key]
            contrib = val if w == 1.0 else w * val
            total = contrib if total is None else total + contrib
        assert total is not None
        return total, values

    def loss_from_output(
        self, out: Mapping[str, torch.Tensor | None], labels: torch.Tensor | None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The objective on a model's output dict (what the training loop calls).

        Parameters
        ----------
        out : mapping
            ``"z"`` (B, V, d) manifold points and, for objectives that need them,
            ``"logits"`` (B, C) or (B, V, C); see :class:`hierviz.models.EmbeddingModel`.
        labels : LongTensor (B,) or None

        Returns
        -------
        loss, terms
            As :meth:`forward`. With logits of several views the result is the mean over
            views of ``forward(z, labels, logits[:, v])`` (a per-sample mean, so it equals
            the loss over all ``B*V`` view samples).

        Raises
        ------
        ValueError
            ``"z"`` or ``"logits"`` missing where needed.
        """
        z = out.get("z")
        if z is None and not self.requires_logits:
            raise ValueError("model output has no 'z' entry")
        z = None if z is None else z.float()
        if not self.requires_logits:
            return self(z, labels)
        return mean_over_view_logits(self, z, labels, out.get("logits"), who=f"objective {self.name!r}")


def mean_over_view_logits(
    objective: Any,
    z: torch.Tensor | None,
    labels: torch.Tensor | None,
    logits: torch.Tensor | None,
    who: str = "objective",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """An objective on classifier logits of every view: the mean of ``objective(z, y, logits[:, v])``.

    Logit losses (HXE) take ``(B, C)``; averaging the per-view losses equals the loss over
    all ``B*V`` view samples (it is a per-sample mean), and any embedding term is the same
    value ``V`` times. The logits are cast to float32 (float64 stays) first, so the loss
    runs in full precision even when the model ran under autocast.

    Parameters
    ----------
    objective : callable
        ``objective(z, labels, logits=...) -> (loss, terms)``.
    z : torch.Tensor or None
    labels : LongTensor (B,) or None
    logits : torch.Tensor, shape (B, C) or (B, V, C)
    who : str
        Named in the error message.

    Returns
    -------
    loss, terms

    Raises
    ------
    ValueError
        ``logits`` is None.
    """
    if logits is None:
        raise ValueError(
            f"{who} requires logits but the model returned none; build the model with num_classes=tree.num_leaves"
        )
    if logits.dtype != torch.float64:
        logits = logits.float()
    if logits.dim() == 2:
        return objective(z, labels, logits=logits)
    V = logits.shape[1]
    total, acc = None, {}
    for v in range(V):
        loss_v, terms_v = objective(z, labels, logits=logits[:, v])
        total = loss_v if total is None else total + loss_v
        for k, t in terms_v.items():
            acc[k] = t if k not in acc else acc[k] + t
    return total / V, {k: t / V for k, t in acc.items()}
