"""Tests for hierviz.data: bundled sample, loaders, trees, grouped splits, transforms.

Default tests use the bundled sample and data made here in tmp_path; tests that read
../shared/data request the ``data_dir`` fixture (skipped on a fresh clone).
"""

from __future__ import annotations

import json
import pickle
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from hierviz.data import (
    DATASETS,
    TREES,
    ArrayDataset,
    ContrastiveDataset,
    TransformDataset,
    TwoViewTransform,
    align_tree,
    bind_tree,
    blur_kernel_size,
    check_split,
    eval_transform,
    find_data_file,
    grouped_split,
    load_dataset,
    load_image_folder,
    load_medmnist,
    load_npz,
    load_tree,
    read_tree_json,
    tree_source,
)
from hierviz.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from hierviz.hierarchy import LabelTree

REPO = Path(__file__).resolve().parents[1]
HAM = ["nv", "mel", "bkl", "bcc", "akiec", "vasc", "df"]


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def sample():
    return load_dataset("ham10000-sample")


@pytest.fixture
def empty_env(tmp_path, monkeypatch):
    """HIERVIZ_DATA pointing at an empty folder."""
    d = tmp_path / "empty_data"
    d.mkdir()
    monkeypatch.setenv("HIERVIZ_DATA", str(d))
    return d


def make_medmnist(path: Path, *, rgb: bool = False, sizes=(6, 2, 3), n_cls: int = 2, multilabel: bool = False) -> Path:
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in zip(("train", "val", "test"), sizes):
        shape = (n, 8, 8, 3) if rgb else (n, 8, 8)
        arrays[f"{split}_images"] = rng.integers(0, 256, shape, dtype=np.uint8)
        lab = np.arange(n) % n_cls
        arrays[f"{split}_labels"] = (
            np.stack([lab, lab], 1).astype(np.uint8) if multilabel else lab[:, None].astype(np.uint8)
        )
    np.savez_compressed(path, **arrays)
    return path


def make_folder(root: Path) -> Path:
    """Two classes: 'b_cls' with 2 images, 'a_cls' with 3 (mixed sizes / modes)."""
    (root / "b_cls").mkdir(parents=True)
    (root / "a_cls" / "nested").mkdir(parents=True)
    # a non-square RGB image: red margins, blue centre square -> the centre crop is all blue
    im = np.zeros((20, 40, 3), np.uint8)
    im[:, :, 0] = 255
    im[:, 10:30] = (0, 0, 255)
    Image.fromarray(im).save(root / "a_cls" / "x1.png")
    Image.fromarray(np.full((16, 16), 77, np.uint8)).save(root / "a_cls" / "x2.jpg")  # grayscale
    Image.fromarray(np.full((12, 12, 4), 200, np.uint8), mode="RGBA").save(root / "a_cls" / "nested" / "x3.png")
    for i in range(2):
        Image.fromarray(np.full((16, 16, 3), 10 * i, np.uint8)).save(root / "b_cls" / f"y{i}.png")
    (root / "b_cls" / "notes.txt").write_text("not an image")
    (root / ".hidden").mkdir()
    return root


# ----------------------------------------------------------------------------------- bundled sample
def test_sample_loads_without_any_data_dir(empty_env):
    ds = load_dataset("ham10000-sample")
    assert isinstance(ds, ArrayDataset)
    assert ds.images.shape == (2003, 32, 32, 3) and ds.images.dtype == np.uint8
    assert ds.labels.dtype == np.int64 and ds.labels.shape == (2003,)
    assert ds.classes == HAM
    assert ds.name == "ham10000-sample"


def test_sample_contents(sample):
    counts = dict(zip(sample.classes, sample.class_counts().tolist()))
    assert counts == {"nv": 1203, "mel": 200, "bkl": 199, "bcc": 101, "akiec": 100, "vasc": 100, "df": 100}
    assert all(c >= 40 for c in counts.values())
    # whole lesions: each lesion id carries one label, and 1,513 lesions
    assert sample.groups is not None and np.unique(sample.groups).size == 1513
    for g in np.unique(sample.groups)[:200]:
        assert np.unique(sample.labels[sample.groups == g]).size == 1
    assert sample.ids is not None and str(sample.ids[0]).startswith("ISIC_")
    # real images, not blanks
    assert sample.images.reshape(len(sample), -1).std(axis=1).min() > 5


def test_sample_licence_notice_and_size(sample):
    assert sample.licence.startswith("CC BY-NC 4.0")
    assert "10.1038/sdata.2018.161" in sample.citation
    folder = resources.files("hierviz.data").joinpath("sample")
    notice = folder.joinpath("NOTICE.md").read_text(encoding="utf-8")
    for needle in ("CC BY-NC 4.0", "Tschandl", "10.1038/sdata.2018.161", "make_ham10000_sample.py", "NonCommercial"):
        assert needle in notice
    with resources.as_file(folder.joinpath("ham10000_sample.npz")) as p:
        assert p.stat().st_size <= 6_000_000
        with np.load(p) as z:
            assert z.files == ["images", "label", "dx", "classes", "lesion_id", "image_id"]
            np.testing.assert_array_equal(z["dx"], np.asarray(HAM)[z["label"]])


def test_sample_split_is_lesion_grouped(sample):
    parts = sample.split(val=0.15, test=0.15, seed=0)
    assert sum(len(p) for p in parts.values()) == len(sample)
    train_l, test_l = set(parts["train"].groups), set(parts["test"].groups)
    assert not train_l & test_l and not train_l & set(parts["val"].groups) and not test_l & set(parts["val"].groups)
    for p in parts.values():
        assert p.classes == sample.classes


# ----------------------------------------------------------------------------------- trees
def test_every_bundled_tree_loads_with_source():
    for name in TREES:
        t = load_tree(name)
        assert isinstance(t, LabelTree)
        obj = read_tree_json(name)
        assert obj["name"] == name
        assert len(tree_source(name)) > 40
        assert obj.get("leaf_order") == t.leaves
        assert set(obj) <= {"name", "source", "leaf_order", "tree"}


def test_two_step_tree_structure():
    t = load_tree("two-step")
    assert t.leaves == HAM and t.height == 3 and t.num_nodes == 14
    expected = {
        "nv": ["root", "melanocytic", "melanocytic_benign", "nv"],
        "mel": ["root", "melanocytic", "melanocytic_malignant", "mel"],
        "bkl": ["root", "non_melanocytic", "non_melanocytic_benign", "bkl"],
        "vasc": ["root", "non_melanocytic", "non_melanocytic_benign", "vasc"],
        "df": ["root", "non_melanocytic", "non_melanocytic_benign", "df"],
        "bcc": ["root", "non_melanocytic", "non_melanocytic_malignant", "bcc"],
        "akiec": ["root", "non_melanocytic", "non_melanocytic_malignant", "akiec"],
    }
    for leaf, path in expected.items():
        assert t.ancestors(leaf) == path
    assert "Argenziano" in tree_source("two-step") and "10.1038/sdata.2018.161" in tree_source("two-step")
    # rho: nv-mel share only 'melanocytic' (depth 1 of L=3); bkl-df share the benign node (2/3)
    rho = t.rho_matrix
    assert rho[t.leaf_index["nv"], t.leaf_index["mel"]].item() == pytest.approx(1 / 3)
    assert rho[t.leaf_index["bkl"], t.leaf_index["df"]].item() == pytest.approx(2 / 3)
    assert rho[t.leaf_index["nv"], t.leaf_index["bcc"]].item() == 0.0


def test_flat_and_other_trees():
    bm = load_tree("benign-malignant")
    assert bm.height == 2 and set(bm.leaves_under("malignant")) == {"mel", "bcc", "akiec"}
    assert set(bm.leaves_under("benign")) == {"nv", "bkl", "vasc", "df"}
    bl = load_tree("bloodmnist")
    assert (bl.depth("lymphocyte"), bl.depth("monocyte"), bl.depth("basophil")) == (2, 3, 4)
    assert bl.height == 4 and bl.num_leaves == 8
    c = load_tree("cifar100")
    assert c.num_leaves == 100 and len(c.children("root")) == 20
    assert all(len(c.children(s)) == 5 for s in c.children("root"))
    assert c.parent("sweet_pepper") == "fruit_and_vegetables" and c.leaves[:3] == ["apple", "aquarium_fish", "baby"]
    bm2 = load_tree("breastmnist")
    assert bm2.leaves == ["malignant", "normal_benign"] and bm2.height == 1
    lin = load_tree("ham-lineage")
    assert set(lin.leaves_under("keratinocytic")) == {"bkl", "bcc", "akiec"}


def test_breakhis_tree_matches_paper_fixture(breakhis_tree):
    t = load_tree("breakhis")
    assert t.leaves == breakhis_tree.leaves
    for leaf in t.leaves:
        assert t.ancestors(leaf) == breakhis_tree.ancestors(leaf)


def test_load_tree_errors_and_paths(tmp_path):
    with pytest.raises(
        ValueError, match="unknown tree 'no-such-tree'; did you mean 'two-step'.*valid names: .*breakhis"
    ):
        load_tree("no-such-tree")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_tree(bad)
    good = tmp_path / "mine.json"
    good.write_text(json.dumps({"source": "me", "tree": {"r": {"x": ["a", "b"], "y": ["c"]}}}))
    t = load_tree(good)
    assert t.leaves == ["a", "b", "c"] and t.name == "mine"
    assert load_tree(t) is t
    assert load_tree({"tree": {"r": ["p", "q"]}}).leaves == ["p", "q"]
    with pytest.raises(TypeError, match="name_or_path"):
        read_tree_json(3)


def test_align_tree_reorders_and_names_mismatch():
    t = load_tree("two-step")
    derma = ["akiec", "bcc", "bkl", "df", "mel", "nv", "vasc"]
    a = align_tree(t, derma)
    assert a.leaves == derma
    assert a.ancestors("mel") == t.ancestors("mel")
    # rho is the same matrix, permuted
    perm = [t.leaf_index[c] for c in derma]
    torch.testing.assert_close(a.rho_matrix, t.rho_matrix[perm][:, perm])
    with pytest.raises(ValueError, match=r"not among the tree's leaves: \['melanoma'\].*no data class: \['mel'\]"):
        align_tree(t, ["nv", "melanoma", "bkl", "bcc", "akiec", "vasc", "df"])
    with pytest.raises(ValueError, match="repeated class names"):
        align_tree(t, HAM + ["nv"])
    with pytest.raises(ValueError, match="leaf_order"):
        align_tree(t, [f"class_{i}" for i in range(7)])
    with pytest.raises(TypeError):
        align_tree("two-step", HAM)


# ----------------------------------------------------------------------------------- finding files
def test_find_data_file_env_first_and_missing_message(tmp_path, monkeypatch):
    env = tmp_path / "env"
    env.mkdir()
    (env / "breastmnist.npz").write_bytes(b"x")
    monkeypatch.setenv("HIERVIZ_DATA", str(env))
    assert find_data_file("breastmnist.npz") == env / "breastmnist.npz"
    with pytest.raises(FileNotFoundError) as e:
        find_data_file("ham10000_64.npz", data_dir=tmp_path / "nowhere")
    msg = str(e.value)
    assert "ham10000_64.npz" in msg and "python data_scripts/download_ham10000.py --size 64" in msg
    assert str(tmp_path / "nowhere") in msg
    with pytest.raises(FileNotFoundError, match="data_scripts/README.md"):
        find_data_file("mystery.npz", data_dir=tmp_path)


def test_load_dataset_errors(tmp_path, empty_env):
    with pytest.raises(ValueError, match="unknown dataset 'hamster'.*valid names: ham10000-sample, .*breastmnist"):
        load_dataset("hamster")
    with pytest.raises(
        FileNotFoundError, match=r"dermamnist\.npz.*python data_scripts/download_medmnist\.py dermamnist"
    ):
        load_dataset("dermamnist", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_dataset(str(tmp_path / "missing.npz"))
    assert {"ham10000", "ham10000-sample", "breastmnist"} <= set(DATASETS)


# ----------------------------------------------------------------------------------- loaders
def test_load_medmnist_grayscale_merges_splits(tmp_path):
    p = make_medmnist(tmp_path / "breastmnist.npz")
    ds = load_dataset(p)
    assert ds.images.shape == (11, 8, 8, 3)
    with np.load(p) as z:
        np.testing.assert_array_equal(ds.images[:6, :, :, 0], z["train_images"])
        np.testing.assert_array_equal(ds.images[6:8, :, :, 2], z["val_images"])
        np.testing.assert_array_equal(ds.labels[8:], z["test_labels"][:, 0])
    assert (ds.images[..., 0] == ds.images[..., 1]).all() and (ds.images[..., 1] == ds.images[..., 2]).all()
    assert ds.official_split.tolist() == ["train"] * 6 + ["val"] * 2 + ["test"] * 3
    assert ds.classes == ["malignant", "normal_benign"] and ds.groups is None
    assert ds.licence == "CC BY 4.0" and "MedMNIST v2" in ds.citation
    parts = ds.split(official=True)
    assert [len(parts[k]) for k in ("train", "val", "test")] == [6, 2, 3]


def test_load_medmnist_rgb_unknown_name_and_bind_tree(tmp_path):
    p = make_medmnist(tmp_path / "mystuff_64.npz", rgb=True, n_cls=3)
    ds = load_medmnist(p)
    assert ds.classes == ["class_0", "class_1", "class_2"] and ds.name == "mystuff"
    with np.load(p) as z:
        np.testing.assert_array_equal(ds.images[:6], z["train_images"])
    tj = tmp_path / "t.json"
    tj.write_text(
        json.dumps(
            {
                "name": "t",
                "source": "test",
                "leaf_order": ["zeta", "alpha", "mid"],
                "tree": {"root": {"g1": ["alpha", "mid"], "g2": ["zeta"]}},
            }
        )
    )
    ds2, tree = bind_tree(ds, tj)
    assert ds2.classes == ["zeta", "alpha", "mid"] and tree.leaves == ds2.classes
    np.testing.assert_array_equal(ds2.labels, ds.labels)
    with pytest.raises(ValueError, match="does not match"):
        bind_tree(ds, "two-step")


def test_load_medmnist_rejects_bad_files(tmp_path):
    with pytest.raises(ValueError, match="multi-label"):
        load_medmnist(make_medmnist(tmp_path / "chest.npz", multilabel=True))
    np.savez(tmp_path / "odd.npz", foo=np.zeros(3))
    with pytest.raises(ValueError, match=r"unknown npz layout \(keys \['foo'\]\)"):
        load_npz(tmp_path / "odd.npz")
    np.savez(tmp_path / "f.npz", train_images=np.zeros((2, 4, 4), np.float32), train_labels=np.zeros((2, 1), np.uint8))
    with pytest.raises(ValueError, match=r"f\.npz: train_images: images must be uint8.*got dtype float32"):
        load_medmnist(tmp_path / "f.npz")
    np.savez(tmp_path / "big.npz", train_images=np.zeros((2, 4, 4), np.uint8), train_labels=np.array([[0], [5]]))
    with pytest.raises(ValueError, match="labels go up to 5 but breastmnist has 2 classes"):
        load_medmnist(tmp_path / "big.npz", name="breastmnist")


def test_load_npz_hierviz_layout(tmp_path):
    imgs = np.arange(4 * 4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 4, 3)
    np.savez(
        tmp_path / "h.npz",
        images=imgs,
        label=np.array([1, 0, 1, 1]),
        classes=np.array(["a", "b"]),
        groups=np.array(["p1", "p1", "p2", "p3"]),
        split=np.array(["train", "train", "test", "val"]),
    )
    ds = load_npz(tmp_path / "h.npz")
    assert ds.classes == ["a", "b"] and ds.groups.tolist() == ["p1", "p1", "p2", "p3"]
    assert ds.official_split.tolist() == ["train", "train", "test", "val"]
    np.testing.assert_array_equal(ds.images, imgs)
    np.savez(tmp_path / "g.npz", images=imgs[..., 0], labels=np.array([2, 0, 1, 1]))
    ds = load_npz(tmp_path / "g.npz")
    assert ds.classes == ["class_0", "class_1", "class_2"] and ds.images.shape == (4, 4, 4, 3)


def test_load_image_folder(tmp_path):
    root = make_folder(tmp_path / "imgs")
    ds = load_dataset(root, image_size=16)
    assert ds.classes == ["a_cls", "b_cls"] and ds.labels.tolist() == [0, 0, 0, 1, 1]
    assert ds.images.shape == (5, 16, 16, 3) and ds.groups is None
    assert ds.ids.tolist() == ["a_cls/nested/x3.png", "a_cls/x1.png", "a_cls/x2.jpg", "b_cls/y0.png", "b_cls/y1.png"]
    blue = ds.images[1]
    assert blue[..., 2].min() > 240 and blue[..., 0].max() < 15  # centre crop removed the red margins
    np.testing.assert_array_equal(ds.images[2], 77)  # grayscale -> 3 equal channels
    np.testing.assert_array_equal(ds.images[0], 200)  # RGBA -> RGB
    assert load_image_folder(root).images.shape[1:] == (64, 64, 3)


def test_load_image_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_image_folder(tmp_path / "nope")
    (tmp_path / "e").mkdir()
    with pytest.raises(ValueError, match="no class sub-folders"):
        load_image_folder(tmp_path / "e")
    (tmp_path / "e" / "cls").mkdir()
    with pytest.raises(ValueError, match="class folder 'cls' holds no images"):
        load_image_folder(tmp_path / "e")
    (tmp_path / "e" / "cls" / "broken.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="broken.png: cannot read image"):
        load_image_folder(tmp_path / "e")
    with pytest.raises(ValueError, match="image_size must be >= 1"):
        load_image_folder(tmp_path / "e", image_size=0)


# ----------------------------------------------------------------------------------- ArrayDataset
def test_array_dataset_validation_and_subset():
    im = np.zeros((4, 2, 2, 3), np.uint8)
    ds = ArrayDataset(im, np.array([0, 1, 1, 0]), ["a", "b"], groups=np.array([1, 1, 2, 3]), name="t")
    assert len(ds) == 4 and ds.num_classes == 2 and ds.image_size == (2, 2)
    s = ds.subset([3, 1])
    assert s.labels.tolist() == [0, 1] and s.groups.tolist() == [3, 1] and s.classes == ["a", "b"]
    assert ds.subset(np.array([True, False, False, True])).labels.tolist() == [0, 0]
    assert len(ds.subset([])) == 0
    img, lab = ds[1]
    assert img.shape == (2, 2, 3) and lab == 1 and isinstance(lab, int)
    with pytest.raises(ValueError, match="idx must be in 0..3"):
        ds.subset([4])
    with pytest.raises(ValueError, match="boolean mask"):
        ds.subset([True, False])
    with pytest.raises(TypeError, match="uint8"):
        ArrayDataset(im.astype(np.float32), np.zeros(4, int), ["a"])
    with pytest.raises(ValueError, match=r"labels must be in 0..1"):
        ArrayDataset(im, np.array([0, 1, 2, 0]), ["a", "b"])
    with pytest.raises(ValueError, match=r"\(N, H, W, 3\)"):
        ArrayDataset(im[..., 0], np.zeros(4, int), ["a"])
    with pytest.raises(ValueError, match="unique"):
        ArrayDataset(im, np.zeros(4, int), ["a", "a"])
    with pytest.raises(ValueError, match="groups must have shape"):
        ArrayDataset(im, np.zeros(4, int), ["a"], groups=np.zeros(3))
    with pytest.raises(ValueError, match="official_split values"):
        ArrayDataset(im, np.zeros(4, int), ["a"], official_split=np.array(["train", "dev", "test", "val"]))
    assert ds.with_classes(["x", "y"]).classes == ["x", "y"]
    with pytest.raises(ValueError, match="expected 2 names"):
        ds.with_classes(["x"])
    with pytest.raises(ValueError, match="no official_split"):
        ds.split(official=True)


def test_resized_keeps_constant_images():
    im = np.full((2, 8, 8, 3), 90, np.uint8)
    ds = ArrayDataset(im, np.array([0, 0]), ["a"]).resized(4)
    assert ds.images.shape == (2, 4, 4, 3) and (ds.images == 90).all()


# ----------------------------------------------------------------------------------- splits
def test_grouped_split_hand_case():
    y = np.array([0] * 10 + [1] * 10)
    s = grouped_split(y, None, val=0.2, test=0.2, seed=3)
    for k, n in (("train", 6), ("val", 2), ("test", 2)):
        assert np.bincount(y[s[k]], minlength=2).tolist() == [n, n]
    check_split(s, 20)
    # groups: class 0 in groups of sizes 4,2,2,1,1 ; the size-4 group must go to train (largest first)
    g = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3, 4] + list(range(10, 20)))
    s = grouped_split(y, g, val=0.2, test=0.2, seed=0)
    assert set(range(4)) <= set(s["train"].tolist())
    check_split(s, 20, g)
    assert np.bincount(y[s["test"]], minlength=2).tolist() == [2, 2]


def test_grouped_split_sample_properties(sample):
    y, g = sample.labels, sample.groups
    s = grouped_split(y, g, val=0.15, test=0.15, seed=0)
    check_split(s, len(y), g)
    overall = np.bincount(y, minlength=7) / len(y)
    for k, frac in (("train", 0.7), ("val", 0.15), ("test", 0.15)):
        assert abs(len(s[k]) / len(y) - frac) < 0.01
        prop = np.bincount(y[s[k]], minlength=7) / len(s[k])
        assert np.abs(prop - overall).max() < 0.01
    assert all(np.array_equal(s[k], grouped_split(y, g, seed=0)[k]) for k in s)  # seeded
    other = grouped_split(y, g, seed=1)
    assert not np.array_equal(s["test"], other["test"])


def test_grouped_split_at_least_as_stratified_as_sklearn(sample):
    from sklearn.model_selection import StratifiedGroupKFold

    sub = sample.subset(np.arange(0, len(sample), 6))
    y, g = sub.labels, sub.groups
    overall = np.bincount(y, minlength=7) / len(y)
    _, test_sk = next(StratifiedGroupKFold(5, shuffle=True, random_state=0).split(y, y, g))
    ours = grouped_split(y, g, val=0.0, test=0.2, seed=0)["test"]

    def dev(idx):
        return np.abs(np.bincount(y[idx], minlength=7) / len(idx) - overall).max()

    assert dev(ours) <= dev(test_sk) + 1e-9


def test_grouped_split_mixed_groups_uses_sklearn_and_is_leak_free():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 600)
    g = rng.integers(0, 150, 600)  # groups mix labels -> StratifiedGroupKFold path
    s = grouped_split(y, g, val=0.2, test=0.2, seed=0)
    check_split(s, 600, g)
    for k, frac in (("train", 0.6), ("val", 0.2), ("test", 0.2)):
        assert abs(len(s[k]) / 600 - frac) < 0.05
        prop = np.bincount(y[s[k]], minlength=3) / len(s[k])
        assert np.abs(prop - np.bincount(y, minlength=3) / 600).max() < 0.06


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(8, 80),
    n_cls=st.integers(1, 4),
    n_groups=st.integers(4, 40),
    mixed=st.booleans(),
    val=st.sampled_from([0.0, 0.1, 0.25]),
    test=st.sampled_from([0.1, 0.2, 0.3]),
    seed=st.integers(0, 5),
)
def test_grouped_split_property_partition_no_leak(n, n_cls, n_groups, mixed, val, test, seed):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, n)
    y = rng.integers(0, n_cls, n) if mixed else (np.unique(g, return_inverse=True)[1] % n_cls)
    try:
        s = grouped_split(y, g, val=val, test=test, seed=seed)
    except ValueError as e:  # only allowed when there are too few groups for the request
        assert "groups" in str(e)
        return
    check_split(s, n, g)
    if val == 0.0:
        assert s["val"].size == 0


def test_grouped_split_bad_input():
    with pytest.raises(ValueError, match="val \\+ test must be < 1"):
        grouped_split([0, 1], None, val=0.5, test=0.5)
    with pytest.raises(ValueError, match="labels must be 1-D"):
        grouped_split(np.zeros((2, 2), int))
    with pytest.raises(ValueError, match="groups must have the shape"):
        grouped_split([0, 1, 0], [1, 2])
    with pytest.raises(TypeError, match="labels must hold integers"):
        grouped_split([0.5, 1.0])
    with pytest.raises(ValueError, match="test must be in"):
        grouped_split([0, 1], test=-0.1)
    s = grouped_split(torch.tensor([0, 1, 0, 1]), None, val=0.0, test=0.5)
    assert sorted(np.concatenate(list(s.values())).tolist()) == [0, 1, 2, 3]


def test_check_split_detects_leaks():
    with pytest.raises(ValueError, match="cross splits"):
        check_split({"train": np.array([0]), "test": np.array([1])}, 2, groups=np.array(["a", "a"]))
    with pytest.raises(ValueError, match="overlap"):
        check_split({"train": np.array([0, 1]), "test": np.array([1])}, 2)
    with pytest.raises(ValueError, match="miss"):
        check_split({"train": np.array([0])}, 2)


# ----------------------------------------------------------------------------------- transforms
def test_blur_kernel_size():
    assert [blur_kernel_size(s) for s in (8, 28, 32, 64, 96, 224)] == [3, 3, 3, 7, 11, 23]
    with pytest.raises(ValueError, match="size must be >= 8"):
        blur_kernel_size(4)


def test_two_view_constant_image_is_exactly_normalised():
    t = TwoViewTransform(16, views=3, jitter=0.0, p_gray=0.0)
    x = t(np.full((24, 24, 3), 128, np.uint8))
    assert x.shape == (3, 3, 16, 16) and x.dtype == torch.float32
    want = (128 / 255 - torch.tensor(IMAGENET_MEAN)) / torch.tensor(IMAGENET_STD)
    torch.testing.assert_close(x, want[None, :, None, None].expand_as(x), atol=1e-5, rtol=0)


def test_two_view_views_differ_and_are_seeded(sample):
    t = TwoViewTransform(32)
    torch.manual_seed(0)
    a = t(sample.images[0])
    torch.manual_seed(0)
    b = t(sample.images[0])
    torch.testing.assert_close(a, b)
    assert a.shape == (2, 3, 32, 32) and not torch.allclose(a[0], a[1])
    assert torch.isfinite(a).all()
    x = t(Image.fromarray(sample.images[1]))  # PIL input
    assert x.shape == (2, 3, 32, 32)
    assert t(sample.images[2][..., 0]).shape == (2, 3, 32, 32)  # grayscale HW input


def test_transform_bad_args():
    with pytest.raises(ValueError, match="views must be >= 1"):
        TwoViewTransform(32, views=0)
    with pytest.raises(ValueError, match="scale"):
        TwoViewTransform(32, scale=(0.0, 1.0))
    with pytest.raises(TypeError, match="size must be an int"):
        TwoViewTransform(32.0)
    with pytest.raises(ValueError, match="std must be positive"):
        eval_transform(32, std=(0.1, 0.0, 0.1))
    with pytest.raises(ValueError, match="p_blur"):
        TwoViewTransform(32, p_blur=1.5)
    with pytest.raises(TypeError, match="uint8"):
        TwoViewTransform(32)(np.zeros((32, 32, 3), np.float32))


def test_eval_transform_exact(sample):
    img = sample.images[5]
    x = eval_transform(32)(img)
    want = (
        torch.from_numpy(img).permute(2, 0, 1).float() / 255 - torch.tensor(IMAGENET_MEAN)[:, None, None]
    ) / torch.tensor(IMAGENET_STD)[:, None, None]
    torch.testing.assert_close(x, want, atol=1e-6, rtol=0)
    assert eval_transform(16)(img).shape == (3, 16, 16)


def test_contrastive_dataset_items_pickle_and_loader(sample):
    small = sample.subset(np.arange(8))
    cd = ContrastiveDataset(small, TwoViewTransform(32), views=2)
    x, y = cd[3]
    assert x.shape == (2, 3, 32, 32) and y == int(small.labels[3])
    cd2 = pickle.loads(pickle.dumps(cd))
    assert len(cd2) == 8
    loader = torch.utils.data.DataLoader(cd, batch_size=4, num_workers=1)
    xb, yb = next(iter(loader))
    assert xb.shape == (4, 2, 3, 32, 32) and yb.dtype == torch.int64
    torch.testing.assert_close(yb, torch.as_tensor(small.labels[:4]))
    c3 = ContrastiveDataset(small, eval_transform(32), views=3)
    x3, _ = c3[0]
    assert x3.shape == (3, 3, 32, 32) and torch.equal(x3[0], x3[2])  # deterministic transform -> equal views
    with pytest.raises(ValueError, match="makes 2 views"):
        ContrastiveDataset(small, TwoViewTransform(32), views=3)
    with pytest.raises(TypeError, match="ArrayDataset"):
        ContrastiveDataset([1, 2], TwoViewTransform(32))
    td = TransformDataset(small)
    xe, ye = td[0]
    assert xe.shape == (3, 32, 32) and ye == int(small.labels[0])


# ----------------------------------------------------------------------------------- real data (../shared/data)
@pytest.mark.shared_data
def test_real_ham10000(data_dir):
    ds = load_dataset("ham10000", data_dir=data_dir)
    assert ds.images.shape == (10015, 64, 64, 3) and ds.classes == HAM
    assert ds.class_counts().tolist() == [6705, 1113, 1099, 514, 327, 142, 115]
    assert np.unique(ds.groups).size == 7470 and ds.licence.startswith("CC BY-NC 4.0")
    s = grouped_split(ds.labels, ds.groups, seed=0)
    check_split(s, len(ds), ds.groups)
    overall = ds.class_counts() / len(ds)
    for k in s:
        assert np.abs(np.bincount(ds.labels[s[k]], minlength=7) / len(s[k]) - overall).max() < 0.005
    _, tree = bind_tree(ds, "two-step")
    assert tree.leaves == HAM


@pytest.mark.shared_data
def test_real_breastmnist(data_dir):
    ds = load_dataset("breastmnist", data_dir=data_dir)
    assert len(ds) == 780 and ds.images.shape[1:] == (28, 28, 3)
    parts = ds.split(official=True)
    assert [len(parts[k]) for k in ("train", "val", "test")] == [546, 78, 156]
    assert parts["train"].class_counts().tolist() == [147, 399]
    assert parts["test"].class_counts().tolist() == [42, 114]
    ds2, tree = bind_tree(ds, "breastmnist")
    assert tree.leaves == ds2.classes == ["malignant", "normal_benign"]


@pytest.mark.shared_data
def test_bundled_sample_is_reproducible(data_dir, tmp_path, sample):
    sys.path.insert(0, str(REPO / "data_scripts"))
    try:
        import make_ham10000_sample as mk
    finally:
        sys.path.remove(str(REPO / "data_scripts"))
    summary = mk.make_sample(data_dir / "ham10000_64.npz", tmp_path)
    again = load_npz(summary["path"])
    np.testing.assert_array_equal(again.images, sample.images)
    np.testing.assert_array_equal(again.labels, sample.labels)
    np.testing.assert_array_equal(again.groups, sample.groups)
    np.testing.assert_array_equal(again.ids, sample.ids)
    assert summary["bytes"] <= 6_000_000
