"""Training: the resumable loop (:func:`fit`), its config, and checksummed atomic checkpoints.

``loop.py`` holds :func:`fit` (AdamW, warmup + cosine, head LR 10×, weight EMA, tqdm,
non-finite-loss stop) and its epoch loop, ``parts.py`` the pieces it assembles (seeds, device,
optimiser groups, schedule, EMA, precision, the model's placement), ``batches.py`` its
DataLoader, ``result.py`` what it returns or raises, ``config.py`` the :class:`TrainConfig`
dataclass, ``checkpoint.py`` the checkpoint files (sha256-verified, atomically replaced,
the previous one kept) and the RNG state they carry, and ``toys.py`` the two small full-batch
trainers of notebook 12 (:func:`train_toy_head`, :class:`RadiusToyGrid`).
"""

from hierviz.training.checkpoint import (
    CHECKPOINT_NAME,
    CheckpointError,
    atomic_save,
    load_checkpoint,
    previous_checkpoint,
)
from hierviz.training.config import TrainConfig
from hierviz.training.determinism import seed_run
from hierviz.training.loop import (
    FitResult,
    NonFiniteLossError,
    StopTraining,
    fit,
    resolve_device,
    seed_everything,
    warmup_cosine,
)
from hierviz.training.toys import HEAD_KINDS, RadiusToyGrid, train_toy_head

__all__ = [
    "TrainConfig",
    "FitResult",
    "NonFiniteLossError",
    "StopTraining",
    "CheckpointError",
    "fit",
    "seed_everything",
    "seed_run",
    "resolve_device",
    "warmup_cosine",
    "load_checkpoint",
    "atomic_save",
    "previous_checkpoint",
    "CHECKPOINT_NAME",
    "HEAD_KINDS",
    "train_toy_head",
    "RadiusToyGrid",
]
