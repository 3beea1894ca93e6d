"""Export frozen encoder features to a features ``.npz``: from a hierviz run or a local checkpoint.

* :func:`export_checkpoint` embeds every image of a registered data set or an ``.npz`` with a
  local torchvision ResNet ``state_dict`` (nothing is downloaded);
* :func:`encode_images` and :func:`find_run_dir` are the pieces that
  :func:`hierviz.experiments.export_run` (a finished ``hierviz compare`` run: it rebuilds the
  run's encoder from its config, so it lives with the configs) shares with it.

Paper 03 (Hyper-DINO) §2.1 uses frozen DINO ViT-S/16 [CLS] tokens; no pretrained DINO
weights can be downloaded here, so these are the stand-in (see ``docs/results/paper03.md``).
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from hierviz.data import grouped_split, load_dataset
from hierviz.features.io import FeaturesData
from hierviz.models.encoders import resnet_encoder

__all__ = ["dataset_features", "encode_images", "export_checkpoint", "find_run_dir", "split_column"]


def find_run_dir(path: str | PathLike) -> Path:
    """The run folder named by ``path``: a run folder itself, or a ``compare`` output holding exactly one run.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist, or holds no run.
    ValueError
        ``path`` holds several runs (the message lists them).
    """
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"--run {p}: no such folder (give a run folder <out>/runs/<name> of 'hierviz compare')")
    if (p / "config.json").is_file() and (p / "checkpoint.pt").is_file():
        return p
    runs = sorted(d for d in (p / "runs").glob("*") if (d / "checkpoint.pt").is_file()) if (p / "runs").is_dir() else []
    if len(runs) == 1:
        return runs[0]
    if not runs:
        raise FileNotFoundError(
            f"--run {p}: no config.json + checkpoint.pt there nor in {p / 'runs'}; give a finished run folder"
        )
    raise ValueError(f"--run {p}: it holds {len(runs)} runs ({', '.join(d.name for d in runs)}); name one of them")


@torch.no_grad()
def encode_images(
    encoder: nn.Module, dataset: Any, image_size: int, *, batch_size: int = 256, progress: bool = False
) -> np.ndarray:
    """Encoder features of every image (evaluation transform, eval mode, no gradient).

    Parameters
    ----------
    encoder : torch.nn.Module
        Maps ``(B, 3, H, W)`` to ``(B, F)``.
    dataset : hierviz.data.ArrayDataset
        The images.
    image_size : int
        Side of :func:`hierviz.data.eval_transform`.
    batch_size : int, default 256
    progress : bool, default False
        A ``tqdm.auto`` bar.

    Returns
    -------
    numpy.ndarray, shape (N, F), float32

    Raises
    ------
    ValueError
        The encoder produced NaN/inf.
    """
    from hierviz.data import (  # heavy: torchvision (hierviz.data's transforms import it), imported on first use
        TransformDataset,
        eval_transform,
    )

    device = next(encoder.parameters()).device
    was_training = encoder.training
    encoder.eval()
    loader = DataLoader(TransformDataset(dataset, eval_transform(image_size)), batch_size=batch_size, shuffle=False)
    out = []
    try:
        for x, _ in tqdm(loader, desc="features", disable=not progress, leave=False):
            out.append(encoder(x.to(device)).float().flatten(1).cpu())
    finally:
        encoder.train(was_training)
    feats = torch.cat(out).numpy()
    if not np.isfinite(feats).all():
        raise ValueError("the encoder produced NaN/inf features; check the checkpoint")
    return feats


def split_column(ds: Any, split_seed: int) -> np.ndarray:
    """The grouped train/val/test split of ``ds`` (seed ``split_seed``) as one name per row, shape (N,), ``<U5``."""
    split = grouped_split(np.asarray(ds.labels), None if ds.groups is None else np.asarray(ds.groups), seed=split_seed)
    col = np.empty(len(ds.labels), dtype="<U5")
    for name, idx in split.items():
        col[np.asarray(idx)] = name
    return col


def dataset_features(
    encoder: nn.Module, ds: Any, image_size: int, split_seed: int, source: str, *, batch_size: int, progress: bool
) -> FeaturesData:
    """``encoder``'s features of every image of ``ds`` with its labels, classes, groups and split column."""
    feats = encode_images(encoder, ds, image_size, batch_size=batch_size, progress=progress)
    return FeaturesData(
        feats,
        np.asarray(ds.labels),
        list(ds.classes),
        None if ds.groups is None else np.asarray(ds.groups),
        split_column(ds, split_seed),
        source=source,
    )


def export_checkpoint(
    checkpoint: str | PathLike,
    *,
    data: str = "ham10000-sample",
    encoder: str = "resnet18",
    image_size: int | None = None,
    split_seed: int = 0,
    batch_size: int = 256,
    progress: bool = False,
) -> FeaturesData:
    """Features of a local torchvision ResNet ``state_dict`` on a data set (nothing is downloaded).

    Parameters
    ----------
    checkpoint : str or PathLike
        A ``torch.save(model.state_dict(), path)`` file of a torchvision ``resnet18`` /
        ``resnet50`` (its ``fc.*`` is dropped); read with ``weights_only=True``.
    data : str, default "ham10000-sample"
        A registered data set name or an ``.npz`` / image folder path
        (:func:`hierviz.data.load_dataset`).
    encoder : {"resnet18", "resnet50"}, default "resnet18"
    image_size : int, optional
        Default: the images' own side.
    split_seed : int, default 0
        Seed of the grouped train/val/test split recorded in ``split``.
    batch_size : int, default 256
    progress : bool, default False

    Returns
    -------
    FeaturesData
        Pooled ResNet features (512 or 2048 per image), labels, classes, groups, split.

    Raises
    ------
    FileNotFoundError
        The checkpoint or the data is missing.
    ValueError
        An unreadable checkpoint, or one whose tensors match no ResNet parameter.
    """
    ds = load_dataset(data)
    net = resnet_encoder(encoder, small_input=False, pretrained=checkpoint)  # the ImageNet stem keeps its weights
    size = int(image_size or ds.images.shape[1])
    return dataset_features(net, ds, size, split_seed, str(Path(checkpoint)), batch_size=batch_size, progress=progress)
