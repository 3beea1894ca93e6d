"""Label trees bundled with hierviz, and matching a tree to a dataset's classes.

Each bundled tree is a JSON file in ``hierviz/data/trees/`` in the
:meth:`hierviz.tree.LabelTree.from_dict` format ``{"name", "source", "leaf_order",
"tree"}``; ``"source"`` cites where the taxonomy comes from.

=====================  =====  ======  ==========================================================
name                   C      L       taxonomy (source)
=====================  =====  ======  ==========================================================
``two-step``           7      3       HAM10000: melanocytic / non-melanocytic -> benign /
                                      malignant -> diagnosis (dermoscopy two-step algorithm,
                                      Argenziano et al. 2003)
``benign-malignant``   7      2       HAM10000 flat benign / malignant (paper 01 §4.1, tree i)
``ham-lineage``        7      2       HAM10000 melanocytic / keratinocytic / vascular /
                                      fibrohistiocytic (after paper 01 §4.1, tree ii)
``breakhis``           8      2       BreakHis benign / malignant -> 8 subtypes (paper 01 Fig. 1)
``breastmnist``        2      1       BreastMNIST malignant vs normal+benign (MedMNIST v2)
``bloodmnist``         8      2..4    BloodMNIST haematopoietic lineage (unbalanced)
``cifar100``           100    2       CIFAR-100 20 superclasses -> 100 classes (paper 02)
=====================  =====  ======  ==========================================================
"""
from __future__ import annotations

import json
import re
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any, Mapping, Sequence

from hierviz.tree import LabelTree

#: Bundled tree names -> JSON file name in ``hierviz/data/trees/``.
TREES: dict[str, str] = {
    "two-step": "two-step.json",
    "benign-malignant": "benign-malignant.json",
    "ham-lineage": "ham-lineage.json",
    "breakhis": "breakhis.json",
    "breastmnist": "breastmnist.json",
    "bloodmnist": "bloodmnist.json",
    "cifar100": "cifar100.json",
}

#: The tree used when a dataset is given without one (CLI / notebooks).
DEFAULT_TREE: dict[str, str] = {
    "ham10000": "two-step",
    "ham10000-sample": "two-step",
    "dermamnist": "two-step",
    "breastmnist": "breastmnist",
    "bloodmnist": "bloodmnist",
    "cifar100": "cifar100",
}

_PLACEHOLDER = re.compile(r"class_(\d+)")


def _valid_names() -> str:
    return ", ".join(repr(n) for n in TREES)


def read_tree_json(name_or_path: str | PathLike) -> dict:
    """The parsed JSON object of a bundled tree name or a tree JSON file.

    Parameters
    ----------
    name_or_path : str or PathLike
        A name from :data:`TREES`, or a path to a ``.json`` file in the
        :meth:`~hierviz.tree.LabelTree.from_dict` format.

    Returns
    -------
    dict
        The object as stored (``"name"``, ``"source"``, optional ``"leaf_order"``, and
        one of ``"tree"`` / ``"parents"`` / ``"paths"``). A file without ``"name"`` gets
        its stem as name.

    Raises
    ------
    ValueError
        Unknown name that is not an existing file (the message lists the valid names),
        or a file that is not a JSON object.
    TypeError
        ``name_or_path`` is neither str nor PathLike.
    """
    if not isinstance(name_or_path, (str, PathLike)):
        raise TypeError(f"name_or_path must be a tree name or a path, got {type(name_or_path).__name__}")
    if isinstance(name_or_path, str) and name_or_path in TREES:
        text = resources.files("hierviz.data").joinpath("trees", TREES[name_or_path]).read_text(encoding="utf-8")
        stem = name_or_path
        where = f"bundled tree {name_or_path!r}"
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise ValueError(
                f"name_or_path: unknown tree {str(name_or_path)!r} (not a bundled name and no such file); "
                f"valid names: {_valid_names()}; or pass a path to a tree JSON file"
            )
        text, stem, where = path.read_text(encoding="utf-8"), path.stem, str(path)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    obj.setdefault("name", stem)
    return obj


def load_tree(name_or_path: str | PathLike | Mapping[str, Any]) -> LabelTree:
    """Load a bundled label tree by name, or a tree JSON file / parsed dict.

    Parameters
    ----------
    name_or_path : str, PathLike or Mapping
        A name from :data:`TREES` (``"two-step"``, ``"benign-malignant"``,
        ``"ham-lineage"``, ``"breakhis"``, ``"breastmnist"``, ``"bloodmnist"``,
        ``"cifar100"``), a path to a JSON file, or an already parsed JSON object.

    Returns
    -------
    LabelTree
        Leaf order = the JSON's ``"leaf_order"`` if present (for bundled trees: the
        dataset's label order), else the order of first appearance.

    Raises
    ------
    ValueError
        Unknown name (lists the valid ones), unreadable JSON, or a tree refused by
        :meth:`LabelTree.from_dict` (duplicate names, cycles, bad ``leaf_order`` ...).
    TypeError
        Wrong argument type.

    Examples
    --------
    >>> t = load_tree("two-step")
    >>> t.leaves
    ['nv', 'mel', 'bkl', 'bcc', 'akiec', 'vasc', 'df']
    >>> t.ancestors("mel")
    ['root', 'melanocytic', 'melanocytic_malignant', 'mel']
    """
    if isinstance(name_or_path, LabelTree):
        return name_or_path
    obj = dict(name_or_path) if isinstance(name_or_path, Mapping) else read_tree_json(name_or_path)
    return LabelTree.from_dict(obj)


def tree_source(name_or_path: str | PathLike) -> str:
    """The ``"source"`` citation string of a bundled tree or tree JSON file.

    Parameters
    ----------
    name_or_path : str or PathLike
        As for :func:`read_tree_json`.

    Returns
    -------
    str
        Empty if the JSON has no ``"source"``.
    """
    return str(read_tree_json(name_or_path).get("source", ""))


def is_placeholder_classes(classes: Sequence[str]) -> bool:
    """True if ``classes`` is exactly ``["class_0", "class_1", ...]`` (unnamed labels).

    Parameters
    ----------
    classes : Sequence[str]

    Returns
    -------
    bool
    """
    return len(classes) > 0 and all(
        (m := _PLACEHOLDER.fullmatch(str(c))) is not None and int(m.group(1)) == i for i, c in enumerate(classes)
    )


def align_tree(tree: LabelTree, classes: Sequence[str]) -> LabelTree:
    """Re-order a tree's leaves to a dataset's class list (leaf index ``i`` = class ``i``).

    Parameters
    ----------
    tree : LabelTree
        Its leaves must be exactly the names in ``classes``.
    classes : Sequence[str]
        The dataset's class names, index order (e.g. ``ArrayDataset.classes``).

    Returns
    -------
    LabelTree
        ``tree.with_leaf_order(classes)``.

    Raises
    ------
    ValueError
        The names differ; the message lists the classes missing from the tree, the
        leaves with no data class, and repeated class names. For placeholder classes
        (``class_0`` ...) it points to :func:`bind_tree` / a ``"leaf_order"``.
    TypeError
        ``tree`` is not a LabelTree, or ``classes`` is a bare string.

    Examples
    --------
    >>> align_tree(load_tree("two-step"), ["akiec", "bcc", "bkl", "df", "mel", "nv", "vasc"]).leaves[:2]
    ['akiec', 'bcc']
    """
    if not isinstance(tree, LabelTree):
        raise TypeError(f"tree must be a LabelTree, got {type(tree).__name__}")
    if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence):
        raise TypeError(f"classes must be a sequence of class names, got {type(classes).__name__}")
    classes = [str(c) for c in classes]
    leaves = set(tree.leaves)
    not_in_tree = [c for c in classes if c not in leaves]
    no_data = [n for n in tree.leaves if n not in set(classes)]
    dup = sorted({c for c in classes if classes.count(c) > 1})
    if not_in_tree or no_data or dup:
        parts = []
        if not_in_tree:
            parts.append(f"data classes not among the tree's leaves: {not_in_tree}")
        if no_data:
            parts.append(f"tree leaves with no data class: {no_data}")
        if dup:
            parts.append(f"repeated class names: {dup}")
        hint = ""
        if is_placeholder_classes(classes):
            hint = (
                "; the data has unnamed classes (class_0, class_1, ...): give the tree JSON a "
                "\"leaf_order\" naming label 0, 1, ... and use bind_tree(dataset, tree)"
            )
        raise ValueError(
            f"tree {tree.name or '(unnamed)'!r} does not match the dataset's {len(classes)} classes: "
            + "; ".join(parts)
            + hint
        )
    return tree.with_leaf_order(classes)
