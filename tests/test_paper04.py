"""Paper 04 (generalised triplets) pieces: the vector-data path and 20news, losses, methods, unseen protocol."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest
import torch

from hierviz.data import ArrayDataset, ContrastiveDataset, EvalTransform, FeatureViews, TransformDataset
from hierviz.data.loaders.newsgroups import load_20news, read_20news_tar, strip_header
from hierviz.models.encoders import ENCODERS, MLPEncoder

GROUPS = [
    "alt.atheism",
    "comp.graphics",
    "comp.os.ms-windows.misc",
    "comp.sys.ibm.pc.hardware",
    "comp.sys.mac.hardware",
    "comp.windows.x",
    "misc.forsale",
    "rec.autos",
    "rec.motorcycles",
    "rec.sport.baseball",
    "rec.sport.hockey",
    "sci.crypt",
    "sci.electronics",
    "sci.med",
    "sci.space",
    "soc.religion.christian",
    "talk.politics.guns",
    "talk.politics.mideast",
    "talk.politics.misc",
    "talk.religion.misc",
]


def make_corpus(path, n_train=6, n_test=2, groups=GROUPS, seed=0):
    """A tiny 20news-bydate tarball: every message has a header naming its group and a body
    of words typical of its group (its tokens) plus shared filler words."""
    rng = np.random.default_rng(seed)
    filler = ["message", "people", "think", "question", "really", "thanks"]
    with tarfile.open(path, "w:gz") as tar:
        for split, n in (("train", n_train), ("test", n_test)):
            for g in groups:
                words = [t for t in g.replace("-", ".").split(".")] + [g.replace(".", "x").replace("-", "")]
                for i in range(n):
                    body = " ".join(rng.choice(words + filler, size=30).tolist())
                    if split == "test" and i == 0 and g == groups[0]:
                        body = "zyzzyvaonlyintest"  # a word the train messages never use
                    text = f"From: someone@x.org\nNewsgroups: {g}\nSubject: headerword\n\n{body}\n"
                    data = text.encode("latin-1")
                    info = tarfile.TarInfo(f"20news-bydate-{split}/{g}/{1000 + i}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    return path


# ------------------------------------------------------------------------------------- vector data
def test_vector_dataset_basics():
    X = np.arange(12, dtype=np.float64).reshape(4, 3)
    ds = ArrayDataset(X, np.array([0, 1, 1, 0]), ["a", "b"], name="v")
    assert ds.is_vector and ds.images.dtype == np.float32 and ds.image_size == (3, 1)
    assert repr(ds) == "ArrayDataset('v', N=4, D=3, C=2)"
    sub = ds.subset([1, 3])
    assert sub.is_vector and np.array_equal(sub.images, X[[1, 3]].astype(np.float32))
    with pytest.raises(ValueError, match="holds feature vectors, not images"):
        ds.resized(8)
    with pytest.raises(ValueError, match="NaN or inf"):
        ArrayDataset(np.array([[np.nan, 1.0]]), np.array([0]), ["a"])
    with pytest.raises(TypeError, match="float \\(N, D\\) feature vectors"):
        ArrayDataset(np.zeros((2, 3), np.int32), np.array([0, 0]), ["a"])
    img = ArrayDataset(np.zeros((2, 4, 4, 3), np.uint8), np.array([0, 0]), ["a"])
    assert not img.is_vector and img.image_size == (4, 4)


def test_feature_views_dropout_and_eval_identity():
    x = np.linspace(1.0, 2.0, 1000).astype(np.float32)
    torch.manual_seed(0)
    v = FeatureViews(0.25)(x)
    assert v.shape == (1000, 1, 1)
    kept = v.flatten() != 0
    assert 0.65 < kept.float().mean() < 0.85  # ~75 % kept
    assert torch.allclose(v.flatten()[kept], torch.from_numpy(x)[kept] / 0.75)  # inverted dropout scale
    assert torch.equal(FeatureViews(0.0)(x).flatten(), torch.from_numpy(x))
    assert torch.equal(EvalTransform(8)(x).flatten(), torch.from_numpy(x))
    with pytest.raises(ValueError, match="p \\(feature dropout\\) must be in \\[0, 1\\)"):
        FeatureViews(1.0)
    with pytest.raises(TypeError, match="1-D float feature vector"):
        FeatureViews()(np.zeros((4, 4, 3), np.uint8))


def test_vector_items_through_datasets_and_mlp():
    ds = ArrayDataset(np.random.default_rng(0).random((5, 12)), np.array([0, 1, 0, 1, 1]), ["a", "b"])
    x, y = ContrastiveDataset(ds, FeatureViews(), views=2)[3]
    assert x.shape == (2, 12, 1, 1) and y == 1
    e, _ = TransformDataset(ds, EvalTransform(8))[0]
    assert torch.allclose(e.flatten(), torch.from_numpy(ds.images[0]))
    enc = ENCODERS.get("mlp")(width=2, small_input=True, pretrained=None)
    assert isinstance(enc, MLPEncoder) and enc.out_dim == 16
    assert enc(torch.zeros(3, 12, 1, 1)).shape == (3, 16)
    with pytest.raises(ValueError, match="pretrained: the 'mlp' encoder"):
        ENCODERS.get("mlp")(width=2, small_input=True, pretrained="w.pt")
    with pytest.raises(ValueError, match="hidden must be a positive integer"):
        MLPEncoder(0)


# ------------------------------------------------------------------------------------- 20news
def test_strip_header():
    assert strip_header("A: b\nC: d\n\nbody\n\nmore") == "body\n\nmore"
    assert strip_header("no blank line") == "no blank line"


def test_20news_loader_on_a_synthetic_corpus(tmp_path):
    make_corpus(tmp_path / "20news-bydate.tar.gz")
    texts, labels, groups, split = read_20news_tar(tmp_path / "20news-bydate.tar.gz")
    assert groups == GROUPS and len(texts) == 20 * 8 and (split == "train").sum() == 120
    assert not any("Newsgroups:" in t or "headerword" in t for t in texts)  # the header (label) is gone
    ds = load_20news(tmp_path, max_features=50)
    assert ds.is_vector and ds.images.shape == (160, 50) and ds.classes == GROUPS
    assert list(ds.official_split[:3]) == ["train"] * 3
    norms = np.linalg.norm(ds.images, axis=1)
    # TF-IDF is fitted on the train messages: the test message made of a test-only word is all zero
    only_test = np.flatnonzero((ds.official_split == "test") & (ds.labels == 0))[0]
    assert norms[only_test] == 0.0
    assert np.allclose(np.delete(norms, only_test), 1.0, atol=1e-5)


def test_20news_loader_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="20news-bydate.tar.gz"):
        load_20news(tmp_path)
    (tmp_path / "20news-bydate.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(ValueError, match="not a readable tar archive"):
        load_20news(tmp_path)
    with tarfile.open(tmp_path / "20news-bydate.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("other/file")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ValueError, match="no message found"):
        load_20news(tmp_path)
    with pytest.raises(ValueError, match="max_features must be a positive integer"):
        load_20news(tmp_path, max_features=0)


def test_20news_tree_binds_to_the_loader(tmp_path):
    from hierviz.data import bind_tree

    make_corpus(tmp_path / "20news-bydate.tar.gz")
    ds, tree = bind_tree(load_20news(tmp_path, max_features=30), "20news")
    assert tree.leaves == GROUPS and tree.height == 3
    assert tree.children("comp") == ["comp.graphics", "comp.os.ms-windows.misc", "comp.sys", "comp.windows.x"]
    assert tree.children("alt") == ["alt.atheism"]


def test_compare_runs_on_a_vector_dataset(tmp_path, monkeypatch, capsys):
    from hierviz.cli import main

    make_corpus(tmp_path / "20news-bydate.tar.gz")
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    out = tmp_path / "out"
    rc = main(
        [
            "compare",
            "--dataset",
            "20news",
            "--encoder",
            "mlp",
            "--width",
            "2",
            "--embed-dim",
            "8",
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            "--seeds",
            "1",
            "--epochs",
            "1",
            "--batch-size",
            "32",
            "--projection",
            "pca",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    import json

    header = json.loads((out / "compare.json").read_text())["header"]
    assert header["Dataset"].startswith("20news: 160 images") and " features" in header["Dataset"], header["Dataset"]
    with np.load(out / "runs" / "supcon-euclidean-s0" / "embeddings.npz") as f:
        assert f["z_test"].shape[1] == 8 and np.isfinite(f["z_test"]).all()
