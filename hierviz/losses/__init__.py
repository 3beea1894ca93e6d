"""Hierarchy-aware losses, one per file: SupCon, SimCLR, HWC, outside-softmax HC, LAM, HXE, soft labels.

Every loss is an :class:`torch.nn.Module` built with a :class:`~hierviz.hierarchy.LabelTree`
and (for the embedding losses) a :class:`~hierviz.geometry.Geometry` or its name, and
declares what it consumes with the class attribute ``input_kind``:

* ``"embeddings"``: ``loss(z, labels)`` with ``z`` of shape ``(B, V, d)`` (B images × V
  views, on the manifold) and ``labels`` ``(B,)`` leaf indices — :class:`SupConLoss`
  (``supcon.py``), :class:`SimCLRLoss` (``simclr.py``), :class:`HWCLoss` (``hwc.py``),
  :class:`OutsideSoftmaxHCLoss` (``hc_outside.py``), :class:`LAMLoss` (``lam.py``);
* ``"logits"``: ``loss(logits, labels)`` with classifier logits ``(B, C)`` —
  :class:`HXELoss` (``hxe.py``), :class:`SoftLabelLoss` (``soft_label.py``).

Depth regularisers for hyperbolic geometries (``radial.py``), which
:func:`hierviz.methods.build_objective` adds to every method as ``loss.cone_weight`` and
``loss.center_weight``, ``loss.order_weight``, ``loss.cpcc_weight``: :class:`EntailmentConeLoss`
(entailment cones, Ganea et al. 2018), :class:`CentringLoss` (HypStructure's centring term),
:class:`RadialOrderLoss` (a hinge on the radius order of parent and child prototypes) and
:class:`CPCCLoss` (HypStructure's CPCC term, ``cpcc.py``).

Shared input checks live in ``_validation.py``; the log-softmax, the reductions and the
contrastive base class in ``_core.py``. :class:`Objective` (``objective.py``) sums named
terms; methods (:mod:`hierviz.methods`) build objectives.
"""

from ._core import INPUT_KINDS, REDUCTIONS, SIMILARITIES, contrastive_log_prob
from ._validation import DEFAULT_TAU, DEFAULT_TAU_HYPERBOLIC
from .ahmlc import AHMLCLoss, LevelAttention
from .compiled import CompiledLoss
from .cpcc import CPCCLoss
from .ghmlc import GHMLCLoss, fit_gmm_1d, fit_gmm_2d, gmm_feature_masks
from .hc_outside import HierarchicalContrastiveLoss, OutsideSoftmaxHCLoss
from .hcl import HCLLoss, hcl_terms
from .hier_cls import BinaryLoss, LeafLoss, PerLevelLoss
from .hmlc import HMLCLoss
from .hwc import OMEGA_MODES, HWCLoss, hwc_logit_gradient, hwc_omega
from .hxe import HXELoss
from .lam import LAMLoss, default_margins
from .objective import Objective
from .radial import (
    CentringLoss,
    EntailmentConeLoss,
    RadialDepthLoss,
    RadialOrderLoss,
    cone_energy,
    cone_exterior_angle,
    cone_half_aperture,
)
from .simclr import SimCLRLoss
from .soft_label import SoftLabelLoss
from .supcon import SupConLoss
from .triplet import TripletLoss

__all__ = [
    "DEFAULT_TAU",
    "DEFAULT_TAU_HYPERBOLIC",
    "CompiledLoss",
    "REDUCTIONS",
    "SIMILARITIES",
    "OMEGA_MODES",
    "INPUT_KINDS",
    "Objective",
    "SimCLRLoss",
    "SupConLoss",
    "HCLLoss",
    "hcl_terms",
    "HWCLoss",
    "OutsideSoftmaxHCLoss",
    "HierarchicalContrastiveLoss",
    "LAMLoss",
    "HXELoss",
    "HMLCLoss",
    "GHMLCLoss",
    "AHMLCLoss",
    "LevelAttention",
    "fit_gmm_1d",
    "fit_gmm_2d",
    "gmm_feature_masks",
    "SoftLabelLoss",
    "hwc_omega",
    "hwc_logit_gradient",
    "contrastive_log_prob",
    "default_margins",
    "TripletLoss",
    "LeafLoss",
    "PerLevelLoss",
    "BinaryLoss",
    "EntailmentConeLoss",
    "RadialDepthLoss",
    "RadialOrderLoss",
    "CentringLoss",
    "CPCCLoss",
    "cone_energy",
    "cone_exterior_angle",
    "cone_half_aperture",
]
