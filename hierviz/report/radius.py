"""The radius section of a comparison's report: does each hyperbolic run use the radial direction?

Each run record may hold ``radius`` (:func:`hierviz.evaluation.radius.run_radius`): the
learned feature scale of the head, the test embeddings' geodesic radius (mean, std), the
fraction at the clip radius and the radius of samples and prototypes per tree depth. This
module turns those into a Markdown table, an HTML table with flags, and a radius-by-depth
figure.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from hierviz.metrics.radius import CLIP_FLAG
from hierviz.report.tables import geometry_label, method_label
from hierviz.viz.radius import add_radius_traces

__all__ = ["radius_rows", "radius_markdown", "radius_html_table", "plot_runs_radius_by_depth", "radius_flags"]

_COLS = (
    "Run",
    "Feature scale",
    "Radius d(0, z)",
    "Clip fraction",
    "Prototype radius by depth (root → leaves)",
    "Radius–depth Spearman",
    "Edge order",
    "Radius gap",
    "Norm AUROC",
)
#: The hierarchy-in-radius metrics, in the table's order (clip fraction has its own column above)
_METRIC_KEYS = ("radius_depth_spearman", "edge_order", "radius_gap", "norm_auroc")


def radius_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per run of a hyperbolic geometry that has a ``radius`` record, in record order.

    Returns
    -------
    list of dict
        ``label``, ``method``, ``geometry``, ``seed``, ``scale``, ``radius_mean``,
        ``radius_std``, ``clip_fraction``, ``proto_by_depth`` (list of float or None),
        ``flagged`` (clip fraction above :data:`hierviz.metrics.radius.CLIP_FLAG`) and the
        radius metrics ``radius_depth_spearman``, ``edge_order``, ``radius_gap``,
        ``norm_auroc`` (float, NaN or None for records written before them).
    """
    out = []
    for r in records:
        rad = r.get("radius")
        if not rad or rad.get("clip_fraction") is None:
            continue
        cf = float(rad["clip_fraction"])
        out.append(
            {
                "label": f"{method_label(r['method'], [r])} ({geometry_label(r['geometry'], [r])}, seed {r['seed']})",
                "method": r["method"],
                "geometry": r["geometry"],
                "seed": int(r["seed"]),
                "scale": rad.get("scale"),
                "radius_mean": float(rad["radius_mean"]),
                "radius_std": float(rad["radius_std"]),
                "clip_fraction": cf,
                "proto_by_depth": [row.get("proto_mean") for row in rad.get("radius_by_depth", [])],
                "flagged": cf > CLIP_FLAG,
                **{k: rad.get(k) for k in _METRIC_KEYS},
            }
        )
    return out


def _fmt(v: Any, spec: str = ".2f") -> str:
    return "–" if v is None or v != v else format(float(v), spec)  # None and NaN: a dash


def _cells(row: Mapping[str, Any]) -> list[str]:
    return [
        row["label"],
        _fmt(row["scale"], ".3g"),
        f"{row['radius_mean']:.2f} ± {row['radius_std']:.2f}",
        f"{row['clip_fraction']:.2f}" + (" ⚠" if row["flagged"] else ""),
        " → ".join(_fmt(v) for v in row["proto_by_depth"]),
        *(_fmt(row.get(k)) for k in _METRIC_KEYS),
    ]


def radius_flags(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A sentence per flagged run (clip fraction above :data:`CLIP_FLAG`)."""
    return [
        f"{r['label']}: {100 * r['clip_fraction']:.0f} % of the test embeddings sit at the clip radius, so the "
        "radial direction carries little; use the smooth bound (model.head_bound=tanh), "
        "model.scale_init=auto or batch, or raise model.clip_r."
        for r in rows
        if r["flagged"]
    ]


def radius_markdown(records: Sequence[Mapping[str, Any]]) -> str:
    """The radius table in Markdown ('' when no run is hyperbolic)."""
    rows = radius_rows(records)
    if not rows:
        return ""
    lines = [
        "**Radius** (hyperbolic runs; test embeddings; geodesic distance to the origin). "
        "A hierarchy-respecting embedding puts prototypes farther out with depth; ⚠ = more than "
        f"{CLIP_FLAG:.0%} at the clip radius. Radius–depth Spearman: Spearman(depth, prototype radius) over "
        "the tree's nodes / its largest value under depth ties; edge order: parent → child edges whose parent "
        "is nearer the origin; radius gap: mean leaf minus mean depth-1 prototype radius; norm AUROC: "
        "−d(0, z) telling misclassified from correct test samples (hierviz.metrics.radius_metrics).",
        "",
        "| " + " | ".join(_COLS) + " |",
        "|" + "|".join("---" if c in ("Run", _COLS[4]) else "---:" for c in _COLS) + "|",
    ]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def radius_html_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The radius table as an HTML fragment ('' when no run is hyperbolic)."""
    rows = radius_rows(records)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in _COLS)
    body = []
    for r in rows:
        cls = " class='flag'" if r["flagged"] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(r)) + "</tr>")
    return f"<h2>Radius</h2><table class='results'><tr>{head}</tr>{''.join(body)}</table>"


def plot_runs_radius_by_depth(records: Sequence[Mapping[str, Any]], title: str | None = None) -> go.Figure:
    """Prototype and sample radius against tree depth, one line per hyperbolic run.

    Parameters
    ----------
    records : sequence of dict
        Run records with ``radius`` (others are skipped).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Per run: a solid line of prototype radius (``proto_mean``) and a dotted line of
        sample radius (``sample_mean``, at the depths where leaves are) against depth.

    Raises
    ------
    ValueError
        No record has a radius of a hyperbolic geometry.
    """
    fig = go.Figure()
    n = 0
    for r in records:
        rad = r.get("radius")
        if not rad or rad.get("clip_fraction") is None:
            continue
        n += 1
        label = f"{method_label(r['method'], [r])} ({geometry_label(r['geometry'], [r])}, seed {r['seed']})"
        add_radius_traces(fig, rad.get("radius_by_depth", []), label)
    if n == 0:
        raise ValueError("records: no run of a hyperbolic geometry has a radius record")
    fig.update_layout(
        title=title or "Radius by tree depth (geodesic distance to the origin)",
        xaxis=dict(title="tree depth (0 = root)", dtick=1),
        yaxis=dict(title="d(0, ·)", rangemode="tozero"),
        height=450,
    )
    return fig
