"""The radius tables of ``docs/hyperbolic-fidelity.md``, built from per-run CSVs.

The runs behind those tables (the quick preset's Poincaré runs of branches w22 and w22b: the
screening rows, K1/K2, F0/F1/F3, Q0–Q3) were not committed; the per-run numbers the page printed
are the data, transcribed into ``docs/results/fidelity/runs.csv`` (one row per run, the page's
precision). The summaries (means over seeds, ranges, the runs that meet the depth targets, ΔHF1
against a base setting) are computed from those rows here, so the page's summary tables cannot
drift from its per-run ones (``docs/results/make_tables.py --check``). Table kinds (``SPEC``):

* ``fidelity-runs CSV groups=G1,G2,...``: one row per run of the named groups (the page's per-seed
  tables); ``digits=3`` prints d(0, z) with three decimals;
* ``fidelity-summary CSV groups=G1,... base=G [settings=CSV]``: per group and method, the means of
  HF1 (with Δ against the base group's method), top-1, violations and d(0, z), the ranges of
  std / mean, Spearman and edge order over the seeds, and the runs meeting both depth targets;
  with ``settings=`` a column names each group's settings (``group,setting`` rows); with
  ``extra=CSV`` the body rows of a transcribed summary (the same columns, no per-run rows) follow;
* ``fidelity-paired CSV group=G baseline=METHOD [metrics=hf1,top1,violations]``: each method of
  one group minus ``baseline``, paired by seed (mean and 95 % Student-t interval);
* ``csv CSV [align=lrr...]``: a transcribed table (the page's own numbers where no per-run rows
  exist), the CSV's header as the table's header, cells as stored.

Depth targets (docs/hyperbolic-fidelity.md): ``edge_order`` ≥ 0.9 and ``radius_depth_spearman`` ≥ 0.8 in one run;
those two cells are set in **bold** in the per-run tables.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "EDGE_TARGET",
    "SPEARMAN_TARGET",
    "csv_table",
    "fidelity_paired",
    "fidelity_runs",
    "fidelity_summary",
    "meets_targets",
]

#: The depth targets of one run: edge order and radius–depth Spearman at least these.
EDGE_TARGET, SPEARMAN_TARGET = 0.9, 0.8


def _rows(path: Path, groups: list[str]) -> list[dict[str, Any]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    known = list(dict.fromkeys(r["group"] for r in rows))
    missing = [g for g in groups if g not in known]
    if missing:
        raise ValueError(f"{path.name}: groups {missing} not found; the file has {known}")
    return [r for g in groups for r in rows if r["group"] == g]


def meets_targets(row: dict[str, Any]) -> bool:
    """Both depth targets in one run: edge order ≥ 0.9 and Spearman ≥ 0.8.

    Examples
    --------
    >>> meets_targets({"edge_order": "0.91", "spearman": "0.86"}), meets_targets({"edge_order": "0.91", "spearman": "0.70"})
    (True, False)
    """
    return float(row["edge_order"]) >= EDGE_TARGET and float(row["spearman"]) >= SPEARMAN_TARGET


def fidelity_runs(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """One row per run (``fidelity-runs CSV groups=...``); the group's label on its first row only."""
    rd = int(opts.get("digits", 2))
    lines = [
        "| | method | seed | HF1 | top-1 | violations ↓ | d(0, z) mean ± std | std / mean | clip | Spearman | "
        "edge order | radius gap | norm AUROC | prototype d(0, ·) by depth |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    last = None
    for r in _rows(root / args[0], opts["groups"].split(",")):
        label = r["label"] if r["group"] != last else ""
        last = r["group"]
        bold = "**" if meets_targets(r) else ""
        f = {k: float(r[k]) for k in ("hf1", "top1", "violations", "radius_mean", "radius_std", "std_over_mean")}
        proto = " → ".join(f"{float(v):.2f}" for v in r["proto_by_depth"].split(";"))
        lines.append(
            f"| {label} | {r['method']} | {r['seed']} | {f['hf1']:.3f} | {f['top1']:.3f} | {f['violations']:.3f} | "
            f"{f['radius_mean']:.{rd}f} ± {f['radius_std']:.{rd}f} | {f['std_over_mean']:.2f} | {float(r['clip']):.2f} | "
            f"{bold}{float(r['spearman']):.2f}{bold} | {bold}{float(r['edge_order']):.2f}{bold} | "
            f"{float(r['radius_gap']):.3f} | {float(r['norm_auroc']):.2f} | {proto} |"
        )
    return "\n".join(lines) + "\n"


def fidelity_summary(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Means and ranges over seeds per group and method, ΔHF1 against ``base`` (``fidelity-summary``)."""
    groups = opts["groups"].split(",")
    base = opts["base"]
    rows = _rows(root / args[0], list(dict.fromkeys([*groups, base])))
    settings: dict[str, str] = {}
    if "settings" in opts:
        with open(root / opts["settings"], newline="", encoding="utf-8") as fh:
            settings = {r["group"]: r["setting"] for r in csv.DictReader(fh)}
    label = {r["group"]: r["label"] for r in rows}

    def runs(g: str, m: str) -> list[dict[str, Any]]:
        return [r for r in rows if r["group"] == g and r["method"] == m]

    def mean(rs: list[dict[str, Any]], k: str) -> float:
        return float(np.mean([float(r[k]) for r in rs]))

    head = "| | " + ("setting | " if settings else "") + "method | HF1 (Δ vs " + label[base] + ") | top-1 | "
    head += "violations ↓ | d(0, z) | std / mean | Spearman | edge order | targets met |"
    lines = [head, "|---|" + ("---|" if settings else "") + "---|" + "---:|" * 8]
    for g in groups:
        methods = list(dict.fromkeys(r["method"] for r in rows if r["group"] == g))
        for i, m in enumerate(methods):
            rs, ref = runs(g, m), runs(base, m)
            hf1 = mean(rs, "hf1")
            delta = hf1 - mean(ref, "hf1") if ref else float("nan")

            def rng(k: str, sep: str, rs: list[dict[str, Any]] = rs) -> str:
                v = [float(r[k]) for r in rs]
                return f"{min(v):.2f}{sep}{max(v):.2f}"

            first = label[g] if (i == 0 or settings) else ""
            cells = [first] + ([settings.get(g, "") if i == 0 else ""] if settings else []) + [m]
            cells += [
                f"{hf1:.3f} ({delta:+.3f})",
                f"{mean(rs, 'top1'):.3f}",
                f"{mean(rs, 'violations'):.3f}",
                f"{mean(rs, 'radius_mean'):.2f}",
                rng("std_over_mean", "–"),
                rng("spearman", "…"),
                rng("edge_order", "–"),
                f"{sum(meets_targets(r) for r in rs)}/{len(rs)}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    if "extra" in opts:
        with open(root / opts["extra"], newline="", encoding="utf-8") as fh:
            lines += ["| " + " | ".join(r) + " |" for r in list(csv.reader(fh))[1:]]
    return "\n".join(lines) + "\n"


def fidelity_paired(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Each method of ``group`` minus ``baseline``, paired by seed (``fidelity-paired``), 3 decimals."""
    from hierviz.report.stats import (
        paired_ci,  # heavy: scipy (hierviz.report.stats), imported when a paired table is built
    )

    rows = _rows(root / args[0], [opts["group"]])
    base = opts["baseline"]
    keys = opts.get("metrics", "hf1,top1,violations").split(",")
    titles = {"hf1": "Δ HF1", "top1": "Δ top-1", "violations": "Δ violations ↓", "spearman": "Δ Spearman"}
    ref = {r["seed"]: r for r in rows if r["method"] == base}
    lines = [
        f"| method − {base} | " + " | ".join(titles.get(k, f"Δ {k}") for k in keys) + " |",
        "|---|" + "---:|" * len(keys),
    ]
    n = 0
    for m in dict.fromkeys(r["method"] for r in rows if r["method"] != base):
        mine = {r["seed"]: r for r in rows if r["method"] == m}
        seeds = sorted(set(mine) & set(ref), key=int)
        n = len(seeds)
        cells = []
        for k in keys:
            mean, lo, hi, _ = paired_ci([float(mine[s][k]) for s in seeds], [float(ref[s][k]) for s in seeds])
            star = "*" if lo > 0 or hi < 0 else ""
            cells.append(f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]{star}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + f"\n\nΔ = method − {base} at the same seed, over {n} seeds; [low, high]: 95 % Student-t interval of the "
        "mean difference; * the interval excludes 0. From the per-run values as printed (3 decimals).\n"
    )


def csv_table(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """A transcribed table (``csv CSV [align=lrr...]``): the header and the cells as stored.

    ``align`` gives each column's alignment (``l`` left, ``r`` right); without it, a column after
    the first whose every non-empty cell is a number (signs, ``*`` and ``**`` aside) is right-aligned.
    """
    with open(root / args[0], newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], rows[1:]

    def numeric(j: int) -> bool:
        cells = [r[j].strip("*").lstrip("+-–−") for r in body if r[j] != ""]
        return j > 0 and bool(cells) and all(c[:1].isdigit() for c in cells)

    spec = opts.get("align") or "".join("r" if numeric(j) else "l" for j in range(len(head)))
    if len(spec) != len(head):
        raise ValueError(f"csv {args[0]}: align={spec!r} has {len(spec)} letters for {len(head)} columns")
    align = ["---:" if a == "r" else "---" for a in spec]
    lines = [("| " + " | ".join(head) + " |").replace("|  |", "| |"), "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"
