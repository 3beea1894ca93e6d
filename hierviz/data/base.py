"""The in-memory dataset type, its provenance record, and where data files are found.

Everything hierviz loads becomes an :class:`ArrayDataset` (uint8 ``(N, H, W, 3)`` images,
or float ``(N, D)`` feature vectors for text and precomputed features; int64 labels, class names, optional group ids for leak-free splits, citation and licence).
The loaders that build one live in :mod:`hierviz.data.loaders`, the name → loader registry
in :mod:`hierviz.data.registry`.

Where the files come from
-------------------------
:func:`find_data_file` looks in the folders of :func:`hierviz.data.folders.data_search_dirs`:
``$HIERVIZ_DATA``, then ``../shared/data`` beside the checkout, then the sample folder bundled
with the package (``hierviz/data/sample/``).
Nothing is ever downloaded here; a missing file raises :class:`FileNotFoundError` naming
the file and the ``python data_scripts/...`` command that fetches it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from hierviz._registry import Registry
from hierviz.data.folders import (
    CACHE_ENV_VAR,
    ENV_VAR,
    bundled_sample_dir,
    cache_dir,
    data_search_dirs,
)
from hierviz.data.splits import grouped_split

__all__ = [
    "ENV_VAR",
    "DATASETS",
    "DEFAULT_TREE",
    "ArrayDataset",
    "DatasetInfo",
    "DatasetRegistry",
    "DatasetSpec",
    "INPUT_KINDS",
    "register_dataset",
    "bundled_sample_dir",
    "data_search_dirs",
    "cache_dir",
    "CACHE_ENV_VAR",
    "find_data_file",
]


@dataclass(frozen=True)
class DatasetInfo:
    """Where a named dataset lives and how to get it.

    Attributes
    ----------
    filename : str, default ""
        File name searched by :func:`find_data_file` (or inside the package for the
        sample); empty for datasets that are not one file (e.g. built in code).
    kind : str, default "custom"
        ``"bundled"``, ``"npz"`` (hierviz/HAM10000 keys), ``"medmnist"`` or ``"custom"``.
    fetch : str, default ""
        Shell command (run from the checkout) that creates the file.
    description : str, default ""
        One line for listings.

    Examples
    --------
    >>> DatasetInfo("toy.npz", description="a toy").kind
    'custom'
    """

    filename: str = ""
    kind: str = "custom"
    fetch: str = ""
    description: str = ""


def _fetch_command(filename: str) -> str:
    for _, spec in DATASETS.items():
        if spec.info.filename == filename and spec.info.fetch:
            return spec.info.fetch
    return "see data_scripts/README.md"


def find_data_file(filename: str, data_dir: str | PathLike | None = None) -> Path:
    """Locate a data file: ``data_dir`` if given, else ``$HIERVIZ_DATA``, ``../shared/data``, the bundled sample.

    Parameters
    ----------
    filename : str
        A file name such as ``"ham10000_64.npz"`` (no folders).
    data_dir : str or PathLike, optional
        Search only this folder.

    Returns
    -------
    pathlib.Path
        The first existing ``<folder>/<filename>``.

    Raises
    ------
    FileNotFoundError
        Not found; the message names the file, the folders searched, and the
        ``python data_scripts/...`` command that fetches it.
    TypeError
        ``filename`` is not a string.

    Examples
    --------
    >>> find_data_file("ham10000_sample.npz").name
    'ham10000_sample.npz'
    """
    if not isinstance(filename, str) or not filename:
        raise TypeError(f"filename must be a non-empty str, got {filename!r}")
    dirs = data_search_dirs(data_dir)
    for d in dirs:
        p = d / filename
        if p.is_file():
            return p
    where = ", ".join(str(d) for d in dirs)
    raise FileNotFoundError(
        f"data file {filename!r} not found (searched: {where}). Fetch it with `{_fetch_command(filename)}` "
        f"(run from the checkout; it writes to ${ENV_VAR} or ../shared/data), or set {ENV_VAR} to the folder "
        "that holds it."
    )


# ---------------------------------------------------------------------------------------------- dataset
@dataclass(eq=False)
class ArrayDataset:
    """An image (or feature-vector) classification dataset held in memory as numpy arrays.

    Parameters
    ----------
    images : numpy.ndarray of uint8 (N, H, W, 3), float (N, D) or int64 (N, s, 2)
        RGB images, values 0..255; or a *vector dataset*: one float feature vector per
        sample (e.g. TF-IDF of a text, precomputed features), stored as float32, finite; or
        a *text dataset* (see the notes).
    labels : numpy.ndarray of int, shape (N,)
        Class index per image, in ``0 .. len(classes) - 1`` (stored as int64).
    classes : list of str
        Class names, label-index order; must be unique.
    groups : numpy.ndarray, shape (N,), optional
        Group id per image (HAM10000 ``lesion_id``, a patient id) for leak-free splits
        (:func:`hierviz.data.grouped_split`); ``None`` if images are independent.
    name, citation, licence : str
        Provenance, shown by ``repr`` and kept by :meth:`subset`.
    official_split : numpy.ndarray of str, shape (N,), optional
        ``"train"`` / ``"val"`` / ``"test"`` per image where the source defines a split
        (MedMNIST, CIFAR-100).
    ids : numpy.ndarray of str, shape (N,), optional
        Per-image identifiers (HAM10000 ``image_id``, file paths of an image folder).
    names_inferred : bool, default False
        True when the file carries no class names and ``classes`` were supplied by hierviz
        (a MedMNIST file's official names, looked up by its file name):
        :func:`hierviz.data.bind_tree` then also binds a tree whose leaves are the integer
        labels ``"0"``, ``"1"``, and so on. ``class_0`` ... placeholders are always
        unnamed.

    Notes
    -----
    Vector datasets (:attr:`is_vector`) run through the same pipeline as images: the
    transforms hand each vector to the model as a ``(D, 1, 1)`` tensor (a 1 x 1 "image"
    with D channels), views are feature-dropout copies (:class:`hierviz.data.FeatureViews`),
    and the ``mlp`` encoder (:data:`hierviz.models.ENCODERS`) flattens it. ``image_size``
    is then ``(D, 1)`` and :meth:`resized` is refused. Text datasets (:attr:`is_text`) hold
    int64 ``(N, s, 2)`` token ids and padding masks; the transforms hand a sample to the model
    as a ``(1, s, 2)`` int64 tensor (:mod:`hierviz.data.text`), read by a text encoder
    (``hyilr-text``); ``image_size`` is ``(s, 1)``.

    Raises
    ------
    TypeError
        ``images`` neither uint8 nor float, labels not integers.
    ValueError
        Wrong shapes or lengths, labels outside ``0..C-1``, repeated class names,
        ``official_split`` values other than train/val/test.

    Examples
    --------
    >>> import numpy as np
    >>> ds = ArrayDataset(np.zeros((4, 8, 8, 3), np.uint8), np.array([0, 1, 1, 0]), ["a", "b"], name="toy")
    >>> ds
    ArrayDataset('toy', N=4, 8x8, C=2)
    >>> ds.images.shape[1:], ds.classes[:2]
    ((8, 8, 3), ['a', 'b'])
    >>> ArrayDataset(np.ones((3, 5)), np.array([0, 1, 0]), ["a", "b"], name="vec")
    ArrayDataset('vec', N=3, D=5, C=2)
    """

    images: np.ndarray
    labels: np.ndarray
    classes: list[str]
    groups: np.ndarray | None = None
    name: str = ""
    citation: str = ""
    licence: str = ""
    official_split: np.ndarray | None = None
    ids: np.ndarray | None = field(default=None, repr=False)
    names_inferred: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        im = np.asarray(self.images)
        if im.ndim == 2 and np.issubdtype(im.dtype, np.floating):  # a vector dataset (N, D)
            im = im.astype(np.float32, copy=False)
            if not np.isfinite(im).all():
                raise ValueError("images: the feature vectors (N, D) hold NaN or inf")
        elif im.ndim == 3 and np.issubdtype(im.dtype, np.signedinteger):  # a text dataset (N, s, 2): ids, mask
            if im.shape[-1] != 2 or (im.size and (im.min() < 0 or im[..., 1].max() > 1)):
                raise ValueError(f"images: tokens must be (N, s, 2) ints (id >= 0, mask 0/1), got {im.shape}")
            im = im.astype(np.int64, copy=False)
        elif im.dtype != np.uint8:
            raise TypeError(
                f"images must be uint8 (0..255) images or float (N, D) feature vectors, got dtype {im.dtype}"
            )
        elif im.ndim != 4 or im.shape[-1] != 3:
            raise ValueError(f"images must have shape (N, H, W, 3) (or be float (N, D) vectors), got {im.shape}")
        y = np.asarray(self.labels)
        if y.ndim != 1 or y.shape[0] != im.shape[0]:
            raise ValueError(f"labels must have shape ({im.shape[0]},) to match images, got {y.shape}")
        if y.size and not np.issubdtype(y.dtype, np.integer):
            raise TypeError(f"labels must be integers, got dtype {y.dtype}")
        classes = [str(c) for c in self.classes]
        if len(set(classes)) != len(classes):
            dup = sorted({c for c in classes if classes.count(c) > 1})
            raise ValueError(f"classes must be unique, repeated: {dup}")
        if y.size and (y.min() < 0 or y.max() >= len(classes)):
            raise ValueError(
                f"labels must be in 0..{len(classes) - 1} (len(classes)={len(classes)}), got {y.min()}..{y.max()}"
            )
        self.images, self.labels, self.classes = im, y.astype(np.int64, copy=False), classes
        for attr in ("groups", "official_split", "ids"):
            v = getattr(self, attr)
            if v is not None:
                v = np.asarray(v)
                if v.shape != (im.shape[0],):
                    raise ValueError(f"{attr} must have shape ({im.shape[0]},), got {v.shape}")
                setattr(self, attr, v)
        if self.official_split is not None:
            bad = sorted(set(np.unique(self.official_split).tolist()) - {"train", "val", "test"})
            if bad:
                raise ValueError(f"official_split values must be 'train'/'val'/'test', got {bad}")

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        """``(image (H, W, 3) uint8, label int)`` of sample ``i``."""
        return self.images[i], int(self.labels[i])

    def __repr__(self) -> str:
        h, w = self.image_size
        grp = f", groups={np.unique(self.groups).size}" if self.groups is not None else ""
        size = f"D={h}" if self.is_vector else f"s={h}" if self.is_text else f"{h}x{w}"
        return (
            f"ArrayDataset({self.name!r}, N={len(self)}, {size}, C={self.num_classes}{grp}"
            + (f", licence={self.licence!r}" if self.licence else "")
            + ")"
        )

    @property
    def num_classes(self) -> int:
        """C, the number of classes."""
        return len(self.classes)

    @property
    def is_vector(self) -> bool:
        """True for a vector dataset (float features ``(N, D)``), False for images."""
        return self.images.ndim == 2

    is_text = property(lambda self: self.images.ndim == 3, doc="True for a text dataset: int64 ``(N, s, 2)`` tokens.")

    @property
    def image_size(self) -> tuple[int, int]:
        """``(H, W)`` of the images; ``(D, 1)`` for a vector dataset, ``(s, 1)`` for a text one."""
        if self.is_vector or self.is_text:  # (D, 1) or (s, 1): the sequence length
            return int(self.images.shape[1]), 1
        return int(self.images.shape[1]), int(self.images.shape[2])

    def class_counts(self) -> np.ndarray:
        """Images per class, shape (C,) int64, label-index order."""
        return np.bincount(self.labels, minlength=self.num_classes).astype(np.int64)

    # -------------------------------------------------------------------- derived datasets
    def subset(self, idx: Any) -> ArrayDataset:
        """The samples ``idx`` (int indices or a boolean mask of length N), same classes.

        Parameters
        ----------
        idx : array-like of int or bool
            Indices into ``0..N-1`` (negative indices are refused) or a mask of length N.

        Returns
        -------
        ArrayDataset
            Copies of the selected rows; ``classes``, ``name``, ``citation``, ``licence`` kept.

        Raises
        ------
        ValueError
            Out-of-range indices, a mask of the wrong length, or a non-1-D index.
        TypeError
            Non-integer, non-boolean indices.
        """
        idx = np.asarray(idx.detach().cpu().numpy() if hasattr(idx, "detach") else idx)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise ValueError(f"idx: boolean mask must have shape ({len(self)},), got {idx.shape}")
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = idx.astype(np.int64)
        elif not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"idx must hold integers or booleans, got dtype {idx.dtype}")
        if idx.ndim != 1:
            raise ValueError(f"idx must be 1-D, got shape {idx.shape}")
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise ValueError(f"idx must be in 0..{len(self) - 1}, got {idx.min()}..{idx.max()}")

        def take(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[idx]

        return replace(
            self,
            images=self.images[idx],
            labels=self.labels[idx],
            classes=list(self.classes),
            groups=take(self.groups),
            official_split=take(self.official_split),
            ids=take(self.ids),
        )

    def with_classes(self, classes: Sequence[str]) -> ArrayDataset:
        """The same data with renamed classes (same count, same label indices).

        Parameters
        ----------
        classes : Sequence[str]
            New names, ``len(classes) == self.num_classes``.

        Returns
        -------
        ArrayDataset

        Raises
        ------
        ValueError
            Wrong number of names or repeated names.
        """
        classes = [str(c) for c in classes]
        if len(classes) != self.num_classes:
            raise ValueError(f"classes: expected {self.num_classes} names, got {len(classes)}")
        return replace(self, classes=classes)

    def resized(self, size: int) -> ArrayDataset:
        """The same data with images resized to ``size x size`` (Pillow bilinear, antialiased).

        Parameters
        ----------
        size : int
            Output side in pixels, >= 1. Non-square images are centre-cropped first.

        Returns
        -------
        ArrayDataset
            ``self`` if the images already have that size.

        Raises
        ------
        ValueError
            ``size`` < 1, or a vector or text dataset (nothing to resize).
        """
        size = _check_size(size)
        if self.is_text and self.image_size[0] == size:  # a text loader made sequences of this length
            return self
        if self.is_vector or self.is_text:
            kind = "feature vectors" if self.is_vector else "token sequences"
            raise ValueError(f"size: dataset {self.name!r} holds {kind}, not images; it cannot be resized")
        if self.image_size == (size, size):
            return self
        from PIL import Image  # heavy: Pillow, imported only when images are resized

        out = (
            np.stack([_square_resize(Image.fromarray(im), size) for im in self.images])
            if len(self)
            else (np.zeros((0, size, size, 3), np.uint8))
        )
        return replace(self, images=out)

    def split(
        self, val: float = 0.15, test: float = 0.15, seed: int = 0, *, official: bool = False
    ) -> dict[str, ArrayDataset]:
        """Train / val / test datasets, grouped by :attr:`groups` and stratified.

        Parameters
        ----------
        val, test : float, default 0.15
            Fractions (see :func:`hierviz.data.grouped_split`).
        seed : int, default 0
        official : bool, default False
            Use :attr:`official_split` instead (MedMNIST / CIFAR-100); ``val``, ``test``
            and ``seed`` are then ignored.

        Returns
        -------
        dict[str, ArrayDataset]
            Keys ``"train"``, ``"val"``, ``"test"``.

        Raises
        ------
        ValueError
            ``official=True`` on a dataset without an official split; bad fractions.
        """
        if official:
            if self.official_split is None:
                raise ValueError(f"official=True but dataset {self.name!r} has no official_split")
            return {k: self.subset(self.official_split == k) for k in ("train", "val", "test")}
        idx = grouped_split(self.labels, self.groups, val=val, test=test, seed=seed)
        return {k: self.subset(v) for k, v in idx.items()}


def _check_size(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"image_size must be an int, got {type(size).__name__}")
    if size < 1:
        raise ValueError(f"image_size must be >= 1, got {size}")
    return int(size)


def _square_resize(img: Any, size: int) -> np.ndarray:
    """Centre-crop a PIL image to a square and resize it (bilinear, antialiased) to uint8 (size, size, 3)."""
    from PIL import Image  # heavy: Pillow, imported only when images are resized

    img = img.convert("RGB")
    w, h = img.size
    s = min(w, h)
    if w != h:
        left, top = (w - s) // 2, (h - s) // 2
        img = img.crop((left, top, left + s, top + s))
    if s != size:
        img = img.resize((size, size), Image.BILINEAR)
    return np.asarray(img, dtype=np.uint8)


# ------------------------------------------------------------------ the dataset registry
# Here, below the loaders that register into it (hierviz.data.registry re-exports every name).


def _info_field(name: str) -> property:
    """A read-only property returning ``self.info.<name>`` (a str field of :class:`DatasetInfo`)."""

    def get(self: DatasetSpec) -> str:
        return getattr(self.info, name)

    return property(get, doc=f"``info.{name}``.")


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
    inputs : {"images", "vectors", "text"}, default "images"
        What one sample is (:data:`INPUT_KINDS`); the encoder default follows it
        (:func:`hierviz.experiments.resolve_config`: vectors → ``mlp``, images → the preset's CNN).
    """

    name: str
    loader: Callable[..., ArrayDataset]
    default_tree: str | None
    info: DatasetInfo
    inputs: str = "images"

    # shortcuts, so that ``DATASETS[name].fetch`` reads as before 0.2 (DATASETS held DatasetInfo)
    filename = _info_field("filename")
    kind = _info_field("kind")
    fetch = _info_field("fetch")
    description = _info_field("description")

    @property
    def takes_image_size(self) -> bool:
        """The loader takes ``image_size`` (it reads a file made at that size when there is one)."""
        return _takes(self.loader, "image_size")

    def load(self, data_dir: str | PathLike | None = None, image_size: int | None = None) -> ArrayDataset:
        """Call the loader (passing ``data_dir`` and ``image_size`` if it takes them) and check what it returns.

        ``image_size`` reaches only a loader with an ``image_size`` parameter (e.g. ``ham10000``,
        which reads ``ham10000_32.npz`` for 32 px when present); others ignore it here
        (:func:`hierviz.data.load_dataset` resizes after loading).

        Raises
        ------
        TypeError
            The loader returned something other than an ArrayDataset.
        """
        kwargs: dict[str, Any] = {}
        if _takes(self.loader, "data_dir"):
            kwargs["data_dir"] = data_dir
        if image_size is not None and _takes(self.loader, "image_size"):
            kwargs["image_size"] = image_size
        ds = self.loader(**kwargs)
        if not isinstance(ds, ArrayDataset):
            raise TypeError(
                f"dataset loader {self.name!r} ({getattr(self.loader, '__qualname__', self.loader)!r}) returned "
                f"{type(ds).__name__}; a registered loader must return a hierviz.data.ArrayDataset"
            )
        return ds


def _takes(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


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


#: What one sample of a dataset is (``register_dataset(..., inputs=...)``).
INPUT_KINDS = ("images", "vectors", "text")

#: Every dataset name :func:`load_dataset` accepts (built-ins and user registrations).
DATASETS: DatasetRegistry = DatasetRegistry("dataset")


def register_dataset(
    name: str,
    *,
    default_tree: str | PathLike | None = None,
    info: DatasetInfo | str | None = None,
    replace: bool = False,
    inputs: str = "images",
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
    inputs : {"images", "vectors", "text"}, default "images"
        What one sample is: an image (N, H, W, C), a feature vector (N, D) or a text. The
        encoder default of a run follows it unless the encoder is set explicitly.

    Returns
    -------
    callable
        A decorator that registers the loader and returns it unchanged.

    Raises
    ------
    ValueError
        ``name`` is empty or already registered (without ``replace=True``).
        ``inputs`` is not one of :data:`INPUT_KINDS`.
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
    >>> DATASETS["doc-toy"].inputs, DATASETS["20news"].inputs
    ('images', 'vectors')
    >>> DATASETS.unregister("doc-toy")
    """
    if info is not None and not isinstance(info, (DatasetInfo, str)):
        raise TypeError(f"info must be a DatasetInfo or a description str, got {type(info).__name__}")
    if default_tree is not None and not isinstance(default_tree, (str, PathLike)):
        raise TypeError(f"default_tree must be a tree name or path, got {type(default_tree).__name__}")
    if inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {', '.join(INPUT_KINDS)}, got {inputs!r}")

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
        DATASETS.register(name, DatasetSpec(key, loader, tree, meta, inputs), replace=replace)
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
