"""The sampler registry and the class-balanced batch sampler (exported by :mod:`hierviz.samplers`).

Here, not in the package's ``__init__``, so that sampler modules (``tree_triplet.py``) import the
registry without importing the package that imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from hierviz._registry import Registry

__all__ = ["SAMPLERS", "ClassBalancedBatchSampler", "register_sampler"]

#: name -> factory ``f(*, labels, tree, batch_size, seed) -> batch sampler``.
SAMPLERS: Registry = Registry("sampler")


def register_sampler(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering a batch-sampler factory under ``name`` (see :data:`SAMPLERS`)."""
    return SAMPLERS.register(name)


class ClassBalancedBatchSampler:
    """Batches that draw classes uniformly (each image once per epoch, rarest classes first).

    Parameters
    ----------
    labels : array-like of int, shape (N,)
    batch_size : int >= 1
    seed : int
        Reproducible per ``(seed, epoch)``; :meth:`set_epoch` reshuffles.

    Notes
    -----
    An epoch holds ``N // batch_size`` full batches (the rest is dropped, as the default
    loader does). Images are interleaved round-robin across classes in a seeded random order.
    """

    def __init__(self, labels: Any, batch_size: int, seed: int = 0) -> None:
        self.labels = np.asarray(labels).astype(np.int64).reshape(-1)
        if isinstance(batch_size, bool) or int(batch_size) < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.batch_size, self.seed, self.epoch = int(batch_size), int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        """Use the order of epoch ``epoch``."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.labels) // self.batch_size

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng((self.seed, self.epoch))
        pools = [rng.permutation(np.flatnonzero(self.labels == c)) for c in np.unique(self.labels)]
        order: list[int] = []
        depth = max(len(p) for p in pools)
        for i in range(depth):  # round robin over the classes, in a fresh random class order each round
            for k in rng.permutation(len(pools)):
                if i < len(pools[k]):
                    order.append(int(pools[k][i]))
        for b in range(len(self)):
            yield order[b * self.batch_size : (b + 1) * self.batch_size]


@register_sampler("class-balanced")
def _class_balanced(*, labels: Any, tree: Any, batch_size: int, seed: int) -> ClassBalancedBatchSampler:
    return ClassBalancedBatchSampler(labels, batch_size, seed)
