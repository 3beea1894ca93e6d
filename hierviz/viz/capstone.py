"""Notebook 10, the capstone: one table per dataset with baselines and paired CIs, a "which method when" guide.

Everything here reads what :func:`hierviz.experiments.compare` returned (its ``records``, ``arrays``
and ``tree``; any object with those works), so the notebook holds no library code:

* :func:`chance_report` -- the exact expected score of a uniformly random leaf (the *Chance* row);
* :func:`capstone_rows` / :func:`capstone_markdown` -- per method × geometry the mean ± std over seeds
  of HF1, H-Acc, Top-1 and Violations, the paired difference to a baseline method with its 95 % CI
  (:func:`hierviz.report.stats`' Student-t interval, here through :func:`hierviz.course.paired_ci`'s
  formula), and the Majority-class and Chance rows;
* :func:`method_guide` -- the closing guide, written from those rows (so it says what the numbers
  of *this* run say, at whatever size it ran);
* :func:`run_disk_panel` -- dropdowns (dataset, method) over the Poincaré disk of every hyperbolic run;
* :func:`capstone_overrides` -- the ``compare`` settings of both tables (one protocol, one split);
* :func:`table_setting` -- refuses a table whose runs mix protocols or splits;
* :func:`capstone_rows_from_folder` -- the same rows from a committed ``docs/results/`` folder;
* :func:`radius_reading` -- the one reading of the radius: prototype radii only beside clip fraction and spread.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.course import paired_ci
from hierviz.metrics import h_acc, hf1
from hierviz.metrics.baselines import majority_class_report
from hierviz.viz._fast import fast_figure
from hierviz.viz.disk import plot_poincare_disk

__all__ = [
    "CAPSTONE_METRICS",
    "CAPSTONE_PROTOCOL",
    "capstone_overrides",
    "FLAT_RADIUS",
    "SATURATED_CLIP",
    "capstone_rows_from_folder",
    "write_chance_csv",
    "radius_reading",
    "radius_table_markdown",
    "table_setting",
    "capstone_figure",
    "capstone_markdown",
    "capstone_rows",
    "chance_report",
    "method_guide",
    "run_disk_panel",
]

#: The table's columns (record ``metrics`` keys) and their labels; Violations is lower-is-better.
CAPSTONE_METRICS = {"hf1": "HF1", "h_acc": "H-Acc", "top1": "Top-1", "violations": "Violations ↓"}
_LOWER_IS_BETTER = {"violations"}

#: The one protocol of every capstone table: every method trains on all leaves of one split and is
#: scored on the same test samples (``t+pl``'s own ``"unseen"`` protocol would hold two leaves out and
#: score it on a different test problem; notebook 08 shows that protocol beside L and PL).
CAPSTONE_PROTOCOL = "classification"

#: Radius readings (:func:`radius_reading`): a clip fraction above this is a saturated sphere ...
SATURATED_CLIP = 0.5
#: ... and a mean geodesic radius below this is the flat origin: there the conformal factor
#: λ = 2 cosh²(r/2) is under 4, twice its value at the origin (r = 2 arcosh √2 = 1.763).
FLAT_RADIUS = 2.0 * math.acosh(math.sqrt(2.0))


def capstone_overrides(
    data: str,
    size: str,
    methods: Sequence[str],
    geometries: Sequence[str],
    seeds: int,
    dataset: str | None = None,
) -> list[str]:
    """The ``compare`` overrides of one capstone table (``--set`` strings, for ``resolve_config("quick", ...)``).

    Both tables share the method list, geometries, seeds, the linear-evaluation projection, the
    encoder's learning rate and :data:`CAPSTONE_PROTOCOL` (``eval.protocol``), so every row of a table
    is trained on one split and scored on the same test samples. Every setting a table depends on
    (encoder, sizes, batch, depth-term weights) is named here, so the tables do not change with the
    ``quick`` preset they are resolved against. The images are HAM10000's bundled
    sample (grouped split by lesion, the two-step tree); the text is 20 Newsgroups' official
    by-date split with an MLP encoder (width 16, d = 32, batch 64, 8 epochs, the quick preset's
    cone and centring weights, three Karcher steps per prototype as paper 01's T_mean = 3). At medium size the text table is the committed converged run's
    recipe (``docs/results/capstone-20news``: 2,000 messages, a stratified subset) at fewer seeds;
    at full size it trains on every message.

    Parameters
    ----------
    data : {"images", "text"}
    size : {"smoke", "medium", "full"}
        :func:`hierviz.course.resolve_size`'s size: smoke runs a few hundred samples for one epoch.
    methods, geometries : sequence of str
    seeds : int, ≥ 1
    dataset : str, optional
        The dataset name (default ``ham10000-sample`` / ``20news``).

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        An unknown ``data`` or ``size``.

    Examples
    --------
    >>> o = capstone_overrides("text", "medium", ["supcon", "t+pl"], ["euclidean", "poincare"], 5)
    >>> [x for x in o if x.startswith(("eval.protocol", "data.split", "seeds"))]
    ['seeds=5', 'eval.protocol=classification', 'data.split=official']
    """
    sizes = ("smoke", "medium", "full")
    if size not in sizes:
        raise ValueError(f"size must be one of {sizes} (hierviz.course.resolve_size), got {size!r}")
    pick = dict(zip(sizes, range(3)))[size]
    common = [
        f"methods={','.join(methods)}",
        f"geometries={','.join(geometries)}",
        f"seeds={int(seeds)}",
        "eval.projection=pca",
        "train.lr_backbone=1e-3",
        f"eval.protocol={CAPSTONE_PROTOCOL}",
    ]
    if data == "images":
        by = (
            ["data.limit=120", "train.epochs=1", "model.width=8"],
            ["data.limit=1000", "train.epochs=3", "model.width=16"],
            ["train.epochs=10", "model.width=32"],
        )
        image = [
            f"data.dataset={dataset or 'ham10000-sample'}",
            "data.tree=two-step",
            "data.image_size=32",
            "model.encoder=small_cnn",
            "model.embed_dim=32",
            "train.batch_size=128",
            "loss.cone_weight=0.2",
            "loss.center_weight=1.0",
        ]
        return common + image + by[pick]
    if data == "text":
        by = (
            ["data.limit=400", "train.epochs=1"],
            ["data.limit=2000", "train.epochs=8"],
            ["train.epochs=8"],
        )
        return (
            common
            + [
                "data.split=official",
                f"data.dataset={dataset or '20news'}",
                "data.tree=20news",
                "model.encoder=mlp",
                "model.width=16",
                "model.embed_dim=32",
                "train.batch_size=64",
                "data.workers=0",
                "eval.mean_steps=3",
                "loss.cone_weight=0.2",
                "loss.center_weight=1.0",
            ]
            + by[pick]
        )
    raise ValueError(f"data must be 'images' or 'text', got {data!r}")


def _split_key(rec: Mapping[str, Any]) -> tuple:
    cfg = rec.get("config") or {}
    d, e = cfg.get("data") or {}, cfg.get("eval") or {}
    keys = ("dataset", "path", "limit", "split", "split_seed")
    return tuple(d.get(k) for k in keys) + (e.get("split"), e.get("fold") if rec.get("protocol") == "unseen" else None)


def table_setting(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The protocol and split that every run of one table shares; refuses a table that mixes them.

    Parameters
    ----------
    records : sequence of dict
        Run records (``result.json``) of one table: ``protocol`` and ``config`` (the run's
        ``config.json``: ``data.dataset``, ``data.limit``, ``data.split``, ``data.split_seed``,
        ``eval.split``, ``eval.fold``).

    Returns
    -------
    dict
        ``{"protocol": str, "split": tuple}``.

    Raises
    ------
    ValueError
        No records, or runs under more than one protocol or split (the message lists them and
        names ``eval.protocol`` as the fix).

    Examples
    --------
    >>> cfg = {"data": {"dataset": "20news", "split": "official"}, "eval": {"split": "val"}}
    >>> table_setting([{"method": "supcon", "protocol": "classification", "config": cfg}])["protocol"]
    'classification'
    """
    if not records:
        raise ValueError("records is empty: one table needs at least one run")
    protocols: dict[str, list[str]] = {}
    splits: dict[tuple, list[str]] = {}
    for r in records:
        protocols.setdefault(str(r.get("protocol")), []).append(str(r.get("method")))
        splits.setdefault(_split_key(r), []).append(str(r.get("method")))
    if len(protocols) > 1:
        parts = "; ".join(f"{p}: {', '.join(dict.fromkeys(m))}" for p, m in protocols.items())
        raise ValueError(
            f"one table mixes evaluation protocols ({parts}): its rows score different test problems; "
            f"run compare with eval.protocol={CAPSTONE_PROTOCOL} (capstone_overrides does)"
        )
    if len(splits) > 1:
        raise ValueError(
            f"one table mixes {len(splits)} data splits (data.dataset/limit/split/split_seed, eval.split); "
            "make the table from one compare call"
        )
    return {"protocol": next(iter(protocols)), "split": next(iter(splits))}


def radius_reading(radius_mean: float, radius_std: float, clip_fraction: float) -> str:
    """The course's one reading of a hyperbolic run's radius, from the sample radius and the clip fraction.

    Prototype radii rising with depth mean a tree in the radius only when the samples are neither
    on a sphere nor at the flat origin (notebook 12): Fréchet means of points on a sphere rise with
    depth by themselves (the wider the group, the deeper inside the sphere its mean lies), and below
    radius :data:`FLAT_RADIUS` = 1.763 the conformal factor :math:`\\lambda = 2\\cosh^2(r/2)` stays under 4,
    within a factor 2 of its value at the origin, so distances are the Euclidean ones up to that
    factor. So the prototype radii are read only beside the clip fraction and the spread of the
    test radii.

    Parameters
    ----------
    radius_mean, radius_std : float
        Mean and std of the test samples' geodesic radius d(0, z).
    clip_fraction : float in [0, 1]
        Share of test samples at the head's bound.

    Returns
    -------
    str
        ``"saturated sphere"`` (clip fraction > 0.5 or a spread under 2 % of the mean),
        ``"flat origin"`` (mean radius < :data:`FLAT_RADIUS`), ``"in the curved region"`` otherwise;
        ``"–"`` for NaN.

    Examples
    --------
    >>> radius_reading(6.0, 0.0, 1.0), radius_reading(0.44, 0.08, 0.0), radius_reading(2.5, 0.3, 0.0)
    ('saturated sphere', 'flat origin', 'in the curved region')
    """
    vals = (radius_mean, radius_std, clip_fraction)
    if any(v is None or not math.isfinite(float(v)) for v in vals):
        return "–"
    if clip_fraction > SATURATED_CLIP or radius_std < 0.02 * radius_mean:
        return "saturated sphere"
    if radius_mean < FLAT_RADIUS:
        return "flat origin"
    return "in the curved region"


def chance_report(y_test: Any, tree: Any) -> dict[str, float]:
    """The exact expected HF1, H-Acc and Top-1 of predicting a uniformly random leaf for every test sample.

    E[m] = (1/C) Σ_p m(y_test, p) over the C leaves p (no sampling): Top-1 is 1/C whatever the
    labels, HF1 and H-Acc depend on how the test leaves sit in the tree. Violations and PC-Order
    need embeddings and are NaN, as in the Majority row.

    Parameters
    ----------
    y_test : array-like of int, shape (n,)
        Leaf indices ``0 .. tree.num_leaves - 1``.
    tree : LabelTree

    Returns
    -------
    dict
        ``top1, hf1, h_acc`` (floats in [0, 1]) and ``violations``, ``pc_order`` (NaN).

    Raises
    ------
    ValueError
        Empty ``y_test`` or a label outside ``0 .. C-1``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> r = chance_report([0, 2], tree)  # a1: 1, 1/2, 0 over (a1, a2, b1); b1: 0, 0, 1
    >>> round(r["top1"], 4), round(r["hf1"], 4)
    (0.3333, 0.4167)
    """
    y = np.asarray(y_test).reshape(-1)
    C = int(tree.num_leaves)
    if y.size == 0:
        raise ValueError("y_test is empty; pass the test labels of the run")
    if y.min() < 0 or y.max() >= C:
        raise ValueError(f"y_test has labels outside 0..{C - 1} (the tree's leaves)")
    out = {"top1": float(np.mean([np.mean(y == p) for p in range(C)]))}
    for name, fn in (("hf1", hf1), ("h_acc", h_acc)):
        out[name] = float(np.mean([float(fn(y, np.full_like(y, p), tree)) for p in range(C)]))
    return out | {"violations": math.nan, "pc_order": math.nan}


# viz sits below report (lint-imports), so the display names are kept here
_METHOD = {"supcon": "SupCon", "simclr": "SimCLR", "hwc+lam": "HWC+LAM", "g-hmlc": "G-HMLC", "a-hmlc": "A-HMLC",
           "hcl": "HCL", "t+pl": "T+PL", "hyilr": "HyILR", "hmce": "HMCE", "ce": "CE"}  # fmt: skip
_GEOMETRY = {"euclidean": "Euclidean", "poincare": "Poincaré", "lorentz": "Lorentz"}


def _label(method: str) -> str:
    return _METHOD.get(method, method.upper())


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


def run_disk_panel(results: Mapping[str, Any], geometry: str = "poincare", seed: int = 0, max_points: int = 300):
    """Dropdowns (dataset, method) over the Poincaré disk of every hyperbolic run of the capstone.

    Each figure is :func:`hierviz.viz.plot_poincare_disk` of the run's test embeddings (reduced to 2-D
    through logmap₀ → PCA → expmap₀ when d > 2) with the tree drawn from the origin. All of them are
    drawn when the panel is made (one per dataset × method), so a move only sends a stored figure.

    Parameters
    ----------
    results : mapping of dataset label to CompareResult
    geometry : str, default "poincare"
    seed : int, default 0
    max_points : int, default 300
        Test points drawn per run (a seeded subset; the Fréchet means use all of them).

    Returns
    -------
    hierviz.viz.widgets.Panel
        Controls ``"data"`` and ``"method"``.

    Raises
    ------
    ValueError
        No run of ``geometry`` in ``results``.
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported only when a panel is built

    from hierviz.viz.widgets import Panel  # heavy: ipywidgets (viz.widgets imports it)

    runs = {d: sorted({r["method"] for r in res.records if r["geometry"] == geometry}) for d, res in results.items()}
    runs = {d: m for d, m in runs.items() if m}
    if not runs:
        raise ValueError(f"no {geometry} run in results; the disk needs hyperbolic runs (geometries={geometry})")
    methods = sorted({m for ms in runs.values() for m in ms}, key=lambda m: [*_METHOD, m].index(m))
    # Every (dataset, method) figure is drawn here, once: a move only sends a stored figure (drawing
    # one on the first visit put the Fréchet means and the 2-D reduction in the redraw, 0.6 s).
    figures: dict[tuple[str, str], Any] = {}
    for data, ms in runs.items():
        res = results[data]
        for method in methods:
            if method not in ms:
                figures[(data, method)] = fast_figure(
                    [], {"title": {"text": f"{data}: no {_label(method)} run"}, "height": 300}
                )
                continue
            a = res.arrays(method, geometry, seed)
            rec = next(r for r in res.records if r["method"] == method and r["geometry"] == geometry)
            figures[(data, method)] = plot_poincare_disk(
                a["z_test"], a["y_test"], res.tree, c=float(rec.get("curvature") or 1.0), max_points=max_points,
                title=f"{data}: {_label(method)} ({_GEOMETRY.get(geometry, geometry)}, seed {seed}), test embeddings",
            )  # fmt: skip

    def update(data: str, method: str):
        return figures[(data, method)]

    style = {"description_width": "initial"}
    controls = {
        "data": widgets.Dropdown(options=list(runs), description="dataset", style=style),
        "method": widgets.Dropdown(options=[(_label(m), m) for m in methods], description="method", style=style),
    }
    return Panel(controls, update, "Every hyperbolic run in the disk")


def capstone_figure(rows: Sequence[Mapping[str, Any]], key: str = "hf1", title: str = "") -> Any:
    """Bars of ``key`` per method × geometry (± std over seeds), with the Majority and Chance levels as lines.

    Parameters
    ----------
    rows : sequence of dict
        :func:`capstone_rows`.
    key : str, default "hf1"
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per geometry; horizontal dashed lines ``"Majority class"`` and dotted ``"Chance"``.

    Examples
    --------
    >>> rows = [{"method": "supcon", "geometry": "poincare", "n": 2, "hf1": 0.5, "hf1_std": 0.1},
    ...         {"method": "majority", "geometry": "", "n": 0, "hf1": 0.52}, {"method": "chance", "geometry": "", "n": 0, "hf1": 0.3}]
    >>> [t.name for t in capstone_figure(rows).data]
    ['Poincaré', 'Majority class 0.520', 'Chance 0.300']
    """
    methods = [r for r in rows if r["method"] not in ("majority", "chance")]
    order = list(dict.fromkeys(_label(r["method"]) for r in methods))
    data: list[dict] = []
    for g in dict.fromkeys(r["geometry"] for r in methods):
        sel = [r for r in methods if r["geometry"] == g]
        data.append(
            dict(
                type="bar",
                x=[_label(r["method"]) for r in sel],
                y=[r[key] for r in sel],
                error_y=dict(type="data", array=[0.0 if not math.isfinite(r.get(f"{key}_std", math.nan)) else r[f"{key}_std"] for r in sel]),
                name=_GEOMETRY.get(g, g),
            )
        )  # fmt: skip
    for r, dash in (
        (r, "dash" if r["method"] == "majority" else "dot") for r in rows if r["method"] in ("majority", "chance")
    ):
        name = "Majority class" if r["method"] == "majority" else "Chance"
        data.append(
            dict(type="scatter", x=[order[0], order[-1]], y=[r[key]] * 2, mode="lines", name=f"{name} {r[key]:.3f}",
                 line=dict(dash=dash, color="black" if dash == "dash" else "grey", width=2))
        )  # fmt: skip
    label = CAPSTONE_METRICS.get(key, key)
    layout = dict(
        title=dict(text=title or f"{label} per method (mean ± std over seeds)"),
        yaxis=dict(title=dict(text=label), rangemode="tozero"),
        xaxis=dict(categoryorder="array", categoryarray=order),
        barmode="group",
        height=380,
        template="plotly_white",
    )
    return fast_figure(data, layout)
