r"""The radius panel of notebook 12: one trained setting of a :class:`hierviz.training.RadiusToyGrid` per slider position.

:func:`radius_figure` draws one setting (disk + radius by depth), :func:`radius_panel` wires
sliders to it. The grid is trained before the panel is built (:mod:`hierviz.training.toys`), so a
slider move only looks a finished embedding up and draws it: nothing here steps an optimiser.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go

from hierviz.geometry import DEFAULT_CURVATURE
from hierviz.losses import DEFAULT_TAU
from hierviz.viz.disk import plot_poincare_disk
from hierviz.viz.radius import add_radius_traces
from hierviz.viz.widgets.panel import Panel, slider

if TYPE_CHECKING:  # annotations only: viz draws what training made, it does not import training
    from hierviz.training.toys import RadiusToyGrid

__all__ = ["radius_figure", "radius_panel"]


def radius_figure(
    grid: RadiusToyGrid, kind: str, clip_r: float, log10_scale: float | None, tau: float, cone: float
) -> go.Figure:
    """One trained setting of ``grid``: the Poincaré disk (left) and the radius by tree depth (right).

    Parameters
    ----------
    grid : hierviz.training.RadiusToyGrid
        The trained grid.
    kind : {"clip", "tanh", "tanh + auto scale"}
    clip_r : float
        Bound radius ρ (nearest grid value).
    log10_scale : float or None
        log₁₀ of the initial scale (ignored for auto).
    tau : float
    cone : float
        Cone weight.

    Returns
    -------
    plotly.graph_objects.Figure
        The disk's traces (stars: the grid's tangent-mean node prototypes), then ``"prototypes"``
        and ``"samples (± std)"`` of the radius plot (:meth:`RadiusToyGrid.metrics`) on ``x2``/``y2``;
        the title names the setting, the scale before → after training and four radius
        metrics; ``layout.meta`` holds them.

    Raises
    ------
    ValueError
        Unknown ``kind``.
    """
    out = grid.metrics(kind, clip_r, log10_scale, tau, cone)
    z, _ = grid.get(kind, clip_r, log10_scale, tau, cone)
    rep, met = out["report"], out["metrics"]
    # the disk figure gets a second pair of axes on its right (cheaper than make_subplots + copying traces)
    tree = grid.tree
    nodes = [n for n in range(tree.num_nodes) if tree.nodes[n] != tree.root]
    protos = out["node_z"][nodes]
    # the tangent-mean prototypes are given, so the disk computes no Fréchet means on a slider move
    fig = plot_poincare_disk(
        z, grid.labels.numpy(), tree, prototypes=protos, proto_nodes=[tree.nodes[n] for n in nodes], c=DEFAULT_CURVATURE
    )
    n_disk = len(fig.data)
    add_radius_traces(fig, rep["radius_by_depth"])
    top = rep["max_radius"]
    fig.add_scatter(
        x=[0, grid.tree.height],
        y=[top, top],
        mode="lines",
        line=dict(dash="dash", color="#999999"),
        name=f"bound radius {top:.2f}",
    )
    for tr in fig.data[n_disk:]:
        tr.update(xaxis="x2", yaxis="y2")
    k = out["setting"]
    scale = "auto" if k[2] is None else f"10^{k[2]:g}"
    title = (
        f"{k[0]}, ρ = {k[1]:g}, initial scale {scale}, τ = {k[3]:g}, cone weight {k[4]:g}: "
        f"scale {math.exp(out['log_scale0']):.3g} → {math.exp(out['log_scale']):.3g}"
        f"<br><sup>clip fraction {met['clip_fraction']:.2f} · radius_depth_spearman "
        f"{met['radius_depth_spearman']:.2f} · edge_order {met['edge_order']:.2f} · radius_gap "
        f"{met['radius_gap']:.2f} · mean d(0, z) {rep['radius_mean']:.2f} ± {rep['radius_std']:.2f}</sup>"
    )
    fig.update_layout(
        height=520,
        title=title,
        margin=dict(t=100),
        xaxis=dict(domain=[0.0, 0.52]),
        xaxis2=dict(domain=[0.62, 1.0], anchor="y2", title="tree depth (0 = root)", dtick=1),
        yaxis2=dict(anchor="x2", title="d(0, ·)", range=[0, 1.05 * 2 * max(grid.clip_rs)]),
        meta={"setting": list(k), "metrics": met, "log_scale": out["log_scale"]},
    )
    return fig


def radius_panel(
    grid: RadiusToyGrid,
    *,
    kind: str = "clip",
    clip_r: float = 3.0,
    log10_scale: float = 0.0,
    tau: float = DEFAULT_TAU,
    cone: float = 0.0,
) -> Panel:
    """Sliders for the bound ρ, the initial scale, τ and the cone weight, and a head dropdown, over :func:`radius_figure`.

    Every setting is trained when the grid is built (:class:`hierviz.training.RadiusToyGrid`, a
    few seconds); a slider move only looks the embedding up and draws it.

    Parameters
    ----------
    grid : hierviz.training.RadiusToyGrid
        The trained grid; its value lists are the sliders' steps.
    kind, clip_r, log10_scale, tau, cone
        Initial values (nearest grid values are used).

    Returns
    -------
    Panel
        Controls ``"kind"`` (dropdown), ``"clip_r"``, ``"log10_scale"``, ``"tau"``, ``"cone"``.

    Raises
    ------
    ValueError
        Unknown ``kind``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> from hierviz.training import RadiusToyGrid
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> grid = RadiusToyGrid(tree, clip_rs=[2.0, 3.0], log_scales=[0.0], taus=[0.1], cones=[0.0], steps=5)
    >>> panel = radius_panel(grid, kind="tanh")
    >>> sorted(panel.controls), panel.controls["clip_r"].value
    (['clip_r', 'cone', 'kind', 'log10_scale', 'tau'], 3.0)
    """
    k = grid.key(kind, clip_r, log10_scale, tau, cone)  # checks kind

    def rng(vals):
        vals = sorted(vals)
        step = min(np.diff(vals)) if len(vals) > 1 else 1.0
        return vals[0], vals[-1], float(step)

    lo, hi, st = rng(grid.clip_rs)
    controls = {
        "kind": widgets.Dropdown(options=list(grid.kinds), value=kind, description="head"),
        "clip_r": slider("bound ρ", k[1], lo, max(hi, lo + st), st),
    }
    lo, hi, st = rng(grid.log_scales)
    controls["log10_scale"] = slider("log₁₀ initial scale", k[2] if k[2] is not None else hi, lo, max(hi, lo + st), st)
    lo, hi, st = rng(grid.taus)
    controls["tau"] = slider("τ", k[3], lo, max(hi, lo + st), st)
    lo, hi, st = rng(grid.cones)
    controls["cone"] = slider("cone weight", k[4], lo, max(hi, lo + st), st)
    return Panel(
        controls,
        lambda kind, clip_r, log10_scale, tau, cone: radius_figure(grid, kind, clip_r, log10_scale, tau, cone),
        "The head's bound, its initial scale, τ and the cone term (a 2-D toy, every setting trained in advance)",
    )
