"""Paper 01 methods (*Climbing the label tree*, §4.3): HWC, LAM, HWC + LAM and the baselines.

========================  ===========================================================
name                      objective
========================  ===========================================================
``"simclr"``              SimCLR / NT-Xent, view positives only (labels unused)
``"supcon"``              SupCon (Khosla et al. 2020), leaf labels, hierarchy-agnostic
``"hc-outside"``          outside-softmax hierarchical contrastive baseline (§4.3/§4.6)
``"hxe"``                 hierarchical cross-entropy on classifier logits (Bertinetto 2020)
``"soft-labels"``         soft-label cross-entropy on classifier logits (Bertinetto 2020)
``"hwc"``                 HWC alone (Eq. 7)
``"lam"``                 "LAM alone": SupCon + λ_LAM · LAM
``"hwc+lam"``             L = L_HWC + λ_LAM · L_LAM (Eq. 12)
========================  ===========================================================

"LAM alone" (paper 01 Tables 1–3, row "LAM") cannot stand by itself: a prototype hinge has
no instance-discrimination term and collapses every sample of a parent onto its prototype.
As in the paper it is LAM added to the hierarchy-agnostic contrastive base, HWC with ω ≡ 1
(= SupCon): ``L = L_SupCon + λ_LAM · L_LAM``.

All contrastive terms use the same ``loss.supcon.reduction`` (default ``"pairs"``, Eq. 7's
normalisation), so methods are compared like with like. HXE and soft labels are evaluated on
the encoder features mapped into the run's geometry (``embedding="features"``).
"""

from __future__ import annotations

from typing import Any

from hierviz.losses import DEFAULT_TAU, HWCLoss, HXELoss, LAMLoss, Objective, SimCLRLoss, SoftLabelLoss, SupConLoss
from hierviz.losses import hc_outside as _hc_outside
from hierviz.losses._validation import _check_real
from hierviz.methods.registry import Needs, register_hparam, register_method

__all__: list[str] = []

_PAPER = "Paper 01 (HWC + LAM)"

#: The flat names of hierviz 0.3 (``loss.alpha``), still read with a DeprecationWarning.
_FORMERLY = {
    "hwc.alpha": "alpha",
    "hwc.gamma": "gamma",
    "hwc.alpha_max": "alpha_max",
    "hwc.omega": "omega",
    "lam.lambda": "lambda_lam",
    "lam.margins": "margins",
    "lam.level_weights": "level_weights",
    "lam.eta": "eta",
    "lam.mean_steps": "mean_steps",
    "lam.dim": "dim",
    "supcon.reduction": "reduction",
    "hxe.alpha": "hxe_alpha",
    "hxe.normalize": "hxe_normalize",
    "soft_labels.beta": "soft_beta",
}

# (key, default, doc): "tau" and "similarity" are shared (the same idea for every method); the other keys
# belong to a namespace, read by the methods that name it (HWC's α by HWC, HWC+LAM and the outside-softmax HC)
for _key, _default, _doc in (
    ("tau", DEFAULT_TAU, "temperature τ of every contrastive loss (> 0)"),
    ("hwc.alpha", 0.5, "HWC/outside-softmax α: weight of the hierarchy term in ω (Eqs. 5-6, >= 0)"),
    ("hwc.gamma", 0.5, "HWC γ: sharpness of ω in ρ (Eq. 6, >= 0)"),
    ("hwc.alpha_max", None, "upper clamp of ω (None = no clamp)"),
    ("lam.lambda", 1.0, "λ_LAM: weight of the LAM term (Eq. 12, >= 0)"),
    ("lam.margins", None, "LAM margins m_ℓ per level, root side first (None = 0.5 ... 0.1)"),
    ("lam.level_weights", None, "LAM level weights λ_ℓ (None = 1 for every level)"),
    ("lam.eta", 0.05, "EMA rate η of the LAM prototypes (Eqs. 9-10, in (0, 1])"),
    ("lam.mean_steps", 3, "Karcher steps of the hyperbolic prototype means (Eq. 3)"),
    ("lam.dim", None, "LAM prototype dimension (None = set from the first batch)"),
    (
        "supcon.reduction",
        "pairs",
        "SupCon-family reduction (SupCon, HWC, LAM, outside-softmax HC): 'pairs' (Eq. 7, mean over positive "
        "pairs) or 'anchor' (Eq. 8)",
    ),
    ("hwc.omega", "pair", "HWC ω: 'pair' (per pair, Eq. 5) or 'constant' (its batch mean ω̄)"),
    ("similarity", None, "None (geometry default: cosine / -d), 'cosine' or 'neg_dist'"),
    ("hxe.alpha", 0.1, "HXE α: edge weights exp(-α·height) (Bertinetto et al. 2020, >= 0)"),
    (
        "hxe.normalize",
        True,
        "HXE: divide the edge weights by their sum over all nodes (authors' scale; false = CE scale)",
    ),
    (
        "soft_labels.beta",
        10.0,
        "soft-labels β: target ∝ exp(-β·d), d = height of lca(y, j) above the true leaf / L (> 0)",
    ),
):
    register_hparam(_key, _default, _doc, formerly=_FORMERLY.get(_key, ()))

_CONTRASTIVE = ("tau", "supcon.reduction", "similarity")
_HWC = (*_CONTRASTIVE, "hwc.alpha", "hwc.gamma", "hwc.alpha_max", "hwc.omega")
_LAM_ARGS = ("lam.margins", "lam.level_weights", "lam.eta", "lam.dim", "lam.mean_steps")  # LAMLoss's arguments
_LAM = ("lam.lambda", *_LAM_ARGS)


def _pick(hp: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The hyperparameters ``keys`` of ``hp`` (by short name), as keyword arguments of the loss of the same names."""
    names = [k.rsplit(".", 1)[-1] for k in keys]
    return {name: hp[name] for name in names}


def _supcon(tree: Any, geometry: Any, hp: dict[str, Any]) -> SupConLoss:
    return SupConLoss(tree, geometry, **_pick(hp, _CONTRASTIVE))


def _hwc(tree: Any, geometry: Any, hp: dict[str, Any]) -> HWCLoss:
    return HWCLoss(tree, geometry, **_pick(hp, _HWC))


def _lam(tree: Any, geometry: Any, hp: dict[str, Any]) -> LAMLoss:
    return LAMLoss(tree, geometry, **_pick(hp, _LAM_ARGS))


@register_method("simclr", display_name="SimCLR", hparams=("tau", "similarity"), paper=_PAPER, depth_terms=True)
def simclr(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    return Objective("simclr", {"simclr": SimCLRLoss(tree, geometry, tau=hp["tau"], similarity=hp["similarity"])})


@register_method("supcon", display_name="SupCon", hparams=_CONTRASTIVE, paper=_PAPER, depth_terms=True)
def supcon(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    return Objective("supcon", {"supcon": _supcon(tree, geometry, hp)})


@register_method(
    "hc-outside",
    display_name="Hierarchical Contrastive (outside)",
    hparams=(*_CONTRASTIVE, "hwc.alpha"),
    paper=_PAPER,
    depth_terms=True,
)
def hc_outside(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    loss = _hc_outside.OutsideSoftmaxHCLoss(tree, geometry, **_pick(hp, (*_CONTRASTIVE, "hwc.alpha")))
    return Objective("hc-outside", {"hc": loss})


@register_method(
    "hxe",
    display_name="HXE",
    hparams=("hxe.alpha", "hxe.normalize"),
    needs=Needs(logits=True),
    embedding="features",
    paper=_PAPER,
)
def hxe(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    loss = HXELoss(tree, alpha=hp["alpha"], normalize=hp["normalize"])
    return Objective("hxe", {"hxe": loss}, requires_logits=True)


@register_method(
    "soft-labels",
    display_name="Soft labels",
    hparams=("soft_labels.beta",),
    needs=Needs(logits=True),
    embedding="features",
    paper=_PAPER,
)
def soft_labels(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    return Objective("soft-labels", {"soft": SoftLabelLoss(tree, beta=hp["beta"])}, requires_logits=True)


@register_method("hwc", display_name="HWC", hparams=_HWC, paper=_PAPER, depth_terms=True)
def hwc(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    return Objective("hwc", {"hwc": _hwc(tree, geometry, hp)})


@register_method("lam", display_name="LAM", hparams=(*_CONTRASTIVE, *_LAM), paper=_PAPER, depth_terms=True)
def lam(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    w = _check_real(hp["lambda"], "lam.lambda", low=0.0)
    return Objective("lam", {"supcon": _supcon(tree, geometry, hp), "lam": _lam(tree, geometry, hp)}, {"lam": w})


@register_method("hwc+lam", display_name="HWC+LAM", hparams=(*_HWC, *_LAM), paper=_PAPER, depth_terms=True)
def hwc_lam(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    w = _check_real(hp["lambda"], "lam.lambda", low=0.0)
    return Objective("hwc+lam", {"hwc": _hwc(tree, geometry, hp), "lam": _lam(tree, geometry, hp)}, {"lam": w})
