"""Radius by tree depth: the figure that shows whether an embedding uses the radial direction."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from hierviz.metrics.radius import radius_report

__all__ = ["plot_radius_by_depth", "add_radius_traces"]


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
