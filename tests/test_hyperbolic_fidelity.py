"""Hyperbolic fidelity: a head that uses the ball, radius diagnostics, sound means."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import hierviz.methods  # noqa: F401  (registers the display names the report shows: "SupCon", not "supcon")
from hierviz.geometry import Lorentz, PoincareBall, get_geometry
from hierviz.geometry.frechet import riemannian_grad_norm
from hierviz.hierarchy import LabelTree
from hierviz.metrics import max_radius, origin_distance, radius_report
from hierviz.models import HyperbolicHead, build_model

F64 = torch.float64


# ----------------------------------------------------------------------------- the head
def test_head_scale_is_a_learned_log_parameter():
    head = HyperbolicHead(PoincareBall(1.0))
    assert isinstance(head.log_scale, torch.nn.Parameter) and head.clip_r == 3.0
    assert float(head.scale) == 1.0 and float(HyperbolicHead(PoincareBall(), scale_init=0.25).scale) == 0.25
    v = torch.randn(8, 16)
    head(v).norm().backward()
    assert head.log_scale.grad is not None and float(head.log_scale.grad.abs()) > 0


def test_head_hand_computed_radius_and_clip_only_catches_outliers():
    ball = PoincareBall(1.0)
    head = HyperbolicHead(ball, clip_r=4.0, scale_init=0.5, bound="clip")
    v = torch.tensor([[2.0, 0, 0, 0], [100.0, 0, 0, 0]], dtype=F64)
    z = head(v).detach()
    # raw norm 2 -> tangent 1 -> |z| = tanh(1); raw 100 -> tangent 50 -> clipped at 4 -> tanh(4)
    torch.testing.assert_close(z.norm(dim=-1), torch.tensor([math.tanh(1.0), math.tanh(4.0)], dtype=F64))


def test_head_with_fixed_unit_scale_is_the_01_head_bit_for_bit():
    ball = PoincareBall(1.0)
    head = HyperbolicHead(ball, clip_r=2.0, scale_init=1.0, learn_scale=False, bound="clip")
    assert "log_scale" in dict(head.named_buffers())
    v = torch.randn(32, 8) * 5
    assert torch.equal(head(v), ball.to_manifold(v, clip_r=2.0))


def test_head_rejects_bad_scale():
    for bad in (0.0, -1.0, float("nan"), True, "1"):
        with pytest.raises(ValueError, match="scale_init"):
            HyperbolicHead(PoincareBall(), scale_init=bad)


def test_model_head_params_include_the_scale_and_features_map_is_fixed():
    model = build_model("small_cnn", PoincareBall(1.0), embed_dim=8, width=4, num_classes=3)
    ids = {id(p) for p in model.head_parameters()}
    assert id(model.to_manifold.log_scale) in ids
    assert not any(p.requires_grad for p in model.features_to_manifold.parameters())
    assert float(model.to_manifold.scale) == 1.0
    assert float(model.features_to_manifold.scale) == pytest.approx(model.feature_dim**-0.5, rel=1e-6)


def test_initial_embeddings_sit_well_inside_the_ball_and_spread_in_radius():
    torch.manual_seed(0)
    model = build_model("small_cnn", PoincareBall(1.0), embed_dim=32, width=8).eval()
    with torch.no_grad():
        z = model(torch.rand(64, 3, 32, 32))["z"]
    r = origin_distance(z, PoincareBall(1.0))
    top = max_radius(PoincareBall(1.0), clip_r=3.0)
    assert float(r.max()) < 0.5 * top  # nothing near the clip radius at initialisation
    assert float(z.norm(dim=-1).std()) > 0


# ----------------------------------------------------------------------------- radius report
def _two_level_tree():
    return LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})


def test_max_radius_hand_values():
    # geoopt's ball: d(0, exp_0 v) = 2|v| for every c; the hyperboloid: |v|
    assert max_radius(PoincareBall(1.0), clip_r=2.0) == pytest.approx(4.0, abs=1e-5)
    assert max_radius(PoincareBall(4.0), clip_r=1.0) == pytest.approx(2.0, abs=1e-5)
    assert max_radius(PoincareBall(1.0)) == pytest.approx(2 * math.atanh(1 - 4e-3), abs=1e-4)  # proj margin
    assert max_radius(Lorentz(1.0), clip_r=3.0) == pytest.approx(3.0, abs=1e-4)
    assert max_radius(Lorentz(1.0)) == math.inf
    assert max_radius(get_geometry("euclidean")) is None
    assert HyperbolicHead(PoincareBall(1.0), clip_r=1.5).max_radius == pytest.approx(3.0, abs=1e-5)


def test_radius_report_midpoint_hand_computed():
    # two points at distance 3 from the origin, angle θ apart: their Fréchet mean (the geodesic
    # midpoint) has cosh r_m = cosh 3 / cosh(d/2), cosh d = cosh²3 − sinh²3 cos θ
    ball = PoincareBall(1.0)
    tree = _two_level_tree()
    theta = 0.4
    ang = torch.tensor([0.0, theta, 3.0, 3.0 + theta], dtype=F64)
    z = ball.expmap0(1.5 * torch.stack([ang.cos(), ang.sin()], -1))
    rep = radius_report(z, [0, 1, 2, 3], tree, ball, steps=30)
    d = math.acosh(math.cosh(3) ** 2 - math.sinh(3) ** 2 * math.cos(theta))
    r_mid = math.acosh(math.cosh(3) / math.cosh(d / 2))
    rows = rep["radius_by_depth"]
    assert [r["depth"] for r in rows] == [0, 1, 2]
    assert rows[2]["sample_mean"] == pytest.approx(3.0) and rows[2]["n_samples"] == 4
    assert rows[1]["proto_mean"] == pytest.approx(r_mid, abs=1e-6) and rows[1]["n_protos"] == 2
    assert rows[0]["n_samples"] == 0 and rows[0]["sample_mean"] is None
    assert rep["clip_fraction"] == 0.0 and rep["radius_mean"] == pytest.approx(3.0)


def test_clip_fraction_counts_points_at_the_clip_radius():
    ball = PoincareBall(1.0)
    tree = _two_level_tree()
    head = HyperbolicHead(ball, clip_r=2.0, scale_init=1.0)
    v = torch.tensor([[50.0, 0], [0, 50.0], [0.1, 0], [0, -0.2]])
    z = head(v).detach()
    rep = radius_report(z, [0, 1, 2, 3], tree, ball, clip_r=2.0)
    assert rep["clip_fraction"] == 0.5
    assert rep["max_radius"] == pytest.approx(4.0, abs=1e-5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), spread=st.floats(0.2, 1.2), c=st.sampled_from([0.5, 1.0, 2.0]))
def test_parents_prototypes_lie_nearer_the_origin_than_their_childrens(seed, spread, c):
    # A synthetic tree embedded the hierarchical way: each parent direction at radius ~2,
    # children around it at radius ~3.5. Fréchet means contract towards the origin, so on
    # average the parent-level prototypes are nearer the origin than the leaf-level ones.
    g = torch.Generator().manual_seed(seed)
    ball = PoincareBall(c)
    tree = LabelTree.from_nested({"r": {f"p{i}": [f"p{i}c{j}" for j in range(3)] for i in range(3)}})
    rows, labels = [], []
    for leaf in range(9):
        p, j = divmod(leaf, 3)
        base = 2 * math.pi * p / 3 + spread * (j - 1)
        ang = base + 0.05 * torch.randn(20, generator=g, dtype=F64)
        rad = (3.5 + 0.2 * torch.randn(20, generator=g, dtype=F64)) / 2 / c**0.5
        rows.append(ball.expmap0(rad[:, None] * torch.stack([ang.cos(), ang.sin()], -1)))
        labels += [leaf] * 20
    rep = radius_report(torch.cat(rows), labels, tree, ball)
    protos = [r["proto_mean"] for r in rep["radius_by_depth"]]
    assert protos[0] < protos[1] < protos[2]


def test_radius_report_lorentz_agrees_with_the_ball():
    lor, ball = Lorentz(1.0), PoincareBall(1.0)
    tree = _two_level_tree()
    v = torch.randn(40, 3, dtype=F64, generator=torch.Generator().manual_seed(1))
    y = torch.arange(40) % 4
    a = radius_report(lor.expmap0(v), y, tree, lor)
    b = radius_report(ball.expmap0(v / 2), y, tree, ball)  # same points: geoopt's ball has λ = 2
    for ra, rb in zip(a["radius_by_depth"], b["radius_by_depth"]):
        assert ra["proto_mean"] == pytest.approx(rb["proto_mean"], rel=1e-5)
        assert (ra["sample_mean"] is None) == (rb["sample_mean"] is None)


# ----------------------------------------------------------------------------- Karcher means
def _spread_points(geom, n=40, d=6, spread=3.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, d, generator=g, dtype=F64)
    v = v / v.norm(dim=1, keepdim=True) * spread * torch.rand(n, 1, generator=g, dtype=F64) ** 0.3
    v[:, 0] += 0.5 * spread
    return geom.expmap0(v / (2 if isinstance(geom, PoincareBall) else 1))


def _brute_force_mean(geom, x):
    """Minimise Σ d²(exp_0(u), x_i) over u with scipy's BFGS in float64 (a reference, not our iteration)."""

    def f(u):
        ut = torch.tensor(u, dtype=F64, requires_grad=True)
        mu = geom.expmap0(ut)
        val = (geom.dist(mu.expand_as(x), x) ** 2).sum()
        (grad,) = torch.autograd.grad(val, ut)
        return float(val.detach()), grad.numpy()

    u0 = np.zeros(x.shape[1] - (geom.point_dim(1) - 1))
    res = scipy.optimize.minimize(f, u0, jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 5000})
    return geom.expmap0(torch.tensor(res.x, dtype=F64))


@pytest.mark.parametrize("geom", [PoincareBall(1.0), PoincareBall(0.5), Lorentz(1.0)], ids=str)
@pytest.mark.parametrize("spread", [1.0, 3.0, 5.0])
def test_karcher_mean_matches_a_brute_force_minimiser(geom, spread):
    x = _spread_points(geom, spread=spread)
    ref = _brute_force_mean(geom, x)
    mu = geom.mean(x, steps=30)
    assert float(geom.dist(mu[None], ref[None])[0]) < 1e-5
    # optimality: the Riemannian gradient (mean log-map) vanishes at the returned mean
    vbar = geom._log(mu[None].expand_as(x), x).mean(0, keepdim=True)
    assert float(riemannian_grad_norm(geom, mu[None], vbar)[0]) < 1e-6


@pytest.mark.parametrize("geom", [PoincareBall(1.0), Lorentz(1.0)], ids=str)
def test_karcher_objective_never_increases(geom):
    x = _spread_points(geom, spread=5.0, seed=3)

    def objective(mu):
        return float((geom.dist(mu.expand_as(x), x) ** 2).sum())

    values = [objective(geom.mean(x, steps=k)) for k in range(0, 15)]
    # never a rise beyond the float64 noise of evaluating the objective itself
    assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:])), values
    assert values[-1] < values[0]


def test_group_mean_tol_stops_early_at_the_same_answer():
    ball = PoincareBall(1.0)
    x = _spread_points(ball, spread=3.0)
    idx = torch.zeros(x.shape[0], dtype=torch.long)
    full = ball.group_mean(x, idx, 1, steps=60)
    early = ball.group_mean(x, idx, 1, steps=60, tol=1e-9)
    assert float(ball.dist(full, early)[0]) < 1e-8
    with pytest.raises(ValueError, match="tol"):
        ball.group_mean(x, idx, 1, tol=-1.0)


# ----------------------------------------------------------------------------- disk figures
def test_reduce_to_disk_keeps_every_points_radius():
    from hierviz.viz.disk import reduce_to_disk

    g = torch.Generator().manual_seed(0)
    ball = PoincareBall(1.0)
    v = torch.randn(50, 8, generator=g, dtype=F64)
    v = v / v.norm(dim=1, keepdim=True) * torch.linspace(0.1, 2.5, 50, dtype=F64)[:, None]
    z = ball.expmap0(v).numpy()
    z2, _ = reduce_to_disk(z, 1.0)
    r = lambda a: 2 * np.arctanh(np.linalg.norm(a, axis=1))  # noqa: E731
    np.testing.assert_allclose(r(z2), r(z), rtol=1e-9)
    z2_old, _ = reduce_to_disk(z, 1.0, keep_radius=False)  # the plain projection shrinks radii
    assert (r(z2_old) < r(z) - 1e-6).mean() > 0.5


def test_disk_caption_says_saturated_and_shows_spread():
    from hierviz.viz import plot_poincare_disk
    from hierviz.viz.disk import disk_radius_caption

    tree = _two_level_tree()
    ang = np.linspace(0, 6, 40)
    sat = 0.964 * np.stack([np.cos(ang), np.sin(ang)], 1)  # hierviz 0.1: every point at tanh(2)
    assert "saturated" in disk_radius_caption(sat)
    fig = plot_poincare_disk(sat, np.arange(40) % 4, tree)
    assert "saturated" in fig.layout.meta["caption"]
    spread = sat * np.linspace(0.1, 1.0, 40)[:, None]
    cap = disk_radius_caption(spread)
    assert "saturated" not in cap and cap.startswith("radius d(0, z) = ")


# ----------------------------------------------------------------------------- report
def test_report_has_a_radius_table_figure_and_flags_saturated_runs(tmp_path):
    from hierviz.data import load_tree
    from hierviz.report import build_report

    tree = load_tree("two-step")
    ball = PoincareBall(1.0)
    y = np.arange(70) % 7
    g = torch.Generator().manual_seed(0)
    v = torch.randn(70, 4, generator=g, dtype=F64)
    saturated = ball.to_manifold(v * 100, clip_r=2.0).float().numpy()  # the 0.1 head: all at tanh(2)
    spread = ball.expmap0(v * torch.linspace(0.1, 1.0, 70, dtype=F64)[:, None]).float().numpy()
    recs = []
    for name, z, clip in (("supcon", saturated, 2.0), ("hwc", spread, 4.0)):
        path = tmp_path / f"{name}.npz"
        np.savez(path, z_test=z, y_test=y, prototypes=np.zeros((0, 4), np.float32), proto_nodes=np.zeros(0, np.int64))
        rad = radius_report(z, y, tree, ball, clip_r=clip)
        rad["scale"] = 1.0
        metrics = {"top1": 0.1, "hf1": 0.2, "h_acc": 0.2, "violations": 0.5, "pc_order": 0.5}
        recs.append(
            {
                "method": name,
                "geometry": "poincare",
                "geometry_config": {"name": "poincare", "c": 1.0},
                "seed": 0,
                "embeddings": str(path),
                "metrics": metrics,
                "radius": rad,
            }
        )
    assert recs[0]["radius"]["clip_fraction"] == 1.0 and recs[1]["radius"]["clip_fraction"] == 0.0
    paths = build_report(tmp_path / "out", recs, tree, header={"Dataset": "toy"}, projection="pca")
    md = paths["markdown"].read_text(encoding="utf-8")
    assert "**Radius**" in md and "| SupCon (Poincaré, seed 0) | 1 | 4.00 ± 0.00 | 1.00 ⚠ |" in md
    assert "| HWC (Poincaré, seed 0) |" in md and "0.00 |" in md
    html = paths["html"].read_text(encoding="utf-8")
    assert "Radius by tree depth" in html and "<tr class='flag'>" in html
    assert "SupCon (Poincaré, seed 0): 100 % of the test embeddings sit at the clip radius" in html
    from hierviz.report import read_results_csv

    csv_rows = read_results_csv(paths["csv"])
    assert [float(r["clip_fraction"]) for r in csv_rows] == [1.0, 0.0]
    assert "saturated: every point sits on one sphere" in html  # the disk's caption


# ----------------------------------------------------------------------------- Lorentz numerics
@pytest.mark.parametrize("R", [2.0, 5.0, 8.0, 12.0])
def test_lorentz_float32_inputs_are_accurate_far_from_the_origin(R):
    # close pairs at distance R from the origin: float32 coordinates, float64 reference
    lor = Lorentz(1.0)
    g = torch.Generator().manual_seed(0)
    u = torch.nn.functional.normalize(torch.randn(100, 8, generator=g, dtype=F64), dim=1)
    w = torch.nn.functional.normalize(u + 2e-3 * torch.randn(100, 8, generator=g, dtype=F64), dim=1)
    x64, y64 = lor.expmap0(R * u), lor.expmap0(R * w)
    x32, y32 = lor.expmap0((R * u).float()), lor.expmap0((R * w).float())
    assert x32.dtype == torch.float32
    ref = lor.dist(x64, y64)
    for d32 in (lor.dist(x32, y32), lor.pairwise_dist(x32, y32).diagonal()):
        assert d32.dtype == torch.float32
        assert float(((d32.double() - ref).abs() / ref).max()) < 1e-3  # hierviz 0.2: up to 3e-2
    m32, m64 = lor.mean(x32[:50], steps=10), lor.mean(x64[:50], steps=10)
    assert m32.dtype == torch.float32 and bool(torch.isfinite(m32).all())
    assert float(lor.dist(m32.double()[None], m64[None])[0]) < 1e-5


@pytest.mark.parametrize("c", [1e-9, 710.0, 1e4])
@pytest.mark.parametrize("name", ["poincare", "lorentz"])
def test_curvature_outside_the_representable_range_is_refused(name, c):
    with pytest.raises(ValueError, match="outside the curvature range"):
        get_geometry(name, c=c)


@pytest.mark.parametrize("c", [1e-7, 1e-3, 50.0, 500.0])
def test_poincare_distance_is_exact_across_the_accepted_range(c):
    ball = PoincareBall(c)
    v = torch.tensor([[0.3, 0.1], [-0.2, 0.4]], dtype=F64) / c**0.5
    x = ball.expmap0(v)
    xs = x * c**0.5  # the same points on the unit ball
    ref = math.acosh(
        1 + 2 * float((xs[0] - xs[1]).pow(2).sum() / ((1 - xs[0].pow(2).sum()) * (1 - xs[1].pow(2).sum())))
    )
    assert float(ball.dist(x[0], x[1])) * c**0.5 == pytest.approx(ref, rel=1e-6)


def test_geoopt_dist_caps_near_16_8_in_float64_too_and_ours_do_not():
    ball = PoincareBall(1.0)
    x = torch.tensor([[1 - 1e-9, 0.0], [-(1 - 1e-9), 0.0]], dtype=F64)
    exact = 4 * math.atanh(1 - 1e-9)  # two points at radius 2 artanh(1 - 1e-9) on opposite sides
    assert float(ball.manifold.dist(x[0], x[1])) == pytest.approx(2 * math.atanh(1 - 1e-7), rel=1e-6)  # the cap
    assert float(ball.dist(x[0], x[1])) == pytest.approx(exact, rel=1e-9)  # hierviz 0.3: no cap
    assert float(ball.pairwise_dist(x)[0, 1]) == pytest.approx(exact, rel=1e-6)


def test_disk_caption_tells_a_collapsed_embedding_from_a_saturated_one():
    from hierviz.viz.disk import disk_radius_caption

    spot = np.tile([[0.3, 0.4]], (20, 1))
    assert "collapsed" in disk_radius_caption(spot) and "saturated" not in disk_radius_caption(spot)
    assert "near the centre" in disk_radius_caption(np.random.default_rng(0).normal(0, 0.005, (20, 2)))


# ----------------------------------------------------------------------------- learnable curvature
@pytest.mark.parametrize("name", ["poincare", "lorentz"])
def test_learnable_curvature_gets_gradients_through_every_distance(name):
    g = get_geometry(name, c=0.7, learnable=True)
    assert g.learnable and torch.is_tensor(g.c) and float(g.c.detach()) == pytest.approx(0.7)
    v = torch.randn(6, 3, dtype=F64, generator=torch.Generator().manual_seed(0)) * 0.5
    x = g.expmap0(v)
    loss = g.pairwise_dist(x).sum() + g.dist(x[0], x[1]) + g.mean(x, steps=3).sum()
    (param,) = list(g.manifold.parameters())
    (grad,) = torch.autograd.grad(loss, param)
    assert torch.isfinite(grad) and float(grad.abs()) > 0
    # the same numbers as a fixed geometry of that curvature
    fixed = get_geometry(name, c=0.7)
    torch.testing.assert_close(g.pairwise_dist(x).detach(), fixed.pairwise_dist(x), rtol=1e-10, atol=1e-10)
    assert get_geometry("euclidean", c=2.0, learnable=True).name == "euclidean"  # ignored, like c


def test_learnable_curvature_pairwise_gradient_matches_finite_differences():
    # d/dc of the closed-form pairwise distances, against a central difference in c (float64)
    v = torch.randn(5, 3, dtype=F64, generator=torch.Generator().manual_seed(1)) * 0.4
    g = PoincareBall(1.3, learnable=True)
    x = g.expmap0(v).detach()
    (grad,) = torch.autograd.grad(g.pairwise_dist(x).sum(), g.manifold.isp_c)
    dc_disp = torch.sigmoid(g.manifold.isp_c.detach())  # dc/d isp_c of c = softplus(isp_c)
    h = 1e-6
    fd = (PoincareBall(1.3 + h).pairwise_dist(x).sum() - PoincareBall(1.3 - h).pairwise_dist(x).sum()) / (2 * h)
    assert float(grad) == pytest.approx(float(fd * dc_disp), rel=1e-5)


def test_learn_curvature_trains_c_and_records_it(tmp_path):
    from hierviz.experiments import compare, resolve_config

    cfg = resolve_config(
        "quick-ham10000",
        [
            "data.limit=60",
            "train.epochs=1",
            "train.batch_size=32",
            "methods=supcon",
            "geometries=poincare",
            "seeds=1",
            "model.learn_curvature=true",
            f"out={tmp_path}",
        ],
    )
    res = compare(cfg, progress=False, verbose=False)
    rec = res.record("supcon", "poincare", 0)
    assert rec["curvature"] != 1.0 and 0.5 < rec["curvature"] < 2.0  # moved from its initial value
    assert rec["geometry_config"]["c"] == pytest.approx(rec["curvature"])
    from hierviz.training.checkpoint import load_checkpoint

    ckpt = load_checkpoint(tmp_path / "runs" / "supcon-poincare-s0" / "checkpoint.pt")
    assert any(k.endswith("curvature.isp_c") for k in ckpt["model"])


def test_hierarchy_report_with_radius():
    from hierviz.data import load_tree
    from hierviz.metrics import REPORT_KEYS, hierarchy_report

    tree = load_tree("two-step")
    ball = PoincareBall(1.0)
    g = torch.Generator().manual_seed(0)
    y = torch.arange(140) % 7
    z = ball.expmap0(torch.randn(140, 4, generator=g, dtype=F64) * 0.5 + torch.nn.functional.one_hot(y % 4, 4))
    plain = hierarchy_report(z[:70], y[:70], z[70:], y[70:], tree, ball)
    rich = hierarchy_report(z[:70], y[:70], z[70:], y[70:], tree, ball, with_radius=True, clip_r=3.0)
    assert tuple(plain) == tuple(REPORT_KEYS) and {k: rich[k] for k in plain} == plain
    assert rich["radius"] == radius_report(z[70:], y[70:], tree, ball, clip_r=3.0)
