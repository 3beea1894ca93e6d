"""2-D maps of embeddings (t-SNE, UMAP, PCA) with the label tree drawn over them.

Hyperbolic embeddings are first mapped to the tangent space at the origin
(``geometry.to_tangent0`` = logmap₀), where Euclidean neighbourhoods are meaningful for
t-SNE / UMAP / PCA; Euclidean (unit-sphere) embeddings are used as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from scipy.spatial import ConvexHull, QhullError

from hierviz.geometry import get_geometry
from hierviz.metrics.projection import (  # the projections are computed there; figures here
    PROJECTION_LABELS,
    PROJECTIONS,
    project_2d,
    register_projection,
)
from hierviz.viz.tree import (
    _TEMPLATE,
    _as_points,
    _edge_lines,
    _families,
    _leaf_labels,
    dfs_leaves,
    family_colors,
    leaf_colors,
    leaf_parent,
    node_colors,
)

__all__ = [
    "PROJECTIONS",
    "PROJECTION_LABELS",
    "register_projection",
    "OVERLAYS",
    "project_2d",
    "parent_hulls",
    "plot_projection",
]


def __getattr__(name: str):
    if name == "METHODS":  # hierviz 0.1 name
        return tuple(PROJECTIONS.names())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


OVERLAYS = ("centroids", "hulls", None)


def parent_hulls(coords: Any, labels: Any, tree) -> dict[str, np.ndarray]:
    """Convex hull (``scipy.spatial.ConvexHull``) of the 2-D points under each leaf-parent.

    One hull per *family* — an internal non-root node with leaf children — over the
    points of those leaves. A leaf hanging directly from the root has no family hull;
    families with fewer than 3 points, or collinear points, get none either.

    Parameters
    ----------
    coords : array-like, shape (N, 2)
        2-D coordinates (e.g. from :func:`project_2d`).
    labels : array-like of int, shape (N,)
        Leaf indices.
    tree : hierviz.hierarchy.LabelTree

    Returns
    -------
    dict of str to numpy.ndarray (m + 1, 2)
        parent name → hull vertices in counter-clockwise order, first vertex repeated
        at the end (a closed polygon ready to draw).

    Raises
    ------
    ValueError
        ``coords`` not (N, 2) or non-finite; ``labels`` length ≠ N or out of range.
    """
    X = _as_points(coords, "coords", dim=2)
    y = _leaf_labels(labels, tree, X.shape[0])
    out: dict[str, np.ndarray] = {}
    for par, leaves in _families(tree).items():
        if par == tree.root or tree.is_leaf(par):
            continue
        ids = [tree.leaf_index[leaf] for leaf in leaves]
        pts = X[np.isin(y, ids)]
        if len(pts) < 3:
            continue
        try:
            hull = ConvexHull(pts)
        except QhullError:
            continue
        v = pts[hull.vertices]
        out[par] = np.vstack([v, v[:1]])
    return out


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _projection_geometry(geometry, c: float | None):
    """The geometry ``z`` lives in: a name resolved at curvature ``c``; an object checked against ``c``.

    Raises
    ------
    ValueError
        If ``c`` disagrees with a hyperbolic geometry object's own curvature.
    """
    if isinstance(geometry, str):
        return get_geometry(geometry, c=c)  # a name: curvature c (default 1)
    if c is not None and geometry is not None and getattr(geometry, "hyperbolic", False):
        own = -float(geometry.curvature)
        if abs(own - float(c)) > 1e-12 * max(1.0, abs(own)):
            raise ValueError(f"c={c!r} disagrees with the geometry's own c={own:g}; pass one of them")
    return geometry


def _add_leaf_traces(fig: go.Figure, XY: np.ndarray, y: np.ndarray, index: np.ndarray, tree) -> None:
    """One scatter per leaf present, coloured by leaf and legend-grouped by parent."""
    lcol = leaf_colors(tree)
    seen: set[str] = set()
    for leaf in dfs_leaves(tree):
        m = y == tree.leaf_index[leaf]
        if not np.any(m):
            continue
        par = leaf_parent(tree, leaf)
        fig.add_trace(
            go.Scatter(
                x=XY[m, 0],
                y=XY[m, 1],
                mode="markers",
                name=leaf,
                legendgroup=par,
                legendgrouptitle_text=None if par in seen else par,
                marker=dict(size=6, color=lcol[leaf], opacity=0.75, line=dict(width=0)),
                customdata=index[m],
                hovertemplate=f"<b>{leaf}</b><br>parent: {par}<br>point #%{{customdata}}<extra></extra>",
            )
        )
        seen.add(par)


def _add_centroid_tree(fig: go.Figure, XY: np.ndarray, y: np.ndarray, tree) -> None:
    """The ``"centroids"`` overlay: every non-root node at the mean 2-D position of its points, straight edges."""
    paths = tree.leaf_paths.numpy()[y]
    depth = tree.node_depth.numpy()
    cent: dict[str, np.ndarray] = {}
    for lvl in range(1, paths.shape[1]):
        idx = paths[:, lvl]
        for node in np.unique(idx[depth[idx] == lvl]):
            cent[tree.nodes[int(node)]] = XY[(idx == node) & (depth[idx] == lvl)].mean(axis=0)
    ex: list[float | None] = []
    ey: list[float | None] = []
    for node, p in cent.items():
        par = tree.parent(node)
        if par is None or par == tree.root or par not in cent:
            continue
        ex += [cent[par][0], p[0], None]
        ey += [cent[par][1], p[1], None]
    fig.add_trace(go.Scatter(**_edge_lines(ex, ey, "tree edges", "rgba(40,40,40,0.7)", 1.5)))
    ncol = node_colors(tree)
    names = [n for n in tree.nodes if n in cent]
    fig.add_trace(
        go.Scatter(
            x=[cent[n][0] for n in names],
            y=[cent[n][1] for n in names],
            mode="markers+text",
            name="node centroids",
            text=names,
            textposition="top center",
            textfont=dict(size=11, color="#111111"),
            marker=dict(
                symbol=["diamond" if tree.is_leaf(n) else "star" for n in names],
                size=[11 if tree.is_leaf(n) else 17 for n in names],
                color=[ncol[n] for n in names],
                line=dict(color="black", width=1.2),
            ),
            hovertemplate="<b>%{text}</b><br>mean 2-D position of its points<extra></extra>",
        )
    )


def _add_parent_hulls(fig: go.Figure, XY: np.ndarray, y: np.ndarray, tree) -> None:
    """The ``"hulls"`` overlay: a translucent convex hull per leaf-parent (:func:`parent_hulls`)."""
    fcol = family_colors(tree)
    for par, poly in parent_hulls(XY, y, tree).items():
        fig.add_trace(
            go.Scatter(
                x=poly[:, 0],
                y=poly[:, 1],
                mode="lines",
                name=f"hull: {par}",
                fill="toself",
                fillcolor=_rgba(fcol[par], 0.12),
                line=dict(color=fcol[par], width=1.5),
                legendgroup=par,
                hovertemplate=f"<b>{par}</b> (convex hull)<extra></extra>",
            )
        )


def plot_projection(
    z: Any,
    labels: Any,
    tree,
    method: str = "tsne",
    geometry=None,
    overlay: str | None = "centroids",
    seed: int = 0,
    max_points: int = 3000,
    title: str | None = None,
    return_coords: bool = False,
    options: dict[str, Any] | None = None,
    c: float | None = None,
):
    """2-D map (t-SNE / UMAP / PCA) of embeddings, coloured by leaf, with the tree on top.

    Parameters
    ----------
    z : array-like or torch.Tensor, shape (N, d)
        Embeddings. Hyperbolic ones (pass ``geometry``) are mapped with logmap₀ first
        (:func:`project_2d`).
    labels : array-like of int, shape (N,)
        Leaf indices 0..C−1 (leaf names accepted).
    tree : hierviz.hierarchy.LabelTree
    method : {"tsne", "umap", "pca"}, default "tsne"
    geometry : None, str or hierviz.geometry.Geometry, optional
        The space ``z`` lives in; see :func:`project_2d`.
    overlay : {"centroids", "hulls", None}, default "centroids"
        ``"centroids"``: the mean 2-D position of every non-root node's points, with
        straight edges parent → child (the tree drawn over the map; the map is not a
        metric space, so straight lines are the honest choice). ``"hulls"``: a
        translucent convex hull per leaf-parent (:func:`parent_hulls`). ``None``: points only.
    seed : int
        Seed of the projection and of the subsample.
    max_points : int, default 3000
        A seeded random subset of at most this many points is projected (t-SNE is
        O(N log N) but slow on a laptop beyond a few thousand).
    title : str, optional
    return_coords : bool, default False
        Also return the 2-D coordinates and the row indices of ``z`` they belong to.
    options : dict, optional
        Extra estimator keyword arguments, see :func:`project_2d`.
    c : float, optional
        Curvature ``c > 0`` (curvature −c) when ``geometry`` is given by name (default 1); a
        Geometry object carries its own ``c`` (passing another one is refused).

    Returns
    -------
    fig : plotly.graph_objects.Figure
        Traces: one scatter per leaf present (named by the leaf, legend-grouped by
        parent), then for ``"centroids"`` the traces ``"tree edges"`` and
        ``"node centroids"``, for ``"hulls"`` one ``"hull: <parent>"`` trace per family.
        ``fig.layout.meta`` = ``{"method", "n_points", "n_shown", "tangent"}``.
    coords : numpy.ndarray, float64, (n, 2)
        Only if ``return_coords``.
    index : numpy.ndarray, int64, (n,)
        Only if ``return_coords``: ``coords[k]`` is the projection of ``z[index[k]]``.

    Raises
    ------
    ValueError
        Unknown ``method`` / ``overlay``; ``labels`` length ≠ N or out of range;
        fewer than 4 points; non-finite input; ``max_points < 4``.
    """
    if overlay not in OVERLAYS:
        raise ValueError(f"overlay must be one of {OVERLAYS}, got {overlay!r}")
    if method not in PROJECTIONS:
        raise ValueError(f"method must be one of {PROJECTIONS.names()}, got {method!r}")
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or max_points < 4:
        raise ValueError(f"max_points must be an integer >= 4, got {max_points!r}")
    Z = _as_points(z, "z")
    N = Z.shape[0]
    y_all = _leaf_labels(labels, tree, N)
    index = np.arange(N)
    if N > max_points:
        index = np.sort(np.random.default_rng(seed).choice(N, max_points, replace=False))
    geometry = _projection_geometry(geometry, c)
    hyperbolic = bool(getattr(geometry, "hyperbolic", False))  # the capability, never the name
    XY = project_2d(Z[index], method=method, geometry=geometry, seed=seed, options=options)
    y = y_all[index]

    fig = go.Figure()
    _add_leaf_traces(fig, XY, y, index, tree)
    if overlay == "centroids":
        _add_centroid_tree(fig, XY, y, tree)
    elif overlay == "hulls":
        _add_parent_hulls(fig, XY, y, tree)

    label = PROJECTION_LABELS.get(method, method)
    if title is None:
        title = f"{label} of {Z.shape[1]}-d embeddings"
        notes = []
        if hyperbolic:
            notes.append("hyperbolic points mapped with logmap₀ first")
        if len(index) < N:
            notes.append(f"{len(index)} of {N} points")
        if notes:
            title += "<br><sup>" + "; ".join(notes) + "</sup>"
    fig.update_layout(
        template=_TEMPLATE,
        title=dict(text=title),
        height=600,
        hovermode="closest",
        legend=dict(title=dict(text="leaf (by parent)"), itemsizing="constant", groupclick="toggleitem"),
        xaxis=dict(title=dict(text=f"{label} 1"), showgrid=False, zeroline=False),
        yaxis=dict(title=dict(text=f"{label} 2"), showgrid=False, zeroline=False),
        meta={"method": method, "n_points": int(N), "n_shown": int(len(index)), "tangent": bool(hyperbolic)},
    )
    if return_coords:
        return fig, XY, index
    return fig
