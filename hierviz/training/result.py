"""What :func:`~hierviz.training.fit` returns or raises: :class:`FitResult`, :class:`StopTraining`, :class:`NonFiniteLossError`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

__all__ = ["FitResult", "NonFiniteLossError", "StopTraining"]


class StopTraining(Exception):
    """Raised by a :func:`fit` callback to end training after the current epoch (early stopping).

    :func:`fit` catches it and returns normally, with ``epochs_done`` the epochs trained.
    """


class NonFiniteLossError(RuntimeError):
    """Raised when the training loss (or one of its terms) becomes NaN or infinite.

    Attributes
    ----------
    epoch : int
        0-based epoch of the offending step.
    step : int
        0-based step within that epoch.
    global_step : int
        0-based optimiser step counted from the start of training.
    terms : dict[str, float]
        The loss and every term of the objective at that step.
    checkpoint : pathlib.Path or None
        The last good checkpoint (left untouched), if any.
    """

    def __init__(
        self, epoch: int, step: int, global_step: int, terms: dict[str, float], checkpoint: Path | None
    ) -> None:
        self.epoch, self.step, self.global_step = epoch, step, global_step
        self.terms = dict(terms)
        self.checkpoint = checkpoint
        shown = ", ".join(f"{k}={v:.6g}" for k, v in self.terms.items())
        if checkpoint is not None and Path(checkpoint).is_file():
            kept = f"the last good checkpoint is kept at {checkpoint}"
        else:
            kept = "no checkpoint had been written yet"
        super().__init__(
            f"non-finite loss at epoch {epoch}, step {step} (global step {global_step}): {shown}; "
            f"training stopped and {kept}. Try a lower learning rate, a larger temperature tau, "
            "or a smaller clip radius for hyperbolic heads."
        )


@dataclass
class FitResult:
    """What :func:`fit` returns.

    Attributes
    ----------
    model : torch.nn.Module
        The trained model (on ``device``), in eval mode.
    ema : torch.optim.swa_utils.AveragedModel or None
        The weight EMA (not for evaluation).
    history : dict[str, list[float]]
        Per-epoch means: ``"loss"``, each objective term, and ``"lr_head"``.
    step_history : dict[str, list[float]]
        Per-step values of ``"loss"`` and each term.
    epochs_done : int
        Epochs completed (== ``config.epochs`` on success).
    resumed_from : int
        Epochs that were loaded from a checkpoint (0 for a fresh run).
    train_seconds : float
        Wall time spent training in this call plus in the calls it resumed.
    checkpoint : pathlib.Path or None
        Path of the final checkpoint.
    device : torch.device
    """

    model: nn.Module
    ema: nn.Module | None
    history: dict[str, list[float]]
    step_history: dict[str, list[float]]
    epochs_done: int
    resumed_from: int
    train_seconds: float
    checkpoint: Path | None
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
