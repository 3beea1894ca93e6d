#!/usr/bin/env python3
"""Download CIFAR-100 and convert it to ``cifar100.npz`` (the hierviz npz layout).

Usage::

    python data_scripts/download_cifar100.py [--out DIR] [--keep-archive]

Steps: download ``cifar-100-python.tar.gz`` from the authors' site and check its MD5
(``eb9058c3a382ffc7106e4002c42a8d85``, the value torchvision also pins), unpack it,
check the inner ``train`` / ``test`` / ``meta`` files' MD5s, read them, check that the
fine -> coarse label map equals the bundled tree ``hierviz/data/trees/cifar100.json``,
and write ``<out>/cifar100.npz`` with keys

* ``images`` (60000, 32, 32, 3) uint8, ``label`` (60000,) int64 fine label,
  ``classes`` (100,) fine names (official index order),
* ``coarse_label`` (60000,) int64, ``coarse_classes`` (20,),
* ``split`` (60000,) ``"train"`` (first 50,000) / ``"test"``,
* ``citation``, ``licence`` (0-d strings).

``hierviz.data.load_dataset("cifar100")`` then finds it; ``ds.split(official=True)``
gives the official train/test split (no validation part). Cite Krizhevsky (2009),
"Learning multiple layers of features from tiny images". The dataset has no explicit
licence; it is freely distributed for research.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    ChecksumError,
    DownloadError,
    default_out_dir,
    download,
    extract,
    repo_root,
    save_npz,
    verify_file,
)

URL = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
ARCHIVE_MD5 = "eb9058c3a382ffc7106e4002c42a8d85"
INNER_MD5 = {
    "train": "16019d7e3df5f24257cddd939b257f8d",
    "test": "f0ef6b0ae62326f3e7ffdfab6717acfc",
    "meta": "7973b15100ade9c7d40fb424638fde48",
}
CITATION = (
    "Krizhevsky A. Learning multiple layers of features from tiny images. Tech. report, University of Toronto, 2009."
)
LICENCE = "no explicit licence; freely distributed for research by the authors"


def _unpickle(path: Path) -> dict:
    # The files are Python pickles; they are only read after their MD5 matched the published one.
    with open(path, "rb") as f:
        return pickle.load(f, encoding="latin1")


def read_cifar100(folder: Path, *, check_md5: bool = True) -> dict[str, np.ndarray]:
    """Read an unpacked ``cifar-100-python`` folder into arrays.

    Parameters
    ----------
    folder : Path
        Holds ``train``, ``test``, ``meta``.
    check_md5 : bool, default True
        Verify the three files against :data:`INNER_MD5` before unpickling.

    Returns
    -------
    dict[str, numpy.ndarray]
        The ``cifar100.npz`` arrays (see the module docstring).

    Raises
    ------
    FileNotFoundError
        A file is missing.
    ChecksumError
        A file differs from the official one.
    ValueError
        Inconsistent contents (row counts, a fine class under two coarse classes).
    """
    for name in ("train", "test", "meta"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name} missing (is this an unpacked cifar-100-python folder?)")
        if check_md5:
            verify_file(folder / name, md5=INNER_MD5[name])
    meta = _unpickle(folder / "meta")
    parts = [_unpickle(folder / s) for s in ("train", "test")]
    images, fine, coarse, split = [], [], [], []
    for s, d in zip(("train", "test"), parts):
        data = np.asarray(d["data"], dtype=np.uint8)
        if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
            raise ValueError(f"{s}: data must be (n, 3072), got {data.shape}")
        n = data.shape[0]
        if len(d["fine_labels"]) != n or len(d["coarse_labels"]) != n:
            raise ValueError(
                f"{s}: {n} images but {len(d['fine_labels'])} fine / {len(d['coarse_labels'])} coarse labels"
            )
        images.append(data.reshape(n, 3, 32, 32).transpose(0, 2, 3, 1))  # rows are R, G, B planes
        fine.append(np.asarray(d["fine_labels"], dtype=np.int64))
        coarse.append(np.asarray(d["coarse_labels"], dtype=np.int64))
        split.append(np.full(n, s, dtype="<U5"))
    fine_all, coarse_all = np.concatenate(fine), np.concatenate(coarse)
    pairs = np.unique(np.stack([fine_all, coarse_all], 1), axis=0)
    if np.unique(pairs[:, 0]).size != pairs.shape[0]:
        raise ValueError("a fine class appears under two coarse classes")
    return {
        "images": np.ascontiguousarray(np.concatenate(images)),
        "label": fine_all,
        "classes": np.asarray(meta["fine_label_names"]),
        "coarse_label": coarse_all,
        "coarse_classes": np.asarray(meta["coarse_label_names"]),
        "split": np.concatenate(split),
        "citation": np.asarray(CITATION),
        "licence": np.asarray(LICENCE),
    }


def check_tree(arrays: dict[str, np.ndarray], tree_json: Path) -> None:
    """Check the bundled CIFAR-100 tree against the data's fine -> coarse map.

    Parameters
    ----------
    arrays : dict
        Output of :func:`read_cifar100`.
    tree_json : Path
        ``hierviz/data/trees/cifar100.json`` (``{"tree": {"root": {coarse: [fine, ...]}}}``).

    Raises
    ------
    ValueError
        A fine class whose superclass differs (names up to 5), or a different leaf order.
    """
    obj = json.loads(Path(tree_json).read_text(encoding="utf-8"))
    (root,) = obj["tree"].values()
    tree_parent = {f: c for c, fines in root.items() for f in fines}
    fine_names, coarse_names = arrays["classes"].tolist(), arrays["coarse_classes"].tolist()
    data_parent = {
        fine_names[f]: coarse_names[c] for f, c in zip(arrays["label"].tolist(), arrays["coarse_label"].tolist())
    }
    bad = [
        f"{f}: data {c!r}, tree {tree_parent.get(f)!r}"
        for f, c in sorted(data_parent.items())
        if tree_parent.get(f) != c
    ]
    if bad or set(tree_parent) != set(data_parent):
        raise ValueError(f"{tree_json} disagrees with the CIFAR-100 labels: " + "; ".join(bad[:5]))
    if obj.get("leaf_order") is not None and list(obj["leaf_order"]) != fine_names:
        raise ValueError(f"{tree_json}: leaf_order differs from the official fine-label order")


def convert(archive: Path, out: Path, *, tree_json: Path | None = None) -> Path:
    """Unpack a verified ``cifar-100-python.tar.gz`` and write ``cifar100.npz``.

    Parameters
    ----------
    archive : Path
        The downloaded tarball.
    out : Path
        Output ``.npz`` path.
    tree_json : Path, optional
        Tree to check (default: the bundled ``cifar100.json`` if present).

    Returns
    -------
    Path
        ``out``.
    """
    tree_json = tree_json or repo_root() / "hierviz" / "data" / "trees" / "cifar100.json"
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        extract(archive, tmp)
        folder = Path(tmp) / "cifar-100-python"
        arrays = read_cifar100(folder if folder.is_dir() else Path(tmp))
    if tree_json.is_file():
        check_tree(arrays, tree_json)
    return save_npz(out, arrays)


def main(argv: list[str] | None = None, *, opener: Callable[..., Any] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: $HIERVIZ_DATA or ../shared/data)")
    ap.add_argument("--keep-archive", action="store_true", help="keep cifar-100-python.tar.gz after converting")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    out_dir = a.out or default_out_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / "cifar-100-python.tar.gz"
    try:
        download(URL, archive, md5=ARCHIVE_MD5, opener=opener, progress=not a.quiet)
        path = convert(archive, out_dir / "cifar100.npz")
    except (DownloadError, ChecksumError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not a.keep_archive:
        archive.unlink()
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
