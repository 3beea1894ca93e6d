"""Paper 04 methods (*Hybrid losses for hierarchical embedding learning*): T, L, PL, B and hybrids.

===============  ==================================================================
name             objective (uniform weights, §III-C)
===============  ==================================================================
``"l"``          L: leaf softmax cross-entropy
``"pl"``         PL: per-level softmax cross-entropies
``"b"``          B: binary cross-entropy per tree node
``"t"``          T: triplet loss on generalised tree triplets
``"t+l"``        T + L
``"t+pl"``       T + PL
``"t+b"``        T + B
``"pl+b"``       PL + B
``"t+pl+b"``     T + PL + B
===============  ==================================================================

Every method trains on the generalised triplets of §II-B (``Needs(sampler="tree-triplet")``,
one view per sample: the sampler builds each epoch's data, as in the paper) and is evaluated
with the seen/unseen protocol of §III (``protocol="unseen"``). The triplet margin is
``loss.triplet.margin`` (0.3, the paper) on ``loss.triplet.distance`` (``"cosine"``: the
paper's negative cosine similarity; ``"geometry"``: the run's geodesic distance). The L, PL and
B terms weigh classes by ``loss.heads.class_weight``: ``"none"`` (uniform, the default) or
``"inverse"`` (inversely proportional to the sampling frequency, as §III-C;
:mod:`hierviz.losses.hier_cls`), e.g. ``hierviz compare --set loss.heads.class_weight=inverse``.
"""

from __future__ import annotations

from typing import Any

from hierviz.losses import BinaryLoss, LeafLoss, Objective, PerLevelLoss, TripletLoss
from hierviz.methods.registry import Needs, register_hparam, register_method

__all__: list[str] = []

_PAPER = "Paper 04 (Generalised triplets)"

register_hparam("triplet.margin", 0.3, "triplet margin α of Paper 04 Eq. 1 (>= 0)", formerly="triplet_margin")
register_hparam(
    "triplet.distance",
    "cosine",
    "triplet distance: 'cosine' (negative cosine, the paper) or 'geometry' (geodesic)",
    formerly="triplet_distance",
)

register_hparam(
    "heads.class_weight",
    "none",
    "L/PL/B class weights: 'none' (uniform) or 'inverse' (inversely proportional to the sampling frequency, "
    "Paper 04 §III-C)",
    formerly="class_weight",
)

_T_HP = ("triplet.margin", "triplet.distance")

#: name -> (display name, terms); a term is "t", "l", "pl" or "b".
_COMBOS = {
    "l": ("L", ("l",)),
    "pl": ("PL", ("pl",)),
    "b": ("B", ("b",)),
    "t": ("T", ("t",)),
    "t+l": ("T+L", ("t", "l")),
    "t+pl": ("T+PL", ("t", "pl")),
    "t+b": ("T+B", ("t", "b")),
    "pl+b": ("PL+B", ("pl", "b")),
    "t+pl+b": ("T+PL+B", ("t", "pl", "b")),
}


def _term(key: str, tree: Any, geometry: Any, hp: dict[str, Any]) -> Any:
    if key == "t":
        return TripletLoss(tree, geometry, margin=hp["margin"], distance=hp["distance"])
    return {"l": LeafLoss, "pl": PerLevelLoss, "b": BinaryLoss}[key](tree, geometry, class_weight=hp["class_weight"])


def _register(name: str, display: str, terms: tuple[str, ...]) -> None:
    heads = tuple(t for t in terms if t != "t")

    @register_method(
        name,
        display_name=display,
        hparams=(_T_HP if "t" in terms else ()) + (("heads.class_weight",) if heads else ()),
        needs=Needs(views=1, sampler="tree-triplet", modules=heads),
        protocol="unseen",
        paper=_PAPER,
        depth_terms=True,
    )
    def build(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
        return Objective(name, {t: _term(t, tree, geometry, hp) for t in terms})

    build.__doc__ = f"{display} (Paper 04 (Generalised triplets) §II-C): the terms {', '.join(terms)}, weight 1 each."


for _name, (_display, _terms) in _COMBOS.items():
    _register(_name, _display, _terms)
