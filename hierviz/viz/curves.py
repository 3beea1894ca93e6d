"""Training curves and metric bar charts."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from hierviz.viz.tree import _BASE as _PALETTE
from hierviz.viz.tree import _TEMPLATE

__all__ = ["plot_loss_curves", "plot_metric_bars"]


def _series(values: Any, key: str) -> np.ndarray:
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"history[{key!r}] must be a sequence of numbers") from exc
    if arr.ndim != 1:
        raise ValueError(f"history[{key!r}] must be 1-D, got shape {arr.shape}")
    return arr


def plot_loss_curves(
    history: Mapping[str, Sequence[float]], title: str | None = None, xlabel: str = "epoch", log_y: bool = False
) -> go.Figure:
    """Line plot of training curves, one line per key.

    Parameters
    ----------
    history : mapping of str to sequence of float
        e.g. ``{"train": [...], "val": [...], "hwc": [...], "lam": [...]}``; series may
        have different lengths; entry t is drawn at x = t + 1.
    title : str, optional
    xlabel : str, default "epoch"
    log_y : bool, default False
        Logarithmic y axis (all values must then be > 0).

    Returns
    -------
    plotly.graph_objects.Figure
        One ``go.Scatter`` per key, named by the key, in dict order.

    Raises
    ------
    ValueError
        Empty ``history``, an empty or non-1-D series, or ``log_y`` with values ≤ 0.
    TypeError
        ``history`` not a mapping or a series not numeric.

    Warns
    -----
    UserWarning
        If a series holds NaN/inf (a diverged run); they are drawn as gaps and the
        title flags them.
    """
    if not isinstance(history, Mapping):
        raise TypeError(f"history must be a dict of name -> list of floats, got {type(history).__name__}")
    if len(history) == 0:
        raise ValueError("history is empty: pass at least one series")
    fig = go.Figure()
    bad: list[str] = []
    for j, (key, vals) in enumerate(history.items()):
        arr = _series(vals, str(key))
        if arr.size == 0:
            raise ValueError(f"history[{key!r}] is empty")
        finite = np.isfinite(arr)
        if not finite.all():
            bad.append(str(key))
        if log_y and np.any(arr[finite] <= 0):
            raise ValueError(f"log_y=True needs positive values, history[{key!r}] has values <= 0")
        yv = [float(v) if math.isfinite(v) else None for v in arr]
        fig.add_trace(
            go.Scatter(
                x=np.arange(1, arr.size + 1),
                y=yv,
                mode="lines+markers" if arr.size <= 50 else "lines",
                name=str(key),
                line=dict(color=_PALETTE[j % len(_PALETTE)], width=2),
                marker=dict(size=5),
                hovertemplate=f"<b>{key}</b><br>{xlabel} %{{x}}<br>%{{y:.4g}}<extra></extra>",
            )
        )
    text = title or "Training curves"
    if bad:
        warnings.warn(f"non-finite values in history series {bad}: drawn as gaps", UserWarning, stacklevel=2)
        text += f"<br><sup>⚠ non-finite values (NaN/inf) in: {', '.join(bad)}</sup>"
    fig.update_layout(
        template=_TEMPLATE,
        title=dict(text=text),
        height=420,
        hovermode="x unified",
        xaxis=dict(title=dict(text=xlabel)),
        yaxis=dict(title=dict(text="value"), type="log" if log_y else "linear"),
    )
    return fig


def _rows(rows: Any) -> list[dict]:
    if hasattr(rows, "to_dict"):  # pandas.DataFrame
        rows = rows.to_dict(orient="records")
    if isinstance(rows, Mapping):
        raise TypeError("rows must be a sequence of dicts (one per method) or a DataFrame, not a single dict")
    out = [dict(r) for r in rows]
    if not out:
        raise ValueError("rows is empty")
    return out


def plot_metric_bars(
    rows: Any, metrics: Sequence[str] | None = None, group: str = "method", title: str | None = None
) -> go.Figure:
    """Grouped bar chart of metrics per method, with optional error bars.

    Parameters
    ----------
    rows : sequence of dict, or pandas.DataFrame
        One row per method, e.g. ``{"method": "hwc+lam", "top1": 0.81, "top1_std": 0.01,
        "hf1": 0.88, ...}``. A column ``"<metric>_std"`` gives that metric's error bar.
    metrics : sequence of str, optional
        Metrics to draw (x axis); default every numeric column except ``group`` and the
        ``*_std`` columns, in first-row order.
    group : str, default "method"
        Column naming the bars (one colour per value).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One ``go.Bar`` per row, named by ``row[group]``.

    Raises
    ------
    ValueError
        Empty rows, a row without ``group``, a requested metric missing from a row,
        or no numeric metric at all.
    TypeError
        ``rows`` is a single dict or not iterable.
    """
    R = _rows(rows)
    for i, r in enumerate(R):
        if group not in r:
            raise ValueError(f"rows[{i}] has no {group!r} column (set group= to the name column)")
    if metrics is None:
        metrics = [
            k
            for k, v in R[0].items()
            if k != group
            and not k.endswith("_std")
            and isinstance(v, (int, float, np.number))
            and not isinstance(v, bool)
        ]
    metrics = list(metrics)
    if not metrics:
        raise ValueError("no numeric metric columns found in rows")
    fig = go.Figure()
    for j, r in enumerate(R):
        missing = [m for m in metrics if m not in r]
        if missing:
            raise ValueError(f"rows[{j}] ({r[group]}) lacks metric(s) {missing}")
        vals = [float(r[m]) for m in metrics]
        std = [float(r.get(f"{m}_std", 0.0) or 0.0) for m in metrics]
        has_err = any(s > 0 for s in std)
        fig.add_trace(
            go.Bar(
                x=metrics,
                y=vals,
                name=str(r[group]),
                marker_color=_PALETTE[j % len(_PALETTE)],
                error_y=dict(type="data", array=std, visible=True) if has_err else None,
                texttemplate="%{y:.3f}",
                textposition="outside",
                textfont=dict(size=10),
                hovertemplate=f"<b>{r[group]}</b><br>%{{x}} = %{{y:.4f}}<extra></extra>",
            )
        )
    fig.update_layout(
        template=_TEMPLATE,
        barmode="group",
        height=450,
        title=dict(text=title or "Metrics by method"),
        yaxis=dict(title=dict(text="score")),
        legend=dict(title=dict(text=group)),
    )
    return fig
