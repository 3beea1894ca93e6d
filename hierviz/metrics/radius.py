r"""Radius diagnostics: does a hyperbolic embedding use the radial direction?

In a hyperbolic embedding of a tree, depth should show as distance from the origin: general
(parent) concepts near the origin, specific (leaf) concepts farther out. A head that
saturates puts every point on one sphere, and then the radial direction carries nothing
(hierviz 0.1's Poincaré runs: every test norm was ``tanh(2) = 0.964``).
:func:`radius_report` measures this per tree depth and counts the points stuck at the
head's clip radius; :func:`max_radius` gives that radius.

Radius means the geodesic distance to the origin, :math:`d(0, z)`: on the Poincaré ball
:math:`\tfrac{2}{\sqrt c}\operatorname{artanh}(\sqrt c\|z\|)`, on the hyperboloid
:math:`\tfrac{1}{\sqrt c}\operatorname{arcosh}(\sqrt c\,z_0)`. On the unit sphere (Euclidean
mode) every sample has norm 1; the prototypes (arithmetic means) have norm < 1, shorter the
more spread their children are, so the per-depth prototype norms still tell parents from
children, and there is no clip radius.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from scipy.stats import rankdata, spearmanr
from sklearn.metrics import roc_auc_score

from hierviz.geometry import Geometry
from hierviz.hierarchy import LabelTree
from hierviz.metrics.hierarchy import _as_labels, _as_points

__all__ = [
    "radius_report",
    "max_radius",
    "origin_distance",
    "CLIP_ATOL",
    "CLIP_FLAG",
    "node_prototype_radii",
    "radius_depth_spearman",
    "edge_order",
    "clip_fraction",
    "radius_gap",
    "norm_auroc",
    "radius_metrics",
    "radius_order_interval",
    "RADIUS_METRICS",
]

#: The five hierarchy-in-radius numbers of every run, in table order.
RADIUS_METRICS = ("radius_depth_spearman", "edge_order", "clip_fraction", "radius_gap", "norm_auroc")

#: A point counts as clipped when its radius is within this of :func:`max_radius`.
CLIP_ATOL = 1e-3
#: A run whose ``clip_fraction`` exceeds this is flagged in the report.
CLIP_FLAG = 0.5


def max_radius(geometry: Geometry, clip_r: float | None = None, dtype: torch.dtype = torch.float32) -> float | None:
    """Geodesic radius of the farthest point ``geometry.to_manifold(v, clip_r)`` can return.

    Parameters
    ----------
    geometry : Geometry
    clip_r : float or None
        The head's feature-clipping radius (tangent norm); ``None``: no clipping, only the
        geometry's ``proj`` margin (float32: ``1 - 4e-3`` of the Poincaré radius).
    dtype : torch.dtype, default float32
        The embeddings' dtype (the ``proj`` margin depends on it).

    Returns
    -------
    float or None
        ``2 * clip_r`` on the Poincaré ball (geoopt's ``d(0, exp_0 v) = 2‖v‖`` for every
        ``c``) and ``clip_r`` on the hyperboloid, each capped by the ``proj`` margin;
        ``inf`` when nothing bounds it (the hyperboloid without clipping); ``None`` for a
        non-hyperbolic geometry (the sphere has no clip radius).

    Examples
    --------
    >>> from hierviz.geometry import PoincareBall
    >>> round(max_radius(PoincareBall(1.0), clip_r=2.0), 4)  # d(0, tanh(2)) = 2 * 2
    4.0
    >>> round(max_radius(PoincareBall(1.0)), 3)  # float32 proj margin: 2 artanh(0.996)
    6.213
    """
    if not getattr(geometry, "hyperbolic", False):
        return None
    r = 1e4 if clip_r is None or float(clip_r) == float("inf") else float(clip_r)
    v = torch.zeros(1, 2, dtype=dtype)
    v[0, 0] = r
    try:
        z = geometry.to_manifold(v)
    except ValueError:  # overflow (the hyperboloid has no proj margin): nothing bounds the radius
        return math.inf
    return float(origin_distance(z, geometry)[0])


def origin_distance(z: torch.Tensor, geometry: Geometry) -> torch.Tensor:
    """Geodesic distance to the origin, ``d(0, z)`` (Euclidean mode: the norm ``‖z‖``).

    Parameters
    ----------
    z : torch.Tensor, shape (n, D)
        Points on the geometry's manifold (D = d + 1 on the hyperboloid).
    geometry : Geometry

    Returns
    -------
    torch.Tensor, shape (n,), float64, >= 0
    """
    z = z.detach()
    if not getattr(geometry, "hyperbolic", False):
        return z.double().norm(dim=-1)
    z64 = z.double()
    d = z64.shape[-1] - (geometry.point_dim(1) - 1)  # intrinsic dimension (Lorentz: D - 1)
    o = geometry.origin(d, dtype=torch.float64, device=z.device)
    with torch.no_grad():  # a learnable curvature would otherwise attach a graph
        return geometry.dist(z64, o.expand_as(z64))


def radius_report(
    z: Any,
    labels: Any,
    tree: LabelTree,
    geometry: Geometry,
    *,
    clip_r: float | None = None,
    steps: int = 10,
    atol: float = CLIP_ATOL,
) -> dict[str, Any]:
    """Radius of samples and of prototypes per tree depth, and the fraction of clipped points.

    For each depth ℓ = 0..L of ``tree``:

    * samples: :func:`origin_distance` of the points whose leaf lies at depth ℓ (mean, std);
    * prototypes: one Fréchet mean per node at depth ℓ over the points below it
      (:meth:`Geometry.group_mean`, ``steps`` steps; Euclidean: the arithmetic mean), then
      their distance to the origin (mean, std). Depth 0 is the mean of all points.

    In a hierarchy-respecting hyperbolic embedding ``proto_mean`` grows with depth; the
    Fréchet mean of points spread around it lies nearer the origin than they do.

    Parameters
    ----------
    z : torch.Tensor or array-like, shape (n, D), float
        Embeddings on ``geometry``'s manifold.
    labels : array-like of int, shape (n,)
        Leaf indices in ``tree.leaves`` order.
    tree : LabelTree
    geometry : Geometry
    clip_r : float or None
        The head's clipping radius (for :func:`max_radius`); ``None``: the ``proj`` margin.
    steps : int, default 10
        Karcher steps of the prototypes (10 reach 1e-6 on spread sets; see
        ``docs/hyperbolic-fidelity.md``).
    atol : float, default 1e-3
        A point is clipped when ``d(0, z) >= max_radius - atol``.

    Returns
    -------
    dict
        ``radius_mean``, ``radius_std`` (all samples, float); ``max_radius`` (float or
        None); ``clip_fraction`` (float in [0, 1], or None for a non-hyperbolic geometry);
        ``radius_by_depth``: a list of L + 1 dicts with ``depth``, ``n_samples``,
        ``sample_mean``, ``sample_std``, ``n_protos``, ``proto_mean``, ``proto_std``
        (None where there is nothing to average). JSON-serialisable.

    Raises
    ------
    TypeError, ValueError
        Bad shapes or dtypes, points off the manifold, labels out of range.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> ball = PoincareBall(1.0)
    >>> ang = torch.tensor([0.0, 0.4, 3.0, 3.4], dtype=torch.float64)
    >>> z = ball.expmap0(1.5 * torch.stack([ang.cos(), ang.sin()], -1))  # all at radius 3
    >>> rep = radius_report(z, [0, 1, 2, 3], tree, ball)
    >>> [round(row["proto_mean"], 2) for row in rep["radius_by_depth"]]  # parents nearer 0
    [0.07, 2.19, 3.0]
    >>> rep["clip_fraction"]
    0.0
    """
    zt = _as_points(z, "z", geometry)
    y = _as_labels(labels, "labels", tree).to(zt.device)
    if zt.shape[0] != y.shape[0]:
        raise ValueError(f"z and labels must have the same length, got {zt.shape[0]} and {y.shape[0]}")
    r = origin_distance(zt, geometry)
    leaf_depth = tree.leaf_depth.to(zt.device)[y]
    rows = []
    for depth in range(tree.height + 1):  # a loop over tree levels, not over samples
        at = leaf_depth == depth
        members = leaf_depth >= depth
        groups = tree.ancestor_at_level(y[members], depth)
        uniq, inv = torch.unique(groups, return_inverse=True)
        row: dict[str, Any] = {"depth": depth, "n_samples": int(at.sum()), "n_protos": int(uniq.numel())}
        row.update(_stats(r[at], "sample"))
        if uniq.numel():
            with torch.no_grad():
                protos = geometry.group_mean(zt[members], inv, int(uniq.numel()), steps=steps)
            row.update(_stats(origin_distance(protos, geometry), "proto"))
        else:
            row.update({"proto_mean": None, "proto_std": None})
        rows.append(row)
    top = max_radius(geometry, clip_r, dtype=zt.dtype)
    clip_fraction = None if top is None else float((r >= top - float(atol)).double().mean())
    return {
        "radius_mean": float(r.mean()),
        "radius_std": float(r.std(unbiased=False)),
        "max_radius": top,
        "clip_fraction": clip_fraction,
        "radius_by_depth": rows,
    }


def _stats(r: torch.Tensor, prefix: str) -> dict[str, float | None]:
    if r.numel() == 0:
        return {f"{prefix}_mean": None, f"{prefix}_std": None}
    std = float(r.std(unbiased=False)) if r.numel() > 1 else 0.0
    return {f"{prefix}_mean": float(r.mean()), f"{prefix}_std": std if math.isfinite(std) else None}


# ---------------------------------------------------------------- the five hierarchy-in-radius numbers
def _vec(x: Any, name: str, dtype=float) -> np.ndarray:
    a = np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=dtype).reshape(-1)
    if dtype is float and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def radius_depth_spearman(radius: Any, depth: Any) -> float:
    r"""Spearman correlation of node depth and prototype radius, divided by its largest possible value.

    Depths tie (every node of a level has the same depth), so even a perfect ordering - every
    deeper prototype farther out - has a Spearman correlation below 1. The score divides by
    that maximum, ``spearman(depth, depth with ties broken)``; 1 means radius grows with
    depth at every comparison between levels, −1 the reverse.

    Parameters
    ----------
    radius : array-like of float, shape (n,)
        ``d(0, prototype)`` per node.
    depth : array-like of int, shape (n,)
        Depth per node (root 0).

    Returns
    -------
    float
        In [−1, 1]; NaN when fewer than two depths or a constant radius. Radii that tie
        exactly where depths tie (synthetic data) could exceed the maximum; the score is
        clipped to [−1, 1].

    Raises
    ------
    ValueError
        Different lengths or non-finite radii.

    Examples
    --------
    >>> radius_depth_spearman([0.1, 1.0, 1.2, 2.0, 2.5, 2.2], [0, 1, 1, 2, 2, 2])  # perfect order
    1.0
    >>> round(radius_depth_spearman([0.1, 2.1, 1.2, 2.0, 2.5, 2.2], [0, 1, 1, 2, 2, 2]), 4)  # 0.7715 / 0.9258
    0.8333
    """

    r, d = _vec(radius, "radius"), _vec(depth, "depth")
    if r.shape != d.shape:
        raise ValueError(f"radius and depth must have the same length, got {r.size} and {d.size}")
    if np.unique(d).size < 2 or np.unique(r).size < 2:
        return float("nan")
    top = float(spearmanr(d, rankdata(d, method="ordinal")).statistic)
    return float(np.clip(float(spearmanr(d, r).statistic) / top, -1.0, 1.0))


def edge_order(radius: Any, parent: Any) -> float:
    """Fraction of parent → child edges whose parent prototype is strictly nearer the origin.

    Parameters
    ----------
    radius : array-like of float, shape (n,)
        ``d(0, prototype)`` per node.
    parent : array-like of int, shape (n,)
        Index (into the same arrays) of each node's parent; −1 for the root.

    Returns
    -------
    float
        In [0, 1]; NaN without edges.

    Raises
    ------
    ValueError
        Different lengths, non-finite radii, or a parent index outside ``-1..n-1`` (or a node
        its own parent).

    Examples
    --------
    >>> edge_order([0.1, 1.0, 0.5, 2.0, 0.7], [-1, 0, 0, 1, 2])  # root->1, root->2, 1->3, 2->4
    1.0
    >>> edge_order([0.1, 1.0, 0.5, 0.9, 0.4], [-1, 0, 0, 1, 2])
    0.5
    """
    r, p = _vec(radius, "radius"), _vec(parent, "parent", dtype=np.int64)
    if r.shape != p.shape:
        raise ValueError(f"radius and parent must have the same length, got {r.size} and {p.size}")
    child = np.nonzero(p >= 0)[0]
    if p.size and (p.min() < -1 or p.max() >= p.size or np.any(p == np.arange(p.size))):
        bad = p[(p < -1) | (p >= p.size) | (p == np.arange(p.size))]
        raise ValueError(
            f"parent must hold indices into radius (0..{p.size - 1}) or -1 for the root, got {bad[:5].tolist()}"
        )
    if child.size == 0:
        return float("nan")
    return float(np.mean(r[p[child]] < r[child]))


def clip_fraction(radius: Any, max_radius: float | None, atol: float = CLIP_ATOL) -> float | None:
    """Fraction of samples within ``atol`` of the head's largest radius (:func:`max_radius`).

    Parameters
    ----------
    radius : array-like of float, shape (n,)
        ``d(0, z)`` per sample.
    max_radius : float or None
        None (the sphere) gives None.
    atol : float, default 1e-3

    Returns
    -------
    float or None

    Raises
    ------
    ValueError
        ``max_radius`` NaN, infinite or ``<= 0`` (0.3 answered 0.0 for a NaN bound), or
        non-finite radii.

    Examples
    --------
    >>> clip_fraction([6.0, 5.9995, 2.0, 0.3], 6.0)
    0.5
    """
    if max_radius is None:
        return None
    if (
        isinstance(max_radius, bool)
        or not isinstance(max_radius, (int, float, np.floating, np.integer))
        or not (0 < float(max_radius) < float("inf"))
    ):
        raise ValueError(f"max_radius must be a finite number > 0 (or None on the sphere), got {max_radius!r}")
    r = _vec(radius, "radius")
    return float(np.mean(r >= float(max_radius) - float(atol))) if r.size else float("nan")


def radius_gap(radius: Any, depth: Any, is_leaf: Any) -> float:
    """Mean leaf-prototype radius minus mean depth-1 prototype radius.

    Parameters
    ----------
    radius : array-like of float, shape (n,)
    depth : array-like of int, shape (n,)
    is_leaf : array-like of bool, shape (n,)

    Returns
    -------
    float
        Positive when leaves lie farther out than the top-level classes; NaN when either
        set is empty or both are the same nodes (a tree of height 1).

    Examples
    --------
    >>> radius_gap([0.1, 1.0, 2.0, 3.0, 3.5], [0, 1, 1, 2, 2], [False, False, False, True, True])
    1.75
    """
    r, d = _vec(radius, "radius"), _vec(depth, "depth", dtype=np.int64)
    leaf = np.asarray(is_leaf, dtype=bool).reshape(-1)
    if not (r.shape == d.shape == leaf.shape):
        raise ValueError(f"radius, depth and is_leaf must have the same length, got {r.size}, {d.size}, {leaf.size}")
    top = r[d == 1]
    if not leaf.any() or top.size == 0 or np.array_equal(leaf, d == 1):  # leaves are the depth-1 nodes: no gap
        return float("nan")
    return float(r[leaf].mean() - top.mean())


def norm_auroc(radius: Any, correct: Any) -> float:
    """AUROC of ``−d(0, z)`` for telling correctly classified test samples from misclassified ones.

    Uncertain samples should sit nearer the origin (HyILR-style hyperbolic uncertainty): a
    score above 0.5 says a *small* radius flags an error. :func:`sklearn.metrics.roc_auc_score`
    with ``y_true = ~correct`` (the errors are the positives) and ``y_score = −radius``.

    Parameters
    ----------
    radius : array-like of float, shape (n,)
    correct : array-like of bool, shape (n,)

    Returns
    -------
    float
        In [0, 1]; NaN when every sample is correct or every one wrong.

    Examples
    --------
    >>> norm_auroc([3.0, 2.5, 0.5, 1.0], [True, True, False, False])  # errors nearest the origin
    1.0
    >>> norm_auroc([3.0, 0.4, 0.5, 1.0], [True, True, False, False])
    0.5
    """

    r = _vec(radius, "radius")
    ok = np.asarray(correct, dtype=bool).reshape(-1)
    if ok.shape != r.shape:
        raise ValueError(f"radius and correct must have the same length, got {r.size} and {ok.size}")
    if ok.all() or not ok.any():
        return float("nan")
    return float(roc_auc_score(~ok, -r))


def node_prototype_radii(
    z: Any, labels: Any, tree: LabelTree, geometry: Geometry, *, steps: int = 10
) -> dict[str, np.ndarray]:
    """Radius of every node's prototype (Fréchet mean of the samples below it), chains contracted.

    A node whose samples are all under one child (a single-child node such as the two-step
    tree's ``melanocytic_benign → nv``, or one whose other children have no samples) has the
    same prototype as that child: it is contracted - left out, its child attached to its
    parent - so no edge compares a prototype with itself. The root is kept unless one child
    holds every sample (a one-class test set, a one-leaf tree): then there is no edge, and
    ``edge_order`` is NaN rather than 0.0.

    Parameters
    ----------
    z : torch.Tensor or array-like, shape (n, D)
    labels : array-like of int, shape (n,)
    tree : LabelTree
    geometry : Geometry
    steps : int, default 10
        Karcher steps.

    Returns
    -------
    dict of numpy arrays, one entry per kept node
        ``node`` (tree node index), ``depth`` (the node's depth in the tree), ``radius``
        (float64), ``parent`` (position in these arrays of the nearest kept ancestor, −1
        for the top kept node), ``is_leaf`` (bool).

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> tree = LabelTree.from_nested({"r": {"a": {"a1": ["x"]}, "b": ["y", "w"]}})
    >>> ball = PoincareBall(1.0)
    >>> z = ball.expmap0(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0]], dtype=torch.float64))
    >>> out = node_prototype_radii(z, [0, 1, 2], tree, ball)
    >>> [tree.nodes[n] for n in out["node"]], out["parent"].tolist()  # a and a1 contracted into x
    (['r', 'b', 'y', 'w', 'x'], [-1, 0, 1, 1, 0])
    """
    zt = _as_points(z, "z", geometry)
    y = _as_labels(labels, "labels", tree).to(zt.device)
    member = tree.ancestor_matrix.to(zt.device)[y]  # (n, N)
    counts = member.sum(0)
    present = counts > 0
    sample, node = member.nonzero(as_tuple=True)
    with torch.no_grad():
        protos, _ = geometry.group_mean(zt[sample], node, tree.num_nodes, steps=steps, allow_empty=True)
    radius = origin_distance(protos, geometry).cpu().numpy()
    parent = tree.parent_index.cpu().numpy()
    counts = counts.cpu().numpy()
    present = present.cpu().numpy()
    kept = []
    for n in range(tree.num_nodes):  # a loop over tree nodes, not samples
        if not present[n]:
            continue
        if not tree.is_leaf(tree.nodes[n]):
            kids = [tree.node_index[c] for c in tree.children(tree.nodes[n])]
            if any(counts[k] == counts[n] for k in kids):  # one child holds every sample (the root too)
                continue
        kept.append(n)
    pos = {n: i for i, n in enumerate(kept)}

    def kept_parent(n: int) -> int:
        p = int(parent[n])
        while p >= 0 and p not in pos:
            p = int(parent[p])
        return pos[p] if p >= 0 else -1

    depth = tree.node_depth.cpu().numpy()
    return {
        "node": np.asarray(kept, dtype=np.int64),
        "depth": depth[kept].astype(np.int64),
        "radius": radius[kept].astype(np.float64),
        "parent": np.asarray([kept_parent(n) for n in kept], dtype=np.int64),
        "is_leaf": np.asarray([tree.is_leaf(tree.nodes[n]) for n in kept], dtype=bool),
    }


def radius_metrics(
    z: Any,
    labels: Any,
    tree: LabelTree,
    geometry: Geometry,
    *,
    predictions: Any = None,
    clip_r: float | None = None,
    steps: int = 10,
    atol: float = CLIP_ATOL,
) -> dict[str, float | None]:
    """The five hierarchy-in-radius numbers of :data:`RADIUS_METRICS` for one set of embeddings.

    ``radius_depth_spearman`` and ``edge_order`` on :func:`node_prototype_radii` (chains
    contracted); ``radius_gap`` on the leaf and depth-1 prototypes; ``clip_fraction`` of the
    samples against :func:`max_radius` (None on the sphere); ``norm_auroc`` of the samples
    against ``predictions == labels`` (NaN without predictions).

    Parameters
    ----------
    z : torch.Tensor or array-like, shape (n, D)
    labels : array-like of int, shape (n,)
    tree : LabelTree
    geometry : Geometry
    predictions : array-like of int, shape (n,), optional
        Predicted leaves (e.g. :func:`hierviz.metrics.linear_probe`).
    clip_r : float or None
        The head's tangent bound (:attr:`hierviz.models.HyperbolicHead.tangent_bound`).
    steps : int, default 10
    atol : float, default 1e-3

    Returns
    -------
    dict
        The five keys; floats (NaN where undefined), all None for a non-hyperbolic geometry
        (on the unit sphere every sample and every normalised prototype has radius 1).

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> ball = PoincareBall(1.0)
    >>> ang = torch.tensor([0.0, 0.6, 3.0, 3.6], dtype=torch.float64)
    >>> tangent = torch.tensor([[1.5], [1.6], [1.4], [0.9]], dtype=torch.float64)  # radii 3, 3.2, 2.8, 1.8
    >>> z = ball.expmap0(tangent * torch.stack([ang.cos(), ang.sin()], -1))
    >>> out = radius_metrics(z, [0, 1, 2, 3], tree, ball, predictions=[0, 1, 2, 2], clip_r=3.0)
    >>> {k: round(v, 3) for k, v in out.items()}  # the error (b2) is the sample nearest the origin
    {'radius_depth_spearman': 0.867, 'edge_order': 1.0, 'clip_fraction': 0.0, 'radius_gap': 0.877, 'norm_auroc': 1.0}

    Every prototype lies farther out than its parent (``edge_order`` 1), but leaf b2 (1.8)
    lies nearer the origin than the depth-1 prototype of a, so the depth ranking is not
    perfect.
    """
    zt = _as_points(z, "z", geometry)
    y = _as_labels(labels, "labels", tree)
    if not getattr(geometry, "hyperbolic", False):
        return dict.fromkeys(RADIUS_METRICS)
    nodes = node_prototype_radii(zt, y, tree, geometry, steps=steps)
    r = origin_distance(zt, geometry).cpu().numpy()
    top = max_radius(geometry, clip_r, dtype=zt.dtype)
    auroc = float("nan")
    if predictions is not None:
        pred = np.asarray(predictions).reshape(-1)
        if pred.shape[0] != r.shape[0]:
            raise ValueError(f"predictions must have one entry per sample ({r.shape[0]}), got {pred.shape[0]}")
        auroc = norm_auroc(r, pred == y.cpu().numpy())
    return {
        "radius_depth_spearman": radius_depth_spearman(nodes["radius"], nodes["depth"]),
        "edge_order": edge_order(nodes["radius"], nodes["parent"]),
        "clip_fraction": clip_fraction(r, top, atol),
        "radius_gap": radius_gap(nodes["radius"], nodes["depth"], nodes["is_leaf"]),
        "norm_auroc": auroc,
    }


def radius_order_interval(
    z: Any,
    labels: Any,
    tree: LabelTree,
    geometry: Geometry,
    *,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int = 0,
    steps: int = 10,
) -> dict[str, tuple[float, float]]:
    """Stratified bootstrap intervals of ``radius_depth_spearman`` and ``edge_order``.

    Both numbers rest on Fréchet means of the test samples of each node, and a rare leaf
    has few of them (15 images of each of five classes in the quick preset's test split).
    This tells how far a run's value would move with another draw of the same test set:
    each replicate resamples the samples of every leaf with replacement, keeping the leaf's
    count (so the same nodes are kept and the same edges compared), and recomputes both
    numbers; the interval holds the central ``level`` of the replicates (percentiles).

    Parameters
    ----------
    z : torch.Tensor or array-like, shape (n, D)
        Points of ``geometry`` (test embeddings).
    labels : array-like of int, shape (n,)
        Leaf index per sample.
    tree : LabelTree
    geometry : Geometry
        A hyperbolic geometry (the sphere has no radius order).
    n_boot : int, default 200
        Replicates, ≥ 20.
    level : float, default 0.95
        In (0, 1).
    seed : int, default 0
        Seed of the resampling (numpy ``default_rng``).
    steps : int, default 10
        Karcher steps of each mean (as :func:`radius_metrics`).

    Returns
    -------
    dict
        ``{"radius_depth_spearman": (lo, hi), "edge_order": (lo, hi)}``, floats (NaN where
        every replicate is undefined).

    Raises
    ------
    ValueError
        A non-hyperbolic geometry, ``n_boot < 20`` or ``level`` outside (0, 1).

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> ball = PoincareBall(1.0)
    >>> ang = torch.tensor([0.0, 0.6, 3.0, 3.6], dtype=torch.float64).repeat_interleave(3)
    >>> z = ball.expmap0(1.5 * torch.stack([ang.cos(), ang.sin()], -1))  # three copies per leaf
    >>> radius_order_interval(z, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3], tree, ball, n_boot=20)
    {'radius_depth_spearman': (1.0, 1.0), 'edge_order': (1.0, 1.0)}

    Identical samples per leaf: every replicate is the same set, so the interval is a point.
    """
    if not getattr(geometry, "hyperbolic", False):
        raise ValueError("radius_order_interval: geometry must be hyperbolic (Poincaré ball or Lorentz)")
    if int(n_boot) < 20:
        raise ValueError(f"radius_order_interval: n_boot must be >= 20, got {n_boot}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"radius_order_interval: level must be in (0, 1), got {level}")
    zt = _as_points(z, "z", geometry)
    y = _as_labels(labels, "labels", tree).cpu().numpy()
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(y == k) for k in np.unique(y)]
    values = np.empty((int(n_boot), 2))
    for b in range(int(n_boot)):  # a loop over replicates; each one is the vectorised metric
        idx = np.concatenate([rng.choice(g, g.size) for g in groups])
        nodes = node_prototype_radii(zt[torch.from_numpy(idx).to(zt.device)], y[idx], tree, geometry, steps=steps)
        values[b] = (
            radius_depth_spearman(nodes["radius"], nodes["depth"]),
            edge_order(nodes["radius"], nodes["parent"]),
        )
    tail = 100.0 * (1.0 - float(level)) / 2.0
    out = {}
    for j, key in enumerate(("radius_depth_spearman", "edge_order")):
        col = values[:, j][np.isfinite(values[:, j])]
        out[key] = (
            (float("nan"), float("nan"))
            if col.size == 0
            else tuple(float(v) for v in np.percentile(col, [tail, 100.0 - tail]))
        )
    return out
