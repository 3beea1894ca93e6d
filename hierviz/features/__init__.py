"""Frozen-feature data sets (Paper 03 (Hyper-DINO) §2.1): the ``.npz`` format, export, scaling + PCA/NCA.

* :mod:`.io`: :class:`FeaturesData`, :func:`save_features`, :func:`load_features` (the format);
* :mod:`.export`: :func:`export_run` (a trained hierviz run, encoder output before the head)
  and :func:`export_checkpoint` (a local torchvision ResNet ``state_dict``);
* :mod:`.reduce`: :func:`make_reducer` / :func:`reduce_features` (standard scaling, then PCA
  or NCA to N components; float16 rounding).

From the shell: ``hierviz features --run RUN_DIR --out F.npz``.
"""

from hierviz.features.export import encode_images, export_checkpoint, export_run, find_run_dir
from hierviz.features.io import FEATURES_FIX, SPLITS, FeaturesData, load_features, save_features
from hierviz.features.reduce import PAPER_N_GRID, REDUCERS, make_reducer, reduce_features

__all__ = [
    "FEATURES_FIX",
    "SPLITS",
    "FeaturesData",
    "load_features",
    "save_features",
    "encode_images",
    "export_run",
    "export_checkpoint",
    "find_run_dir",
    "PAPER_N_GRID",
    "REDUCERS",
    "make_reducer",
    "reduce_features",
]
