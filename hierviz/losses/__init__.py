"""Hierarchy-aware losses: SimCLR, SupCon, HWC, the outside-softmax control, LAM, HXE.

Every loss is an :class:`torch.nn.Module` built with a :class:`~hierviz.tree.LabelTree`
and a :class:`~hierviz.geometry.Geometry` (or its name) and called as ``loss(z, labels)``
with ``z`` of shape ``(B, V, d)`` (B images × V views, on the manifold) and ``labels``
``(B,)`` leaf indices; :class:`HXELoss` takes classifier logits ``(B, C)`` instead.
:func:`build_objective` assembles the training objectives of paper 01 (Eq. 12) by name.
"""
from .contrastive import (
    OMEGA_MODES,
    REDUCTIONS,
    SIMILARITIES,
    HierarchicalContrastiveLoss,
    HWCLoss,
    SimCLRLoss,
    SupConLoss,
    contrastive_log_prob,
    hwc_logit_gradient,
    hwc_omega,
)
from .hxe import HXELoss, SoftLabelLoss
from .lam import LAMLoss, default_margins
from .objective import HPARAMS, OBJECTIVES, Objective, build_objective

__all__ = [
    "OBJECTIVES",
    "HPARAMS",
    "REDUCTIONS",
    "SIMILARITIES",
    "OMEGA_MODES",
    "Objective",
    "build_objective",
    "SimCLRLoss",
    "SupConLoss",
    "HWCLoss",
    "HierarchicalContrastiveLoss",
    "LAMLoss",
    "HXELoss",
    "SoftLabelLoss",
    "hwc_omega",
    "hwc_logit_gradient",
    "contrastive_log_prob",
    "default_margins",
]
