"""Synthetic trees and node-level tree distances (notebook 01 §7–8).

* :func:`b_ary_tree` -- the complete ``b``-ary tree of a given height, the textbook case of
  "trees grow exponentially";
* :func:`node_tree_distance` -- edges on the tree path between **any two nodes** (internal ones
  included), where :attr:`LabelTree.tree_distance_matrix` covers leaves only.
"""

from __future__ import annotations

import numpy as np

from hierviz.hierarchy.label_tree import LabelTree

__all__ = ["b_ary_tree", "node_tree_distance"]


def b_ary_tree(b: int, depth: int, *, root: str = "r") -> LabelTree:
    """The complete ``b``-ary tree of height ``depth``.

    Node names are dotted paths: the children of ``"r"`` are ``"r.0" … "r.{b-1}"``, theirs
    ``"r.0.0" …``, so a name tells its ancestors.

    Parameters
    ----------
    b : int, >= 1
        Children per internal node.
    depth : int, >= 1
        Height L of the tree: every leaf sits at depth ``depth``.
    root : str, default "r"
        Name of the root.

    Returns
    -------
    LabelTree
        ``(b**(depth+1) - 1) / (b - 1)`` nodes (``depth + 1`` when ``b = 1``) and ``b**depth`` leaves.

    Raises
    ------
    ValueError
        ``b`` or ``depth`` not a positive int, or a tree of more than 100,000 nodes.

    Examples
    --------
    >>> t = b_ary_tree(2, 3)
    >>> t.num_nodes, t.num_leaves, t.height, t.leaves[:2]
    (15, 8, 3, ['r.0.0.0', 'r.0.0.1'])
    """
    for name, v in (("b", b), ("depth", depth)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    n_nodes = sum(int(b) ** k for k in range(int(depth) + 1))
    if n_nodes > 100_000:
        raise ValueError(f"b_ary_tree(b={b}, depth={depth}) has {n_nodes} nodes; keep it under 100,000")
    parents: dict[str, str] = {}
    level = [root]
    for _ in range(int(depth)):
        nxt = []
        for p in level:
            for i in range(int(b)):
                parents[f"{p}.{i}"] = p
                nxt.append(f"{p}.{i}")
        level = nxt
    return LabelTree.from_parents(parents)


def node_tree_distance(tree: LabelTree) -> np.ndarray:
    """Tree distance between every pair of nodes: edges on the path, ``d(a, a) = 0``.

    ``d_T(a, b) = depth(a) + depth(b) − 2·depth(lca(a, b))``, where the number of common
    (inclusive) ancestors of two nodes is ``depth(lca) + 1``, so the LCA depth is one matrix
    product of the ancestor indicator.

    Parameters
    ----------
    tree : LabelTree

    Returns
    -------
    numpy.ndarray, shape (N, N), int64
        Rows and columns in ``tree.nodes`` order; symmetric, zero diagonal. Restricted to the
        leaves (``tree.leaf_node``) it equals ``tree.tree_distance_matrix``.

    Examples
    --------
    >>> t = LabelTree.from_parents({"a": "root", "b": "root", "x": "a", "y": "a"})
    >>> D, ix = node_tree_distance(t), t.node_index
    >>> [int(D[ix["x"], ix[n]]) for n in ("root", "a", "b", "x", "y")]
    [2, 1, 3, 0, 2]
    """
    par = tree.parent_index.numpy()
    dep = tree.node_depth.numpy().astype(np.int64)
    n = len(par)
    anc = np.eye(n, dtype=np.int64)  # anc[i, k] = 1 iff k is an inclusive ancestor of i
    for i in range(n):
        j = par[i]
        while j >= 0:
            anc[i, j] = 1
            j = par[j]
    lca_depth = anc @ anc.T - 1
    return dep[:, None] + dep[None, :] - 2 * lca_depth
