"""The capstone's figures: the bar chart of a table (:func:`capstone_figure`) and the disk panel of its runs (:func:`run_disk_panel`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hierviz.viz._fast import fast_figure
from hierviz.viz.capstone.setting import (
    _GEOMETRY,
    _METHOD,
    CAPSTONE_METRICS,
    _label,
)
from hierviz.viz.disk import plot_poincare_disk


def run_disk_panel(results: Mapping[str, Any], geometry: str = "poincare", seed: int = 0, max_points: int = 300):
    """Dropdowns (dataset, method) over the Poincaré disk of every hyperbolic run of the capstone.

    Each figure is :func:`hierviz.viz.plot_poincare_disk` of the run's test embeddings (reduced to 2-D
    through logmap₀ → PCA → expmap₀ when d > 2) with the tree drawn from the origin. All of them are
    drawn when the panel is made (one per dataset × method), so a move only sends a stored figure.

    Parameters
    ----------
    results : mapping of dataset label to CompareResult
    geometry : str, default "poincare"
    seed : int, default 0
    max_points : int, default 300
        Test points drawn per run (a seeded subset; the Fréchet means use all of them).

    Returns
    -------
    hierviz.viz.widgets.Panel
        Controls ``"data"`` and ``"method"``.

    Raises
    ------
    ValueError
        No run of ``geometry`` in ``results``.
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported only when a panel is built

    from hierviz.viz.widgets import Panel  # heavy: ipywidgets (viz.widgets imports it)

    runs = {d: sorted({r["method"] for r in res.records if r["geometry"] == geometry}) for d, res in results.items()}
    runs = {d: m for d, m in runs.items() if m}
    if not runs:
        raise ValueError(f"no {geometry} run in results; the disk needs hyperbolic runs (geometries={geometry})")
    methods = sorted({m for ms in runs.values() for m in ms}, key=lambda m: [*_METHOD, m].index(m))
    # Every (dataset, method) figure is drawn here, once: a move only sends a stored figure (drawing
    # one on the first visit put the Fréchet means and the 2-D reduction in the redraw, 0.6 s).
    figures: dict[tuple[str, str], Any] = {}
    for data, ms in runs.items():
        res = results[data]
        for method in methods:
            if method not in ms:
                figures[(data, method)] = fast_figure(
                    [], {"title": {"text": f"{data}: no {_label(method)} run"}, "height": 300}
                )
                continue
            a = res.arrays(method, geometry, seed)
            rec = next(r for r in res.records if r["method"] == method and r["geometry"] == geometry)
            figures[(data, method)] = plot_poincare_disk(
                a["z_test"], a["y_test"], res.tree, c=float(rec.get("curvature") or 1.0), max_points=max_points,
                title=f"{data}: {_label(method)} ({_GEOMETRY.get(geometry, geometry)}, seed {seed}), test embeddings",
            )  # fmt: skip

    def update(data: str, method: str):
        return figures[(data, method)]

    style = {"description_width": "initial"}
    controls = {
        "data": widgets.Dropdown(options=list(runs), description="dataset", style=style),
        "method": widgets.Dropdown(options=[(_label(m), m) for m in methods], description="method", style=style),
    }
    return Panel(controls, update, "Every hyperbolic run in the disk")


def capstone_figure(rows: Sequence[Mapping[str, Any]], key: str = "hf1", title: str = "") -> Any:
    """Bars of ``key`` per method × geometry (± std over seeds), with the Majority and Chance levels as lines.

    Parameters
    ----------
    rows : sequence of dict
        :func:`capstone_rows`.
    key : str, default "hf1"
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per geometry; horizontal dashed lines ``"Majority class"`` and dotted ``"Chance"``.

    Examples
    --------
    >>> rows = [{"method": "supcon", "geometry": "poincare", "n": 2, "hf1": 0.5, "hf1_std": 0.1},
    ...         {"method": "majority", "geometry": "", "n": 0, "hf1": 0.52}, {"method": "chance", "geometry": "", "n": 0, "hf1": 0.3}]
    >>> [t.name for t in capstone_figure(rows).data]
    ['Poincaré', 'Majority class 0.520', 'Chance 0.300']
    """
    methods = [r for r in rows if r["method"] not in ("majority", "chance")]
    order = list(dict.fromkeys(_label(r["method"]) for r in methods))
    data: list[dict] = []
    for g in dict.fromkeys(r["geometry"] for r in methods):
        sel = [r for r in methods if r["geometry"] == g]
        data.append(
            dict(
                type="bar",
                x=[_label(r["method"]) for r in sel],
                y=[r[key] for r in sel],
                error_y=dict(type="data", array=[0.0 if not math.isfinite(r.get(f"{key}_std", math.nan)) else r[f"{key}_std"] for r in sel]),
                name=_GEOMETRY.get(g, g),
            )
        )  # fmt: skip
    for r, dash in (
        (r, "dash" if r["method"] == "majority" else "dot") for r in rows if r["method"] in ("majority", "chance")
    ):
        name = "Majority class" if r["method"] == "majority" else "Chance"
        data.append(
            dict(type="scatter", x=[order[0], order[-1]], y=[r[key]] * 2, mode="lines", name=f"{name} {r[key]:.3f}",
                 line=dict(dash=dash, color="black" if dash == "dash" else "grey", width=2))
        )  # fmt: skip
    label = CAPSTONE_METRICS.get(key, key)
    layout = dict(
        title=dict(text=title or f"{label} per method (mean ± std over seeds)"),
        yaxis=dict(title=dict(text=label), rangemode="tozero"),
        xaxis=dict(categoryorder="array", categoryarray=order),
        barmode="group",
        height=380,
        template="plotly_white",
    )
    return fast_figure(data, layout)
