"""The capstone's text: its tables in Markdown and the closing "which method when" guide, written from the rows.

:func:`capstone_markdown` -- one table with its paired CIs; :func:`radius_table_markdown` -- the
radius columns of the hyperbolic rows with their :func:`~hierviz.viz.capstone.radius_reading`;
:func:`method_guide` -- the guide, so it says what the numbers of *this* run say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hierviz.viz.capstone.setting import (
    _GEOMETRY,
    CAPSTONE_METRICS,
    _label,
    radius_reading,
)


def radius_table_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The radius columns of the hyperbolic rows of a capstone table, each with its :func:`radius_reading`.

    Per hyperbolic method row: the radius–depth Spearman of the prototypes, the clip fraction, the test
    radius mean ± spread and the reading they give together. Means over seeds.

    Examples
    --------
    >>> rows = [{"method": "supcon", "geometry": "poincare", "n": 5, "radius_depth_spearman": 0.55,
    ...          "clip_fraction": 0.0, "radius_mean": 0.44, "radius_std": 0.08, "radius_gap": 0.1}]
    >>> print(radius_table_markdown(rows).splitlines()[2])
    | SupCon | Poincaré | 0.55 | 0.00 | 0.44 ± 0.08 | 0.10 | flat origin |
    """
    lines = [
        "| Method | Geometry | Radius–depth Spearman | Clip fraction | Test radius d(0, z) | Radius gap | Reading |",
        "|---|---|---:|---:|---:|---:|---|",
    ]

    def f(v: Any, fmt: str = ".2f") -> str:
        return "–" if v is None or not math.isfinite(v) else format(v, fmt)

    for r in rows:
        if r["method"] in ("majority", "chance") or not math.isfinite(r.get("radius_depth_spearman", math.nan)):
            continue
        mean, std, clip = (
            r.get("radius_mean", math.nan),
            r.get("radius_std", math.nan),
            r.get("clip_fraction", math.nan),
        )
        lines.append(
            f"| {_label(r['method'])} | {_GEOMETRY.get(r['geometry'], r['geometry'])} | {f(r['radius_depth_spearman'])} "
            f"| {f(clip)} | {f(mean)} ± {f(std)} | {f(r.get('radius_gap', math.nan))} | {radius_reading(mean, std, clip)} |"
        )
    return "\n".join(lines)


def _cell(row: Mapping[str, Any], m: str) -> str:
    v, s = row.get(m, math.nan), row.get(f"{m}_std", math.nan)
    if v is None or not math.isfinite(v):
        return "–"
    return f"{v:.3f}" + (f" ± {s:.3f}" if s is not None and math.isfinite(s) else "")


def capstone_markdown(rows: Sequence[Mapping[str, Any]], baseline: str = "supcon", key: str = "hf1") -> str:
    """The Markdown table of :func:`capstone_rows`: methods, then *Majority class* and *Chance* in italics.

    Examples
    --------
    >>> rows = [{"method": "supcon", "geometry": "poincare", "n": 1, "hf1": 0.5},
    ...         {"method": "chance", "geometry": "", "n": 0, "hf1": 0.25}]
    >>> print(capstone_markdown(rows).splitlines()[2])
    | SupCon | Poincaré | 1 | 0.500 | – | – | – | – |
    """
    head = [
        "Method",
        "Geometry",
        "Seeds",
        *CAPSTONE_METRICS.values(),
        f"Δ {CAPSTONE_METRICS.get(key, key)} vs {_label(baseline)} [95 % CI]",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---:|" + "---:|" * (len(head) - 3)]
    for r in rows:
        special = r["method"] in ("majority", "chance")
        name = {"majority": "*Majority class*", "chance": "*Chance (uniform leaf)*"}.get(
            r["method"], _label(r["method"])
        )
        d = r.get("delta", math.nan)
        ci = (
            "–"
            if d is None or not math.isfinite(d)
            else f"{d:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]" + ("*" if r["low"] > 0 or r["high"] < 0 else "")
        )
        cells = [name, _GEOMETRY.get(r["geometry"], r["geometry"]), "" if special else str(r["n"])]
        lines.append("| " + " | ".join(cells + [_cell(r, m) for m in CAPSTONE_METRICS] + [ci]) + " |")
    return "\n".join(lines)


def _fmt_ci(r: Mapping[str, Any]) -> str:
    return f"{r['delta']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]"


def method_guide(tables: Mapping[str, Sequence[Mapping[str, Any]]], baseline: str = "supcon", key: str = "hf1") -> str:
    """The closing "which method when" guide, written from the capstone rows of each dataset.

    Per dataset: the best method on ``key`` and whether its paired interval against ``baseline``
    excludes 0 (a difference) or not (seed noise at this size); the methods whose interval lies
    entirely below 0 (worse than the baseline); whether any method beats the
    Majority class on ``key``; the fewest violations; and, among hyperbolic runs, the one whose
    prototype radius follows depth best (``radius_depth_spearman``) with its clip fraction.
    Nothing here is typed by hand: rerun the notebook at another size and the guide changes with it.

    Parameters
    ----------
    tables : mapping of dataset label to rows
        :func:`capstone_rows` of each dataset.
    baseline, key : str
        As in :func:`capstone_rows`.

    Returns
    -------
    str
        Markdown bullets, one block per dataset.

    Examples
    --------
    >>> rows = [{"method": "supcon", "geometry": "poincare", "n": 3, "hf1": 0.50, "violations": 0.4,
    ...          "delta": float("nan"), "radius_depth_spearman": 0.2, "clip_fraction": 0.0},
    ...         {"method": "hcl", "geometry": "poincare", "n": 3, "hf1": 0.55, "violations": 0.3,
    ...          "delta": 0.05, "low": 0.01, "high": 0.09, "radius_depth_spearman": 0.8, "clip_fraction": 0.0},
    ...         {"method": "majority", "geometry": "", "n": 0, "hf1": 0.52}, {"method": "chance", "geometry": "", "n": 0, "hf1": 0.3}]
    >>> print(method_guide({"toy": rows}).splitlines()[1])
    - **Best HF1: HCL (Poincaré) 0.550**, +0.050 [+0.010, +0.090] against SupCon over 3 seeds: the interval excludes 0, a difference at the 5 % level.
    """
    name = CAPSTONE_METRICS.get(key, key)
    out = []
    for data, rows in tables.items():
        methods = [r for r in rows if r["method"] not in ("majority", "chance") and math.isfinite(r.get(key, math.nan))]
        base = {r["method"]: r for r in rows if r["method"] in ("majority", "chance")}
        if not methods:
            continue
        best = max(methods, key=lambda r: r[key])
        lines = [f"**{data}**"]
        where = f"{_label(best['method'])} ({_GEOMETRY.get(best['geometry'], best['geometry'])})"
        if best["method"] == baseline:
            verdict = "the baseline itself: no method beat it on average"
        elif math.isfinite(best.get("delta", math.nan)):
            sig = best["low"] > 0 or best["high"] < 0
            verdict = f"{_fmt_ci(best)} against {_label(baseline)} over {best['n']} seeds: " + (
                "the interval excludes 0, a difference at the 5 % level."
                if sig
                else "the interval contains 0, so this ranking is within seed noise at this size."
            )
        else:
            verdict = f"over {best['n']} seed(s), too few for an interval: this ranking is not evidence."
        lines.append(f"- **Best {name}: {where} {best[key]:.3f}**, {verdict}")
        worse = [r for r in methods if math.isfinite(r.get("high", math.nan)) and r["high"] < 0]
        if worse:
            lines.append(
                f"- **Below {_label(baseline)}** (interval entirely under 0): "
                + ", ".join(
                    f"{_label(r['method'])} ({_GEOMETRY.get(r['geometry'], r['geometry'])}) {_fmt_ci(r)}" for r in worse
                )
                + "."
            )
        maj = base.get("majority", {}).get(key, math.nan)
        if math.isfinite(maj):
            above = [r for r in methods if r[key] > maj]
            lines.append(
                f"- Majority class scores {maj:.3f}: "
                + (
                    f"{len(above)} of {len(methods)} runs beat it"
                    if above
                    else "**no run beats it**: at this size the encoder has not learned more than the class prior"
                )
                + f" (chance: {base.get('chance', {}).get(key, math.nan):.3f})."
            )
        viol = [r for r in methods if math.isfinite(r.get("violations", math.nan))]
        if viol:
            v = min(viol, key=lambda r: r["violations"])
            lines.append(
                f"- Fewest violations: {_label(v['method'])} ({_GEOMETRY.get(v['geometry'], v['geometry'])}) {v['violations']:.3f}."
            )
        hyp = [r for r in methods if math.isfinite(r.get("radius_depth_spearman", math.nan))]
        if hyp:
            h = max(hyp, key=lambda r: r["radius_depth_spearman"])
            reading = radius_reading(
                h.get("radius_mean", math.nan), h.get("radius_std", math.nan), h.get("clip_fraction", math.nan)
            )
            spread = (
                f", test radius {h['radius_mean']:.2f} ± {h['radius_std']:.2f}"
                if math.isfinite(h.get("radius_mean", math.nan)) and math.isfinite(h.get("radius_std", math.nan))
                else ""
            )
            lines.append(
                f"- Depth in the radius: {_label(h['method'])} has the highest radius–depth Spearman, "
                f"{h['radius_depth_spearman']:.2f} (clip fraction {h.get('clip_fraction', math.nan):.2f}{spread}"
                + (f": {reading})" if reading != "–" else ")")
                + (
                    "; below 0.5 for every run: no method put the tree in the radius at this size."
                    if h["radius_depth_spearman"] < 0.5
                    else (
                        ". Its prototypes rise with depth, but on a saturated sphere or at the flat origin that "
                        "rise is no tree in the curved space (notebook 12)."
                        if reading in ("saturated sphere", "flat origin")
                        else "."
                    )
                )
            )
        out.append("\n".join(lines))
    return "\n\n".join(out)
