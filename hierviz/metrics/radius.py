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

import torch

from hierviz.geometry import Geometry
from hierviz.hierarchy import LabelTree
from hierviz.metrics.hierarchy import _as_labels, _as_points

__all__ = ["radius_report", "max_radius", "origin_distance", "CLIP_ATOL", "CLIP_FLAG"]

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
