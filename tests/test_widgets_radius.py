"""The toy trainers (hierviz.training.toys), toy features (hierviz.data.toys), figure and panel of notebook 12."""

from __future__ import annotations

import math

import pytest
import torch

from hierviz.data import toy_encoder_features
from hierviz.geometry import PoincareBall
from hierviz.hierarchy import LabelTree
from hierviz.models import HyperbolicHead
from hierviz.training import HEAD_KINDS, RadiusToyGrid, train_toy_head
from hierviz.viz.widgets import radius_figure, radius_panel

TREE = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": {"b1": ["x", "w"], "b2": ["v"]}}})


@pytest.fixture(scope="module")
def grid():
    return RadiusToyGrid(TREE, clip_rs=[2.0, 3.0], log_scales=[-2.0, 0.0], taus=[0.1, 0.2], cones=[0.0, 1.0], steps=25)


def test_grid_head_is_the_library_head_bit_for_bit():
    """With no training step, every slice is HyperbolicHead(...) applied to the raw features."""
    g = RadiusToyGrid(TREE, clip_rs=[1.0, 3.0], log_scales=[-1.0, 0.0], taus=[0.1], cones=[0.0], steps=0)
    ball = PoincareBall(1.0)
    for kind, rho, ls, tau, cone in g.settings:
        z, info = g.get(kind, rho, ls, tau, cone)
        if kind == "tanh + auto scale":
            head = HyperbolicHead(ball, clip_r=rho).train()
        else:
            head = HyperbolicHead(ball, clip_r=rho, bound=kind, scale_init=10.0**ls).eval()
        with torch.no_grad():
            want = head(g.v0)
        assert info["log_scale0"] == pytest.approx(float(head.log_scale.detach()), rel=1e-6, abs=1e-7)
        torch.testing.assert_close(torch.from_numpy(z), want.double(), rtol=1e-6, atol=1e-6)


def test_clipped_scale_never_moves_and_smooth_one_does(grid):
    _, clip = grid.get("clip", 3.0, 0.0, 0.1, 0.0)  # raw norm 30 at scale 1: every point past the clip
    assert clip["log_scale"] == clip["log_scale0"]  # exactly: the gradient is an exact zero
    z, _ = grid.get("clip", 3.0, 0.0, 0.1, 0.0)
    r = 2 * torch.atanh(torch.from_numpy(z).norm(dim=1))
    assert torch.allclose(r, torch.full_like(r, 6.0), atol=1e-6)  # the sphere of radius 2 rho
    _, auto = grid.get("tanh + auto scale", 3.0, None, 0.1, 0.0)
    assert abs(auto["log_scale"] - auto["log_scale0"]) > 1e-3
    m = grid.metrics("tanh + auto scale", 3.0, None, 0.1, 0.0)["metrics"]
    assert m["clip_fraction"] == 0.0


def test_grid_key_snaps_to_the_nearest_setting_and_checks_kind(grid):
    assert grid.key("clip", 2.9, -0.2, 0.12, 0.7) == ("clip", 3.0, 0.0, 0.1, 1.0)
    assert grid.key("tanh + auto scale", 2.0, 123.0, 0.2, 0.0)[2] is None
    with pytest.raises(ValueError, match="kind must be one of"):
        grid.key("soft", 3.0, 0.0, 0.1, 0.0)
    with pytest.raises(ValueError, match="clip_rs and taus must be > 0"):
        RadiusToyGrid(TREE, taus=[0.0])


def test_radius_figure_has_disk_and_radius_axes(grid):
    fig = radius_figure(grid, "clip", 3.0, 0.0, 0.1, 0.0)
    on_right = [t for t in fig.data if t.xaxis == "x2"]
    assert [t.name for t in on_right][:2] == ["prototypes", "samples (± std)"]
    assert on_right[-1].y == pytest.approx((6.0, 6.0))  # the bound radius 2 rho
    assert fig.layout.meta["metrics"]["clip_fraction"] == 1.0
    assert "clip fraction 1.00" in fig.layout.title.text
    other = radius_figure(grid, "tanh + auto scale", 3.0, None, 0.1, 1.0)
    assert other.layout.title.text != fig.layout.title.text


def test_radius_panel_redraws_on_every_control(grid):
    p = radius_panel(grid)
    assert set(p.controls) == {"kind", "clip_r", "log10_scale", "tau", "cone"}
    assert list(p.controls["kind"].options) == list(HEAD_KINDS)
    titles = {p.figure.layout.title.text}
    p.controls["kind"].value = "tanh"
    titles.add(p.figure.layout.title.text)
    for name, value in (("clip_r", 2.0), ("log10_scale", -2.0), ("tau", 0.2), ("cone", 1.0)):
        p.controls[name].value = value
        titles.add(p.figure.layout.title.text)
    assert len(titles) == 6, titles
    assert len(p.view.outputs) == 1
    with pytest.raises(ValueError, match="kind must be one of"):
        radius_panel(grid, kind="soft")


def test_toy_encoder_features_norms_and_errors():
    x, y = toy_encoder_features(TREE, n_per_leaf=5, dim=8, norm=30.0, seed=1)
    assert x.shape == (25, 8) and y.tolist() == [i for i in range(5) for _ in range(5)]
    assert float(x.norm(dim=1).min()) >= 28.5 - 1e-9 and float(x.norm(dim=1).max()) <= 31.5 + 1e-9
    with pytest.raises(ValueError, match="norm must be"):
        toy_encoder_features(TREE, norm=0.0)
    with pytest.raises(ValueError, match="n_per_leaf must be"):
        toy_encoder_features(TREE, n_per_leaf=1)


def test_train_toy_head_saturates_the_clip_head_and_not_the_auto_head():
    ball = PoincareBall(1.0)
    x, y = toy_encoder_features(TREE, n_per_leaf=6, dim=8, norm=30.0)
    clip = train_toy_head(x, y, TREE, HyperbolicHead(ball, clip_r=3, bound="clip", scale_init=1.0), steps=15)
    assert clip["clip_fraction"][-1] == 1.0 and max(abs(g) for g in clip["scale_grad"]) < 1e-12
    assert clip["log_scale"][0] == 0.0 and abs(clip["log_scale"][-1]) < 1e-6  # rounding noise, Adam's eps
    fix = train_toy_head(x, y, TREE, HyperbolicHead(ball, clip_r=3), steps=15, cone_weight=1.0, center_weight=0.1)
    assert fix["clip_fraction"][0] == 0.0 and fix["radius_mean"][0] == pytest.approx(1.0, abs=0.2)
    assert math.isfinite(fix["loss"][-1]) and fix["z"].shape == (30, 8)
    with pytest.raises(ValueError, match="steps must be"):
        train_toy_head(x, y, TREE, HyperbolicHead(ball), steps=0)
