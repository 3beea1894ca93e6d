"""Hyper-DINO's mapper as a method of ``compare`` on a features file.

A synthetic features ``.npz`` (4 overlapping classes under a 2-level tree) runs through
``hierviz.experiments.compare`` with the ``mapper`` encoder, the ``hyper-dino`` and
``cosine-mapper`` methods and SupCon, evaluated by the retrieval protocols; the recorded
MAP@k are recomputed from the saved embeddings with the metric functions, and the chance
row from the saved labels. The mapper's head has no hard cap.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from hierviz.features import FeaturesData, save_features
from hierviz.geometry import PoincareBall
from hierviz.metrics import map_at_k, precision_at_k, r_precision
from hierviz.metrics.baselines import random_ranking_scores


def _features(tmp_path, n=160, d=10, spread=1.2, seed=0):
    g = np.random.default_rng(seed)
    y = np.arange(n) % 4
    X = (spread * g.normal(size=(4, d))[y] + g.normal(size=(n, d))).astype(np.float32)
    path = save_features(
        tmp_path / "feats.npz", FeaturesData(X, y, classes=["a1", "a2", "b1", "b2"], groups=np.arange(n) // 2)
    )
    tree = tmp_path / "tree.json"
    tree.write_text(json.dumps({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}}), encoding="utf-8")
    return path, tree, X, y


def test_a_features_file_loads_as_a_vector_dataset(tmp_path):
    from hierviz.data import load_dataset

    path, _, X, y = _features(tmp_path)
    ds = load_dataset(str(path))
    assert ds.is_vector and ds.images.shape == X.shape and ds.classes == ["a1", "a2", "b1", "b2"]
    np.testing.assert_array_equal(ds.labels, y)
    np.testing.assert_array_equal(ds.images, X)
    assert ds.groups is not None and len(np.unique(ds.groups)) == len(y) // 2


def test_compare_trains_the_mapper_and_scores_retrieval_with_a_chance_row(tmp_path):
    from hierviz.experiments import compare, resolve_config

    path, tree, _, _ = _features(tmp_path)
    sets = [f"data.path={path}", f"data.tree={tree}", "model.encoder=mapper", "model.width=4", "model.embed_dim=8"]
    sets += ["methods=hyper-dino,cosine-mapper,supcon", "geometries=poincare", "seeds=1", "eval.protocol=retrieval"]
    sets += ["train.epochs=2", "train.batch_size=32", "train.threads=1", "eval.projection=pca", f"out={tmp_path / 'o'}"]
    result = compare(resolve_config("quick-ham10000", sets), progress=False, verbose=False)
    recs = {r["method"]: r for r in result.records}
    # the cosine control keeps its own ranking under --protocol retrieval
    assert {m: r["protocol"] for m, r in recs.items()} == {
        "hyper-dino": "retrieval",
        "cosine-mapper": "retrieval-cosine",
        "supcon": "retrieval",
    }
    assert len(recs["hyper-dino"]["history"]["loss"]) == 2  # trained by training.fit, one mean per epoch
    ball = PoincareBall(1.0)
    for method, rec in recs.items():
        a = result.arrays(method, "poincare")
        q, g = torch.as_tensor(a["z_test"], dtype=torch.float64), torch.as_tensor(a["z_train"], dtype=torch.float64)
        if rec["protocol"] == "retrieval-cosine":
            qd, gd = (torch.nn.functional.normalize(ball.logmap0(t), dim=-1) for t in (q, g))
            D = (1 - qd @ gd.T).numpy()
        else:
            D = ball.pairwise_dist(q, g).numpy()
        yq, yg = a["y_test"], a["y_train"]
        m = rec["metrics"]
        for k in (1, 5, 10, 20):
            assert m[f"map@{k}"] == pytest.approx(map_at_k(D, yq, yg, k=k), abs=1e-9), (method, k)
        assert m["p@1"] == pytest.approx(precision_at_k(D, yq, yg, k=1), abs=1e-9)
        assert m["r_precision"] == pytest.approx(r_precision(D, yq, yg), abs=1e-9)
        assert 0.3 < m["map@20"] <= 1.0  # 4 overlapping classes: above chance (about 0.1), learnt
    a = result.arrays("supcon", "poincare")
    chance = random_ranking_scores(a["y_test"], a["y_train"], (1, 5, 10, 20))
    with open(tmp_path / "o" / "baselines.csv", encoding="utf-8") as fh:
        row = next(csv.DictReader(fh))
    assert row["baseline"] == "chance"
    assert {k: float(row[k]) for k in chance} == pytest.approx(chance, abs=1e-5)
    md = result.markdown
    assert "| *Random ranking (chance)* | " + f"{chance['map@1']:.3f}" in md
    assert "MAP@20 (Poincaré)" in md and "| Cosine mapper (control) |" in md and "| Hyper-DINO (HCL mapper) |" in md


def test_the_mapper_head_has_no_hard_cap(tmp_path):
    """Features of norm ~100 put every row at the 0.2 mapper's cap; the HyperbolicHead starts at radius 1."""
    from hierviz.evaluation import MapperModel, fit_mapper
    from hierviz.metrics.radius import origin_distance
    from hierviz.models import HyperbolicMapper

    _, _, X, y = _features(tmp_path)
    X = 100 * X
    torch.manual_seed(0)
    old = HyperbolicMapper(X.shape[1], 8).eval()
    with torch.no_grad():
        old(torch.as_tensor(X))
    assert old.clip_fraction == 1.0  # the hard cap: every row, no radial gradient back
    torch.manual_seed(0)
    new = MapperModel(X.shape[1], 8).train()
    z = new(torch.as_tensor(X)).detach()
    assert float(origin_distance(z, new.geometry).median()) == pytest.approx(1.0, abs=1e-4)  # data-initialised
    mapper, hist = fit_mapper(X, y, dim_out=8, epochs=3, batch_size=32, seed=0)
    with torch.no_grad():
        h = mapper(torch.as_tensor(X))
    r = origin_distance(h, mapper.geometry)
    assert mapper.clip_fraction == 0.0 and float(r.max()) < mapper.max_radius - 0.5 and hist[-1] < hist[0]


def test_fit_with_adam_and_a_constant_lr_equals_a_hand_written_adam_loop():
    """The options paper 03's mapper needs from the one loop: Adam (L2 decay) and a constant learning rate."""
    from torch.utils.data import TensorDataset

    from hierviz.training import TrainConfig, fit

    class Quadratic(torch.nn.Module):  # mean over rows: the batch order of the full batch does not matter
        def forward(self, z, y):
            loss = (z - y.double()[:, None]).pow(2).mean()
            return loss, {"q": loss.detach()}

    class Lin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 2).double()

        def forward(self, x):
            return {"z": self.lin(x)}

    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(16, 3, generator=g, dtype=torch.float64), torch.arange(16) % 3
    torch.manual_seed(0)
    model = Lin()
    ref = Lin()
    ref.load_state_dict(model.state_dict())
    cfg = TrainConfig(epochs=5, batch_size=16, lr_backbone=0.05, lr_head=0.05, weight_decay=0.1, warmup_epochs=0,
                      ema_decay=None, device="cpu", amp=False, progress=False, optimizer="adam", schedule="constant")  # fmt: skip
    res = fit(cfg, model, Quadratic(), TensorDataset(X, Y))
    opt = torch.optim.Adam(ref.parameters(), lr=0.05, weight_decay=0.1)
    for _ in range(5):
        loss, _ = Quadratic()(ref(X)["z"], Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):  # fit reads z in float32
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    assert res.history["lr_head"] == [0.05] * 5  # constant: no warmup, no decay
    torch.manual_seed(0)
    decoupled = fit(replace(cfg, optimizer="adamw"), Lin(), Quadratic(), TensorDataset(X, Y)).model
    gap = max(
        float((p - q).detach().abs().max()) for p, q in zip(decoupled.parameters(), ref.parameters(), strict=True)
    )
    assert gap > 1e-4  # AdamW's decoupled decay is another optimiser: the test tells them apart
    with pytest.raises(ValueError, match="optimizer must be one of"):
        TrainConfig(optimizer="sgd")
    with pytest.raises(ValueError, match="schedule must be one of"):
        TrainConfig(schedule="cosine")


def test_register_features_gives_a_named_vector_dataset(tmp_path):
    from hierviz.data import DATASETS, DEFAULT_TREE, load_dataset
    from hierviz.experiments.config import default_encoder
    from hierviz.retrieval import register_features

    path, tree, X, y = _features(tmp_path)
    assert register_features("Test-Feats", path, default_tree=str(tree)) == "test-feats"
    try:
        assert DATASETS["test-feats"].inputs == "vectors" and DEFAULT_TREE["test-feats"] == str(tree)
        assert default_encoder("test-feats", "small_cnn") == "mlp"  # vectors: the MLP unless an encoder is named
        ds = load_dataset("test-feats")
        np.testing.assert_array_equal(ds.images, X)
        np.testing.assert_array_equal(ds.labels, y)
        with pytest.raises(ValueError, match="already"):
            register_features("test-feats", path)
    finally:
        DATASETS.unregister("test-feats")
    with pytest.raises(FileNotFoundError, match="path: .*missing.npz is not a file"):
        register_features("test-feats", tmp_path / "missing.npz")
