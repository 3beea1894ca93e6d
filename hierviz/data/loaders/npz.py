"""Generic ``.npz`` loader: ``images``, ``labels``, optional ``classes`` and group ids.

The hierviz layout (``ham10000_64.npz``, the bundled sample, ``cifar100.npz``, and any file
you write with ``numpy.savez_compressed``):

==================  ============================  ==================================================
key                 shape / dtype                 meaning
==================  ============================  ==================================================
``images``          (N, H, W, 3) or (N, H, W)     RGB or grey images, uint8 0..255
``labels``          (N,) or (N, 1) int            class index per image (``label`` also accepted)
``classes``         (C,) str, optional            class names in label order; default ``class_0`` ...
``lesion_id``       (N,), optional                group ids for leak-free splits (or ``groups`` /
                                                  ``patient_id``)
``image_id``        (N,) str, optional            per-image identifiers
``split``           (N,) str, optional            ``train`` / ``val`` / ``test`` (an official split)
``citation``        0-d str, optional             provenance shown by ``repr`` and the report
``licence``         0-d str, optional
==================  ============================  ==================================================

A features file (``features`` (N, D) float + ``labels``, :mod:`hierviz.features.io`; Paper 03's
frozen encoder outputs) loads as a vector dataset. A file with MedMNIST keys (``train_images`` ...) is handed to
:func:`hierviz.data.loaders.medmnist.load_medmnist`. Every refusal is one ``ValueError``
naming the file and the fix.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

from hierviz.data.base import ArrayDataset
from hierviz.data.loaders._io import (
    HAM_CITATION,
    HAM_CLASSES,
    HAM_LICENCE,
    NPZ_FIX,
    NpzArrays,
    check_labels,
    open_npz,
    placeholder_classes,
    to_rgb,
)
from hierviz.data.loaders.medmnist_format import load_medmnist
from hierviz.data.text import LabelSetDataset

__all__ = ["GROUP_KEYS", "load_npz"]

#: Keys read as group ids, first match wins.
GROUP_KEYS = ("lesion_id", "groups", "patient_id")


def _str_meta(z: NpzArrays, key: str) -> str:
    if key not in z:
        return ""
    v = z[key]
    if v.size == 0:
        return ""
    return str(v.item() if v.ndim == 0 else v.reshape(-1)[0])


def _known_provenance(classes: list[str], group_key: str | None) -> tuple[str, str]:
    """Citation and licence of a file recognised by its content (HAM10000: its 7 classes + lesion ids)."""
    if classes == HAM_CLASSES and group_key == "lesion_id":
        return HAM_CITATION, HAM_LICENCE
    return "", ""


def load_npz(path: str | PathLike, name: str | None = None) -> ArrayDataset:
    """Load an ``.npz`` in the hierviz layout (see the module docstring) or the MedMNIST layout.

    Parameters
    ----------
    path : str or PathLike
        The file.
    name : str, optional
        Dataset name; default the file stem.

    Returns
    -------
    ArrayDataset
        Images (N, H, W, 3) uint8 (grey replicated to 3 channels), labels (N,) int64.
        Classes default to ``class_0`` ... ``class_{max label}`` (bind a tree whose leaves are
        the label values ``"0"``, ``"1"``, ... with :func:`hierviz.data.bind_tree`); a file
        with the HAM10000 classes and ``lesion_id`` gets the HAM10000 citation and licence.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        One line naming the file and the fix: not a readable ``.npz`` (random bytes,
        truncated, a corrupt member, pickled objects), no ``images`` / ``labels``, wrong
        shapes or dtypes, labels outside ``0..C-1``, group ids of the wrong length, an empty
        file.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "mine.npz")
    >>> np.savez_compressed(p, images=np.zeros((3, 4, 4), np.uint8), labels=np.array([0, 2, 1]))
    >>> ds = load_npz(p)
    >>> ds.name, ds.classes, ds.images.shape
    ('mine', ['class_0', 'class_1', 'class_2'], (3, 4, 4, 3))
    """
    path = Path(path)
    with open_npz(path) as z:
        files = set(z.files)
        if "train_images" in files:
            return load_medmnist(path, name=name)
        if "features" in files and "images" not in files:  # a features file (hierviz.features)
            return _features_dataset(path, z, files, name)
        if "tokens" in files and "images" not in files:  # a text file (hierviz htc's corpora)
            return _tokens_dataset(path, z, files, name)
        label_key = "label" if "label" in files else "labels" if "labels" in files else None
        if "images" not in files or label_key is None:
            missing = [k for k, ok in (("images", "images" in files), ("labels", label_key is not None)) if not ok]
            raise ValueError(
                f"{path}: unknown npz layout (keys {sorted(files)}): no {' and no '.join(repr(m) for m in missing)} "
                f"array; expected hierviz keys images + labels or MedMNIST keys train_images/train_labels/...; "
                f"{NPZ_FIX}"
            )
        images = to_rgb(z["images"], f"{path}: images")
        n = images.shape[0]
        if n == 0:
            raise ValueError(f"{path}: holds no images (images has shape {images.shape}); {NPZ_FIX}")
        labels = check_labels(z[label_key], n, f"{path}: {label_key}")
        if "classes" in files:
            cls = z["classes"]
            if cls.ndim != 1:
                raise ValueError(f"{path}: classes must be a 1-D array of names, got shape {cls.shape}; {NPZ_FIX}")
            classes = [str(c) for c in cls.tolist()]
            if labels.size and labels.max() >= len(classes):
                raise ValueError(
                    f"{path}: {label_key} go up to {int(labels.max())} but classes names only {len(classes)} "
                    f"(labels must be in 0..{len(classes) - 1}); fix the labels or list every class in 'classes'"
                )
        else:
            classes = placeholder_classes(labels, f"{path}: {label_key}")
        gkey = next((k for k in GROUP_KEYS if k in files), None)
        groups = z[gkey] if gkey else None
        if groups is not None and groups.shape != (n,):
            raise ValueError(
                f"{path}: {gkey} has shape {groups.shape} but there are {n} images; give one group id per image "
                f"({gkey} of shape ({n},)) and re-save the file"
            )
        ids = z["image_id"] if "image_id" in files else None
        split = z["split"].astype("<U5") if "split" in files else None
        citation, licence = _str_meta(z, "citation"), _str_meta(z, "licence")
    known_citation, known_licence = _known_provenance(classes, gkey)
    citation, licence = citation or known_citation, licence or known_licence
    return _array_dataset(
        path,
        images=images,
        labels=labels,
        classes=classes,
        groups=groups,
        name=name or path.stem,
        citation=citation,
        licence=licence,
        official_split=split,
        ids=ids,
    )


def _features_dataset(path: Path, z: NpzArrays, files: set[str], name: str | None) -> ArrayDataset:
    """A features ``.npz`` (``features`` (N, D) float, ``labels``, optional ``classes``/``groups``/``split``;
    :mod:`hierviz.features.io`) as a vector dataset: float32 (N, D) rows, classes ``"0"`` ... by default."""
    feats = z["features"]
    if feats.ndim != 2 or not (feats.dtype.kind == "f"):
        raise ValueError(f"{path}: features must be a float (N, D) array, got {feats.dtype} {feats.shape}; {NPZ_FIX}")
    if "labels" not in files:
        raise ValueError(f"{path}: a features file needs a 'labels' array (N,); {NPZ_FIX}")
    labels = check_labels(z["labels"], feats.shape[0], f"{path}: labels")
    n_cls = int(labels.max()) + 1 if labels.size else 0
    classes = [str(c) for c in z["classes"].tolist()] if "classes" in files else [str(i) for i in range(n_cls)]
    split = z["split"].astype("<U5") if "split" in files else None
    groups = z["groups"] if "groups" in files else None
    kw = {"groups": groups, "official_split": split, "name": name or path.stem}
    return _array_dataset(path, images=feats.astype("float32"), labels=labels, classes=classes, **kw)


def _tokens_dataset(path: Path, z: NpzArrays, files: set[str], name: str | None) -> ArrayDataset:
    """A text ``.npz`` (``tokens`` (N, s, 2) int: token ids and padding mask, :func:`hierviz.data.text.pack_tokens`;
    ``labels``, ``classes``, optional ``split`` and ``leaf_sets`` (N, C) bool: every leaf of a document on
    several label paths; :mod:`hierviz.experiments.htc`) as a text dataset."""
    tokens = z["tokens"]
    if tokens.ndim != 3 or tokens.shape[-1] != 2 or tokens.dtype.kind not in "iu":
        raise ValueError(f"{path}: tokens must be an int (N, s, 2) array, got {tokens.dtype} {tokens.shape}; {NPZ_FIX}")
    if "labels" not in files or "classes" not in files:
        raise ValueError(f"{path}: a tokens file needs 'labels' (N,) and 'classes' arrays; {NPZ_FIX}")
    labels = check_labels(z["labels"], tokens.shape[0], f"{path}: labels")
    split = z["split"].astype("<U5") if "split" in files else None
    kw = {"official_split": split, "name": name or path.stem, "citation": _str_meta(z, "citation")}
    classes = [str(c) for c in z["classes"].tolist()]
    if "leaf_sets" in files:  # documents on several label paths (hierviz.data.text.LabelSetDataset)
        try:
            return LabelSetDataset(tokens.astype("int64"), labels, classes, leaf_sets=z["leaf_sets"], **kw)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: {e}; fix the arrays and {NPZ_FIX}") from None
    return _array_dataset(path, images=tokens.astype("int64"), labels=labels, classes=classes, **kw)


def _array_dataset(path: Path, **kw: Any) -> ArrayDataset:
    """``ArrayDataset(**kw)``, its refusals re-raised as one ValueError naming ``path``."""
    try:
        return ArrayDataset(**kw)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: {e}; fix the arrays and {NPZ_FIX}") from None
