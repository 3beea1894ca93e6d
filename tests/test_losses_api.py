"""The 0.2 layout of hierviz.losses: one loss per file, input_kind, the deprecated alias, old import paths,
and geometry behaviour taken from the Geometry object (``hyperbolic``), never from its name."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import hierviz.losses as losses
from hierviz.geometry import get_geometry
from hierviz.losses import (
    INPUT_KINDS,
    HCLLoss,
    HierarchicalContrastiveLoss,
    HWCLoss,
    HXELoss,
    LAMLoss,
    OutsideSoftmaxHCLoss,
    SimCLRLoss,
    SoftLabelLoss,
    SupConLoss,
)

EMBEDDING_LOSSES = [SupConLoss, SimCLRLoss, HWCLoss, OutsideSoftmaxHCLoss, LAMLoss, HCLLoss]
LOGIT_LOSSES = [HXELoss, SoftLabelLoss]


def _z(B=4, V=2, d=3, seed=0):
    return F.normalize(torch.randn(B, V, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64), dim=-1)


def test_input_kind_declared_by_every_loss():
    assert INPUT_KINDS == ("embeddings", "logits")
    for cls in EMBEDDING_LOSSES:
        assert cls.input_kind == "embeddings", cls
    for cls in LOGIT_LOSSES:
        assert cls.input_kind == "logits", cls


def test_one_loss_per_file():
    import hierviz.losses.hc_outside as hc
    import hierviz.losses.hwc as hwc
    import hierviz.losses.hxe as hxe
    import hierviz.losses.lam as lam
    import hierviz.losses.simclr as simclr
    import hierviz.losses.soft_label as soft
    import hierviz.losses.supcon as supcon

    pairs = [
        (supcon, SupConLoss),
        (simclr, SimCLRLoss),
        (hwc, HWCLoss),
        (hc, OutsideSoftmaxHCLoss),
        (lam, LAMLoss),
        (hxe, HXELoss),
        (soft, SoftLabelLoss),
    ]
    for module, cls in pairs:
        assert cls.__module__ == module.__name__


def test_old_names_and_paths_still_import(breakhis_tree):
    for name in [
        "REDUCTIONS",
        "SIMILARITIES",
        "OMEGA_MODES",
        "Objective",
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
        "OutsideSoftmaxHCLoss",
        "INPUT_KINDS",
    ]:
        assert name in losses.__all__ and getattr(losses, name) is not None, name
    from hierviz.losses.contrastive import OMEGA_MODES, _check_real, _resolve_geometry, hwc_omega  # noqa: F401
    from hierviz.losses.contrastive import HWCLoss as OldHWC
    from hierviz.losses.hxe import SoftLabelLoss as OldSoft

    assert OldHWC is HWCLoss and OldSoft is SoftLabelLoss and OMEGA_MODES == ("pair", "constant")


def test_hierarchical_contrastive_alias_warns_and_equals_outside_softmax(breakhis_tree):
    z, y = _z(), torch.tensor([0, 1, 4, 4])
    with pytest.warns(DeprecationWarning, match="HierarchicalContrastiveLoss is deprecated.*OutsideSoftmaxHCLoss"):
        old = HierarchicalContrastiveLoss(breakhis_tree, "euclidean", tau=0.3, alpha=0.7)
    assert isinstance(old, OutsideSoftmaxHCLoss)
    new = OutsideSoftmaxHCLoss(breakhis_tree, "euclidean", tau=0.3, alpha=0.7)
    assert old(z, y).item() == new(z, y).item()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name and the module import do not warn
        OutsideSoftmaxHCLoss(breakhis_tree, "euclidean")
        import hierviz.losses.contrastive  # noqa: F401


class _SpyGeometry:
    """Euclidean arithmetic with a chosen name and ``hyperbolic`` flag; counts manifold checks."""

    def __init__(self, name: str, hyperbolic: bool):
        self._base = get_geometry("euclidean")
        self.name, self.hyperbolic, self.checked = name, hyperbolic, 0

    def similarity(self, x):
        return self._base.similarity(x)

    def pairwise_dist(self, x, y=None):
        return self._base.pairwise_dist(x, y)

    def check_point(self, x, name="x"):
        self.checked += 1
        assert name == "z"


@pytest.mark.parametrize("cls", [SupConLoss, HWCLoss, OutsideSoftmaxHCLoss, SimCLRLoss])
def test_manifold_check_follows_geometry_hyperbolic_not_name(breakhis_tree, cls):
    z, y = _z(), torch.tensor([0, 1, 4, 4])
    hyper_named_euclidean = _SpyGeometry("euclidean", hyperbolic=True)
    cls(breakhis_tree, hyper_named_euclidean)(z, y)
    assert hyper_named_euclidean.checked == 1
    flat_named_poincare = _SpyGeometry("poincare", hyperbolic=False)
    cls(breakhis_tree, flat_named_poincare)(z, y)
    assert flat_named_poincare.checked == 0


def test_no_geometry_name_switch_in_losses():
    """Losses read geometry behaviour from attributes/methods, never ``geometry.name``."""
    from pathlib import Path

    root = Path(losses.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "geometry.name" not in text and 'getattr(geometry, "name"' not in text, path.name


def test_lam_tree_error_names_the_loss():
    with pytest.raises(TypeError, match="LAMLoss needs a LabelTree"):
        LAMLoss(None, "euclidean")
    with pytest.raises(TypeError, match="tree must be a hierviz LabelTree, got dict"):
        HXELoss({"root": ["a"]})
