"""The Poincaré disk: embeddings, prototypes and the label tree drawn with geodesics.

The Poincaré ball of curvature −c (c > 0) is the open ball of radius 1/√c with the
metric of paper 01 Eq. 2. Its geodesics are circle arcs that meet the boundary circle at
right angles (or diameters); :func:`geodesic` samples them with geoopt, and
:func:`plot_poincare_disk` draws the tree edges root → internal node → leaf as such arcs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from hierviz.geometry import DEFAULT_CURVATURE
from hierviz.viz._disk_points import (  # re-exported: this module is their public import path
    _POSITIONS_CACHE,  # noqa: F401
    _POSITIONS_CACHE_SIZE,  # noqa: F401
    _disk_node_positions,
    _geometry,  # noqa: F401
    check_in_ball,
    frechet_group_means,
    geodesic,
    node_positions,
    reduce_to_disk,
)
from hierviz.viz._fast import fast_figure
from hierviz.viz.tree import (
    _TEMPLATE,
    _check_positive,
    _edge_lines,
    _leaf_labels,
    dfs_leaves,
    leaf_colors,
    leaf_parent,
    node_colors,
)

__all__ = [
    "geodesic",
    "check_in_ball",
    "reduce_to_disk",
    "frechet_group_means",
    "node_positions",
    "plot_poincare_disk",
    "disk_radius_caption",
]


def _proto_names(proto_nodes: Any, tree, P: int) -> list[str]:
    if proto_nodes is None:
        raise ValueError("proto_nodes must be given with prototypes (node names or node indices, one per row)")
    if hasattr(proto_nodes, "detach"):
        proto_nodes = proto_nodes.detach().cpu().tolist()
    names = list(np.asarray(proto_nodes).tolist()) if not isinstance(proto_nodes, (list, tuple)) else list(proto_nodes)
    if len(names) != P:
        raise ValueError(f"proto_nodes has {len(names)} entries but prototypes has {P} rows; they must match")
    out = []
    for nm in names:
        if isinstance(nm, (int, np.integer)) and not isinstance(nm, bool):
            if not 0 <= int(nm) < tree.num_nodes:
                raise ValueError(f"proto_nodes index {nm} out of range [0, {tree.num_nodes - 1}]")
            out.append(tree.nodes[int(nm)])
        elif isinstance(nm, str):
            if nm not in tree.node_index:
                raise ValueError(f"proto_nodes contains {nm!r}, which is not a node of the tree")
            out.append(nm)
        else:
            raise TypeError(f"proto_nodes entries must be node names or node indices, got {type(nm).__name__}")
    return out


def _circle(r: float, n: int = 361) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0, 2 * np.pi, n)
    return r * np.cos(t), r * np.sin(t)


def plot_poincare_disk(
    z: Any,
    labels: Any,
    tree,
    prototypes: Any = None,
    proto_nodes: Any = None,
    c: float = DEFAULT_CURVATURE,
    title: str | None = None,
    max_points: int = 5000,
    show_tree: bool = True,
    seed: int = 0,
) -> go.Figure:
    """Plot embeddings in the Poincaré disk with the label tree drawn as geodesics.

    Points are coloured by leaf (shades of one colour family per parent, see
    :func:`hierviz.viz.tree.leaf_colors`) and grouped by parent in the legend. The tree
    is drawn node by node: the root at the origin, every internal node at its prototype
    (given, or the Fréchet mean of the points under it, paper 01 Eq. 3, see
    :func:`frechet_group_means`), every leaf at its centroid (Fréchet mean); each edge is a Poincaré geodesic (:func:`geodesic`),
    i.e. an arc orthogonal to the boundary circle of radius 1/√c.

    Points of dimension d > 2 are shown through :func:`reduce_to_disk`
    (logmap₀ → uncentred PCA(2) → expmap₀); centroids and prototypes are computed in the
    original d dimensions first and mapped the same way, and the title says so.

    Parameters
    ----------
    z : array-like or torch.Tensor, shape (N, d), d ≥ 2
        Embeddings inside the ball ‖z‖ < 1/√c (e.g. ``PoincareBall.proj`` output; Lorentz
        points go through ``Lorentz.to_ball`` first).
    labels : array-like of int, shape (N,)
        Leaf indices 0..C−1 in ``tree.leaves`` order (leaf names are accepted too).
    tree : hierviz.hierarchy.LabelTree
    prototypes : array-like, shape (P, d), optional
        Node prototypes (e.g. from :func:`hierviz.metrics.parent_prototypes`), in the ball.
    proto_nodes : sequence of str or int, shape (P,), optional
        The node (name or node index) of each prototype row; required with ``prototypes``.
    c : float, default 1.0
        Curvature magnitude (curvature −c), c > 0.
    title : str, optional
        Figure title; a default names c and any reduction / subsampling.
    max_points : int, default 5000
        At most this many points are drawn (seeded random subset; centroids always use
        all points).
    show_tree : bool, default True
        Draw the tree edges, leaf centroids, prototypes and root.
    seed : int
        Seed for the subsample.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces, in order: ``"boundary"``; one scatter per leaf present in ``labels``
        (named by the leaf, legend-grouped by its parent); and with ``show_tree``:
        ``"tree edges"`` (all geodesic arcs in one trace), ``"leaf centroids"``,
        ``"prototypes"`` (internal non-root nodes) and ``"root"``. Axes have equal
        aspect; ``fig.layout.meta`` holds ``{"c", "radius", "reduced", "n_points",
        "n_shown"}``.

    Raises
    ------
    ValueError
        ``c <= 0``; points (or prototypes) outside the ball or non-finite; ``labels``
        length ≠ N or out of range; ``prototypes`` without ``proto_nodes`` or with a
        different row count or dimension; unknown node names; ``max_points < 1``.
    TypeError
        Non-numeric points, float labels.

    Examples
    --------
    >>> import numpy as np
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
    >>> z = np.array([[0.3, 0.1], [0.2, 0.4], [-0.5, 0.0], [-0.1, -0.6]])
    >>> fig = plot_poincare_disk(z, np.array([0, 1, 2, 2]), tree, c=1.0)
    >>> fig.layout.title.text is not None
    True
    """
    return fast_figure(
        *_poincare_disk_spec(z, labels, tree, prototypes, proto_nodes, c, title, max_points, show_tree, seed)
    )


def _disk_inputs(
    z: Any, labels: Any, tree, prototypes: Any, proto_nodes: Any, c: float, max_points: int
) -> tuple[float, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Check the inputs of :func:`plot_poincare_disk`.

    Returns
    -------
    c : float
    Z : numpy.ndarray, float64, (N, d)
        The points, inside the ball.
    y : numpy.ndarray, int, (N,)
        Leaf indices.
    given : dict of str to numpy.ndarray (d,)
        The prototypes by node name (empty without prototypes).

    Raises
    ------
    ValueError
        ``c <= 0``, ``max_points < 1``, points outside the ball, ``d < 2``, bad labels,
        prototypes of another dimension, ``proto_nodes`` without prototypes.
    """
    c = _check_positive(c, "c")
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or max_points < 1:
        raise ValueError(f"max_points must be a positive integer, got {max_points!r}")
    Z = check_in_ball(z, c, "z")
    N, d = Z.shape
    if d < 2:
        raise ValueError(f"z must have at least 2 columns, got shape {Z.shape}")
    y = _leaf_labels(labels, tree, N)
    given: dict[str, np.ndarray] = {}
    if prototypes is not None:
        Pm = check_in_ball(prototypes, c, "prototypes")
        if Pm.shape[1] != d:
            raise ValueError(f"prototypes has dimension {Pm.shape[1]} but z has {d}; they must match")
        names = _proto_names(proto_nodes, tree, Pm.shape[0])
        given = {nm: Pm[i] for i, nm in enumerate(names)}
    elif proto_nodes is not None:
        raise ValueError("proto_nodes was given without prototypes")
    return c, Z, y, given


def _disk_points_and_nodes(
    Z: np.ndarray, y: np.ndarray, tree, c: float, given: dict[str, np.ndarray], show_tree: bool, seed: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The 2-D disk coordinates of the points and of the tree's nodes (``{}`` without ``show_tree``).

    Nodes sit at their given prototype, else at the Fréchet mean of their points; ``d > 2``
    is reduced to the disk by :func:`reduce_to_disk` (points and nodes alike).
    """
    pos: dict[str, np.ndarray] = {}
    if show_tree:
        pos = _disk_node_positions(Z, y, tree, c, skip=given)
        pos.update({k: v for k, v in given.items() if k != tree.root})
    if Z.shape[1] <= 2:
        return Z, pos
    keys = list(pos)
    others = [np.stack([pos[k] for k in keys])] if keys else []
    Z2, P2 = reduce_to_disk(Z, c, others, seed=seed)
    return Z2, {k: P2[0][i] for i, k in enumerate(keys)}


def _disk_point_traces(Z2: np.ndarray, y: np.ndarray, shown: np.ndarray, tree, R: float) -> list[dict]:
    """The boundary circle of radius ``R``, then one scatter of the ``shown`` points per leaf (legend-grouped by parent)."""
    lcol = leaf_colors(tree)
    bx, by = _circle(R)
    data: list[dict] = [
        dict(
            type="scatter",
            x=bx,
            y=by,
            mode="lines",
            name="boundary",
            fill="toself",
            fillcolor="rgba(225,232,242,0.35)",
            line=dict(color="#333333", width=1.5),
            hoverinfo="skip",
            showlegend=False,
        )
    ]
    seen_groups: set[str] = set()
    for leaf in dfs_leaves(tree):
        li = tree.leaf_index[leaf]
        idx = shown[y[shown] == li]
        if len(idx) == 0:
            continue
        par = leaf_parent(tree, leaf)
        first = par not in seen_groups
        seen_groups.add(par)
        trace = dict(
            type="scatter",
            x=Z2[idx, 0],
            y=Z2[idx, 1],
            mode="markers",
            name=leaf,
            legendgroup=par,
            marker=dict(size=6, color=lcol[leaf], opacity=0.75, line=dict(width=0)),
            customdata=idx,
            hovertemplate=f"<b>{leaf}</b><br>parent: {par}<br>point #%{{customdata}}<extra></extra>",
        )
        if first:
            trace["legendgrouptitle"] = dict(text=par)
        data.append(trace)
    return data


def _disk_tree_traces(pos: dict[str, np.ndarray], given: dict[str, np.ndarray], tree, c: float) -> list[dict]:
    """The tree over the disk: geodesic edges, leaf centroids, inner nodes (prototype or Fréchet mean), the root."""
    lcol = leaf_colors(tree)
    ncol = node_colors(tree)
    ex: list[float | None] = []
    ey: list[float | None] = []
    origin = np.zeros(2)
    for node in tree.nodes:
        par = tree.parent(node)
        if par is None or node not in pos:
            continue
        start = origin if par == tree.root else pos.get(par)
        if start is None:
            continue
        arc = geodesic(start, pos[node], c, n=48)
        ex += arc[:, 0].tolist() + [None]
        ey += arc[:, 1].tolist() + [None]
    leaves = [n for n in dfs_leaves(tree) if n in pos]
    inner = [n for n in tree.nodes if n in pos and not tree.is_leaf(n) and n != tree.root]
    kind = ["prototype" if n in given else "Fréchet mean of its points" for n in inner]
    return [
        dict(type="scatter", **_edge_lines(ex, ey, "tree edges", "rgba(40,40,40,0.75)", 1.6)),
        dict(
            type="scatter",
            x=[float(pos[n][0]) for n in leaves],
            y=[float(pos[n][1]) for n in leaves],
            mode="markers",
            name="leaf centroids",
            text=leaves,
            marker=dict(
                symbol="diamond", size=11, color=[lcol[n] for n in leaves], line=dict(color="black", width=1.2)
            ),
            hovertemplate="<b>%{text}</b><br>leaf centroid (Fréchet mean)<extra></extra>",
        ),
        dict(
            type="scatter",
            x=[float(pos[n][0]) for n in inner],
            y=[float(pos[n][1]) for n in inner],
            mode="markers+text",
            name="prototypes",
            text=inner,
            textposition="top center",
            customdata=kind,
            textfont=dict(size=12, color="#111111"),
            marker=dict(symbol="star", size=18, color=[ncol[n] for n in inner], line=dict(color="black", width=1.2)),
            hovertemplate="<b>%{text}</b><br>%{customdata}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=[0.0],
            y=[0.0],
            mode="markers+text",
            name="root",
            text=[tree.root],
            textposition="bottom center",
            marker=dict(symbol="circle", size=10, color="#555555", line=dict(color="black", width=1)),
            hovertemplate=f"<b>{tree.root}</b><br>root (origin)<extra></extra>",
        ),
    ]


def _disk_layout(Z: np.ndarray, c: float, title: str | None, n_shown: int) -> dict:
    """The layout of the disk figure: square axes over the ball, the default title and the radius caption."""
    N, d = Z.shape
    R = 1.0 / np.sqrt(c)
    reduced = d > 2
    radius_note = disk_radius_caption(Z, c)
    if title is None:
        title = f"Poincaré disk, curvature −{c:g} (radius 1/√c = {R:.3g})"
        notes = []
        if reduced:
            notes.append(f"d = {d} shown via logmap₀ → PCA(2) directions, each point at its own radius")
        if n_shown < N:
            notes.append(f"{n_shown} of {N} points shown")
        if notes:
            title += "<br><sup>" + "; ".join(notes) + "</sup>"
    lim = 1.06 * R
    return dict(
        template=_TEMPLATE,
        title=dict(text=title),
        height=650,
        legend=dict(title=dict(text="leaf (by parent)"), itemsizing="constant", groupclick="toggleitem"),
        xaxis=dict(range=[-lim, lim], showgrid=False, zeroline=False, constrain="domain"),
        yaxis=dict(range=[-lim, lim], showgrid=False, zeroline=False, scaleanchor="x", scaleratio=1),
        hovermode="closest",
        margin=dict(l=30, r=30, t=80, b=60),
        meta={
            "c": c,
            "radius": R,
            "reduced": bool(reduced),
            "n_points": int(N),
            "n_shown": int(n_shown),
            "caption": radius_note,
        },
        annotations=[
            dict(
                text=radius_note,
                xref="paper",
                yref="paper",
                x=0.0,
                y=-0.02,
                showarrow=False,
                align="left",
                yanchor="top",
            )
        ],
    )


def _poincare_disk_spec(
    z: Any,
    labels: Any,
    tree,
    prototypes: Any = None,
    proto_nodes: Any = None,
    c: float = DEFAULT_CURVATURE,
    title: str | None = None,
    max_points: int = 5000,
    show_tree: bool = True,
    seed: int = 0,
) -> tuple[list[dict], dict]:
    """:func:`plot_poincare_disk` as plain ``(data, layout)`` dicts (for figures that compose it)."""
    c, Z, y, given = _disk_inputs(z, labels, tree, prototypes, proto_nodes, c, max_points)
    N = Z.shape[0]
    Z2, pos = _disk_points_and_nodes(Z, y, tree, c, given, show_tree, seed)
    shown = np.arange(N)
    if N > max_points:
        shown = np.sort(np.random.default_rng(seed).choice(N, max_points, replace=False))
    # Plain trace dicts and one unvalidated go.Figure at the end (fast_figure): the panels of
    # notebooks 01 and 04 redraw this disk on every slider move, and plotly's per-property
    # validation was most of their kernel time. tests/test_widgets.py checks the result validates.
    data = _disk_point_traces(Z2, y, shown, tree, 1.0 / np.sqrt(c))
    if show_tree:
        data += _disk_tree_traces(pos, given, tree, c)
    return data, _disk_layout(Z, c, title, len(shown))


def disk_radius_caption(z: Any, c: float = DEFAULT_CURVATURE, boundary_tol: float = 1e-2) -> str:
    """One line on how the points use the radial direction, for a disk figure's caption.

    The geodesic radius ``d(0, z) = 2/√c · artanh(√c‖z‖)`` of the points: mean ± std, and
    the share within ``boundary_tol`` (in ``√c‖z‖``) of the boundary. It says so when the
    points sit at one spot (collapsed), on one sphere (saturated: std < 2 % of the mean)
    or near the centre.

    Parameters
    ----------
    z : array-like, shape (N, d)
        Points inside the ball of radius ``1/√c``.
    c : float, default 1.0
    boundary_tol : float, default 1e-2

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> a = np.linspace(0, 6, 5)
    >>> disk_radius_caption(0.964 * np.stack([np.cos(a), np.sin(a)], 1))  # hierviz 0.1's saturated head
    'radius d(0, z) = 4.00 ± 0.00; 0 % within 1 % of the boundary — saturated: every point sits on one sphere, so the radial direction carries no information'
    """
    c = _check_positive(c, "c")
    Z = check_in_ball(z, c, "z")
    rc = np.sqrt(c) * np.linalg.norm(Z, axis=1)
    r = 2.0 / np.sqrt(c) * np.arctanh(np.minimum(rc, 1 - 1e-16))
    mean, std = float(r.mean()), float(r.std())
    near = float((rc >= 1 - boundary_tol).mean())
    text = (
        f"radius d(0, z) = {mean:.2f} ± {std:.2f}; {100 * near:.0f} % within {100 * boundary_tol:.0f} % of the boundary"
    )
    spot = float(np.linalg.norm(Z - Z.mean(0), axis=1).max()) <= 1e-3 * max(
        float(np.linalg.norm(Z, axis=1).max()), 1e-12
    )
    if spot:
        text += " — collapsed: every point sits at (nearly) one spot, so the picture shows nothing"
    elif mean > 0 and std < 0.02 * mean:
        text += " — saturated: every point sits on one sphere, so the radial direction carries no information"
    elif mean < 0.05:
        text += " — near the centre, where the ball is almost flat"
    return text
