"""A small, resumable training loop for contrastive (and HXE) objectives.

Recipe of paper 01 §4.2: AdamW (weight decay 1e-4), linear warmup then cosine decay,
backbone LR 1e-4 and head LR 1e-3 (10x), an optional EMA of the weights (decay 0.99; kept
for stability, *not* used for evaluation).  On top of that, what a long run on a shared
machine needs:

* seeded everything (python, numpy, torch, the DataLoader's generator);
* a ``tqdm.auto`` progress bar;
* an atomic checkpoint at the end of every epoch (``torch.save`` to a temporary file, then
  ``os.replace``), holding model, optimizer, scheduler, grad-scaler, EMA, the objective's
  buffers (e.g. LAM prototypes), all RNG states, the history and the epoch;
* ``resume=True`` continues an interrupted run exactly: on CPU with ``num_workers=0`` the
  final weights are bit-identical to an uninterrupted run;
* a non-finite loss stops the run with :class:`NonFiniteLossError` naming the step and
  every loss term; the last good checkpoint is left untouched;
* CUDA when present, CPU otherwise; under mixed precision only the encoder and head run in
  reduced precision: the manifold map and the loss run in float32;
* TorchScript functions (geoopt's manifold maths) run without the JIT's warm-up
  optimisations, whose different float rounding would make the first run in a process
  differ from later ones (and a resumed run from an uninterrupted one).

This module holds :func:`fit` and its epoch loop; the pieces it assembles are in
:mod:`hierviz.training.parts` (seeds, device, optimiser, schedule, EMA, precision, placement),
its DataLoader in :mod:`hierviz.training.batches`, and what it returns or raises in
:mod:`hierviz.training.result` (all re-exported here).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel
from torch.utils.data import DataLoader, Dataset

from hierviz.training import distributed as _dist
from hierviz.training.batches import _augment_threads, _iter_deferring_sigint, _make_loader
from hierviz.training.checkpoint import CHECKPOINT_NAME, atomic_save, load_checkpoint, rng_state, set_rng_state
from hierviz.training.config import TrainConfig, check_resume_config
from hierviz.training.parts import (
    _amp_setup,
    _compiled_loss,
    _make_ema,
    _make_optimizer,
    _make_scheduler,
    _place_model,
    _progress_bar,
    resolve_device,
    seed_everything,
    warmup_cosine,
)
from hierviz.training.result import FitResult, NonFiniteLossError, StopTraining

__all__ = [
    "FitResult",
    "NonFiniteLossError",
    "StopTraining",
    "fit",
    "seed_everything",
    "resolve_device",
    "warmup_cosine",
]


def _loss_with_logits(
    objective: nn.Module, z: torch.Tensor, y: torch.Tensor, logits: torch.Tensor | None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The mean over views of ``objective(z, y, logits[:, v])`` (see :func:`hierviz.losses.objective.mean_over_view_logits`)."""
    # heavy: hierviz.losses loads geoopt and scipy (+1.5 s on import hierviz.training), on first use
    from hierviz.losses.objective import mean_over_view_logits

    return mean_over_view_logits(objective, z, y, logits, who="objective (e.g. 'hxe')")


def _objective_loss(
    objective: nn.Module, out: dict[str, Any], y: torch.Tensor, requires_logits: bool
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The objective on one batch of model outputs.

    An objective with a ``loss_from_output(out, labels)`` method (every
    :class:`hierviz.losses.Objective`) decides itself which outputs it reads; any other
    module is called as ``objective(z, y)`` (or on logits, see :func:`_loss_with_logits`).
    """
    if hasattr(objective, "loss_from_output"):
        return objective.loss_from_output(out, y)
    if "z" not in out:
        raise ValueError("model output has no 'z' entry")
    z = out["z"].float()
    if requires_logits:
        return _loss_with_logits(objective, z, y, out.get("logits"))
    return objective(z, y)


def _requires_logits(objective: nn.Module, model: nn.Module) -> bool:
    """Whether ``objective`` reads class logits (``objective.requires_logits``).

    Raises
    ------
    ValueError
        If it does and ``model.classifier`` is None.
    """
    requires_logits = bool(getattr(objective, "requires_logits", False))
    if requires_logits and getattr(model, "classifier", True) is None:
        raise ValueError(
            "objective requires logits (e.g. 'hxe') but the model has no classifier; "
            "build it with num_classes=tree.num_leaves"
        )
    return requires_logits


@dataclass(eq=False)
class _Run:
    """What one :func:`fit` call trains and checkpoints, and its epoch loop.

    Holds what :func:`fit` set up (model, optimiser, schedule, grad-scaler, EMA, loader and
    its generator) and what advances while training (the step counter, the per-epoch and
    per-step history, the wall time); the checkpoint written after every epoch saves it
    all and :meth:`resume_or_seed` restores it.
    """

    config: TrainConfig
    model: nn.Module
    train_model: nn.Module
    objective: nn.Module
    train_data: Dataset
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    ema: AveragedModel | None
    gen: torch.Generator
    loader: DataLoader
    device: torch.device
    ckpt_path: Path | None
    amp: tuple[bool, torch.dtype]
    requires_logits: bool
    batch_sampler: Any = None
    device_augment: Callable[[torch.Tensor, int], torch.Tensor] | None = None
    loss_fn: Callable[..., Any] | None = None
    history: dict[str, list[float]] = field(default_factory=dict)
    step_history: dict[str, list[float]] = field(default_factory=dict)
    start_epoch: int = 0
    global_step: int = 0
    prior_seconds: float = 0.0
    t0: float = 0.0
    bar: Any = None
    steps_per_epoch: int = field(init=False)  # len(loader), read once: the schedule and the bar count on it

    def __post_init__(self) -> None:
        self.steps_per_epoch = len(self.loader)

    def resume_or_seed(self) -> None:
        """Restore the checkpoint's state under ``config.resume`` when there is one; else seed a fresh run.

        Raises
        ------
        ValueError
            If the checkpoint was written with different settings (:func:`check_resume_config`).
        """
        config, ckpt_path = self.config, self.ckpt_path
        if not (config.resume and ckpt_path is not None and ckpt_path.is_file()):
            seed_everything(config.seed)
            return
        state = load_checkpoint(ckpt_path, map_location=self.device)
        check_resume_config(state["config"], config, ckpt_path)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])
        if self.ema is not None and state.get("ema") is not None:
            self.ema.load_state_dict(state["ema"])
        self.objective.load_state_dict(state["objective"])
        set_rng_state(state["rng"], self.gen)
        self.history, self.step_history = state["history"], state["step_history"]
        self.start_epoch, self.global_step = int(state["epoch"]), int(state["global_step"])
        self.prior_seconds = float(state["train_seconds"])

    def elapsed(self) -> float:
        """Seconds trained: in this call (since ``t0``) plus in the calls it resumed."""
        return self.prior_seconds + (time.perf_counter() - self.t0)

    def train(self, callbacks: Sequence[Callable[[int, dict[str, Any]], None]]) -> int:
        """Train the epochs from ``start_epoch`` on; return the epochs done.

        After each epoch: its means go to ``history``, the checkpoint is written, then the
        callbacks run; one raising :class:`StopTraining` makes that epoch the last.
        """
        for epoch in range(self.start_epoch, self.config.epochs):
            self._train_epoch(epoch)
            self._save_checkpoint(epoch)
            if self._run_callbacks(epoch, callbacks):
                return epoch + 1
        return self.config.epochs

    def _train_epoch(self, epoch: int) -> None:
        """Every step of one epoch; record each step's values and the epoch's means and head LR."""
        if self.batch_sampler is not None and hasattr(self.batch_sampler, "set_epoch"):
            self.batch_sampler.set_epoch(epoch)
        if hasattr(self.train_data, "set_epoch"):  # per-sample augmentation seeds (ContrastiveDataset(seed=...))
            self.train_data.set_epoch(epoch)
        self.model.train()
        self.objective.train()
        sums: dict[str, float] = {}
        # a Ctrl-C while the loader's workers fork is raised here rather than lost in an at-fork hook
        batches = _iter_deferring_sigint(self.loader)
        for step in range(self.steps_per_epoch):
            with _augment_threads(self.config.num_workers == 0):
                batch = next(batches)
            values = self._step(epoch, step, batch)
            for k, v in values.items():
                self.step_history.setdefault(k, []).append(v)
                sums[k] = sums.get(k, 0.0) + v
            self.bar.update(1)
            self.bar.set_postfix(epoch=epoch + 1, loss=f"{values['loss']:.4f}")
        n = max(1, self.steps_per_epoch)
        for k, v in sums.items():
            self.history.setdefault(k, []).append(v / n)
        self.history.setdefault("lr_head", []).append(float(self.optimizer.param_groups[-1]["lr"]))

    def _step(self, epoch: int, step: int, batch: Sequence[Any]) -> dict[str, float]:
        """One optimiser step on ``batch``; returns the loss and each term's batch mean.

        Raises
        ------
        NonFiniteLossError
            If the loss or a term is NaN/inf (before any parameter is updated).
        """
        loss, terms = self._loss(batch)
        values = {"loss": float(loss.detach())}
        values.update({k: float(torch.as_tensor(v).detach().float().mean()) for k, v in terms.items() if k != "loss"})
        if not all(math.isfinite(v) for v in values.values()):
            raise NonFiniteLossError(epoch, step, self.global_step, values, self.ckpt_path)
        self._update(loss)
        self.global_step += 1
        return values

    def _loss(self, batch: Sequence[Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Move ``batch`` to the device (drawing its views there if asked), run the model, return the objective's loss and terms."""
        device = self.device
        x, y = batch[0], batch[1]
        x = x.to(device, non_blocking=True)
        if self.device_augment is not None:  # views drawn on the device, seeded by (seed, rank, step)
            from hierviz.data.gpu_augment import batch_seed  # heavy: torchvision (hierviz.data)

            x = self.device_augment(x, batch_seed(int(self.config.seed) + 7919 * _dist.get_rank(), self.global_step))
        y = torch.as_tensor(y).to(device, non_blocking=True).long()
        use_amp, amp_dtype = self.amp
        with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=use_amp):
            out = self.train_model(x)
        if _dist.is_distributed():  # negatives from every rank: the objective sees the global batch
            out, y = _dist.gather_batch(out, y, shared=getattr(self.model, "shared_outputs", ()))
        if self.loss_fn is not None:  # train.compile_loss: the objective compiled once
            return self.loss_fn(out, y)
        return _objective_loss(self.objective, out, y, self.requires_logits)

    def _update(self, loss: torch.Tensor) -> None:
        """Back-propagate ``loss``, clip, step optimiser, schedule and scaler; share objective buffers; update the EMA."""
        optimizer, scaler = self.optimizer, self.scaler
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if self.config.grad_clip is not None:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        self.scheduler.step()
        _dist.broadcast_buffers(self.objective)  # e.g. LAM prototypes: rank 0's on every rank
        if self.ema is not None:
            self.ema.update_parameters(self.model)

    def _save_checkpoint(self, epoch: int) -> None:
        """Write the state after ``epoch`` atomically (rank 0 alone); every rank waits for it."""
        elapsed = self.elapsed()
        if self.ckpt_path is not None and _dist.is_main_process():  # rank 0 alone writes
            atomic_save(
                {
                    "epoch": epoch + 1,
                    "global_step": self.global_step,
                    "config": self.config.to_dict(),
                    "model": self.model.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "scheduler": self.scheduler.state_dict(),
                    "scaler": self.scaler.state_dict(),
                    "ema": None if self.ema is None else self.ema.state_dict(),
                    "objective": self.objective.state_dict(),
                    "rng": rng_state(self.gen),
                    "history": self.history,
                    "step_history": self.step_history,
                    "train_seconds": elapsed,
                },
                self.ckpt_path,
            )
        _dist.barrier()  # the checkpoint is on disk before any rank goes on

    def result(self, epochs_done: int) -> FitResult:
        """The :class:`FitResult` of this run after ``epochs_done`` epochs (wall time read now)."""
        return FitResult(
            model=self.model,
            ema=self.ema,
            history=self.history,
            step_history=self.step_history,
            epochs_done=epochs_done,
            resumed_from=self.start_epoch,
            train_seconds=self.elapsed(),
            checkpoint=self.ckpt_path,
            device=self.device,
        )

    def _run_callbacks(self, epoch: int, callbacks: Sequence[Callable[[int, dict[str, Any]], None]]) -> bool:
        """Call every callback on ``epoch``; True when one raised :class:`StopTraining` (the others still ran)."""
        stop = False
        for cb in callbacks:
            try:
                cb(
                    epoch,
                    {
                        "history": self.history,
                        "step_history": self.step_history,
                        "model": self.model,
                        "checkpoint": self.ckpt_path,
                        "optimizer": self.optimizer,
                        "scheduler": self.scheduler,
                    },
                )
            except StopTraining:  # early stopping: this epoch is the last
                stop = True
        return stop


def fit(
    config: TrainConfig,
    model: nn.Module,
    objective: nn.Module,
    train_data: Dataset,
    *,
    callbacks: Sequence[Callable[[int, dict[str, Any]], None]] = (),
    batch_sampler: Any = None,
    device_augment: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
    channels_last: bool = False,
    loader_options: dict[str, Any] | None = None,
) -> FitResult:
    """Train ``model`` with ``objective`` on multi-view batches (paper 01 §4.2 recipe).

    Each batch ``(x, y)`` from ``train_data`` has ``x`` of shape (B, V, 3, H, W) (V >= 2
    views of each image, e.g. :class:`hierviz.data.ContrastiveDataset`) and ``y`` (B,) leaf
    indices.  The model returns ``z`` (B, V, d) on the manifold (and ``logits`` when it has
    a classifier); the loss is ``objective(z, y, logits)`` when
    ``objective.requires_logits`` else ``objective(z, y)``.  A fresh run seeds python,
    numpy and torch with ``config.seed`` (the augmentation stream); a resumed run restores
    the RNG states saved in the checkpoint instead.

    Parameters
    ----------
    config : TrainConfig
    model : torch.nn.Module
        Returns a dict with ``"z"`` (and ``"logits"``) like
        :class:`hierviz.models.EmbeddingModel`.  Parameters are split into a backbone group
        (``model.backbone_parameters()``, LR ``lr_backbone``) and a head group (everything
        else, LR ``lr_head``).  Seed before building it (:func:`seed_everything`) for
        reproducible initial weights.
    objective : torch.nn.Module
        A :class:`hierviz.losses.Objective`: ``forward(z, labels, logits=None) ->
        (loss, terms)``.  Its buffers (e.g. LAM prototypes) are checkpointed.
    train_data : torch.utils.data.Dataset
        Items ``(x (V, 3, H, W) float tensor, label int)``.
    callbacks : sequence of callables, optional
        ``cb(epoch, info)`` after each epoch's checkpoint, with ``info`` holding
        ``history``, ``step_history``, ``model``, ``checkpoint``, and the ``optimizer`` and
        ``scheduler`` being stepped (read them; a callback that changes them changes training).  An exception raised by a
        callback propagates (the checkpoint of that epoch is already on disk), except
        :class:`StopTraining`, which ends training there (early stopping; the other
        callbacks of that epoch still run).
    batch_sampler : iterable of index lists, optional
        Yields the dataset indices of each batch (a method's sampler, see
        :data:`hierviz.samplers.SAMPLERS`); its ``set_epoch(e)``, if any, is called each epoch.
        Default: shuffled batches of ``config.batch_size``.
    device_augment : callable, optional
        ``device_augment(x, seed) -> (B, V, 3, S, S)``, applied to each batch after it is
        moved to the device, e.g. :class:`hierviz.data.gpu_augment.BatchTwoViewAugment` on
        uint8 images (:class:`hierviz.data.gpu_augment.UInt8Images`). ``seed`` is
        :func:`~hierviz.data.gpu_augment.batch_seed` of the run's seed (and rank) and the
        global step, so the views are reproducible and a resumed run draws the same ones.
    channels_last : bool, default False
        Put the model in ``torch.channels_last`` memory format (faster convolutions on
        tensor-core GPUs).
    loader_options : dict, optional
        ``persistent_workers`` and/or ``prefetch_factor`` for the DataLoader when
        ``config.num_workers > 0`` (one process; ignored under torchrun). Persistent
        workers keep their RNG across epochs: use them with per-sample view seeds
        (``data.augment_seeds = "sample"``) for reproducible, resumable runs.

    Returns
    -------
    FitResult

    Raises
    ------
    NonFiniteLossError
        If the loss or a term is NaN/inf; names the epoch, step and every term; the last
        good checkpoint is kept.
    ValueError
        Bad config, empty data, a model without ``"z"``, a resumed checkpoint written with
        different settings, or a logits-requiring objective and a model without classifier.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    device = resolve_device(config.device)
    use_amp, amp_dtype = _amp_setup(config, device)
    ckpt_path = None if config.checkpoint_dir is None else Path(config.checkpoint_dir) / CHECKPOINT_NAME
    requires_logits = _requires_logits(objective, model)
    model, train_model, sync_bn = _place_model(model, objective, config, device, channels_last)
    optimizer = _make_optimizer(model, objective, config)
    gen = torch.Generator()
    gen.manual_seed(int(config.seed))
    loader = _make_loader(train_data, config, gen, device, batch_sampler, loader_options)
    scheduler = _make_scheduler(optimizer, config, len(loader))
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp and amp_dtype == torch.float16)
    ema = _make_ema(model, config)
    run = _Run(
        config=config, model=model, train_model=train_model, objective=objective, train_data=train_data,
        optimizer=optimizer, scheduler=scheduler, scaler=scaler, ema=ema, gen=gen, loader=loader, device=device,
        ckpt_path=ckpt_path, amp=(use_amp, amp_dtype), requires_logits=requires_logits,
        batch_sampler=batch_sampler, device_augment=device_augment,
    )  # fmt: skip
    run.resume_or_seed()
    run.bar = _progress_bar(config, run.steps_per_epoch * config.epochs, run.global_step)
    run.t0 = time.perf_counter()
    # geoopt's TorchScript functions switch to JIT-optimised graphs after warm-up calls, whose
    # float rounding differs from the first calls: the first run in a process would then differ
    # from later ones and a resumed run from an uninterrupted one.  Run them unoptimised.
    jit_guard = torch.jit.optimized_execution(False)
    run.loss_fn = _compiled_loss(config, objective)
    jit_guard.__enter__()
    try:
        epochs_done = run.train(callbacks)
    finally:
        jit_guard.__exit__(None, None, None)
        run.bar.close()
        if sync_bn:  # the caller's batch-norm classes again (same parameters and buffers)
            run.model = _dist.revert_batchnorm(run.model)
            if ema is not None:
                ema.module = _dist.revert_batchnorm(ema.module)
    run.model.eval()
    return run.result(epochs_done)
