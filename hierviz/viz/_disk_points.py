"""Ball points for the Poincaré disk: their check, geodesics, the 2-D reduction and the nodes' Fréchet means.

What :func:`~hierviz.viz.disk.plot_poincare_disk` computes before it draws: the points checked
inside the ball of radius 1/√c (:func:`check_in_ball`), sampled geodesics (:func:`geodesic`),
d-dimensional points reduced to the disk at their own radius (:func:`reduce_to_disk`) and the
Fréchet mean under every tree node (:func:`node_positions`, cached by content for the panels).
Re-exported by :mod:`hierviz.viz.disk`, the public import path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import geoopt
import numpy as np
import torch

from hierviz.geometry import DEFAULT_CURVATURE, PoincareBall
from hierviz.viz.tree import _as_points, _check_positive

__all__ = ["geodesic", "check_in_ball", "reduce_to_disk", "frechet_group_means", "node_positions"]


def check_in_ball(x: Any, c: float = DEFAULT_CURVATURE, name: str = "z") -> np.ndarray:
    """Validate points of the Poincaré ball of curvature −c.

    Parameters
    ----------
    x : array-like or torch.Tensor, shape (N, d)
        Points; any real dtype.
    c : float, default 1.0
        Curvature magnitude, c > 0 (curvature −c, ball radius 1/√c).
    name : str
        Argument name used in error messages.

    Returns
    -------
    numpy.ndarray, float64, shape (N, d)

    Raises
    ------
    ValueError
        If ``c <= 0``, ``x`` is not 2-D, has non-finite entries, or any point has
        Euclidean norm ≥ 1/√c (outside the open ball).
    TypeError
        If ``x`` is not numeric.
    """
    c = _check_positive(c, "c")
    arr = _as_points(x, name)
    r = 1.0 / np.sqrt(c)
    norms = np.linalg.norm(arr, axis=1)
    if np.any(norms >= r):
        i = int(np.argmax(norms))
        raise ValueError(
            f"{name} has {int(np.sum(norms >= r))} point(s) outside the Poincaré ball of radius 1/√c = {r:.4g} "
            f"(c = {c:g}); largest norm {norms[i]:.6g} at row {i}. Project them with geometry.proj(x) "
            "or pass the matching c."
        )
    return arr


def geodesic(p: Any, q: Any, c: float = DEFAULT_CURVATURE, n: int = 64) -> np.ndarray:
    """Sample the Poincaré-ball geodesic from ``p`` to ``q``.

    Uses geoopt's closed form ``γ(t) = p ⊕_c (t ⊗_c ((−p) ⊕_c q))`` (Möbius addition and
    scalar multiplication), which equals ``exp_p(t · log_p(q))`` for t ∈ [0, 1], in
    float64. In 2-D the samples lie on the circle arc through p and q orthogonal to the
    boundary circle of radius 1/√c (a diameter when p, q and the origin are collinear).

    Parameters
    ----------
    p, q : array-like, shape (d,)
        End points inside the ball of radius 1/√c.
    c : float, default 1.0
        Curvature magnitude (curvature −c), c > 0.
    n : int, default 64
        Number of samples, n ≥ 2; equally spaced in hyperbolic arc length.

    Returns
    -------
    numpy.ndarray, float64, shape (n, d)
        ``out[0] == p``, ``out[-1] == q``; every row satisfies
        d(p, x) + d(x, q) = d(p, q) (paper 01 Eq. 2 distance).

    Raises
    ------
    ValueError
        If ``c <= 0``, ``n < 2``, p and q differ in shape or are not 1-D, or a point is
        outside the ball.
    """
    c = _check_positive(c, "c")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    pa = np.asarray(p.detach().cpu() if hasattr(p, "detach") else p, dtype=np.float64)
    qa = np.asarray(q.detach().cpu() if hasattr(q, "detach") else q, dtype=np.float64)
    if pa.ndim != 1 or qa.shape != pa.shape:
        raise ValueError(f"p and q must be 1-D points of the same dimension, got shapes {pa.shape} and {qa.shape}")
    check_in_ball(np.stack([pa, qa]), c, name="p/q")
    ball = geoopt.PoincareBall(c=c)
    t = torch.linspace(0.0, 1.0, int(n), dtype=torch.float64)[:, None]
    pts = ball.geodesic(t, torch.from_numpy(pa), torch.from_numpy(qa))
    out = pts.numpy().copy()
    out[0], out[-1] = pa, qa
    return out


def _geometry(c: float):
    return PoincareBall(c=c)


def reduce_to_disk(
    z: Any,
    c: float = DEFAULT_CURVATURE,
    others: Sequence[Any] = (),
    max_fit: int = 20000,
    seed: int = 0,
    keep_radius: bool = True,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Map d-dimensional ball points to the 2-D disk, keeping each point's hyperbolic radius.

    The principal directions are fitted on the tangent vectors ``v = logmap0(z)`` (at most
    ``max_fit`` of them) **without centring** (truncated SVD), so the origin — where the
    root sits — stays at the centre. Each point is drawn in the *direction* of its
    projected tangent vector ``Pv`` at its *own* radius: ``expmap0(‖v‖ · Pv/‖Pv‖)``, so
    d(0, x) = 2/√c · artanh(√c‖x‖) is exactly the point's distance to the origin in d
    dimensions. A plain projection would shrink every radius (a projection never
    lengthens a vector), and a saturated embedding, all points on one sphere, would look
    spread; here it shows as a ring. Distances between points are *not* preserved: the
    disk shows directions and depths, not exact geometry. (hierviz ≤ 0.2 projected
    ``v`` itself; ``keep_radius=False`` does that.)

    Parameters
    ----------
    z : array-like, shape (N, d), d ≥ 2
        Points inside the ball of radius 1/√c.
    c : float, default 1.0
        Curvature magnitude, c > 0.
    others : sequence of array-like, each (M_i, d)
        Further ball points (e.g. prototypes) mapped with the same projection.
    max_fit : int
        At most this many points (random, seeded) are used to fit the directions.
    seed : int
        Seed for that subsample.
    keep_radius : bool, default True
        Keep every point's distance to the origin (a point whose projected direction
        vanishes, ``‖Pv‖ < 1e-12 ‖v‖``, is put on the first axis).

    Returns
    -------
    z2 : numpy.ndarray, float64, (N, 2)
    others2 : list of numpy.ndarray, float64, (M_i, 2)

    Raises
    ------
    ValueError
        Points outside the ball, ``c <= 0``, dimension mismatch, d < 2.
    """
    Z = check_in_ball(z, c, "z")
    d = Z.shape[1]
    if d < 2:
        raise ValueError(f"z must have at least 2 columns to draw a disk, got {d}")
    O = [check_in_ball(o, c, f"others[{i}]") for i, o in enumerate(others)]
    for i, o in enumerate(O):
        if o.shape[1] != d:
            raise ValueError(f"others[{i}] has dimension {o.shape[1]} but z has {d}")
    if d == 2:
        return Z, O
    geo = _geometry(c)

    def log0(a: np.ndarray) -> np.ndarray:
        return geo.logmap0(torch.from_numpy(a)).numpy()

    V = log0(Z)
    fit = V
    if len(V) > max_fit:
        fit = V[np.random.default_rng(seed).choice(len(V), max_fit, replace=False)]
    # uncentred PCA = leading right singular vectors; sign fixed for reproducibility
    _, _, vt = np.linalg.svd(fit, full_matrices=False)
    comps = vt[:2]
    flip = np.sign(comps[np.arange(2), np.argmax(np.abs(comps), axis=1)])
    comps = comps * flip[:, None]

    def to_disk(v: np.ndarray) -> np.ndarray:
        w = v @ comps.T
        if keep_radius:
            n_v = np.linalg.norm(v, axis=1, keepdims=True)
            n_w = np.linalg.norm(w, axis=1, keepdims=True)
            lost = n_w <= 1e-12 * np.maximum(n_v, 1e-300)
            unit = np.where(lost, np.array([[1.0, 0.0]]), w / np.where(lost, 1.0, n_w))
            w = unit * n_v
        x = geo.expmap0(torch.from_numpy(w)).numpy()
        # guard the boundary in float64 (tanh saturates for very long tangent vectors)
        r = (1.0 - 1e-9) / np.sqrt(c)
        nrm = np.linalg.norm(x, axis=1, keepdims=True)
        return np.where(nrm >= r, x / np.maximum(nrm, 1e-300) * r, x)

    return to_disk(V), [to_disk(log0(o)) for o in O]


def frechet_group_means(
    geometry, x: torch.Tensor, index: torch.Tensor, num_groups: int, steps: int = 20
) -> torch.Tensor:
    """Per-group Fréchet means for plotting (paper 01 Eq. 3), converged further than training's T=3.

    A thin wrapper over ``geometry.group_mean`` (whose Karcher step is monotone in the
    Fréchet objective, so spread groups near the boundary do not overshoot), run for
    ``steps`` fixed-point steps without gradient.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
    x : torch.Tensor, float, (n, d)
        Points on the manifold.
    index : torch.LongTensor, (n,)
        Group of each row; every group in [0, K) must be non-empty.
    num_groups : int
        K.
    steps : int, default 20
        Karcher steps.

    Returns
    -------
    torch.Tensor, (K, d)

    Raises
    ------
    ValueError
        If a group is empty or a point is off the manifold (from ``group_mean``).
    """
    with torch.no_grad():
        return geometry.group_mean(x, index, num_groups, steps=steps)


def node_positions(z: np.ndarray, y: np.ndarray, tree, geometry, skip: Any = ()) -> dict[str, np.ndarray]:
    """Fréchet mean of the points under every non-root node (paper 01 Eq. 3).

    Uses :func:`frechet_group_means`, one vectorised call per tree level. A group of one point
    is its own mean and costs no Karcher step.

    Parameters
    ----------
    z : numpy.ndarray, float64, (N, d)
        Points on ``geometry``'s manifold.
    y : numpy.ndarray, int64, (N,)
        Leaf indices.
    tree : hierviz.hierarchy.LabelTree
    geometry : hierviz.geometry.Geometry
        Provides ``group_mean`` and ``dist``.
    skip : collection of str, optional
        Nodes whose position the caller already has (given prototypes): not computed,
        absent from the result.

    Returns
    -------
    dict of str to numpy.ndarray (d,)
        node name → mean of the points whose leaf lies under it (the leaf centroid for
        a leaf). Nodes with no points or in ``skip`` are absent; the root is never included.

    Examples
    --------
    >>> from hierviz.geometry import get_geometry
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
    >>> z = np.array([[0.3, 0.1], [0.1, 0.3], [-0.5, 0.0]])
    >>> pos = node_positions(z, np.array([0, 1, 2]), tree, get_geometry("poincare"), skip={"b"})
    >>> sorted(pos), pos["x"].tolist(), bool(abs(pos["a"][0] - pos["a"][1]) < 1e-12)
    (['a', 'x', 'y', 'z'], [0.3, 0.1], True)
    """
    out: dict[str, np.ndarray] = {}
    skip_idx = np.array([tree.node_index[n] for n in skip if n in tree.node_index], dtype=np.int64)
    paths = tree.leaf_paths.numpy()[y]  # (N, L+1) node index per level
    depth = tree.node_depth.numpy()
    zt = torch.from_numpy(z)
    for lvl in range(1, paths.shape[1]):
        idx = paths[:, lvl]
        keep = (depth[idx] == lvl) & ~np.isin(idx, skip_idx)  # shallow leaves repeat themselves: skip
        if not np.any(keep):
            continue
        uniq, inv, counts = np.unique(idx[keep], return_inverse=True, return_counts=True)
        if np.all(counts == 1):  # one point per group: it is its own mean
            means = z[keep][np.argsort(inv)].astype(np.float64)
        else:
            means = frechet_group_means(
                geometry, zt[torch.from_numpy(keep)], torch.from_numpy(inv.astype(np.int64)), len(uniq)
            )
            means = means.detach().cpu().numpy().astype(np.float64)
        for k, node in enumerate(uniq):
            out[tree.nodes[int(node)]] = means[k]
    return out


# Panels redraw the same points with new slider values (LAM margins, weights): their Fréchet
# means do not change, so plot_poincare_disk keeps the last few, keyed by content.
_POSITIONS_CACHE: dict[tuple, dict[str, np.ndarray]] = {}
_POSITIONS_CACHE_SIZE = 8


def _disk_node_positions(Z: np.ndarray, y: np.ndarray, tree, c: float, skip: Any) -> dict[str, np.ndarray]:
    digest = hashlib.blake2b(digest_size=16)
    for part in (np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(y, dtype=np.int64)):
        digest.update(part.tobytes())
    digest.update("\0".join(tree.nodes).encode())
    digest.update(tree.leaf_paths.numpy().tobytes())
    key = (digest.hexdigest(), Z.shape, float(c), frozenset(skip))
    if key not in _POSITIONS_CACHE:
        if len(_POSITIONS_CACHE) >= _POSITIONS_CACHE_SIZE:
            _POSITIONS_CACHE.pop(next(iter(_POSITIONS_CACHE)))
        _POSITIONS_CACHE[key] = node_positions(Z, y, tree, _geometry(c), skip=skip)
    return {k: v.copy() for k, v in _POSITIONS_CACHE[key].items()}
