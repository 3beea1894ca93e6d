"""Deprecated alias of hierviz.losses (_core, supcon, simclr, hwc, hc_outside); will be removed in 0.3.

Import from :mod:`hierviz.losses` instead. ``HierarchicalContrastiveLoss`` is now
:class:`~hierviz.losses.OutsideSoftmaxHCLoss` (the old name warns when used).
"""

from ._core import REDUCTIONS, SIMILARITIES, _PairwiseContrastive, _reduce, contrastive_log_prob  # noqa: F401
from ._validation import (  # noqa: F401
    _check_choice,
    _check_embeddings,
    _check_labels,
    _check_real,
    _check_tree,
    _is_hyperbolic,
    _resolve_geometry,
)
from .hc_outside import HierarchicalContrastiveLoss, OutsideSoftmaxHCLoss
from .hwc import OMEGA_MODES, HWCLoss, hwc_logit_gradient, hwc_omega
from .simclr import SimCLRLoss
from .supcon import SupConLoss

__all__ = [
    "REDUCTIONS",
    "SIMILARITIES",
    "OMEGA_MODES",
    "SimCLRLoss",
    "SupConLoss",
    "HWCLoss",
    "OutsideSoftmaxHCLoss",
    "HierarchicalContrastiveLoss",
    "hwc_omega",
    "hwc_logit_gradient",
    "contrastive_log_prob",
]
