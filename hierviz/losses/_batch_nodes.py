"""The batch's node prototypes and the input checks that the depth regularisers share.

:func:`node_prototypes` (the batch Fréchet mean under every tree node, eager or with the fixed
shapes of a compiled step), the checks of ``z`` and the labels (:func:`_flatten`) and the tree's
edge buffers; read by :mod:`hierviz.losses.radial` (which re-exports them) and
:mod:`hierviz.losses.cpcc`.
"""

from __future__ import annotations

from typing import Any

import torch

from hierviz.losses._validation import _check_labels

__all__ = ["node_prototypes"]


def node_prototypes(
    x: torch.Tensor,
    labels: torch.Tensor,
    ancestors: torch.Tensor,
    geometry: Any,
    steps: int = 3,
    paths: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch Fréchet mean and sample count of every tree node (root included).

    Parameters
    ----------
    x : torch.Tensor, shape (n, D)
        Points on the manifold.
    labels : LongTensor, shape (n,)
        Leaf indices.
    ancestors : BoolTensor, shape (C, N)
        ``LabelTree.ancestor_matrix``: leaf ``c`` lies below node ``n``.
    geometry : Geometry
    steps : int, default 3
        Karcher steps (paper 01 Eq. 3; the gradient reaches ``x`` through them).
    paths : LongTensor, shape (C, L + 1), optional
        ``LabelTree.leaf_paths`` (root to leaf, padded with the leaf). Inside ``torch.compile``
        the (sample, node) pairs are then taken from the padded paths, a fixed ``n (L + 1)`` of
        them (a leaf above the deepest level repeats its samples in its own group, every one
        alike, so its mean is the same), instead of the data-dependent ``nonzero`` of the
        eager path; the two agree to rounding. Without it, or in eager mode, the eager path.

    Returns
    -------
    protos : torch.Tensor, shape (N, D)
        Nodes without samples hold the origin.
    counts : LongTensor, shape (N,)
    """
    member = ancestors.to(x.device)[labels]  # (n, N)
    N = member.shape[1]
    if paths is not None and torch.compiler.is_compiling():  # fixed shapes: no graph break in a compiled step
        pairs = paths.to(x.device)[labels]  # (n, L + 1)
        node = pairs.reshape(-1)
        protos, _ = geometry.group_mean(x.repeat_interleave(pairs.shape[1], 0), node, N, steps=steps, allow_empty=True)
        return protos, member.sum(0)
    sample, node = member.nonzero(as_tuple=True)
    protos, _ = geometry.group_mean(x[sample], node, N, steps=steps, allow_empty=True)
    return protos, member.sum(0)


def _check_depth_z(z: Any, geometry: Any, who: str) -> torch.Tensor:
    """The checks the other losses make on ``z``, for a depth regulariser: (B, V, D) or (B, D), B >= 1.

    Raises
    ------
    TypeError
        ``z`` is not a floating-point tensor.
    ValueError
        Wrong number of dimensions, no embedding, fewer coordinates than a point of the geometry
        has (``D = 0``; the hyperboloid needs ``D >= 2``), or NaN/inf entries (eager only).
    """
    if not isinstance(z, torch.Tensor) or not torch.is_floating_point(z):
        raise TypeError(f"{who}: z must be a floating-point tensor, got {getattr(z, 'dtype', type(z).__name__)}")
    if z.dim() not in (2, 3):
        raise ValueError(f"{who}: z must have shape (B, V, D) or (B, D), got {tuple(z.shape)}")
    need = geometry.point_dim(1) if hasattr(geometry, "point_dim") else 1
    if z.shape[-1] < need:
        raise ValueError(
            f"{who}: z has D={z.shape[-1]} coordinates per point (shape {tuple(z.shape)}); needs D >= {need}"
        )
    if z.numel() == 0:
        raise ValueError(f"{who}: z holds no embedding (shape {tuple(z.shape)}); pass a batch of at least one")
    if not torch.compiler.is_compiling() and not bool(torch.isfinite(z).all()):
        raise ValueError(f"{who}: z contains NaN or inf ({int((~torch.isfinite(z)).sum())} entries)")
    return z


def _flatten(
    z: torch.Tensor, labels: torch.Tensor, geometry: Any = None, num_leaves: int | None = None, who: str = "loss"
) -> tuple[torch.Tensor, torch.Tensor]:
    """``z`` (B, V, D) or (B, D) and ``labels`` (B,) → (n, D) points and (n,) leaf indices, checked.

    Labels are checked like every other loss's (:func:`hierviz.losses._validation._check_labels`):
    integer, shape (B,), values in ``[0, num_leaves - 1]`` (the range read on the host in eager mode only).
    """
    z = _check_depth_z(z, geometry, who)
    labels = _check_labels(labels, z.shape[0], num_leaves, z.device)
    if z.dim() == 3:
        B, V, D = z.shape
        return z.reshape(B * V, D), labels.repeat_interleave(V)
    return z, labels


def _register_edge_buffers(module: torch.nn.Module, tree: Any, min_depth: int = 1) -> None:
    """Register the tree's edges and leaf ancestry on ``module`` (non-persistent buffers).

    ``edge_parent``, ``edge_child`` : (E,) long, the parent and child node of every edge whose
    child is at depth >= ``min_depth`` (1: all N - 1 edges); ``ancestors`` : (C, N) bool,
    ``tree.ancestor_matrix``; ``leaf_paths`` : (C, L + 1) long, ``tree.leaf_paths``.
    """
    keep = tree.node_depth >= min_depth
    module.register_buffer("edge_parent", tree.parent_index.clone()[keep], persistent=False)
    module.register_buffer("edge_child", torch.arange(tree.num_nodes)[keep], persistent=False)
    module.register_buffer("ancestors", tree.ancestor_matrix.clone(), persistent=False)  # (C, N)
    module.register_buffer("leaf_paths", tree.leaf_paths.clone(), persistent=False)  # (C, L + 1)
