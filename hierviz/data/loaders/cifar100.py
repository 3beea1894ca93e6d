"""CIFAR-100 (Krizhevsky 2009) as a hierviz ``.npz``: 60,000 images, 100 classes in 20 superclasses.

``python data_scripts/download_cifar100.py`` writes ``cifar100.npz`` (hierviz layout, with
the official train/test split in ``split``); its default tree ``cifar100`` is the 20
superclasses (paper 02).
"""

from __future__ import annotations

from os import PathLike

from hierviz.data.base import ArrayDataset, DatasetInfo, find_data_file, register_dataset
from hierviz.data.loaders.npz import load_npz

__all__ = ["CIFAR_CITATION", "load_cifar100"]

CIFAR_CITATION = (
    "Krizhevsky A. Learning multiple layers of features from tiny images. Technical report, "
    "University of Toronto, 2009."
)

INFO = DatasetInfo(
    "cifar100.npz",
    "npz",
    "python data_scripts/download_cifar100.py",
    "CIFAR-100, 60,000 images 32x32, 100 classes in 20 superclasses (paper 02)",
)


@register_dataset("cifar100", default_tree="cifar100", info=INFO)
def load_cifar100(data_dir: str | PathLike | None = None) -> ArrayDataset:
    """CIFAR-100 from ``cifar100.npz`` in the data folder.

    Parameters
    ----------
    data_dir : str or PathLike, optional
        Folder searched instead of ``$HIERVIZ_DATA`` / ``../shared/data``.

    Returns
    -------
    ArrayDataset
        (N, 32, 32, 3) uint8 images, 100 classes, ``official_split`` train/test.

    Raises
    ------
    FileNotFoundError
        The file is missing (names ``python data_scripts/download_cifar100.py``).
    ValueError
        The file is unreadable or malformed (names the file and the fix).
    """
    return load_npz(find_data_file(INFO.filename, data_dir), name="cifar100")
