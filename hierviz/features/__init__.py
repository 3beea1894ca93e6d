"""Frozen-feature data sets (Paper 03 (Hyper-DINO) §2.1): the ``.npz`` format, export, scaling + PCA/NCA.

* :mod:`.io`: :class:`FeaturesData`, :func:`save_features`, :func:`load_features` (the format);
* :mod:`.export`: :func:`export_checkpoint` (a local torchvision ResNet ``state_dict``) and
  :func:`encode_images`; a trained hierviz run's features (encoder output before the head) are
  :func:`hierviz.experiments.export_run`'s, which reads the run's experiment config (also
  importable from here, on first use: ``hierviz.features`` sits below ``hierviz.experiments``);
* :mod:`.reduce`: :func:`make_reducer` / :func:`reduce_features` (standard scaling, then PCA
  or NCA to N components; float16 rounding).

From the shell: ``hierviz features --run RUN_DIR --out F.npz``.
"""

from hierviz.features.export import encode_images, export_checkpoint, find_run_dir, split_column
from hierviz.features.io import FEATURES_FIX, SPLITS, FeaturesData, load_features, save_features
from hierviz.features.reduce import PAPER_N_GRID, REDUCERS, make_reducer, reduce_features

__all__ = [
    "FEATURES_FIX",
    "SPLITS",
    "FeaturesData",
    "load_features",
    "save_features",
    "encode_images",
    "export_checkpoint",
    "find_run_dir",
    "split_column",
    "PAPER_N_GRID",
    "REDUCERS",
    "make_reducer",
    "reduce_features",
]
