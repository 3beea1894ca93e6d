"""Paper 02 methods (*Feature identification for hierarchical contrastive learning*): HMC/HCE/HMCE, G-HMLC, A-HMLC, CE.

==============  ==============================================================================
name            objective
==============  ==============================================================================
``"ce"``        plain cross-entropy on classifier logits over the leaves (Table 1's "Cross
                Entropy"; HXE with α = 0, which is exactly CE)
``"hmc"``       HMC (Paper 02 (HMLC), Eq. 2): per-level SupCon with penalties ``λ_h``
``"hce"``       HCE: Eq. 4 without penalties
``"hmce"``      HMCE (Eq. 4), Zhang et al. 2022's method, the paper's baseline
``"g-hmlc"``    G-HMLC: HMCE on per-image GMM feature masks (§3), linear penalties
``"a-hmlc"``    A-HMLC: HMCE on per-level attention masks (§3, Eq. 5), linear penalties; the
                attention heads are trainable modules of the objective
==============  ==============================================================================

The objectives take leaf labels from the training loop and derive the per-level labels from
their tree (:func:`hierviz.hierarchy.level_labels`, ``loss.hmlc.level_order``; ``Needs(level_labels=True)``).
``"supcon"`` (Table 1's SupCon) is registered by :mod:`.paper01`.

Hyperparameters (``loss.*``): ``tau`` (τ, shared), ``hmlc.level_order`` (``"class"`` first, Table 2's
main order, or ``"category"``), ``hmlc.penalty`` (None = the paper's choice: ``"exp"`` for
HMC/HMCE, ``"linear"`` for G-HMLC/A-HMLC), ``hmlc.mode`` (``"paper"`` or ``"official"``, HMC/HCE/HMCE
only), ``hmlc.base_tau`` (τ_b; None: no τ/τ_b factor in paper mode, 0.07 in official mode; the key was
``base_temperature`` before 0.2 and ``base_tau`` before 0.4, still read with a DeprecationWarning),
``g_hmlc.gmm_max_iter`` (EM iterations per step of G-HMLC), ``g_hmlc.gmm_dims`` (2: the paper's 2-D GMM
on the plane of the two views, the default; 1: the 1-D fit on the view mean of hierviz ≤ 0.2). The
``hmlc`` keys are read by every method here (they say so); the flat names of hierviz 0.3
(``loss.level_order``, ``loss.hmlc_penalty``, ...) are still read with a DeprecationWarning.

Geometry: the contrastive terms use the dot product of Eq. 3 (the cosine on the unit sphere of
the Euclidean geometry) and, in a hyperbolic geometry, the geometry's similarity (−d) for
HMC/HCE/HMCE. G-HMLC and A-HMLC mask coordinates; in a hyperbolic geometry they mask the
tangent vectors ``log₀(z)`` and compare them by the dot product (our extension: the paper is
Euclidean).

Evaluation: every method here is probed on its encoder features (``embedding="features"``), the
linear evaluation of SimCLR that paper 02 §4 follows; ``eval.embedding="z"`` probes the
projection instead (the report header names which).
"""

from __future__ import annotations

from typing import Any

from hierviz.losses import AHMLCLoss, GHMLCLoss, HMLCLoss, HXELoss, Objective
from hierviz.methods.registry import Needs, register_hparam, register_method

__all__: list[str] = []

_PAPER = "Paper 02 (HMLC)"

# (key, default, doc, the flat name of hierviz 0.3)
for _key, _default, _doc, _old in (
    ("hmlc.level_order", "class", "Paper 02 level order: 'class' first (finest level first) or 'category' first",
     "level_order"),
    ("hmlc.penalty", None, "HMLC level penalty λ_h = f(1/h): 'exp', 'pow2', 'linear' (None = the paper's per method)",
     "hmlc_penalty"),
    ("hmlc.mode", "paper", "HMC/HCE/HMCE: 'paper' (Eqs. 2-4) or 'official' (salesforce code, bit for bit)",
     "hmlc_mode"),
    ("hmlc.base_tau", None, "HMLC τ_b: each level's loss × τ/τ_b (None = 1 in paper mode, 0.07 in official mode)",
     "base_tau"),
    ("g_hmlc.gmm_max_iter", 100, "G-HMLC: EM iterations per training step (warm-started, >= 1)", "gmm_max_iter"),
    ("g_hmlc.gmm_dims", 2,
     "G-HMLC: 2 = the paper's 2-D GMM on the plane of the two views (§3), 1 = 1-D on the view mean", "gmm_dims"),
):  # fmt: skip
    register_hparam(_key, _default, _doc, formerly=_old)

_HMLC = ("tau", "hmlc.level_order", "hmlc.penalty", "hmlc.mode", "hmlc.base_tau")
_FEATURE = ("tau", "hmlc.level_order", "hmlc.penalty")


def _similarity(geometry: Any) -> Any:
    return geometry.similarity if getattr(geometry, "hyperbolic", False) else None


def _features(geometry: Any) -> Any:
    return geometry.logmap0 if getattr(geometry, "hyperbolic", False) else None


def _hmlc(loss_type: str, default_penalty: str):
    def build(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
        loss = HMLCLoss(
            loss_type,
            hp["penalty"] or default_penalty,
            hp["tau"],
            hp["base_tau"],
            hp["mode"],
            similarity=_similarity(geometry),
            tree=tree,
            order=hp["level_order"],
        )
        return Objective(loss_type, {loss_type: loss})

    return build


_NEEDS = Needs(level_labels=True)
#: paper 02 §4: linear evaluation on the encoder features for every method (one probe input, so the methods compare)
_PROBE = "features"

register_method("hmc", display_name="HMC", hparams=_HMLC, needs=_NEEDS, embedding=_PROBE, paper=_PAPER)(
    _hmlc("hmc", "exp")
)
register_method("hce", display_name="HCE", hparams=_HMLC, needs=_NEEDS, embedding=_PROBE, paper=_PAPER)(
    _hmlc("hce", "exp")
)
register_method("hmce", display_name="HMCE", hparams=_HMLC, needs=_NEEDS, embedding=_PROBE, paper=_PAPER)(
    _hmlc("hmce", "exp")
)


def _masking_kwargs(geometry: Any, hp: dict[str, Any]) -> dict[str, Any]:
    """The arguments G-HMLC and A-HMLC share: temperature, layer penalty (default linear), level order, features."""
    return {
        "tau": hp["tau"],
        "layer_penalty": hp["penalty"] or "linear",
        "order": hp["level_order"],
        "features": _features(geometry),
    }


@register_method(
    "g-hmlc",
    display_name="G-HMLC",
    hparams=(*_FEATURE, "g_hmlc.gmm_max_iter", "g_hmlc.gmm_dims"),
    needs=_NEEDS,
    embedding=_PROBE,
    paper=_PAPER,
)
def g_hmlc(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    gmm = {"max_iter": int(hp["gmm_max_iter"]), "gmm_dims": int(hp["gmm_dims"])}
    loss = GHMLCLoss(tree, **_masking_kwargs(geometry, hp), **gmm)
    return Objective("g-hmlc", {"ghmlc": loss})


@register_method(
    "a-hmlc",
    display_name="A-HMLC",
    hparams=_FEATURE,
    needs=Needs(level_labels=True, modules=("attention",)),
    embedding=_PROBE,
    paper=_PAPER,
)
def a_hmlc(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    loss = AHMLCLoss(tree, **_masking_kwargs(geometry, hp))
    return Objective("a-hmlc", {"ahmlc": loss})


@register_method("ce", display_name="Cross-entropy", needs=Needs(logits=True), embedding=_PROBE, paper=_PAPER)
def ce(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    return Objective("ce", {"ce": HXELoss(tree, alpha=0.0, normalize=False)}, requires_logits=True)
