"""The pieces :func:`~hierviz.training.fit` assembles: seeds, device, optimiser, LR schedule, EMA, precision, placement.

* :func:`seed_everything`, :func:`resolve_device`, :func:`warmup_cosine` (public, re-exported by
  :mod:`hierviz.training.loop` and :mod:`hierviz.training`);
* the optimiser's parameter groups (backbone, head, objective), the per-step schedule, the
  weight EMA, mixed precision, the optional compiled loss, the model on its device (wrapped for
  DDP under torchrun) and the progress bar.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm.auto import tqdm

from hierviz.training import distributed as _dist
from hierviz.training.config import TrainConfig

__all__ = ["seed_everything", "resolve_device", "warmup_cosine"]


def seed_everything(seed: int) -> None:
    """Seed python's ``random``, numpy's global RNG and torch (CPU and CUDA).

    Parameters
    ----------
    seed : int
        Non-negative seed.

    Raises
    ------
    ValueError
        If ``seed`` is negative or not an integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    torch.manual_seed(int(seed))


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; other strings are checked.

    Parameters
    ----------
    device : str or torch.device or None
        "auto", None, "cpu", "cuda", "cuda:1", "mps", ...

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        If the string is not a device, or CUDA is asked for but not available.
    """
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device: {device!r} is not a torch device (try 'auto', 'cpu' or 'cuda')") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {device!r} was requested but CUDA is not available here; use 'cpu' or 'auto'")
    return dev


def warmup_cosine(step: int, warmup_steps: int, total_steps: int) -> float:
    """LR multiplier: linear warmup to 1, then half-cosine decay to 0 (paper 01 §4.2).

    ``f(s) = (s+1)/W`` for ``s < W``, else ``0.5 (1 + cos(pi (s-W)/(T-W)))``.

    Parameters
    ----------
    step : int
        0-based optimiser step ``s``.
    warmup_steps : int
        ``W >= 0``.
    total_steps : int
        ``T >= 1``; steps beyond ``T`` return 0.

    Returns
    -------
    float in [0, 1].
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    span = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / span)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def _amp_setup(config: TrainConfig, device: torch.device) -> tuple[bool, torch.dtype]:
    if not (config.amp and device.type == "cuda"):
        return False, torch.float32
    return True, (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)


def _place_model(
    model: nn.Module, objective: nn.Module, config: TrainConfig, device: torch.device, channels_last: bool
) -> tuple[nn.Module, nn.Module, bool]:
    """Move ``model`` and ``objective`` to ``device``; under torchrun, wrap the model for DDP.

    Returns
    -------
    model : torch.nn.Module
        The model whose parameters are optimised (its batch norms converted when
        ``config.sync_bn`` under torchrun).
    train_model : torch.nn.Module
        The module called on each batch: ``model``, or its DistributedDataParallel wrapper.
    sync_bn : bool
        Whether batch norms were converted (:func:`fit` converts them back at the end).
    """
    model.to(device)
    if channels_last:
        model.to(memory_format=torch.channels_last)
    objective.to(device)
    distributed = _dist.is_distributed()
    train_model: nn.Module = model
    sync_bn = distributed and config.sync_bn
    if distributed:  # DDP averages gradients; the loss is computed on the gathered batch (distributed.py)
        if sync_bn:  # batch statistics of the global batch (SyncBatchNorm on CUDA, AllReduceBatchNorm else)
            model = _dist.convert_batchnorm(model, device.type)
        # static_graph: parameters the loss never reaches (the projection head under HXE's
        # logits-only loss) are found on the first step instead of stalling the reduction
        train_model = nn.parallel.DistributedDataParallel(
            model,
            device_ids=[device.index] if device.type == "cuda" and device.index is not None else None,
            static_graph=True,
        )
    return model, train_model, sync_bn


def _make_optimizer(model: nn.Module, objective: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """AdamW (``config.optimizer == "adamw"``) or Adam over the trainable parameters, in groups.

    Groups, empty ones left out: ``"backbone"`` (``model.backbone_parameters()``, LR
    ``lr_backbone``), ``"head"`` (the model's other parameters, LR ``lr_head``) and
    ``"objective"`` (the objective's own parameters, LR ``lr_head``).

    Raises
    ------
    ValueError
        If neither model nor objective has a trainable parameter.
    """
    if hasattr(model, "backbone_parameters"):
        backbone = list(model.backbone_parameters())
    else:
        backbone = []
    ids = {id(p) for p in backbone}
    head = [p for p in model.parameters() if id(p) not in ids]
    groups = [
        g
        for g in (
            {"params": [p for p in backbone if p.requires_grad], "lr": config.lr_backbone, "name": "backbone"},
            {"params": [p for p in head if p.requires_grad], "lr": config.lr_head, "name": "head"},
        )
        if g["params"]
    ]
    obj_params = [p for p in objective.parameters() if p.requires_grad]
    if obj_params:
        groups.append({"params": obj_params, "lr": config.lr_head, "name": "objective"})
    if not groups:
        raise ValueError("model has no trainable parameters")
    opt_class = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam  # Adam: L2 decay
    return opt_class(groups, weight_decay=config.weight_decay)


def _make_scheduler(
    optimizer: torch.optim.Optimizer, config: TrainConfig, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """The per-step LR multiplier: 1 (``schedule="constant"``) or :func:`warmup_cosine` over every epoch's steps."""
    total_steps = steps_per_epoch * config.epochs
    warmup_steps = min(int(round(config.warmup_epochs * steps_per_epoch)), max(0, total_steps - 1))
    if config.schedule == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_cosine(s, warmup_steps, total_steps))


def _compiled_loss(config: TrainConfig, objective: nn.Module) -> Callable[..., Any] | None:
    """``objective`` compiled by :class:`hierviz.losses.CompiledLoss` under ``config.compile_loss``; else None.

    Only objectives with ``loss_from_output`` are compiled; the others run eagerly.
    """
    if not (getattr(config, "compile_loss", False) and hasattr(objective, "loss_from_output")):
        return None
    from hierviz.losses.compiled import CompiledLoss  # heavy: hierviz.losses (geoopt, scipy), on first use

    return CompiledLoss(objective)


def _make_ema(model: nn.Module, config: TrainConfig) -> AveragedModel | None:
    """The weight EMA of ``model`` (decay ``config.ema_decay``, buffers included); None when the decay is 0."""
    if not config.ema_decay:
        return None
    return AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(config.ema_decay), use_buffers=True)


def _progress_bar(config: TrainConfig, total_steps: int, initial: int) -> Any:
    """The ``tqdm`` bar over every step of the run, shown on rank 0 under ``config.progress``."""
    return tqdm(
        total=total_steps,
        initial=initial,
        disable=not (config.progress and _dist.is_main_process()),
        desc="train",
        unit="step",
        leave=False,
        dynamic_ncols=True,
    )
