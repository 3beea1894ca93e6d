"""Paper 03 (Hyper-DINO) methods: HCL, the hyperbolic contrastive loss with a dynamic margin.

``hcl`` trains the image encoder and projection head with :class:`~hierviz.losses.HCLLoss`
(Paper 03 (Hyper-DINO) §2.3), so ``hierviz compare --methods hcl`` runs it on images like
any other method. Paper 03 itself trains only a small mapper on frozen features; that
pipeline is ``hierviz retrieval`` (:mod:`hierviz.retrieval`).

Its hyperparameters have their own names, since ``loss.alpha`` is already paper 01's α:
``loss.hcl_m0`` (:math:`m_0`), ``loss.hcl_alpha`` (:math:`\\alpha`) and ``loss.hcl_lambda``
(:math:`\\lambda`), with the paper's defaults.
"""

from __future__ import annotations

from typing import Any

from hierviz.losses import HCLLoss, Objective
from hierviz.methods.registry import register_hparam, register_method

__all__: list[str] = []

_PAPER = "Paper 03 (Hyper-DINO)"

for _name, _default, _doc in (
    ("hcl_m0", 0.5, "HCL base margin m0 of the negative hinge (Paper 03 §2.3, >= 0)"),
    ("hcl_alpha", 0.1, "HCL α: weight of the batch-mean distance in the margin m = m0 + α·d̄ (>= 0)"),
    ("hcl_lambda", 1e-3, "HCL λ: weight of the mean embedding norm ‖h‖ (>= 0)"),
):
    register_hparam(_name, _default, _doc)

#: The loss.* names HCL reads.
HCL_HPARAMS = ("hcl_m0", "hcl_alpha", "hcl_lambda")


@register_method("hcl", display_name="HCL", hparams=HCL_HPARAMS, paper=_PAPER)
def hcl(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    loss = HCLLoss(geometry, m0=hp["hcl_m0"], alpha=hp["hcl_alpha"], lam=hp["hcl_lambda"], tree=tree)
    return Objective("hcl", {"hcl": loss})
