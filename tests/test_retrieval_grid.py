"""``hierviz retrieval`` as an alias of ``compare``: the grid's methods, folds as runs, Table 2 from records."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from hierviz.evaluation import PROTOCOLS
from hierviz.evaluation.retrieval import grouped_fold_split, grouped_folds, retrieval_metrics
from hierviz.features import FeaturesData
from hierviz.features.reduce import reduce_features
from hierviz.methods import METHODS
from hierviz.metrics.baselines import random_ranking_scores
from hierviz.retrieval import ReferenceIndex, RetrievalConfig, run_retrieval, train_mapper
from hierviz.retrieval.grid import GridOptions, grid_methods, register_grid, unregister_grid
from hierviz.retrieval.tables import _variant, fold_means, fold_rows, paired_markdown, summarise


def _blobs(n=160, d=10, classes=4, seed=0):
    g = np.random.default_rng(seed)
    y = np.arange(n) % classes
    centres = 2 * g.normal(size=(classes, d))
    X = (centres[y] + g.normal(size=(n, d))).astype(np.float32)
    return FeaturesData(X, y, groups=np.arange(n) // 2)


def _loop_reference(data, cfg, fold):
    """The 0.2 driver's fold loop, written out: reduce, train_mapper (fit), index, MAP@k (one fold)."""
    X, y = data.features.astype(np.float32), data.labels
    test = grouped_folds(y, data.groups, cfg.folds, cfg.seed)[fold]
    train = np.setdiff1d(np.arange(len(y)), test)
    n = cfg.n_grid[0]
    xtr, xte = reduce_features(X[train], y[train], [X[test]], method="pca", n_components=n, float16=True, seed=0)
    out = {"base": retrieval_metrics(torch.cdist(torch.as_tensor(xte, dtype=torch.float64),
                                                 torch.as_tensor(xtr, dtype=torch.float64)), y[test], y[train])}  # fmt: skip
    kw = dict(dim_out=32, epochs=cfg.epochs, batch_size=cfg.batch_size, seed=cfg.seed + fold, device="cpu")
    mapper, hist = train_mapper(xtr, y[train], **kw)
    with torch.no_grad():
        h_tr = mapper(torch.as_tensor(xtr))
        clip = mapper.clip_fraction
        h_te = mapper(torch.as_tensor(xte))
    index = ReferenceIndex(h_tr, y[train], geometry=mapper.geometry, storage="fp16")
    out["mapper"] = retrieval_metrics(index.distances(h_te), y[test], y[train])
    out["clip"], out["history"] = clip, hist
    cos, _ = train_mapper(xtr, y[train], geometry="euclidean", **kw)
    with torch.no_grad():
        c_tr, c_te = cos(torch.as_tensor(xtr)), cos(torch.as_tensor(xte))
    out["cosine"] = retrieval_metrics((1.0 - c_te @ c_tr.T).clamp_min(0.0), y[test], y[train])
    out["chance"] = random_ranking_scores(y[test], y[train], (1, 5, 10, 20))
    return out


def test_the_alias_equals_the_fold_loop_it_replaces(tmp_path):
    data = _blobs()
    cfg = RetrievalConfig(reducers=("pca",), n_grid=(6,), folds=2, epochs=3, batch_size=32, device="cpu")
    res = run_retrieval(data, cfg, out=tmp_path, progress=False, verbose=False)
    rows = {(r["fold"], r["variant"], r["storage"]): r for r in res["rows"]}
    for fold in range(2):
        ref = _loop_reference(data, cfg, fold)
        for key, want in (
            (("PCA(6)", "fp16"), ref["base"]),
            (("Hyper-DINO(PCA(6), 32)", "fp16"), ref["mapper"]),
            (("Cosine-mapper(PCA(6), 32)", "cosine"), ref["cosine"]),
            (("Random ranking (chance)", ""), ref["chance"]),
        ):
            got = rows[(fold, *key)]
            assert {k: got[k] for k in want} == pytest.approx(want, abs=1e-12), (fold, key)
        assert rows[(fold, "Hyper-DINO(PCA(6), 32)", "fp16")]["clip_fraction"] == ref["clip"]
        if fold == 0:  # the loss curve of fold 0 is the one loop's, epoch by epoch
            assert res["history"]["Hyper-DINO(PCA(6), 32)"] == pytest.approx(ref["history"], abs=1e-6)
    # every fold of every variant is a typed compare record; the base features train nothing
    rec = json.loads((tmp_path / "runs" / "pca6-poincare-s1" / "result.json").read_text())
    assert rec["protocol"] == "retrieval-folds" and rec["train_seconds"] == 0.0 and rec["history"] == {}
    assert rec["metrics"]["bytes"] == 12 and rec["metrics"]["n"] == 6  # 6 float16 numbers
    assert not any(m in METHODS for m in ("pca6", "hyper-dino-pca6-32"))  # the grid's methods are gone after


def test_grid_methods_cut_n_and_name_the_variants():
    v = grid_methods(["pca", "nca"], [4, 32, 64], [32, "in"], cosine=False, dim=16)
    assert [m[0] for m in v] == [
        "pca4", "hyper-dino-pca4-32", "hyper-dino-pca4-4", "pca16", "hyper-dino-pca16-32", "hyper-dino-pca16-16",
        "nca4", "hyper-dino-nca4-32", "hyper-dino-nca4-4", "nca16", "hyper-dino-nca16-32", "hyper-dino-nca16-16",
    ]  # fmt: skip
    assert v[2][1] == "Hyper-DINO(PCA(4), 4)" and v[0][4] is None
    names = register_grid(v[:2], GridOptions())
    try:
        assert METHODS.get("pca4").protocol == "retrieval-folds" and METHODS.get("hyper-dino-pca4-32").needs.views == 1
        assert METHODS.get("hyper-dino-pca4-32").train.to_dict() == {"optimizer": "adam", "schedule": "constant"}
        assert METHODS.get("hyper-dino-pca4-32").feature_dropout == 0.0  # declared, not glued onto the build function
        assert METHODS.get("hyper-dino-pca4-32").hparams == ("hcl.m0", "hcl.alpha", "hcl.lambda")
        from hierviz.data import ArrayDataset
        from hierviz.geometry import PoincareBall

        f = _blobs(n=40, d=6)
        ds = ArrayDataset(images=f.features, labels=f.labels, classes=[str(c) for c in range(4)])
        base = METHODS.get("pca4").model(ds, PoincareBall(1.0), 0)
        hd = METHODS.get("hyper-dino-pca4-32").model(ds, PoincareBall(1.0), 0)
        assert hd.reducer is base.reducer  # one PCA fit per fold for every variant that reads it
        assert not any(p.requires_grad for p in base.parameters()) and hd.mapper.dim_in == 4
    finally:
        unregister_grid(names)
    assert "pca4" not in METHODS
    with pytest.raises(ValueError, match="method 'supcon' is already registered by another module"):
        register_grid([("supcon", "PCA(4)", "pca", 4, None)], GridOptions())


def test_display_names_read_back_into_table_2_columns():
    assert _variant("PCA(16)") == ("pca", "", "base")
    assert _variant("scaled") == ("scaled", "", "base")
    assert _variant("Hyper-DINO(NCA(8), 32)") == ("nca", 32, "mapper")
    assert _variant("Hyper-DINO(scaled, 128)") == ("scaled", 128, "mapper")
    assert _variant("Cosine-mapper(PCA(4), 32)") == ("pca", 32, "cosine")
    assert _variant("SupCon") is None and _variant("Hyper-DINO(SupCon, 32)") is None


def _record(tmp_path, display, fold, metrics, labels=None):
    emb = ""
    if labels is not None:
        emb = str(tmp_path / f"{display}-{fold}.npz")
        np.savez(emb, y_train=np.array(labels[0]), y_test=np.array(labels[1]))
    return {"method": display.lower(), "method_display": display, "seed": fold, "protocol": "retrieval-folds",
            "metrics": metrics, "embeddings": emb, "train_seconds": 1.0, "eval_seconds": 0.5}  # fmt: skip


def test_fold_rows_and_paired_differences_by_hand(tmp_path):
    recs = []
    for fold, (base, hd) in enumerate([(0.50, 0.60), (0.40, 0.44), (0.30, 0.37)]):
        lab = ([0, 0, 1, 1], [0, 1])  # references, queries: chance MAP@1 = 1/2
        recs.append(_record(tmp_path, "PCA(4)", fold, {"map@1": base, "n": 4, "bytes": 8}, lab))
        recs.append(_record(tmp_path, "Hyper-DINO(PCA(4), 32)", fold, {
            "map@1": hd, "n": 4, "bytes": 64, "clip_fraction": 0.0, "fp16_bytes": 64, "fp16_map@1": hd,
            "fp32_bytes": 128, "fp32_map@1": hd + 0.01,
        }))  # fmt: skip
    recs.append({**recs[0], "method_display": "SupCon"})  # another method of the folder: skipped
    rows = fold_rows(recs, ks=(1,))
    assert [(r["variant"], r["storage"]) for r in rows[:3]] == [("Random ranking (chance)", "")] * 3
    assert all(r["map@1"] == pytest.approx(0.5) for r in rows[:3])
    by = {(r["variant"], r["storage"], r["fold"]): r for r in rows}
    assert len(rows) == 3 + 3 * 3
    assert by[("Hyper-DINO(PCA(4), 32)", "fp32", 2)]["map@1"] == pytest.approx(0.38)
    assert by[("Hyper-DINO(PCA(4), 32)", "fp32", 2)]["bytes"] == 128 and by[("PCA(4)", "fp16", 0)]["bytes"] == 8
    assert by[("PCA(4)", "fp16", 1)]["seconds"] == 1.5
    md = paired_markdown(rows, metrics=("map@1",))
    # differences 10, 4, 7 points: mean 7, sd 3, t(0.975, 2) = 4.3027 -> half-width 4.3027 * 3 / sqrt(3) = 7.45
    assert "| PCA(4) | +7.00 [-0.45, +14.45] | 0 0 0 |" in md
    assert paired_markdown([r for r in rows if r["fold"] == 0], metrics=("map@1",)) == ""  # one fold: no interval


def test_fold_split_is_the_runs_fold_and_refuses_a_fold_past_the_last():
    y, g = np.arange(40) % 4, np.arange(40) // 2
    tests = [grouped_fold_split(y, g, fold=f, folds=4)["test"] for f in range(4)]
    assert sorted(np.concatenate(tests).tolist()) == list(range(40))
    spec = PROTOCOLS.get("retrieval-folds")  # compare makes fold s of len(seeds) folds for run seed s
    assert spec.make_split is grouped_fold_split and spec.per_seed is True
    s = grouped_fold_split(y, g, fold=1, folds=4)
    assert not set(g[s["train"]]) & set(g[s["test"]])  # no pair of rows split across train and test
    with pytest.raises(ValueError, match=r"fold must be in \[0, 3\] \(one run seed per fold\), got 4"):
        grouped_fold_split(y, g, fold=4, folds=4)


def test_a_tree_argument_is_refused_with_one_line():
    with pytest.raises(ValueError, match="tree: hierviz retrieval no longer adds tree NDCG@20"):
        run_retrieval(_blobs(), "smoke", tree=object(), progress=False, verbose=False)


def test_any_method_runs_over_grouped_folds_with_the_protocol(tmp_path):
    from hierviz.experiments import compare, resolve_config
    from hierviz.features import save_features

    data = _blobs(n=80)
    path = save_features(tmp_path / "f.npz", data)
    (tmp_path / "tree.json").write_text(json.dumps({"root": ["0", "1", "2", "3"]}))
    cfg = resolve_config("quick-ham10000", [
        f"data.path={path}", f"data.tree={tmp_path / 'tree.json'}", "model.encoder=mapper", "methods=hyper-dino",
        "eval.protocol=retrieval-folds", "geometries=poincare", "seeds=2", "train.epochs=1", "train.batch_size=16",
        "eval.projection=pca", f"out={tmp_path / 'o'}",
    ])  # fmt: skip
    res = compare(cfg, progress=False, verbose=False)
    tests = [np.load(r["embeddings"])["y_test"] for r in res.records]
    folds = grouped_folds(data.labels, data.groups, 2, 0)
    assert [len(t) for t in tests] == [len(f) for f in folds] and sum(len(t) for t in tests) == 80  # seed s: fold s
    assert all(r["protocol"] == "retrieval-folds" and 0 <= r["metrics"]["map@20"] <= 1 for r in res.records)


def test_mapper_seeds_are_averaged_within_a_fold_and_paired_against_the_cosine_control(tmp_path):
    """Run seed s is fold s mod 2 and mapper seed s // 2; the tables pair fold means, never seeds."""
    recs = []
    hd = {0: 0.60, 1: 0.44, 2: 0.64, 3: 0.48}  # folds 0, 1 (seeds 0, 1) and again (seeds 2, 3)
    cos = {0: 0.55, 1: 0.42, 2: 0.57, 3: 0.42}
    for seed in range(4):
        lab = ([0, 0, 1, 1], [0, 1])
        recs.append(_record(tmp_path, "PCA(4)", seed, {"map@1": 0.40, "n": 4, "bytes": 8}, lab))
        recs.append(_record(tmp_path, "Hyper-DINO(PCA(4), 32)", seed, {
            "map@1": hd[seed], "n": 4, "bytes": 64, "clip_fraction": 0.0, "fp16_bytes": 64, "fp16_map@1": hd[seed],
        }))  # fmt: skip
        recs.append(_record(tmp_path, "Cosine-mapper(PCA(4), 32)", seed, {"map@1": cos[seed], "n": 4, "bytes": 128}))
    rows = fold_rows(recs, ks=(1,), folds=2)
    hd_rows = [r for r in rows if r["variant"] == "Hyper-DINO(PCA(4), 32)"]
    assert [(r["fold"], r["mapper_seed"]) for r in hd_rows] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    means = {(r["variant"], r["fold"]): r["map@1"] for r in fold_means(rows)}
    assert means[("Hyper-DINO(PCA(4), 32)", 0)] == pytest.approx(0.62)
    assert means[("Cosine-mapper(PCA(4), 32)", 1)] == pytest.approx(0.42)
    s = {(r["variant"], r["storage"]): r for r in summarise(rows, (1,))}
    assert s[("Hyper-DINO(PCA(4), 32)", "fp16")]["folds"] == 2  # the spread is over folds, not runs
    assert s[("Hyper-DINO(PCA(4), 32)", "fp16")]["map@1_mean"] == pytest.approx(0.54)
    md = paired_markdown(rows, metrics=("map@1",), against="cosine")
    # fold differences 0.62 - 0.56 = 6 and 0.46 - 0.42 = 4 points: mean 5, sd 1.414, t(0.975, 1) = 12.706
    # half-width 12.706 * 1.414 / sqrt(2) = 12.71
    assert "| Hyper-DINO(V, 32) − Cosine-mapper(V, 32) |" in md and "| PCA(4) | +5.00 [-7.71, +17.71] |" in md
    assert "over 2 folds (each the mean of 2 mapper seeds)" in md
    with pytest.raises(ValueError, match="against must be 'base' or 'cosine'"):
        paired_markdown(rows, against="sphere")


def test_a_grid_with_mapper_seeds_runs_each_fold_once_per_seed_on_the_same_split(tmp_path):
    data = _blobs()
    cfg = RetrievalConfig(reducers=("pca",), n_grid=(6,), folds=2, mapper_seeds=2, epochs=2, batch_size=32,
                          cosine_control=False, device="cpu")  # fmt: skip
    res = run_retrieval(data, cfg, out=tmp_path, progress=False, verbose=False)
    mapper = [r for r in res["rows"] if r["variant"] == "Hyper-DINO(PCA(6), 32)" and r["storage"] == "fp16"]
    assert sorted((r["fold"], r["mapper_seed"]) for r in mapper) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    base = {(r["fold"], r["mapper_seed"]): r["map@1"] for r in res["rows"] if r["variant"] == "PCA(6)"}
    assert base[(0, 0)] == base[(0, 1)] and base[(1, 0)] == base[(1, 1)]  # one split per fold: the base agrees
    ref = _loop_reference(data, replace(cfg, mapper_seeds=1), 1)  # seed 1 is fold 1, its first mapper seed
    assert {k: base[(1, 0)] for k in ("map@1",)} == pytest.approx({"map@1": ref["base"]["map@1"]}, abs=1e-12)
    hist = [json.loads((tmp_path / "runs" / f"hyper-dino-pca6-32-poincare-s{s}" / "result.json").read_text())["history"]
            for s in (0, 2)]  # fmt: skip
    assert hist[0]["loss"] != hist[1]["loss"]  # fold 0's two mapper seeds: another initialisation and batch order
    assert "each fold the mean of 2 mapper seeds" in (tmp_path / "table2.md").read_text()
    with (tmp_path / "results.csv").open(encoding="utf-8") as f:  # compare's own table: paired by fold, not seed
        assert {(int(r["seed"]), int(r["fold"])) for r in csv.DictReader(f)} == {(0, 0), (1, 1), (2, 0), (3, 1)}
    cfg_json = json.loads((tmp_path / "runs" / "pca6-poincare-s3" / "config.json").read_text())
    assert cfg_json["eval"]["folds"] == 2 and cfg_json["seeds"] == 4
    with pytest.raises(ValueError, match="eval.folds: must be None or an integer >= 2 that divides seeds"):
        run_retrieval(data, cfg, out=tmp_path / "bad", progress=False, verbose=False, overrides=["seeds=3"])
