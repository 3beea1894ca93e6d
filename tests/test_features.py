"""Features .npz (Paper 03 (Hyper-DINO) §2.1): format round trip, errors, scaling + PCA/NCA, export."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA
from sklearn.neighbors import NeighborhoodComponentsAnalysis
from sklearn.preprocessing import StandardScaler

from hierviz.experiments import export_run
from hierviz.features import (
    PAPER_N_GRID,
    FeaturesData,
    export_checkpoint,
    load_features,
    make_reducer,
    reduce_features,
    save_features,
)


def _data(n=40, d=6, seed=0, groups=True):
    g = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = g.normal(size=(n, d)).astype(np.float32) + y[:, None]
    return FeaturesData(
        X,
        y,
        ["a", "b", "c"],
        np.repeat(np.arange(n // 2), 2) if groups else None,
        np.where(np.arange(n) < n // 2, "train", "test"),
        source="test",
    )


def test_round_trip_keeps_every_key(tmp_path):
    f = _data()
    p = save_features(tmp_path / "sub" / "f.npz", f)
    g = load_features(p)
    assert np.array_equal(g.features, f.features) and g.features.dtype == np.float32
    assert np.array_equal(g.labels, f.labels) and g.classes == ["a", "b", "c"]
    assert np.array_equal(g.groups, f.groups) and list(g.split) == list(f.split) and g.source == "test"
    assert g.rows("train").tolist() == list(range(20))


def test_float16_option_halves_the_bytes_and_rounds(tmp_path):
    f = _data(n=200, d=32)
    p32, p16 = save_features(tmp_path / "a.npz", f), save_features(tmp_path / "b.npz", f, float16=True)
    g = load_features(p16)
    assert g.features.dtype == np.float16 and g.features.nbytes == f.features.nbytes // 2
    assert np.allclose(g.features.astype(np.float32), f.features, rtol=1e-3, atol=1e-3)
    assert p16.stat().st_size < p32.stat().st_size


def test_minimal_file_without_optional_keys(tmp_path):
    p = tmp_path / "m.npz"
    np.savez(p, features=np.zeros((3, 2)), labels=np.array([0, 2, 1]))
    g = load_features(p)
    assert g.classes == ["0", "1", "2"] and g.groups is None and g.split is None
    with pytest.raises(ValueError, match="no 'split'"):
        g.rows("train")


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        ({"labels": np.zeros(3, int)}, "no array 'features'"),
        ({"features": np.zeros((3, 2)), "labels": np.zeros(2, int)}, r"'labels' must have shape \(3,\)"),
        ({"features": np.zeros((3, 2)), "labels": np.zeros(3)}, "'labels' must be integers"),
        ({"features": np.full((3, 2), np.nan), "labels": np.zeros(3, int)}, "6 NaN/inf values"),
        ({"features": np.zeros(3), "labels": np.zeros(3, int)}, r"non-empty \(N, D\) array"),
        (
            {"features": np.zeros((2, 2)), "labels": np.array([0, 3]), "classes": np.array(["a", "b"])},
            "'labels' reaches 3 but 'classes' names 2",
        ),
        (
            {"features": np.zeros((2, 2)), "labels": np.array([0, 1]), "split": np.array(["train", "dev"])},
            r"unknown names \['dev'\]",
        ),
    ],
)
def test_bad_files_are_one_line_naming_the_file(tmp_path, arrays, match):
    p = tmp_path / "bad.npz"
    np.savez(p, **arrays)
    with pytest.raises(ValueError, match=match) as exc:
        load_features(p)
    assert str(p) in str(exc.value) and "\n" not in str(exc.value)


def test_missing_and_junk_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_features(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"junk")
    with pytest.raises(ValueError, match="not an .npz archive"):
        load_features(tmp_path / "junk.npz")


def test_pca_matches_scikit_learn_by_hand():
    f = _data(n=60, d=8)
    tr, te = reduce_features(f.features[:40], f.labels[:40], [f.features[40:]], method="pca", n_components=3)
    sc = StandardScaler().fit(f.features[:40])
    pca = PCA(3, random_state=0).fit(sc.transform(f.features[:40]))
    assert np.allclose(te, pca.transform(sc.transform(f.features[40:])), atol=1e-5)
    assert np.allclose(tr, pca.transform(sc.transform(f.features[:40])), atol=1e-5)


def test_nca_matches_scikit_learn_and_is_supervised():
    f = _data(n=60, d=8)
    (tr,) = reduce_features(f.features, f.labels, method="nca", n_components=2)
    x = f.features.astype(np.float64)  # reduce_features works in float64
    sc = StandardScaler().fit(x)
    nca = NeighborhoodComponentsAnalysis(2, random_state=0, max_iter=50).fit(sc.transform(x), f.labels)
    assert np.allclose(tr, nca.transform(sc.transform(x)), rtol=1e-5, atol=1e-4)


def test_float16_rounding_scaled_only_and_component_cap():
    f = _data(n=30, d=5)
    (a,) = reduce_features(f.features, f.labels, method="scaled", float16=True)
    assert a.dtype == np.float32 and np.array_equal(a, a.astype(np.float16).astype(np.float32))
    assert np.allclose(a.mean(0), 0, atol=1e-2)
    (b,) = reduce_features(f.features, f.labels, method="pca", n_components=384)  # cut to min(n, D)
    assert b.shape == (30, 5)
    assert PAPER_N_GRID[0] == 5 and PAPER_N_GRID[-1] == 384 and len(PAPER_N_GRID) == 17


def test_reducer_errors():
    with pytest.raises(ValueError, match=r"method must be one of \['pca', 'nca', 'scaled'\]"):
        make_reducer("lda", 3)
    with pytest.raises(ValueError, match="n_components must be a positive integer for 'pca'"):
        make_reducer("pca", 0)
    with pytest.raises(ValueError, match=r"others\[0\] has shape"):
        reduce_features(np.zeros((4, 3)), np.zeros(4, int), [np.zeros((2, 2))], method="pca", n_components=2)


def test_export_from_a_run_matches_the_runs_encoder(tmp_path):
    from hierviz.data import TransformDataset, eval_transform
    from hierviz.experiments import compare, resolve_config
    from hierviz.models import build_encoder
    from hierviz.training import load_checkpoint

    cfg = resolve_config(
        "quick-ham10000",
        [
            "data.limit=60",
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
    f = export_run(tmp_path / "run")  # the compare folder holding one run
    assert f.n == 60 and f.dim == 32 and f.groups is not None  # SmallCNN(width 4): 8·width features
    assert set(np.unique(f.split)) == {"train", "val", "test"}
    run = tmp_path / "run" / "runs" / "supcon-euclidean-s0"
    enc = build_encoder("small_cnn", width=4)
    state = load_checkpoint(run / "checkpoint.pt")["model"]
    enc.load_state_dict({k[8:]: v for k, v in state.items() if k.startswith("encoder.")})
    enc.eval()
    from hierviz.experiments import load_data

    ds, _, _ = load_data(cfg)
    x0 = TransformDataset(ds, eval_transform(16))[0][0][None]
    with torch.no_grad():
        assert np.allclose(f.features[0], enc(x0).numpy()[0], atol=1e-5)


def test_export_run_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        export_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        export_run(tmp_path / "empty")
    for name in ("a", "b"):
        d = tmp_path / "two" / "runs" / name
        d.mkdir(parents=True)
        (d / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(ValueError, match=r"holds 2 runs \(a, b\)"):
        export_run(tmp_path / "two")


def test_export_from_a_local_torchvision_checkpoint(tmp_path):
    import torchvision

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None)
    ckpt = tmp_path / "r18.pt"
    torch.save(net.state_dict(), ckpt)
    f = export_checkpoint(ckpt, data="ham10000-sample", encoder="resnet18", image_size=32, batch_size=512)
    assert f.dim == 512 and f.n == len(f.labels) and f.groups is not None
    net.fc = torch.nn.Identity()
    net.eval()
    from hierviz.data import TransformDataset, eval_transform, load_dataset

    x0 = TransformDataset(load_dataset("ham10000-sample"), eval_transform(32))[0][0][None]
    with torch.no_grad():
        assert np.allclose(f.features[0], net(x0).numpy()[0], atol=1e-4)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        export_checkpoint(tmp_path / "missing.pt")
