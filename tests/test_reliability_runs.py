"""Reliability under load and across runs: one test per open case of the 0.3 bad-input probe.

Each test fails on hierviz 0.3 (main at f5a59f7); its docstring says what 0.3 did.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hierviz.geometry import Lorentz

F64 = torch.float64


def _unit(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=F64), dim=-1)


def _lorentz_ref(v1: torch.Tensor, v2: torch.Tensor) -> float:
    """d(exp_o(v1), exp_o(v2)) at c = 1 in 60-digit arithmetic (arcosh of the Minkowski product)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    a = [mpmath.mpf(float(t)) for t in v1.double()]
    b = [mpmath.mpf(float(t)) for t in v2.double()]
    na, nb = mpmath.sqrt(sum(t * t for t in a)), mpmath.sqrt(sum(t * t for t in b))
    x = [mpmath.cosh(na)] + [mpmath.sinh(na) * t / na for t in a]
    y = [mpmath.cosh(nb)] + [mpmath.sinh(nb) * t / nb for t in b]
    return float(mpmath.acosh(x[0] * y[0] - sum(p * q for p, q in zip(x[1:], y[1:]))))


# --------------------------------------------------------------------------- Lorentz far/near distances
@pytest.mark.parametrize(
    ("radius", "dtype", "rel"),
    [(30.0, F64, 1e-12), (40.0, F64, 1e-12), (100.0, F64, 1e-12), (300.0, F64, 1e-12)]
    + [(40.0, torch.float32, 1e-6), (60.0, torch.float32, 1e-6)],
)
def test_lorentz_dist_far_point_against_near_point(radius, dtype, rel):
    """0.3: a point at radius r against one at radius 1: 0.3 gave 0.0 (r = 40, 100), 82.5 (r = 60 float32)."""
    g = Lorentz(1.0)
    u = _unit(2, 3, seed=31)
    v1, v2 = (radius * u[0]).to(dtype), u[1].to(dtype)
    x, y = g.expmap0(v1[None]), g.expmap0(v2[None])
    ref = _lorentz_ref(v1, v2)
    assert float(g.dist(x, y)[0]) == pytest.approx(ref, rel=rel)
    assert float(g.dist(y, x)[0]) == pytest.approx(ref, rel=rel)
    assert float(g.pairwise_dist(x, y)[0, 0]) == pytest.approx(ref, rel=rel)
    assert float(g.pairwise_dist(torch.cat([x, y]))[0, 1]) == pytest.approx(ref, rel=rel)


def test_lorentz_dist_close_pairs_far_out_keep_their_digits():
    """The difference form stays in use for close pairs: two points 1e-6 apart at radius 20 (float64)."""
    g = Lorentz(1.0)
    u = _unit(1, 3, seed=5)[0]
    w = _unit(1, 3, seed=6)[0]
    v1 = 20.0 * u
    v2 = v1 + 1e-6 * (w - (w @ u) * u)  # a tangential step at the same radius
    ref = _lorentz_ref(v1, v2)
    got = float(g.dist(g.expmap0(v1[None]), g.expmap0(v2[None]))[0])
    assert got == pytest.approx(ref, rel=1e-6)


def test_lorentz_origin_distance_at_radius_45():
    """0.3: origin_distance of points at radius 45 and 1 was [0.0, 1.0]."""
    from hierviz.metrics.radius import origin_distance

    g = Lorentz(1.0)
    z = g.expmap0(torch.tensor([[45.0, 0.0, 0.0], [1.0, 0.0, 0.0]], dtype=F64))
    assert origin_distance(z, g).tolist() == pytest.approx([45.0, 1.0], rel=1e-13)


def test_lorentz_dist_gradient_finite_on_both_forms():
    """Both branches of the distance are differentiable: finite gradients, zero at x == y."""
    g = Lorentz(1.0)
    v = torch.tensor([[40.0, 0.0], [0.3, 0.1], [0.3, 0.1]], dtype=F64, requires_grad=True)
    x = g.expmap0(v)
    d = g.dist(x[[0, 1, 1]], x[[1, 2, 0]])
    assert d[1].item() == 0.0
    (grad,) = torch.autograd.grad(d.sum(), v)
    assert torch.isfinite(grad).all()


# --------------------------------------------------------------------------- run-folder collisions
@pytest.fixture
def user_hwc_lam():
    """A user method registered as ``hwc_lam``: the folder name of the built-in ``hwc+lam``."""
    import hierviz.methods as hm
    from hierviz.losses import Objective

    @hm.register_method("hwc_lam", hparams={}, replace=True)
    def _m(tree, geometry, hp):  # pragma: no cover - never trained here
        return Objective("hwc_lam", {})

    yield "hwc_lam"
    hm.METHODS.unregister("hwc_lam")


def test_run_folder_collision_refused_at_config_time(user_hwc_lam):
    """0.3: 'hwc+lam' and a user's 'hwc_lam' shared the folder hwc_lam-euclidean-s0 (one run lost)."""
    from hierviz.experiments.config import ConfigError, resolve_config

    with pytest.raises(ConfigError) as e:
        resolve_config("quick-ham10000", ["methods=hwc+lam,hwc_lam", "geometries=euclidean"])
    msg = str(e.value)
    assert "'hwc+lam' and 'hwc_lam'" in msg and "hwc_lam-euclidean-s0" in msg and "\n" not in msg
    # either alone is fine, and the built-in keeps the folder old runs have (so they still resume)
    resolve_config("quick-ham10000", ["methods=hwc+lam", "geometries=euclidean"])
    resolve_config("quick-ham10000", ["methods=hwc_lam", "geometries=euclidean"])


def test_run_names_are_injective_across_methods_and_geometries():
    """A '-' inside a name could join a method and a geometry into another pair's folder."""
    from hierviz.experiments.records import run_name
    from hierviz.experiments.run_names import check_run_names

    assert run_name("hwc+lam", "poincare", 0) == "hwc_lam-poincare-s0"  # unchanged since 0.1
    check_run_names(["hwc+lam", "supcon", "hcl"], ["euclidean", "poincare", "lorentz"])
    with pytest.raises(ValueError, match="'a-b' · 'c' and 'a' · 'b-c'"):
        check_run_names(["a-b", "a"], ["c", "b-c"])
    with pytest.raises(ValueError, match="geometries: 'x y' and 'x_y'"):
        check_run_names(["supcon"], ["x y", "x_y"])


# --------------------------------------------------------------------------- order-independent runs
_ORDER_TINY = [
    "data.limit=60",
    "seeds=1",
    "model.width=4",
    "model.embed_dim=8",
    "data.image_size=16",
    "eval.projection=pca",
    "train.batch_size=32",
    "train.epochs=1",
]

_ORDER_SCRIPT = """
import json, sys
from hierviz.experiments import compare, resolve_config
tiny, runs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for methods, geometries, out in runs:  # one process, run after run
    cfg = resolve_config("quick-ham10000", tiny + ["methods=" + methods, "geometries=" + geometries, "out=" + out])
    compare(cfg, progress=False, verbose=False)
"""


def _order_process(tmp_path, runs: list[tuple[str, str, str]]) -> None:
    """Run ``(methods, geometries, name)`` one after another in one fresh Python process."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), *sys.path]))
    runs = [(m, g, str(tmp_path / name)) for m, g, name in runs]
    subprocess.run(
        [sys.executable, "-c", _ORDER_SCRIPT, json.dumps(_ORDER_TINY), json.dumps(runs)],
        check=True,
        env=env,
        capture_output=True,
        timeout=900,
    )


def _order_record(folder):
    import json

    import numpy as np

    run = folder / "runs" / "hwc_lam-poincare-s0"
    rec = json.loads((run / "result.json").read_text())
    with np.load(run / "embeddings.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return {k: rec[k] for k in ("metrics", "radius", "history", "step_history")}, arrays


@pytest.mark.slow
def test_run_alone_equals_run_after_two_other_runs(tmp_path):
    """A run depended on the runs before it in one process (0.3: HWC+LAM Poincaré seed 0, HF1 0.714444
    alone, 0.713333 after the preset's earlier runs; here z_train differed in 5 of 43 rows).

    Alone = a fresh process; after = another fresh process, after two other runs in it. Both are
    fresh so that only the runs before differ, not whatever tests shared a pytest worker (a CI
    worker once moved one radius figure by 3e-9 through process state left by earlier tests).
    Equal to the last bit on CPU: metrics, radius figures, loss history and every embedding.
    """
    import numpy as np

    _order_process(tmp_path, [("hwc+lam", "poincare", "alone")])
    _order_process(
        tmp_path, [("supcon", "euclidean", "first"), ("hwc", "lorentz", "second"), ("hwc+lam", "poincare", "after")]
    )
    (rec_a, z_a), (rec_b, z_b) = _order_record(tmp_path / "alone"), _order_record(tmp_path / "after")
    assert rec_a == rec_b
    assert z_a.keys() == z_b.keys()
    for k in z_a:
        assert np.array_equal(z_a[k], z_b[k]), f"{k}: max difference {np.abs(z_a[k] - z_b[k]).max()}"


# --------------------------------------------------------------------------- depth regularisers' inputs
def _depth_setup():
    from hierviz.geometry import PoincareBall
    from hierviz.hierarchy import LabelTree

    tree = LabelTree.from_nested({"root": {"A": {"a": ["a1", "a2"], "b": ["b1"]}, "B": {"c": ["c1", "c2"]}}})
    g = PoincareBall(1.0)
    v = 0.4 * torch.randn(8, 2, 4, generator=torch.Generator().manual_seed(11), dtype=F64)
    return tree, g, g.expmap0(v)


@pytest.mark.parametrize("name", ["CPCCLoss", "EntailmentConeLoss", "RadialOrderLoss"])
def test_depth_regularisers_refuse_out_of_range_labels(name):
    """0.3: label 5 of a 5-leaf tree ended in an IndexError inside the cone, order and CPCC terms."""
    import hierviz.losses as L

    tree, g, z = _depth_setup()
    loss = getattr(L, name)(tree, g)
    with pytest.raises(ValueError, match=r"labels has values outside \[0, 4\] \(the tree has C = 5 leaves\)"):
        loss(z, torch.tensor([0, 1, 2, 3, 4, 0, 1, 5]))
    assert float(loss(z, torch.arange(8) % 5)) >= 0.0  # valid labels still give a value


def test_depth_regularisers_refuse_empty_batches_and_zero_dimensional_points():
    """0.3: CentringLoss of an empty batch was NaN; EntailmentConeLoss took 0-dimensional points."""
    import hierviz.losses as L

    tree, g, z = _depth_setup()
    with pytest.raises(ValueError, match="CentringLoss: z holds no embedding"):
        L.CentringLoss(g)(z[:0], torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="EntailmentConeLoss: z has D=0 coordinates"):
        L.EntailmentConeLoss(tree, g)(torch.zeros(8, 2, 0, dtype=F64), torch.arange(8) % 5)
    with pytest.raises(ValueError, match="needs D >= 2"):
        L.CentringLoss(Lorentz(1.0))(torch.ones(4, 1, dtype=F64), None)
    with pytest.raises(ValueError, match="NaN or inf"):
        L.RadialOrderLoss(tree, g)(torch.full((8, 2, 4), float("nan"), dtype=F64), torch.arange(8) % 5)
    assert float(L.CentringLoss(g)(z, None)) > 0.0


@pytest.mark.parametrize("name", ["CPCCLoss", "EntailmentConeLoss", "RadialOrderLoss", "PerLevelLoss", "LeafLoss"])
def test_losses_without_a_tree_say_so(name):
    """0.3: PerLevelLoss(None) and CPCCLoss(None) ended in AttributeError on 'NoneType'."""
    import hierviz.losses as L
    from hierviz.geometry import PoincareBall

    with pytest.raises(TypeError, match=f"{name} needs a LabelTree \\(tree=None given\\)"):
        getattr(L, name)(None, PoincareBall(1.0))


# --------------------------------------------------------------------------- radius metrics where undefined
def test_radius_metrics_of_one_class_and_one_leaf_tree_are_nan_not_zero():
    """0.3: a one-class test set and a one-leaf tree reported edge_order 0.0 (root and leaf share a prototype)."""
    import math

    from hierviz.geometry import PoincareBall
    from hierviz.hierarchy import LabelTree
    from hierviz.metrics import radius as RM

    tree, g, _ = _depth_setup()
    z = g.expmap0(0.6 * torch.randn(30, 4, generator=torch.Generator().manual_seed(12), dtype=F64))
    y = torch.zeros(30, dtype=torch.long)
    out = RM.radius_metrics(z, y, tree, g, predictions=y.numpy())
    assert math.isnan(out["edge_order"]) and math.isnan(out["radius_gap"]) and out["clip_fraction"] == 0.0
    one = LabelTree.from_nested({"root": ["a"]})
    out = RM.radius_metrics(z[:10], y[:10], one, PoincareBall(1.0))
    assert math.isnan(out["edge_order"]) and math.isnan(out["radius_gap"])
    # a normal test set keeps the root and every edge
    nodes = RM.node_prototype_radii(z, torch.arange(30) % 5, tree, g)
    # b (one child b1) and B (one child c) are contracted; the root stays
    assert nodes["parent"].tolist().count(-1) == 1 and len(nodes["node"]) == tree.num_nodes - 2


def test_clip_fraction_and_edge_order_refuse_bad_bounds_and_parents():
    """0.3: clip_fraction with a NaN bound answered 0.0; edge_order with parent 7 of 3 ended in an IndexError."""
    from hierviz.metrics import radius as RM

    for bad in (float("nan"), float("inf"), 0.0, -1.0):
        with pytest.raises(ValueError, match="max_radius must be a finite number > 0"):
            RM.clip_fraction([6.0, 5.9999, 1.0], bad)
    assert RM.clip_fraction([6.0, 5.9999, 1.0], 6.0) == pytest.approx(2 / 3)
    with pytest.raises(
        ValueError, match=r"parent must hold indices into radius \(0..2\) or -1 for the root, got \[7\]"
    ):
        RM.edge_order([0.1, 0.5, 1.0], [-1, 0, 7])
    with pytest.raises(ValueError, match="got \\[1\\]"):
        RM.edge_order([0.1, 0.5, 1.0], [-1, 1, 0])


# --------------------------------------------------------------------------- degenerate metric inputs
def test_gromov_delta_refuses_a_matrix_that_is_not_a_metric():
    """0.3: a random non-symmetric, non-zero-diagonal matrix gave delta 0.62."""
    import numpy as np

    from hierviz.metrics import gromov_delta

    with pytest.raises(ValueError, match=r"D is not symmetric: D\[\d,\d\] = "):
        gromov_delta(np.random.default_rng(0).random((5, 5)))
    sym = np.array([[0.0, 1.0], [1.0, 0.0]]) + np.eye(2)
    with pytest.raises(ValueError, match="non-zero diagonal"):
        gromov_delta(sym)
    with pytest.raises(ValueError, match="negative entries"):
        gromov_delta([[0.0, -1.0], [-1.0, 0.0]])
    # float32 rounding of a metric passes: the unit square's delta (2√2 − 2)/2
    sq = np.array([[0, 1, 2**0.5, 1], [1, 0, 1, 2**0.5], [2**0.5, 1, 0, 1], [1, 2**0.5, 1, 0]], np.float32)
    sq[0, 2] = np.nextafter(sq[0, 2], np.float32(2))
    assert gromov_delta(sq) == pytest.approx(2**0.5 - 1, abs=1e-6)


def test_hierarchical_f1_of_identical_all_negative_labels_is_nan():
    """0.3: identical all-negative y_true/y_pred scored micro-F1 0.0 (F1 is 0/0 there), macro NaN."""
    import math

    import numpy as np

    from hierviz.metrics import hierarchical_f1

    tree, _, _ = _depth_setup()
    Y = np.zeros((4, tree.num_nodes), bool)
    out = hierarchical_f1(Y, Y, tree)
    assert all(math.isnan(v) for v in out.values()), out
    Y[0, [tree.node_index["A"], tree.node_index["a"], tree.node_index["a1"]]] = True
    assert hierarchical_f1(Y, Y, tree)["micro_f1"] == 1.0
    assert hierarchical_f1(np.zeros_like(Y), Y, tree)["micro_f1"] == 0.0  # predicted, never true: defined, 0


def test_cosine_rankings_refuse_zero_vectors_and_zero_dimensions():
    """0.3: ranking_report ranked all-zero vectors; Euclidean.similarity of d = 0 returned zeros."""
    from hierviz.geometry import Euclidean
    from hierviz.metrics import ranking_report

    tree, _, _ = _depth_setup()
    y = torch.arange(10) % 5
    with pytest.raises(ValueError, match="z: 10 row\\(s\\) are zero vectors, whose cosine similarity is undefined"):
        ranking_report(torch.zeros(10, 8), y, tree)
    with pytest.raises(ValueError, match="x must have d >= 1 coordinates"):
        Euclidean().similarity(torch.zeros(4, 0))
    with pytest.raises(ValueError, match="zero vectors"):
        Euclidean().similarity(torch.zeros(3, 4))
    z = torch.randn(10, 8, generator=torch.Generator().manual_seed(0))
    ref = torch.nn.functional.normalize(z, dim=-1)
    torch.testing.assert_close(Euclidean().similarity(z), ref @ ref.T, rtol=0, atol=1e-6)
    assert 0.0 <= ranking_report(z, y, tree)["ndcg_sum"] <= 1.0


# --------------------------------------------------------------------------- config values and their messages
def test_empty_out_is_refused():
    """0.3: --set out= (empty) wrote the report and runs/ into the current folder."""
    from hierviz.experiments.config import ConfigError, resolve_config

    with pytest.raises(ConfigError, match="out: must be a folder path \\(empty would write"):
        resolve_config("quick-ham10000", ["out="])
    with pytest.raises(ConfigError, match="out: must be a folder path"):
        resolve_config("quick-ham10000", ["out=  "])
    assert resolve_config("quick-ham10000", ["out=runs/x"]).out == "runs/x"


def test_htc_options_name_the_problem():
    """0.3: max_train=0 read as 'no limit'; methods=hyilr gave "unknown htc method 'h'"; seeds=0 "'int' object…"."""
    from hierviz.methods.paper05 import HTCConfig

    base = dict(dataset="synthetic-htc")
    with pytest.raises(ValueError, match="max_train must be a positive integer or null \\(all documents\\), got 0"):
        HTCConfig.preset("smoke", max_train=0, **base)
    with pytest.raises(ValueError, match="max_test must be a positive integer"):
        HTCConfig.preset("smoke", max_test=-3, **base)
    with pytest.raises(ValueError, match="seeds must be a list of the seeds 0 … n−1, got 0; use --seeds 0,1,2"):
        HTCConfig.preset("smoke", seeds=0, **base)
    assert HTCConfig.preset("smoke", methods="hyilr", **base).methods == ("hyilr",)
    assert HTCConfig.preset("smoke", methods="hyilr, hyilr-no-cl", **base).methods == ("hyilr", "hyilr-no-cl")
    with pytest.raises(ValueError, match="methods must be a tuple of names, got the string 'hyilr'"):
        HTCConfig(methods="hyilr")
    assert HTCConfig.preset("smoke", max_train=40, **base).max_train == 40


def test_hcl_hyperparameter_errors_name_the_config_key():
    """0.3: loss.hcl_alpha=-1 answered "alpha must be >= 0.0" (not the key the user set)."""
    import hierviz.methods as hm

    tree, _, _ = _depth_setup()
    for key, arg in (("hcl.alpha", "alpha"), ("hcl.m0", "m0"), ("hcl.lambda", "lam")):
        with pytest.raises(ValueError, match=f"^loss.{key}: {arg} must be >= 0"):
            hm.build_objective("hcl", tree, "poincare", **{key: -1.0})


def test_lorentz_check_point_refuses_float32_points_that_overflow():
    """0.3: a float32 point with x0 = 3e38 (x0² = inf in float32) was accepted."""
    g = Lorentz(1.0)
    with pytest.raises(ValueError, match="beyond the radius the Lorentz model can hold in float32"):
        g.check_point(torch.tensor([[3e38, 3e38, 0.0]]))
    g.check_point(g.expmap0(torch.tensor([[80.0, 0.0]])))  # float32 at radius 80: representable


@pytest.mark.parametrize("scale", [1e-13, 1e-30])
def test_lam_euclidean_and_cosine_triplet_do_not_depend_on_the_norm(scale):
    """0.3: at ‖z‖ = 1e-13 LAM (Euclidean) gave 0.568 against 0.372 and the cosine triplet 0.3 against 0.252."""
    import hierviz.losses as L
    from hierviz.hierarchy import LabelTree

    tree, _, _ = _depth_setup()
    tr = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    z = torch.nn.functional.normalize(torch.randn(6, 2, 8, generator=torch.Generator().manual_seed(7)), dim=-1)
    for make, y in (
        (lambda: L.LAMLoss(tree, "euclidean"), torch.arange(6) % 5),
        (lambda: L.TripletLoss(tr), torch.arange(6) % 4),
    ):
        torch.manual_seed(0)
        ref = make()(z, y)
        torch.manual_seed(0)
        torch.testing.assert_close(make()(z * scale, y), ref, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- geometry shapes
@pytest.mark.parametrize("name", ["euclidean", "poincare"])
def test_expmap_with_a_tangent_of_another_dimension_says_so(name):
    """0.3: expmap(x (3, 4), v (3, 5)) raised torch's size mismatch (Poincaré: a TorchScript traceback)."""
    from hierviz.geometry import get_geometry

    g = get_geometry(name)
    x = g.expmap0(0.3 * torch.randn(3, 4, generator=torch.Generator().manual_seed(0)))
    with pytest.raises(ValueError, match=r"v must have the same last dimension as x \(4\), got shape \(3, 5\)"):
        g.expmap(x, torch.zeros(3, 5))
    with pytest.raises(ValueError, match="do not broadcast"):
        g.expmap(x, torch.zeros(2, 4))
    torch.testing.assert_close(g.expmap(x, torch.zeros(3, 4)), x)


def test_lorentz_expmap0_of_zero_dimensional_vectors_says_so():
    """0.3: Lorentz.expmap0(zeros(4, 0)) failed inside geoopt's TorchScript."""
    with pytest.raises(ValueError, match=r"v must have d >= 1 spatial coordinates, got shape \(4, 0\)"):
        Lorentz(1.0).expmap0(torch.zeros(4, 0))


def test_deeply_nested_bracket_tree_is_a_one_line_error(tmp_path):
    """0.3: a tree file of 5,000 nested brackets ended in a RecursionError (building the message's repr)."""
    from hierviz.data import load_tree

    f = tmp_path / "brackets5000.json"
    f.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(ValueError) as e:
        load_tree(f)
    msg = str(e.value)
    assert "paths[0][0] must be a str node name, got list [[[[...]]]]" in msg and len(msg) < 300


def test_class_names_differing_only_in_unicode_normalisation_say_so():
    """0.3: a class name in decomposed Unicode was refused with both sides printed as the same-looking 'café'."""
    import unicodedata

    from hierviz.data.trees import align_tree
    from hierviz.hierarchy import LabelTree

    tree = LabelTree.from_nested({"r": [unicodedata.normalize("NFC", "café"), "tea"]}, name="cafe_tree")
    with pytest.raises(ValueError, match="differ only in Unicode normalisation") as e:
        align_tree(tree, [unicodedata.normalize("NFD", "café"), "tea"])
    assert r"data 'cafe\u0301' vs tree 'caf\xe9'" in str(e.value) and "unicodedata.normalize('NFC'" in str(e.value)


def test_pretrained_folder_is_named_as_a_folder(tmp_path):
    """C3: --pretrained DIR said the weights file 'does not exist'."""
    from hierviz.models.encoders import _load_state_dict_file

    with pytest.raises(FileNotFoundError, match="is a folder, not a weights file"):
        _load_state_dict_file(torch.nn.Linear(2, 2), tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _load_state_dict_file(torch.nn.Linear(2, 2), tmp_path / "none.pt")


def test_ctrl_c_in_a_command_without_runs_does_not_offer_resume(tmp_path, monkeypatch, capsys):
    """0.3: Ctrl-C while `hierviz config --import` imported a module said to rerun with --resume."""
    import sys

    from hierviz.cli import main

    (tmp_path / "mod_keyboard_w40.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mod_keyboard_w40", raising=False)
    assert main(["config", "--preset", "quick-ham10000", "--import", "mod_keyboard_w40"]) == 130
    err = capsys.readouterr().err.strip()
    assert err == "hierviz: interrupted (config stopped; nothing to resume)"


@pytest.mark.slow
def test_features_reads_a_run_made_with_user_keys(tmp_path):
    """`hierviz features --run` failed with "unknown key" on a run made with a user module
    (method, loss key) and on a built-in run whose folder used a user geometry."""
    import json

    import numpy as np

    from hierviz.experiments import compare, export_run, resolve_config

    out = tmp_path / "run"
    compare(
        resolve_config("quick-ham10000", [*_ORDER_TINY, "methods=supcon", "geometries=euclidean", f"out={out}"]),
        progress=False,
        verbose=False,
    )
    run = out / "runs" / "supcon-euclidean-s0"
    before = export_run(run)
    cfg = json.loads((run / "config.json").read_text())
    cfg["methods"], cfg["geometries"] = ["supcon", "toy-l2"], ["euclidean", "my-geo"]  # registered by a user module
    cfg["loss"]["toy_l2.toy_scale"] = 2.0
    (run / "config.json").write_text(json.dumps(cfg))
    after = export_run(run)
    assert np.array_equal(before.features, after.features) and np.array_equal(before.split, after.split)
