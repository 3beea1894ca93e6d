"""The hyperboloid (Lorentz) model in 3-D: the upper sheet x₀² − x₁² − x₂² = 1/c.

Curvature −c (c > 0, the hierviz convention). The Poincaré disk is the stereographic
projection of this sheet from (−1/√c, 0, 0) onto the plane x₀ = 0:
p = (x₁, x₂) / (1 + √c x₀), a point of the disk of radius 1/√c.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import plotly.graph_objects as go

from hierviz.geometry import DEFAULT_CURVATURE
from hierviz.viz.tree import _BASE as _PALETTE
from hierviz.viz.tree import _TEMPLATE, _as_points, _check_positive, _leaf_labels, dfs_leaves, leaf_colors, leaf_parent

__all__ = ["check_on_hyperboloid", "hyperboloid_to_disk", "plot_hyperboloid"]


def _curvature(c: float, k: float | None, who: str) -> float:
    """``c``, or the deprecated ``k`` (its name before 0.4) with a DeprecationWarning."""
    if k is None:
        return c
    warnings.warn(
        f"{who}(k=...) is deprecated; the curvature is c, as everywhere in hierviz", DeprecationWarning, stacklevel=3
    )
    return k


def check_on_hyperboloid(
    x: Any, c: float = DEFAULT_CURVATURE, name: str = "x", rtol: float = 1e-3, *, k: float | None = None
) -> np.ndarray:
    """Validate points of the upper hyperboloid sheet of curvature −c.

    Parameters
    ----------
    x : array-like or torch.Tensor, shape (N, 3)
        Points (x₀, x₁, x₂), time coordinate first (the geoopt / hierviz Lorentz layout).
    c : float > 0, default 1.0
    k : float, optional
        Deprecated name of ``c`` (before 0.4); warns.
    name : str
        Argument name for error messages.
    rtol : float
        Allowed relative error of the constraint, |x₀² − x₁² − x₂² − 1/c| ≤
        rtol · (1/c + ‖x‖²) (float32 points far out lose digits).

    Returns
    -------
    numpy.ndarray, float64, shape (N, 3)

    Raises
    ------
    ValueError
        Wrong shape, non-finite values, c ≤ 0, x₀ ≤ 0 (lower sheet), or a point off the
        sheet.
    """
    c = _check_positive(_curvature(c, k, "check_on_hyperboloid"), "c")
    X = _as_points(x, name, dim=3)
    if np.any(X[:, 0] <= 0):
        raise ValueError(
            f"{name} must lie on the upper sheet (x0 > 0); {int(np.sum(X[:, 0] <= 0))} point(s) have x0 <= 0"
        )
    lor = X[:, 0] ** 2 - X[:, 1] ** 2 - X[:, 2] ** 2
    err = np.abs(lor - 1.0 / c)
    bad = err > rtol * (1.0 / c + np.sum(X**2, axis=1))
    if np.any(bad):
        i = int(np.argmax(err))
        raise ValueError(
            f"{name} has {int(bad.sum())} point(s) off the hyperboloid x0² − x1² − x2² = 1/c = {1.0 / c:.4g} "
            f"(c = {c:g}); worst row {i} gives {lor[i]:.6g}. Project with Lorentz.proj or pass the matching c."
        )
    return X


def hyperboloid_to_disk(x: Any, c: float = DEFAULT_CURVATURE, *, k: float | None = None) -> np.ndarray:
    """Stereographic projection of hyperboloid points to the Poincaré disk.

    p = (x₁, x₂) / (1 + √c x₀); ‖p‖ < 1/√c.

    Parameters
    ----------
    x : array-like, shape (N, 3)
        Points on the sheet of curvature −c.
    c : float > 0
    k : float, optional
        Deprecated name of ``c`` (before 0.4); warns.

    Returns
    -------
    numpy.ndarray, float64, shape (N, 2)

    Raises
    ------
    ValueError
        As :func:`check_on_hyperboloid`.
    """
    c = _curvature(c, k, "hyperboloid_to_disk")
    X = check_on_hyperboloid(x, c)
    return X[:, 1:] / (1.0 + np.sqrt(c) * X[:, :1])


def _sheet_surface(X: np.ndarray, c: float) -> go.Surface:
    """The hyperboloid sheet x₀ = √(1/c + r²) as a translucent surface, out to past the farthest point."""
    rk = 1.0 / np.sqrt(c)
    rmax = max(1.5 * rk, 1.1 * float(np.max(np.linalg.norm(X[:, 1:], axis=1))))
    r, th = np.meshgrid(np.linspace(0, rmax, 40), np.linspace(0, 2 * np.pi, 73))
    return go.Surface(
        x=r * np.cos(th),
        y=r * np.sin(th),
        z=np.sqrt(1.0 / c + r**2),
        name="hyperboloid",
        opacity=0.25,
        showscale=False,
        colorscale=[[0, "#c9d6ea"], [1, "#7f97c2"]],
        hoverinfo="skip",
    )


def _point_groups(labels: Any, tree, N: int) -> list[tuple[str, np.ndarray, str, str]]:
    """The point groups drawn as one trace each: ``(name, mask (N,) bool, colour, hover text)``.

    One per leaf present (with ``tree``), per integer label (without it), or a single
    ``"points"`` group (without labels).

    Raises
    ------
    ValueError
        ``labels`` length ≠ N, out of range or negative.
    TypeError
        Non-integer ``labels`` without a tree.
    """
    groups: list[tuple[str, np.ndarray, str, str]] = []
    if labels is None:
        groups.append(("points", np.ones(N, bool), "#1f77b4", "point"))
    elif tree is not None:
        y = _leaf_labels(labels, tree, N)
        col = leaf_colors(tree)
        for leaf in dfs_leaves(tree):
            m = y == tree.leaf_index[leaf]
            if m.any():
                groups.append((leaf, m, col[leaf], f"<b>{leaf}</b><br>parent: {leaf_parent(tree, leaf)}"))
    else:
        y = np.asarray(labels.detach().cpu() if hasattr(labels, "detach") else labels)
        if y.ndim != 1 or y.shape[0] != N:
            raise ValueError(f"labels must have shape ({N},), got {y.shape}")
        if y.dtype.kind not in "iu":
            raise TypeError(f"labels must be integers, got dtype {y.dtype}")
        for j, v in enumerate(np.unique(y)):
            groups.append((f"label {int(v)}", y == v, _PALETTE[j % len(_PALETTE)], f"label {int(v)}"))
    return groups


def _add_disk(fig: go.Figure, X: np.ndarray, c: float, groups: list[tuple[str, np.ndarray, str, str]]) -> None:
    """The Poincaré disk in the plane x₀ = 0: its boundary and the points' stereographic images, coloured as their group."""
    rk = 1.0 / np.sqrt(c)
    N = X.shape[0]
    t = np.linspace(0, 2 * np.pi, 181)
    fig.add_trace(
        go.Scatter3d(
            x=rk * np.cos(t),
            y=rk * np.sin(t),
            z=np.zeros_like(t),
            mode="lines",
            name="disk boundary",
            line=dict(color="#333333", width=3),
            hoverinfo="skip",
        )
    )
    P = hyperboloid_to_disk(X, c)
    colors = np.empty(N, dtype=object)
    for _, m, color, _ in groups:
        colors[m] = color
    fig.add_trace(
        go.Scatter3d(
            x=P[:, 0],
            y=P[:, 1],
            z=np.zeros(N),
            mode="markers",
            name="disk points",
            marker=dict(size=2.5, color=list(colors), opacity=0.8),
            hoverinfo="skip",
        )
    )


def plot_hyperboloid(
    x: Any,
    labels: Any = None,
    tree=None,
    c: float = DEFAULT_CURVATURE,
    show_disk: bool = False,
    title: str | None = None,
    *,
    k: float | None = None,
) -> go.Figure:
    """3-D view of points on the hyperboloid sheet of curvature −c.

    Parameters
    ----------
    x : array-like or torch.Tensor, shape (N, 3)
        Lorentz points (x₀, x₁, x₂) with x₀² − x₁² − x₂² = 1/c, x₀ > 0 (e.g. the output
        of ``Lorentz(c).expmap0`` on 2-D tangent vectors).
    labels : array-like of int, shape (N,), optional
        Leaf indices (with ``tree``) or any integer class ids (without it).
    tree : hierviz.hierarchy.LabelTree, optional
        Gives leaf names and the family colours of :func:`hierviz.viz.tree.leaf_colors`.
    c : float > 0, default 1.0
        Curvature magnitude.
    k : float, optional
        Deprecated name of ``c`` (before 0.4); warns.
    show_disk : bool, default False
        Also draw the Poincaré disk (radius 1/√c, in the plane x₀ = 0) with the
        stereographic images of the points (:func:`hyperboloid_to_disk`).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Traces: ``"hyperboloid"`` (``go.Surface``), then one ``go.Scatter3d`` per leaf
        present (named by leaf; ``"label <i>"`` without a tree; a single ``"points"``
        without labels); with ``show_disk`` also ``"disk boundary"`` and ``"disk points"``.

    Raises
    ------
    ValueError
        Points off the sheet, c ≤ 0, ``labels`` length ≠ N / out of range / negative.
    """
    c = _check_positive(_curvature(c, k, "plot_hyperboloid"), "c")
    X = check_on_hyperboloid(x, c)
    fig = go.Figure(_sheet_surface(X, c))
    groups = _point_groups(labels, tree, X.shape[0])
    for name, m, color, hover in groups:
        idx = np.flatnonzero(m)
        fig.add_trace(
            go.Scatter3d(
                x=X[m, 1],
                y=X[m, 2],
                z=X[m, 0],
                mode="markers",
                name=name,
                customdata=idx,
                marker=dict(size=3.5, color=color, opacity=0.9),
                hovertemplate=hover + "<br>point #%{customdata}<br>x0 = %{z:.3f}<extra></extra>",
            )
        )
    if show_disk:
        _add_disk(fig, X, c, groups)
    fig.update_layout(
        template=_TEMPLATE,
        height=650,
        title=dict(
            text=title
            or f"Hyperboloid x₀² − x₁² − x₂² = 1/c, curvature −{c:g}"
            + ("<br><sup>with its stereographic image, the Poincaré disk (x₀ = 0)</sup>" if show_disk else "")
        ),
        scene=dict(xaxis_title="x₁", yaxis_title="x₂", zaxis_title="x₀", aspectmode="data"),
        legend=dict(itemsizing="constant"),
        margin=dict(l=0, r=0, t=70, b=0),
    )
    return fig
