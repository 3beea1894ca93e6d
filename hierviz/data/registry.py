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

import inspect
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from os import PathLike
from pathlib import Path
from typing import Any

from hierviz._registry import Registry, unknown_message
from hierviz.data.base import ArrayDataset, DatasetInfo
from hierviz.data.trees import align_tree, is_placeholder_classes, load_tree

__all__ = [
    "DATASETS",
    "DEFAULT_TREE",
    "DatasetSpec",
    "bind_tree",
    "load_dataset",
    "register_dataset",
]


@dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset.

    Attributes
    ----------
    name : str
        The registered (lower-case) name.
    loader : callable
        ``loader()`` or ``loader(data_dir=...)`` → :class:`~hierviz.data.ArrayDataset`.
    default_tree : str or None
        Tree used when the dataset is given without one (a tree name or JSON path).
    info : DatasetInfo
        File name, kind, fetch command, one-line description.
    """

    name: str
    loader: Callable[..., ArrayDataset]
    default_tree: str | None
    info: DatasetInfo

    # shortcuts, so that ``DATASETS[name].fetch`` reads as before 0.2 (DATASETS held DatasetInfo)
    @property
    def filename(self) -> str:
        """``info.filename``."""
        return self.info.filename

    @property
    def kind(self) -> str:
        """``info.kind``."""
        return self.info.kind

    @property
    def fetch(self) -> str:
        """``info.fetch``."""
        return self.info.fetch

    @property
    def description(self) -> str:
        """``info.description``."""
        return self.info.description

    def load(self, data_dir: str | PathLike | None = None) -> ArrayDataset:
        """Call the loader (passing ``data_dir`` if it takes one) and check what it returns.

        Raises
        ------
        TypeError
            The loader returned something other than an ArrayDataset.
        """
        if _takes_data_dir(self.loader):
            ds = self.loader(data_dir=data_dir)
        else:
            ds = self.loader()
        if not isinstance(ds, ArrayDataset):
            raise TypeError(
                f"dataset loader {self.name!r} ({getattr(self.loader, '__qualname__', self.loader)!r}) returned "
                f"{type(ds).__name__}; a registered loader must return a hierviz.data.ArrayDataset"
            )
        return ds


def _takes_data_dir(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "data_dir" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


class DatasetRegistry(Registry[DatasetSpec]):
    """:class:`~hierviz._registry.Registry` of :class:`DatasetSpec`, also readable as a mapping.

    ``DATASETS[name]`` is ``DATASETS.get(name)``; ``keys()`` / ``values()`` / ``items()``
    list the entries in registration order.
    """

    def __getitem__(self, name: str) -> DatasetSpec:
        return self.get(name)

    def keys(self) -> list[str]:
        """Registered names."""
        return self.names()

    def values(self) -> list[DatasetSpec]:
        """Registered specs."""
        return [v for _, v in self.items()]


#: Every dataset name :func:`load_dataset` accepts (built-ins and user registrations).
DATASETS: DatasetRegistry = DatasetRegistry("dataset")


def register_dataset(
    name: str,
    *,
    default_tree: str | PathLike | None = None,
    info: DatasetInfo | str | None = None,
    replace: bool = False,
) -> Callable[[Callable[..., ArrayDataset]], Callable[..., ArrayDataset]]:
    """Decorator registering a loader function under ``name`` for :func:`load_dataset`.

    Parameters
    ----------
    name : str
        Dataset name (case-insensitive; stored lower-case).
    default_tree : str or PathLike, optional
        Tree name or tree JSON path used when the dataset is given without ``--tree``.
    info : DatasetInfo or str, optional
        File name / fetch command / description; a str is the description. Default: the
        first line of the loader's docstring as description.
    replace : bool, default False
        Allow re-registering an existing name.

    Returns
    -------
    callable
        A decorator that registers the loader and returns it unchanged.

    Raises
    ------
    ValueError
        ``name`` is empty or already registered (without ``replace=True``).
    TypeError
        ``info`` has the wrong type, or the decorated object is not callable.

    Examples
    --------
    >>> import numpy as np
    >>> from hierviz.data import ArrayDataset, load_dataset
    >>> @register_dataset("doc-toy", default_tree="two-step")
    ... def doc_toy():
    ...     '''Four blank images.'''
    ...     return ArrayDataset(np.zeros((4, 2, 2, 3), np.uint8), np.array([0, 1, 0, 1]), ["a", "b"], name="doc-toy")
    >>> load_dataset("doc-toy").classes, DEFAULT_TREE["doc-toy"], DATASETS["doc-toy"].description
    (['a', 'b'], 'two-step', 'Four blank images.')
    >>> DATASETS.unregister("doc-toy")
    """
    if info is not None and not isinstance(info, (DatasetInfo, str)):
        raise TypeError(f"info must be a DatasetInfo or a description str, got {type(info).__name__}")
    if default_tree is not None and not isinstance(default_tree, (str, PathLike)):
        raise TypeError(f"default_tree must be a tree name or path, got {type(default_tree).__name__}")

    def deco(loader: Callable[..., ArrayDataset]) -> Callable[..., ArrayDataset]:
        if not callable(loader):
            raise TypeError(f"register_dataset({name!r}) decorates a loader function, got {type(loader).__name__}")
        if isinstance(info, DatasetInfo):
            meta = info
        else:
            doc = (inspect.getdoc(loader) or "").strip().splitlines()
            meta = DatasetInfo(description=info if isinstance(info, str) else (doc[0] if doc else ""))
        key = str(name).strip().lower()
        tree = None if default_tree is None else str(default_tree)
        DATASETS.register(name, DatasetSpec(key, loader, tree, meta), replace=replace)
        return loader

    return deco


class _DefaultTreeView(Mapping[str, str]):
    """Read-only ``{dataset name: default tree}`` over :data:`DATASETS` (datasets that have one)."""

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str) or name not in DATASETS:
            raise KeyError(name)
        tree = DATASETS.get(name).default_tree
        if tree is None:
            raise KeyError(name)
        return tree

    def __iter__(self) -> Iterator[str]:
        return (n for n, spec in DATASETS.items() if spec.default_tree is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"DEFAULT_TREE({dict(self)!r})"


#: The tree used when a dataset is given without one (CLI / notebooks); set by ``register_dataset``.
DEFAULT_TREE: Mapping[str, str] = _DefaultTreeView()


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
        ds = DATASETS.get(name_or_path).load(data_dir)
    else:
        from hierviz.data.loaders.image_folder import load_image_folder
        from hierviz.data.loaders.npz import load_npz

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
