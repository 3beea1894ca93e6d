"""The rows of a capstone table, from a ``compare`` result or from a committed ``docs/results/`` folder.

:func:`capstone_rows` -- per method × geometry the mean ± std over seeds of every metric of
:data:`~hierviz.viz.capstone.CAPSTONE_METRICS`, the paired difference to a baseline method with
its 95 % CI, and the Majority-class and Chance rows; :func:`capstone_rows_from_folder` -- the same
rows from a committed folder; :func:`write_chance_csv` -- the Chance row written beside a run.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.course import paired_ci
from hierviz.metrics.baselines import majority_class_report
from hierviz.viz.capstone.setting import (
    CAPSTONE_METRICS,
    CAPSTONE_PROTOCOL,
    chance_report,
    table_setting,
)


def _runs(result: Any) -> dict[tuple[str, str], dict[int, dict]]:
    runs: dict[tuple[str, str], dict[int, dict]] = {}
    for rec in result.records:
        runs.setdefault((rec["method"], rec["geometry"]), {})[int(rec["seed"])] = rec
    return runs


def _method_rows(
    runs: Mapping[tuple[str, str], Mapping[int, Mapping[str, Any]]], baseline: str, key: str, min_seeds: int
) -> list[dict[str, Any]]:
    """Per method × geometry: means ± stds over seeds, the paired difference to ``baseline``, the radius means."""
    first = next(iter(next(iter(runs.values())).values()))
    if key not in first["metrics"]:
        raise ValueError(f"key {key!r} is not a metric of the runs; have {sorted(first['metrics'])}")
    rows = []
    for (method, geometry), by_seed in runs.items():
        seeds = sorted(by_seed)
        row: dict[str, Any] = {"method": method, "geometry": geometry, "n": len(seeds)}
        for m in CAPSTONE_METRICS:
            v = np.array([by_seed[s]["metrics"].get(m, math.nan) for s in seeds], dtype=float)
            row[m] = float(v.mean())
            row[f"{m}_std"] = float(v.std(ddof=1)) if len(v) > 1 else math.nan
        for m in ("radius_depth_spearman", "clip_fraction", "radius_gap", "radius_mean", "radius_std"):
            v = [(by_seed[s].get("radius") or {}).get(m) for s in seeds]
            v = [x for x in v if x is not None and geometry != "euclidean"]
            row[m] = float(np.mean(v)) if v else math.nan
        base = runs.get((baseline, geometry), {})
        common = [s for s in seeds if s in base]
        row["delta"] = row["low"] = row["high"] = math.nan
        if method != baseline and len(common) >= max(2, min_seeds):
            a = [by_seed[s]["metrics"][key] for s in common]
            b = [base[s]["metrics"][key] for s in common]
            if np.isfinite(a).all() and np.isfinite(b).all():  # a failed run's NaN leaves the row without an interval
                ci = paired_ci(a, b)
                row["delta"], row["low"], row["high"] = ci["mean_diff"], ci["low"], ci["high"]
        rows.append(row)
    return rows


def capstone_rows(result: Any, baseline: str = "supcon", key: str = "hf1", min_seeds: int = 3) -> list[dict[str, Any]]:
    """One row per method × geometry of a ``compare`` result, then the Majority and Chance rows.

    Parameters
    ----------
    result : CompareResult
        What :func:`hierviz.experiments.compare` returned (``records``, ``arrays``, ``tree``).
    baseline : str, default "supcon"
        The method the paired differences are taken against (same geometry, same seed).
    key : str, default "hf1"
        The metric of the paired difference.
    min_seeds : int, default 3
        Fewest common seeds for an interval (``hierviz.report.stats.MIN_SEEDS``, the rule of
        ``hierviz compare``'s paired table: at 2 seeds the interval spans ±12.7 standard deviations of
        the differences, or is 0 wide when both differences agree).

    Returns
    -------
    list of dict
        Method rows: ``method, geometry, n`` (seeds), per metric of :data:`CAPSTONE_METRICS` its
        ``mean`` and ``std`` (``"<metric>"``, ``"<metric>_std"``, std NaN for one seed), and
        ``delta, low, high`` (``key`` minus the baseline's over the common seeds, with the 95 %
        Student-t interval; NaN with fewer than ``min_seeds`` common seeds or for the baseline itself), and
        the radius metrics ``radius_depth_spearman``, ``clip_fraction``, ``radius_gap``, ``radius_mean``,
        ``radius_std`` (means over seeds; NaN for Euclidean runs). Then ``{"method": "majority", ...}``
        and ``{"method": "chance", ...}``.

    Raises
    ------
    ValueError
        ``result`` has no records, ``key`` is not one of the records' metrics, or the runs mix
        protocols or splits (:func:`table_setting`).
    """
    runs = _runs(result)
    if not runs:
        raise ValueError("result has no run records; run compare(...) first")
    table_setting(result.records)  # one protocol and one split, or no table
    first = next(iter(next(iter(runs.values())).values()))
    rows = _method_rows(runs, baseline, key, min_seeds)
    a = result.arrays(first["method"], first["geometry"], int(first["seed"]))
    maj = majority_class_report(a["y_train"], a["y_test"], result.tree)
    rows.append({"method": "majority", "geometry": "", "n": 0} | {m: float(maj[m]) for m in CAPSTONE_METRICS})
    rows.append({"method": "chance", "geometry": "", "n": 0} | chance_report(a["y_test"], result.tree))
    return rows


_RADIUS_KEYS = ("radius_depth_spearman", "clip_fraction", "radius_gap", "radius_mean", "radius_std")


def capstone_rows_from_folder(
    folder: Any, baseline: str = "supcon", key: str = "hf1", min_seeds: int = 3
) -> list[dict[str, Any]]:
    """:func:`capstone_rows` of a committed ``compare`` folder: ``results.csv``, ``baselines.csv``, ``chance.csv``.

    The committed converged runs (``docs/results/capstone-20news``) keep no embeddings, so the rows
    come from the per-run CSV (one row per method × geometry × seed, the metrics and the five radius
    metrics), the Majority row from ``baselines.csv`` and the Chance row from ``chance.csv``
    (:func:`chance_report` of the run's test labels, written when the folder was made). Its
    ``config.json`` must name one protocol for all methods (``eval.protocol``).

    Parameters
    ----------
    folder : str or Path
    baseline, key, min_seeds
        As in :func:`capstone_rows`.

    Returns
    -------
    list of dict
        The rows of :func:`capstone_rows` (same keys), for :func:`capstone_markdown`,
        :func:`capstone_figure` and :func:`method_guide`.

    Raises
    ------
    FileNotFoundError
        ``results.csv`` missing (the message names the folder).
    ValueError
        ``config.json`` leaves ``eval.protocol`` unset (each method's own protocol: a mixed table).

    Notes
    -----
    Notebook 10 §3 calls it on ``results_dir() / "capstone-20news"``; ``tests/test_capstone_fair.py``
    checks it against :func:`capstone_rows`' paired interval on a hand-made folder.
    """

    folder = Path(folder)
    path = folder / "results.csv"
    if not path.is_file():
        raise FileNotFoundError(f"folder={str(folder)!r} has no results.csv; pass a hierviz compare output folder")
    cfg_file = folder / "config.json"
    if cfg_file.is_file():
        protocol = (json.loads(cfg_file.read_text(encoding="utf-8")).get("eval") or {}).get("protocol")
        if protocol is None:
            raise ValueError(
                f"{cfg_file}: eval.protocol is unset, so each method ran under its own protocol; "
                f"a fair table needs eval.protocol={CAPSTONE_PROTOCOL}"
            )

    def num(v: str) -> float:
        try:
            return float(v)
        except (TypeError, ValueError):
            return math.nan

    runs: dict[tuple[str, str], dict[int, dict]] = {}
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            rec = {
                "metrics": {m: num(r.get(m, "")) for m in CAPSTONE_METRICS},
                "radius": {m: num(r[m]) for m in _RADIUS_KEYS if r.get(m, "") != ""} or None,
            }
            runs.setdefault((r["method"], r["geometry"]), {})[int(r["seed"])] = rec
    if not runs:
        raise ValueError(f"{path} has no runs")
    rows = _method_rows(runs, baseline, key, min_seeds)
    for name in ("majority", "chance"):
        file = folder / ("baselines.csv" if name == "majority" else "chance.csv")
        if file.is_file():
            with file.open(encoding="utf-8") as f:
                for r in csv.DictReader(f):
                    if r.get("baseline", name) == name:
                        rows.append(
                            {"method": name, "geometry": "", "n": 0} | {m: num(r.get(m, "")) for m in CAPSTONE_METRICS}
                        )
    return rows


def write_chance_csv(result: Any, path: Any) -> dict[str, float]:
    """Write the Chance row of a ``compare`` result (its first run's test labels) to ``path`` as CSV.

    Returns
    -------
    dict
        :func:`chance_report` of the test labels.
    """

    first = result.records[0]
    a = result.arrays(first["method"], first["geometry"], int(first["seed"]))
    rep = chance_report(a["y_test"], result.tree)
    with Path(path).open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["baseline", *CAPSTONE_METRICS])
        w.writerow(["chance", *(f"{rep[m]:.6g}" for m in CAPSTONE_METRICS)])
    return rep
