"""Per-level label columns of a :class:`~hierviz.hierarchy.LabelTree` (Paper 02 (HMLC), §2.2 and Table 2).

Hierarchical multi-label contrastive losses (HMC, HCE, HMCE, G-HMLC, A-HMLC) read, for each
image, one label per level of the hierarchy: ``y^h`` for ``h = 1..H``. For a leaf label of a
tree of height ``L`` these are the leaf's ancestors at depths ``1..L`` (the root, depth 0, is
shared by every image and carries no information), so ``H = L``.

Two column orders (Paper 02 (HMLC), Table 2 "category first" / "class first"):

* ``"category"`` (category first): column ``0`` is depth 1 (the coarsest category), the last
  column is depth ``L`` (the leaf, "class").
* ``"class"`` (class first): the reverse; column ``0`` is the leaf (class) and the last
  column the coarsest category. This is the order of Zhang et al. 2022's code, whose first
  loop step (``l = 1``) is the finest level.

Unbalanced trees: a leaf shallower than ``L`` *repeats its own label* at the deeper levels
(it is its own ancestor there, exactly as :attr:`LabelTree.leaf_paths`). Two images share a
level-``ℓ`` label iff they share the ancestor at depth ``ℓ``, or they are the same shallow
leaf. A shallow leaf therefore never becomes a positive of another leaf below its own depth.

Labels are node indices of the tree (``tree.nodes``) by default, unique across levels; with
``dense=True`` every column is re-indexed to ``0..n_ℓ-1`` in node order (handy for per-level
classifiers and plots).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["LEVEL_ORDERS", "level_groups", "level_label_matrix", "level_labels", "level_names"]

#: Column orders of the per-level labels: coarse first ("category") or fine first ("class").
LEVEL_ORDERS = ("category", "class")


def _check_order(order: Any) -> str:
    if order not in LEVEL_ORDERS:
        raise ValueError(f"order must be one of {list(LEVEL_ORDERS)} ('category' = coarse first), got {order!r}")
    return order


def level_label_matrix(tree: Any, order: str = "category", *, dense: bool = False) -> torch.Tensor:
    """Per-level labels of every leaf: an ``(C, L)`` table (row = leaf index).

    Parameters
    ----------
    tree : LabelTree
        Height ``L ≥ 1``, ``C`` leaves.
    order : {"category", "class"}, default "category"
        ``"category"``: column ``ℓ-1`` is the ancestor at depth ``ℓ`` (coarse first);
        ``"class"``: the reverse (leaf first), Paper 02 (HMLC), Table 2.
    dense : bool, default False
        False: node indices of ``tree.nodes``. True: each column re-indexed to
        ``0..n-1`` over the distinct values of that column, in node order.

    Returns
    -------
    torch.LongTensor, shape (C, L)
        A leaf shallower than ``L`` repeats its own label in the deeper columns.

    Raises
    ------
    ValueError
        ``order`` is not one of :data:`LEVEL_ORDERS`.
    TypeError
        ``tree`` is not a LabelTree.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"root": {"animal": ["cat", "dog"], "car": []}})
    >>> t.leaves, t.nodes
    (['cat', 'dog', 'car'], ['root', 'animal', 'car', 'cat', 'dog'])
    >>> level_label_matrix(t).tolist()  # 'car' is a depth-1 leaf: it repeats itself at depth 2
    [[1, 3], [1, 4], [2, 2]]
    >>> level_label_matrix(t, "class", dense=True).tolist()
    [[1, 0], [2, 0], [0, 1]]
    """
    _check_order(order)
    paths = getattr(tree, "leaf_paths", None)
    if not isinstance(paths, torch.Tensor):
        raise TypeError(f"tree must be a hierviz LabelTree, got {type(tree).__name__}")
    table = paths[:, 1:].clone()  # drop the root column (depth 0)
    if dense:
        table = torch.stack([torch.unique(col, sorted=True, return_inverse=True)[1] for col in table.T], dim=1)
    if order == "class":
        table = table.flip(1)
    return table.long()


def level_labels(tree: Any, labels: Any, order: str = "category", *, dense: bool = False) -> torch.Tensor:
    """Per-level label columns ``(B, L)`` of a batch of leaf labels (Paper 02 (HMLC), §2.2: ``y_i^h``).

    Parameters
    ----------
    tree : LabelTree
    labels : LongTensor or array-like of int, shape (B,)
        Leaf indices in ``[0, C-1]``.
    order : {"category", "class"}, default "category"
        Column order, see :func:`level_label_matrix`.
    dense : bool, default False
        Re-index each column to ``0..n_ℓ-1`` (over the whole tree, not the batch).

    Returns
    -------
    torch.LongTensor, shape (B, L), on the device of ``labels``

    Raises
    ------
    ValueError
        Labels outside ``[0, C-1]``, a bad ``order``, or ``labels`` not one-dimensional.
    TypeError
        Non-integer labels, or ``tree`` not a LabelTree.

    Examples
    --------
    >>> import torch
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"root": {"animal": ["cat", "dog"], "car": []}})
    >>> level_labels(t, torch.tensor([1, 0, 2]), order="class").tolist()  # dog, cat, car
    [[4, 1], [3, 1], [2, 2]]
    """
    table = level_label_matrix(tree, order, dense=dense)
    lab = tree._labels(labels)
    if lab.ndim != 1:
        raise ValueError(f"labels must have shape (B,), got {tuple(lab.shape)}")
    return table.to(lab.device)[lab]


def level_names(tree: Any, order: str = "category") -> list[list[str]]:
    """Node names that each label column can take, in column order (for plot legends).

    Parameters
    ----------
    tree : LabelTree
    order : {"category", "class"}, default "category"

    Returns
    -------
    list of list of str
        ``L`` lists; entry ``j`` lists, in node order, the names of the distinct values of
        column ``j`` (the position in the list is the ``dense=True`` label).

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"root": {"animal": ["cat", "dog"], "car": []}})
    >>> level_names(t)
    [['animal', 'car'], ['car', 'cat', 'dog']]
    """
    table = level_label_matrix(tree, order)
    return [[tree.nodes[int(i)] for i in torch.unique(col, sorted=True)] for col in table.T]


def level_groups(tree: Any, labels: Any, level: int) -> tuple[torch.Tensor, list[str]]:
    """Group the samples by their ancestor at one level: dense group ids and the group nodes' names.

    Cutting the tree at depth ``level`` puts every leaf under exactly one node there; LAM keeps one
    prototype per such node (Paper 01 (HWC + LAM) §3.3, Eq. 9). Only the nodes that occur in ``labels``
    become groups.

    Parameters
    ----------
    tree : LabelTree
    labels : LongTensor or array-like of int, shape (n,)
        Leaf indices in [0, C-1].
    level : int
        Depth in [0, L]; a leaf shallower than ``level`` is its own group.

    Returns
    -------
    groups : torch.LongTensor, shape (n,)
        Group id in [0, K-1] of each sample, groups numbered in node order.
    names : list of str, length K
        The node of each group.

    Raises
    ------
    ValueError, TypeError
        As :meth:`LabelTree.ancestor_at_level`.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
    >>> g, names = level_groups(t, [2, 0, 1, 0], level=1)
    >>> g.tolist(), names
    ([1, 0, 0, 0], ['a', 'b'])
    """
    anc = tree.ancestor_at_level(labels, level)
    nodes, inv = torch.unique(anc, sorted=True, return_inverse=True)
    return inv, [tree.nodes[int(n)] for n in nodes]
