"""The power line of each results page: the paper's effect, the paired σ_Δ measured here, the n it needs.

A claim of a paper is a difference δ between two methods (or a method and its ablation). Here
runs are paired by seed (or by fold), so the measured quantity is the paired difference
Δ_s = A_s − B_s; its sample standard deviation σ_Δ (ddof = 1) and the paper's δ give the number of
pairs a two-sided paired t-test at 95 % needs to show δ with power 0.8
(:func:`hierviz.report.stats.seeds_needed`). The block ``<!-- table: power CSV page=PAGE -->``
of a results page lists its claims from ``CSV`` (one row per claim, columns below) and computes
every other cell from the committed per-run CSVs the row names, so the line cannot drift from the
data (``docs/results/make_tables.py --check``).

Columns of the claims CSV
-------------------------
page
    The page the row belongs to (``paper01`` … ``paper05``).
claim
    The claim in a few words (Markdown).
paper
    The effect as the paper reports it, in words (e.g. ``+1.38 micro-F1 (WOS, Table 4)``).
effect
    δ as a number, in the unit the table shows (``scale`` × the CSV's unit; e.g. 1.38 points).
scale
    Factor from the CSV's unit to the table's (100: fractions shown as points; 1: as stored).
source
    ``KIND:PATH``, relative to ``docs/results/``:

    * ``compare:FOLDER`` or ``compare:FILE.csv``: ``hierviz compare``'s per-run ``results.csv``,
      paired by seed within ``geometry``;
    * ``htc:FOLDER``: ``hierviz htc``'s ``seeds.csv``, paired by seed;
    * ``folds:GLOB``: one ``results.csv`` folder per fold (paper 04), seeds averaged within a fold,
      paired by fold;
    * ``retrieval:FILE.csv``: ``hierviz retrieval``'s per-fold ``folds.csv``, paired by fold
      (``storage`` filters the rows, default fp16 for mapper rows);
    * empty: nothing measured here (``note`` says why).
a, b
    The two methods (variants); Δ = a − b.
metric
    The CSV column.
geometry
    The geometry of compare rows (empty for the others).
note
    Shown in the last column when no σ_Δ is measured.
"""

from __future__ import annotations

import csv
import glob
import math
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.report import read_results_csv
from hierviz.report.stats import paired_ci, seeds_needed

__all__ = ["CLAIM_COLUMNS", "paired_values", "power_rows", "power_table"]

#: The claims CSV's columns (the module docstring describes them).
CLAIM_COLUMNS = ["page", "claim", "paper", "effect", "scale", "source", "a", "b", "metric", "geometry", "note"]


def _fold_mean(rows: list[dict[str, Any]], method: str, key: str) -> float:
    v = [float(r[key]) for r in rows if r["method"] == method and key in r]
    v = [x for x in v if math.isfinite(x)]
    return float(np.mean(v)) if v else float("nan")


def paired_values(root: Path, source: str, a: str, b: str, metric: str, geometry: str = "") -> tuple[list, list, str]:
    """The paired values of ``a`` and ``b`` (same order) from ``source`` and what a pair is (``seed``/``fold``).

    Parameters
    ----------
    root : Path
        ``docs/results/``.
    source : str
        ``KIND:PATH`` (the module docstring lists the kinds).
    a, b, metric, geometry : str
        Methods (variants), the CSV column, and the geometry of compare rows.

    Returns
    -------
    (list of float, list of float, str)

    Raises
    ------
    ValueError
        An unknown kind, or fewer than 2 pairs (the message names the source).
    """
    kind, _, path = source.partition(":")
    if kind == "compare":
        target = root / path
        rows = read_results_csv(target if target.suffix == ".csv" else target / "results.csv")
        geo = geometry or "euclidean"
        by = {
            m: {int(r["seed"]): float(r[metric]) for r in rows if r["method"] == m and r["geometry"] == geo}
            for m in (a, b)
        }
        unit = "seed"
    elif kind == "htc":
        with open(root / path / "seeds.csv", newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        by = {}
        for m in (a, b):
            mine = [r for r in rows if r["method"] == m]
            lam = mine[0]["lam"] if mine else ""
            by[m] = {int(r["seed"]): float(r[metric]) for r in mine if r["lam"] == lam}
        unit = "seed"
    elif kind == "folds":
        folders = sorted(glob.glob(str(root / path)))
        per_fold = [read_results_csv(Path(f) / "results.csv") for f in folders]
        by = {m: {i: _fold_mean(rows, m, metric) for i, rows in enumerate(per_fold)} for m in (a, b)}
        unit = "fold"
    elif kind == "retrieval":
        with open(root / path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        by = {}
        for m in (a, b):
            mine = [r for r in rows if r["variant"] == m]
            if any(r["storage"] == "fp16" for r in mine) and any(r["storage"] != "fp16" for r in mine):
                mine = [r for r in mine if r["storage"] == "fp16"]
            by[m] = {int(r["fold"]): float(r[metric]) for r in mine}
        unit = "fold"
    else:
        raise ValueError(f"power source {source!r}: the kind must be compare, htc, folds or retrieval")
    keys = sorted(set(by[a]) & set(by[b]))
    pairs = [(by[a][k], by[b][k]) for k in keys if math.isfinite(by[a][k]) and math.isfinite(by[b][k])]
    if len(pairs) < 2:
        raise ValueError(f"power source {source!r}: {a} and {b} share {len(pairs)} {unit}(s) with {metric}; need 2")
    return [p[0] for p in pairs], [p[1] for p in pairs], unit


def _read_claims(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    missing = [c for c in CLAIM_COLUMNS if rows and c not in rows[0]]
    if missing:
        raise ValueError(f"{path}: the claims CSV lacks the columns {missing}")
    return rows


def power_rows(root: Path, claims: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Each claim with ``sigma``, ``n``, ``ci`` (mean, low, high, n; table units) and ``needed`` (or None)."""
    out = []
    for c in claims:
        row: dict[str, Any] = dict(c, sigma=None, n=None, ci=None, needed=None, unit="")
        if c["source"]:
            scale = float(c["scale"] or 1)
            x, y, unit = paired_values(root, c["source"], c["a"], c["b"], c["metric"], c["geometry"])
            d = scale * (np.asarray(x, dtype=float) - np.asarray(y, dtype=float))
            row["sigma"] = float(d.std(ddof=1))
            row["n"] = len(d)
            row["unit"] = unit
            m, lo, hi, n = paired_ci(list(scale * np.asarray(x, dtype=float)), list(scale * np.asarray(y, dtype=float)))
            row["ci"] = (m, lo, hi, n)
            row["needed"] = seeds_needed(float(c["effect"]), row["sigma"])
        out.append(row)
    return out


def _num(v: float) -> str:
    return f"{v:.3f}" if abs(v) < 0.1 else f"{v:.2f}"


def power_table(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """``power CSV page=PAGE``: the page's claims with δ, the measured σ_Δ, the CI here and the n needed."""
    claims = _read_claims(root / args[0])
    if "page" in opts:
        claims = [c for c in claims if c["page"] == opts["page"]]
    lines = [
        "| claim | the paper's effect | δ | Δ here: mean [95 % CI] | σ_Δ here | n here | n needed | status |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in power_rows(root, claims):
        if r["sigma"] is None:
            lines.append(f"| {r['claim']} | {r['paper']} | {float(r['effect']):g} | – | – | – | – | {r['note']} |")
            continue
        m, lo, hi, n = r["ci"]
        star = "*" if lo > 0 or hi < 0 else ""
        d = 3 if float(r["scale"] or 1) == 1 else 2  # fractions: 3 decimals; points: 2
        ci = f"{m:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]{star}"
        need = r["needed"]
        status = (
            f"n here suffices ({n} ≥ {need})"
            if n >= need
            else f"needs {need} {r['unit']}s ({need - n} more)" + (f"; {r['note']}" if r["note"] else "")
        )
        lines.append(
            f"| {r['claim']} | {r['paper']} | {float(r['effect']):g} | {ci} | {_num(r['sigma'])} | {n} {r['unit']}s | "
            f"{need} | {status} |"
        )
    return "\n".join(lines) + (
        "\n\nδ: the paper's effect in the table's unit; Δ = a − b paired by seed or fold, from the committed CSVs "
        "(`power/claims.csv` names them); σ_Δ: its sample standard deviation; n needed: the pairs a two-sided "
        "paired t-test at 95 % needs to detect δ with power 0.8 given σ_Δ "
        "(`hierviz.report.stats.seeds_needed`: ((z₀.₉₇₅ + z₀.₈) σ_Δ / δ)², refined with the t distribution); "
        "* the interval excludes 0. σ_Δ from 3 pairs is itself uncertain (its 95 % interval spans 0.52–6.3 × the "
        "estimate), so an n needed from 3 pairs is a first estimate. Not in σ_Δ: the spread of one run across torch "
        "builds and thread counts (platform noise, `docs/results/README.md`), which every run of a comparison "
        "shares only when all its runs come from one machine and build.\n"
    )
