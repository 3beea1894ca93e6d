"""Tests for the dataset and tree registries and for binding trees to data with unnamed classes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

import hierviz.data.datasets as datasets_shim
from hierviz._registry import UnknownNameError
from hierviz.data import (
    DATASETS,
    DEFAULT_TREE,
    TREES,
    ArrayDataset,
    DatasetInfo,
    bind_tree,
    load_dataset,
    load_npz,
    load_tree,
    read_tree_json,
    register_dataset,
    register_tree,
    tree_source,
)
from hierviz.hierarchy import LabelTree

# Every dataset name valid in 0.1, with its default tree (None: no default).
NAMES_01 = {
    "ham10000-sample": "two-step",
    "ham10000": "two-step",
    "cifar100": "cifar100",
    "breastmnist": "breastmnist",
    "dermamnist": "two-step",
    "bloodmnist": "bloodmnist",
    "pathmnist": None,
    "pneumoniamnist": None,
    "octmnist": None,
    "retinamnist": None,
    "tissuemnist": None,
    "organamnist": None,
    "organcmnist": None,
    "organsmnist": None,
}
HAM = ["nv", "mel", "bkl", "bcc", "akiec", "vasc", "df"]
TREES_01 = ["two-step", "benign-malignant", "ham-lineage", "breakhis", "breastmnist", "bloodmnist", "cifar100"]


# ----------------------------------------------------------------------------------- a user's dataset
def _toy_images(n: int = 6) -> np.ndarray:
    return np.arange(n * 4 * 4 * 3, dtype=np.uint8).reshape(n, 4, 4, 3)


@pytest.fixture
def toy_registered():
    """A loader registered from this test module (not from the package), removed afterwards."""
    seen = {}

    @register_dataset("toy", default_tree="benign-malignant")
    def toy(data_dir=None):
        """Six 4x4 images of the seven HAM10000 classes."""
        seen["data_dir"] = data_dir
        return ArrayDataset(_toy_images(), np.array([0, 1, 2, 3, 4, 5]), HAM, name="toy")

    @register_dataset("Toy-NoArgs", info="no-argument loader")
    def toy_noargs():
        return ArrayDataset(_toy_images(2), np.array([0, 0]), ["a"], name="toy-noargs")

    yield seen
    DATASETS.unregister("toy")
    DATASETS.unregister("toy-noargs")


def test_user_registered_dataset_loads_by_name(toy_registered, tmp_path):
    ds = load_dataset("toy")
    assert isinstance(ds, ArrayDataset) and ds.name == "toy" and ds.classes == HAM
    np.testing.assert_array_equal(ds.images, _toy_images())
    assert toy_registered["data_dir"] is None
    load_dataset("TOY", data_dir=tmp_path)  # names are case-insensitive; data_dir reaches the loader
    assert toy_registered["data_dir"] == tmp_path
    assert load_dataset("toy", image_size=2).images.shape == (6, 2, 2, 3)
    assert "toy" in list(DATASETS) and "toy-noargs" in DATASETS
    assert DEFAULT_TREE["toy"] == "benign-malignant" and "toy-noargs" not in DEFAULT_TREE
    assert DATASETS["toy"].description == "Six 4x4 images of the seven HAM10000 classes."
    assert DATASETS["toy-noargs"].description == "no-argument loader" and DATASETS["toy-noargs"].kind == "custom"
    assert load_dataset("toy-noargs", data_dir=tmp_path).classes == ["a"]  # a loader without data_dir
    ds2, tree = bind_tree(ds, DEFAULT_TREE["toy"])
    assert tree.leaves == HAM and tree.parent("mel") == "malignant" and ds2.classes == HAM
    with pytest.raises(ValueError, match="dataset 'toy' is already registered"):
        register_dataset("toy")(lambda: None)


def test_registered_loader_must_return_an_array_dataset():
    register_dataset("bad-toy")(lambda: [1, 2, 3])
    try:
        with pytest.raises(TypeError, match="dataset loader 'bad-toy'.*returned list.*ArrayDataset"):
            load_dataset("bad-toy")
    finally:
        DATASETS.unregister("bad-toy")
    with pytest.raises(TypeError, match="info must be a DatasetInfo"):
        register_dataset("x", info=3)
    with pytest.raises(TypeError, match="decorates a loader function"):
        register_dataset("x")(42)


def test_unknown_dataset_suggests_the_nearest_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no folder of that name here
    with pytest.raises(ValueError, match=r"unknown dataset 'breastmnst'; did you mean 'breastmnist'") as e:
        load_dataset("breastmnst")
    assert "valid names: ham10000-sample, ham10000, cifar100, breastmnist" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(UnknownNameError, match="did you mean 'ham10000'"):
        DATASETS.get("ham1000")


def test_every_01_name_is_registered_with_its_default_tree():
    assert list(DATASETS)[: len(NAMES_01)] == list(NAMES_01)
    for name, tree in NAMES_01.items():
        assert DEFAULT_TREE.get(name) == tree
    assert {k: v for k, v in DEFAULT_TREE.items() if k in NAMES_01} == {k: v for k, v in NAMES_01.items() if v}
    assert isinstance(DEFAULT_TREE, Mapping) and not hasattr(DEFAULT_TREE, "__setitem__")
    # the 0.1 DatasetInfo fields still read through DATASETS[name]
    assert DATASETS["ham10000"].filename == "ham10000_64.npz" and DATASETS["ham10000"].kind == "npz"
    assert DATASETS["ham10000-sample"].kind == "bundled"
    assert DATASETS["cifar100"].fetch == "python data_scripts/download_cifar100.py"
    assert DATASETS["organsmnist"].info == DatasetInfo(
        "organsmnist.npz",
        "medmnist",
        "python data_scripts/download_medmnist.py organsmnist",
        "MedMNIST v2 organsmnist (28x28)",
    )
    assert set(TREES_01) <= set(TREES)  # 0.1 trees kept; papers 02-05 add theirs (hier-mnist, 20news, ...)


def test_deprecated_datasets_module_still_exports():
    assert datasets_shim.load_dataset is load_dataset and datasets_shim.DATASETS is DATASETS
    assert datasets_shim.HAM_CLASSES == HAM
    assert datasets_shim.MEDMNIST_INFO["breastmnist"]["classes"] == ["malignant", "normal_benign"]
    assert "Deprecated alias" in datasets_shim.__doc__ and "0.3" in datasets_shim.__doc__
    from hierviz.data.trees import DEFAULT_TREE as from_trees

    assert from_trees is DEFAULT_TREE


def test_import_stays_lazy():
    code = "import sys, hierviz.data; print('torchvision' in sys.modules, 'PIL.Image' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ----------------------------------------------------------------------------------- tree registry
def test_register_tree_path_and_factory(tmp_path):
    p = tmp_path / "mine.json"
    p.write_text(json.dumps({"source": "my notes", "tree": {"r": {"x": ["a", "b"], "y": ["c"]}}}))
    register_tree("my-tree", p)
    register_tree("my-factory", lambda: LabelTree.from_nested({"r": ["p", "q"]}, name="fac", source="code"))
    register_tree("my-mapping", lambda: {"tree": {"r": ["u", "v"]}})
    try:
        assert "my-tree" in TREES and "my-factory" in list(TREES)
        t = load_tree("my-tree")
        assert t.leaves == ["a", "b", "c"] and t.name == "my-tree"
        assert tree_source("my-tree") == "my notes" and read_tree_json("My-Tree")["name"] == "my-tree"
        assert load_tree("my-factory").leaves == ["p", "q"] and tree_source("my-factory") == "code"
        assert load_tree("my-mapping").leaves == ["u", "v"] and read_tree_json("my-mapping")["name"] == "my-mapping"
        ds = ArrayDataset(_toy_images(3), np.array([2, 0, 1]), ["c", "a", "b"])
        _, tree = bind_tree(ds, "my-tree")
        assert tree.leaves == ["c", "a", "b"]
        with pytest.raises(ValueError, match="tree 'my-tree' is already registered"):
            register_tree("my-tree", p)
    finally:
        for n in ("my-tree", "my-factory", "my-mapping"):
            TREES.unregister(n)
    with pytest.raises(FileNotFoundError, match=r"nope\.json is not a file"):
        register_tree("x", tmp_path / "nope.json")
    with pytest.raises(TypeError, match="path_or_factory"):
        register_tree("x", 3)


def test_tree_file_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="unknown tree 'two-stp'; did you mean 'two-step'"):
        load_tree("two-stp")
    with pytest.raises(FileNotFoundError, match=r"missing\.json: no such tree file"):
        load_tree(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError, match=r"missing\.json: no such tree file"):
        load_tree(str(tmp_path / "missing.json"))
    latin = tmp_path / "latin1.json"
    latin.write_bytes('{"tree": {"r": ["caf\u00e9"]}}'.encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.json.*(UTF-8|utf-8)"):
        load_tree(latin)
    lst = tmp_path / "list.json"
    lst.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"list\.json: paths\[0\] must be a sequence of names"):
        load_tree(lst)
    num = tmp_path / "num.json"
    num.write_text("3")
    with pytest.raises(ValueError, match=r"num\.json: expected a parent map .*; got int"):
        load_tree(num)


# ----------------------------------------------------------------------------------- unnamed classes
def _unnamed_npz(path: Path, labels=(0, 1, 2, 2, 1, 0)) -> Path:
    """A .npz with images and labels only (no class names), like a MedMNIST file of unknown flag."""
    labels = np.asarray(labels)
    np.savez_compressed(path, images=_toy_images(len(labels)), labels=labels)
    return path


def test_label_value_leaves_bind_to_data_without_class_names(tmp_path):
    ds = load_dataset(_unnamed_npz(tmp_path / "plain.npz"))
    assert ds.classes == ["class_0", "class_1", "class_2"]
    ds2, tree = bind_tree(ds, {"root": {"a": ["0", "1"], "b": ["2"]}})
    assert ds2.classes == ["0", "1", "2"] and tree.leaves == ["0", "1", "2"]
    assert tree.parent("0") == tree.parent("1") == "a" and tree.parent("2") == "b"
    np.testing.assert_array_equal(ds2.labels, ds.labels)
    np.testing.assert_array_equal(ds2.images, ds.images)
    # leaf "3" <-> label 3 whatever the order of the leaves in the file (no leaf_order needed)
    tj = tmp_path / "t.json"
    tj.write_text(json.dumps({"tree": {"root": {"b": ["2"], "a": ["1", "0"]}}}))
    ds3, tree3 = bind_tree(ds, tj)
    assert tree3.leaves == ["0", "1", "2"] and [tree3.leaf_index[str(k)] for k in range(3)] == [0, 1, 2]
    assert tree3.parent("2") == "b" and ds3.classes == ["0", "1", "2"]


def test_label_value_leaves_bind_to_medmnist_of_unknown_flag(tmp_path):
    p = tmp_path / "mystery_28.npz"
    np.savez_compressed(p, train_images=_toy_images(4)[..., 0], train_labels=np.array([[0], [1], [2], [3]], np.uint8))
    ds, tree = bind_tree(load_dataset(p), {"tree": {"root": {"low": ["0", "1"], "high": ["2", "3"]}}})
    assert ds.classes == ["0", "1", "2", "3"] and tree.parent("3") == "high"


def test_placeholder_leaves_and_more_leaves_than_labels(tmp_path):
    ds = load_npz(_unnamed_npz(tmp_path / "p.npz"))
    ds2, tree = bind_tree(ds, {"root": {"a": ["class_2", "class_0"], "b": ["class_1"]}})
    assert ds2.classes == ["class_0", "class_1", "class_2"] and tree.parent("class_2") == "a"
    # label 3 is absent from this file but the tree knows it: the class list grows, labels unchanged
    ds4, tree4 = bind_tree(ds, {"root": {"a": ["0", "1"], "b": ["2", "3"]}})
    assert ds4.classes == ["0", "1", "2", "3"] and ds4.class_counts().tolist() == [2, 2, 2, 0]
    assert tree4.leaves == ["0", "1", "2", "3"]


def test_unnamed_class_mismatch_names_both_sides_and_the_hint(tmp_path):
    ds = load_npz(_unnamed_npz(tmp_path / "p.npz"))
    with pytest.raises(ValueError) as e:
        bind_tree(ds, {"root": {"a": ["0"], "b": ["1"]}})  # 2 leaves for 3 classes
    msg = str(e.value)
    assert "class_2" in msg and "'0'" in msg and "leaf_order" in msg and '"0", "1"' in msg and "\n" not in msg


# ----------------------------------------------------------------------------------- plain tree forms
def test_plain_parent_map_json_through_load_tree_and_bind_tree(tmp_path):
    """The most common hand-written form, ``{"child": "parent"}``, works as ``--tree my.json``."""
    p = tmp_path / "my.json"
    p.write_text(json.dumps({"mel": "melanocytic", "nv": "melanocytic", "melanocytic": "root",
                             "bcc": "other", "bkl": "other", "akiec": "other", "vasc": "other", "df": "other",
                             "other": "root"}))  # fmt: skip
    t = load_tree(p)
    assert t.name == "my" and sorted(t.leaves) == sorted(HAM) and t.parent("mel") == "melanocytic"
    ds, tree = bind_tree(load_dataset("ham10000-sample"), p)
    assert tree.leaves == ds.classes == HAM
    assert tree.ancestors("df") == ["root", "other", "df"]
    # the same map bound to unnamed classes, leaves named by label values
    p2 = tmp_path / "digits.json"
    p2.write_text(json.dumps({"0": "a", "1": "a", "2": "b", "a": "root", "b": "root"}))
    ds2, tree2 = bind_tree(load_npz(_unnamed_npz(tmp_path / "u.npz")), p2)
    assert ds2.classes == tree2.leaves == ["0", "1", "2"] and tree2.parent("2") == "b"


def test_plain_nested_dict_and_paths_list_files(tmp_path):
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({"root": {"a": ["x", "y"], "b": ["z"]}}))
    assert load_tree(nested).leaves == ["x", "y", "z"] and load_tree(nested).name == "nested"
    paths = tmp_path / "paths.json"
    paths.write_text(json.dumps([["root", "a", "x"], ["root", "b", "z"]]))
    assert load_tree(paths).parent("z") == "b"
    assert read_tree_json(paths) == {"name": "paths", "paths": [["root", "a", "x"], ["root", "b", "z"]]}
