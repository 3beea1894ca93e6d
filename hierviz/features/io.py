"""The features ``.npz`` format: frozen image features, their labels, groups, class names and splits.

A features file (Paper 03 (Hyper-DINO) §2.1: the frozen encoder outputs that the
Hyperbolic Mapper takes as input) is an ``.npz`` with

===========  ==================  ==============================================================
key          shape, dtype        meaning
===========  ==================  ==============================================================
features     (N, D) float16/32   one row per image (float16 halves the file, §2.1)
labels       (N,) int            class index in ``0 .. C-1``
classes      (C,) str            class names (optional; default ``"0" .. "C-1"``)
groups       (N,) int or str     patient / lesion id, for grouped splits (optional)
split        (N,) str            ``"train"``, ``"val"`` or ``"test"`` (optional)
===========  ==================  ==============================================================

:func:`save_features` writes one (``numpy.savez_compressed``), :func:`load_features` reads
and checks one: every problem is a one-line ``ValueError`` naming the file and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.data.loaders._io import data_error, open_npz

__all__ = ["FEATURES_FIX", "SPLITS", "FeaturesData", "load_features", "save_features"]

#: The fix named by every features-file error.
FEATURES_FIX = (
    "write it with hierviz.features.save_features(path, FeaturesData(features=(N, D) float, labels=(N,) int, ...)) "
    "or 'hierviz features'"
)
#: The split names a features file may hold.
SPLITS = ("train", "val", "test")


@dataclass
class FeaturesData:
    """Frozen features of a data set (the content of a features ``.npz``).

    Attributes
    ----------
    features : numpy.ndarray, shape (N, D), float32 or float16
        Finite feature vectors.
    labels : numpy.ndarray, shape (N,), int64
        Class indices in ``0 .. len(classes) - 1``.
    classes : list of str
        Class names.
    groups : numpy.ndarray, shape (N,), optional
        Group ids (patients, lesions); samples of one group never cross folds.
    split : numpy.ndarray of str, shape (N,), optional
        ``"train"`` / ``"val"`` / ``"test"`` per row (the split of the run they came from).
    source : str
        Where the features came from (a run folder, a checkpoint), for the record.

    Raises
    ------
    ValueError
        On construction, when shapes disagree, values are non-finite, labels are negative or
        beyond ``classes``, or a split name is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> f = FeaturesData(np.zeros((4, 3), np.float32), np.array([0, 1, 1, 0]))
    >>> f.n, f.dim, f.classes
    (4, 3, ['0', '1'])
    """

    features: np.ndarray
    labels: np.ndarray
    classes: list[str] | None = None
    groups: np.ndarray | None = None
    split: np.ndarray | None = None
    source: str = ""

    def __post_init__(self) -> None:
        self.validate(self.source or "features")

    @property
    def n(self) -> int:
        """Number of rows N."""
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        """Feature dimension D."""
        return int(self.features.shape[1])

    def validate(self, where: str = "features") -> None:
        """Check shapes, dtypes and values (called on construction); ``where`` names the file.

        Raises
        ------
        ValueError
            One line ``could not read <where>: <what>; <fix>`` (see the class docstring).
        """
        X = np.asarray(self.features)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise data_error(where, f"'features' must be a non-empty (N, D) array, got shape {X.shape}", FEATURES_FIX)
        if X.dtype.kind not in "fiu":
            raise data_error(where, f"'features' must be numeric, got dtype {X.dtype}", FEATURES_FIX)
        if X.dtype not in (np.float16, np.float32):
            X = X.astype(np.float32)
        if not np.isfinite(X).all():
            raise data_error(where, f"'features' holds {int((~np.isfinite(X)).sum())} NaN/inf values", FEATURES_FIX)
        self.features = X
        y = np.asarray(self.labels)
        if y.shape != (X.shape[0],):
            raise data_error(
                where, f"'labels' must have shape ({X.shape[0]},) like 'features', got {y.shape}", FEATURES_FIX
            )
        if y.dtype.kind not in "iu":
            raise data_error(where, f"'labels' must be integers, got dtype {y.dtype}", FEATURES_FIX)
        self.labels = y.astype(np.int64)
        if int(self.labels.min()) < 0:
            raise data_error(where, "'labels' holds negative values", FEATURES_FIX)
        if self.classes is None:
            self.classes = [str(i) for i in range(int(self.labels.max()) + 1)]
        self.classes = [str(c) for c in self.classes]
        if int(self.labels.max()) >= len(self.classes):
            raise data_error(
                where,
                f"'labels' reaches {int(self.labels.max())} but 'classes' names {len(self.classes)}",
                FEATURES_FIX,
            )
        if self.groups is not None:
            g = np.asarray(self.groups)
            if g.shape != (X.shape[0],):
                raise data_error(where, f"'groups' must have shape ({X.shape[0]},), got {g.shape}", FEATURES_FIX)
            self.groups = g
        if self.split is not None:
            s = np.asarray(self.split).astype(str)
            if s.shape != (X.shape[0],):
                raise data_error(where, f"'split' must have shape ({X.shape[0]},), got {s.shape}", FEATURES_FIX)
            bad = sorted(str(v) for v in set(np.unique(s).tolist()) - set(SPLITS))
            if bad:
                raise data_error(where, f"'split' holds unknown names {bad} (allowed: {list(SPLITS)})", FEATURES_FIX)
            self.split = s

    def rows(self, which: str) -> np.ndarray:
        """Indices of the rows of one split (``"train"``, ``"val"``, ``"test"``).

        Raises
        ------
        ValueError
            The file has no ``split`` or ``which`` is not a split name.
        """
        if which not in SPLITS:
            raise ValueError(f"which must be one of {list(SPLITS)}, got {which!r}")
        if self.split is None:
            raise ValueError("these features have no 'split'; export them from a run with 'hierviz features --run'")
        return np.flatnonzero(self.split == which)


def save_features(path: str | PathLike, data: FeaturesData, *, float16: bool = False) -> Path:
    """Write a features ``.npz`` (``numpy.savez_compressed``); parent folders are created.

    Parameters
    ----------
    path : str or PathLike
        Destination ``.npz``.
    data : FeaturesData
        What to write.
    float16 : bool, default False
        Store ``features`` as float16 (Paper 03 (Hyper-DINO) §2.1): half the bytes,
        about 3 significant digits.

    Returns
    -------
    pathlib.Path
        The file written: ``path``, ``path + ".npz"`` when it lacks the suffix, or
        ``path/features.npz`` when ``path`` is an existing folder.

    Raises
    ------
    ValueError
        Float16 requested for features beyond float16's range (|x| > 65504).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "f.npz")
    >>> f = FeaturesData(np.eye(3, dtype=np.float32), np.array([0, 1, 2]), classes=["a", "b", "c"])
    >>> _ = save_features(p, f, float16=True)
    >>> g = load_features(p)
    >>> g.features.dtype, g.classes
    (dtype('float16'), ['a', 'b', 'c'])
    """
    if not str(path).strip():
        raise ValueError("features path is empty; give a file name ending in .npz")
    path = Path(path)
    if path.is_dir():  # np.savez would write <folder>.npz beside it and report the folder
        path = path / "features.npz"
    elif path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")  # what np.savez_compressed writes: return that path
    X = np.asarray(data.features)
    if float16:
        if np.abs(X).max() > np.finfo(np.float16).max:
            raise ValueError(
                f"{path}: features exceed float16's range (max |x| {np.abs(X).max():.3g}); scale them first"
            )
        X = X.astype(np.float16)
    arrays: dict[str, Any] = {
        "features": X,
        "labels": data.labels.astype(np.int64),
        "classes": np.asarray(data.classes, dtype=str),
    }
    if data.groups is not None:
        g = np.asarray(data.groups)
        arrays["groups"] = g.astype(str) if g.dtype == object else g
    if data.split is not None:
        arrays["split"] = np.asarray(data.split, dtype=str)
    if data.source:
        arrays["source"] = np.asarray(data.source, dtype=str)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def load_features(path: str | PathLike) -> FeaturesData:
    """Read and check a features ``.npz`` (see the module docstring for the keys).

    Parameters
    ----------
    path : str or PathLike
        The file.

    Returns
    -------
    FeaturesData

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Not an ``.npz``, a required key missing, or bad shapes/values: one line naming the
        file and the fix.
    """
    path = Path(path)
    with open_npz(path) as z:
        for key in ("features", "labels"):
            if key not in z:
                raise data_error(
                    path, f"no array {key!r} (has {sorted(z.files)}); is this a features file?", FEATURES_FIX
                )
        X, y = z["features"], z["labels"]
        classes = [str(c) for c in z["classes"]] if "classes" in z else None
        groups = z["groups"] if "groups" in z else None
        split = z["split"] if "split" in z else None
        source = str(z["source"]) if "source" in z else str(path)
    data = FeaturesData(X, y, classes, groups, split, source=str(path))  # errors name the file
    data.source = source
    return data
