"""The training hyper-parameters of :func:`hierviz.training.fit` (paper 01 §4.2 defaults)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TrainConfig", "RESUME_FREE_FIELDS", "check_resume_config"]

#: Config fields that may differ between an interrupted run and its resumption.
RESUME_FREE_FIELDS = {"resume", "progress", "checkpoint_dir", "device"}


#: :attr:`TrainConfig.optimizer` values.
OPTIMIZERS = ("adamw", "adam")
#: :attr:`TrainConfig.schedule` values.
SCHEDULES = ("warmup_cosine", "constant")


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`fit` (defaults: paper 01 §4.2 where it gives one).

    Parameters
    ----------
    epochs : int, default 100
        Number of epochs T (>= 1).
    batch_size : int, default 256
        Images per step (each contributes ``V`` views).  If the data set is smaller, one
        batch holds all of it; otherwise the last incomplete batch is dropped so every
        contrastive step sees the same number of negatives.
    lr_backbone : float, default 1e-4
        Peak LR of the encoder.
    lr_head : float, default 1e-3
        Peak LR of the projection head and classifier (10x backbone).
    weight_decay : float, default 1e-4
        AdamW decoupled weight decay.
    warmup_epochs : float, default 10
        Linear-warmup length; clipped to the run length.  After it, cosine decay to 0.
    ema_decay : float or None, default 0.99
        Decay of the weight EMA (``torch.optim.swa_utils.AveragedModel``); ``None`` or 0
        disables it.  The EMA is never used for evaluation (paper 01 §4.4).
    grad_clip : float or None, default None
        Max global gradient norm.
    seed : int, default 0
        Seeds python, numpy, torch and the DataLoader shuffling.
    device : str, default "auto"
        "auto" = "cuda" when available else "cpu"; or any torch device string.
    amp : bool, default True
        Mixed precision (bfloat16, or float16 with a grad scaler) for the encoder/head on
        CUDA; ignored on CPU.  Manifold maps and losses always run in float32.
    num_workers : int, default 0
        DataLoader workers (0 = augment in the main process).  Runs are reproducible
        for a fixed value (worker seeds come from the seeded loader generator); changing it
        changes the augmentation stream, so a resumed run must use the same value.
    checkpoint_dir : str or Path or None, default None
        Where ``checkpoint.pt`` is written after each epoch; ``None`` = no checkpoints.
    resume : bool, default False
        Continue from ``checkpoint_dir/checkpoint.pt`` if it exists.
    progress : bool, default True
        Show a tqdm progress bar.
    sync_bn : bool, default True
        Under DDP (``torchrun``), batch norm over the global batch of all ranks
        (:func:`hierviz.training.distributed.convert_batchnorm`: ``SyncBatchNorm`` on CUDA,
        ``AllReduceBatchNorm`` on CPU); False: each rank normalises with its own share.  No
        effect in one process.
    compile_loss : bool, default False
        Run the objective through ``torch.compile(fullgraph=True)`` after one eager step
        (:class:`hierviz.losses.CompiledLoss`). Falls back to eager with a warning
        if compiling fails.
    """

    epochs: int = 100
    batch_size: int = 256
    lr_backbone: float = 1e-4
    lr_head: float = 1e-3
    weight_decay: float = 1e-4
    warmup_epochs: float = 10
    ema_decay: float | None = 0.99
    grad_clip: float | None = None
    seed: int = 0
    device: str = "auto"
    amp: bool = True
    num_workers: int = 0
    checkpoint_dir: str | Path | None = None
    resume: bool = False
    progress: bool = True
    sync_bn: bool = True
    compile_loss: bool = False
    optimizer: str = "adamw"
    schedule: str = "warmup_cosine"

    def __post_init__(self) -> None:
        def _int(name: str, lo: int) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")

        _int("epochs", 1)
        _int("batch_size", 1)
        _int("seed", 0)
        _int("num_workers", 0)
        for name in ("lr_backbone", "lr_head"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if not (math.isfinite(self.warmup_epochs) and self.warmup_epochs >= 0):
            raise ValueError(f"warmup_epochs must be >= 0, got {self.warmup_epochs!r}")
        if self.ema_decay is not None and not (0 <= self.ema_decay < 1):
            raise ValueError(f"ema_decay must be in [0, 1) or None, got {self.ema_decay!r}")
        if self.grad_clip is not None and not (self.grad_clip > 0):
            raise ValueError(f"grad_clip must be > 0 or None, got {self.grad_clip!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain-python dict (paths as strings), as stored in checkpoints."""
        d = asdict(self)
        d["checkpoint_dir"] = None if self.checkpoint_dir is None else str(self.checkpoint_dir)
        return d


def check_resume_config(saved: dict[str, Any], config: TrainConfig, path: Path) -> None:
    now = config.to_dict()
    defaults = TrainConfig().to_dict()  # a field added after the checkpoint was written has its default there
    diff = [k for k in now if k not in RESUME_FREE_FIELDS and saved.get(k, defaults[k]) != now[k]]
    if diff:
        detail = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs now {now[k]!r}" for k in diff)
        raise ValueError(
            f"resume: the checkpoint {str(path)!r} was written with a different configuration ({detail}); "
            "use the same settings, or a fresh checkpoint_dir"
        )
