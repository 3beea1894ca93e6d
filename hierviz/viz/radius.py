"""Radius by tree depth: the figure that shows whether an embedding uses the radial direction."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from hierviz.metrics.radius import radius_report

__all__ = ["plot_radius_by_depth", "add_radius_traces", "plot_node_radii"]


def plot_radius_by_depth(
    z: Any,
    labels: Any,
    tree: Any,
    geometry: Any,
    *,
    clip_r: float | None = None,
    name: str = "",
    title: str | None = None,
    fig: go.Figure | None = None,
) -> go.Figure:
    """Geodesic distance to the origin of prototypes and samples, against tree depth.

    A line of prototype radius (one Fréchet mean per node, averaged over the nodes of each
    depth, :func:`hierviz.metrics.radius_report`) and markers of sample radius (mean ± std
    of the points whose leaf lies at that depth). In a hyperbolic embedding that encodes
    the tree, the line rises from the root (depth 0) to the leaves. A flat line at the top
    is a saturated head; a flat line at zero is a collapsed one.

    Parameters
    ----------
    z : array-like, shape (n, D)
        Embeddings on ``geometry``.
    labels : array-like of int, shape (n,)
        Leaf indices.
    tree : LabelTree
    geometry : Geometry
    clip_r : float, optional
        The head's clip radius; the figure then draws the clip radius as a dashed line.
    name : str
        Legend prefix (to overlay several embeddings with ``fig=``).
    title : str, optional
    fig : plotly Figure, optional
        Add the traces to this figure.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``"<name> prototypes"`` and ``"<name> samples (± std)"``; ``layout.meta``
        holds the radius report (``clip_fraction``, ``radius_by_depth`` …).

    Raises
    ------
    ValueError, TypeError
        As :func:`hierviz.metrics.radius_report`.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> ang = torch.tensor([0.0, 0.4, 3.0, 3.4], dtype=torch.float64)
    >>> z = PoincareBall().expmap0(1.5 * torch.stack([ang.cos(), ang.sin()], -1))
    >>> fig = plot_radius_by_depth(z, [0, 1, 2, 3], tree, PoincareBall())
    >>> [round(v, 2) for v in fig.data[0].y]  # prototype radius rises with depth
    [0.07, 2.19, 3.0]
    """
    rep = radius_report(z, labels, tree, geometry, clip_r=clip_r)
    fig = add_radius_traces(fig if fig is not None else go.Figure(), rep["radius_by_depth"], name)
    top = rep["max_radius"]
    if top is not None and top != float("inf"):
        fig.add_hline(y=top, line=dict(dash="dash", color="#999999"), annotation_text="clip radius")
    cf = rep["clip_fraction"]
    sub = f"{100 * cf:.0f} % of the points at the clip radius" if cf is not None else "unit sphere (no clip radius)"
    fig.update_layout(
        title=title or f"Radius by tree depth: d(0, ·) of prototypes and samples<br><sup>{sub}</sup>",
        xaxis=dict(title="tree depth (0 = root)", dtick=1),
        yaxis=dict(title="geodesic distance to the origin", rangemode="tozero"),
        height=420,
        meta=rep,
    )
    return fig


def add_radius_traces(fig: go.Figure, rows: list[dict], name: str = "") -> go.Figure:
    """Add the prototype line and the sample markers of one ``radius_by_depth`` list to ``fig``.

    Parameters
    ----------
    fig : plotly Figure
    rows : list of dict
        ``radius_report(...)["radius_by_depth"]`` (``depth``, ``proto_mean``, ``sample_mean``,
        ``sample_std``); entries that are ``None`` are skipped.
    name : str
        Legend prefix and legend group.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig``, with traces ``"<name>: prototypes"`` and ``"<name>: samples (± std)"``.
    """
    prefix = f"{name}: " if name else ""
    p = [r for r in rows if r.get("proto_mean") is not None]
    fig.add_trace(
        go.Scatter(
            x=[r["depth"] for r in p],
            y=[r["proto_mean"] for r in p],
            mode="lines+markers",
            name=f"{prefix}prototypes",
            legendgroup=name or None,
            hovertemplate="depth %{x}: prototype radius %{y:.3f}<extra></extra>",
        )
    )
    smp = [r for r in rows if r.get("sample_mean") is not None]
    fig.add_trace(
        go.Scatter(
            x=[r["depth"] for r in smp],
            y=[r["sample_mean"] for r in smp],
            error_y=dict(type="data", array=[r.get("sample_std") or 0.0 for r in smp], visible=True),
            mode="markers",
            marker=dict(symbol="circle-open", size=11),
            name=f"{prefix}samples (± std)",
            legendgroup=name or None,
        )
    )
    return fig


def plot_node_radii(rows: Any, title: str | None = None) -> go.Figure:
    """Every node's prototype radius against its depth, the tree's edges drawn, one shade per seed.

    A dot per (node, seed) at (depth, d(0, prototype)), jittered sideways by seed, and a line
    from each node to its parent: where every line climbs from left to right, every parent
    lies nearer the origin than its children (``edge_order`` 1); where the dots of each depth
    sit above those of the depth before, the depth ranking is perfect
    (``radius_depth_spearman`` 1). Hovering names the node.

    Parameters
    ----------
    rows : iterable of mappings
        One per node and seed, with ``node`` (str), ``depth`` (int), ``parent`` (str, "" for
        the root), ``radius`` (float, geodesic units) and optionally ``seed`` (int, default 0);
        e.g. the rows of ``docs/results/radius-20news/prototypes.csv`` for one method and
        geometry, or :func:`hierviz.metrics.node_prototype_radii` with the node names filled in.
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    ValueError
        No rows, or a parent that is not among the rows of its seed.

    Examples
    --------
    >>> rows = [dict(node="r", depth=0, parent="", radius=0.0), dict(node="a", depth=1, parent="r", radius=1.0),
    ...         dict(node="a1", depth=2, parent="a", radius=2.1)]
    >>> fig = plot_node_radii(rows)
    >>> [t.name for t in fig.data]
    ['seed 0', 'seed 0: edges']
    """
    by_seed: dict[int, list[dict]] = {}
    for r in rows:
        s = int(r.get("seed", 0) or 0)
        by_seed.setdefault(s, []).append(
            {
                "node": str(r["node"]),
                "depth": int(r["depth"]),
                "parent": str(r.get("parent") or ""),
                "radius": float(r["radius"]),
            }
        )
    if not by_seed:
        raise ValueError("rows: no node radii to plot")
    fig = go.Figure()
    seeds = sorted(by_seed)
    for i, s in enumerate(seeds):
        pts = by_seed[s]
        dx = 0.0 if len(seeds) == 1 else 0.25 * (i / (len(seeds) - 1) - 0.5)
        where = {p["node"]: (p["depth"] + dx, p["radius"]) for p in pts}
        ex, ey = [], []
        for p in pts:
            if not p["parent"]:
                continue
            if p["parent"] not in where:
                raise ValueError(f"rows: node {p['node']!r} (seed {s}) has parent {p['parent']!r}, which has no row")
            (x0, y0), (x1, y1) = where[p["parent"]], where[p["node"]]
            ex += [x0, x1, None]
            ey += [y0, y1, None]
        color = f"hsl({int(210 + 120 * i / max(1, len(seeds) - 1))}, 60%, 45%)"
        fig.add_trace(
            go.Scatter(
                x=[where[p["node"]][0] for p in pts],
                y=[p["radius"] for p in pts],
                mode="markers",
                marker=dict(size=7, color=color),
                text=[p["node"] for p in pts],
                name=f"seed {s}",
                legendgroup=f"seed {s}",
                hovertemplate="%{text}: radius %{y:.3f}<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=ex,
                y=ey,
                mode="lines",
                line=dict(width=0.8, color=color),
                opacity=0.45,
                name=f"seed {s}: edges",
                legendgroup=f"seed {s}",
                showlegend=False,
                hoverinfo="skip",
            )
        )
    depths = sorted({p["depth"] for pts in by_seed.values() for p in pts})
    fig.update_layout(
        title=title or "Prototype radius by depth",
        xaxis=dict(title="tree depth (root 0)", tickvals=depths),
        yaxis=dict(title="geodesic distance to the origin d(0, μ)", rangemode="tozero"),
        template="plotly_white",
    )
    return fig
