"""The dataset registry: names → loader functions, with each dataset's default tree.

A loader is a function returning an :class:`~hierviz.data.ArrayDataset`; it may take a
``data_dir`` keyword (the folder searched instead of ``$HIERVIZ_DATA`` / ``../shared/data``).
Register one with :func:`register_dataset`, in the package (``hierviz/data/loaders/``) or
in your own module (``hierviz compare --import MODULE`` imports it first)::

    from hierviz.data import ArrayDataset, register_dataset

    @register_dataset("toy", default_tree="my_tree.json")
    def toy():
        \"\"\"Four blank 8x8 images in two classes.\"\"\"
        ...

:data:`DATASETS` is the registry (``list(DATASETS)`` gives the names, ``DATASETS[name]``
the :class:`DatasetSpec` with ``.fetch``, ``.filename``, ``.description``);
:data:`DEFAULT_TREE` is a read-only view ``{dataset name: its default tree}``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace as dc_replace
from os import PathLike
from pathlib import Path
from typing import Any

from hierviz._registry import unknown_message

# The registry itself lives in base.py (below the loaders, which register into it); re-exported here.
from hierviz.data.base import (
    DATASETS,
    DEFAULT_TREE,
    INPUT_KINDS,
    ArrayDataset,
    DatasetRegistry,
    DatasetSpec,
    register_dataset,
)
from hierviz.data.loaders.image_folder import load_image_folder
from hierviz.data.loaders.npz import load_npz
from hierviz.data.trees import align_tree, is_placeholder_classes, load_tree

__all__ = [
    "DATASETS",
    "DEFAULT_TREE",
    "DatasetRegistry",
    "DatasetSpec",
    "INPUT_KINDS",
    "bind_tree",
    "load_dataset",
    "register_dataset",
]


def load_dataset(
    name_or_path: str | PathLike,
    data_dir: str | PathLike | None = None,
    *,
    image_size: int | None = None,
) -> ArrayDataset:
    """Load a registered dataset by name, or a ``.npz`` file or an image folder.

    Parameters
    ----------
    name_or_path : str or PathLike
        A name from :data:`DATASETS` -- ``"ham10000-sample"`` (bundled, always
        available), ``"ham10000"`` (``ham10000_64.npz``), ``"breastmnist"`` and the other
        MedMNIST flags, ``"cifar100"``, or one registered with :func:`register_dataset` --
        or a path to a MedMNIST / hierviz ``.npz`` or to an image folder with one
        sub-folder per class.
    data_dir : str or PathLike, optional
        Folder to look in for named datasets instead of ``$HIERVIZ_DATA`` /
        ``../shared/data``.
    image_size : int, optional
        Resize every image to ``image_size x image_size`` (bilinear, antialiased). Image
        folders default to 64.

    Returns
    -------
    ArrayDataset

    Raises
    ------
    FileNotFoundError
        A named dataset's file is missing (the message names it and the
        ``python data_scripts/...`` command that fetches it), or a path that does not exist.
    ValueError
        An unknown name that is not a path (the message suggests the nearest names), or a
        file whose contents are refused by the loaders (the message names the file and the fix).

    Examples
    --------
    >>> ds = load_dataset("ham10000-sample")
    >>> len(ds), ds.num_classes, ds.licence.startswith("CC BY-NC 4.0")
    (2003, 7, True)
    """
    if not isinstance(name_or_path, (str, PathLike)):
        raise TypeError(f"name_or_path must be a dataset name or a path, got {type(name_or_path).__name__}")
    if isinstance(name_or_path, str) and name_or_path in DATASETS:
        ds = DATASETS.get(name_or_path).load(data_dir, image_size)
    else:
        p = Path(name_or_path).expanduser()
        if p.is_dir():
            ds = load_image_folder(p, image_size=image_size or 64)
        elif p.is_file():
            ds = load_npz(p)
        elif isinstance(name_or_path, PathLike) or os.sep in str(name_or_path) or p.suffix:
            raise FileNotFoundError(f"{p} does not exist (expected a .npz file or an image folder)")
        else:
            raise ValueError(
                f"name_or_path: {unknown_message('dataset', str(name_or_path), DATASETS.names())}; "
                "or pass a path to a MedMNIST/hierviz .npz file or an image folder (one sub-folder per class)"
            )
    if image_size is not None:
        ds = ds.resized(image_size)
    return ds


def _label_value_classes(tree_leaves: list[str], n_classes: int, prefix: str) -> list[str] | None:
    """``[prefix0, prefix1, ..., prefix(K-1)]`` if the tree's leaves are exactly those for some K ≥ n_classes."""
    k = len(tree_leaves)
    names = [f"{prefix}{i}" for i in range(k)]
    return names if k >= n_classes and set(tree_leaves) == set(names) else None


def bind_tree(dataset: ArrayDataset, tree: Any) -> tuple[ArrayDataset, Any]:
    """Match a dataset and a label tree: leaf index ``i`` becomes class ``i``.

    Data whose classes have no names (``class_0``, ``class_1``, ... as a ``.npz`` without a
    ``classes`` array, e.g. an unknown MedMNIST file) binds to a tree in one of three ways,
    tried in this order:

    1. the tree's leaves are the label values ``"0"``, ``"1"``, ... ``"K-1"`` (K ≥ C): leaf
       ``"3"`` is label 3, whatever the leaf order in the file;
    2. the tree's leaves are ``class_0`` ... ``class_{K-1}`` (K ≥ C): leaf ``class_3`` is label 3;
    3. the tree has exactly C leaves: its leaf order names label 0, 1, ... (put a
       ``"leaf_order"`` in the tree JSON).

    Data whose names hierviz supplied rather than the file (:attr:`ArrayDataset.names_inferred`:
    a MedMNIST-layout file, named by its file name, e.g. RetinaMNIST's ``grade_0`` ...) binds to
    a tree whose leaves are the integer labels ``"0"`` ... by rule 1 as well, with a one-line
    UserWarning saying so. Where a file's own names are integers in another order than the
    labels, both readings fit: the names win and a UserWarning says so.

    Then :func:`hierviz.data.align_tree` re-orders the tree's leaves to the dataset's classes.

    Parameters
    ----------
    dataset : ArrayDataset
    tree : LabelTree, str, PathLike or Mapping
        A tree, a registered tree name, a tree JSON path or a parsed tree object (see
        :func:`hierviz.data.load_tree`).

    Returns
    -------
    (ArrayDataset, LabelTree)
        The (possibly renamed) dataset and the aligned tree, ``tree.leaves == dataset.classes``.

    Raises
    ------
    ValueError
        Class names and leaves differ (the message names both sides and the ``leaf_order`` hint).
    TypeError
        ``dataset`` is not an ArrayDataset.

    Examples
    --------
    >>> import numpy as np
    >>> ds = ArrayDataset(np.zeros((3, 2, 2, 3), np.uint8), np.array([0, 1, 2]), ["class_0", "class_1", "class_2"])
    >>> ds2, t = bind_tree(ds, {"tree": {"root": {"a": ["2", "0"], "b": ["1"]}}})
    >>> ds2.classes, t.leaves, t.parent("2")
    (['0', '1', '2'], ['0', '1', '2'], 'a')
    """
    if not isinstance(dataset, ArrayDataset):
        raise TypeError(f"dataset must be an ArrayDataset, got {type(dataset).__name__}")
    tree = load_tree(tree)
    c = dataset.num_classes
    leaves = list(tree.leaves)
    by_name = set(leaves) == set(dataset.classes) and len(set(dataset.classes)) == c
    integer = _label_value_classes(leaves, c, "")
    if is_placeholder_classes(dataset.classes):
        named = integer or _label_value_classes(leaves, c, "class_")
        if named is not None:
            dataset = dataset.with_classes(named) if len(named) == c else _with_more_classes(dataset, named)
        elif tree.num_leaves == c:
            dataset = dataset.with_classes(leaves)
    elif integer is not None and dataset.names_inferred and not by_name:
        # no names in the file (hierviz supplied e.g. MedMNIST's grade_0 ...): integer leaves are the labels
        warnings.warn(
            f"bind_tree: {dataset.name or 'the dataset'} carries no class names; the tree's leaves "
            f"{_short(integer)} are bound to the integer labels (leaf '0' is label 0; the names "
            f"{_short(dataset.classes)} hierviz looked up from the file name are not used)",
            UserWarning,
            stacklevel=2,
        )
        named = dc_replace(dataset, names_inferred=False)
        dataset = named.with_classes(integer) if len(integer) == c else _with_more_classes(named, integer)
    elif integer is not None and by_name and dataset.classes != integer[:c]:
        # the file names its classes with integers in another order: both readings fit
        warnings.warn(
            f"bind_tree: the tree's leaves {_short(integer)} match {dataset.name or 'the dataset'}'s class names "
            f"{_short(dataset.classes)} by name and also the integer labels; bound by name (leaf "
            f"{dataset.classes[0]!r} is label 0), as the file names them",
            UserWarning,
            stacklevel=2,
        )
    return dataset, align_tree(tree, dataset.classes)


def _short(names: list[str], n: int = 4) -> str:
    return "[" + ", ".join(repr(x) for x in names[:n]) + (", ...]" if len(names) > n else "]")


def _with_more_classes(dataset: ArrayDataset, classes: list[str]) -> ArrayDataset:
    """Same data with a longer class list (labels unchanged; the extra classes have no images)."""
    return dc_replace(dataset, classes=list(classes))
