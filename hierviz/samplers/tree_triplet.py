"""Tree triplets: Paper 04 (Generalised triplets) §II-B, as a PyTorch sampler.

A *generalised triplet* ``(x_a, x_p, x_n)`` takes the anchor and the positive from one
subtree and the negative from outside the lowest common ancestor (LCA) of their leaves, so
positive pairs come from every level of the tree, not only from one leaf.

The rule of §II-B, for any tree: for every internal node ``n`` with at least two
children, take every ordered pair ``(n_a, n_n)`` of distinct children of ``n``. If ``n_a``
has fewer than two children (a leaf, or a single-child chain), anchor and positive are two
different samples of ``M(n_a)``. If ``n_a`` has several children, every pair
``{c_a, c_p}`` of distinct children of ``n_a`` (unordered, first in node order is the anchor,
as ``itertools.combinations`` in the authors' sampler, tiianhk/label-metric) gives anchor from
``M(c_a)`` and positive from ``M(c_p)`` (their LCA is then ``n_a``). The negative is drawn from ``M(n_n)``, so its leaf
lies outside the subtree of ``n_a`` and hence outside the anchor's and positive's LCA.
``M(n)`` is the set of samples whose leaf lies under ``n``; "sample from node n" draws
uniformly from it.

The node triples ``(n_a or c_a, n_a or c_p, n_n)`` are fixed by the tree and the labels
(:attr:`TreeTripletSampler.templates`); an epoch draws one sample triple per template
(``repeats`` times), in a seeded random order: an offline mining of the whole tree per
epoch, as the paper's sampler.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from hierviz.hierarchy import dfs_leaves
from hierviz.samplers.base import register_sampler

__all__ = ["TreeTripletSampler", "TreeTripletBatchSampler", "triplet_templates"]


def _check_int(value: Any, name: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def triplet_templates(tree: Any, present: Any) -> np.ndarray:
    """The node triples of Paper 04 (Generalised triplets) §II-B for the leaves that have samples.

    Parameters
    ----------
    tree : LabelTree
    present : array-like of bool, shape (C,)
        ``present[i]``: leaf ``i`` (``tree.leaves`` order) has at least one sample. Nodes
        without a present leaf below them are dropped from the tree first.

    Returns
    -------
    numpy.ndarray, shape (T, 3), int64
        Rows ``(anchor node, positive node, negative node)`` as indices of ``tree.nodes``;
        anchor node == positive node when ``n_a`` has fewer than two (present) children.

    Raises
    ------
    ValueError
        ``present`` has the wrong shape.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> [[t.nodes[i] for i in row] for row in triplet_templates(t, [True, True, True])]
    [['x', 'y', 'b'], ['b', 'b', 'a'], ['x', 'x', 'y'], ['y', 'y', 'x']]
    """
    present = np.asarray(present, dtype=bool).reshape(-1)
    if present.shape != (tree.num_leaves,):
        raise ValueError(f"present must have shape ({tree.num_leaves},), got {present.shape}")
    ni = tree.node_index
    has = np.asarray(tree.ancestor_matrix.numpy()[present].any(axis=0))  # (N,) node has a present leaf

    def kids(n: str) -> list[str]:
        return [c for c in tree.children(n) if has[ni[c]]]

    rows: list[tuple[int, int, int]] = []
    for n in tree.nodes:  # node (breadth-first) order: deterministic
        ch = kids(n) if has[ni[n]] else []
        if len(ch) < 2:
            continue
        for na in ch:
            sub = kids(na)
            pairs = [(na, na)] if len(sub) < 2 else list(itertools.combinations(sub, 2))
            for nn in ch:
                if nn == na:
                    continue
                rows.extend((ni[a], ni[p], ni[nn]) for a, p in pairs)
    return np.asarray(rows, dtype=np.int64).reshape(-1, 3)


class TreeTripletSampler:
    """Tree triplets of dataset indices, one epoch per iteration (Paper 04 (Generalised triplets) §II-B).

    Parameters
    ----------
    labels : array-like of int, shape (N,)
        Leaf index of every sample, in ``tree.leaves`` order. Leaves without samples
        (e.g. unseen leaves) are left out of the tree.
    tree : LabelTree
    seed : int, default 0
        The epoch's triplets depend only on ``(seed, epoch)``.
    repeats : int, default 1
        Sample triples drawn per template in an epoch.
    num_replicas : int, default 1
        Processes sharing the epoch (``DistributedSampler`` style).
    rank : int, default 0
        This process, in ``[0, num_replicas)``: it gets every ``num_replicas``-th triplet
        from position ``rank`` of the epoch, padded by wrapping so that every shard has
        :meth:`__len__` triplets.

    Attributes
    ----------
    templates : numpy.ndarray, shape (T, 3), int64
        The node triples (:func:`triplet_templates`); templates whose anchor and positive
        share a node with a single sample are dropped (no two distinct samples).

    Raises
    ------
    ValueError
        ``labels`` not 1-D integers in ``[0, C)``, bad ``repeats``/``num_replicas``/``rank``,
        or no valid triplet (fewer than two sibling subtrees with samples).

    Notes
    -----
    Each yielded item is a tuple ``(anchor, positive, negative)`` of ints. The negative's
    leaf is never in the subtree of the LCA of the anchor's and positive's leaves; anchor
    and positive are different samples. Implemented without a loop over samples: samples
    are sorted by the depth-first position of their leaf, so ``M(n)`` is one contiguous run.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> s = TreeTripletSampler([0, 0, 1, 1, 2, 2], t, seed=0)
    >>> len(s)
    4
    >>> sorted(len(set(trip)) for trip in s)  # anchor, positive, negative: three samples
    [3, 3, 3, 3]
    """

    def __init__(
        self, labels: Any, tree: Any, seed: int = 0, *, repeats: int = 1, num_replicas: int = 1, rank: int = 0
    ) -> None:
        y = np.asarray(labels)
        if y.ndim != 1 or (y.size and not np.issubdtype(y.dtype, np.integer)):
            raise ValueError(f"labels must be a 1-D array of leaf indices, got shape {y.shape} dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() >= tree.num_leaves):
            raise ValueError(f"labels must be leaf indices in [0, {tree.num_leaves - 1}], got {y.min()}..{y.max()}")
        self.tree, self.labels = tree, y.astype(np.int64)
        self.seed = int(seed)
        self.repeats = _check_int(repeats, "repeats", 1)
        self.num_replicas = _check_int(num_replicas, "num_replicas", 1)
        self.rank = _check_int(rank, "rank", 0)
        if self.rank >= self.num_replicas:
            raise ValueError(f"rank must be in [0, num_replicas={self.num_replicas}), got {rank}")
        self.epoch = 0
        # samples sorted by the DFS position of their leaf: M(n) = order[start[n]:stop[n]]
        dfs = dfs_leaves(tree)
        pos = np.empty(tree.num_leaves, dtype=np.int64)
        pos[[tree.leaf_index[leaf] for leaf in dfs]] = np.arange(len(dfs))
        self._order = np.argsort(pos[self.labels], kind="stable")
        counts = np.bincount(self.labels, minlength=tree.num_leaves)
        cum = np.concatenate([[0], np.cumsum(counts[[tree.leaf_index[leaf] for leaf in dfs]])])
        anc = tree.ancestor_matrix.numpy()  # (C, N)
        first = np.full(tree.num_nodes, len(dfs), dtype=np.int64)
        last = np.full(tree.num_nodes, -1, dtype=np.int64)
        for j, leaf in enumerate(dfs):  # loop over leaves (C), not samples
            cols = np.flatnonzero(anc[tree.leaf_index[leaf]])
            first[cols] = np.minimum(first[cols], j)
            last[cols] = np.maximum(last[cols], j)
        self._start, self._stop = cum[first], cum[last + 1]
        size = self._stop - self._start
        tpl = triplet_templates(tree, counts > 0)
        same = tpl[:, 0] == tpl[:, 1]
        tpl = tpl[~same | (size[tpl[:, 0]] >= 2)]
        if len(tpl) == 0:
            raise ValueError(
                "no tree triplet is possible: the labels need samples under at least two sibling subtrees "
                "(and two samples where anchor and positive share a node)"
            )
        self.templates = tpl

    @property
    def num_triplets(self) -> int:
        """Triplets in one epoch over all replicas (before padding): ``len(templates) * repeats``."""
        return len(self.templates) * self.repeats

    def set_epoch(self, epoch: int) -> None:
        """Draw the triplets of epoch ``epoch`` on the next iteration."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return math.ceil(self.num_triplets / self.num_replicas)

    def epoch_triplets(self) -> np.ndarray:
        """This shard's triplets of the current epoch, shape (len(self), 3), int64 dataset indices."""
        rng = np.random.default_rng((self.seed, self.epoch))
        tpl = np.repeat(self.templates, self.repeats, axis=0)
        tpl = tpl[rng.permutation(len(tpl))]
        start, size = self._start[tpl], self._stop[tpl] - self._start[tpl]  # (T, 3)
        u = rng.random(tpl.shape)
        off = np.floor(u * size).astype(np.int64)
        same = tpl[:, 0] == tpl[:, 1]
        # positive: a different sample of the same run when anchor and positive share the node
        off_p = np.floor(u[:, 1] * np.maximum(size[:, 1] - 1, 1)).astype(np.int64)
        off_p = off_p + (off_p >= off[:, 0])
        off[same, 1] = off_p[same]
        out = self._order[start + off]
        total = len(self) * self.num_replicas
        if total > len(out):  # pad by wrapping so every shard is as long
            out = np.resize(out, (total, 3))  # repeats the epoch from its start
        return out[self.rank : total : self.num_replicas]

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        yield from map(tuple, self.epoch_triplets().tolist())


class TreeTripletBatchSampler:
    """Batches of tree triplets, flattened: ``[a_1, p_1, n_1, a_2, p_2, n_2, ...]``.

    Parameters
    ----------
    sampler : TreeTripletSampler
    triplets_per_batch : int >= 1
    drop_last : bool, default False
        Drop a last, smaller batch.

    Notes
    -----
    A batch of ``B`` triplets is ``3 B`` dataset indices in that order, the layout
    :class:`hierviz.losses.TripletLoss` reads (``z.view(B, 3, ...)``). :meth:`set_epoch`
    is passed on to the sampler.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> b = TreeTripletBatchSampler(TreeTripletSampler([0, 0, 1, 1, 2, 2], t), 2)
    >>> [len(x) for x in b]
    [6, 6]
    """

    def __init__(self, sampler: TreeTripletSampler, triplets_per_batch: int, drop_last: bool = False) -> None:
        self.sampler = sampler
        self.triplets_per_batch = _check_int(triplets_per_batch, "triplets_per_batch", 1)
        self.drop_last = bool(drop_last)

    def set_epoch(self, epoch: int) -> None:
        """Use the triplets of epoch ``epoch``."""
        self.sampler.set_epoch(epoch)

    def __len__(self) -> int:
        n, b = len(self.sampler), self.triplets_per_batch
        return n // b if self.drop_last else math.ceil(n / b)

    def __iter__(self) -> Iterator[list[int]]:
        trip = self.sampler.epoch_triplets()
        b = self.triplets_per_batch
        for i in range(len(self)):
            yield trip[i * b : (i + 1) * b].reshape(-1).tolist()


@register_sampler("tree-triplet")
def _tree_triplet(*, labels: Any, tree: Any, batch_size: int, seed: int) -> TreeTripletBatchSampler:
    """``batch_size // 3`` triplets per batch; ``repeats`` chosen so that an epoch holds about N samples."""
    s = TreeTripletSampler(labels, tree, seed=seed)
    s.repeats = max(1, round(len(np.asarray(labels)) / (3 * len(s.templates))))
    return TreeTripletBatchSampler(s, max(1, int(batch_size) // 3), drop_last=len(s) >= max(1, int(batch_size) // 3))
