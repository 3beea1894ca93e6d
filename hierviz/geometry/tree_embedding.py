"""Sarkar's construction: a label tree drawn in the Poincaré disk with geodesic edges of one length.

The root sits at the origin; every node sends its children off at hyperbolic distance ``edge``
(one tree edge) at evenly spaced angles around it, leaving the direction back to its own parent
free (Sarkar 2011, the construction behind "trees embed in the hyperbolic plane with arbitrarily
low distortion"; notebook 01 §7). One step is ``exp_x(u)`` with a tangent vector of Riemannian
length ``edge``, i.e. Euclidean length ``edge / λ_x``, ``λ_x = 2 / (1 − c‖x‖²)``.

:func:`hierviz.metrics.embedding_distortion` scores the result against
:func:`hierviz.hierarchy.synthetic.node_tree_distance`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from hierviz.geometry._checks import DEFAULT_CURVATURE
from hierviz.geometry.base import check_curvature
from hierviz.geometry.poincare import PoincareBall

__all__ = ["sarkar_embedding"]


def sarkar_embedding(tree: Any, c: float = DEFAULT_CURVATURE, edge: float = 1.0) -> torch.Tensor:
    """Embed every node of a tree in the 2-D Poincaré disk of curvature ``−c`` (Sarkar 2011).

    Parameters
    ----------
    tree : LabelTree
        Any tree with ``parent_index``, ``node_depth``, ``nodes``, ``node_index``, ``children``
        and ``height`` (a :class:`hierviz.hierarchy.LabelTree`).
    c : float, > 0, default 1.0
        Curvature magnitude; the disk has radius ``1/sqrt(c)``.
    edge : float, > 0, default 1.0
        Hyperbolic length of every tree edge.

    Returns
    -------
    torch.Tensor, shape (N, 2), float64
        One point per node in ``tree.nodes`` order, root at the origin. Every parent–child pair
        is at distance ``edge`` (up to the float64 clip of the ball, reached when
        ``edge·sqrt(c)·height`` exceeds about 12).

    Raises
    ------
    ValueError
        ``c`` out of range (see :func:`hierviz.geometry.check_curvature`) or ``edge`` not a
        positive finite number.

    Examples
    --------
    >>> from hierviz.hierarchy.synthetic import b_ary_tree
    >>> t = b_ary_tree(3, 2)
    >>> x = sarkar_embedding(t, c=1.0)
    >>> ball = PoincareBall(1.0)
    >>> child, parent = t.node_index["r.1.2"], t.node_index["r.1"]
    >>> round(float(ball.dist(x[child], x[parent])), 6), x[t.node_index["r"]].tolist()
    (1.0, [0.0, 0.0])
    """
    c = check_curvature(c)
    if isinstance(edge, bool) or not isinstance(edge, (int, float)) or not math.isfinite(edge) or edge <= 0:
        raise ValueError(f"edge must be a positive finite number (the hyperbolic edge length), got {edge!r}")
    ball = PoincareBall(c)
    f64 = dict(dtype=torch.float64)
    par, dep = tree.parent_index.numpy(), tree.node_depth.numpy()
    n = len(par)
    rank, n_sib = np.zeros(n), np.ones(n)
    for name in tree.nodes:
        kids = [tree.node_index[k] for k in tree.children(name)]
        rank[kids], n_sib[kids] = np.arange(len(kids)), len(kids)
    x = torch.zeros(n, 2, **f64)
    for level in range(1, tree.height + 1):
        ch = np.nonzero(dep == level)[0]
        xp = x[par[ch]]
        if level == 1:  # around the root every direction is free
            back, slot = torch.zeros(len(ch), **f64), rank[ch] / n_sib[ch]
        else:  # leave out the direction back to the grandparent
            u = ball.logmap(xp, x[par[par[ch]]])
            back, slot = torch.atan2(u[:, 1], u[:, 0]), (rank[ch] + 1) / (n_sib[ch] + 1)
        ang = back + 2 * math.pi * torch.as_tensor(slot, **f64)
        lam = 2 / (1 - c * (xp**2).sum(1, keepdim=True))  # conformal factor: Euclidean length = edge / λ
        x[ch] = ball.expmap(xp, float(edge) / lam * torch.stack([torch.cos(ang), torch.sin(ang)], 1))
    return x
