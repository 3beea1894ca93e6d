"""The batches :func:`~hierviz.training.fit` trains on: its DataLoader (one process or one rank's shard), and how it is read.

* ``_make_loader``: shuffled batches of ``config.batch_size``, a method's own batch sampler, or
  under torchrun one rank's contiguous slice of the same global batches (``_sharded_loader``);
* ``_augment_threads``: in-process augmentation on one torch thread;
* ``_iter_deferring_sigint``: a Ctrl-C while the loader's workers start is raised after, not lost.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

from hierviz.samplers import TreeTripletBatchSampler
from hierviz.training import distributed as _dist
from hierviz.training.config import TrainConfig


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


def _iter_deferring_sigint(loader: Any) -> Any:
    """``iter(loader)`` with Ctrl-C deferred to its end, then raised as KeyboardInterrupt.

    Starting DataLoader workers forks; a SIGINT that lands while CPython runs its at-fork
    hooks (logging's re-initialises its locks there) raises inside the hook, where the
    exception is printed as "ignored" and lost: the run went on to the end and exited 0.
    Here the signal only records itself while the workers start, and the interrupt is
    raised right after, at the epoch boundary (the last checkpoint is kept).
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
