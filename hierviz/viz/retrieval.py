"""Figures for Paper 03 (Hyper-DINO): query gallery, MAP@20 vs N, fp16 storage error, and the HCL margin panel.

* :func:`query_gallery_figure` -- a query image and its k nearest references, with labels
  and distances (Paper 03 §3.4, Figs. 4-5);
* :func:`map_vs_n_figure` -- MAP@k against the number of components N, one line per
  feature family (Fig. 3's shape), from :func:`hierviz.retrieval.run_retrieval`'s summary;
* :func:`storage_error_figure` -- the relative distance error of float16 storage against
  the radius of the stored points (:func:`hierviz.retrieval.storage_error_curve`);
* :func:`hcl_figure` / :func:`hcl_panel` -- draw a 2-D Hyperbolic Mapper trained with HCL at
  the given m0, α, λ (:func:`hierviz.retrieval.hcl_train`): the disk and the loss terms; the
  panel draws the slider grid trained ahead of time (:func:`hierviz.retrieval.hcl_grid`). This
  module draws what it is given and trains nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = [
    "query_gallery_figure",
    "map_vs_n_figure",
    "storage_error_figure",
    "hcl_figure",
    "hcl_panel",
]

_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def query_gallery_figure(
    query_image: np.ndarray,
    neighbour_images: np.ndarray,
    query_label: int,
    neighbour_labels: Any,
    distances: Any,
    classes: Any = None,
) -> go.Figure:
    """A query and its nearest references, each titled with class and distance (Paper 03 §3.4).

    Parameters
    ----------
    query_image : numpy.ndarray, shape (H, W, 3), uint8
    neighbour_images : numpy.ndarray, shape (k, H, W, 3), uint8
        Best first.
    query_label : int
    neighbour_labels : array-like of int, shape (k,)
    distances : array-like of float, shape (k,)
    classes : sequence of str, optional
        Class names; default the indices.

    Returns
    -------
    plotly.graph_objects.Figure
        One row: the query, then the k references; a ✓ marks a reference of the query's class.

    Raises
    ------
    ValueError
        Mismatched lengths.
    """
    nb = np.asarray(neighbour_images)
    yl, dl = np.asarray(neighbour_labels), np.asarray(distances, dtype=float)
    if not len(nb) == len(yl) == len(dl):
        raise ValueError(
            f"neighbour_images, neighbour_labels and distances differ in length: {len(nb)}, {len(yl)}, {len(dl)}"
        )
    name = (lambda i: str(classes[int(i)])) if classes is not None else (lambda i: str(int(i)))
    titles = [f"<b>query</b><br>{name(query_label)}"] + [
        f"{j + 1}: {name(y)} {'✓' if int(y) == int(query_label) else '✗'}<br>d={d:.3f}"
        for j, (y, d) in enumerate(zip(yl, dl))
    ]
    fig = make_subplots(rows=1, cols=len(nb) + 1, subplot_titles=titles, horizontal_spacing=0.01)
    for j, img in enumerate([np.asarray(query_image), *nb]):
        fig.add_trace(go.Image(z=img), row=1, col=j + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_annotations(font_size=10)
    fig.update_layout(height=230, width=110 * (len(nb) + 1), margin=dict(l=5, r=5, t=60, b=5))
    return fig


def map_vs_n_figure(summary: list[dict[str, Any]], k: int = 20, storage: str = "fp16") -> go.Figure:
    """MAP@k (mean ± std over folds) against N for each family (Paper 03 Fig. 3's shape).

    Parameters
    ----------
    summary : list of dict
        ``run_retrieval(...)["summary"]``.
    k : int, default 20
    storage : str, default "fp16"
        Which storage of the Hyper-DINO rows to draw.

    Returns
    -------
    plotly.graph_objects.Figure
        Lines ``PCA(N)``, ``Hyper-DINO(PCA(N), 32)``, ``Hyper-DINO(PCA(N), N)``, same for NCA.

    Raises
    ------
    ValueError
        No row has ``map@k_mean``.
    """
    key = f"map@{k}_mean"
    if not summary or key not in summary[0]:
        raise ValueError(f"summary has no {key!r}; run run_retrieval with k={k} in ks")
    families: dict[str, list[tuple[int, float, float]]] = {}
    chance = None
    for s in summary:
        if s["base"] == "chance":  # the random-ranking row: a horizontal line below
            chance = 100 * s[key]
            continue
        base = s["base"].upper()
        if s["dim_out"] == "":
            fam = f"{base}(N)"
        elif s["storage"] != storage:
            continue
        else:
            fam = f"Hyper-DINO({base}(N), {'N' if s['dim_out'] == s['n'] and s['dim_out'] != 32 else 32})"
        families.setdefault(fam, []).append((int(s["n"]), 100 * s[key], 100 * s[f"map@{k}_std"]))
    fig = go.Figure()
    for i, (fam, pts) in enumerate(sorted(families.items())):
        pts.sort()
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                error_y=dict(type="data", array=[p[2] for p in pts]),
                mode="lines+markers",
                name=fam,
                line=dict(color=_PALETTE[i % len(_PALETTE)], dash="dot" if fam.endswith("(N)") else "solid"),
            )
        )
    fig.update_layout(
        title=f"MAP@{k} vs N (mean ± std over folds; Hyper-DINO references stored {storage})",
        xaxis_title="N (components of PCA / NCA)",
        yaxis_title=f"MAP@{k} (%)",
        height=420,
    )
    if chance is not None:
        fig.add_hline(y=chance, line=dict(color="grey", dash="dash"), annotation_text="random ranking (chance)")
    return fig


def storage_error_figure(curve: dict[str, list[float]]) -> go.Figure:
    """Relative distance error against the stored points' radius, per storage (log scale).

    Parameters
    ----------
    curve : dict
        :func:`hierviz.retrieval.storage_error_curve` output.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    labels = {"fp32": "float32 coordinates", "fp16": "16-bit log₀ tangents", "fp16-ball": "float16 coordinates"}
    fig = go.Figure()
    x = [1 - r for r in curve["radius"]]
    for i, s in enumerate(k for k in labels if k in curve):
        fig.add_trace(go.Scatter(x=x, y=curve[s], mode="lines+markers", name=labels[s], line=dict(color=_PALETTE[i])))
    fig.update_xaxes(type="log", title="1 − ‖y‖ (distance of the stored point to the boundary)", autorange="reversed")
    fig.update_yaxes(type="log", title="p99 relative distance error")
    fig.update_layout(title="Storing Poincaré points in float16: tangents vs coordinates", height=400)
    return fig


def hcl_figure(m0: float = 0.5, alpha: float = 0.1, lam: float = 1e-3, *, result: dict[str, Any]) -> go.Figure:
    """Draw a 2-D Hyperbolic Mapper trained with HCL(m0, α, λ): a :func:`hierviz.retrieval.hcl_train` result.

    Left: the Poincaré disk with the embedded points by class, the mapper's radius cap and
    the final margin m; right: the loss terms per step. The title gives the final
    :math:`\\mathcal L_{pos}`, :math:`\\mathcal L_{neg}`, :math:`\\mathcal R_{norm}`, m, the clip fraction
    and the mean and largest norm of the points, the terms read from :class:`hierviz.losses.HCLLoss`
    evaluated on the drawn points by :func:`~hierviz.retrieval.hcl_train` (nothing re-implemented here).

    Parameters
    ----------
    m0, alpha, lam : float
        HCL hyperparameters (Paper 03 (Hyper-DINO) §2.3) of the run, shown in the title.
    result : dict
        What :func:`hierviz.retrieval.hcl_train` returns (or one entry of
        :func:`hierviz.retrieval.hcl_grid`, what :func:`hcl_panel` passes): ``h`` (n, 2) ball
        points, ``y`` (n,) labels, ``trace`` (3, steps), ``terms``, ``clip_fraction``, ``radius``.

    Returns
    -------
    plotly.graph_objects.Figure
        With ``fig.layout.meta`` = the final terms (dict): ``pos``, ``neg``, ``norm``,
        ``margin``, ``d_bar``, ``clip_fraction``, ``mean_norm``, ``max_norm``.

    Raises
    ------
    KeyError
        A ``result`` without one of the keys above.

    Examples
    --------
    >>> from hierviz.retrieval import hcl_train
    >>> fig = hcl_figure(0.5, 0.1, 1e-3, result=hcl_train(0.5, 0.1, 1e-3, steps=5))
    >>> sorted(fig.layout.meta)
    ['clip_fraction', 'd_bar', 'margin', 'max_norm', 'mean_norm', 'neg', 'norm', 'pos']
    """
    r = result
    h, Y = np.asarray(r["h"]), np.asarray(r["y"])
    norms = np.linalg.norm(h, axis=1)
    terms = {
        **r["terms"],
        "clip_fraction": r["clip_fraction"],
        "mean_norm": float(norms.mean()),
        "max_norm": float(norms.max()),
    }
    # Plain dicts, not make_subplots: the same two panels, drawn in a third of the time (a panel redraw).
    t = np.linspace(0, 2 * np.pi, 120)
    rad = r["radius"]
    data = [
        dict(type="scatter", x=np.cos(t), y=np.sin(t), mode="lines", line=dict(color="black"), name="boundary"),
        dict(
            type="scatter",
            x=rad * np.cos(t),
            y=rad * np.sin(t),
            mode="lines",
            line=dict(color="grey", dash="dot"),
            name="cap 1−δ",
        ),
    ]
    for c in np.unique(Y):
        sel = Y == c
        data.append(
            dict(
                type="scatter",
                x=h[sel, 0],
                y=h[sel, 1],
                mode="markers",
                marker=dict(size=5, color=_PALETTE[int(c) % 8]),
                name=f"class {c}",
            )
        )
    for i, key in enumerate(("pos", "neg", "norm")):
        data.append(
            dict(
                type="scatter",
                y=r["trace"][i],
                mode="lines",
                name=key,
                line=dict(color=_PALETTE[4 + i]),
                xaxis="x2",
                yaxis="y2",
            )
        )
    title = lambda text, x: dict(  # noqa: E731
        text=text, x=x, y=1.0, xref="paper", yref="paper", xanchor="center", yanchor="bottom", showarrow=False
    )
    fig = go.Figure(
        data=data,
        layout=dict(
            xaxis=dict(domain=[0.0, 0.5], range=[-1.05, 1.05]),
            yaxis=dict(range=[-1.05, 1.05], scaleanchor="x"),
            xaxis2=dict(domain=[0.6, 1.0], anchor="y2", title=dict(text="step")),
            yaxis2=dict(anchor="x2"),
            annotations=[title("Poincaré disk", 0.25), title("HCL terms per step", 0.8)],
            title=dict(
                text=(
                    f"m0={m0:g}, α={alpha:g}, λ={lam:g}: L_pos={terms['pos']:.3f}, L_neg={terms['neg']:.3f}, "
                    f"R_norm={terms['norm']:.3f}, m={terms['margin']:.2f}<br>mean ‖h‖ {terms['mean_norm']:.3f}, "
                    f"max ‖h‖ {terms['max_norm']:.3f} (cap {rad:.2f}), clipped {100 * terms['clip_fraction']:.0f}%"
                )
            ),
            height=450,
            margin=dict(t=90),
            meta=terms,
        ),
    )
    return fig


def hcl_panel(
    grid: dict[tuple[float, float, float], dict[str, Any]], m0: float = 0.5, alpha: float = 0.0, lam: float = 0.0
):
    """Sliders m0, α, λ over the settings of ``grid``, each position drawn by :func:`hcl_figure` (Paper 03 §2.3).

    Every slider position is a setting of the precomputed grid, so a move costs only the
    drawing (no training).

    Parameters
    ----------
    grid : dict
        ``(m0, α, λ) -> hcl_train(...)`` output, a full product of settings:
        :func:`hierviz.retrieval.hcl_grid` (m0 ∈ [0, 6] by 0.5, α ∈ [0, 1] by 0.25,
        λ ∈ {0, 0.1, 0.3, 1, 3, 10}; 60 steps on the toy blobs).
    m0, alpha, lam : float
        The first position (each snapped to the nearest setting of the grid).

    Returns
    -------
    hierviz.viz.widgets.Panel
        Controls ``"m0"``, ``"alpha"``, ``"lam"``: float sliders from the smallest to the largest
        m0 and α of the grid in the grid's steps, and a selection slider over its λ values.

    Raises
    ------
    ValueError
        An empty ``grid`` (``hcl_grid()`` is empty when its file is missing: rebuild it with
        :func:`hierviz.retrieval.write_hcl_grid`).
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported only when a panel is built

    from hierviz.viz.widgets import Panel, slider  # heavy: ipywidgets (viz.widgets imports it)

    if not grid:
        raise ValueError(
            "grid is empty: pass hierviz.retrieval.hcl_grid() (its file is rebuilt by hierviz.retrieval.write_hcl_grid)"
        )
    m0s, alphas, lams = (sorted({float(key[i]) for key in grid}) for i in range(3))

    def step(values: list[float]) -> float:
        return float(np.diff(values).min()) if len(values) > 1 else 1.0

    def nearest(values: list[float], v: float) -> float:
        return min(values, key=lambda u: abs(u - v))

    controls = {
        "m0": slider("base margin m0", nearest(m0s, m0), m0s[0], m0s[-1], step(m0s)),
        "alpha": slider("α (× mean distance)", nearest(alphas, alpha), alphas[0], alphas[-1], step(alphas)),
        "lam": widgets.SelectionSlider(
            options=[(f"{v:g}", v) for v in lams],
            value=nearest(lams, lam),
            description="λ (norm penalty)",
            continuous_update=False,
            style={"description_width": "initial"},
        ),
    }

    def update(m0: float, alpha: float, lam: float) -> go.Figure:
        key = (nearest(m0s, m0), nearest(alphas, alpha), nearest(lams, lam))
        return hcl_figure(*key, result=grid[key])

    return Panel(controls, update, "HCL: dynamic margin m = m0 + α·d̄ and norm penalty λ (precomputed grid)")
