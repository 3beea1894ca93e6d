"""Label trees bundled with hierviz, and matching a tree to a dataset's classes.

Each bundled tree is a JSON file in ``hierviz/data/trees/`` in the
:meth:`hierviz.hierarchy.LabelTree.from_dict` format ``{"name", "source", "leaf_order",
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
``hier-mnist``         100    2       hierarchical MNIST: category digit -> (category, class)
                                      digit pair (paper 02 Fig. 3)
``20news``             20     2..3    20 Newsgroups: first name token -> shared dotted prefix
                                      -> group (Lang 1995; paper 04 text stand-in)
=====================  =====  ======  ==========================================================

Trees are a registry, :data:`TREES` (``list(TREES)`` gives the names): the bundled JSON files
are registered at import, and :func:`register_tree` adds a user's file or factory, so
``load_tree("mine")`` and ``hierviz compare --import MODULE --tree mine`` find it.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

from hierviz._registry import Registry, unknown_message
from hierviz.data.base import DEFAULT_TREE  # noqa: F401 (0.1 name: the default trees moved to the dataset registry)
from hierviz.hierarchy import LabelTree
from hierviz.hierarchy._tree_checks import leaf_mismatch
from hierviz.hierarchy.io import as_tree_object, parse_tree_json

__all__ = [
    "TREES",
    "align_tree",
    "as_tree_object",
    "is_placeholder_classes",
    "load_tree",
    "read_tree_json",
    "register_tree",
    "tree_source",
]

#: Registered tree names → a tree JSON file (bundled: ``hierviz/data/trees/<name>.json``) or
#: a factory returning a LabelTree or a parsed tree object. ``list(TREES)`` gives the names.
TREES: Registry[Any] = Registry("tree")

_PLACEHOLDER = re.compile(r"class_(\d+)")


def register_tree(
    name: str, path_or_factory: str | PathLike | Callable[[], Any], *, replace: bool = False
) -> str | PathLike | Callable[[], Any]:
    """Register a tree name for :func:`load_tree` (and ``--tree NAME``).

    Parameters
    ----------
    name : str
        Tree name (case-insensitive; stored lower-case).
    path_or_factory : str, PathLike or callable
        A tree JSON file, or a function of no arguments returning a
        :class:`~hierviz.hierarchy.LabelTree` or a parsed tree object (a mapping).
    replace : bool, default False
        Allow re-registering an existing name.

    Returns
    -------
    The registered path or factory (so it can be used as a decorator on a factory:
    ``register_tree("mine", f)`` or ``functools.partial(register_tree, "mine")``).

    Raises
    ------
    FileNotFoundError
        ``path_or_factory`` is a path that is not a file.
    ValueError
        ``name`` is empty or already registered (without ``replace=True``).
    TypeError
        ``path_or_factory`` is neither a path nor callable.

    Examples
    --------
    >>> _ = register_tree("doc-pair", lambda: {"tree": {"root": ["x", "y"]}})
    >>> load_tree("doc-pair").leaves
    ['x', 'y']
    >>> TREES.unregister("doc-pair")
    """
    if isinstance(path_or_factory, (str, PathLike)):
        path = Path(path_or_factory).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"register_tree({name!r}): {path} is not a file (expected a tree JSON file)")
        entry: Any = path
    elif callable(path_or_factory):
        entry = path_or_factory
    else:
        raise TypeError(
            f"register_tree({name!r}): path_or_factory must be a JSON path or a callable, "
            f"got {type(path_or_factory).__name__}"
        )
    TREES.register(name, entry, replace=replace)
    return path_or_factory


def _register_bundled() -> None:
    folder = resources.files("hierviz.data").joinpath("trees")
    for ref in sorted(folder.iterdir(), key=lambda r: r.name):
        if ref.name.endswith(".json"):
            TREES.register(ref.name[: -len(".json")], ref)


_register_bundled()


def _looks_like_path(x: str | PathLike) -> bool:
    return isinstance(x, PathLike) or os.sep in str(x) or "/" in str(x) or Path(str(x)).suffix != ""


def _parse_json_text(text_or_bytes: str | bytes, where: str) -> Any:
    return parse_tree_json(text_or_bytes, where=where)


def read_tree_json(name_or_path: str | PathLike) -> dict:
    """The parsed JSON object of a registered tree name or a tree JSON file.

    Parameters
    ----------
    name_or_path : str or PathLike
        A name from :data:`TREES`, or a path to a ``.json`` file: the
        :meth:`~hierviz.hierarchy.LabelTree.from_dict` format, a plain parent map
        ``{"child": "parent"}``, a plain nested dict or a list of root-to-leaf paths
        (see :func:`as_tree_object`).

    Returns
    -------
    dict
        The :meth:`~hierviz.hierarchy.LabelTree.from_dict` object (``"name"``, ``"source"``,
        optional ``"leaf_order"``, and one of ``"tree"`` / ``"parents"`` / ``"paths"``); a
        plain form is wrapped in it. A file without ``"name"`` gets its stem (a registered
        tree its registered name) as name.

    Raises
    ------
    FileNotFoundError
        A path (it has a suffix or a folder) that does not exist.
    ValueError
        Unknown name that is not an existing file (the message suggests the nearest names),
        a file that is not UTF-8 JSON, or neither a JSON object nor a list.
    TypeError
        ``name_or_path`` is neither str nor PathLike.

    Examples
    --------
    >>> read_tree_json("two-step")["leaf_order"][:3]
    ['nv', 'mel', 'bkl']
    """
    if not isinstance(name_or_path, (str, PathLike)):
        raise TypeError(f"name_or_path must be a tree name or a path, got {type(name_or_path).__name__}")
    if isinstance(name_or_path, str) and name_or_path in TREES:
        key = name_or_path.strip().lower()
        entry = TREES.get(name_or_path)
        if callable(entry):
            made = entry()
            if isinstance(made, LabelTree):
                obj: Any = made.to_dict()
            elif isinstance(made, Mapping):
                obj = as_tree_object(made, name=key, where=f"tree factory {key!r}")
            else:
                raise TypeError(
                    f"tree factory {key!r} returned {type(made).__name__}; it must return a LabelTree or a mapping"
                )
            obj.setdefault("name", key)
            return obj
        where = f"tree {key!r} ({getattr(entry, 'name', entry)})"
        data, stem = entry.read_bytes(), key
    else:
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            if _looks_like_path(name_or_path):
                raise FileNotFoundError(
                    f"{path}: no such tree file; pass an existing tree JSON file or a tree name "
                    f"({', '.join(TREES.names())})"
                )
            raise ValueError(
                f"name_or_path: {unknown_message('tree', str(name_or_path), TREES.names())}; "
                "or pass a path to a tree JSON file"
            )
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ValueError(f"{path}: cannot read the tree file ({e.strerror}); check its permissions") from None
        stem, where = path.stem, str(path)
    return as_tree_object(_parse_json_text(data, where), name=stem, where=where)


def load_tree(name_or_path: str | PathLike | Mapping[str, Any] | LabelTree) -> LabelTree:
    """Load a registered label tree by name, or a tree JSON file / parsed dict.

    Parameters
    ----------
    name_or_path : str, PathLike, Mapping or LabelTree
        A name from :data:`TREES` (bundled: ``"two-step"``, ``"benign-malignant"``,
        ``"ham-lineage"``, ``"breakhis"``, ``"breastmnist"``, ``"bloodmnist"``,
        ``"cifar100"``; or one added with :func:`register_tree`), a path to a JSON file,
        an already parsed JSON object (any form of :func:`as_tree_object`: the
        ``{"name", "source", "leaf_order", "tree"}`` form, a parent map ``{"child": "parent"}``
        or a nested dict), or a LabelTree (returned as is).

    Returns
    -------
    LabelTree
        Leaf order = the JSON's ``"leaf_order"`` if present (for bundled trees: the
        dataset's label order), else the order of first appearance.

    Raises
    ------
    FileNotFoundError
        A tree file path that does not exist.
    ValueError
        Unknown name (suggests the nearest), unreadable JSON, or a tree refused by
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
    if isinstance(name_or_path, str) and name_or_path in TREES and callable(TREES.get(name_or_path)):
        made = TREES.get(name_or_path)()
        if isinstance(made, LabelTree):
            return made
    if isinstance(name_or_path, Mapping):
        return LabelTree.from_dict(as_tree_object(name_or_path, where="the tree mapping"))
    obj = read_tree_json(name_or_path)
    registered = isinstance(name_or_path, str) and name_or_path in TREES
    where = f"tree {name_or_path.strip().lower()!r}" if registered else str(Path(name_or_path).expanduser())
    try:
        return LabelTree.from_dict(obj)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: {e}") from None


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
    not_in_tree, no_data, dup = leaf_mismatch(classes, tree.leaves)
    if not_in_tree or no_data or dup:
        found = (
            ("data classes not among the tree's leaves", not_in_tree),
            ("tree leaves with no data class", no_data),
            ("repeated class names", dup),
        )
        parts = [f"{what}: {names}" for what, names in found if names]
        hint = ""
        nfc_leaves = {unicodedata.normalize("NFC", n): n for n in no_data}
        same = [(c, nfc_leaves[unicodedata.normalize("NFC", c)]) for c in not_in_tree
                if unicodedata.normalize("NFC", c) in nfc_leaves]  # fmt: skip
        if same:  # 'café' (NFD) and 'café' (NFC) print alike: say how they differ
            shown = ", ".join(f"data {ascii(c)} vs tree {ascii(t)}" for c, t in same[:3])
            hint = (
                f"; {len(same)} name(s) differ only in Unicode normalisation ({shown}): write both in one form, "
                "e.g. unicodedata.normalize('NFC', name)"
            )
        if is_placeholder_classes(classes):
            hint += (
                "; the data has unnamed classes (class_0, class_1, ...): name the tree's leaves by the label "
                'values ("0", "1", ...) or give the tree JSON a "leaf_order" naming label 0, 1, ..., '
                "and use bind_tree(dataset, tree)"
            )
        raise ValueError(
            f"tree {tree.name or '(unnamed)'!r} does not match the dataset's {len(classes)} classes: "
            + "; ".join(parts)
            + hint
        )
    return tree.with_leaf_order(classes)
