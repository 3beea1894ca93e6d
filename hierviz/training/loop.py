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
"""

from __future__ import annotations

import math
import random
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler
from tqdm.auto import tqdm

from hierviz.samplers import TreeTripletBatchSampler
from hierviz.training import distributed as _dist
from hierviz.training.checkpoint import CHECKPOINT_NAME, atomic_save, load_checkpoint, rng_state, set_rng_state
from hierviz.training.config import TrainConfig, check_resume_config

__all__ = [
    "FitResult",
    "NonFiniteLossError",
    "StopTraining",
    "fit",
    "seed_everything",
    "resolve_device",
    "warmup_cosine",
]


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


# --------------------------------------------------------------------------- fit


def _worker_options(config: TrainConfig, loader_options: dict[str, Any] | None) -> dict[str, Any]:
    """DataLoader options for worker processes (``persistent_workers``, ``prefetch_factor``); none without workers."""
    if not loader_options or config.num_workers == 0:
        return {"persistent_workers": False}
    allowed = {"persistent_workers", "prefetch_factor"}
    bad = sorted(set(loader_options) - allowed)
    if bad:
        raise ValueError(f"loader_options: unknown {bad}; allowed: {sorted(allowed)}")
    return {"persistent_workers": False, **loader_options}


def _make_loader(
    dataset: Dataset,
    config: TrainConfig,
    gen: torch.Generator,
    device: torch.device,
    batch_sampler: Any = None,
    loader_options: dict[str, Any] | None = None,
) -> DataLoader:
    n = len(dataset)  # type: ignore[arg-type]
    if n < 1:
        raise ValueError("train_data is empty")
    if _dist.is_distributed():  # every rank draws the same global batches and keeps its slice
        return _sharded_loader(dataset, config, gen, device, batch_sampler)
    if batch_sampler is not None:  # a method's own batches (e.g. tree triplets, paper 04)
        return DataLoader(
            dataset,
            batch_sampler=batch_sampler,
            num_workers=config.num_workers,
            pin_memory=device.type == "cuda",
            **_worker_options(config, loader_options),
        )
    bs = min(config.batch_size, n)
    return DataLoader(
        dataset,
        batch_size=bs,
        shuffle=True,
        drop_last=n >= config.batch_size,
        num_workers=config.num_workers,
        generator=gen,
        pin_memory=device.type == "cuda",
        **_worker_options(config, loader_options),
    )


def _sharded_loader(
    dataset: Dataset, config: TrainConfig, gen: torch.Generator, device: torch.device, batch_sampler: Any
) -> DataLoader:
    """The loader of one rank: its contiguous slice of the same global batches as one process.

    The default path draws the permutation from ``gen`` as ``DataLoader(shuffle=True,
    generator=gen)`` does (base seed first, then the sampler's seed), so the global batches
    are those of a single-process run with the same seed and ``batch_size``.
    """
    n = len(dataset)  # type: ignore[arg-type]
    if batch_sampler is None:
        bs = min(config.batch_size, n)
        batch_sampler = BatchSampler(RandomSampler(dataset, generator=gen), bs, drop_last=n >= config.batch_size)
    block = 3 if isinstance(batch_sampler, TreeTripletBatchSampler) else 1
    shard = _dist.ShardedBatchSampler(batch_sampler, _dist.get_world_size(), _dist.get_rank(), block=block)
    return DataLoader(
        dataset,
        batch_sampler=shard,
        num_workers=config.num_workers,
        generator=gen,
        pin_memory=device.type == "cuda",
        persistent_workers=False,
    )


class _augment_threads:
    """Run in-process augmentation with one torch thread (as DataLoader workers do).

    Per-image transforms of 28-64 px images are far too small to gain from intra-op
    parallelism; with two or more threads they spend their time in thread hand-offs
    (measured 10x slower on a busy 2-core machine).  The model keeps every thread.
    """

    def __init__(self, active: bool) -> None:
        self.active = active
        self.saved = 0

    def __enter__(self) -> None:
        if self.active:
            self.saved = torch.get_num_threads()
            if self.saved != 1:
                torch.set_num_threads(1)

    def __exit__(self, *exc: Any) -> None:
        if self.active and self.saved != 1:
            torch.set_num_threads(self.saved)


def _amp_setup(config: TrainConfig, device: torch.device) -> tuple[bool, torch.dtype]:
    if not (config.amp and device.type == "cuda"):
        return False, torch.float32
    return True, (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)


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


def _iter_deferring_sigint(loader: Any) -> Any:
    """``iter(loader)`` with Ctrl-C deferred to its end, then raised as KeyboardInterrupt.

    Starting DataLoader workers forks; a SIGINT that lands while CPython runs its at-fork
    hooks (logging's re-initialises its locks there) raises inside the hook, where the
    exception is printed as "ignored" and lost: the run went on to the end and exited 0
    (issue 27 #17). Here the signal only records itself while the workers start, and the
    interrupt is raised right after, at the epoch boundary (the last checkpoint is kept).
    Only in the main thread with Python's default handler installed; otherwise plain ``iter``.
    """
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        return iter(loader)
    hit: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: hit.append(signum))
    try:
        batches = iter(loader)
    finally:
        signal.signal(signal.SIGINT, old)
    if hit:
        del batches  # shut the workers down before leaving
        raise KeyboardInterrupt
    return batches


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
    requires_logits = bool(getattr(objective, "requires_logits", False))
    if requires_logits and getattr(model, "classifier", True) is None:
        raise ValueError(
            "objective requires logits (e.g. 'hxe') but the model has no classifier; "
            "build it with num_classes=tree.num_leaves"
        )

    model.to(device)
    if channels_last:
        model.to(memory_format=torch.channels_last)
    objective.to(device)
    distributed = _dist.is_distributed()
    main = _dist.is_main_process()
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

    # parameter groups: backbone vs head (10x LR)
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
    optimizer = opt_class(groups, weight_decay=config.weight_decay)

    gen = torch.Generator()
    gen.manual_seed(int(config.seed))
    loader = _make_loader(train_data, config, gen, device, batch_sampler, loader_options)
    steps_per_epoch = len(loader)
    total_steps = steps_per_epoch * config.epochs
    warmup_steps = min(int(round(config.warmup_epochs * steps_per_epoch)), max(0, total_steps - 1))
    if config.schedule == "constant":
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    else:
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_cosine(s, warmup_steps, total_steps))
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp and amp_dtype == torch.float16)

    ema = None
    if config.ema_decay:
        ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(config.ema_decay), use_buffers=True)

    history: dict[str, list[float]] = {}
    step_history: dict[str, list[float]] = {}
    start_epoch, global_step, prior_seconds = 0, 0, 0.0

    if config.resume and ckpt_path is not None and ckpt_path.is_file():
        state = load_checkpoint(ckpt_path, map_location=device)
        check_resume_config(state["config"], config, ckpt_path)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        scaler.load_state_dict(state["scaler"])
        if ema is not None and state.get("ema") is not None:
            ema.load_state_dict(state["ema"])
        objective.load_state_dict(state["objective"])
        set_rng_state(state["rng"], gen)
        history, step_history = state["history"], state["step_history"]
        start_epoch, global_step = int(state["epoch"]), int(state["global_step"])
        prior_seconds = float(state["train_seconds"])
    else:
        seed_everything(config.seed)
    resumed_from = start_epoch

    bar = tqdm(
        total=total_steps,
        initial=global_step,
        disable=not (config.progress and main),
        desc="train",
        unit="step",
        leave=False,
        dynamic_ncols=True,
    )
    t0 = time.perf_counter()
    # geoopt's TorchScript functions switch to JIT-optimised graphs after warm-up calls, whose
    # float rounding differs from the first calls: the first run in a process would then differ
    # from later ones and a resumed run from an uninterrupted one.  Run them unoptimised.
    jit_guard = torch.jit.optimized_execution(False)
    loss_fn = None
    if getattr(config, "compile_loss", False) and hasattr(objective, "loss_from_output"):
        from hierviz.losses.compiled import CompiledLoss  # heavy: hierviz.losses (geoopt, scipy), on first use

        loss_fn = CompiledLoss(objective)
    jit_guard.__enter__()
    try:
        epochs_done = config.epochs
        for epoch in range(start_epoch, config.epochs):
            if batch_sampler is not None and hasattr(batch_sampler, "set_epoch"):
                batch_sampler.set_epoch(epoch)
            if hasattr(train_data, "set_epoch"):  # per-sample augmentation seeds (ContrastiveDataset(seed=...))
                train_data.set_epoch(epoch)
            model.train()
            objective.train()
            sums: dict[str, float] = {}
            batches = _iter_deferring_sigint(loader)  # issue 27 #17: Ctrl-C while workers fork is kept
            for step in range(steps_per_epoch):
                with _augment_threads(config.num_workers == 0):
                    batch = next(batches)
                x, y = batch[0], batch[1]
                x = x.to(device, non_blocking=True)
                if device_augment is not None:  # views drawn on the device, seeded by (seed, rank, step)
                    from hierviz.data.gpu_augment import batch_seed  # heavy: torchvision (hierviz.data)

                    x = device_augment(x, batch_seed(int(config.seed) + 7919 * _dist.get_rank(), global_step))
                y = torch.as_tensor(y).to(device, non_blocking=True).long()
                with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=use_amp):
                    out = train_model(x)
                if distributed:  # negatives from every rank: the objective sees the global batch
                    out, y = _dist.gather_batch(out, y, shared=getattr(model, "shared_outputs", ()))
                if loss_fn is not None:  # train.compile_loss (issue 25)
                    loss, terms = loss_fn(out, y)
                else:
                    loss, terms = _objective_loss(objective, out, y, requires_logits)
                values = {"loss": float(loss.detach())}
                values.update(
                    {k: float(torch.as_tensor(v).detach().float().mean()) for k, v in terms.items() if k != "loss"}
                )
                if not all(math.isfinite(v) for v in values.values()):
                    raise NonFiniteLossError(epoch, step, global_step, values, ckpt_path)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                if config.grad_clip is not None:
                    scaler.unscale_(optimizer)
                    nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                _dist.broadcast_buffers(objective)  # e.g. LAM prototypes: rank 0's on every rank
                if ema is not None:
                    ema.update_parameters(model)
                global_step += 1
                for k, v in values.items():
                    step_history.setdefault(k, []).append(v)
                    sums[k] = sums.get(k, 0.0) + v
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{values['loss']:.4f}")
            n = max(1, steps_per_epoch)
            for k, v in sums.items():
                history.setdefault(k, []).append(v / n)
            history.setdefault("lr_head", []).append(float(optimizer.param_groups[-1]["lr"]))
            elapsed = prior_seconds + (time.perf_counter() - t0)
            if ckpt_path is not None and main:  # rank 0 alone writes
                atomic_save(
                    {
                        "epoch": epoch + 1,
                        "global_step": global_step,
                        "config": config.to_dict(),
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                        "scaler": scaler.state_dict(),
                        "ema": None if ema is None else ema.state_dict(),
                        "objective": objective.state_dict(),
                        "rng": rng_state(gen),
                        "history": history,
                        "step_history": step_history,
                        "train_seconds": elapsed,
                    },
                    ckpt_path,
                )
            _dist.barrier()  # the checkpoint is on disk before any rank goes on
            stop = False
            for cb in callbacks:
                try:
                    cb(
                        epoch,
                        {
                            "history": history,
                            "step_history": step_history,
                            "model": model,
                            "checkpoint": ckpt_path,
                            "optimizer": optimizer,
                            "scheduler": scheduler,
                        },
                    )
                except StopTraining:  # early stopping: this epoch is the last
                    stop = True
            if stop:
                epochs_done = epoch + 1
                break
    finally:
        jit_guard.__exit__(None, None, None)
        bar.close()
        if sync_bn:  # the caller's batch-norm classes again (same parameters and buffers)
            model = _dist.revert_batchnorm(model)
            if ema is not None:
                ema.module = _dist.revert_batchnorm(ema.module)
    model.eval()
    return FitResult(
        model=model,
        ema=ema,
        history=history,
        step_history=step_history,
        epochs_done=epochs_done,
        resumed_from=resumed_from,
        train_seconds=prior_seconds + (time.perf_counter() - t0),
        checkpoint=ckpt_path,
        device=device,
    )
