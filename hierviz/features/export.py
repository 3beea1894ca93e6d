"""Export frozen encoder features to a features ``.npz``: from a hierviz run or a local checkpoint.

* :func:`export_run` reads a finished run folder of ``hierviz compare``
  (``<out>/runs/<method>-<geometry>-s<seed>/`` with ``config.json`` and ``checkpoint.pt``),
  rebuilds its encoder from the saved config, loads the trained weights and embeds every
  image of the run's data set (all splits, the split the run used recorded per row, with
  the data set's groups). The features are the encoder output *before* the projection head.
* :func:`export_checkpoint` does the same for a local torchvision ResNet ``state_dict``
  (nothing is downloaded) on a registered data set or an ``.npz``.

Paper 03 (Hyper-DINO) §2.1 uses frozen DINO ViT-S/16 [CLS] tokens; no pretrained DINO
weights can be downloaded here, so these are the stand-in (see ``docs/results/paper03.md``).
"""

from __future__ import annotations

import json
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hierviz.features.io import FeaturesData

__all__ = ["encode_images", "export_run", "export_checkpoint", "find_run_dir"]


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
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    from hierviz.data import TransformDataset, eval_transform

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


def _split_column(ds: Any, split_seed: int) -> np.ndarray:
    from hierviz.data import grouped_split

    split = grouped_split(np.asarray(ds.labels), None if ds.groups is None else np.asarray(ds.groups), seed=split_seed)
    col = np.empty(len(ds.labels), dtype="<U5")
    for name, idx in split.items():
        col[np.asarray(idx)] = name
    return col


def export_run(run_dir: str | PathLike, *, batch_size: int = 256, progress: bool = False) -> FeaturesData:
    """Encoder features (before the head) of every image of a finished run's data set.

    Parameters
    ----------
    run_dir : str or PathLike
        A run folder, or a ``compare`` output with a single run (:func:`find_run_dir`).
    batch_size : int, default 256
    progress : bool, default False

    Returns
    -------
    FeaturesData
        ``features`` (N, F) float32, ``labels``, ``classes``, ``groups`` (the data set's,
        e.g. HAM10000 lesion ids), ``split`` (the run's grouped train/val/test split,
        recomputed from its ``data.split_seed``) and ``source`` (the run folder).

    Raises
    ------
    FileNotFoundError, ValueError
        No run there, several runs, an unreadable config or checkpoint (one line).
    """
    from hierviz.experiments import ExperimentConfig, load_data
    from hierviz.models import build_encoder
    from hierviz.training import load_checkpoint

    run = find_run_dir(run_dir)
    try:
        saved = json.loads((run / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--run {run}: cannot read config.json ({exc}); rerun the run or pick another") from None
    saved.pop("fingerprint", None)
    saved.pop("run", None)
    cfg = ExperimentConfig.from_dict(saved, where=str(run / "config.json"))
    ds, _tree, _ = load_data(cfg)
    state = load_checkpoint(run / "checkpoint.pt")["model"]
    encoder = build_encoder(cfg.model.encoder, width=cfg.model.width, pretrained=None)
    enc_state = {k[len("encoder.") :]: v for k, v in state.items() if k.startswith("encoder.")}
    encoder.load_state_dict(enc_state)
    image_size = int(cfg.data.image_size or ds.images.shape[1])
    feats = encode_images(encoder, ds, image_size, batch_size=batch_size, progress=progress)
    return FeaturesData(
        feats,
        np.asarray(ds.labels),
        list(ds.classes),
        None if ds.groups is None else np.asarray(ds.groups),
        _split_column(ds, int(cfg.data.split_seed)),
        source=str(run),
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
    from hierviz.data import load_dataset
    from hierviz.models.encoders import resnet_encoder

    ds = load_dataset(data)
    net = resnet_encoder(encoder, small_input=False, pretrained=checkpoint)  # the ImageNet stem keeps its weights
    size = int(image_size or ds.images.shape[1])
    feats = encode_images(net, ds, size, batch_size=batch_size, progress=progress)
    return FeaturesData(
        feats,
        np.asarray(ds.labels),
        list(ds.classes),
        None if ds.groups is None else np.asarray(ds.groups),
        _split_column(ds, split_seed),
        source=str(Path(checkpoint)),
    )
