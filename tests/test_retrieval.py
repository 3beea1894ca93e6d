"""Retrieval (Paper 03 (Hyper-DINO) §2.4, §3.1): MAP@k variants, R-precision, the reference index,
fp16 tangent storage, the retrieval protocol and its CLI."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pytorch_metric_learning.utils.accuracy_calculator import mean_average_precision
from sklearn.metrics import ndcg_score

from hierviz.hierarchy import LabelTree
from hierviz.metrics import (
    MAP_DENOMINATORS,
    flat_retrieval_report,
    map_at_k,
    ndcg,
    precision_at_k,
    r_precision,
    recall_at_k,
    tree_relevance,
)


# --------------------------------------------------------------------------- brute-force references
def _tied_orders(dist_row, yq, yg):
    """Every ranked relevance list (equally likely) over the orders of the tied groups: plain Python.

    Within a group of n tied items, r of them relevant, each choice of the r relevant places is
    equally likely under a uniformly random order, so the lists are the product of those choices.
    """
    groups = []
    for v in sorted(set(dist_row.tolist())):
        members = [j for j in range(len(yg)) if dist_row[j] == v]
        r = sum(1 for j in members if yg[j] == yq)
        groups.append([[i in c for i in range(len(members))] for c in itertools.combinations(range(len(members)), r)])
    for choice in itertools.product(*groups):
        yield [rel for group in choice for rel in group]


def _ap_parts(ranked, kk):
    hits, total = 0, 0.0
    for j in range(kk):
        if ranked[j]:
            hits += 1
            total += hits / (j + 1)
    return total, hits


def _ap_brute(dist_row, yq, yg, k, denominator):
    """AP@k of one query by plain Python: walk every tied order, average (the "hits" normaliser: a ratio of means)."""
    R = sum(1 for y in yg if y == yq)
    kk = R if k is None else k
    parts = [_ap_parts(ranked, kk) for ranked in _tied_orders(dist_row, yq, yg)]
    total = sum(t for t, _ in parts) / len(parts)
    hits = sum(h for _, h in parts) / len(parts)
    n = {"min_k_r": min(kk, R), "r": R, "k": kk, "hits": hits}[denominator]
    return 0.0 if n == 0 else total / n


def _r_precision_brute(dist_row, yq, yg):
    R = sum(1 for y in yg if y == yq)
    orders = list(_tied_orders(dist_row, yq, yg))
    return sum(sum(ranked[:R]) / R for ranked in orders) / len(orders)


@st.composite
def _retrieval_case(draw):
    G = draw(st.integers(2, 14))
    Q = draw(st.integers(1, 6))
    C = draw(st.integers(1, 3))
    yg = draw(st.lists(st.integers(0, C - 1), min_size=G, max_size=G))
    present = sorted(set(yg))
    yq = draw(st.lists(st.sampled_from(present), min_size=Q, max_size=Q))
    # integer-valued distances make ties common: the expectation over tied orders is tested too
    dist = draw(st.lists(st.lists(st.integers(0, 5), min_size=G, max_size=G), min_size=Q, max_size=Q))
    k = draw(st.one_of(st.none(), st.integers(1, G)))
    return np.array(dist, dtype=float), yq, yg, k


@settings(max_examples=150, deadline=None)
@given(case=_retrieval_case(), denominator=st.sampled_from(MAP_DENOMINATORS))
def test_map_at_k_every_denominator_equals_brute_force(case, denominator):
    dist, yq, yg, k = case
    got = map_at_k(dist, yq, yg, k=k, denominator=denominator, reduction="none")
    ref = [_ap_brute(dist[i], yq[i], yg, k, denominator) for i in range(len(yq))]
    assert got.tolist() == pytest.approx(ref, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(case=_retrieval_case())
def test_r_precision_equals_brute_force(case):
    dist, yq, yg, _ = case
    got = r_precision(dist, yq, yg, reduction="none")
    assert got.tolist() == pytest.approx([_r_precision_brute(dist[i], yq[i], yg) for i in range(len(yq))])


@settings(max_examples=60, deadline=None)
@given(case=_retrieval_case(), denominator=st.sampled_from(MAP_DENOMINATORS))
def test_one_sort_report_equals_the_single_metrics(case, denominator):
    dist, yq, yg, _ = case
    ks = tuple(sorted({1, len(yg) // 2 or 1, len(yg)}))
    rep = flat_retrieval_report(dist, yq, yg, ks, denominator=denominator)
    for k in ks:
        assert rep[f"map@{k}"] == pytest.approx(map_at_k(dist, yq, yg, k=k, denominator=denominator), abs=1e-12)
    assert rep["p@1"] == pytest.approx(precision_at_k(dist, yq, yg, k=1))
    assert rep["r_precision"] == pytest.approx(r_precision(dist, yq, yg))


def test_map_hand_values_and_aliases():
    d = torch.arange(5.0)[None]
    yq, yg = [0], [0, 1, 0, 1, 0]  # R = 3, relevant at ranks 1, 3, 5
    assert map_at_k(d, yq, yg, k=2) == pytest.approx(1 / 2)
    assert map_at_k(d, yq, yg, k=2, denominator="r") == pytest.approx(1 / 3)
    assert map_at_k(d, yq, yg, k=2, denominator="pytorch-metric-learning") == pytest.approx(1 / 3)
    assert map_at_k(d, yq, yg, k=2, denominator="torchmetrics") == pytest.approx(1.0)
    assert map_at_k(d, yq, yg, k=5) == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert map_at_k(d, yq, yg, k=5, denominator="k") == pytest.approx((1 + 2 / 3 + 3 / 5) / 5)
    assert precision_at_k(d, yq, yg, k=1) == 1.0
    assert r_precision(d, yq, yg) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match=r"denominator must be one of \['min_k_r', 'r', 'k', 'hits'\]"):
        map_at_k(d, yq, yg, k=2, denominator="R")


def test_denominator_r_equals_pytorch_metric_learning():
    g = np.random.default_rng(0)
    Q, G, k = 30, 50, 10
    yg = g.integers(0, 4, G)
    yq = g.integers(0, 4, Q)
    dist = g.random((Q, G))
    order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    labels, counts = np.unique(yg, return_counts=True)
    pml = mean_average_precision(  # as AccuracyCalculator calls it with k neighbours
        torch.as_tensor(yg[order]),
        torch.as_tensor(yq)[:, None],
        False,
        (torch.as_tensor(labels), torch.as_tensor(counts)),
        False,
        False,
        torch.eq,
    )
    assert map_at_k(dist, yq, yg, k=k, denominator="r") == pytest.approx(float(pml), abs=1e-12)


# --------------------------------------------------------------------------- mapper, index, storage
from hierviz.features import FeaturesData  # noqa: E402
from hierviz.geometry import PoincareBall  # noqa: E402
from hierviz.models import HyperbolicMapper  # noqa: E402
from hierviz.retrieval import (  # noqa: E402
    ReferenceIndex,
    grouped_folds,
    retrieval_metrics,
    run_retrieval,
    storage_distance_error,
    train_mapper,
)


def test_mapper_is_the_papers_formula_and_reports_clip_fraction():
    torch.manual_seed(0)
    hm = HyperbolicMapper(5, 3, delta=0.1).double()
    x = 3 * torch.randn(50, 5, dtype=torch.float64)
    h = hm(x)
    W1, b1, W2, b2 = hm.net[0].weight, hm.net[0].bias, hm.net[2].weight, hm.net[2].bias
    e = torch.relu(x @ W1.T + b1) @ W2.T + b2
    n = e.norm(dim=-1, keepdim=True)
    p = torch.tanh(n) * e / n  # exp_0 at c = 1 (Paper 03 §2.2)
    beta = torch.clamp(0.9 / p.norm(dim=-1, keepdim=True), max=1.0)
    assert torch.allclose(h, beta * p, atol=1e-10)
    assert hm.clip_fraction == pytest.approx(float((p.norm(dim=-1) > 0.9).double().mean()))
    assert 0 < hm.clip_fraction < 1 and h.norm(dim=-1).max().item() <= 0.9 + 1e-12
    assert hm.net[0].out_features == 256 or hm.net[0].out_features == HyperbolicMapper(5, 3).net[0].out_features
    assert HyperbolicMapper(5).net[0].out_features == 256 and HyperbolicMapper(5).dim_out == 32


def test_mapper_errors():
    with pytest.raises(ValueError, match="dim_in must be a positive integer"):
        HyperbolicMapper(0)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        HyperbolicMapper(3, delta=1.0)
    with pytest.raises(ValueError, match=r"x must have shape \(B, 3\)"):
        HyperbolicMapper(3)(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="geometry must be a PoincareBall"):
        HyperbolicMapper(3, geometry=__import__("hierviz.geometry", fromlist=["Euclidean"]).Euclidean())


def _ball(n, d, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return PoincareBall(1.0).expmap0(scale * torch.randn(n, d, generator=g, dtype=torch.float64)).float()


@pytest.mark.parametrize("storage", ["fp32", "fp16", "fp16-ball"])
def test_index_search_equals_brute_force_sort(storage):
    ref, q = _ball(500, 32, 0), _ball(40, 32, 1)
    index = ReferenceIndex(ref, storage=storage, query_batch=16, ref_chunk=64)  # many chunks and batches
    d, i = index.search(q, k=7)
    D = index.distances(q)
    assert D.shape == (40, 500)
    ref_d, _ = torch.sort(D, dim=1)
    assert torch.allclose(d, ref_d[:, :7])
    assert torch.allclose(D.gather(1, i), d)
    assert index.bytes_per_item == {"fp32": 128, "fp16": 68, "fp16-ball": 64}[storage]
    assert index.nbytes == 500 * index.bytes_per_item


def test_index_fp32_distances_equal_the_geometry():
    ref, q = _ball(30, 8, 2), _ball(5, 8, 3)
    D = ReferenceIndex(ref, storage="fp32").distances(q)
    ref_D = PoincareBall(1.0).dist(q.double()[:, None], ref.double()[None])
    assert torch.allclose(D.double(), ref_D, rtol=1e-4, atol=1e-4)


def test_fp16_tangents_beat_fp16_coordinates_near_the_boundary():
    g = torch.Generator().manual_seed(0)
    u = torch.nn.functional.normalize(torch.randn(2000, 32, generator=g, dtype=torch.float64), dim=-1)
    x, y = 0.5 * u[:1000], 0.9999 * u[1000:]
    tangent = np.quantile(storage_distance_error(x, y, "fp16"), 0.99)
    ball = np.quantile(storage_distance_error(x, y, "fp16-ball"), 0.99)
    assert tangent < 1e-3 < ball  # DESIGN.md measured 1.3e-4 vs 1.1e-2 at r = 0.9999
    assert np.quantile(storage_distance_error(x, y, "fp32"), 0.99) < 1e-4


def test_index_errors(tmp_path):
    with pytest.raises(ValueError, match="outside the Poincaré ball"):
        ReferenceIndex(torch.ones(3, 2))
    with pytest.raises(ValueError, match=r"storage must be one of \['fp32', 'fp16', 'fp16-ball', 'fp64'\]"):
        ReferenceIndex(torch.zeros(3, 2), storage="int8")
    index = ReferenceIndex(torch.zeros(3, 2))
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 3\]"):
        index.search(torch.zeros(1, 2), k=4)
    with pytest.raises(ValueError, match=r"queries must have shape \(Q, 2\)"):
        index.search(torch.zeros(1, 3), k=1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError) as info:
        index.save(tmp_path / "file" / "ix")
    assert (
        str(info.value)
        == f"path {tmp_path / 'file' / 'ix'}: cannot write there (Not a directory); choose another folder"
    )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (pytest -m gpu on a GPU)")
def test_index_on_gpu_equals_cpu():
    ref, q = _ball(2000, 32, 4), _ball(100, 32, 5)
    dc, ic = ReferenceIndex(ref, storage="fp16").search(q, k=10)
    dg, ig = ReferenceIndex(ref, storage="fp16", device="cuda").search(q.cuda(), k=10)
    assert torch.equal(ic, ig.cpu())  # the same top-k: float64 search and exact re-rank, on any device
    torch.testing.assert_close(dc, dg.cpu(), rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- protocol
def test_grouped_folds_keep_groups_together_and_cover_every_row():
    y = np.arange(100) % 4
    groups = np.arange(100) // 3
    folds = grouped_folds(y, groups, 5, seed=0)
    assert sorted(np.concatenate(folds).tolist()) == list(range(100))
    owner = {}
    for f, idx in enumerate(folds):
        for gid in groups[idx]:
            assert owner.setdefault(int(gid), f) == f
    with pytest.raises(ValueError, match="folds=5 exceeds the number of groups"):
        grouped_folds(y[:6], groups[:6], 5)


def test_retrieval_metrics_agree_with_the_metric_functions():
    g = np.random.default_rng(0)
    D = g.random((20, 40))
    yq, yg = g.integers(0, 3, 20), g.integers(0, 3, 40)
    m = retrieval_metrics(D, yq, yg, ks=(1, 5), denominator="r")
    assert m["map@5"] == pytest.approx(map_at_k(D, yq, yg, k=5, denominator="r"))
    assert m["p@1"] == pytest.approx(precision_at_k(D, yq, yg, k=1))
    assert retrieval_metrics(D, yq, yg, ks=(1,))["map@1"] == pytest.approx(m["p@1"])  # AP@1 / min(1, R) = P@1
    assert m["r_precision"] == pytest.approx(r_precision(D, yq, yg))


def _blobs(n=240, d=12, classes=4, seed=0):
    g = np.random.default_rng(seed)
    y = np.arange(n) % classes
    centres = 3 * g.normal(size=(classes, d))
    X = (centres[y] + g.normal(size=(n, d))).astype(np.float32)
    return FeaturesData(X, y, groups=np.arange(n) // 2)


def test_cosine_control_mapper_trains_on_the_unit_sphere():
    f = _blobs()
    mapper, hist = train_mapper(f.features, f.labels, dim_out=8, epochs=10, seed=0, geometry="euclidean")
    assert hist[-1] < hist[0] and type(mapper).__name__ == "CosineMapper"
    with torch.no_grad():
        h = mapper(torch.as_tensor(f.features))
    torch.testing.assert_close(h.norm(dim=-1), torch.ones(len(h)))
    cos = h @ h.T
    same = torch.as_tensor(f.labels[:, None] == f.labels[None])
    # HCL pulls a class together and pushes the others towards the margin (m0 = 0.5 in chordal distance)
    assert float(cos[same].mean()) > 0.99 and float(cos[~same].mean()) < 0.9
    nn_label = f.labels[(cos - 3 * torch.eye(len(h))).argmax(1).numpy()]
    assert (nn_label == f.labels).mean() == 1.0
    # the head follows the geometry object, not its name; the hyperboloid gets d + 1 coordinates
    lor, _ = train_mapper(f.features[:40], f.labels[:40], dim_out=3, epochs=1, seed=0, geometry="lorentz")
    with torch.no_grad():
        z = lor(torch.as_tensor(f.features[:5]))
    assert z.shape == (5, 4) and bool(lor.geometry.hyperbolic)
    torch.testing.assert_close(lor.geometry.dist(z, z), torch.zeros(5), atol=2e-3, rtol=0)
    with pytest.raises(ValueError, match="geometry"):
        train_mapper(f.features, f.labels, geometry="spherical-typo")


def test_train_mapper_lowers_hcl_and_separates_classes():
    f = _blobs()
    mapper, hist = train_mapper(f.features, f.labels, dim_out=8, epochs=15, seed=0)
    assert hist[-1] < hist[0]
    with torch.no_grad():
        h = mapper(torch.as_tensor(f.features))
    D = PoincareBall(1.0).pairwise_dist(h)
    same = f.labels[:, None] == f.labels[None]
    assert float(D[torch.as_tensor(same)].mean()) < float(D[torch.as_tensor(~same)].mean())


def test_run_retrieval_writes_tables_and_hyperbolic_beats_chance(tmp_path):
    from hierviz.retrieval import RetrievalConfig

    cfg = RetrievalConfig(reducers=("pca",), n_grid=(6,), folds=3, epochs=8, storages=("fp32", "fp16"), device="cpu")
    res = run_retrieval(_blobs(), cfg, out=tmp_path, progress=False, verbose=False)
    # one compare plan (its results.csv, results.md, report.html) and Table 2 from its records
    assert {p.name for p in res["paths"].values()} >= {
        "folds.csv",
        "table2.csv",
        "table2.md",
        "retrieval.json",
        "results.csv",
        "results.md",
        "report.html",
    }
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert runs == sorted(
        f"{m}-poincare-s{f}" for m in ("pca6", "hyper-dino-pca6-32", "cosine-mapper-pca6") for f in range(3)
    )
    names = {(s["variant"], s["storage"]) for s in res["summary"]}
    assert names == {
        ("PCA(6)", "fp16"),
        ("Hyper-DINO(PCA(6), 32)", "fp32"),
        ("Hyper-DINO(PCA(6), 32)", "fp16"),
        ("Random ranking (chance)", ""),  # the chance line
        ("Cosine-mapper(PCA(6), 32)", "cosine"),  # the same mapper without the ball
    }
    from hierviz.metrics.baselines import random_ranking_scores
    from hierviz.retrieval.protocol import grouped_folds

    data = _blobs()
    test = grouped_folds(data.labels, data.groups, cfg.folds, cfg.seed)[0]
    train = np.setdiff1d(np.arange(len(data.labels)), test)
    want = random_ranking_scores(data.labels[test], data.labels[train], cfg.ks, denominator=cfg.denominator)
    chance = next(r for r in res["rows"] if r["fold"] == 0 and r["base"] == "chance")
    assert {k: chance[k] for k in want} == pytest.approx(want) and 0.08 < chance[
        "map@20"
    ] < 0.11  # (p H_20 + p^2 (20 - H_20)) / 20, p ~ 1/4
    assert "| *Random ranking (chance)* | – |" in res["markdown"] and "k=20: cos·→32" in res["markdown"]
    cos = next(s for s in res["summary"] if s["storage"] == "cosine")
    assert cos["map@20_mean"] > 0.5 and cos["dim_out"] == 32  # 4 separable classes: the control learns too
    hd = {s["storage"]: s for s in res["summary"] if s["variant"].startswith("Hyper")}
    assert hd["fp16"]["bytes"] == 68 and hd["fp32"]["bytes"] == 128  # 2·32 direction + a float32 norm
    assert hd["fp16"]["map@20_mean"] > 0.5  # 4 well-separated classes: a random ranking scores ~0.1
    assert abs(hd["fp16"]["map@20_mean"] - hd["fp32"]["map@20_mean"]) < 0.02
    assert "| PCA | 6 |" in res["markdown"] and len(res["rows"]) == 3 * 5
    import csv

    with open(tmp_path / "table2.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {"map@1_mean", "map@5_mean", "map@10_mean", "map@20_mean", "map@20_std"} <= set(rows[0])
    assert "| PCA(6) | " in res["markdown"] and "over 3 folds" in res["markdown"]  # the paired fold differences
    with open(tmp_path / "results.csv") as fh:  # compare's own table: one row per variant and fold
        assert sum(1 for r in csv.DictReader(fh) if r["method"] == "hyper-dino-pca6-32") == 3


def test_unknown_preset_is_one_line():
    with pytest.raises(ValueError, match=r"--preset 'fast': unknown retrieval preset; choose one of \['paper'"):
        run_retrieval(_blobs(), "fast")


# --------------------------------------------------------------------------- CLI
from hierviz.cli import main  # noqa: E402
from hierviz.features import load_features, save_features  # noqa: E402


def _cli(capsys, argv, code):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == code, (out, err)
    return out, err


def test_cli_features_then_retrieval_end_to_end(tmp_path, capsys):
    from hierviz.experiments import compare, resolve_config

    cfg = resolve_config(
        "quick-ham10000",
        [
            "data.limit=120",
            "seeds=1",
            "model.width=4",
            "model.embed_dim=8",
            "data.image_size=16",
            "eval.projection=pca",
            "train.batch_size=32",
            "train.epochs=1",
            "methods=supcon",
            "geometries=euclidean",
            f"out={tmp_path / 'run'}",
        ],
    )
    compare(cfg, progress=False, verbose=False)
    out, _ = _cli(
        capsys,
        [
            "features",
            "--run",
            str(tmp_path / "run" / "runs" / "supcon-euclidean-s0"),
            "--float16",
            "--out",
            str(tmp_path / "f.npz"),
            "--quiet",
        ],
        0,
    )
    assert "120 × 32 features (float16)" in out
    f = load_features(tmp_path / "f.npz")
    assert f.features.dtype == np.float16 and f.groups is not None
    out, _ = _cli(
        capsys,
        [
            "retrieval",
            "--features",
            str(tmp_path / "f.npz"),
            "--preset",
            "smoke",
            "--n-grid",
            "4",
            "--folds",
            "2",
            "--epochs",
            "1",
            "--out",
            str(tmp_path / "ret"),
            "--quiet",
        ],
        0,
    )
    assert "| PCA | 4 |" in out and (tmp_path / "ret" / "table2.md").is_file()
    assert (tmp_path / "ret" / "report.html").is_file()  # compare's report of the same runs
    # --set, --import and --resume as in 'hierviz compare': a compare key of the grid's config, reused runs
    again = ["retrieval", "--features", str(tmp_path / "f.npz"), "--preset", "smoke", "--n-grid", "4"]
    again += ["--folds", "2", "--epochs", "1", "--out", str(tmp_path / "ret2"), "--quiet"]
    again += ["--set", "eval.mean_steps=3", "--import", "json"]
    _cli(capsys, again, 0)
    import json

    cfg2 = json.loads((tmp_path / "ret2" / "config.json").read_text())
    assert cfg2["eval"]["mean_steps"] == 3
    out, _ = _cli(capsys, [*again, "--resume"], 0)
    assert out.count("finished earlier, reusing") >= 2  # every variant × fold
    _, err = _cli(capsys, [*again[:-4], "--set", "eval.mean_steps=5", "--resume"], 2)
    assert "--resume" in err and "different settings" in err
    # 'hierviz report' rebuilds Table 2 of a retrieval folder from its records, equal to what the run wrote
    written = {n: (tmp_path / "ret" / n).read_text() for n in ("table2.md", "table2.csv", "folds.csv")}
    for n in written:
        (tmp_path / "ret" / n).unlink()
    out, _ = _cli(capsys, ["report", "--out", str(tmp_path / "ret")], 0)
    assert "table2.md" in out
    assert {n: (tmp_path / "ret" / n).read_text() for n in written} == written


def test_cli_features_from_a_checkpoint_with_pca(tmp_path, capsys):
    import torchvision

    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), tmp_path / "r18.pt")
    argv = ["features", "--checkpoint", str(tmp_path / "r18.pt"), "--image-size", "32", "--reduce", "pca", "--n", "8"]
    out, _ = _cli(capsys, [*argv, "--out", str(tmp_path / "f.npz"), "--quiet"], 0)
    f = load_features(tmp_path / "f.npz")
    assert f.dim == 8 and "× 8 features (float32)" in out
    train = f.rows("train")
    assert np.allclose(f.features[train].mean(0), 0, atol=1e-4)  # PCA of scaled features, fitted on train


def test_cli_features_reduce_pca(tmp_path, capsys):
    save_features(tmp_path / "raw.npz", _blobs())
    # --reduce pca without --n is refused before any work
    _, err = _cli(
        capsys, ["features", "--run", str(tmp_path / "nothing"), "--reduce", "pca", "--out", str(tmp_path / "x.npz")], 2
    )
    assert err == "hierviz: error: --reduce pca needs --n N (the number of components)\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["retrieval", "--features", "{tmp}/none.npz", "--out", "{tmp}/o"], "--features {tmp}/none.npz: no such file"),
        (
            ["retrieval", "--features", "{tmp}/raw.npz", "--preset", "fast", "--out", "{tmp}/o"],
            "--preset 'fast': unknown",
        ),
        (
            ["retrieval", "--features", "{tmp}/raw.npz", "--n-grid", "a,b", "--out", "{tmp}/o"],
            "--n-grid 'a,b': expected",
        ),
        (["retrieval", "--features", "{tmp}/raw.npz", "--folds", "1", "--out", "{tmp}/o"], "--folds: must be >= 2"),
        (["retrieval", "--features", "{tmp}/raw.npz", "--reducers", "lda", "--out", "{tmp}/o"], "--reducers: unknown"),
        (
            ["retrieval", "--features", "{tmp}/raw.npz", "--denominator", "x", "--out", "{tmp}/o"],
            "--denominator: denominator must be one of",
        ),
        (
            ["retrieval", "--features", "{tmp}/junk.npz", "--out", "{tmp}/o"],
            "could not read {tmp}/junk.npz: not an .npz",
        ),
        (
            ["features", "--checkpoint", "{tmp}/none.pt", "--out", "{tmp}/f.npz"],
            "--checkpoint {tmp}/none.pt: no such file",
        ),
        (["features", "--run", "{tmp}/none", "--out", "{tmp}/f.npz"], "--run {tmp}/none: no such folder"),
        (
            ["retrieval", "--features", "{tmp}/raw.npz", "--preset", "smoke", "--limit", "1", "--out", "{tmp}/o"],
            "--limit 1 is too few rows for retrieval: 2 folds with MAP@20 need at least 40",
        ),
        (
            ["retrieval", "--features", "{tmp}/raw.npz", "--preset", "smoke", "--out", "{tmp}/junk.npz/o"],
            "--out {tmp}/junk.npz/o: cannot write there (Not a directory); choose a folder you can write to",
        ),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    save_features(tmp_path / "raw.npz", _blobs())
    (tmp_path / "junk.npz").write_bytes(b"junk")
    _, err = _cli(capsys, [a.format(tmp=tmp_path) for a in argv], 2)
    assert err.startswith("hierviz: error: " + message.format(tmp=tmp_path)) and err.count("\n") == 1


# --------------------------------------------------------------------------- figures and the HCL panel
from hierviz.viz.retrieval import (  # noqa: E402
    hcl_figure,
    hcl_panel,
    map_vs_n_figure,
    query_gallery_figure,
    storage_error_figure,
)


def test_hcl_panel_numbers_come_from_hcl_loss():
    from hierviz.losses import HCLLoss
    from hierviz.retrieval import hcl_toy_features, hcl_train

    x, y = hcl_toy_features(seed=0)
    fig = hcl_figure(1.0, 0.2, 0.05, result=hcl_train(1.0, 0.2, 0.05, x=x, y=y, steps=10, seed=0))
    h = np.array([[px, py] for tr in fig.data if tr.name and tr.name.startswith("class") for px, py in zip(tr.x, tr.y)])
    yy = np.concatenate(
        [np.full(len(tr.x), int(tr.name.split()[1])) for tr in fig.data if tr.name and tr.name.startswith("class")]
    )
    loss = HCLLoss(m0=1.0, alpha=0.2, lam=0.05)
    loss(torch.as_tensor(h), torch.as_tensor(yy))
    for key in ("pos", "neg", "norm", "margin"):
        assert fig.layout.meta[key] == pytest.approx(loss.last_terms[key], rel=1e-5)


def test_hcl_panel_draws_the_grid_it_is_given():
    from hierviz.retrieval import HCL_GRID, hcl_grid

    grid = hcl_grid()
    panel = hcl_panel(grid)
    assert set(panel.controls) == {"m0", "alpha", "lam"}
    m0, alpha, lam = panel.controls["m0"], panel.controls["alpha"], panel.controls["lam"]
    assert (m0.min, m0.max, m0.step, m0.value) == (0.0, 6.0, 0.5, 0.5)
    assert (alpha.min, alpha.max, alpha.step, alpha.value) == (0.0, 1.0, 0.25, 0.0)
    assert [v for _, v in lam.options] == list(HCL_GRID["lam"]) and lam.value == 0.0
    m0.value = 2.0  # moving a slider redraws the grid's run of that setting, with the new margin
    want = hcl_figure(2.0, 0.0, 0.0, result=grid[(2.0, 0.0, 0.0)]).layout.meta
    assert panel.figure.layout.meta == want and want["margin"] >= 2.0
    lam.value = 10.0
    assert panel.figure.layout.meta == hcl_figure(2.0, 0.0, 10.0, result=grid[(2.0, 0.0, 10.0)]).layout.meta
    snapped = hcl_panel(grid, m0=1.2, lam=0.15).controls  # each snapped to the nearest setting
    assert (snapped["m0"].value, snapped["lam"].value) == (1.0, 0.1)
    with pytest.raises(ValueError, match="grid is empty: pass hierviz.retrieval.hcl_grid"):
        hcl_panel({})


def test_retrieval_figures():
    imgs = np.zeros((3, 8, 8, 3), np.uint8)
    fig = query_gallery_figure(imgs[0], imgs, 1, [1, 0, 1], [0.1, 0.2, 0.3], classes=["a", "b"])
    assert len(fig.data) == 4 and "b ✓" in fig.layout.annotations[1].text and "a ✗" in fig.layout.annotations[2].text
    with pytest.raises(ValueError, match="differ in length"):
        query_gallery_figure(imgs[0], imgs, 1, [1, 0], [0.1, 0.2, 0.3])
    summary = [
        {"base": "pca", "n": n, "dim_out": d, "storage": s, "map@20_mean": v, "map@20_std": 0.01}
        for n, v in ((8, 0.5), (16, 0.6))
        for d, s in (("", "fp16"), (32, "fp16"), (32, "fp32"))
    ]
    fig = map_vs_n_figure(summary)
    assert {t.name for t in fig.data} == {"PCA(N)", "Hyper-DINO(PCA(N), 32)"} and list(fig.data[0].x) == [8, 16]
    curve = {"radius": [0.5, 0.99], "fp32": [1e-8, 1e-7], "fp16": [1e-4, 1e-4], "fp16-ball": [1e-4, 1e-2]}
    assert len(storage_error_figure(curve).data) == 3


# --------------------------------------------------------------------------- ties: the expectation over tied orders
def test_a_fully_tied_gallery_by_hand():
    # one query, four references at the same distance, two of them relevant: every order equally likely
    D, yq, yg = [[1.0, 1.0, 1.0, 1.0]], [0], [0, 1, 0, 1]
    assert precision_at_k(D, yq, yg, k=1) == pytest.approx(0.5)
    assert recall_at_k(D, yq, yg, k=1) == pytest.approx(0.5)
    assert recall_at_k(D, yq, yg, k=2) == pytest.approx(1 - 1 / 6)  # both top places irrelevant: 1 of C(4, 2)
    # AP@4 of the six places of the two relevant items: (1 + 5/6 + 3/4 + 7/12 + 1/2 + 5/12) / 6
    assert map_at_k(D, yq, yg, k=4) == pytest.approx(49 / 72)
    assert r_precision(D, yq, yg) == pytest.approx(0.5)
    rep = flat_retrieval_report(D, yq, yg, (1, 4))
    assert rep == pytest.approx({"map@1": 0.5, "map@4": 49 / 72, "p@1": 0.5, "r_precision": 0.5})


def test_metrics_of_a_collapsed_embedding_do_not_depend_on_the_gallery_order():
    # a third of the references on one spot (a mapper that sends a whole region to one point): before
    # hierviz 0.4 the stable sort let the storage order of that block decide P@1
    rng = np.random.default_rng(0)
    zg = rng.normal(size=(60, 3))
    zg[:20] = 0.0
    yg = rng.integers(0, 3, size=60)
    zq = np.vstack([np.zeros((5, 3)), rng.normal(size=(5, 3))])
    yq = rng.integers(0, 3, size=10)
    D = np.linalg.norm(zq[:, None] - zg[None], axis=-1)
    perm = rng.permutation(60)
    for f, kw in (
        (precision_at_k, {"k": 3}),
        (recall_at_k, {"k": 2}),
        (map_at_k, {"k": 20}),
        (map_at_k, {"k": None, "denominator": "hits"}),
        (r_precision, {}),
    ):
        a = f(D, yq, yg, reduction="none", **kw)
        b = f(D[:, perm], yq, yg[perm], reduction="none", **kw)
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    # and it is the mean over random tie-breaking orders (a Monte-Carlo check of the first five queries)
    rows = [map_at_k(D[:, p], yq, yg[p], k=20, reduction="none")[:5] for p in (rng.permutation(60) for _ in range(400))]
    torch.testing.assert_close(
        torch.stack(rows).mean(0), map_at_k(D, yq, yg, k=20, reduction="none")[:5], atol=0.02, rtol=0
    )


@settings(max_examples=100, deadline=None)
@given(case=_retrieval_case())
def test_recall_at_k_equals_brute_force_over_tied_orders(case):
    dist, yq, yg, k = case
    k = k or 1
    got = recall_at_k(dist, yq, yg, k=k, reduction="none")
    ref = []
    for i in range(len(yq)):
        orders = list(_tied_orders(dist[i], yq[i], yg))
        ref.append(sum(any(o[:k]) for o in orders) / len(orders))
    assert got.tolist() == pytest.approx(ref, abs=1e-9)


def test_ndcg_with_ties_equals_sklearn_which_averages_tied_gains():
    tree = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["u", "v"]}})
    rng = np.random.default_rng(2)
    yq, yg = rng.integers(0, 4, size=6), rng.integers(0, 4, size=12)
    D = rng.integers(0, 3, size=(6, 12)).astype(float)  # three distances: many ties
    for rel in ("sum", "max"):
        gains = tree_relevance(tree, rel).numpy()[yq][:, yg]
        for k in (None, 4):
            want = ndcg_score(gains, -D, k=k)  # ignore_ties=False: tied items share their mean gain
            assert ndcg(D, yq, yg, tree, k=k, relevance=rel) == pytest.approx(want, abs=1e-12)


def test_scores_within_a_few_units_in_the_last_place_tie_and_farther_ones_do_not():
    # one point's distance computed through two GEMM tiles: float32 values one ulp apart are one tie
    d = np.float32(9.849343e-06)
    D32 = torch.tensor([[d, np.nextafter(d, np.float32(1.0)), 1.0]], dtype=torch.float32)
    assert precision_at_k(D32, [0], [1, 0, 0], k=1) == pytest.approx(0.5)
    assert precision_at_k(D32[:, [1, 0, 2]], [0], [0, 1, 0], k=1) == pytest.approx(0.5)
    # the same gap in float64 is half a billion units in the last place: an order (the irrelevant item first)
    D64 = D32.double()
    assert precision_at_k(D64, [0], [1, 0, 0], k=1) == 0.0
    # integers tie only when equal
    assert precision_at_k([[1, 2, 2]], [0], [1, 0, 1], k=2) == pytest.approx(0.25)  # (0 + 1/2) / 2


def test_index_distances_of_equal_points_are_exactly_zero_so_a_collapsed_block_ties():
    from hierviz.geometry import PoincareBall
    from hierviz.retrieval.index import ReferenceIndex

    ball = PoincareBall(1.0)
    rng = np.random.default_rng(3)
    spot = ball.expmap0(torch.tensor(rng.normal(size=(1, 32)) * 0.02, dtype=torch.float32))
    g = torch.cat(
        [spot.expand(300, 32), ball.expmap0(torch.tensor(rng.normal(size=(300, 32)) * 0.3, dtype=torch.float32))]
    )
    yg = rng.integers(0, 3, size=600)
    q = torch.cat([spot.expand(20, 32), g[400:420]])
    yq = rng.integers(0, 3, size=40)
    gram = ball.pairwise_dist(q[:20].double(), g[:300].double())
    assert float(gram.max()) > 0  # the Gram form never gives equal points 0 (its clamp, or cancellation noise)
    scores = {}
    for storage in ("fp32", "fp16"):
        D = ReferenceIndex(g, yg, geometry=ball, storage=storage).distances(q)
        block = D[:20, :300]
        assert torch.unique(block).numel() == 1  # one exact tie (0 for fp32; the code's rounding for fp16)
        if storage == "fp32":
            assert float(block.max()) == 0.0
        scores[storage] = map_at_k(D, yq, yg, k=20, reduction="none")
    torch.testing.assert_close(scores["fp32"][:20], scores["fp16"][:20], rtol=0, atol=1e-12)


def test_cosine_distances_of_equal_float32_directions_are_exactly_zero():
    from hierviz.evaluation.retrieval import cosine_distances

    rng = np.random.default_rng(0)
    u = torch.nn.functional.normalize(torch.tensor(rng.normal(size=(50, 32)), dtype=torch.float32), dim=-1)
    q, g = u[20:21], torch.cat([u[20:21].expand(40, 32), u[21:]])  # 40 references equal to the query
    assert float((1.0 - q @ g.T)[0, :40].min()) > 0  # the product form leaves equal directions an ulp apart
    D = cosine_distances(q, g)
    assert float(D[0, :40].abs().max()) == 0.0
    torch.testing.assert_close(D[0, 40:], (1.0 - q @ g[40:].T)[0], rtol=0, atol=1e-6)
