"""Datasets, label trees, leak-free splits and two-view augmentation.

Quick start (works with no data folder: the HAM10000 sample ships with the package)::

    from hierviz.data import load_dataset, load_tree, bind_tree, ContrastiveDataset, TwoViewTransform

    ds = load_dataset("ham10000-sample")            # ArrayDataset, 2,003 images 32x32, CC BY-NC 4.0
    ds, tree = bind_tree(ds, "two-step")            # tree.leaves == ds.classes
    parts = ds.split(val=0.15, test=0.15, seed=0)   # grouped by lesion_id, stratified
    train = ContrastiveDataset(parts["train"], TwoViewTransform(32), views=2)

Bring your own data: ``load_dataset("my.npz")`` (``images`` + ``labels``, or MedMNIST format)
or ``load_dataset("my_images/")`` (one sub-folder per class), and a tree JSON naming those
classes (or the label values ``"0"``, ``"1"``, ...) as leaves. Register a loader with
``@register_dataset("name", default_tree=...)`` and a tree with ``register_tree(name, path)``.
Full-size data: see ``data_scripts/README.md``.

Layout: :mod:`~hierviz.data.base` (ArrayDataset, find_data_file), :mod:`~hierviz.data.folders` (the data
folders searched, the cache folder), :mod:`~hierviz.data.registry`
(DATASETS, load_dataset, bind_tree), :mod:`~hierviz.data.loaders` (one file per source),
:mod:`~hierviz.data.trees` (TREES, load_tree), :mod:`~hierviz.data.splits`,
:mod:`~hierviz.data.toys` (toy points that follow a tree, for the course's figures),
:mod:`~hierviz.data.transforms` (imported on first use: torchvision is slow to import).
"""

from hierviz.data.base import ArrayDataset, DatasetInfo, find_data_file
from hierviz.data.folders import cache_dir, data_search_dirs
from hierviz.data.loaders import MEDMNIST_INFO, load_image_folder, load_medmnist, load_npz  # registers built-ins
from hierviz.data.registry import (
    DATASETS,
    DEFAULT_TREE,
    INPUT_KINDS,
    DatasetSpec,
    bind_tree,
    load_dataset,
    register_dataset,
)
from hierviz.data.splits import check_split, grouped_split
from hierviz.data.toys import toy_encoder_features, toy_tangent_points
from hierviz.data.trees import TREES, align_tree, load_tree, read_tree_json, register_tree, tree_source

__all__ = [
    "DATASETS",
    "DEFAULT_TREE",
    "MEDMNIST_INFO",
    "TREES",
    "ArrayDataset",
    "ContrastiveDataset",
    "DatasetInfo",
    "DatasetSpec",
    "INPUT_KINDS",
    "EvalTransform",
    "FeatureViews",
    "TransformDataset",
    "TwoViewTransform",
    "align_tree",
    "bind_tree",
    "blur_kernel_size",
    "check_split",
    "data_search_dirs",
    "cache_dir",
    "eval_transform",
    "find_data_file",
    "grouped_split",
    "load_dataset",
    "load_image_folder",
    "load_medmnist",
    "load_npz",
    "load_tree",
    "read_tree_json",
    "register_dataset",
    "register_tree",
    "toy_encoder_features",
    "toy_tangent_points",
    "tree_source",
]

# The augmentation pipeline needs torchvision, whose import costs seconds; load it on first
# use so that ``from hierviz.data import load_tree`` stays fast in notebooks.
_TRANSFORMS = {
    "ContrastiveDataset",
    "EvalTransform",
    "FeatureViews",
    "TransformDataset",
    "TwoViewTransform",
    "blur_kernel_size",
    "eval_transform",
}


def __getattr__(name: str):
    if name in _TRANSFORMS:
        # heavy: torchvision (transforms imports it), imported on first use of a transform name
        from hierviz.data import transforms

        return getattr(transforms, name)
    raise AttributeError(f"module 'hierviz.data' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _TRANSFORMS)
