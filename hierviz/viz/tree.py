"""Label-tree figures and the colour scheme shared by every hierviz figure.

Colours: every leaf gets a shade of its *parent's* colour family (benign subtypes in
blues, malignant subtypes in reds for the BreakHis tree of paper 01 Fig. 1), so that a
figure shows the hierarchy before any edge is drawn. :func:`leaf_colors` is deterministic
for a given tree, so the same leaf has the same colour in every figure of a notebook or
report.

This module also holds the small input-validation helpers the other ``hierviz.viz``
modules share (points, leaf labels, curvature).
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from hierviz.hierarchy import dfs_leaves, leaf_parent

# point-cloud checks live with the 2-D projections (hierviz.metrics.projection); re-exported here
from hierviz.metrics.projection import _as_points, _to_numpy  # noqa: F401

__all__ = [
    "leaf_colors",
    "family_colors",
    "node_colors",
    "leaf_parent",
    "dfs_leaves",
    "tree_layout",
    "plot_tree",
]

# D3 / Tableau-10 base hues (grey last: it is the least distinguishable family colour).
_BASE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
_NEUTRAL = "#555555"
_TEMPLATE = "plotly_white"


# --------------------------------------------------------------------------- helpers
def _edge_lines(ex: list, ey: list, name: str, color: str, width: float, **extra: Any) -> dict[str, Any]:
    """Keyword arguments of one plotly line trace drawing tree edges (``None`` between segments), no hover."""
    return dict(x=ex, y=ey, mode="lines", name=name, line=dict(color=color, width=width), hoverinfo="skip", **extra)


def _check_positive(value: Any, name: str) -> float:
    """A finite float > 0 (curvature, temperature) or ValueError naming it."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from exc
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def _check_nonneg(value: Any, name: str) -> float:
    """A finite float >= 0 (α, γ, margins) or ValueError naming it."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from exc
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def _leaf_labels(labels: Any, tree, n: int | None = None, name: str = "labels") -> np.ndarray:
    """Leaf indices (ints in [0, C)) or leaf names → int64 array of shape (N,).

    Raises ValueError if the length differs from ``n`` (the number of points) or an index
    is out of range, TypeError for float / bool labels.
    """
    if isinstance(labels, str):
        raise TypeError(f"{name} must be a sequence of leaf indices or leaf names, got a single string")
    arr = _to_numpy(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (N,), got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]} but there are {n} points; they must match")
    if arr.dtype.kind in "USO":
        names = [str(a) for a in arr.tolist()]
        unknown = sorted(set(names) - set(tree.leaves))
        if unknown:
            raise ValueError(f"{name} contains names that are not leaves of the tree: {unknown[:10]}")
        return np.asarray([tree.leaf_index[a] for a in names], dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer leaf indices (0..C-1) or leaf names, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    C = len(tree.leaves)
    if arr.size and (arr.min() < 0 or arr.max() >= C):
        bad = arr[(arr < 0) | (arr >= C)]
        raise ValueError(f"{name} must be leaf indices in [0, {C - 1}], found {sorted(set(bad.tolist()))[:10]}")
    return arr


def _families(tree) -> dict[str, list[str]]:
    """parent name → its leaf children, parents in order of first leaf in ``dfs_leaves``."""
    fam: dict[str, list[str]] = {}
    for leaf in dfs_leaves(tree):
        fam.setdefault(leaf_parent(tree, leaf), []).append(leaf)
    return fam


def _hex_to_rgb(h: str) -> tuple[float, float, float]:
    h = h.lstrip("#")
    return tuple(int(h[i : i + 2], 16) / 255.0 for i in (0, 2, 4))  # type: ignore[return-value]


def _rgb_to_hex(rgb: Sequence[float]) -> str:
    return "#" + "".join(f"{int(round(min(max(v, 0.0), 1.0) * 255)):02x}" for v in rgb)


def _base_color(i: int) -> str:
    if i < len(_BASE):
        return _BASE[i]
    # beyond the palette: golden-ratio hue steps, medium lightness and saturation
    hue = (0.11 + 0.618033988749895 * i) % 1.0
    return _rgb_to_hex(colorsys.hls_to_rgb(hue, 0.45, 0.65))


def _shades(base: str, n: int) -> list[str]:
    """``n`` shades of ``base``, dark → light, all readable on white."""
    if n == 1:
        return [base]
    h, l, s = colorsys.rgb_to_hls(*_hex_to_rgb(base))
    lo, hi = max(0.18, l - 0.18), min(0.72, l + 0.24)
    return [_rgb_to_hex(colorsys.hls_to_rgb(h, li, s)) for li in np.linspace(lo, hi, n)]


def family_colors(tree) -> dict[str, str]:
    """Base colour (hex) of each leaf-parent ("family"), in tree order.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree

    Returns
    -------
    dict of str to str
        parent name → ``"#rrggbb"``. The first ten families use the D3 palette
        (blue, red, green, purple, ...), further ones golden-ratio hue steps.
    """
    return {p: _base_color(i) for i, p in enumerate(_families(tree))}


def leaf_colors(tree) -> dict[str, str]:
    """One colour per leaf: shades of the parent's family colour.

    Deterministic for a given tree, so every hierviz figure colours a leaf the same way.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree

    Returns
    -------
    dict of str to str
        leaf name → ``"#rrggbb"`` for all ``tree.num_leaves`` leaves. Siblings get
        distinct shades (dark → light in tree order) of one hue.

    Examples
    --------
    For the BreakHis tree (paper 01 Fig. 1) the four benign subtypes are blues and the
    four malignant subtypes are reds.
    """
    out: dict[str, str] = {}
    for i, (_, leaves) in enumerate(_families(tree).items()):
        for leaf, col in zip(leaves, _shades(_base_color(i), len(leaves))):
            out[leaf] = col
    return out


def node_colors(tree) -> dict[str, str]:
    """A colour for every node: leaves as :func:`leaf_colors`, leaf-parents their family
    colour, every other internal node (root, grandparents) a neutral grey.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree

    Returns
    -------
    dict of str to str
        node name → ``"#rrggbb"`` for all ``tree.num_nodes`` nodes.
    """
    out = {n: _NEUTRAL for n in tree.nodes}
    fam = family_colors(tree)
    out.update({p: c for p, c in fam.items() if not tree.is_leaf(p)})
    out.update(leaf_colors(tree))
    return out


# --------------------------------------------------------------------------- layout
def tree_layout(tree, layout: str = "rows") -> dict[str, tuple[float, float]]:
    """2-D positions for drawing the tree.

    Leaves are spaced evenly in depth-first order (:func:`dfs_leaves`); an internal
    node sits at the mean position of its children. A node's depth is its row
    (``layout="rows"``: root on top at y = 0, depth ℓ at y = −ℓ) or its ring
    (``layout="radial"``: root at the centre, depth ℓ on the circle of radius ℓ).
    Shallow leaves of an unbalanced tree stay on their own depth.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    layout : {"rows", "radial"}

    Returns
    -------
    dict of str to (float, float)
        node name → (x, y).

    Raises
    ------
    ValueError
        If ``layout`` is not one of the two names.
    """
    if layout not in ("rows", "radial"):
        raise ValueError(f"layout must be 'rows' or 'radial', got {layout!r}")
    leaves = dfs_leaves(tree)
    C = len(leaves)
    slot: dict[str, float] = {leaf: float(i) for i, leaf in enumerate(leaves)}
    # internal nodes bottom-up: deepest first
    for node in sorted(tree.nodes, key=lambda n: -tree.depth(n)):
        if node not in slot:
            kids = tree.children(node)
            slot[node] = float(np.mean([slot[k] for k in kids]))
    pos: dict[str, tuple[float, float]] = {}
    for node in tree.nodes:
        d = float(tree.depth(node))
        if layout == "rows":
            pos[node] = (slot[node], -d)
        else:
            theta = 2 * np.pi * slot[node] / max(C, 1)
            pos[node] = (d * np.cos(theta), d * np.sin(theta))
    return pos


def plot_tree(tree, layout: str = "auto", title: str | None = None) -> go.Figure:
    """Draw a label tree with plotly: levels as rows (or rings), node names as labels.

    Node colours follow :func:`node_colors` (leaves in their family's shades, so the
    drawing doubles as the legend of every other hierviz figure). Hovering a node shows
    its name, depth and number of leaves below it.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    layout : {"auto", "rows", "radial"}, default "auto"
        ``"auto"`` uses rows for at most 20 leaves, rings beyond (row labels overlap).
    title : str, optional
        Figure title; default names the tree size and height L.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces: ``"edges"`` (one line trace) then one marker+text trace per level,
        named ``"level 0"``, ``"level 1"``, ... ``"level L"``.

    Raises
    ------
    ValueError
        If ``layout`` is unknown.
    """
    if layout == "auto":
        layout = "rows" if tree.num_leaves <= 20 else "radial"
    pos = tree_layout(tree, layout)
    colors = node_colors(tree)
    ex: list[float | None] = []
    ey: list[float | None] = []
    for node in tree.nodes:
        par = tree.parent(node)
        if par is None:
            continue
        (x0, y0), (x1, y1) = pos[par], pos[node]
        ex += [x0, x1, None]
        ey += [y0, y1, None]
    fig = go.Figure()
    fig.add_trace(go.Scatter(**_edge_lines(ex, ey, "edges", "#b0b0b0", 1.5, showlegend=False)))
    levels = tree.levels()
    for lvl, names in enumerate(levels):
        if not names:
            continue
        xs = [pos[n][0] for n in names]
        ys = [pos[n][1] for n in names]
        nleaves = [len(tree.leaves_under(n)) if not tree.is_leaf(n) else 1 for n in names]
        if layout == "rows":
            textpos = "bottom center" if lvl == len(levels) - 1 else "top center"
        else:
            textpos = "middle right"
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers+text",
                name=f"level {lvl}",
                text=names,
                textposition=textpos,
                textfont=dict(size=11),
                marker=dict(
                    size=14 if lvl < len(levels) - 1 else 11,
                    color=[colors[n] for n in names],
                    line=dict(color="white", width=1),
                ),
                customdata=np.array([[lvl, k] for k in nleaves]),
                hovertemplate="<b>%{text}</b><br>depth %{customdata[0]}<br>%{customdata[1]} leaf/leaves below<extra></extra>",
            )
        )
    L = tree.height
    fig.update_layout(
        template=_TEMPLATE,
        title=title or f"Label tree: {tree.num_nodes} nodes, {tree.num_leaves} leaves, height L = {L}",
        showlegend=False,
        hovermode="closest",
        margin=dict(l=20, r=20, t=60, b=20),
        xaxis=dict(visible=False),
        yaxis=dict(visible=False),
    )
    if layout == "rows":
        span = max(tree.num_leaves - 1, 1)
        fig.update_xaxes(range=[-0.6, span + 0.6])
        fig.update_yaxes(range=[-L - 0.6, 0.5])
    else:
        fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig
