"""Reliability: one test per root cause of the 0.2 probe, each failing on hierviz 0.2.

Named ``test_reliability_<cause>``; each docstring says what 0.2 did instead.
"""

from __future__ import annotations

import math

import pytest
import torch

from hierviz.geometry import Lorentz, PoincareBall

F64 = torch.float64


# --------------------------------------------------------------------------- 1: Poincaré near the boundary
def test_reliability_poincare_dist_logmap0_exact_near_boundary():
    """dist and logmap0 keep every float64 digit up to the boundary (0.2: 16.81 and 8.41, geoopt's clamp)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    ball = PoincareBall()
    x = torch.tensor([[1 - 1e-9, 0.0]], dtype=F64)
    ref = 4 * mpmath.atanh(mpmath.mpf(float(x[0, 0])))  # 42.83
    assert float(ball.dist(x, -x)[0]) == pytest.approx(float(ref), rel=1e-7)
    assert float(ball.pairwise_dist(x, -x)[0, 0]) == pytest.approx(float(ref), rel=1e-7)  # the same formulation
    y = torch.tensor([[1 - 1e-12, 0.0]], dtype=F64)
    ref0 = mpmath.atanh(mpmath.mpf(float(y[0, 0])))  # 14.16
    assert float(ball.logmap0(y)[0, 0]) == pytest.approx(float(ref0), rel=1e-7)
    # logmap's Riemannian length is the distance, also near the boundary
    v = ball.logmap(x, -x)
    assert float(2 / (1 - x.pow(2).sum()) * v.norm()) == pytest.approx(float(ref), rel=1e-6)
    # and d(x, x) = 0 with a zero (finite) gradient
    z = torch.tensor([[0.3, -0.2]], dtype=F64, requires_grad=True)
    (g,) = torch.autograd.grad(ball.dist(z, z).sum(), z)
    assert float(ball.dist(z, z).detach()) == 0.0 and torch.equal(g, torch.zeros_like(g))


# --------------------------------------------------------------------------- 2: Lorentz overflow
@pytest.mark.parametrize("dtype, ok, bad", [(torch.float32, 80.0, 90.0), (torch.float64, 350.0, 355.0)])
def test_reliability_lorentz_radius_guard_expmap0(dtype, ok, bad):
    """expmap0 is finite up to the dtype's radius and refuses beyond it (0.2: inf from 90 / 355, NaN from 711)."""
    L = Lorentz()
    assert bool(torch.isfinite(L.expmap0(torch.tensor([[ok, 0.0]], dtype=dtype))).all())
    for norm in (bad, 711.0):
        with pytest.raises(ValueError, match=r"tangent norm .* exceeds .*largest radius"):
            L.expmap0(torch.tensor([[norm, 0.0]], dtype=dtype))


def test_reliability_lorentz_dist_at_radius_300_and_check_point_overflow():
    """float64 dist at radius 300 is finite and exact (0.2: inf); an overflowing float32 point is refused."""
    L = Lorentz()
    r, theta = 300.0, 2 * math.exp(-6.4)  # two points at radius 300, angle theta apart
    v = torch.tensor([[r, 0.0], [r * math.cos(theta), r * math.sin(theta)]], dtype=F64)
    x = L.expmap0(v)
    # closed form: cosh d = cosh² r − sinh² r cos θ = 1 + 2 sinh² r sin²(θ/2)
    ref = 2 * math.asinh(math.sinh(r) * math.sin(theta / 2))
    assert ref == pytest.approx(587.2, abs=0.05)
    assert float(L.dist(x[0], x[1])) == pytest.approx(ref, rel=1e-9)
    assert float(L.pairwise_dist(x)[0, 1]) == pytest.approx(ref, rel=1e-9)
    # a float32 point whose Minkowski form overflows float32 (0.2: NaN violation, accepted)
    bad = torch.tensor([[1e20, 0.0, 5e19]], dtype=torch.float32)
    with pytest.raises(ValueError, match="off the hyperboloid"):
        L.check_point(bad)
    with pytest.raises(ValueError, match="beyond the radius"):
        L.check_point(torch.tensor([[1e200, 1e200]], dtype=F64))


# --------------------------------------------------------------------------- 3: Karcher means
def _grad_norm64(geom, mu, x):
    """Riemannian gradient norm of the Fréchet objective at ``mu``, all in float64 (exact maps)."""
    x64 = geom.proj(x.double()) if isinstance(geom, Lorentz) else x.double()
    m64 = geom.proj(mu.double()) if isinstance(geom, Lorentz) else mu.double()
    v = geom.logmap(m64.expand_as(x64), x64).mean(0)
    if isinstance(geom, Lorentz):
        return float(v[1:].pow(2).sum() - v[0] ** 2) ** 0.5
    return float(2 / (1 - m64.pow(2).sum()) * v.norm())


@pytest.mark.parametrize("geom", [PoincareBall(), Lorentz()], ids=repr)
@pytest.mark.parametrize("dtype", [torch.float32, F64], ids=str)
def test_reliability_karcher_mean_default_converges(geom, dtype):
    """mean()/group_mean() default to convergence, grad norm <= 1e-5 (0.2: 3 steps, up to 0.137)."""
    g = torch.Generator().manual_seed(3)
    x = geom.expmap0(torch.randn(120, 6, generator=g, dtype=F64) * 2.0).to(dtype)  # spread, near the boundary
    mu = geom.mean(x)
    assert mu.dtype == dtype
    assert _grad_norm64(geom, mu, x) <= 1e-5
    assert _grad_norm64(geom, geom.mean(x, steps=3), x) > 5e-5  # the paper's 3 steps remain an option
    idx = torch.arange(120) % 3
    mus = geom.group_mean(x, idx, 3)
    assert max(_grad_norm64(geom, mus[k], x[idx == k]) for k in range(3)) <= 1e-5


def test_reliability_karcher_float32_objective_compared_in_float64(monkeypatch):
    """fixed float32 steps no longer stall 2.1e-3 from the mean; steps=N, tol=None runs N steps, sync-free when compiled."""
    ball = PoincareBall()
    g = torch.Generator().manual_seed(4)
    x = ball.expmap0(torch.randn(200, 4, generator=g, dtype=F64) * 1.5)
    ref = ball.mean(x, steps=200, tol=1e-12)
    m32 = ball.mean(x.float(), steps=40)  # float32 arithmetic throughout, no tolerance
    assert float(ball.dist(m32.double(), ref)) < 1e-5
    calls = []
    orig = PoincareBall._karcher_step

    def spy(self, *args, **kwargs):
        calls.append(kwargs.get("sync"))
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(PoincareBall, "_karcher_step", spy)
    idx = torch.arange(200) % 4
    eager = ball.group_mean(x.float(), idx, 4, steps=5, tol=None)
    # exactly 5 steps; on the CPU the line search may stop early (a host sync costs nothing there)
    assert calls == [True] * 5
    calls.clear()
    with monkeypatch.context() as m:  # inside a compiled step (or on an accelerator): no host sync at all
        m.setattr(torch.compiler, "is_compiling", lambda: True)
        ball.group_mean(x.float(), idx, 4, steps=5, tol=None)
    assert calls == [False] * 5
    # the early exit changes no bit of the result: every trial step run, as on an accelerator
    monkeypatch.setattr(PoincareBall, "_karcher_step", lambda self, *a, sync, **k: orig(self, *a, sync=False, **k))
    assert torch.equal(eager, ball.group_mean(x.float(), idx, 4, steps=5, tol=None))


# --------------------------------------------------------------------------- 4: Euclidean maps
def test_reliability_euclidean_refuses_nan_inf_and_zero_vectors():
    """expmap0/expmap/proj/to_manifold refuse NaN/inf; proj/to_manifold refuse a zero vector (0.2: passed)."""
    from hierviz.geometry import Euclidean

    E = Euclidean()
    bad = torch.tensor([[1.0, float("nan")], [float("inf"), 0.0]])
    for call in (E.expmap0, E.proj, E.to_manifold, lambda v: E.expmap(torch.ones(2, 2), v)):
        with pytest.raises(ValueError, match="non-finite"):
            call(bad)
    for call in (E.proj, E.to_manifold):
        with pytest.raises(ValueError, match="1 row.* zero vectors .* cannot be projected"):
            call(torch.tensor([[3.0, 4.0], [0.0, 0.0]]))
    # a tiny but non-zero vector is a direction: exactly unit (0.2: v/1e-12, norm 1e-4)
    torch.testing.assert_close(E.proj(torch.tensor([[3e-16, 4e-16]], dtype=F64)), torch.tensor([[0.6, 0.8]], dtype=F64))
    assert torch.equal(E.expmap0(torch.zeros(1, 2)), torch.zeros(1, 2))  # a zero tangent vector is defined


# --------------------------------------------------------------------------- 7/8: embedding validation (metrics)
def test_reliability_embedding_validation_layer():
    """d = 0 embeddings refused by the metrics; mismatched sets name both shapes; to_manifold(3.0) refused."""
    import numpy as np

    from hierviz.geometry import Euclidean
    from hierviz.hierarchy import LabelTree
    from hierviz.metrics import linear_probe
    from hierviz.metrics.ranking import ranking_report

    tree = LabelTree.from_parents({"a": "r", "b": "r", "r": None})
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"0 coordinates per point.*D >= 1"):
        ranking_report(np.zeros((4, 0)), y, tree)
    with pytest.raises(ValueError, match=r"z_train has shape \(4, 3\) and z_test has shape \(4, 2\)"):
        linear_probe(np.ones((4, 3)), y, np.ones((4, 2)), Euclidean())
    for geom in (PoincareBall(), Lorentz()):
        with pytest.raises(ValueError, match="got shape \\(\\)"):
            geom.to_manifold(torch.tensor(3.0))
    for geom in (PoincareBall(), Lorentz(), Euclidean()):
        a, b = geom.proj(torch.rand(3, 3) * 0.1), geom.proj(torch.rand(4, 3) * 0.1)
        with pytest.raises(ValueError, match=r"x has shape \(3, 3\) and y has shape \(4, 3\)"):
            geom.dist(a, b)


# --------------------------------------------------------------------------- bring your own data
def _medmnist_file(path, labels_max=4, per_class=3):
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = {}
    for s in ("train", "val", "test"):
        lab = np.repeat(np.arange(labels_max + 1), per_class)[:, None]
        arrays[f"{s}_images"] = rng.integers(0, 255, (lab.shape[0], 8, 8), dtype=np.uint8)
        arrays[f"{s}_labels"] = lab
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("stem", ["retinamnist", "my_scans"])
def test_reliability_integer_leaves_bind_to_unnamed_npz(tmp_path, stem):
    """Integer leaves "0".."4" bind to a MedMNIST-format npz without class names, whatever the file is called."""
    import warnings

    from hierviz.data import bind_tree
    from hierviz.data.loaders.npz import load_npz

    ds = load_npz(_medmnist_file(tmp_path / f"{stem}.npz"))
    parents = {"0": "healthy", "1": "disease", "2": "disease", "3": "disease", "4": "disease"}
    tree = {"parents": {**parents, "healthy": "retina", "disease": "retina"}}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ds2, t = bind_tree(ds, tree)
    assert ds2.classes == ["0", "1", "2", "3", "4"] and t.leaves == ds2.classes
    assert t.parent("0") == "healthy" and ds2.labels.tolist() == ds.labels.tolist()
    said = [str(w.message) for w in rec if "bind_tree" in str(w.message)]
    if stem == "retinamnist":  # 0.2 refused: grade_0 ... were invented from the file name
        assert len(said) == 1 and "integer labels" in said[0] and "grade_0" in said[0]
    else:
        assert said == []


def test_reliability_npz_huge_unnamed_labels_refused(tmp_path):
    """labels reaching 2e12 without class names are refused in one line (0.2: built 2e12 names)."""
    import numpy as np

    from hierviz.data.loaders.npz import load_npz

    p = tmp_path / "big.npz"
    np.savez(p, images=np.zeros((2, 4, 4), np.uint8), labels=np.array([0, 2 * 10**12]))
    with pytest.raises(ValueError, match=r"big.npz: labels go up to 2000000000000 but the file names no classes"):
        load_npz(p)


# --------------------------------------------------------------------------- 12: run-folder files
def test_reliability_run_file_reader_names_the_file(tmp_path):
    """an empty result.json, broken compare.json/tree.json/embeddings.npz name the file (0.2: KeyError 'name')."""
    from hierviz.experiments.config import ConfigError
    from hierviz.experiments.records import RECORD_KEYS, load_records, read_run_file

    run = tmp_path / "runs" / "supcon-euclidean-s0"
    run.mkdir(parents=True)
    (run / "result.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"supcon-euclidean-s0/result.json: run record without key 'name'"):
        load_records(tmp_path)
    (tmp_path / "compare.json").write_text("[1, 2")
    with pytest.raises(ConfigError, match=r"compare.json: not a readable JSON compare.json"):
        read_run_file(tmp_path / "compare.json")
    (tmp_path / "tree.json").write_text("[]")
    with pytest.raises(ConfigError, match=r"tree.json: label tree must be a JSON object, got list"):
        read_run_file(tmp_path / "tree.json", what="label tree")
    (run / "embeddings.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ConfigError, match=r"embeddings.npz: cannot read the saved embeddings"):
        read_run_file(run / "embeddings.npz", what="saved embeddings")
    with pytest.raises(ConfigError, match=r"config.json: config.json not found"):
        read_run_file(run / "config.json", required=RECORD_KEYS)


# --------------------------------------------------------------------------- 18: run-name sanitiser
@pytest.mark.parametrize("method", ["../../evil", "..", "/abs/path", "a\\\\b", ".hidden", "x\x00y"])
def test_reliability_run_names_stay_inside_out(tmp_path, method):
    """a method registered as ../../evil names a folder inside --out/runs (0.2: wrote outside --out)."""
    from hierviz.experiments.records import run_name

    name = run_name(method, "poincare", 0)
    folder = (tmp_path / "runs" / name).resolve()
    assert folder.parent == (tmp_path / "runs").resolve() and not name.startswith(".")
    assert "/" not in name and "\\" not in name and "\x00" not in name


# --------------------------------------------------------------------------- 10: numbers in settings
def test_reliability_settings_numbers_name_the_key():
    """NaN/inf/1e400 integers name the key; lr_backbone=1e308 is blamed on lr_backbone (0.2: lr_head)."""
    from hierviz.experiments.config import ConfigError, resolve_config

    for value in (float("nan"), float("inf"), float("1e400")):
        with pytest.raises(ConfigError, match=r"^train.epochs: expected an integer, got (nan|inf)$"):
            resolve_config("quick-ham10000", {"train.epochs": value})
    with pytest.raises(ConfigError, match=r"--set train.epochs=1e400: expected an integer"):
        resolve_config("quick-ham10000", ["train.epochs=1e400"])
    with pytest.raises(ConfigError, match=r"^train.lr_backbone: must be <= 1.7e307 while train.lr_head is null"):
        resolve_config("quick-ham10000", ["train.lr_backbone=1e308"])
    assert (
        resolve_config("quick-ham10000", ["train.lr_backbone=1e308", "train.lr_head=1e-3"]).train.lr_backbone == 1e308
    )
    with pytest.raises(ConfigError, match=r"--preset: empty name"):  # 19: "" no longer means full
        resolve_config("", [])


# --------------------------------------------------------------------------- 11: --import
def _cli_err(capsys, argv):
    from hierviz.cli import main

    rc = main(argv)
    return rc, capsys.readouterr().err


def test_reliability_import_errors_are_one_line(tmp_path, monkeypatch, capsys):
    """any exception, sys.exit, a path: one line naming the module (0.2: no name / silent exit / 'package')."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "h27_boom.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "h27_exit.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "h27_ok.py").write_text("H27 = 1\n")
    rc, err = _cli_err(capsys, ["config", "--import", "h27_boom", "--preset", "quick-ham10000"])
    assert rc == 2 and err.startswith("hierviz: error: --import h27_boom: the module raised RuntimeError: boom at ")
    assert err.count("\n") == 1
    rc, err = _cli_err(capsys, ["config", "--import", "h27_exit", "--preset", "quick-ham10000"])
    assert rc == 2 and "--import h27_exit: the module called sys.exit(3)" in err
    rc, err = _cli_err(capsys, ["config", "--import", str(tmp_path / "h27_ok.py"), "--preset", "quick-ham10000"])
    assert rc == 0 and err == ""
    rc, err = _cli_err(capsys, ["config", "--import", "./missing.py", "--preset", "quick-ham10000"])
    assert rc == 2 and "--import ./missing.py: no such .py file" in err
    rc, err = _cli_err(capsys, ["config", "--preset", ""])
    assert rc == 2 and "--preset: empty name" in err


# --------------------------------------------------------------------------- 16: hierarchical_f1(y, y)
def test_reliability_hierarchical_f1_of_truth_is_one():
    """F1(y, y) = 1 with labels that never occur (0.2: macro 0.4)."""
    import numpy as np

    from hierviz.hierarchy import LabelTree
    from hierviz.metrics.htc import hierarchical_f1, per_level_f1

    tree = LabelTree.from_nested({"root": {"a": ["a1", "a2", "a3"], "b": ["b1", "b2"]}})
    y = np.zeros((3, tree.num_nodes), bool)
    for i in range(3):
        y[i, [tree.node_index["a"], tree.node_index["a1"]]] = True
    assert hierarchical_f1(y, y, tree) == {"micro_f1": 1.0, "macro_f1": 1.0, "hi_micro_f1": 1.0, "hi_macro_f1": 1.0}
    assert [r["macro_f1"] for r in per_level_f1(y, y, tree)] == [1.0, 1.0]
    # a wrong prediction of an otherwise absent label still counts (present in the prediction)
    p = y.copy()
    p[0, tree.node_index["b2"]] = True
    assert hierarchical_f1(y, p, tree)["macro_f1"] == pytest.approx((1 + 1 + 0) / 3)


# --------------------------------------------------------------------------- 13: htc options and .jsonl data
def test_reliability_htc_options_and_jsonl(tmp_path):
    """threshold/lam checks name the option; null text, string labels, empty/1-doc/non-UTF-8 files are clear."""
    import json

    from hierviz.data.loaders.htc import load_htc_jsonl
    from hierviz.methods.paper05 import HTCConfig

    for bad in (2.0, 0.0, float("nan")):
        with pytest.raises(ValueError, match="threshold must"):
            HTCConfig(threshold=bad)
    with pytest.raises(ValueError, match="^lam must be a finite number, got nan"):
        HTCConfig(lam=float("nan"))
    tree = tmp_path / "t_tree.json"
    tree.write_text(json.dumps({"parents": {"a": "root", "a1": "a", "b": "root"}}))
    f = tmp_path / "t_htc.jsonl"

    def write(*rows):
        f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    ok = {"text": "x y", "labels": ["a", "a1"], "split": "train"}
    write({"text": None, "labels": ["a"]}, ok)
    with pytest.raises(ValueError, match=r"t_htc.jsonl:1: \"text\" must be a string, got null"):
        load_htc_jsonl(f, tree)
    write(ok, {"text": "z", "labels": "a1"})
    with pytest.raises(ValueError, match=r"t_htc.jsonl:2: \"labels\" must be a list of label names"):
        load_htc_jsonl(f, tree)
    for rows in ((), (ok,)):
        write(*rows)
        with pytest.raises(ValueError, match=rf"t_htc.jsonl: holds {len(rows)} document\(s\)"):
            load_htc_jsonl(f, tree)
    f.write_bytes(b'{"text": "caf\xe9", "labels": ["a"]}\n')
    with pytest.raises(ValueError, match=r"t_htc.jsonl: not UTF-8 text"):
        load_htc_jsonl(f, tree)
    write(ok, {**ok, "split": "test"})
    assert len(load_htc_jsonl(f, tree)) == 2


# --------------------------------------------------------------------------- 15: deep trees
def test_reliability_deep_tree_json_written_iteratively(tmp_path):
    """compare's tree.json writer handles a 1000-level tree (0.2: RecursionError from json.dumps)."""
    from hierviz.experiments.records import write_tree_json
    from hierviz.hierarchy import LabelTree

    deep = LabelTree.from_parents({f"n{i}": (f"n{i - 1}" if i else None) for i in range(1001)} | {"m": "n999"})
    p = write_tree_json(tmp_path / "tree.json", deep)
    back = LabelTree.from_json(p)
    assert back.depth("n1000") == 1000 and back.leaves == deep.leaves


# --------------------------------------------------------------------------- 19: odd output paths
def test_reliability_features_out_reports_the_real_path(tmp_path, monkeypatch, capsys):
    """save_features into an existing folder returns the file it wrote; --out "" refused (0.2: cwd)."""
    import numpy as np

    from hierviz.features import FeaturesData, save_features

    data = FeaturesData(np.ones((4, 3), np.float32), np.array([0, 1, 0, 1]), ["a", "b"])
    folder = tmp_path / "feats"
    folder.mkdir()
    p = save_features(folder, data)
    assert p == folder / "features.npz" and p.is_file()
    q = save_features(tmp_path / "plain", data)
    assert q == tmp_path / "plain.npz" and q.is_file()
    with pytest.raises(ValueError, match="features path is empty"):
        save_features("", data)
    monkeypatch.chdir(tmp_path)
    rc, err = _cli_err(capsys, ["compare", "--preset=quick-ham10000", "--out", ""])
    assert rc == 2 and "--out: empty path" in err


# --------------------------------------------------------------------------- 21: 0.1 checkpoints
def test_reliability_checkpoint_without_digest_warns(tmp_path):
    """a 0.1-format checkpoint (bare torch.save) is read with a one-line warning (0.2: silently)."""
    from hierviz.training import load_checkpoint

    p = tmp_path / "checkpoint.pt"
    torch.save({"epoch": 3}, p)
    with pytest.warns(UserWarning, match=r"checkpoint.pt: a hierviz 0.1 checkpoint without a sha256 digest") as rec:
        assert load_checkpoint(p)["epoch"] == 3
    assert "\n" not in str(rec[0].message)


# --------------------------------------------------------------------------- 20: --pretrained partial match
def test_reliability_pretrained_partial_match_warns_or_refuses(tmp_path):
    """a weights file matching 1 of the encoder's tensors is refused, a partial one warns (0.2: silent)."""
    from hierviz.models import build_encoder

    enc = build_encoder("small_cnn")
    own = enc.state_dict()
    one = tmp_path / "one.pt"
    k0 = next(iter(own))
    torch.save({k0: own[k0], "other.weight": torch.zeros(3)}, one)
    with pytest.raises(ValueError, match=rf"only 1 of the encoder's {len(own)} tensors match"):
        build_encoder("small_cnn", pretrained=one)
    most = tmp_path / "most.pt"
    keep = dict(list(own.items())[:-1])
    torch.save(keep, most)
    with pytest.warns(UserWarning, match=rf"loaded {len(own) - 1} of the encoder's {len(own)} tensors"):
        build_encoder("small_cnn", pretrained=most)


# --------------------------------------------------------------------------- 22: deep messages
def test_reliability_image_size_and_tiny_splits_are_one_line(tmp_path, capsys):
    """--image-size 20000 refused before any worker; 2 images per class named as such (0.2: 'nothing to embed')."""
    import json

    import numpy as np

    rc, err = _cli_err(capsys, ["config", "--preset", "quick-ham10000", "--image-size", "20000"])
    assert rc == 2 and err.startswith("hierviz: error: --image-size (data.image_size): must be <= 4096 px")
    npz = tmp_path / "tiny.npz"
    np.savez(npz, images=np.zeros((6, 8, 8), np.uint8), labels=np.array([0, 0, 1, 1, 2, 2]))
    tree = tmp_path / "tree.json"
    tree.write_text(json.dumps({"parents": {"0": "r", "1": "r", "2": "r"}}))
    argv = ["compare", "--preset=quick-ham10000", "--out", str(tmp_path / "out"), "--set", f"data.path={npz}"]
    rc, err = _cli_err(capsys, [*argv, "--set", f"data.tree={tree}", "--set", "data.limit=null"])
    assert rc == 2 and "split is empty: 6 images over 3 classes (at most 2 per class)" in err, err
    assert err.count("\n") == 1


# --------------------------------------------------------------------------- 14: retrieval on little data
def test_reliability_retrieval_little_data_names_the_minimum():
    """--limit 1 / 10 give one message with the minimum (0.2: scikit-learn's / a k-range message)."""
    from dataclasses import replace

    import numpy as np

    from hierviz.features import FeaturesData
    from hierviz.retrieval import RETRIEVAL_PRESETS, run_retrieval

    rng = np.random.default_rng(0)
    data = FeaturesData(rng.normal(size=(60, 8)).astype(np.float32), np.repeat(np.arange(4), 15), list("abcd"))
    for limit in (1, 10):
        cfg = replace(RETRIEVAL_PRESETS["smoke"], limit=limit, epochs=1)
        with pytest.raises(ValueError, match=rf"limit={limit} is too few rows for retrieval: .* need at least 40"):
            run_retrieval(data, cfg, progress=False)
    with pytest.raises(
        ValueError, match=r"60 rows are too few for retrieval: a fold keeps only 30 references .* need at least 100"
    ):
        run_retrieval(data, replace(RETRIEVAL_PRESETS["smoke"], limit=None, ks=(50,), epochs=1), progress=False)


# --------------------------------------------------------------------------- 17: Ctrl-C at an epoch boundary
def test_reliability_ctrl_c_while_workers_start_is_not_lost():
    """a SIGINT that lands while DataLoader workers fork is raised at the epoch boundary (0.2: swallowed)."""
    import signal

    from hierviz.training.batches import _iter_deferring_sigint

    class ForkingLoader:
        """Stands in for DataLoader: the signal arrives inside a hook that swallows exceptions (logging's at-fork)."""

        def __iter__(self):
            try:
                signal.raise_signal(signal.SIGINT)  # delivered to this thread before it returns
                for _ in range(1000):  # give the handler a bytecode boundary to run at
                    pass
            except KeyboardInterrupt:  # what the at-fork hook did: "Exception ignored in ..."
                pass
            return iter([1, 2])

    # another test or library of this worker process may have left its own SIGINT handler: start
    # from Python's default, as a user's `hierviz compare` does (the suite once failed on that)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert list(iter(ForkingLoader())) == [1, 2]  # plain iter: the interrupt is lost, training would go on
        with pytest.raises(KeyboardInterrupt):
            _iter_deferring_sigint(ForkingLoader())
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
        assert list(_iter_deferring_sigint([1, 2])) == [1, 2]
    finally:
        signal.signal(signal.SIGINT, before)


def test_reliability_named_integer_classes_bind_by_name_and_say_so():
    """Bring your own data: a file naming its classes "2", "0", "1" fits both readings; names win, a warning says so."""
    import numpy as np

    from hierviz.data import ArrayDataset, bind_tree

    ds = ArrayDataset(np.zeros((3, 2, 2, 3), np.uint8), np.array([0, 1, 2]), ["2", "0", "1"], name="mine")
    with pytest.warns(UserWarning, match=r"bound by name \(leaf '2' is label 0\)"):
        ds2, t = bind_tree(ds, {"parents": {"0": "r", "1": "r", "2": "r"}})
    assert ds2.classes == ["2", "0", "1"] and t.leaves == ["2", "0", "1"]
