"""The vectorised label queries of a :class:`~hierviz.hierarchy.LabelTree`: cached tables and gathers.

Split from :mod:`hierviz.hierarchy.label_tree` (no module over 700 lines):
:class:`TreeQueries` is a base class of ``LabelTree``; the tables it reads are built by
``LabelTree._make_tables``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hierviz.hierarchy._tree_checks import _INT_DTYPES

__all__ = ["TreeQueries"]


class TreeQueries:
    """Cached (N,)/(C,)/(C, C) tensors and the label-tensor queries (LCA, ρ, d_T, level ancestors, masks)."""

    # ------------------------------------------------------------------ cached tensors
    @property
    def parent_index(self) -> torch.Tensor:
        """(N,) long: node index of each node's parent, ``-1`` for the root. Do not modify in place."""
        return self._parent_index

    @property
    def node_depth(self) -> torch.Tensor:
        """(N,) long: depth of each node (root 0). Do not modify in place."""
        return self._node_depth

    @property
    def leaf_node(self) -> torch.Tensor:
        """(C,) long: node index of each leaf. Do not modify in place."""
        return self._leaf_node

    @property
    def leaf_depth(self) -> torch.Tensor:
        """(C,) long: depth of each leaf, in [1, L]. Do not modify in place."""
        return self._leaf_depth

    @property
    def leaf_paths(self) -> torch.Tensor:
        """(C, L+1) long: node index of each leaf's ancestor at level ℓ = 0..L.

        Column 0 is the root, the entry at the leaf's own depth is the leaf; a leaf
        shallower than ℓ repeats itself in column ℓ. Do not modify in place.
        """
        return self._leaf_paths

    @property
    def ancestor_matrix(self) -> torch.Tensor:
        """(C, N) bool: ``[i, n]`` is True iff node n is an inclusive ancestor of leaf i."""
        return self._ancestor_matrix

    @property
    def lca_matrix(self) -> torch.Tensor:
        """(C, C) long: node index of the lowest common ancestor of two leaves (diagonal: the leaf)."""
        return self._lca_matrix

    @property
    def rho_matrix(self) -> torch.Tensor:
        """(C, C) float32: ρ = depth(lca)/L in [0, 1] (paper 01, Eq. 4); symmetric.

        1 for the same leaf at depth L, ``1 - 1/L`` for depth-L siblings, 0 when the
        LCA is the root; a shallow leaf's diagonal is ``depth/L`` (see class Notes).
        """
        return self._rho_matrix

    @property
    def tree_distance_matrix(self) -> torch.Tensor:
        """(C, C) long: d_T = depth(a) + depth(b) − 2·depth(lca(a, b)), edges on the tree path."""
        return self._tree_distance_matrix

    # ------------------------------------------------------------------ vectorised queries
    def _on(self, attr: str, device: torch.device) -> torch.Tensor:
        t = getattr(self, attr)
        if t.device == device:
            return t
        key = (attr, str(device))
        if key not in self._device_cache:
            self._device_cache[key] = t.to(device)
        return self._device_cache[key]

    def _labels(self, labels: Any, arg: str = "labels") -> torch.Tensor:
        if isinstance(labels, torch.Tensor):
            t = labels
        else:
            if isinstance(labels, (str, bytes)):
                raise TypeError(f"{arg} must be integer leaf indices; use tree.encode(names) for names")
            arr = np.asarray(labels)
            if arr.dtype == object:
                raise TypeError(f"{arg} must be integer leaf indices, got objects of type {type(arr.flat[0]).__name__}")
            t = torch.as_tensor(arr)
        if t.dtype not in _INT_DTYPES:
            raise TypeError(f"{arg} must hold integer leaf indices, got dtype {t.dtype}")
        t = t.long()
        if t.numel():
            lo, hi = int(t.min()), int(t.max())
            if lo < 0 or hi >= self.num_leaves:
                raise ValueError(
                    f"{arg} has leaf indices outside [0, {self.num_leaves - 1}] (C = {self.num_leaves}): "
                    f"min {lo}, max {hi}"
                )
        return t

    def ancestor_at_level(self, labels: Any, level: int) -> torch.Tensor:
        """Node index of each label's ancestor at depth ``level`` (a gather from ``leaf_paths``).

        Parameters
        ----------
        labels : LongTensor or array-like of int, any shape
            Leaf indices in [0, C-1].
        level : int
            0 ≤ level ≤ L. A leaf shallower than ``level`` maps to itself.

        Returns
        -------
        torch.LongTensor
            Same shape and device as ``labels``; node indices in [0, N-1].

        Raises
        ------
        ValueError
            Leaf index out of range or ``level`` outside [0, L].
        TypeError
            Non-integer labels or level.
        """
        lvl = self._check_level(level)
        t = self._labels(labels)
        return self._on("_leaf_paths", t.device)[:, lvl][t]

    def lca(self, a: Any, b: Any) -> torch.Tensor:
        """Node index of the lowest common ancestor of leaves ``a`` and ``b`` (broadcast).

        Parameters
        ----------
        a, b : LongTensor or array-like of int
            Leaf indices in [0, C-1], broadcastable shapes (e.g. ``y[:, None], y[None, :]``).

        Returns
        -------
        torch.LongTensor
            Broadcast shape; node indices in [0, N-1].

        Raises
        ------
        ValueError
            Leaf index out of range or shapes that do not broadcast.
        TypeError
            Non-integer labels.
        """
        return self._pair("_lca_matrix", a, b)

    def rho(self, a: Any, b: Any) -> torch.Tensor:
        """ρ(a, b) = depth(lca(a, b)) / L (paper 01, Eq. 4), gathered from ``rho_matrix``.

        Parameters
        ----------
        a, b : LongTensor or array-like of int
            Leaf indices in [0, C-1], broadcastable; ``rho(y[:, None], y[None, :])`` is
            the (B, B) matrix HWC uses.

        Returns
        -------
        torch.FloatTensor
            float32, broadcast shape, values in [0, 1].

        Raises
        ------
        ValueError
            Leaf index out of range or shapes that do not broadcast.
        TypeError
            Non-integer labels.
        """
        return self._pair("_rho_matrix", a, b)

    def tree_distance(self, a: Any, b: Any) -> torch.Tensor:
        """Tree distance d_T(a, b): number of edges between leaves ``a`` and ``b`` (broadcast).

        Parameters
        ----------
        a, b : LongTensor or array-like of int
            Leaf indices in [0, C-1], broadcastable.

        Returns
        -------
        torch.LongTensor
            Broadcast shape, values in [0, 2L]; 0 iff a == b.

        Raises
        ------
        ValueError
            Leaf index out of range or shapes that do not broadcast.
        TypeError
            Non-integer labels.
        """
        return self._pair("_tree_distance_matrix", a, b)

    def _pair(self, attr: str, a: Any, b: Any) -> torch.Tensor:
        ta, tb = self._labels(a, "a"), self._labels(b, "b")
        if ta.device != tb.device:
            raise ValueError(f"a and b are on different devices ({ta.device}, {tb.device})")
        table = self._on(attr, ta.device)
        if ta.dim() == 2 and tb.dim() == 2 and ta.shape[1] == 1 and tb.shape[0] == 1:
            # Outer pattern y[:, None], y2[None, :]: two index_selects beat broadcast advanced
            # indexing (about 5x at B = 256 on CPU, see benchmarks/bench_tree.py).
            return table.index_select(0, ta[:, 0]).index_select(1, tb[0])
        try:
            ta, tb = torch.broadcast_tensors(ta, tb)
        except RuntimeError as e:
            raise ValueError(f"a {tuple(ta.shape)} and b {tuple(tb.shape)} do not broadcast") from e
        return table[ta, tb]

    def ancestor_mask(self, labels: Any) -> torch.Tensor:
        """Inclusive ancestor indicator of each label over all nodes.

        Parameters
        ----------
        labels : LongTensor or array-like of int, shape (...)
            Leaf indices in [0, C-1].

        Returns
        -------
        torch.BoolTensor
            Shape ``(..., N)``; ``[..., n]`` is True iff node n is on the root → leaf
            path (root and the leaf included) — the ancestor sets of HF1 / H-Acc.

        Raises
        ------
        ValueError
            Leaf index out of range.
        TypeError
            Non-integer labels.
        """
        t = self._labels(labels)
        return self._on("_ancestor_matrix", t.device)[t]
