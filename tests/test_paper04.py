"""Paper 04 (Generalised triplets) pieces: the vector-data path and 20news, losses, methods, unseen protocol."""

from __future__ import annotations

import io
import json
import os
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


def test_20news_loader_reads_an_unchanged_tarball_once(tmp_path, monkeypatch):
    import hierviz.data.loaders.newsgroups as ng

    path = make_corpus(tmp_path / "20news-bydate.tar.gz")
    reads = []
    real = ng.read_20news_tar
    monkeypatch.setattr(ng, "read_20news_tar", lambda p: reads.append(p) or real(p))
    ng._tarball_tfidf.cache_clear()
    a = load_20news(tmp_path, max_features=50)
    a.images[:] = 0.0  # each caller owns its arrays: the cache keeps its own
    a.labels[:] = 0
    b = load_20news(tmp_path, max_features=50)
    assert len(reads) == 1 and b.images.any() and set(b.labels.tolist()) == set(range(20))
    assert load_20news(tmp_path, max_features=40).images.shape == (160, 40) and len(reads) == 2  # another D
    make_corpus(path, seed=1)  # the tarball replaced (another modification time): read again
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    c = load_20news(tmp_path, max_features=50)
    assert len(reads) == 3 and not np.array_equal(b.images, c.images)


def test_20news_tfidf_is_cached_on_disk_for_the_next_process(tmp_path, monkeypatch):
    import hierviz.data.loaders.newsgroups as ng

    make_corpus(tmp_path / "20news-bydate.tar.gz")
    reads = []
    real = ng.read_20news_tar
    monkeypatch.setattr(ng, "read_20news_tar", lambda p: reads.append(p) or real(p))
    monkeypatch.setenv("HIERVIZ_CACHE", "off")
    ng._tarball_tfidf.cache_clear()
    plain = load_20news(tmp_path, max_features=50)
    cache = tmp_path / "cache"
    monkeypatch.setenv("HIERVIZ_CACHE", str(cache))
    ng._tarball_tfidf.cache_clear()
    first = load_20news(tmp_path, max_features=50)
    (file,) = cache.iterdir()  # one file, written atomically (no temporary left)
    assert file.name.startswith("20news-tfidf-") and file.suffix == ".npz" and len(reads) == 2
    ng._tarball_tfidf.cache_clear()  # as in a new process: only the file is left
    again = load_20news(tmp_path, max_features=50)
    assert len(reads) == 2  # read from the cache file, not the tarball
    for ds in (first, again):
        assert np.array_equal(ds.images, plain.images) and np.array_equal(ds.labels, plain.labels)
        assert ds.classes == plain.classes and np.array_equal(ds.official_split, plain.official_split)
    file.write_bytes(b"damaged")  # a broken cache file is rebuilt
    ng._tarball_tfidf.cache_clear()
    assert np.array_equal(load_20news(tmp_path, max_features=50).images, plain.images) and len(reads) == 3
    assert file.stat().st_size > 1000
    (tmp_path / "blocked").write_text("a file where the cache folder would be")
    monkeypatch.setenv("HIERVIZ_CACHE", str(tmp_path / "blocked" / "cache"))  # unwritable: passed over
    ng._tarball_tfidf.cache_clear()
    assert np.array_equal(load_20news(tmp_path, max_features=50).images, plain.images) and len(reads) == 4
    ng._tarball_tfidf.cache_clear()


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
    assert header["Dataset"].startswith("20news: 160 samples") and " features" in header["Dataset"], header["Dataset"]
    assert header["Split"].startswith("grouped by sample,") and "input features" in header["Model"], header
    assert " px" not in header["Model"] and "images" not in header["Dataset"]
    with np.load(out / "runs" / "supcon-euclidean-s0" / "embeddings.npz") as f:
        assert f["z_test"].shape[1] == 8 and np.isfinite(f["z_test"]).all()


# ------------------------------------------------------------------------------------- losses
from hierviz.geometry import get_geometry  # noqa: E402
from hierviz.hierarchy import LabelTree  # noqa: E402
from hierviz.losses import BinaryLoss, LeafLoss, PerLevelLoss, TripletLoss  # noqa: E402
from hierviz.losses.hier_cls import binary_targets, per_level_targets, pl_levels  # noqa: E402
from hierviz.metrics.ranking import mnr_levels  # noqa: E402

# unbalanced: w is a shallow leaf (depth 2) next to the depth-3 leaves
TREE4 = LabelTree.from_nested({"r": {"a": {"a1": ["x", "y"], "w": None}, "b": {"b1": ["z"], "b2": ["v", "u"]}}})


def _loop_triplet(z, margin, dist):
    total, n = 0.0, 0
    for i in range(z.shape[0] // 3):
        for v in range(z.shape[1]):
            a, p, q = z[3 * i, v], z[3 * i + 1, v], z[3 * i + 2, v]
            total += max(0.0, float(dist(a, p) - dist(a, q)) + margin)
            n += 1
    return total / n


def test_triplet_loss_equals_the_loop_for_cosine_and_geometry():
    g = torch.Generator().manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(12, 2, 5, generator=g, dtype=torch.float64), dim=-1)
    y = torch.zeros(12, dtype=torch.long)
    cos = lambda a, b: -float(a @ b / (a.norm() * b.norm()))  # noqa: E731
    assert float(TripletLoss(margin=0.3)(z, y)) == pytest.approx(_loop_triplet(z, 0.3, cos), abs=1e-12)
    ball = get_geometry("poincare")
    zb = ball.expmap0(0.5 * torch.randn(12, 2, 5, generator=g, dtype=torch.float64))
    want = _loop_triplet(zb, 0.2, lambda a, b: float(ball.dist(a, b)))
    got = TripletLoss(None, ball, margin=0.2, distance="geometry")(zb, y)
    assert float(got) == pytest.approx(want, rel=1e-5)


def test_triplet_loss_hand_case_and_limits():
    a, p, n = [1.0, 0.0], [0.8, 0.6], [0.6, 0.8]
    z = torch.tensor([[a], [p], [n]])
    assert float(TripletLoss(margin=0.3)(z)) == pytest.approx(0.1)  # -0.8 + 0.6 + 0.3
    assert float(TripletLoss(margin=0.0)(z)) == 0.0  # the positive is closer: no loss without margin
    assert float(TripletLoss(margin=0.3)(torch.tensor([[a], [n], [p]]))) == pytest.approx(0.5)  # swapped


def test_triplet_gradcheck():
    z = torch.nn.functional.normalize(torch.randn(6, 1, 4, dtype=torch.float64), dim=-1).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: TripletLoss(margin=2.0)(t), (z,))


def test_targets_from_the_tree():
    targets, classes = per_level_targets(TREE4)
    names = [[TREE4.nodes[i] for i in c] for c in classes]
    assert pl_levels(TREE4) == mnr_levels(TREE4) == [1, 2, 3]
    assert names[0] == ["a", "b"] and set(names[1]) == {"a1", "w", "b1", "b2"}
    assert set(names[2]) == set(TREE4.leaves)  # the deepest level holds every leaf (w joins it)
    w = TREE4.leaf_index["w"]
    assert names[1][targets[w, 1]] == "w" and names[2][targets[w, 2]] == "w"
    B = binary_targets(TREE4)
    non_root = [n for n in TREE4.nodes if n != TREE4.root]
    x = TREE4.leaf_index["x"]
    assert {non_root[j] for j in np.flatnonzero(B[x].numpy())} == {"a", "a1", "x"}


def _loop_per_level(logits, y, targets, classes):
    sizes = [len(c) for c in classes]
    total = 0.0
    for i in range(len(y)):
        start = 0
        for j, n in enumerate(sizes):
            row = logits[i, start : start + n]
            total += float(-torch.log_softmax(row, 0)[targets[y[i], j]])
            start += n
    return total / len(y)


def _loop_binary(logits, y, B):
    total = 0.0
    for i in range(len(y)):
        for k in range(B.shape[1]):
            p = torch.sigmoid(logits[i, k])
            t = B[y[i], k]
            total += float(-(t * torch.log(p) + (1 - t) * torch.log(1 - p)))
    return total / (len(y) * B.shape[1])


@torch.no_grad()
def test_classification_losses_equal_their_loops():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(5, 2, 6, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 2, 4, 5, 3])
    yy = y.repeat_interleave(2)
    flat = z.reshape(10, 6)
    pl = PerLevelLoss(TREE4).double()
    got = float(pl(z, y))
    targets, classes = per_level_targets(TREE4)
    assert got == pytest.approx(_loop_per_level(pl.logits(flat), yy, targets, classes), abs=1e-10)
    b = BinaryLoss(TREE4).double()
    assert float(b(z, y)) == pytest.approx(_loop_binary(b.logits(flat), yy, binary_targets(TREE4)), abs=1e-10)
    leaf = LeafLoss(TREE4).double()
    val = float(leaf(z, y))
    lg = leaf.logits(flat)
    want = float(np.mean([-torch.log_softmax(lg[i], 0)[yy[i]] for i in range(10)]))
    assert val == pytest.approx(want, abs=1e-10)


@torch.no_grad()
def test_per_level_on_a_flat_tree_is_the_leaf_loss():
    flat = LabelTree.from_nested({"r": ["p", "q", "s"]})
    z = torch.randn(4, 1, 3, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 1])
    pl, leaf = PerLevelLoss(flat).double(), LeafLoss(flat).double()
    pl(z, y), leaf(z, y)  # fix the input sizes
    leaf.head.load_state_dict(pl.head.state_dict())
    assert float(pl(z, y)) == pytest.approx(float(leaf(z, y)), abs=1e-12)


@pytest.mark.parametrize("cls", [LeafLoss, PerLevelLoss, BinaryLoss])
def test_classification_gradcheck(cls):
    loss = cls(TREE4).double()
    z = torch.randn(4, 1, 5, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 3, 5, 2])
    loss(z, y)
    assert torch.autograd.gradcheck(lambda t: loss(t, y), (z,))


def test_hyperbolic_heads_read_the_tangent_space():
    ball = get_geometry("poincare")
    loss = PerLevelLoss(TREE4, ball)
    z = ball.expmap0(0.3 * torch.randn(4, 1, 5))
    assert torch.isfinite(loss(z, torch.tensor([0, 1, 2, 3])))
    assert torch.allclose(loss.logits(z[:, 0]), loss.head(ball.logmap0(z[:, 0])), atol=1e-5)


def test_loss_errors():
    with pytest.raises(ValueError, match="not a multiple of 3"):
        TripletLoss()(torch.randn(4, 1, 3))
    with pytest.raises(ValueError, match="margin must be >= 0"):
        TripletLoss(margin=-0.1)
    with pytest.raises(ValueError, match="distance must be one of"):
        TripletLoss(distance="l1")
    with pytest.raises(ValueError, match="needs a geometry"):
        TripletLoss(distance="geometry")
    with pytest.raises(ValueError, match="labels has values outside"):
        LeafLoss(TREE4)(torch.randn(2, 1, 3), torch.tensor([0, 9]))
    with pytest.raises(ValueError, match="no level with more than one node"):
        PerLevelLoss(LabelTree.from_nested({"r": {"a": ["x"]}}))


# ------------------------------------------------------------------------------------- class weights (§III-C)
def _weighted_ce(logits, t, w):
    """Loop reference: sum_i w[t_i] * nll_i / sum_i w[t_i]."""
    num = den = 0.0
    for i in range(len(t)):
        wi = float(w[int(t[i])])
        num += wi * float(-torch.log_softmax(logits[i], 0)[int(t[i])])
        den += wi
    return num / den


@torch.no_grad()
def test_inverse_class_weights_equal_their_loops():
    g = torch.Generator().manual_seed(2)
    y = torch.tensor([0, 0, 0, 2, 4, 5, 5, 3])  # unbalanced batch; leaf 1 absent
    z = torch.randn(len(y), 1, 6, generator=g, dtype=torch.float64)
    n = torch.bincount(y, minlength=TREE4.num_leaves).double()  # the first batch: counts = this batch
    flat = z[:, 0]
    # L: w_c = 1 / n_c
    leaf = LeafLoss(TREE4, class_weight="inverse").double()
    got = float(leaf(z, y))
    assert leaf.leaf_counts.tolist() == n.tolist()
    w = [1.0 / c if c > 0 else 0.0 for c in n.tolist()]
    assert got == pytest.approx(_weighted_ce(leaf.logits(flat), y, w), abs=1e-10)
    # balanced by construction: the mean over present classes of each class's mean loss
    nll = -torch.log_softmax(leaf.logits(flat), 1)[torch.arange(len(y)), y]
    per_class = [float(nll[y == c].mean()) for c in torch.unique(y)]
    assert got == pytest.approx(float(np.mean(per_class)), abs=1e-10)
    # PL: per level, a class's count is the sum of its leaves' counts
    pl = PerLevelLoss(TREE4, class_weight="inverse").double()
    got = float(pl(z, y))
    targets, classes = per_level_targets(TREE4)
    lg, want, start = pl.logits(flat), 0.0, 0
    for j, cls in enumerate(classes):
        cnt = [
            float(sum(n[leaf] for leaf in range(TREE4.num_leaves) if targets[leaf, j] == k)) for k in range(len(cls))
        ]
        wj = [1.0 / c if c > 0 else 0.0 for c in cnt]
        want += _weighted_ce(lg[:, start : start + len(cls)], targets[y, j], wj)
        start += len(cls)
    assert got == pytest.approx(want, abs=1e-10)
    # B: positives of node j weigh n-_j / n+_j
    b = BinaryLoss(TREE4, class_weight="inverse").double()
    got = float(b(z, y))
    B = binary_targets(TREE4).double()
    lg, total = b.logits(flat), 0.0
    for k in range(B.shape[1]):
        pos = float(sum(n[leaf] for leaf in range(TREE4.num_leaves) if B[leaf, k] == 1))
        pw = (float(n.sum()) - pos) / pos if pos > 0 else 1.0
        for i in range(len(y)):
            p, t = torch.sigmoid(lg[i, k]), B[y[i], k]
            total += float(-(pw * t * torch.log(p) + (1 - t) * torch.log(1 - p)))
    assert got == pytest.approx(total / (len(y) * B.shape[1]), abs=1e-10)


@torch.no_grad()
def test_class_weights_follow_the_running_sampling_frequency():
    y1, y2 = torch.tensor([0, 0, 1]), torch.tensor([1, 1, 1, 2])
    loss = LeafLoss(TREE4, class_weight="inverse").double()
    loss(torch.randn(3, 1, 4, dtype=torch.float64), y1)
    loss(torch.randn(4, 1, 4, dtype=torch.float64), y2)
    assert loss.leaf_counts[:3].tolist() == [2.0, 4.0, 1.0] and float(loss.leaf_counts.sum()) == 7
    assert "leaf_counts" in loss.state_dict()  # resumed with the checkpoint
    loss.eval()  # evaluation does not count
    loss(torch.randn(4, 1, 4, dtype=torch.float64), y2)
    assert float(loss.leaf_counts.sum()) == 7
    # a class twice as frequent weighs half: 2 samples of leaf 0 vs 4 of leaf 1 -> equal total weight
    z = torch.randn(6, 1, 4, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 1, 1])
    nll = -torch.log_softmax(loss.logits(z[:, 0]), 1)[torch.arange(6), y]
    want = 0.5 * float(nll[:2].mean()) + 0.5 * float(nll[2:].mean())
    assert float(loss(z, y)) == pytest.approx(want, abs=1e-10)
    # "none" keeps no counts and equals the plain mean; uniform counts equal "none"
    plain = LeafLoss(TREE4).double()
    assert "leaf_counts" not in dict(plain.named_buffers())
    plain(z, y)
    plain.head.load_state_dict(loss.head.state_dict())
    loss.leaf_counts.fill_(5.0)
    assert float(loss(z, y)) == pytest.approx(float(plain(z, y)), abs=1e-12)
    pl = PerLevelLoss(TREE4, class_weight="inverse")
    w = pl.level_weights(torch.tensor([1.0, 3.0, 0.0, 2.0, 2.0, 4.0], dtype=torch.float64))
    assert w.shape == pl.mask.shape and bool((w[~pl.mask] == 0).all())
    assert float(BinaryLoss(TREE4, class_weight="inverse").pos_weight(torch.zeros(6, dtype=torch.float64))[0]) == 1


@pytest.mark.parametrize("cls", [LeafLoss, PerLevelLoss, BinaryLoss])
def test_class_weighted_gradcheck_and_errors(cls):
    loss = cls(TREE4, class_weight="inverse").double()
    z = torch.randn(5, 1, 5, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 3, 5, 5, 2])
    loss(z, y)
    loss.eval()  # counts fixed during gradcheck's repeated calls
    assert torch.autograd.gradcheck(lambda t: loss(t, y), (z,))
    with pytest.raises(ValueError, match="class_weight must be one of"):
        cls(TREE4, class_weight="balanced")
    assert cls(TREE4, class_weight=None).class_weight == "none"  # --set loss.heads.class_weight=none reads as null


def test_class_weight_is_a_method_hyperparameter():
    from hierviz.methods import build_objective, get_method

    assert "heads.class_weight" in get_method("t+pl").hparams
    assert "heads.class_weight" not in get_method("t").hparams
    obj = build_objective("t+pl+b", TREE4, "euclidean", class_weight="inverse")
    assert obj.term("pl").class_weight == obj.term("b").class_weight == "inverse"
    assert build_objective("l", TREE4, "euclidean").term("l").class_weight == "none"


# ------------------------------------------------------------------------------------- methods
PAPER04 = ["l", "pl", "b", "t", "t+l", "t+pl", "t+b", "pl+b", "t+pl+b"]


def test_methods_are_registered_with_sampler_and_protocol():
    from hierviz.methods import build_objective, get_method

    z = torch.nn.functional.normalize(torch.randn(6, 1, 4), dim=-1)
    y = torch.tensor([0, 1, 5, 2, 3, 4])
    for name in PAPER04:
        m = get_method(name)
        assert m.needs.sampler == "tree-triplet" and m.needs.views == 1 and m.protocol == "unseen"
        obj = build_objective(name, TREE4, "euclidean", **{"triplet.margin": 0.5})
        loss, terms = obj(z, y)
        want = {"t", "l", "pl", "b"} & set(name.split("+"))
        assert set(terms) == want and float(loss.detach()) == pytest.approx(sum(float(v) for v in terms.values()))
        if "t" in want:
            assert obj.term("t").margin == 0.5
    assert get_method("t+pl").display_name == "T+PL"


# ------------------------------------------------------------------------------------- unseen protocol
def test_unseen_split_rules():
    from hierviz.evaluation.unseen import unseen_split

    counts = [30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 5, 9]  # the last two leaves are rare
    y = np.repeat(np.arange(12), counts)
    held = []
    for fold in range(5):
        s = unseen_split(y, num_leaves=12, seed=3, fold=fold)
        un = set(s["unseen_leaves"].tolist())
        assert {10, 11} <= un and len(un - {10, 11}) == 2  # 10 common leaves / 5 folds
        held.append(un - {10, 11})
        assert not set(y[s["train"]]) & un  # training never sees an unseen leaf
        assert set(y[s["predict"]]) == un
        assert set(s["predict"]) <= set(s["test"]) and set(s["predict"]) <= set(s["val"])
        seen_test = np.setdiff1d(s["test"], s["predict"])
        assert abs(len(seen_test) - 0.1 * (len(y) - len(s["predict"]))) <= 8  # ~8:1:1 within seen leaves
        assert not set(s["train"]) & set(s["test"])
    assert set().union(*held) == set(range(10)) and sum(len(h) for h in held) == 10  # 5-fold rotation
    with pytest.raises(ValueError, match="fold\\) must be in \\[0, 4\\]"):
        unseen_split(y, num_leaves=12, fold=5)


def test_lsa_accuracies_hand_case():
    from hierviz.evaluation.unseen import lsa_accuracies

    # seen: x, z, v, u; unseen: y (LSA a1), w (LSA a: a1 has x), b1's z seen
    seen = [TREE4.leaf_index[n] for n in ("x", "z", "v", "u")]
    L = TREE4.leaf_index
    true = [L["y"], L["y"], L["w"], L["w"]]
    pred = [L["x"], L["z"], L["x"], L["v"]]  # right, wrong, right (x under a), wrong
    ni = TREE4.node_index
    aware = [ni["a1"], ni["a1"], ni["b"], ni["a"]]  # right, right, wrong, right
    r = lsa_accuracies(pred, true, seen, TREE4, aware_pred=aware)
    assert [TREE4.nodes[i] for i in r["lsa"]] == ["a1", "a1", "a", "a"]
    assert r["acc_blind"] == 0.5 and r["acc_aware"] == 0.75


def test_unseen_protocol_on_a_toy_model():
    from hierviz.evaluation import EvalContext
    from hierviz.evaluation.unseen import UnseenRecord, unseen_protocol

    rng = np.random.default_rng(0)
    C = TREE4.num_leaves
    centres = rng.normal(size=(C, 8)) * 3
    y = np.repeat(np.arange(C), 12)
    X = (centres[y] + rng.normal(size=(len(y), 8))).astype(np.float32)
    ds = ArrayDataset(X, y, TREE4.leaves)
    unseen = np.isin(y, [TREE4.leaf_index["y"], TREE4.leaf_index["u"]])
    idx = np.arange(len(y))
    train, test = ds.subset(idx[~unseen & (idx % 4 != 0)]), ds.subset(idx[unseen | (idx % 4 == 0)])

    class Identity(torch.nn.Module):  # "embeds" the vector itself, normalised
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def embed(self, x, use="z"):
            return torch.nn.functional.normalize(x.flatten(1), dim=-1)

    geo = get_geometry("euclidean")
    rec = unseen_protocol(EvalContext(model=Identity(), train_data=train, test_data=test, tree=TREE4, geometry=geo,
                                      image_size=8))  # fmt: skip
    assert isinstance(rec, UnseenRecord)
    m = rec.metrics
    # well separated clusters: perfect leaf F1; 3 test samples per leaf, so at most 2 of the top 5 match
    assert m["leaf_f1"] == 1.0 and m["rp5"] == pytest.approx(2 / 5)
    assert m["n_unseen_leaves"] == 2 and m["n_predict"] == 24
    assert 0 <= m["acc_blind"] <= 1 and 0 <= m["acc_aware"] <= 1
    assert set(rec.arrays()) >= {"z_test", "y_test", "unseen_leaves", "lsa", "prototypes"}


def test_unseen_metrics_is_what_the_protocol_scores():
    """The protocol = embed, then unseen_metrics on the embeddings (one scoring path for runs and baselines)."""
    from hierviz.evaluation.unseen import unseen_metrics

    rng = np.random.default_rng(1)
    C = TREE4.num_leaves
    y_tr = np.repeat(np.arange(C), 6)
    y_tr = y_tr[~np.isin(y_tr, [TREE4.leaf_index["y"]])]
    y_te = np.repeat(np.arange(C), 3)
    z_tr = rng.normal(size=(len(y_tr), 4)).astype(np.float32)
    z_te = rng.normal(size=(len(y_te), 4)).astype(np.float32)
    m, scored = unseen_metrics(z_tr, y_tr, z_te, y_te, TREE4, get_geometry("euclidean"))
    assert m["n_predict"] == 3 and m["n_unseen_leaves"] == 1
    assert (scored["y_test"][-3:] == TREE4.leaf_index["y"]).all()  # seen first, then the prediction set
    with pytest.raises(ValueError, match="two or more seen leaves"):
        unseen_metrics(z_tr[:2], np.zeros(2, dtype=np.int64), z_te, y_te, TREE4, get_geometry("euclidean"))


def test_unseen_baselines_by_hand():
    """Majority by hand on a 4-leaf tree; chance of a random embedding near its expected values."""
    from hierviz.evaluation.unseen import unseen_baselines

    t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z", "w"]}})
    # train: x x x z z w (x is the majority leaf, a the majority level-1 node); y unseen (LSA a)
    y_tr, y_te = [0, 0, 0, 2, 2, 3], [0, 2, 3, 1, 1]
    base = unseen_baselines(y_tr, y_te, t, draws=3, dim=4)
    maj = base["majority"]
    assert maj["top1"] == pytest.approx(1 / 3)
    assert maj["leaf_f1"] == pytest.approx((2 * 1 / 3 / (1 + 1 / 3) + 0 + 0) / 3)  # F1 of x = 2PR/(P+R), P=1/3, R=1
    assert maj["acc_blind"] == 1.0 and maj["acc_aware"] == 1.0  # x is under a; a is the majority level-1 node
    assert np.isnan(maj["mnr"]) and np.isnan(maj["rp5"])  # a constant embedding has no ranking
    # a prediction set under b: the majority leaf x (under a) is always wrong
    maj_b = unseen_baselines([0, 0, 0, 2, 1], [0, 3, 3], t, draws=1, dim=4)["majority"]
    assert maj_b["acc_blind"] == 0.0 and maj_b["acc_aware"] == 0.0
    # chance: many random draws give MNR near 1/2 (a random ranking puts a relevant item mid-list)
    rng = np.random.default_rng(0)
    big_tr = rng.integers(0, 3, 400)
    big_te = np.concatenate([rng.integers(0, 3, 300), np.full(60, 3)])
    ch = unseen_baselines(np.where(big_tr == 1, 2, big_tr), big_te, t, draws=5, dim=8)["chance"]
    assert abs(ch["mnr"] - 0.5) < 0.05
    with pytest.raises(ValueError, match="draws"):
        unseen_baselines(y_tr, y_te, t, draws=0)


def test_paper04_tables_add_majority_and_chance_rows(tmp_path):
    from hierviz.results.tables import folds_table

    folders = []
    for fold, f1 in enumerate((0.70, 0.80)):
        d = tmp_path / f"fold{fold}"
        d.mkdir()
        head = "method,geometry,seed,leaf_f1,rp5,mnr,ndcg_sum,ndcg_max,acc_blind,acc_aware,blind_over_aware,pred_ndcg_sum\n"
        (d / "results.csv").write_text(head + f"l,euclidean,0,{f1},0.5,0.2,0.9,0.9,0.5,0.5,1,0.9\n")
        folders.append(str(d))
    assert "Majority" not in folds_table(folders)  # no baselines.csv: no rows
    for fold, base_f1 in enumerate((0.10, 0.20)):
        (tmp_path / f"fold{fold}" / "baselines.csv").write_text(
            f"baseline,leaf_f1,rp5,mnr,acc_blind,acc_aware\nmajority,{base_f1},,,0.25,0\nchance,0.05,0.1,0.5,0.2,0.15\n"
        )
    rows = {line.split(" | ")[0]: line.split(" | ") for line in folds_table(folders).splitlines()}
    maj, ch = rows["| *Majority class*"], rows["| *Chance (random embedding)*"]
    assert maj[1] == "15.0 (5.0)" and maj[2] == "—" and maj[6] == "25.0 (0.0)" and maj[7] == "0.0 (0.0)"
    assert ch[3] == "50.0 (0.0)"


def test_compare_unseen_protocol_on_the_synthetic_corpus(tmp_path, monkeypatch, capsys):
    import csv

    from hierviz.cli import main

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=14, n_test=4)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    out = tmp_path / "out"
    argv = ["compare", "--dataset", "20news", "--encoder", "mlp", "--width", "2", "--embed-dim", "8"]
    argv += ["--methods", "t+pl,t+b", "--protocol", "unseen", "--geometry", "euclidean", "--seeds", "1"]
    argv += ["--epochs", "1", "--batch-size", "48", "--projection", "pca", "--out", str(out), "--quiet"]
    argv += ["--set", "loss.heads.class_weight=inverse"]
    assert main(argv) == 0, capsys.readouterr().err
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["method"] for r in rows] == ["t+pl", "t+b"]
    for r in rows:
        for k in ("leaf_f1", "rp5", "mnr", "ndcg_sum", "ndcg_max", "acc_blind", "acc_aware", "hf1"):
            assert 0.0 <= float(r[k]) <= 1.0, (k, r[k])
    rec = json.loads((out / "runs" / "t_pl-euclidean-s0" / "result.json").read_text())
    assert rec["protocol"] == "unseen"
    cfg = json.loads((out / "runs" / "t_pl-euclidean-s0" / "config.json").read_text())
    assert cfg["loss"]["heads.class_weight"] == "inverse"
    # the paper-04 columns are the default table columns, in results.md and report.html, without flags
    md = (out / "results.md").read_text()
    head = md.splitlines()[[i for i, line in enumerate(md.splitlines()) if line.startswith("| Method")][0]]
    for label in ("Leaf F1", "Leaf RP@5", "MNR", "NDCG_sum", "NDCG_max", "Acc_blind", "Acc_aware"):
        assert label in head, (label, head)
    assert "HF1" not in head and "Paper 04 Table I columns" in md
    assert "Acc_aware (Euclidean)" in (out / "report.html").read_text()
    header = json.loads((out / "compare.json").read_text())["header"]
    assert "unseen leaves 4 (fold 0)" in header["Split"]  # 20 leaves, 18 samples each: 20 % of them


def test_results_tables_default_to_the_paper04_columns_for_unseen_runs():
    from hierviz.report.tables import METRICS, UNSEEN_METRICS, default_metrics, results_html_table, results_markdown

    base = {"hf1": 0.5, "h_acc": 0.5, "pc_order": 0.5, "violations": 0.5, "top1": 0.5}
    rows = []
    for m, mnr, f1 in (("t+pl", 0.10, 0.7), ("l", 0.20, 0.8)):
        for seed, d in ((0, -0.01), (1, 0.01)):
            r = {"method": m, "geometry": "euclidean", "seed": seed, **base}
            r.update(dict.fromkeys(UNSEEN_METRICS, 0.5), mnr=mnr + d, leaf_f1=f1 + d)
            rows.append(r)
    assert default_metrics(rows) == UNSEEN_METRICS
    assert default_metrics([{k: v for k, v in r.items() if k != "acc_aware"} for r in rows]) == METRICS
    md = results_markdown(rows)
    lines = md.splitlines()
    assert lines[0].startswith("| Method | Leaf F1 (Euclidean) | Leaf RP@5 (Euclidean) | MNR ↓ (Euclidean)")
    assert "Acc_blind (Euclidean) | Acc_aware (Euclidean) |" in lines[0]
    t_pl, leaf = lines[2].split(" | "), lines[3].split(" | ")
    assert "**0.100 ± 0.014**" in t_pl[3] and "**0.800 ± 0.014**" in leaf[1]  # MNR: lowest is best
    assert "MNR: lower is better" in md
    html = results_html_table(rows)
    assert "Leaf RP@5 (Euclidean)" in html and "HF1" not in html
    assert "HF1 (Euclidean)" in results_markdown(rows, metrics=METRICS)  # still selectable


def test_config_errors_for_protocol_and_fold(tmp_path, capsys):
    from hierviz.cli import main

    for opt, val, msg in (
        (
            "--protocol",
            "unseenn",
            "--protocol (eval.protocol): unknown protocol 'unseenn'; valid: classification, retrieval, retrieval-cosine, retrieval-folds, unseen",
        ),
        ("--fold", "7", "--fold (eval.fold): must be an integer in [0, 4]"),
    ):
        rc = main(["compare", "--preset=quick-ham10000", opt, val, "--out", str(tmp_path / "o"), "--quiet"])
        err = capsys.readouterr().err
        assert rc == 2 and msg in err, err


def test_losses_declare_their_input_and_never_read_the_geometry_name():
    import inspect

    import hierviz.losses.hier_cls as hc
    import hierviz.losses.triplet as tr

    for cls in (TripletLoss, LeafLoss, PerLevelLoss, BinaryLoss):
        assert cls.input_kind == "embeddings"
    for mod in (hc, tr):
        assert "geometry.name" not in inspect.getsource(mod)


# ------------------------------------------------------------------------------------- notebook 08 figures
def test_triplet_step_figure_and_panel():
    from hierviz.samplers import TreeTripletSampler
    from hierviz.viz.triplets import triplet_panel, triplet_step_figure

    y = np.repeat(np.arange(TREE4.num_leaves), 2)
    trip = TreeTripletSampler(y, TREE4, seed=0).epoch_triplets()
    a, p, n = (TREE4.leaves[y[i]] for i in trip[2])
    fig = triplet_step_figure(TREE4, y, step=2)
    title = fig.layout.title.text
    assert f"anchor {a}, positive {p}" in title and f"negative {n}" in title
    lca = TREE4.nodes[int(TREE4.lca(torch.tensor([y[trip[2][0]]]), torch.tensor([y[trip[2][1]]]))[0])]
    assert f"(LCA {lca})" in title
    panel = triplet_panel(TREE4, y)
    assert panel.controls["step"].max == len(trip) - 1
    panel.controls["step"].value = 2
    assert panel.figure.layout.title.text == title


def test_triplet_margin_figure_matches_the_loss():
    from hierviz.viz.triplets import toy_triplet_embedding, triplet_margin_figure, triplet_margin_panel

    z, y = toy_triplet_embedding(TREE4, n_per_leaf=4)
    assert z.shape[0] == 3 * (len(y) // 3) and z.shape[1:] == (1, 2)
    for m in (0.0, 0.3, 1.0):
        fig = triplet_margin_figure(z, m)
        want = float(TripletLoss(margin=m)(torch.as_tensor(z, dtype=torch.float64)))
        assert f"mean loss {want:.3f}" in fig.layout.title.text
        pts = fig.data[1]
        assert np.allclose(np.asarray(pts.y), np.maximum(0.0, m - np.asarray(pts.x)))
    panel = triplet_margin_panel(z, 0.3)
    panel.controls["margin"].value = 1.0
    assert panel.figure.layout.title.text.startswith("margin α = 1.00")


def test_unseen_and_ranking_figures():
    from hierviz.metrics.ranking import mnr, ndcg_tree, rp_at_k
    from hierviz.viz.triplets import ranking_figure, unseen_figure

    y = np.repeat(np.arange(TREE4.num_leaves), 4)
    z = np.random.default_rng(0).normal(size=(len(y), 5))
    un = [TREE4.leaf_index["y"]]
    fig = unseen_figure(z, y, un, TREE4)
    names = [t.name for t in fig.data]
    assert "y (unseen, LSA a1)" in names and "x" in names and len(names) == TREE4.num_leaves
    s, g = [0.9, 0.7, 0.6, 0.5], [0, 1, 2, 0]
    title = ranking_figure(s, 0, g, TREE4, k=2).layout.title.text
    S = np.asarray([s])
    assert f"RP@2 {rp_at_k(S, [0], g, TREE4, 2):.3f}" in title
    assert f"MNR {mnr(S, [0], g, TREE4):.3f}" in title and f"NDCG_max {ndcg_tree(S, [0], g, TREE4, 'max'):.3f}" in title


def test_unseen_protocol_hierarchy_columns_equal_hierarchy_report():
    from hierviz.evaluation import EvalContext
    from hierviz.evaluation.unseen import unseen_protocol
    from hierviz.metrics import hierarchy_report

    rng = np.random.default_rng(1)
    C = TREE4.num_leaves
    y = np.repeat(np.arange(C), 10)
    X = (rng.normal(size=(C, 6))[y] * 2 + rng.normal(size=(len(y), 6))).astype(np.float32)
    ds = ArrayDataset(X, y, TREE4.leaves)
    idx = np.arange(len(y))
    train, test = ds.subset(idx[idx % 3 != 0]), ds.subset(idx[idx % 3 == 0])

    class Norm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def embed(self, x, use="z"):
            return torch.nn.functional.normalize(x.flatten(1), dim=-1)

    g = get_geometry("euclidean")
    ctx = EvalContext(model=Norm(), train_data=train, test_data=test, tree=TREE4, geometry=g, image_size=8)
    rec = unseen_protocol(ctx)
    zn = lambda d: torch.nn.functional.normalize(torch.as_tensor(d.images), dim=-1)  # noqa: E731
    want = hierarchy_report(zn(train), train.labels, zn(test), test.labels, TREE4, g, seed=0)
    for k, v in want.items():
        assert rec.metrics[k] == pytest.approx(v, abs=1e-9), k
    assert np.isnan(rec.metrics["acc_blind"]) and rec.metrics["n_predict"] == 0  # every leaf seen


# ------------------------------------------------------------------------------------- data_scripts/orchideasol.py
def _orchidea():
    import importlib.util
    import sys
    from pathlib import Path

    scripts = Path(__file__).resolve().parents[1] / "data_scripts"
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))
    spec = importlib.util.spec_from_file_location("hv_scripts_orchideasol", scripts / "orchideasol.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_log_mel_front_end():
    o = _orchidea()
    fb = o.mel_filterbank()
    # triangles of peak 1, sampled on the 21.5 Hz FFT grid (the narrow low filters peak between bins)
    assert fb.shape == (128, 1025) and fb.max() <= 1.0 and (fb.max(1) > 0.6).all() and (fb[64:].max(1) > 0.9).all()
    t = np.arange(o.SR) / o.SR
    spec = o.log_mel(np.sin(2 * np.pi * 1000.0 * t))
    assert spec.shape == (128, 1 + o.SR // o.HOP) and spec.dtype == np.float32
    centres = o.mel_to_hz(np.linspace(o.hz_to_mel(0.0), o.hz_to_mel(o.SR / 2), 130))[1:-1]
    peak = centres[spec[:, 40].argmax()]
    assert abs(peak - 1000.0) < 60.0  # the 1 kHz tone lands in the filter centred near 1 kHz
    assert spec.max() - spec.min() <= 80.0 + 1e-4  # top_db = 80
    # the vectorised STFT equals a frame-by-frame loop
    x = np.random.default_rng(0).normal(size=4096)
    pad = np.pad(x, 1024, mode="reflect")
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(2048) / 2048)
    frames = [np.abs(np.fft.rfft(pad[i * 512 : i * 512 + 2048] * w)) ** 2 for i in range(1 + 4096 // 512)]
    want = 10 * np.log10(np.maximum(fb @ np.array(frames).T, 1e-10))
    want = np.maximum(want, want.max() - 80)
    assert np.allclose(o.log_mel(x), want, atol=1e-3)
    assert np.allclose(o.mel_to_hz(o.hz_to_mel(np.array([0.0, 440.0, 8000.0]))), [0.0, 440.0, 8000.0])


def test_orchideasol_conversion_on_local_files(tmp_path):
    from scipy.io import wavfile

    o = _orchidea()
    root = tmp_path / "OrchideaSOL2020"
    specs = [("Brass", "Horn", "ordinario", "ord", 440), ("Brass", "Horn", "Sordina", "ord", 660)]
    specs += [("Strings", "Violin", "ordinario", "pizz", 880)]
    for fam, ins, mute, tech, f in specs:
        d = root / fam / ins / mute / tech
        d.mkdir(parents=True)
        for k in range(2):
            t = np.arange(11025) / 22050  # 0.5 s at 22.05 kHz, stereo int16: resampled, mono, padded
            x = (0.3 * np.sin(2 * np.pi * (f + 5 * k) * t) * 32767).astype(np.int16)
            wavfile.write(d / f"{ins}-{tech}-{k}.wav", 22050, np.stack([x, x], 1))
    a = o.read_audio(root / "Brass/Horn/ordinario/ord/Horn-ord-0.wav")
    assert a.shape == (44100,) and np.all(a[22100:] == 0) and 0.25 < np.abs(a[:22000]).max() < 0.35
    npz, tree_file = o.convert(root, tmp_path / "out")
    with np.load(npz) as f:
        assert f["features"].shape == (6, 128, 87)
        classes = list(f["classes"])
        assert classes == ["Brass/Horn/Sordina/ord", "Brass/Horn/ordinario/ord", "Strings/Violin/ordinario/pizz"]
        ds = ArrayDataset(f["features"].reshape(6, -1), f["labels"], classes)
    tree = LabelTree.from_json(tree_file)
    assert tree.leaves == classes and tree.height == 4 and tree.parent("Brass/Horn/Sordina/ord") == "Brass/Horn/Sordina"
    assert ds.is_vector and ds.num_classes == 3
    assert o.main(["--from-dir", str(tmp_path / "nothing")]) == 2


def test_compare_refuses_an_image_encoder_on_vectors(tmp_path, monkeypatch, capsys):
    from hierviz.cli import main

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=2, n_test=1)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    rc = main(["compare", "--dataset", "20news", "--encoder", "small_cnn", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert (
        rc == 2
        and "--encoder (model.encoder): 'small_cnn' encodes images, but the dataset holds feature vectors" in err
    ), err


def test_20news_falls_back_to_a_synthetic_stand_in_only_when_allowed(tmp_path, monkeypatch):
    from hierviz.data.loaders.newsgroups import synthetic_corpus

    texts, labels, groups, split = synthetic_corpus(5, seed=0)
    assert len(texts) == 100 and sorted(groups) == groups and set(labels.tolist()) == set(range(20))
    assert synthetic_corpus(5, seed=0)[0] == texts  # seeded
    ds = load_20news(synthetic=True, max_features=300)
    assert ds.name == "20news (synthetic stand-in)" and ds.images.dtype == np.float32
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))  # no tarball anywhere searched
    monkeypatch.setattr("hierviz.data.loaders.newsgroups._find_tarball", _raise_missing)
    assert load_20news().name == "20news (synthetic stand-in)"  # no folder named: the stand-in
    with pytest.raises(FileNotFoundError):
        load_20news(synthetic=False)
    with pytest.raises(FileNotFoundError):
        load_20news(tmp_path)  # a folder named: never a silent stand-in
    # the tree is learnable: a group's messages share more words with its sibling than with others
    from sklearn.feature_extraction.text import CountVectorizer

    X = (CountVectorizer().fit_transform(synthetic_corpus(20)[0]).toarray() > 0).astype(float)
    ys = synthetic_corpus(20)[1]
    cent = np.stack([X[ys == g].mean(0) for g in range(20)])
    i, j, k = groups.index("rec.sport.baseball"), groups.index("rec.sport.hockey"), groups.index("sci.space")
    assert cent[i] @ cent[j] > cent[i] @ cent[k]


def _raise_missing(data_dir):
    raise FileNotFoundError("20news-bydate.tar.gz not found")
