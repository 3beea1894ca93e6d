"""Figures and a live panel for Paper 02 (HMLC): per-level positives, HMC vs HMCE, GMM masks, attention, t-SNE.

Every number drawn here comes from the library (:class:`hierviz.losses.HMLCLoss`,
:func:`hierviz.losses.fit_gmm_1d`, :class:`hierviz.losses.LevelAttention`,
``sklearn.manifold.TSNE``); the figure functions are plain functions of arrays, and
:func:`hmlc_panel` wires one of them to widgets (notebook 06).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from threadpoolctl import threadpool_limits

from hierviz.losses import DEFAULT_TAU, HMLCLoss, fit_gmm_1d, gmm_feature_masks
from hierviz.losses.hmlc import layer_penalty_weights
from hierviz.viz._fast import fast_figure, subplots_layout

__all__ = [
    "level_positives_figure",
    "hmlc_terms",
    "hmlc_terms_figure",
    "hmlc_panel",
    "gmm_masks_figure",
    "attention_figure",
    "level_tsne",
    "level_tsne_figure",
]

_LOSS_TYPES = ("hmc", "hce", "hmce")
_PALETTE = (
    "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf "
    "#aec7e8 #ffbb78 #98df8a #ff9896 #c5b0d5 #c49c94 #f7b6d2 #c7c7c7 #dbdb8d #9edae5"
).split()


def _labels(level_labels: Any) -> np.ndarray:
    y = np.asarray(level_labels.cpu() if isinstance(level_labels, torch.Tensor) else level_labels)
    if y.ndim != 2 or y.shape[1] < 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"level_labels must be an integer array of shape (n, L), got {y.shape} {y.dtype}")
    return y


def _column_names(names: Sequence[str] | None, L: int) -> list[str]:
    if names is None:
        return [f"level {h}" for h in range(1, L + 1)]
    if len(names) != L:
        raise ValueError(f"column_names must name the {L} label columns, got {len(names)}")
    return [str(n) for n in names]


def level_positives_figure(level_labels: Any, column_names: Sequence[str] | None = None) -> go.Figure:
    """The positive pairs of every level: ``P^h(i) = {p ≠ i : y_p^h = y_i^h}`` as n × n matrices (Paper 02 (HMLC), Eq. 2).

    Parameters
    ----------
    level_labels : array-like of int, shape (n, L)
        Per-level labels of a small batch (one image per row, one view).
    column_names : sequence of L str, optional
        Subplot titles (default ``"level h"``).

    Returns
    -------
    plotly.graph_objects.Figure
        One heat map per level; cell ``(i, p)`` is 1 when ``p`` is a positive of anchor
        ``i`` at that level, the diagonal (the anchor itself) is left blank.

    Raises
    ------
    ValueError
        ``level_labels`` not an (n, L) integer array, or ``column_names`` of another length.

    Examples
    --------
    >>> fig = level_positives_figure([[0, 0], [0, 1], [1, 1]], ["class", "category"])
    >>> [list(row) for row in fig.data[1].z]  # category: rows 1 and 2 share a label
    [[None, 0.0, 0.0], [0.0, None, 1.0], [0.0, 1.0, None]]
    """
    y = _labels(level_labels)
    n, L = y.shape
    titles = _column_names(column_names, L)
    fig = make_subplots(1, L, subplot_titles=[f"{t}: positives" for t in titles], horizontal_spacing=0.08)
    for h in range(L):
        m = (y[:, h][:, None] == y[:, h][None, :]).astype(float).tolist()
        for i in range(n):
            m[i][i] = None
        fig.add_heatmap(
            z=m,
            x=list(range(n)),
            y=list(range(n)),
            zmin=0,
            zmax=1,
            colorscale=[[0, "#f2f2f2"], [1, "#2166ac"]],
            showscale=False,
            hovertemplate="anchor %{y}, candidate %{x}: %{z}<extra></extra>",
            row=1,
            col=h + 1,
        )
        fig.update_yaxes(autorange="reversed", title_text="anchor i" if h == 0 else None, row=1, col=h + 1)
        fig.update_xaxes(title_text="candidate p", row=1, col=h + 1)
    fig.update_layout(height=340, width=300 * L + 80, title="Per-level positives (blue = positive pair)")
    return fig


def hmlc_terms(
    z: Any, level_labels: Any, tau: float = DEFAULT_TAU, layer_penalty: str = "exp"
) -> dict[str, np.ndarray]:
    """Per-level terms of HMC, HCE and HMCE on one batch (``HMLCLoss.level_terms``, paper mode).

    Parameters
    ----------
    z : array-like, shape (B, V, d)
        Embeddings (unit-norm for the cosine of Eq. 1).
    level_labels : array-like of int, shape (B, L)
    tau : float > 0
    layer_penalty : {"exp", "pow2", "linear"}

    Returns
    -------
    dict
        ``"hmc"``, ``"hce"``, ``"hmce"`` → ``(L,)`` arrays (their sums are the losses) and
        ``"lambda"`` → the penalties ``λ_h``.
    """
    zt = torch.as_tensor(np.asarray(z), dtype=torch.float64)
    y = torch.as_tensor(_labels(level_labels))
    out = {lt: HMLCLoss(lt, layer_penalty, tau).level_terms(zt, y).numpy() for lt in _LOSS_TYPES}
    out["lambda"] = layer_penalty_weights(layer_penalty, y.shape[1], torch.float64).numpy()
    return out


def hmlc_terms_figure(
    z: Any,
    level_labels: Any,
    tau: float = DEFAULT_TAU,
    layer_penalty: str = "exp",
    column_names: Sequence[str] | None = None,
) -> go.Figure:
    """HMC vs HCE vs HMCE, level by level: the terms ``λ_h · L_h / H`` of :func:`hmlc_terms` (Paper 02 (HMLC), Eqs. 2-4).

    Parameters
    ----------
    z, level_labels, tau, layer_penalty
        As :func:`hmlc_terms`.
    column_names : sequence of L str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Grouped bars, one group per level, one bar per loss type; the legend gives each
        loss's total and the title the penalties ``λ_h``.
    """
    t = hmlc_terms(z, level_labels, tau, layer_penalty)
    names = _column_names(column_names, len(t["lambda"]))
    fig = go.Figure()
    for lt in _LOSS_TYPES:
        fig.add_bar(x=names, y=t[lt], name=f"{lt.upper()} (total {t[lt].sum():.3f})")
    lam = ", ".join(f"{v:.2f}" for v in t["lambda"])
    fig.update_layout(
        barmode="group",
        height=380,
        width=620,
        title=f"Per-level terms, τ = {tau:g}, penalty {layer_penalty}: λ = ({lam})",
        yaxis_title="λ_h · L_h / H",
    )
    return fig


def hmlc_panel(
    z: Any,
    level_labels: Any,
    tau: float = DEFAULT_TAU,
    layer_penalty: str = "exp",
    column_names: Sequence[str] | None = None,
):
    """A penalty slider (linear < pow2 < exp) and a τ slider over :func:`hmlc_terms_figure`.

    Returns
    -------
    hierviz.viz.widgets.Panel
        Controls ``"layer_penalty"`` (a selection slider) and ``"tau"``.
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported only when a panel is built

    from hierviz.viz.widgets import Panel, slider  # heavy: ipywidgets (viz.widgets imports it)

    controls = {
        "layer_penalty": widgets.SelectionSlider(
            options=["linear", "pow2", "exp"],
            value=layer_penalty,
            description="penalty f",
            continuous_update=False,
            style={"description_width": "initial"},
        ),
        "tau": slider("τ", tau, 0.05, 1.0, 0.05),
    }

    def update(layer_penalty: str, tau: float) -> go.Figure:
        return hmlc_terms_figure(z, level_labels, tau, layer_penalty, column_names)

    return Panel(controls, update, "HMC vs HCE vs HMCE per level: penalty λ_h = f(1/h) and temperature τ")


def gmm_masks_figure(
    values: Any, levels: int, init_means: Any = None, titles: Sequence[str] | None = None
) -> go.Figure:
    """G-HMLC's hard masks for a few images: each feature value coloured by the level its GMM component gives it.

    Parameters
    ----------
    values : array-like, shape (n, d)
        One row of feature values per image (G-HMLC uses the mean of the views).
    levels : int
        Components ``L`` (one per level).
    init_means : array-like, optional
        Warm start (``GHMLCLoss.means``).
    titles : sequence of n str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One row per image: feature index vs value, coloured by level; dashed lines at the
        component means. Built with :func:`hierviz.losses.fit_gmm_1d` and
        :func:`hierviz.losses.gmm_feature_masks`.
    """
    x = torch.as_tensor(np.asarray(values), dtype=torch.float64)
    if x.ndim != 2:
        raise ValueError(f"values must have shape (n, d), got {tuple(x.shape)}")
    init = None if init_means is None else torch.as_tensor(np.asarray(init_means), dtype=torch.float64)
    gmm = fit_gmm_1d(x, int(levels), init_means=init)
    masks = gmm_feature_masks(gmm).numpy()  # (L, n, d)
    n, d = x.shape
    sub = list(titles) if titles is not None else [f"image {i}" for i in range(n)]
    # Plain dicts into one unvalidated figure (hierviz.viz._fast): this is notebook 06's mask panel redraw.
    layout = subplots_layout(n, 1, shared_xaxes=True, subplot_titles=sub, vertical_spacing=0.06)
    data, shapes = [], []
    xs = np.arange(d)
    for i in range(n):
        ax = "" if i == 0 else str(i + 1)
        xi = x[i].numpy()
        for h in range(levels):
            sel = masks[h, i] > 0
            data.append(
                dict(
                    type="scatter",
                    x=xs[sel],
                    y=xi[sel],
                    mode="markers",
                    marker=dict(color=_PALETTE[h % len(_PALETTE)], size=6),
                    name=f"level {h + 1} (M_{h + 1})",
                    legendgroup=f"l{h}",
                    showlegend=i == 0,
                    xaxis=f"x{ax}",
                    yaxis=f"y{ax}",
                )
            )
        for h in range(levels):
            mu = float(gmm.means[i, levels - 1 - h])  # level h+1 = the (h+1)-th largest mean
            shapes.append(
                dict(
                    type="line", x0=0, x1=1, xref=f"x{ax} domain", y0=mu, y1=mu, yref=f"y{ax}",
                    line=dict(color=_PALETTE[h % len(_PALETTE)], dash="dash", width=1),
                )
            )  # fmt: skip
    layout[f"xaxis{'' if n == 1 else n}"]["title"] = dict(text="feature j")
    layout.update(shapes=shapes, height=170 * n + 80, width=700,
                  title=dict(text="G-HMLC: per-image 1-D GMM over the feature values"))  # fmt: skip
    return fast_figure(data, layout)


def attention_figure(attention: Any, column_names: Sequence[str] | None = None) -> go.Figure:
    """A-HMLC's attention weights ``a_h`` (Eq. 5): one heat map per level, images × features.

    Parameters
    ----------
    attention : array-like, shape (L, n, d)
        Rows sum to 1 over the d features (``AHMLCLoss.last_attention`` of one view).
    column_names : sequence of L str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    a = np.asarray(attention.detach().cpu() if isinstance(attention, torch.Tensor) else attention, dtype=float)
    if a.ndim != 3:
        raise ValueError(f"attention must have shape (L, n, d), got {a.shape}")
    L, n, d = a.shape
    names = _column_names(column_names, L)
    fig = make_subplots(1, L, subplot_titles=[f"{t}: attention a_h" for t in names], horizontal_spacing=0.08)
    zmax = float(a.max())
    for h in range(L):
        fig.add_heatmap(
            z=a[h] * d,
            zmin=0,
            zmax=zmax * d,
            colorscale="Viridis",
            showscale=h == L - 1,
            colorbar=dict(title="d · a"),
            hovertemplate="image %{y}, feature %{x}: d·a = %{z:.2f}<extra></extra>",
            row=1,
            col=h + 1,
        )
        fig.update_xaxes(title_text="feature j", row=1, col=h + 1)
        fig.update_yaxes(autorange="reversed", title_text="image" if h == 0 else None, row=1, col=h + 1)
    fig.update_layout(height=360, width=330 * L + 100, title="A-HMLC: soft feature masks per level (1 = uniform)")
    return fig


def level_tsne(z: Any, seed: int = 0, perplexity: float = 30.0) -> np.ndarray:
    """2-D t-SNE of embeddings (``sklearn.manifold.TSNE``, PCA initialisation, seeded).

    Parameters
    ----------
    z : array-like, shape (n, d), n ≥ 4
    seed : int
    perplexity : float
        Capped at ``(n - 1) / 3``.

    Returns
    -------
    numpy.ndarray, shape (n, 2)

    Raises
    ------
    ValueError
        ``z`` not (n ≥ 4, d).
    """
    from sklearn.manifold import TSNE  # heavy: scikit-learn's manifold module, imported only for a t-SNE

    x = np.asarray(z, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 4:
        raise ValueError(f"z must have shape (n >= 4, d), got {x.shape}")
    p = float(min(perplexity, (x.shape[0] - 1) / 3))
    # one BLAS/OpenMP thread: on a small shared CPU the threaded gradient of a few hundred points
    # spins for tens of seconds (measured 51 s for 60 points vs 2 s with one thread, 2-core VM)
    with threadpool_limits(1):
        return TSNE(2, perplexity=p, init="pca", random_state=seed, n_jobs=1).fit_transform(x)


def level_tsne_figure(
    embeddings: dict[str, Any],
    level_labels: Any,
    column_names: Sequence[str] | None = None,
    label_names: Sequence[Sequence[str]] | None = None,
    seed: int = 0,
) -> go.Figure:
    """Per-level t-SNE (Paper 02 (HMLC), Fig. 4 shape): one column per method, one row per level.

    Parameters
    ----------
    embeddings : dict of str to array-like (n, d)
        Method name → test embeddings (the same n images for every method).
    level_labels : array-like of int, shape (n, L)
        Colour of each point in row ``h``: its level-``h`` label.
    column_names : sequence of L str, optional
        Row titles (the level names).
    label_names : sequence of L sequences of str, optional
        ``label_names[h][k]`` names label ``k`` of level ``h`` in the legend (dense labels).
    seed : int

    Returns
    -------
    plotly.graph_objects.Figure
    """
    y = _labels(level_labels)
    n, L = y.shape
    rows = _column_names(column_names, L)
    methods = list(embeddings)
    fig = make_subplots(
        L, len(methods), subplot_titles=[f"{m} · {r}" for r in rows for m in methods], horizontal_spacing=0.05
    )
    for j, m in enumerate(methods):
        xy = level_tsne(embeddings[m], seed=seed)
        if xy.shape[0] != n:
            raise ValueError(f"embeddings[{m!r}] has {xy.shape[0]} rows, level_labels {n}")
        for h in range(L):
            for k in np.unique(y[:, h]):
                sel = y[:, h] == k
                name = label_names[h][int(k)] if label_names is not None else str(int(k))
                fig.add_scatter(
                    x=xy[sel, 0],
                    y=xy[sel, 1],
                    mode="markers",
                    marker=dict(size=4, color=_PALETTE[int(k) % len(_PALETTE)]),
                    name=name,
                    legendgroup=f"{h}-{k}",
                    showlegend=j == 0 and h == 0,
                    row=h + 1,
                    col=j + 1,
                )
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(height=300 * L + 60, width=300 * len(methods) + 160, title="t-SNE of test embeddings per level")
    return fig
