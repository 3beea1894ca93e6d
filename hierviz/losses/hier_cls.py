r"""Hierarchy-aware classification losses of Paper 04 (Generalised triplets) §II-C: L, PL and B.

Each loss owns a linear prediction head on the embedding (the paper's Fig. 2: embedding ->
linear heads -> logits); the head's input size is read from the first batch
(``torch.nn.LazyLinear``). In a hyperbolic run the head reads ``geometry.to_tangent0(z)``
(the log map at the origin), in a Euclidean one ``z`` itself.

* **L** (:class:`LeafLoss`): softmax cross-entropy over the leaves, Eq. 3.
* **PL** (:class:`PerLevelLoss`): one softmax cross-entropy per tree level with more than one
  node, summed, Eq. 5 (levels with a single node are omitted; the deepest level holds every
  leaf, so a leaf shallower than a level is its own node there, :attr:`LabelTree.leaf_paths`).
  L is PL restricted to the leaf level.
* **B** (:class:`BinaryLoss`): one sigmoid per tree node except the root; the targets of a
  sample are its leaf and the leaf's ancestors, Eqs. 2 and 4, averaged over the nodes.

All are vectorised over levels and nodes: one head, one padded ``log_softmax`` for PL and
one ``binary_cross_entropy_with_logits`` for B. Several losses (and the triplet loss) are
combined with uniform weights in :class:`hierviz.losses.Objective`, as §III-C.

**Class weights** (``class_weight``, the method hyperparameter ``loss.heads.class_weight``).
``"none"`` (default): every class weighs the same. ``"inverse"``: §III-C, "class weights are
set inversely proportional to their sampling frequency". The loss counts the leaves of the
samples it is trained on (:attr:`leaf_counts`, a float64 buffer saved with the checkpoint;
updated in training mode only, current batch included), so the frequency is the one the
training sampler produces (the tree-triplet sampler over-draws small subtrees). From the leaf
counts :math:`n_c`:

* L: weight :math:`w_c = 1 / n_c` of leaf :math:`c`, a weighted mean over the batch
  (:math:`\sum_i w_{y_i} \ell_i / \sum_i w_{y_i}`, ``cross_entropy(weight=)``);
* PL: the same per level, with the count of a level class = the sum of its leaves' counts;
* B: per node :math:`j`, positives weigh :math:`n^-_j / n^+_j` (negatives 1), i.e. both
  outcomes inversely to their frequency (``pos_weight``), mean over samples and nodes.

Classes not yet counted get weight 0 (they are no target in the batch). The authors' code
(tiianhk/label-metric) uses the same three rules but counts each epoch's triplets before
training on them; the running count here converges to the same frequencies.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hierviz.losses._validation import _check_embeddings, _check_labels, _check_tree, _is_hyperbolic, _upcast

__all__ = [
    "LeafLoss",
    "PerLevelLoss",
    "BinaryLoss",
    "per_level_targets",
    "binary_targets",
    "pl_levels",
    "CLASS_WEIGHTS",
]

#: Values of ``class_weight``: uniform, or inversely proportional to the sampling frequency (§III-C).
CLASS_WEIGHTS = ("none", "inverse")


def _inverse(counts: torch.Tensor) -> torch.Tensor:
    """1 / counts where counts > 0, else 0."""
    return torch.where(counts > 0, 1.0 / counts.clamp_min(1e-300), torch.zeros_like(counts))


def pl_levels(tree: Any) -> list[int]:
    """Depths 1..L whose column of ``tree.leaf_paths`` has more than one node (the PL and MNR levels).

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> pl_levels(LabelTree.from_nested({"r": {"a": {"b": ["x", "y"]}}}))
    [3]
    """
    paths = tree.leaf_paths
    return [lv for lv in range(1, tree.height + 1) if torch.unique(paths[:, lv]).numel() > 1]


def per_level_targets(tree: Any) -> tuple[torch.Tensor, list[list[int]]]:
    """Class index of every leaf at every PL level, and each level's classes.

    Parameters
    ----------
    tree : LabelTree

    Returns
    -------
    targets : torch.Tensor, shape (C, L'), int64
        ``targets[i, j]``: class of leaf i on the j-th PL level (:func:`pl_levels`).
    classes : list of list of int
        Node indices (``tree.nodes``) of each level's classes, in node order.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> y, cls = per_level_targets(t)
    >>> y.tolist(), [[t.nodes[n] for n in c] for c in cls]
    ([[0, 0], [0, 1], [1, 2]], [['a', 'b'], ['x', 'y', 'z']])
    """
    paths = tree.leaf_paths
    cols, classes = [], []
    for lv in pl_levels(tree):
        nodes = torch.unique(paths[:, lv])  # sorted node indices
        classes.append(nodes.tolist())
        cols.append(torch.searchsorted(nodes, paths[:, lv].contiguous()))
    if not cols:
        return torch.zeros(tree.num_leaves, 0, dtype=torch.long), []
    return torch.stack(cols, 1), classes


def binary_targets(tree: Any) -> torch.Tensor:
    """(C, N - 1) float: leaf i's targets for the binary loss, its inclusive ancestors except the root.

    Columns are ``tree.nodes`` without the root, in node order.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> [n for n in t.nodes if n != t.root], binary_targets(t)[0].tolist()
    (['a', 'b', 'x', 'y', 'z'], [1.0, 0.0, 1.0, 0.0, 0.0])
    """
    root = tree.node_index[tree.root]
    keep = [i for i in range(tree.num_nodes) if i != root]
    return tree.ancestor_matrix[:, keep].float()


class _HeadLoss(nn.Module):
    """A loss with its own linear head on ``z`` (input size inferred on the first call)."""

    input_kind = "embeddings"

    def __init__(self, tree: Any, geometry: Any, out_features: int, who: str, class_weight: str = "none") -> None:
        super().__init__()
        self.tree = _check_tree(tree, True, who, needs=("leaf_paths", "ancestor_matrix", "num_leaves"))
        self.geometry = geometry
        self.who = who
        self.head = nn.LazyLinear(int(out_features))
        if class_weight is None:  # ``--set loss.heads.class_weight=none`` reads as null
            class_weight = "none"
        if class_weight not in CLASS_WEIGHTS:
            raise ValueError(f"{who}: class_weight must be one of {CLASS_WEIGHTS}, got {class_weight!r}")
        self.class_weight = class_weight
        if class_weight == "inverse":
            self.register_buffer("leaf_counts", torch.zeros(tree.num_leaves, dtype=torch.float64))

    def _counts(self, y: torch.Tensor) -> torch.Tensor | None:
        """Leaf counts so far (this batch counted first in training mode); None without class weights."""
        if self.class_weight == "none":
            return None
        batch = torch.zeros_like(self.leaf_counts).index_add_(0, y, torch.ones_like(y, dtype=self.leaf_counts.dtype))
        if self.training:
            self.leaf_counts += batch
        # eval before any training step: count this batch (a select, not a host-side branch)
        return torch.where((self.leaf_counts[y] > 0).all(), self.leaf_counts, self.leaf_counts + batch)

    def extra_repr(self) -> str:
        return f"class_weight={self.class_weight!r}"

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        """Head outputs for embeddings ``z`` (..., D) on the manifold."""
        x = self.geometry.to_tangent0(z) if _is_hyperbolic(self.geometry) else z
        return self.head(x)

    def _inputs(self, z: torch.Tensor, labels: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``z`` (B, V, d) -> flat (B*V, d) rows and their labels (each view is a sample)."""
        _check_embeddings(z, self.geometry, min_views=1, who=self.who)
        z = _upcast(z)  # float16/bfloat16 -> float32: the head's weights are float32 (half inputs fail there)
        B, V, _ = z.shape
        y = _check_labels(labels, B, self.tree.num_leaves, z.device)
        return z.reshape(B * V, z.shape[-1]), y.repeat_interleave(V)


class LeafLoss(_HeadLoss):
    """L: softmax cross-entropy over the leaves (Paper 04 (Generalised triplets) §II-C, Eq. 3).

    Parameters
    ----------
    tree : LabelTree
    geometry : Geometry, optional
        The head reads ``geometry.to_tangent0(z)`` when it is hyperbolic.
    class_weight : {"none", "inverse"} or None, default "none"
        ``"inverse"``: leaf weights :math:`1 / n_c` from the running leaf counts (module docstring).

    Notes
    -----
    ``forward(z, labels)``: ``z`` (B, V, d), ``labels`` (B,) leaf indices; every view is a
    sample. Returns the (weighted) mean cross-entropy, a scalar >= 0.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> loss, z = LeafLoss(t), torch.zeros(2, 1, 4)
    >>> _ = loss(z, torch.tensor([0, 2]))  # the first call fixes the head's input size
    >>> _ = torch.nn.init.zeros_(loss.head.bias)
    >>> round(loss(z, torch.tensor([0, 2])).item(), 4)  # uniform over 3 leaves: log 3
    1.0986
    """

    def __init__(self, tree: Any, geometry: Any = None, class_weight: str = "none") -> None:
        _check_tree(tree, True, "LeafLoss", needs=("leaf_paths", "ancestor_matrix", "num_leaves"))
        super().__init__(tree, geometry, tree.num_leaves, "LeafLoss", class_weight)

    def forward(self, z: torch.Tensor, labels: Any) -> torch.Tensor:
        x, y = self._inputs(z, labels)
        logits = self.logits(x)
        counts = self._counts(y)
        w = None if counts is None else _inverse(counts).to(logits.dtype)
        return nn.functional.cross_entropy(logits, y, weight=w)


class PerLevelLoss(_HeadLoss):
    r"""PL: a softmax cross-entropy per tree level, summed (Paper 04 (Generalised triplets) §II-C, Eq. 5).

    :math:`\mathcal{L}_{PL} = \sum_{j=1}^{N} \mathcal{L}_{multi\text{-}class}(\hat y_{l_j}, y_{l_j})`
    over the levels with more than one node (:func:`pl_levels`).

    Parameters
    ----------
    tree : LabelTree
    geometry : Geometry, optional
        The head reads ``geometry.to_tangent0(z)`` when it is hyperbolic.
    class_weight : {"none", "inverse"} or None, default "none"
        ``"inverse"``: on each level, class weights :math:`1 / n` (its leaves' running
        counts summed) and a weighted mean over the batch (module docstring).

    Attributes
    ----------
    targets : torch.Tensor (buffer), shape (C, L'), int64
        :func:`per_level_targets`.
    slots : torch.Tensor (buffer), shape (L', K), int64
        Head column of each level's k-th class (padding: 0, masked).
    mask : torch.Tensor (buffer), shape (L', K), bool

    Notes
    -----
    One head with :math:`\sum_j C_j` outputs; the logits are gathered into a padded
    (B, L', K) tensor, padding set to :math:`-\infty`, and one ``log_softmax`` runs over the
    last axis: no loop over levels. With a single level of leaves PL equals L.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> loss = PerLevelLoss(t)
    >>> loss.level_logits(loss.logits(torch.zeros(1, 4))).shape  # 1 sample, 2 levels, <= 3 classes
    torch.Size([1, 2, 3])
    """

    def __init__(self, tree: Any, geometry: Any = None, class_weight: str = "none") -> None:
        _check_tree(tree, True, "PerLevelLoss", needs=("leaf_paths", "ancestor_matrix", "num_leaves"))
        targets, classes = per_level_targets(tree)
        if not classes:
            raise ValueError("PerLevelLoss: the tree has no level with more than one node")
        sizes = [len(c) for c in classes]
        super().__init__(tree, geometry, sum(sizes), "PerLevelLoss", class_weight)
        K = max(sizes)
        slots = torch.zeros(len(sizes), K, dtype=torch.long)
        mask = torch.zeros(len(sizes), K, dtype=torch.bool)
        start = 0
        for j, n in enumerate(sizes):  # loop over levels at construction only
            slots[j, :n] = torch.arange(start, start + n)
            mask[j, :n] = True
            start += n
        self.register_buffer("targets", targets, persistent=False)
        self.register_buffer("slots", slots, persistent=False)
        self.register_buffer("mask", mask, persistent=False)
        self.classes = classes

    def level_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """(B, sum C_j) head outputs -> (B, L', K) per-level logits, padding at -inf."""
        out = logits[:, self.slots]
        return out.masked_fill(~self.mask, float("-inf"))

    def level_weights(self, leaf_counts: torch.Tensor) -> torch.Tensor:
        """(L', K) class weights :math:`1 / n` per level from (C,) leaf counts (0: uncounted or padding)."""
        L, K = self.mask.shape
        counts = torch.zeros(L, K, dtype=leaf_counts.dtype, device=leaf_counts.device)
        counts.scatter_add_(1, self.targets.T, leaf_counts.expand(L, -1))
        return _inverse(counts)

    def forward(self, z: torch.Tensor, labels: Any) -> torch.Tensor:
        x, y = self._inputs(z, labels)
        logp = torch.log_softmax(self.level_logits(self.logits(x)), dim=-1)  # (B, L', K)
        t = self.targets[y]  # (B, L')
        nll = -logp.gather(-1, t.unsqueeze(-1)).squeeze(-1)  # (B, L')
        counts = self._counts(y)
        if counts is None:
            return nll.mean(0).sum()
        w = self.level_weights(counts).to(nll.dtype)  # (L', K)
        wi = w.gather(1, t.T).T  # (B, L'): weight of each sample's class on each level
        return ((wi * nll).sum(0) / wi.sum(0)).sum()


class BinaryLoss(_HeadLoss):
    r"""B: a sigmoid per tree node except the root, targets = the leaf and its ancestors (Eqs. 2, 4).

    :math:`\mathcal{L}_B = \frac{1}{|T|} \sum_{i} \mathcal{L}_{binary}(\hat y_{n_i}, y_{n_i})`
    with :math:`y_{n_i} = 1` iff the sample belongs to :math:`M(n_i)`; the mean runs over the
    :math:`|T| - 1` non-root nodes (the root's target is always 1).

    Parameters
    ----------
    tree : LabelTree
    geometry : Geometry, optional
        The head reads ``geometry.to_tangent0(z)`` when it is hyperbolic.
    class_weight : {"none", "inverse"} or None, default "none"
        ``"inverse"``: positives of node :math:`j` weigh :math:`n^-_j / n^+_j` (``pos_weight``
        from the running leaf counts; 1 for a node without counted positives).

    Attributes
    ----------
    targets : torch.Tensor (buffer), shape (C, N - 1), float32
        :func:`binary_targets`.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> loss, z = BinaryLoss(t), torch.zeros(2, 1, 4)
    >>> _ = loss(z, torch.tensor([0, 2]))  # the first call fixes the head's input size
    >>> _ = torch.nn.init.zeros_(loss.head.bias)
    >>> round(loss(z, torch.tensor([0, 2])).item(), 4)  # z = 0, bias 0: every sigmoid 1/2, BCE = log 2
    0.6931
    """

    def __init__(self, tree: Any, geometry: Any = None, class_weight: str = "none") -> None:
        _check_tree(tree, True, "BinaryLoss", needs=("leaf_paths", "ancestor_matrix", "num_leaves"))
        targets = binary_targets(tree)
        super().__init__(tree, geometry, targets.shape[1], "BinaryLoss", class_weight)
        self.register_buffer("targets", targets, persistent=False)

    def pos_weight(self, leaf_counts: torch.Tensor) -> torch.Tensor:
        """(N - 1,) :math:`n^-_j / n^+_j` from (C,) leaf counts; 1 where a node has no counted positive."""
        pos = leaf_counts @ self.targets.to(leaf_counts.dtype)
        neg = leaf_counts.sum() - pos
        return torch.where(pos > 0, neg / pos.clamp_min(1e-300), torch.ones_like(pos))

    def forward(self, z: torch.Tensor, labels: Any) -> torch.Tensor:
        x, y = self._inputs(z, labels)
        logits = self.logits(x)
        counts = self._counts(y)
        pw = None if counts is None else self.pos_weight(counts).to(logits.dtype)
        return nn.functional.binary_cross_entropy_with_logits(logits, self.targets[y].to(logits.dtype), pos_weight=pw)
