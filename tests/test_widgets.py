"""Tests for hierviz.viz.widgets: plain figure callbacks and the slider panels built on them."""

from __future__ import annotations

import json

import ipywidgets
import numpy as np
import pytest
import torch

from hierviz.data import toy_tangent_points
from hierviz.viz import omega_matrix, plot_omega
from hierviz.viz.widgets import (
    PLOTLY_MIME,
    Panel,
    curvature_figure,
    curvature_panel,
    figure_bundle,
    lam_figure,
    lam_hinges,
    lam_panel,
    lam_terms,
    margin_figure,
    margin_panel,
    omega_figure,
    omega_panel,
    tau_figure,
    tau_panel,
)


def arr(v):
    """A plotly JSON array: a list, or plotly >= 6's typed-array spec {"dtype", "bdata"[, "shape"]}."""
    if isinstance(v, dict):
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return a.reshape([int(n) for n in str(v["shape"]).split(",")]) if "shape" in v else a
    return np.asarray(v)


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
    with pytest.raises(ValueError, match="spread must be a finite number >= 0"):
        toy_tangent_points(breakhis_tree, spread=-0.1)


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
    # leaf c (depth 1) repeats itself at level 2, as in LAMLoss: its hinge there is the loss's, not a forced 0
    from hierviz.geometry import PoincareBall
    from hierviz.losses import LAMLoss

    lam = LAMLoss(unbalanced_tree, PoincareBall(c=1.0), margins=[0.1, 0.1])
    lam.train()
    lam(torch.from_numpy(z).unsqueeze(1), torch.as_tensor(y))
    assert (2, "c") in lam.proto_names
    ref = lam.sample_hinges(torch.from_numpy(z).unsqueeze(1), torch.as_tensor(y)).double().numpy()
    np.testing.assert_allclose(h[2], ref[:, 1], atol=1e-12)
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
    assert isinstance(p.view, ipywidgets.Output) and "hierviz-panel" in p._dom_classes
    before = np.asarray(p.figure.data[0].z).copy()
    p.controls["gamma"].value = 1.5
    after = np.asarray(p.figure.data[0].z)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, omega_matrix(breakhis_tree, 0.5, 1.5))
    # what the front end draws: one display_data in the panel's own Output, the new figure's bundle
    (out,) = p.view.outputs
    assert out["output_type"] == "display_data" and set(out["data"]) == {PLOTLY_MIME, "text/plain"}
    np.testing.assert_allclose(arr(out["data"][PLOTLY_MIME]["data"][0]["z"]), omega_matrix(breakhis_tree, 0.5, 1.5))


def test_panel_output_is_one_bundle_per_change_and_never_the_cell(breakhis_tree, monkeypatch):
    """A 0.2 regression: the figure goes into the panel's Output, never through display()."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append(a))
    p = tau_panel(breakhis_tree)
    for tau in (0.2, 0.3, 0.4):
        p.controls["tau"].value = tau
        assert len(p.view.outputs) == 1
        spec = p.view.outputs[0]["data"][PLOTLY_MIME]
        np.testing.assert_allclose(arr(spec["data"][0]["y"]), np.asarray(tau_figure(breakhis_tree, tau).data[0].y))
        assert spec["layout"]["title"]["text"] == p.figure.layout.title.text
    assert shown == []
    json.dumps(p.view.outputs)  # the comm can send it as is


def test_figure_bundle_is_plotlys_own_mimebundle(breakhis_tree):
    import plotly.io as pio

    fig = omega_figure(breakhis_tree, 0.3, 0.7)
    ref = pio.renderers["plotly_mimetype"].to_mimebundle(fig.to_dict())[PLOTLY_MIME]  # peer: plotly's renderer
    got = figure_bundle(fig)[PLOTLY_MIME]
    assert set(got) >= {"data", "layout"} and got["data"] == ref["data"] and got["layout"] == ref["layout"]
    assert figure_bundle(fig)["text/plain"] == "Figure(1 trace: heatmap)"
    with pytest.raises(TypeError, match="plotly.graph_objects.Figure"):
        figure_bundle({"data": []})


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


def _eq11_by_hand(z, y, tree, margins, c=1.0):
    """Eq. 11 written out with LAMLoss's prototypes: per level, [d(z, own) − min other d(z, ·) + m]_+."""
    from hierviz.geometry import PoincareBall
    from hierviz.losses import LAMLoss

    ball = PoincareBall(c=c)
    lam = LAMLoss(tree, ball, margins=margins)
    lam.train()
    zt, yt = torch.from_numpy(z).unsqueeze(1), torch.as_tensor(y)
    lam(zt, yt)  # the first call sets the prototypes
    P = lam.prototypes.double()
    D = ball.pairwise_dist(torch.from_numpy(z), P).numpy()
    slots = lam.slots(yt).numpy()  # (L-1, N)
    levels = lam.proto_level.numpy()
    out = {}
    for k, lv in enumerate(range(1, tree.height)):
        own = D[np.arange(len(y)), slots[k]]
        other = np.where((levels[None, :] == lv) & (np.arange(len(P))[None, :] != slots[k][:, None]), D, np.inf)
        nearest = other.min(1)
        h = np.maximum(own - nearest + margins[k], 0.0)
        out[lv] = np.where(np.isfinite(nearest), h, 0.0)
    return out, lam


def test_lam_panel_is_lamloss_on_bloodmnist_tree():
    """The LAM widgets compute with LAMLoss: per sample, per level and in total, on an unbalanced real tree."""
    from hierviz.data import load_tree

    tree = load_tree("bloodmnist")  # leaves at depths 2, 3 and 4: unbalanced, L = 4
    assert len(set(tree.leaf_depth.tolist())) == 3 and tree.height == 4
    v, y = toy_tangent_points(tree, n_per_leaf=12, spread=0.3, seed=1)
    ball = __import__("geoopt").PoincareBall(c=1.0)
    z = ball.projx(ball.expmap0(torch.tensor(0.6 * v))).numpy()
    margins, weights = [0.5, 0.3, 0.1], [1.0, 2.0, 0.5]
    terms = lam_terms(z, y, tree, margins, weights)
    by_hand, lam = _eq11_by_hand(z, y, tree, margins)
    for k, lv in enumerate((1, 2, 3)):
        np.testing.assert_allclose(terms["hinges"][lv], by_hand[lv], atol=1e-6)
        assert terms["level_losses"][lv] == pytest.approx(float(lam.last_level_losses[k]), abs=1e-6)
    assert any(terms["hinges"][lv].max() > 0 for lv in (1, 2, 3))  # the check is not vacuous
    # a shallow leaf (lymphocyte, depth 2) is its own group at level 3, and the panel uses that slot
    assert (3, "lymphocyte") in terms["proto_names"]
    weighted = sum(w * terms["level_losses"][lv] for w, lv in zip(weights, (1, 2, 3)))
    assert terms["loss"] == pytest.approx(weighted, abs=1e-9)
    assert lam_hinges(z, y, tree, margins)[3] == pytest.approx(by_hand[3], abs=1e-6)
    fig = lam_figure(z[:, :2], y, tree, margins, weights)
    bars = {t.name: np.asarray(t.y) for t in fig.data if t.type == "bar"}
    np.testing.assert_allclose(
        bars["100 · λ_ℓ · L_LAM^(ℓ)"], [100 * w * terms["level_losses"][lv] for w, lv in zip(weights, (1, 2, 3))]
    )
    np.testing.assert_allclose(bars["% violating"], [100 * np.mean(by_hand[lv] > 0) for lv in (1, 2, 3)], atol=1e-9)
    assert f"L_LAM = {terms['loss']:.4f}" in fig.layout.title.text
    with pytest.raises(ValueError, match="level_weights must have 3"):
        lam_terms(z, y, tree, margins, [1.0])
    with pytest.raises(ValueError, match="level_weights"):
        lam_terms(z, y, tree, margins, [1.0, -1.0, 1.0])


def test_margin_figure_title_is_the_loss(unbalanced_tree):
    z, y = _two_clusters(unbalanced_tree)
    f = margin_figure(z, y, unbalanced_tree, [0.8, 0.3])
    _, lam = _eq11_by_hand(z, y, unbalanced_tree, [0.8, 0.3])
    for lv, value in zip((1, 2), lam.last_level_losses.tolist()):
        assert f"ℓ={lv}: m={[0.8, 0.3][lv - 1]:.2f}, L={value:.3f}" in f.layout.title.text


def test_lam_panel_weights_scale_the_loss_not_the_violators(breakhis_tree):
    p = lam_panel(breakhis_tree)
    assert list(p.controls) == ["m1", "lam1"] and p.controls["m1"].value == 0.5  # LAMLoss's default margin
    circles = len(p.figure.data[[t.name for t in p.figure.data].index("margin violations")].x)
    bar = np.asarray(p.figure.data[-1].y).copy()
    p.controls["lam1"].value = 2.0
    after = p.figure
    assert len(after.data[[t.name for t in after.data].index("margin violations")].x) == circles
    np.testing.assert_allclose(np.asarray(after.data[-1].y), 2.0 * bar)
    p.controls["m1"].value = 1.5
    assert len(p.figure.data[[t.name for t in p.figure.data].index("margin violations")].x) > circles
    with pytest.raises(ValueError, match="level_weights must have 1"):
        lam_panel(breakhis_tree, level_weights=[1.0, 1.0])


def test_curvature_title_distance_is_the_geometry(breakhis_tree):
    import geoopt

    v, y = toy_tangent_points(breakhis_tree, n_per_leaf=5)
    f = curvature_figure(2.0, v, y, breakhis_tree)
    ball = geoopt.PoincareBall(c=2.0)
    ref = ball.dist0(ball.projx(ball.expmap0(torch.tensor(v)))).mean().item()  # peer: geoopt
    assert f"mean distance to the origin {ref:.3f}" in f.layout.title.text


def test_tau_figure_is_the_hwc_gradient(breakhis_tree):
    """The τ panel's bars are Eq. 8 as the loss module computes it (hwc_logit_gradient with hwc_omega)."""
    from hierviz.losses import hwc_logit_gradient, hwc_omega

    tau, alpha, gamma = 0.2, 0.7, 0.4
    f = tau_figure(breakhis_tree, tau, alpha, gamma)
    from hierviz.viz import dfs_leaves

    first = breakhis_tree.leaves[0]  # tau_figure's defaults: this anchor, every leaf once in DFS order, sim 0.5
    cand = [first] + [leaf for leaf in dfs_leaves(breakhis_tree) if leaf != first]
    lab = torch.tensor([0] + [breakhis_tree.leaf_index[c] for c in cand])  # row 0: the anchor
    pos = lab[:, None] == lab[None, :]
    omega = hwc_omega(breakhis_tree.rho_matrix.double()[lab][:, lab], pos, alpha, gamma)
    s = torch.full((len(lab), len(lab)), 0.5 / tau, dtype=torch.float64)
    ref = hwc_logit_gradient(s, omega, pos)[0, 1:].numpy()
    assert [x.split(". ", 1)[1].removesuffix(" (+)") for x in f.data[0].x] == cand
    grad = np.asarray(f.data[[t.name for t in f.data].index("HWC ∂L/∂s")].y)
    np.testing.assert_allclose(grad, ref, atol=1e-12)
    assert np.ptp(grad[1:]) > 1e-3  # the tree separates the candidates: not a vacuous check


def _same_json(fast, reference) -> bool:
    import json

    import plotly.io as pio

    def norm(fig):
        spec = json.loads(pio.to_json(fig))
        for t in spec["data"]:  # xaxis "x" / yaxis "y" are plotly's defaults: written or not, the same figure
            if t.get("xaxis") == "x":
                del t["xaxis"]
            if t.get("yaxis") == "y":
                del t["yaxis"]
        return spec

    return norm(fast) == norm(reference)


def test_fast_panel_figures_are_valid_plotly_and_unchanged(breakhis_tree):
    """The redrawn figures skip plotly's validation (hierviz.viz._fast); re-validated, they are the same JSON."""
    from hierviz.hierarchy.synthetic import b_ary_tree, node_tree_distance
    from hierviz.viz import plot_poincare_disk
    from hierviz.viz._fast import validated
    from hierviz.viz.tree_embedding import curvature_figure as tree_curvature_figure
    from hierviz.viz.widgets.panels import _panel_points

    t = b_ary_tree(2, 3)
    figs = [
        tree_curvature_figure(t, 1.7, D_tree=node_tree_distance(t)),
        lam_figure(*_panel_points(breakhis_tree, None, None, 1.0), breakhis_tree, [0.4], [2.0]),
    ]
    Z, y = _panel_points(breakhis_tree, None, None, 1.0)
    figs.append(plot_poincare_disk(Z, y, breakhis_tree))
    from hierviz.viz.hmlc import gmm_masks_figure

    gmm = gmm_masks_figure(np.abs(np.random.default_rng(0).normal(size=(3, 16))), 2, titles=["a", "b", "c"])
    assert [sh["xref"] for sh in gmm.layout.shapes[::2]] == ["x domain", "x2 domain", "x3 domain"]
    figs.append(gmm)
    for f in figs:
        assert _same_json(f, validated(f))
    # a trace with an invalid property is caught by the re-validation (the check is not vacuous)
    from hierviz.viz._fast import fast_figure

    bad = fast_figure([dict(type="scatter", x=[0.0], y=[0.0], marker=dict(size="big"))], {})
    with pytest.raises(ValueError, match="size"):
        validated(bad)


def test_lam_panel_redraw_is_a_fresh_lam_figure(breakhis_tree):
    """The panel keeps LAM's prototypes and the disk between moves; every redraw equals a fresh lam_figure."""
    from hierviz.viz.widgets.panels import _panel_points

    Z, y = _panel_points(breakhis_tree, None, None, 1.0)
    p = lam_panel(breakhis_tree)
    for name, value in (("m1", 1.2), ("lam1", 0.4), ("m2", 0.05), ("lam2", 2.5), ("m1", 0.0)):
        if name not in p.controls:
            continue
        p.controls[name].value = value
        v = p.values()
        levels = sorted(int(k[1:]) for k in v if k.startswith("m"))
        ref = lam_figure(Z, y, breakhis_tree, [v[f"m{lv}"] for lv in levels], [v[f"lam{lv}"] for lv in levels])
        assert _same_json(p.figure, ref), f"after {name} = {value}"
