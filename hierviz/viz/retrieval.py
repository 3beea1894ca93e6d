"""Figures for Paper 03 (Hyper-DINO): query gallery, MAP@20 vs N, fp16 storage error, and the HCL margin panel.

* :func:`query_gallery_figure` -- a query image and its k nearest references, with labels
  and distances (Paper 03 §3.4, Figs. 4-5);
* :func:`map_vs_n_figure` -- MAP@k against the number of components N, one line per
  feature family (Fig. 3's shape), from :func:`hierviz.retrieval.run_retrieval`'s summary;
* :func:`storage_error_figure` -- the relative distance error of float16 storage against
  the radius of the stored points (:func:`hierviz.retrieval.storage_error_curve`);
* :func:`hcl_figure` / :func:`hcl_panel` -- train a 2-D Hyperbolic Mapper with HCL for a
  few steps at the given m0, α, λ and draw the disk and the loss terms (sliders).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

__all__ = [
    "query_gallery_figure",
    "map_vs_n_figure",
    "storage_error_figure",
    "hcl_toy_features",
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
    labels = {"fp32": "float32 coordinates", "fp16": "float16 log₀ tangents", "fp16-ball": "float16 coordinates"}
    fig = go.Figure()
    x = [1 - r for r in curve["radius"]]
    for i, s in enumerate(k for k in labels if k in curve):
        fig.add_trace(go.Scatter(x=x, y=curve[s], mode="lines+markers", name=labels[s], line=dict(color=_PALETTE[i])))
    fig.update_xaxes(type="log", title="1 − ‖y‖ (distance of the stored point to the boundary)", autorange="reversed")
    fig.update_yaxes(type="log", title="p99 relative distance error")
    fig.update_layout(title="Storing Poincaré points in float16: tangents vs coordinates", height=400)
    return fig


def hcl_toy_features(
    n_per_class: int = 40, classes: int = 4, dim: int = 8, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs standing in for frozen features (one blob per class).

    Returns
    -------
    x : numpy.ndarray, shape (classes·n_per_class, dim), float32
    y : numpy.ndarray, shape (classes·n_per_class,), int64

    Examples
    --------
    >>> x, y = hcl_toy_features(5, 3, 4)
    >>> x.shape, sorted(set(y.tolist()))
    ((15, 4), [0, 1, 2])
    """
    g = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), n_per_class)
    centres = 2.0 * g.normal(size=(classes, dim))
    x = centres[y] + g.normal(size=(len(y), dim))
    return x.astype(np.float32), y.astype(np.int64)


def hcl_figure(
    m0: float = 0.5,
    alpha: float = 0.1,
    lam: float = 1e-3,
    *,
    x: Any = None,
    y: Any = None,
    steps: int = 60,
    lr: float = 1e-2,
    seed: int = 0,
) -> go.Figure:
    """Train a 2-D Hyperbolic Mapper with HCL(m0, α, λ) for ``steps`` full-batch Adam steps and draw it.

    Left: the Poincaré disk with the embedded points by class, the mapper's radius cap and
    the final margin m; right: the loss terms per step. The title gives the final
    :math:`\\mathcal L_{pos}`, :math:`\\mathcal L_{neg}`, :math:`\\mathcal R_{norm}`, m and the clip fraction,
    all read from :class:`hierviz.losses.HCLLoss` (nothing re-implemented here).

    Parameters
    ----------
    m0, alpha, lam : float
        HCL hyperparameters (Paper 03 (Hyper-DINO) §2.3).
    x, y : array-like, optional
        Features (n, D) and labels (n,); default :func:`hcl_toy_features`.
    steps : int, default 60
    lr : float, default 1e-2
    seed : int, default 0

    Returns
    -------
    plotly.graph_objects.Figure
        With ``fig.layout.meta`` = the final terms (dict).

    Examples
    --------
    >>> fig = hcl_figure(0.5, 0.1, 1e-3, steps=5)
    >>> sorted(fig.layout.meta)
    ['clip_fraction', 'd_bar', 'margin', 'neg', 'norm', 'pos']
    """
    from hierviz.losses import HCLLoss
    from hierviz.models import HyperbolicMapper

    if x is None:
        x, y = hcl_toy_features(seed=seed)
    X = torch.as_tensor(np.asarray(x, dtype=np.float32))
    Y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    torch.manual_seed(seed)
    mapper = HyperbolicMapper(X.shape[1], 2, hidden=64)
    loss_fn = HCLLoss(mapper.geometry, m0=m0, alpha=alpha, lam=lam)
    opt = torch.optim.Adam(mapper.parameters(), lr=lr)
    trace: dict[str, list[float]] = {"pos": [], "neg": [], "norm": []}
    for _ in range(int(steps)):
        loss = loss_fn(mapper(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        for key in trace:
            trace[key].append(loss_fn.last_terms[key])
    with torch.no_grad():
        h = mapper(X).numpy()
        loss_fn(torch.as_tensor(h), Y)
    terms = {**loss_fn.last_terms, "clip_fraction": mapper.clip_fraction}
    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.55, 0.45], subplot_titles=("Poincaré disk", "HCL terms per step")
    )
    t = np.linspace(0, 2 * np.pi, 200)
    fig.add_trace(go.Scatter(x=np.cos(t), y=np.sin(t), mode="lines", line=dict(color="black"), name="boundary"), 1, 1)
    r = mapper.radius
    fig.add_trace(
        go.Scatter(x=r * np.cos(t), y=r * np.sin(t), mode="lines", line=dict(color="grey", dash="dot"), name="cap 1−δ"),
        1,
        1,
    )
    for c in np.unique(Y.numpy()):
        sel = Y.numpy() == c
        fig.add_trace(
            go.Scatter(
                x=h[sel, 0],
                y=h[sel, 1],
                mode="markers",
                marker=dict(size=5, color=_PALETTE[int(c) % 8]),
                name=f"class {c}",
            ),
            1,
            1,
        )
    for i, (key, vals) in enumerate(trace.items()):
        fig.add_trace(go.Scatter(y=vals, mode="lines", name=key, line=dict(color=_PALETTE[4 + i])), 1, 2)
    fig.update_xaxes(range=[-1.05, 1.05], row=1, col=1)
    fig.update_yaxes(range=[-1.05, 1.05], scaleanchor="x", row=1, col=1)
    fig.update_xaxes(title="step", row=1, col=2)
    fig.update_layout(
        title=(
            f"m0={m0:g}, α={alpha:g}, λ={lam:g}: L_pos={terms['pos']:.3f}, L_neg={terms['neg']:.3f}, "
            f"R_norm={terms['norm']:.4f}, margin m={terms['margin']:.3f}, clipped {100 * terms['clip_fraction']:.0f}%"
        ),
        height=430,
        meta=terms,
    )
    return fig


def hcl_panel(m0: float = 0.5, alpha: float = 0.1, lam: float = 1e-3, *, steps: int = 60, seed: int = 0):
    """Sliders m0 ∈ [0, 3], α ∈ [0, 1], λ ∈ [0, 1] over :func:`hcl_figure` (Paper 03 §2.3).

    Returns
    -------
    hierviz.viz.widgets.Panel
        Controls ``"m0"``, ``"alpha"``, ``"lam"``.
    """
    from hierviz.viz.widgets import Panel, slider

    x, y = hcl_toy_features(seed=seed)
    controls = {
        "m0": slider("base margin m0", m0, 0.0, 3.0, 0.1),
        "alpha": slider("α (× mean distance)", alpha, 0.0, 1.0, 0.05),
        "lam": slider("λ (norm penalty)", lam, 0.0, 1.0, 0.01),
    }

    def update(m0: float, alpha: float, lam: float) -> go.Figure:
        return hcl_figure(m0, alpha, lam, x=x, y=y, steps=steps, seed=seed)

    return Panel(controls, update, "HCL: dynamic margin m = m0 + α·d̄ and norm penalty λ")
