"""Figures for Paper 03 (Hyper-DINO): query gallery, MAP@20 vs N, fp16 storage error, and the HCL margin panel.

* :func:`query_gallery_figure` -- a query image and its k nearest references, with labels
  and distances (Paper 03 §3.4, Figs. 4-5);
* :func:`map_vs_n_figure` -- MAP@k against the number of components N, one line per
  feature family (Fig. 3's shape), from :func:`hierviz.retrieval.run_retrieval`'s summary;
* :func:`storage_error_figure` -- the relative distance error of float16 storage against
  the radius of the stored points (:func:`hierviz.retrieval.storage_error_curve`);
* :func:`hcl_train` / :func:`hcl_figure` / :func:`hcl_panel` -- train a 2-D Hyperbolic Mapper
  with HCL for a few steps at the given m0, α, λ and draw the disk and the loss terms; the
  panel's slider grid is trained once ahead of time (:func:`write_hcl_grid`, :func:`hcl_grid`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch.utils.data import TensorDataset

from hierviz.losses import HCLLoss, Objective
from hierviz.models import HyperbolicMapper
from hierviz.training import TrainConfig, fit

__all__ = [
    "query_gallery_figure",
    "map_vs_n_figure",
    "storage_error_figure",
    "hcl_toy_features",
    "hcl_train",
    "hcl_grid",
    "write_hcl_grid",
    "HCL_GRID",
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


#: The slider grid of :func:`hcl_panel`: every setting is trained once, ahead of time
#: (:func:`write_hcl_grid`, stored in ``hierviz/viz/data/hcl_grid.npz``), so a slider move
#: only draws. λ is a selection slider: its effect shows only from about 1 upwards.
HCL_GRID = {
    "m0": tuple(round(0.5 * i, 2) for i in range(13)),  # 0, 0.5, ..., 6
    "alpha": (0.0, 0.25, 0.5, 0.75, 1.0),
    "lam": (0.0, 0.1, 0.3, 1.0, 3.0, 10.0),
}
_GRID_FILE = "hcl_grid.npz"
_TERMS = ("pos", "neg", "norm", "margin", "d_bar")
_GRID_STEPS, _GRID_LR, _GRID_SEED = 60, 1e-2, 0


class _ZOutput(torch.nn.Module):
    """``{"z": mapper(x)}``, the output dict :func:`hierviz.training.fit` reads (viz imports no evaluation code)."""

    def __init__(self, mapper: torch.nn.Module) -> None:
        super().__init__()
        self.mapper = mapper

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.mapper(x)}


def hcl_train(
    m0: float = 0.5,
    alpha: float = 0.1,
    lam: float = 1e-3,
    *,
    x: Any = None,
    y: Any = None,
    steps: int = 60,
    lr: float = 1e-2,
    seed: int = 0,
) -> dict[str, Any]:
    """Train a 2-D Hyperbolic Mapper with HCL(m0, α, λ) for ``steps`` full-batch Adam steps (:func:`hierviz.training.fit`).

    Parameters
    ----------
    m0, alpha, lam : float
        HCL hyperparameters (Paper 03 (Hyper-DINO) §2.3).
    x, y : array-like, optional
        Features (n, D) and labels (n,); default :func:`hcl_toy_features` ``(seed=seed)``.
    steps : int, default 60
    lr : float, default 1e-2
    seed : int, default 0

    Returns
    -------
    dict
        ``h`` (n, 2) float32 ball points after training, ``y`` (n,) int64, ``trace`` (3, steps)
        float32 (the terms pos, neg, norm per step), ``terms`` (dict: the final
        :class:`~hierviz.losses.HCLLoss` terms on ``h``: pos, neg, norm, margin, d_bar), ``clip_fraction`` (float, the share of
        points the radius cap moved) and ``radius`` (the cap ``1 - δ``).

    Examples
    --------
    >>> r = hcl_train(0.5, 0.1, 1e-3, steps=3)
    >>> r["h"].shape, r["trace"].shape
    ((160, 2), (3, 3))
    """
    if x is None:
        x, y = hcl_toy_features(seed=seed)
    X = torch.as_tensor(np.asarray(x, dtype=np.float32))
    Y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    torch.manual_seed(seed)
    mapper = HyperbolicMapper(X.shape[1], 2, hidden=64)  # the paper's hard cap: the figure shows what it clips
    loss_fn = HCLLoss(mapper.geometry, m0=m0, alpha=alpha, lam=lam)
    trace = np.zeros((3, int(steps)), np.float32)

    def record(epoch: int, info: dict) -> None:  # one full-batch step per epoch: the terms of that step
        trace[:, epoch] = [loss_fn.last_terms[k] for k in ("pos", "neg", "norm")]

    config = TrainConfig(  # full-batch Adam at a constant lr, through the one training loop
        epochs=int(steps), batch_size=len(X), lr_backbone=lr, lr_head=lr, weight_decay=0.0, warmup_epochs=0,
        ema_decay=None, seed=seed, device="cpu", amp=False, progress=False, optimizer="adam", schedule="constant",
    )  # fmt: skip
    fit(config, _ZOutput(mapper), Objective("hcl", {"hcl": loss_fn}), TensorDataset(X, Y), callbacks=[record])
    with torch.no_grad():
        h = mapper(X).numpy().astype(np.float32)
        loss_fn(torch.as_tensor(h), Y)
    return {
        "h": h,
        "y": Y.numpy(),
        "trace": trace,
        "terms": {k: float(loss_fn.last_terms[k]) for k in _TERMS},
        "clip_fraction": float(mapper.clip_fraction),
        "radius": float(mapper.radius),
    }


def _grid_key(m0: float, alpha: float, lam: float) -> tuple[float, float, float]:
    return (round(float(m0), 4), round(float(alpha), 4), round(float(lam), 4))


def write_hcl_grid(path: Any = None) -> Any:
    """Train :func:`hcl_train` once per :data:`HCL_GRID` setting (toy features, 60 steps) and save it.

    About 80 s on one CPU core; the file ships with the package, so :func:`hcl_panel` only draws.
    Rebuild it after changing :func:`hcl_train`, :class:`hierviz.losses.HCLLoss` or the mapper:
    ``python3 -c "from hierviz.viz.retrieval import write_hcl_grid; write_hcl_grid()"``.

    Parameters
    ----------
    path : str or Path, optional
        Default ``hierviz/viz/data/hcl_grid.npz``.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path) if path is not None else Path(__file__).parent / "data" / _GRID_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    keys, hs, traces, clips, terms = [], [], [], [], []
    y = radius = None
    for m0 in HCL_GRID["m0"]:
        for alpha in HCL_GRID["alpha"]:
            for lam in HCL_GRID["lam"]:
                r = hcl_train(m0, alpha, lam, steps=_GRID_STEPS, lr=_GRID_LR, seed=_GRID_SEED)
                keys.append(_grid_key(m0, alpha, lam))
                hs.append(r["h"])
                traces.append(r["trace"])
                clips.append(r["clip_fraction"])
                terms.append([r["terms"][k] for k in _TERMS])
                y, radius = r["y"], r["radius"]
    np.savez_compressed(
        path,
        keys=np.asarray(keys, np.float64),
        h=np.stack(hs),
        trace=np.stack(traces),
        clip_fraction=np.asarray(clips, np.float64),
        terms=np.asarray(terms, np.float64),
        y=y,
        radius=np.float64(radius),
    )
    return path


_GRID_CACHE: dict[tuple[float, float, float], dict[str, Any]] = {}


def hcl_grid() -> dict[tuple[float, float, float], dict[str, Any]]:
    """The precomputed :data:`HCL_GRID` runs, ``(m0, α, λ) -> hcl_train(...)`` output (empty if missing).

    Examples
    --------
    >>> grid = hcl_grid()
    >>> len(grid), sorted(grid[(3.0, 0.0, 0.0)])
    (390, ['clip_fraction', 'h', 'radius', 'terms', 'trace', 'y'])
    """
    if not _GRID_CACHE:
        path = Path(__file__).parent / "data" / _GRID_FILE
        if not path.is_file():
            return {}
        with np.load(path) as z:
            y, radius = z["y"], float(z["radius"])
            for key, h, trace, clip, t in zip(z["keys"], z["h"], z["trace"], z["clip_fraction"], z["terms"]):
                _GRID_CACHE[_grid_key(*key)] = {
                    "h": h,
                    "y": y,
                    "trace": trace,
                    "terms": dict(zip(_TERMS, map(float, t))),
                    "clip_fraction": float(clip),
                    "radius": radius,
                }
    return _GRID_CACHE


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
    result: dict[str, Any] | None = None,
) -> go.Figure:
    """Train a 2-D Hyperbolic Mapper with HCL(m0, α, λ) (:func:`hcl_train`) and draw it.

    Left: the Poincaré disk with the embedded points by class, the mapper's radius cap and
    the final margin m; right: the loss terms per step. The title gives the final
    :math:`\\mathcal L_{pos}`, :math:`\\mathcal L_{neg}`, :math:`\\mathcal R_{norm}`, m, the clip fraction
    and the mean and largest norm of the points, the terms read from :class:`hierviz.losses.HCLLoss`
    evaluated on the drawn points by :func:`hcl_train` (nothing re-implemented here).

    Parameters
    ----------
    m0, alpha, lam : float
        HCL hyperparameters (Paper 03 (Hyper-DINO) §2.3).
    x, y : array-like, optional
        Features (n, D) and labels (n,); default :func:`hcl_toy_features`.
    steps : int, default 60
    lr : float, default 1e-2
    seed : int, default 0
    result : dict, optional
        A :func:`hcl_train` output to draw instead of training (what :func:`hcl_panel` passes
        from :func:`hcl_grid`).

    Returns
    -------
    plotly.graph_objects.Figure
        With ``fig.layout.meta`` = the final terms (dict): ``pos``, ``neg``, ``norm``,
        ``margin``, ``d_bar``, ``clip_fraction``, ``mean_norm``, ``max_norm``.

    Examples
    --------
    >>> fig = hcl_figure(0.5, 0.1, 1e-3, steps=5)
    >>> sorted(fig.layout.meta)
    ['clip_fraction', 'd_bar', 'margin', 'max_norm', 'mean_norm', 'neg', 'norm', 'pos']
    """
    r = result if result is not None else hcl_train(m0, alpha, lam, x=x, y=y, steps=steps, lr=lr, seed=seed)
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


def hcl_panel(m0: float = 0.5, alpha: float = 0.0, lam: float = 0.0, *, steps: int = 60, seed: int = 0):
    """Sliders m0 ∈ [0, 6], α ∈ [0, 1], λ ∈ {0, 0.1, 0.3, 1, 3, 10} over :func:`hcl_figure` (Paper 03 §2.3).

    At the default ``steps=60, seed=0`` every slider position is drawn from the precomputed
    :func:`hcl_grid` (no training on a move: a redraw costs only the drawing); other settings,
    or a value off the grid, train on the spot.

    Returns
    -------
    hierviz.viz.widgets.Panel
        Controls ``"m0"``, ``"alpha"``, ``"lam"``.
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported only when a panel is built

    from hierviz.viz.widgets import Panel, slider  # heavy: ipywidgets (viz.widgets imports it)

    x, y = hcl_toy_features(seed=seed)
    grid = hcl_grid() if (int(steps), int(seed)) == (_GRID_STEPS, _GRID_SEED) else {}
    lams = HCL_GRID["lam"]
    controls = {
        "m0": slider("base margin m0", m0, 0.0, 6.0, 0.5),
        "alpha": slider("α (× mean distance)", alpha, 0.0, 1.0, 0.25),
        "lam": widgets.SelectionSlider(
            options=[(f"{v:g}", v) for v in lams],
            value=min(lams, key=lambda v: abs(v - lam)),
            description="λ (norm penalty)",
            continuous_update=False,
            style={"description_width": "initial"},
        ),
    }

    def update(m0: float, alpha: float, lam: float) -> go.Figure:
        cached = grid.get(_grid_key(m0, alpha, lam))
        return hcl_figure(m0, alpha, lam, x=x, y=y, steps=steps, seed=seed, result=cached)

    return Panel(controls, update, "HCL: dynamic margin m = m0 + α·d̄ and norm penalty λ (precomputed grid)")
