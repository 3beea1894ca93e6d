r"""Toy data that follows a label tree, for the course's figures and the hyperbolic head's failure modes.

* :func:`toy_tangent_points` - a 2-D cloud of tangent vectors at the origin: families form
  wedges and deeper leaves lie farther out, so ``expmap0`` of it is a tree in the Poincaré disk
  (notebooks 01, 04 and 12, the curvature and LAM panels).
* :func:`toy_encoder_features` - features of a toy "encoder" that separate the classes but
  carry no depth in their norm, at a ResNet-like norm (notebook 12's failure modes, trained by
  :func:`hierviz.training.train_toy_head`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from hierviz.hierarchy import dfs_leaves, leaf_parent

__all__ = ["toy_tangent_points", "toy_encoder_features"]


def toy_tangent_points(
    tree, n_per_leaf: int = 25, spread: float = 0.12, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A small 2-D toy embedding that follows the tree, as tangent vectors at the origin.

    Leaf ℓ gets a direction on the circle (depth-first order, pulled towards its
    siblings' mean direction so families form wedges) and a length 0.4 + 0.45·depth, so
    deeper leaves land farther out once mapped to the ball with expmap₀. Points are that
    centre plus Gaussian noise of relative size ``spread``.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    n_per_leaf : int ≥ 1, default 25
    spread : float ≥ 0, default 0.12
    seed : int, default 0

    Returns
    -------
    v : numpy.ndarray, float64, shape (C · n_per_leaf, 2)
        Tangent vectors at the origin (Euclidean; map with ``expmap0`` to the ball).
    labels : numpy.ndarray, int64, shape (C · n_per_leaf,)
        Leaf indices.

    Raises
    ------
    ValueError
        ``n_per_leaf < 1`` or negative ``spread``.
    """
    if isinstance(n_per_leaf, bool) or not isinstance(n_per_leaf, (int, np.integer)) or n_per_leaf < 1:
        raise ValueError(f"n_per_leaf must be a positive integer, got {n_per_leaf!r}")
    if not (isinstance(spread, (int, float, np.floating)) and math.isfinite(spread) and spread >= 0):
        raise ValueError(f"spread must be a finite number >= 0, got {spread!r}")
    rng = np.random.default_rng(seed)
    leaves = dfs_leaves(tree)
    C = len(leaves)
    own = {leaf: 2 * np.pi * (i + 0.5) / C for i, leaf in enumerate(leaves)}
    fam: dict[str, list[float]] = {}
    for leaf in leaves:
        fam.setdefault(leaf_parent(tree, leaf), []).append(own[leaf])
    vs, ys = [], []
    for leaf in leaves:
        # circular mean of the family's angles
        a = fam[leaf_parent(tree, leaf)]
        fam_angle = np.arctan2(np.mean(np.sin(a)), np.mean(np.cos(a)))
        diff = np.angle(np.exp(1j * (own[leaf] - fam_angle)))
        ang = fam_angle + 0.6 * diff
        r = 0.4 + 0.45 * tree.depth(leaf)
        centre = r * np.array([np.cos(ang), np.sin(ang)])
        vs.append(centre + spread * r * rng.standard_normal((n_per_leaf, 2)))
        ys.append(np.full(n_per_leaf, tree.leaf_index[leaf], dtype=np.int64))
    return np.concatenate(vs), np.concatenate(ys)


def toy_encoder_features(
    tree, n_per_leaf: int = 16, dim: int = 16, norm: float = 30.0, spread: float = 0.6, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Features of a toy "encoder" that separate the tree's classes but carry no depth in their norm.

    Every tree node below the root gets a random Gaussian direction in ``R^dim``; a leaf's mean is
    the sum of its ancestors' directions (so siblings share a part), a sample is that mean plus
    Gaussian noise of relative size ``spread``, rescaled to norm ``norm`` (±5 %). A ResNet-18's
    raw head outputs have norms ≈ 20–40 (docs/hyperbolic-fidelity.md); a small CPU encoder's are
    ≈ 1.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    n_per_leaf : int ≥ 2, default 16
    dim : int ≥ 2, default 16
    norm : float > 0, default 30.0
    spread : float ≥ 0, default 0.6
    seed : int, default 0

    Returns
    -------
    x : torch.Tensor, float64, shape (C · n_per_leaf, dim)
    labels : torch.LongTensor, shape (C · n_per_leaf,)

    Raises
    ------
    ValueError
        A bad size, norm or spread.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> x, y = toy_encoder_features(tree, n_per_leaf=4, dim=8, norm=30.0)
    >>> tuple(x.shape), y.tolist()[:5], bool(((x.norm(dim=1) - 30).abs() <= 1.5).all())
    ((12, 8), [0, 0, 0, 0, 1], True)
    """
    for name, v, lo in (("n_per_leaf", n_per_leaf, 2), ("dim", dim, 2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if not (isinstance(norm, (int, float)) and math.isfinite(norm) and norm > 0):
        raise ValueError(f"norm must be a finite number > 0 (ResNet-like: 30), got {norm!r}")
    if not (isinstance(spread, (int, float)) and spread >= 0):
        raise ValueError(f"spread must be a number >= 0, got {spread!r}")
    g = torch.Generator().manual_seed(int(seed))
    node_dir = torch.randn(tree.num_nodes, dim, generator=g, dtype=torch.float64)
    node_dir[int(tree.node_index[tree.root])] = 0.0
    means = tree.ancestor_matrix.to(torch.float64) @ node_dir  # (C, dim): sum of the ancestors' directions
    means = means / means.norm(dim=1, keepdim=True)
    y = torch.arange(tree.num_leaves).repeat_interleave(n_per_leaf)
    x = means[y] + spread * torch.randn(len(y), dim, generator=g, dtype=torch.float64) / math.sqrt(dim)
    x = x / x.norm(dim=1, keepdim=True)
    x = x * norm * (1 + 0.05 * (2 * torch.rand(len(y), 1, generator=g, dtype=torch.float64) - 1))
    return x, y
