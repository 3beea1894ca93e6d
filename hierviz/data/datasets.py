"""Deprecated alias of :mod:`hierviz.data.base`, :mod:`hierviz.data.registry` and :mod:`hierviz.data.loaders`; will be removed in 0.3.

0.1 kept every dataset in this one module; 0.2 splits it: ``ArrayDataset`` / ``DatasetInfo`` /
data folders in ``base``, ``DATASETS`` / ``load_dataset`` / ``bind_tree`` in ``registry``, and
one loader file per source in ``loaders/``.
"""

from hierviz.data.base import *  # noqa: F403
from hierviz.data.base import ENV_VAR, ArrayDataset, DatasetInfo, data_search_dirs, find_data_file
from hierviz.data.loaders.cifar100 import CIFAR_CITATION
from hierviz.data.loaders.ham10000 import HAM_CITATION, HAM_CLASSES, HAM_LICENCE
from hierviz.data.loaders.image_folder import IMAGE_EXTENSIONS, load_image_folder
from hierviz.data.loaders.medmnist import MEDMNIST_CITATION, MEDMNIST_INFO, load_medmnist
from hierviz.data.loaders.npz import load_npz
from hierviz.data.registry import *  # noqa: F403
from hierviz.data.registry import DATASETS, DEFAULT_TREE, bind_tree, load_dataset, register_dataset

__all__ = [
    "CIFAR_CITATION",
    "DATASETS",
    "DEFAULT_TREE",
    "ENV_VAR",
    "HAM_CITATION",
    "HAM_CLASSES",
    "HAM_LICENCE",
    "IMAGE_EXTENSIONS",
    "MEDMNIST_CITATION",
    "MEDMNIST_INFO",
    "ArrayDataset",
    "DatasetInfo",
    "bind_tree",
    "data_search_dirs",
    "find_data_file",
    "load_dataset",
    "load_image_folder",
    "load_medmnist",
    "load_npz",
    "register_dataset",
]
