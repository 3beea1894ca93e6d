"""Tests for hierviz.viz.widgets: plain figure callbacks and the slider panels built on them."""

from __future__ import annotations

import importlib.util

import ipywidgets
import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from hierviz.viz import omega_matrix, plot_omega
from hierviz.viz.widgets import (
    Panel,
    curvature_figure,
    curvature_panel,
    lam_hinges,
    margin_figure,
    margin_panel,
    omega_figure,
    omega_panel,
    tau_figure,
    tau_panel,
    toy_tangent_points,
)


def names(fig):
    return [t.name for t in fig.data]


def poincare_dist(x, y, c=1.0):
    num = 2 * c * np.sum((x - y) ** 2, -1)
    den = (1 - c * np.sum(x**2, -1)) * (1 - c * np.sum(y**2, -1))
    return np.arccosh(1 + num / den) / np.sqrt(c)


def test_toy_points_follow_the_tree(breakhis_tree):
    v, y = toy_tangent_points(breakhis_tree, n_per_leaf=10, spread=0.0)
    assert v.shape == (80, 2) and y.shape == (80,) and y.dtype == np.int64
    centre = {int(k): v[y == k][0] for k in np.unique(y)}
    # siblings (benign 0,1) closer than cousins (benign 0 vs malignant 4)
    assert np.linalg.norm(centre[0] - centre[1]) < np.linalg.norm(centre[0] - centre[4])
    with pytest.raises(ValueError, match="n_per_leaf"):
        toy_tangent_points(breakhis_tree, n_per_leaf=0)


def test_curvature_figure_maps_with_expmap0(breakhis_tree):
    import geoopt

    v, y = toy_tangent_points(breakhis_tree, n_per_leaf=5)
    f1 = curvature_figure(1.0, v, y, breakhis_tree)
    f4 = curvature_figure(4.0, v, y, breakhis_tree)
    r1 = np.hypot(f1.data[0].x, f1.data[0].y).max()
    r4 = np.hypot(f4.data[0].x, f4.data[0].y).max()
    assert r1 == pytest.approx(1.0) and r4 == pytest.approx(0.5)
    # the points of the first leaf are expmap0_c of its tangent vectors (peer: geoopt)
    ref = geoopt.PoincareBall(c=4.0).expmap0(torch.tensor(v[y == 0])).numpy()
    np.testing.assert_allclose(np.column_stack([f4.data[1].x, f4.data[1].y]), ref, atol=1e-6)
    assert not np.allclose(f1.data[1].x, f4.data[1].x)
    with pytest.raises(ValueError, match="c must"):
        curvature_figure(0.0, v, y, breakhis_tree)
    with pytest.raises(ValueError, match="labels has length"):
        curvature_figure(1.0, v, y[:3], breakhis_tree)


def test_omega_figure_is_plot_omega(breakhis_tree):
    f = omega_figure(breakhis_tree, 0.2, 0.8)
    np.testing.assert_allclose(np.asarray(f.data[0].z), np.asarray(plot_omega(breakhis_tree, 0.2, 0.8).data[0].z))
    np.testing.assert_allclose(np.asarray(f.data[0].z), omega_matrix(breakhis_tree, 0.2, 0.8))


def _two_clusters(tree, c=1.0):
    v, y = toy_tangent_points(tree, n_per_leaf=6, spread=0.05)
    ball = __import__("geoopt").PoincareBall(c=c)
    return ball.projx(ball.expmap0(torch.tensor(v))).numpy(), y


def test_lam_hinges_values(breakhis_tree):
    from hierviz.geometry import PoincareBall

    z, y = _two_clusters(breakhis_tree)
    h0 = lam_hinges(z, y, breakhis_tree, [0.0])
    assert list(h0) == [1]
    assert np.all(h0[1] == 0.0)  # well separated families, no margin: no violation
    h2 = lam_hinges(z, y, breakhis_tree, {1: 2.0})
    # hand formula with the same prototypes (LAM's own, from its first training call): [d(z, c_own) − d(z, c_other) + m]_+
    from hierviz.losses import LAMLoss

    lam = LAMLoss(breakhis_tree, PoincareBall(c=1.0), margins=[2.0])
    lam.train()
    lam(torch.from_numpy(z).unsqueeze(1), torch.as_tensor(y))
    row = {name: i for i, (_, name) in enumerate(lam.proto_names)}
    ben, mal = (lam.prototypes[row[n]].double().numpy() for n in ("benign", "malignant"))

    own = np.where((y < 4)[:, None], ben, mal)
    other = np.where((y < 4)[:, None], mal, ben)
    ref = np.maximum(poincare_dist(z, own) - poincare_dist(z, other) + 2.0, 0.0)
    np.testing.assert_allclose(h2[1], ref, atol=1e-5)
    # where both are active the hinge grows exactly with the margin
    h3 = lam_hinges(z, y, breakhis_tree, [2.5])
    act = h2[1] > 0
    np.testing.assert_allclose(h3[1][act] - h2[1][act], 0.5, atol=1e-9)


def test_lam_hinges_unbalanced_and_errors(unbalanced_tree, breakhis_tree):
    z, y = _two_clusters(unbalanced_tree)
    h = lam_hinges(z, y, unbalanced_tree, [0.1, 0.1])
    assert set(h) == {1, 2}
    c = unbalanced_tree.leaf_index["c"]
    assert np.all(h[2][y == c] == 0.0)  # leaf c (depth 1) has no level-2 ancestor
    with pytest.raises(ValueError, match="margins must have 2"):
        lam_hinges(z, y, unbalanced_tree, [0.1])
    with pytest.raises(ValueError, match="margins"):
        lam_hinges(z, y, unbalanced_tree, [0.1, -0.2])
    from hierviz.hierarchy import LabelTree

    flat = LabelTree.from_nested({"root": ["a", "b"]})
    with pytest.raises(ValueError, match="height >= 2"):
        lam_hinges(np.zeros((2, 2)), np.array([0, 1]), flat, [])
    zb, yb = _two_clusters(breakhis_tree)
    with pytest.raises(ValueError, match="outside"):
        lam_hinges(zb * 3, yb, breakhis_tree, [0.1])


def test_margin_figure_marks_violations(breakhis_tree):
    z, y = _two_clusters(breakhis_tree)
    f0 = margin_figure(z, y, breakhis_tree, [0.0])
    f2 = margin_figure(z, y, breakhis_tree, [2.0])
    assert names(f0)[-1] == "margin violations"
    assert len(f0.data[-1].x) == 0 and len(f2.data[-1].x) > 0
    assert "m=2.00" in f2.layout.title.text


def test_tau_figure_changes_with_tau(breakhis_tree):
    a = tau_figure(breakhis_tree, 0.1)
    b = tau_figure(breakhis_tree, 0.5)
    assert names(a)[:3] == ["push ω·π", "pull −a/|P|", "HWC ∂L/∂s"]
    assert list(a.data[0].x)[0].startswith("1. adenosis")
    assert not np.allclose(a.data[0].y, b.data[0].y)


def test_omega_panel_slider_updates_figure(breakhis_tree):
    p = omega_panel(breakhis_tree)
    assert isinstance(p, Panel) and isinstance(p, ipywidgets.VBox)
    assert set(p.controls) == {"alpha", "gamma"}
    if importlib.util.find_spec("anywidget") is None:  # plotly's FigureWidget needs anywidget
        assert isinstance(p.view, ipywidgets.Output)
    else:
        assert isinstance(p.view, go.FigureWidget)
    before = np.asarray(p.figure.data[0].z).copy()
    p.controls["gamma"].value = 1.5
    after = np.asarray(p.figure.data[0].z)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, omega_matrix(breakhis_tree, 0.5, 1.5))


def test_curvature_margin_tau_panels(breakhis_tree):
    cp = curvature_panel(breakhis_tree)
    cp.controls["c"].value = 4.0
    assert np.hypot(cp.figure.data[0].x, cp.figure.data[0].y).max() == pytest.approx(0.5)
    mp = margin_panel(breakhis_tree)
    assert list(mp.controls) == ["m1"]
    n_before = len(mp.figure.data[-1].x)
    mp.controls["m1"].value = 2.0
    assert len(mp.figure.data[-1].x) > n_before
    tp = tau_panel(breakhis_tree)
    y0 = np.asarray(tp.figure.data[0].y).copy()
    tp.controls["tau"].value = 0.5
    assert not np.allclose(y0, tp.figure.data[0].y)
    assert tp.values()["tau"] == 0.5


def test_sync_figure_replaces_traces_and_layout(breakhis_tree):
    from hierviz.viz.widgets import _sync_figure

    target = omega_figure(breakhis_tree, 0.1, 0.1)
    new = tau_figure(breakhis_tree, 0.3)
    _sync_figure(target, new)  # the FigureWidget path, exercised on a plain go.Figure
    assert names(target) == names(new)
    assert target.layout.title.text == new.layout.title.text
    np.testing.assert_allclose(target.data[0].y, new.data[0].y)


def test_panel_bad_input(breakhis_tree):
    v, y = toy_tangent_points(breakhis_tree, n_per_leaf=3)
    with pytest.raises(ValueError, match="labels must be given"):
        curvature_panel(breakhis_tree, points=v)
    with pytest.raises(ValueError, match="c_range"):
        curvature_panel(breakhis_tree, c_range=(2.0, 1.0))
    with pytest.raises(ValueError, match="margins must have 1"):
        margin_panel(breakhis_tree, margins=[0.1, 0.2])
    with pytest.raises(ValueError, match="alpha"):
        omega_panel(breakhis_tree, alpha=-1)


def test_lam_hinge_panel_is_lamloss_on_an_unbalanced_tree():
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.losses import LAMLoss
    from hierviz.viz.widgets import lam_hinges

    tree = LabelTree.from_nested({"root": {"a": {"a1": ["x", "y"], "a2": ["z"]}, "b": ["w", "v"], "s": None}})
    assert len({tree.depth(leaf) for leaf in tree.leaves}) > 1  # unbalanced
    g = torch.Generator().manual_seed(0)
    y = torch.arange(tree.num_leaves).repeat(6)
    ball = get_geometry("poincare")
    z = ball.expmap0(0.6 * torch.randn(len(y), 3, generator=g, dtype=torch.float64))
    margins = [0.4, 0.2]
    panel = lam_hinges(z.numpy(), y.numpy(), tree, margins)
    loss = LAMLoss(tree, ball, margins=margins)
    loss.train()
    value = loss(z.unsqueeze(1), y)  # prototypes = Fréchet means of these points, then the hinge
    per_level = torch.tensor([panel[lv].mean() for lv in (1, 2)], dtype=torch.float64)
    assert torch.allclose(per_level, loss.last_level_losses.double(), atol=1e-6)
    assert float(value) == pytest.approx(float(per_level.sum()), abs=1e-6)
