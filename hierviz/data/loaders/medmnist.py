"""MedMNIST v2 ``.npz`` files (2-D, single-label): the format, class names and citations.

A MedMNIST file holds ``{train,val,test}_images`` (uint8 (n, H, W) grey or (n, H, W, 3)
RGB) and ``{train,val,test}_labels`` ((n, 1) or (n,) ints). :func:`load_medmnist` merges
the three and keeps the official split in ``official_split``. Each flag of
:data:`MEDMNIST_INFO` is registered as a dataset (``load_dataset("breastmnist")`` reads
``breastmnist.npz`` from the data folder; ``python data_scripts/download_medmnist.py FLAG``
fetches it). The format itself (the reader, the names) is :mod:`.medmnist_format`.
"""

from __future__ import annotations

from os import PathLike

from hierviz.data.base import ArrayDataset, DatasetInfo, find_data_file, register_dataset
from hierviz.data.loaders.medmnist_format import (  # the format, defined there; exported here
    MEDMNIST_CITATION,
    MEDMNIST_DEFAULT_TREE,
    MEDMNIST_FIX,
    MEDMNIST_INFO,
    load_medmnist,
)

__all__ = ["MEDMNIST_CITATION", "MEDMNIST_FIX", "MEDMNIST_INFO", "load_medmnist"]


def _register(flag: str) -> None:
    def load(data_dir: str | PathLike | None = None) -> ArrayDataset:
        return load_medmnist(find_data_file(f"{flag}.npz", data_dir), name=flag)

    load.__name__ = load.__qualname__ = f"load_{flag}"
    load.__doc__ = f"MedMNIST v2 {flag} (28x28), read from {flag}.npz in the data folder."
    register_dataset(
        flag,
        default_tree=MEDMNIST_DEFAULT_TREE.get(flag),
        info=DatasetInfo(
            f"{flag}.npz", "medmnist", f"python data_scripts/download_medmnist.py {flag}", f"MedMNIST v2 {flag} (28x28)"
        ),  # fmt: skip
    )(load)


for _flag in MEDMNIST_INFO:
    _register(_flag)
del _flag
