"""One builder for every training objective (paper 01, Eq. 12 and its baselines).

``build_objective(name, tree, geometry, **hparams)`` returns an :class:`Objective` that a
training loop calls as ``loss, terms = objective(z, labels, logits=None)``.

========================  ===========================================================
name                      loss
========================  ===========================================================
``"simclr"``              SimCLR / NT-Xent, view positives only (labels unused)
``"supcon"``              SupCon (Khosla et al. 2020), leaf labels, hierarchy-agnostic
``"hc-outside"``          outside-softmax hierarchical contrastive baseline (§4.3/§4.6)
``"hxe"``                 hierarchical cross-entropy on classifier logits (Bertinetto 2020)
``"hwc"``                 HWC alone (Eq. 7)
``"lam"``                 "LAM alone": SupCon + λ_LAM · LAM
``"hwc+lam"``             L = L_HWC + λ_LAM · L_LAM (Eq. 12)
========================  ===========================================================

"LAM alone" (paper 01 Tables 1–3, row "LAM") cannot stand by itself: a prototype hinge
has no instance-discrimination term and collapses every sample of a parent onto its
prototype. As in the paper, it is LAM added to the hierarchy-agnostic contrastive base,
i.e. HWC with ω ≡ 1 (= SupCon): ``L = L_SupCon + λ_LAM · L_LAM``.

All contrastive terms of every objective use the same ``reduction`` (default ``"pairs"``,
Eq. 7's normalisation) so that objectives are compared like with like.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import nn

from .contrastive import (
    HierarchicalContrastiveLoss,
    HWCLoss,
    SimCLRLoss,
    SupConLoss,
    _check_real,
    _resolve_geometry,
)
from .hxe import HXELoss
from .lam import LAMLoss

__all__ = ["OBJECTIVES", "HPARAMS", "Objective", "build_objective"]

OBJECTIVES = ("simclr", "supcon", "hc-outside", "hxe", "hwc", "lam", "hwc+lam")

#: Hyperparameters accepted by :func:`build_objective` and their defaults. Each objective
#: uses the ones it needs and ignores the rest, so one dict can drive every objective.
HPARAMS: dict[str, Any] = {
    "tau": 0.1,
    "alpha": 0.5,
    "gamma": 0.5,
    "alpha_max": None,
    "lambda_lam": 1.0,
    "margins": None,
    "level_weights": None,
    "eta": 0.05,
    "hxe_alpha": 0.1,
    "hxe_normalize": False,
    "reduction": "pairs",
    "omega": "pair",
    "similarity": None,
    "dim": None,
    "mean_steps": 3,
}


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

    def __init__(self, name: str, terms: Mapping[str, nn.Module], weights: Mapping[str, float] | None = None,
                 requires_logits: bool = False):
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

    def forward(self, z: torch.Tensor | None, labels: torch.Tensor | None,
                logits: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
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
            if isinstance(module, HXELoss):
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


def build_objective(name: str, tree: Any, geometry: Any, **hparams: Any) -> Objective:
    """Build a training objective by name (paper 01, Eq. 12 and the baselines of §4.3).

    Parameters
    ----------
    name : str
        One of :data:`OBJECTIVES`: ``"simclr"``, ``"supcon"``, ``"hc-outside"``, ``"hxe"``,
        ``"hwc"``, ``"lam"`` (SupCon + λ_LAM·LAM, see module docstring), ``"hwc+lam"``.
        Case-insensitive.
    tree : LabelTree
        The label tree (labels are its leaf indices).
    geometry : Geometry or str
        Ambient geometry of the embeddings (``"euclidean"``, ``"poincare"``, ``"lorentz"`` or
        an object from :func:`hierviz.geometry.get_geometry`).
    **hparams
        Any of :data:`HPARAMS`: ``tau`` (τ > 0, 0.1), ``alpha``/``gamma`` (≥ 0, 0.5, Eqs. 5–6),
        ``alpha_max`` (ω clamp, None), ``lambda_lam`` (≥ 0, 1.0, Eq. 12), ``margins``
        (m_ℓ, None → 0.5…0.1), ``level_weights`` (λ_ℓ, None → 1), ``eta`` (EMA rate, 0.05),
        ``hxe_alpha`` (≥ 0, 0.1), ``hxe_normalize`` (False), ``reduction`` ("pairs" |
        "anchor"), ``omega`` ("pair" | "constant"), ``similarity`` (None | "cosine" |
        "neg_dist" | callable), ``dim`` (LAM prototype dimension, None = lazy),
        ``mean_steps`` (3). Hyperparameters an objective does not use are ignored.

    Returns
    -------
    Objective
        ``requires_logits`` is True only for ``"hxe"``.

    Raises
    ------
    ValueError
        Unknown ``name`` (the message lists :data:`OBJECTIVES`) or an invalid value.
    TypeError
        An unknown hyperparameter name (the message lists the valid ones).

    Examples
    --------
    >>> obj = build_objective("hwc+lam", tree, "poincare", alpha=0.5, gamma=0.5, lambda_lam=0.5)
    >>> loss, terms = obj(z, labels)          # terms == {"hwc": ..., "lam": ...}
    """
    if not isinstance(name, str) or name.strip().lower() not in OBJECTIVES:
        raise ValueError(f"unknown objective name {name!r}; valid names: {list(OBJECTIVES)}")
    key = name.strip().lower()
    unknown = sorted(set(hparams) - set(HPARAMS))
    if unknown:
        raise TypeError(f"unknown hyperparameter(s) {unknown} for build_objective; valid: {sorted(HPARAMS)}")
    hp = {**HPARAMS, **hparams}
    geometry = _resolve_geometry(geometry)
    lam_weight = _check_real(hp["lambda_lam"], "lambda_lam", low=0.0)
    common = dict(tau=hp["tau"], similarity=hp["similarity"])

    def hwc(alpha: float, gamma: float) -> HWCLoss:
        return HWCLoss(tree, geometry, alpha=alpha, gamma=gamma, alpha_max=hp["alpha_max"], omega=hp["omega"],
                       reduction=hp["reduction"], **common)

    def supcon() -> SupConLoss:
        return SupConLoss(tree, geometry, reduction=hp["reduction"], **common)

    def lam() -> LAMLoss:
        return LAMLoss(tree, geometry, margins=hp["margins"], level_weights=hp["level_weights"], eta=hp["eta"],
                       dim=hp["dim"], mean_steps=hp["mean_steps"])

    if key == "simclr":
        return Objective(key, {"simclr": SimCLRLoss(tree, geometry, **common)})
    if key == "supcon":
        return Objective(key, {"supcon": supcon()})
    if key == "hc-outside":
        return Objective(key, {"hc": HierarchicalContrastiveLoss(tree, geometry, alpha=hp["alpha"],
                                                                 reduction=hp["reduction"], **common)})
    if key == "hxe":
        return Objective(key, {"hxe": HXELoss(tree, alpha=hp["hxe_alpha"], normalize=hp["hxe_normalize"])},
                         requires_logits=True)
    if key == "hwc":
        return Objective(key, {"hwc": hwc(hp["alpha"], hp["gamma"])})
    if key == "lam":
        return Objective(key, {"supcon": supcon(), "lam": lam()}, {"lam": lam_weight})
    # "hwc+lam"
    return Objective(key, {"hwc": hwc(hp["alpha"], hp["gamma"]), "lam": lam()}, {"lam": lam_weight})
