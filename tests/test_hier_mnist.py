"""Hierarchical MNIST (Paper 02 (HMLC), Fig. 3): composition, determinism, leak-free splits, the CLI run."""

from __future__ import annotations

import csv
import gzip

import numpy as np
import pytest

from hierviz.cli import main
from hierviz.data import grouped_split, load_dataset, load_tree
from hierviz.data.loaders.hier_mnist import (
    GROUP_SIZE,
    compose_hier_mnist,
    load_hier_mnist,
    read_idx,
    synthetic_digits,
)


def _sources(ds):
    return np.array([[int(v) for v in s.split("-")] for s in ds.ids])


def test_synthetic_dataset_shapes_labels_and_tree():
    ds = load_hier_mnist(synthetic=True)
    assert ds.name == "hier-mnist (synthetic digits)"
    assert ds.images.shape == (2000, 64, 64, 3) and ds.images.dtype == np.uint8
    tree = load_tree("hier-mnist")
    assert tree.leaves == ds.classes and tree.height == 2 and tree.num_leaves == 100
    assert tree.ancestors("cat3_cls7") == ["root", "cat3", "cat3_cls7"]
    _, digit_labels = synthetic_digits(2000, seed=0)
    src = _sources(ds)
    # label = 10 * category + class, from the two source digits
    np.testing.assert_array_equal(ds.labels, 10 * digit_labels[src[:, 1]] + digit_labels[src[:, 0]])


def test_deterministic_and_seed_dependent():
    a, b = load_hier_mnist(synthetic=True, size=32), load_hier_mnist(synthetic=True, size=32)
    np.testing.assert_array_equal(a.images, b.images)
    np.testing.assert_array_equal(a.labels, b.labels)
    c = load_hier_mnist(synthetic=True, size=32, seed=1)
    assert not np.array_equal(a.labels, c.labels)


def test_each_source_digit_once_per_role_and_never_across_splits():
    ds = load_hier_mnist(synthetic=True, size=32)
    src = _sources(ds)
    assert len(set(src[:, 0])) == len(ds) and len(set(src[:, 1])) == len(ds)  # once as class, once as category
    for s in ("train", "test"):
        assert (ds.official_split == s).any()
    used = {s: set(src[ds.official_split == s].ravel()) for s in ("train", "test")}
    assert not used["train"] & used["test"]
    # the grouped split of `hierviz compare` keeps every source group (hence digit) in one split
    split = grouped_split(ds.labels, ds.groups, seed=0)
    parts = [set(src[split[k]].ravel()) for k in ("train", "val", "test")]
    assert not parts[0] & parts[1] and not parts[0] & parts[2] and not parts[1] & parts[2]
    assert np.bincount(ds.groups).tolist() == [GROUP_SIZE] * (len(ds) // GROUP_SIZE)


def test_category_and_class_independent_and_layout():
    digits, labels = synthetic_digits(1000, seed=3)
    images, category, cls, groups, sources = compose_hier_mnist(digits, labels, size=64, seed=3)
    # independence: the contingency table is close to the product of its margins
    table = np.zeros((10, 10))
    np.add.at(table, (category, cls), 1)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    chi2 = ((table - expected) ** 2 / expected).sum()
    assert chi2 < 81 * 2  # chi-square with 81 dof has mean 81
    # the class digit fills the centre box, the category digit lies outside it
    big = images[..., 0].astype(int)
    centre = np.zeros((64, 64), bool)
    centre[16:48, 16:48] = True
    assert (big[:, centre].sum(1) > 0).all() and (big[:, ~centre].sum(1) > 0).all()
    import torch

    ref = torch.nn.functional.interpolate(
        torch.from_numpy(digits[sources[0, 0]]).float()[None, None], size=(32, 32), mode="bilinear", antialias=True
    )[0, 0]
    np.testing.assert_array_equal(images[0, 16:48, 16:48, 0], ref.round().clamp(0, 255).byte().numpy())


def test_size_option_and_errors():
    ds = load_hier_mnist(synthetic=True, size=192)
    assert ds.images.shape[1:] == (192, 192, 3)
    with pytest.raises(ValueError, match="size must be a multiple of 4"):
        load_hier_mnist(synthetic=True, size=30)
    with pytest.raises(ValueError, match="at least 50 source digits"):
        compose_hier_mnist(np.zeros((10, 28, 28), np.uint8), np.zeros(10, int))
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte.gz"):
        load_hier_mnist("/nonexistent-folder", synthetic=False)


def test_read_idx_round_trip_and_errors(tmp_path):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    header = bytes([0, 0, 8, 3]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    p = tmp_path / "x-idx3-ubyte.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(header + arr.tobytes())
    np.testing.assert_array_equal(read_idx(p), arr)
    bad = tmp_path / "bad-idx"
    bad.write_bytes(bytes([0, 0, 9, 1, 0, 0, 0, 1, 5]))
    with pytest.raises(ValueError, match="not an unsigned-byte IDX file"):
        read_idx(bad)
    short = tmp_path / "short-idx"
    short.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 1, 2]))
    with pytest.raises(ValueError, match="header says shape"):
        read_idx(short)


@pytest.mark.shared_data
def test_real_mnist_build(data_dir):
    ds = load_dataset("hier-mnist", data_dir)
    assert ds.name == "hier-mnist" and ds.images.shape == (10_000, 64, 64, 3)
    assert np.bincount(ds.labels % 10).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert np.bincount(ds.labels // 10).tolist() == np.bincount(ds.labels % 10).tolist()


def test_cli_compare_hmce_g_hmlc_a_hmlc_on_hier_mnist(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["compare", "--methods", "hmce,g-hmlc,a-hmlc", "--dataset", "hier-mnist", "--tree", "hier-mnist"]
    args += ["--preset", "quick-ham10000", "--set", "data.limit=300", "--epochs", "1", "--seeds", "1"]
    args += ["--geometry", "euclidean", "--encoder", "small_cnn", "--width", "4", "--embed-dim", "8"]
    args += ["--image-size", "16", "--batch-size", "32", "--projection", "pca", "--quiet", "--out", str(out)]
    assert main(args) == 0
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["method"] for r in rows] == ["hmce", "g-hmlc", "a-hmlc"]
    for r in rows:
        assert 0.0 <= float(r["top1"]) <= 1.0
    md = (out / "results.md").read_text()
    assert "| HMCE |" in md and "| G-HMLC |" in md and "| A-HMLC |" in md
