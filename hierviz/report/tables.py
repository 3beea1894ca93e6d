"""Results tables: ``results.csv`` (one row per run) and the Markdown/HTML tables.

The tables' columns default to :func:`default_metrics`: the registered metric keys
(:data:`hierviz.metrics.METRIC_INFO`) that the runs hold, in registration order: paper 01
Table 1's five metrics (:data:`METRICS`) and the imbalance-aware two for the classification
probe, paper 04 Table I's seven (:data:`UNSEEN_METRICS`) for the seen/unseen protocol, the
MAP@k columns for retrieval, a classifier's columns where a method has one, and any metric a
user module registers. Titles and directions are read from the registry when they are looked up
(:data:`METRIC_LABELS`, :data:`LOWER_IS_BETTER`), so a metric registered after this module was
imported has its title. ``results.csv`` always holds every metric of every run.
"""

from __future__ import annotations

import csv
import html
import math
from collections.abc import Iterable, Mapping, Sequence, Set
from pathlib import Path
from typing import Any

import numpy as np

from hierviz._registry import registry_for
from hierviz.metrics.htc import CLASSIFIER_METRICS
from hierviz.metrics.registry import METRIC_INFO

__all__ = [
    "METRICS",
    "UNSEEN_METRICS",
    "RETRIEVAL_METRICS",
    "CLASSIFIER_METRICS",
    "IMBALANCE_METRICS",
    "BASELINE_LABELS",
    "METRIC_LABELS",
    "GEOMETRY_LABELS",
    "METHOD_LABELS",
    "DISPLAY_KEYS",
    "LOWER_IS_BETTER",
    "OPTIONAL_METRICS",
    "method_label",
    "metric_label",
    "higher_is_better",
    "geometry_label",
    "default_metrics",
    "write_results_csv",
    "read_results_csv",
    "summarise",
    "results_markdown",
    "results_html_table",
]

#: Metric keys in paper 01 Table 1 column order (the first five registered metrics).
METRICS = tuple(METRIC_INFO.names()[:5])
#: Paper 04 (Generalised triplets) Table I columns, from the unseen protocol (:mod:`hierviz.evaluation.unseen`).
UNSEEN_METRICS = ("leaf_f1", "rp5", "mnr", "ndcg_sum", "ndcg_max", "acc_blind", "acc_aware")
#: Imbalance-aware columns (a majority-class guess scores well on accuracy alone): balanced accuracy and macro-F1 of the probe's predictions.
IMBALANCE_METRICS = ("bal_acc", "macro_f1")
#: Paper 03 (Hyper-DINO) §3.1 columns, from the retrieval protocols (:mod:`hierviz.evaluation.retrieval`).
RETRIEVAL_METRICS = ("map@1", "map@5", "map@10", "map@20", "p@1", "r_precision")
#: Display names of the input-free baseline rows (:mod:`hierviz.metrics.baselines`).
BASELINE_LABELS = {"majority": "Majority class", "chance": "Random ranking (chance)"}


class _MetricLabels(Mapping):
    """``METRIC_LABELS[key]``: column titles read from the metric registry at each lookup."""

    def __getitem__(self, name: str) -> str:
        if name not in METRIC_INFO:
            raise KeyError(name)
        return METRIC_INFO.get(name).label

    def __iter__(self):
        return iter(METRIC_INFO.names())

    def __len__(self) -> int:
        return len(METRIC_INFO)


class _MetricSet(Set):
    """The registered metrics with one property, read from the registry at each lookup."""

    def __init__(self, test) -> None:
        self._test = test

    def _names(self) -> list[str]:
        return [n for n in METRIC_INFO.names() if self._test(METRIC_INFO.get(n))]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in METRIC_INFO and self._test(METRIC_INFO.get(name))

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


#: Column titles used in the tables: a live view of :data:`hierviz.metrics.METRIC_INFO` (a metric
#: registered later, e.g. by an ``--import`` module, has its title).
METRIC_LABELS: Mapping[str, str] = _MetricLabels()
#: Metrics where lower is better (bolded as minimum): a live view of the registry.
LOWER_IS_BETTER: Set[str] = _MetricSet(lambda info: not info.higher_is_better)
#: Short geometry names for column titles.
GEOMETRY_LABELS = {"euclidean": "Euclidean", "poincare": "Poincaré", "lorentz": "Lorentz"}


class _MethodLabels(Mapping):
    """``METHOD_LABELS[name]``: the display names of the methods registered in this process (kept from 0.1).

    Read through :func:`hierviz._registry.registry_for`: ``hierviz.report`` imports no method
    code (a contract of ``pyproject.toml``); empty until :mod:`hierviz.methods` is imported.
    """

    @staticmethod
    def _registry():
        return registry_for("method")

    def __getitem__(self, name: str) -> str:
        reg = self._registry()
        if reg is None or name not in reg:
            raise KeyError(name)
        return reg.get(name).display_name

    def __iter__(self):
        reg = self._registry()
        return iter(() if reg is None else reg.names())

    def __len__(self) -> int:
        reg = self._registry()
        return 0 if reg is None else len(reg)


#: Method name -> display name, from the registry.
METHOD_LABELS: Mapping[str, str] = _MethodLabels()


#: Display names a run record carries (``result.json``), kept out of ``results.csv``'s columns.
DISPLAY_KEYS = ("method_display", "geometry_display")


def _recorded_label(rows: Iterable[Mapping[str, Any]] | None, kind: str, name: str) -> str | None:
    for r in rows or ():
        if isinstance(r, Mapping) and r.get(kind) == name and r.get(f"{kind}_display"):
            return str(r[f"{kind}_display"])
    return None


def method_label(name: str, rows: Iterable[Mapping[str, Any]] | None = None) -> str:
    """A method's display name: the one its run records carry, else the method registry's, else the name.

    Parameters
    ----------
    name : str
    rows : iterable of dict, optional
        Run records or rows; the first with ``method == name`` and a ``method_display`` gives
        the label. A report read from the records needs no registry, so a method a user
        module registered is named right without importing that module.

    Examples
    --------
    >>> method_label("my-loss", [{"method": "my-loss", "method_display": "My loss"}]), method_label("my-loss")
    ('My loss', 'my-loss')
    """
    recorded = _recorded_label(rows, "method", name)
    if recorded is not None:
        return recorded

    # records of hierviz 0.1 carry no display name: the registry's, when this process has one
    return METHOD_LABELS.get(name, str(name))


def _recorded_metric(rows: Iterable[Mapping[str, Any]] | None, name: str) -> Mapping[str, Any] | None:
    for r in rows or ():
        info = (r.get("metric_info") or {}).get(name) if isinstance(r, Mapping) else None
        if isinstance(info, Mapping):
            return info
    return None


def metric_label(name: str, rows: Iterable[Mapping[str, Any]] | None = None) -> str:
    """A metric's column title: the registry's (:data:`METRIC_LABELS`), else the one its run records carry, else the key.

    Examples
    --------
    >>> metric_label("hf1"), metric_label("my_score", [{"metric_info": {"my_score": {"label": "My score"}}}])
    ('HF1', 'My score')
    >>> metric_label("my_score")
    'my_score'
    """
    if name in METRIC_LABELS:
        return METRIC_LABELS[name]
    info = _recorded_metric(rows, name)
    return str(info["label"]) if info and info.get("label") else str(name)


def higher_is_better(name: str, rows: Iterable[Mapping[str, Any]] | None = None) -> bool:
    """A metric's direction: the registry's, else its run records', else higher is better.

    Examples
    --------
    >>> higher_is_better("violations"), higher_is_better("x", [{"metric_info": {"x": {"higher_is_better": False}}}])
    (False, False)
    """
    if name in METRIC_INFO:
        return METRIC_INFO.get(name).higher_is_better
    info = _recorded_metric(rows, name)
    return bool(info.get("higher_is_better", True)) if info else True


def geometry_label(name: str, rows: Iterable[Mapping[str, Any]] | None = None) -> str:
    """Short display name of a geometry for table headers (:data:`GEOMETRY_LABELS`, else the records', else the name).

    Examples
    --------
    >>> geometry_label("poincare"), geometry_label("scaled", [{"geometry": "scaled", "geometry_display": "Scaled"}])
    ('Poincaré', 'Scaled')
    """
    if name in GEOMETRY_LABELS:
        return GEOMETRY_LABELS[name]
    return _recorded_label(rows, "geometry", name) or str(name)


#: Columns only some methods have (a run without them shows "–" instead of failing the table):
#: the registry's ``optional`` metrics (the classifier's scores), a live view.
OPTIONAL_METRICS: Set[str] = _MetricSet(lambda info: info.optional)


def default_metrics(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The table columns: the registered metrics the rows hold, in registration order.

    A metric is a column when its registration has ``table=True`` and every row holds it, or
    it is ``optional`` (:data:`OPTIONAL_METRICS`: a classifier's columns, "–" for the rows
    without) and some row holds it. So paper 01's five columns, then the imbalance-aware two
    when every run has them (runs recorded before hierviz 0.3 do not), paper 04 Table I's
    seven for the seen/unseen protocol, the MAP@k columns every retrieval run has, the
    classifier's four, and a user's registered metric. Metrics registered with the same
    ``hides`` are one table: shown when every row holds all of them, and then instead of the
    columns they hide (paper 04's seven replace the probe's, as in Table I), else left out.

    Parameters
    ----------
    rows : sequence of dict
        Per-run rows (``results.csv``).

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> default_metrics([{"hf1": 0.5, "h_acc": 0.5, "pc_order": 0.5, "violations": 0.1, "top1": 0.5}])
    ('hf1', 'h_acc', 'pc_order', 'violations', 'top1')
    >>> default_metrics([dict.fromkeys(UNSEEN_METRICS, 0.5) | {"blind_over_aware": 1.0}])[:3]
    ('leaf_f1', 'rp5', 'mnr')
    >>> default_metrics([{"hf1": 0.5, "bal_acc": 0.4, "macro_f1": 0.3}])
    ('hf1', 'bal_acc', 'macro_f1')
    >>> default_metrics([dict.fromkeys(RETRIEVAL_METRICS, 0.5)])[-3:]
    ('map@20', 'p@1', 'r_precision')
    >>> default_metrics([{"hf1": 0.5}, {"hf1": 0.4, **dict.fromkeys(CLASSIFIER_METRICS, 0.3)}])[1:]
    ('clf_micro_f1', 'clf_macro_f1', 'clf_hi_micro_f1', 'clf_hi_macro_f1')
    """
    R = [r for r in rows if isinstance(r, Mapping)]
    if not R:
        return METRICS
    out = []
    for name in METRIC_INFO.names():
        info = METRIC_INFO.get(name)
        held = [name in r for r in R]
        if info.table and (all(held) or (info.optional and any(held))):
            out.append(name)
    # metrics registered with the same `hides` are one table (paper 04's Table I): shown whole, replacing the
    # columns they hide, or not at all
    groups: dict[tuple[str, ...], list[str]] = {}
    for name in METRIC_INFO.names():
        if METRIC_INFO.get(name).hides:
            groups.setdefault(METRIC_INFO.get(name).hides, []).append(name)
    for hides, members in groups.items():
        if all(m in out for m in members):
            out = [name for name in out if name not in hides]
        else:
            out = [name for name in out if name not in members]
    for r in R:  # metrics a module registered that this process has not imported: titled from the records
        for name in r.get("metric_info") or {}:
            if name not in METRIC_INFO and name not in out and all(name in q for q in R):
                out.append(name)
    return tuple(out)


def _check_rows(rows: Any, name: str = "rows") -> list[dict]:
    if isinstance(rows, Mapping) or not isinstance(rows, Iterable):
        raise TypeError(f"{name} must be a sequence of dicts (one per run), got {type(rows).__name__}")
    out = [dict(r) for r in rows]
    if not out:
        raise ValueError(f"{name} is empty: there are no finished runs to report")
    for i, r in enumerate(out):
        missing = [k for k in ("method", "geometry", "seed") if k not in r]
        if missing:
            raise ValueError(f"{name}[{i}] lacks the column(s) {missing}")
    return out


def write_results_csv(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Write one CSV row per run (method x geometry x seed).

    Parameters
    ----------
    rows : sequence of dict
        Each with ``method``, ``geometry``, ``seed``, the metric keys of :data:`METRICS`
        (floats in [0, 1]) and any extra scalar columns (timings, epochs, ...).  Columns
        are ``method, geometry, seed, hf1, h_acc, pc_order, violations, top1`` then the
        extra columns in first-seen order.
    path : str or Path

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    TypeError, ValueError
        ``rows`` not a sequence of dicts, empty, or a row without method/geometry/seed.
    """
    R = _check_rows(rows)
    cols = ["method", "geometry", "seed", *(m for m in METRIC_INFO.names() if any(m in r for r in R))]
    for r in R:
        cols += [k for k in r if k not in cols and k not in DISPLAY_KEYS and not isinstance(r[k], (dict, list, tuple))]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in R:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items() if k in cols})
    return path


def read_results_csv(path: str | Path) -> list[dict]:
    """Read ``results.csv`` back (numbers as float, ``seed`` as int; an empty cell of an optional
    metric, such as the classifier columns of a method without a classifier, is left out).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    list of dict

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    """
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            out: dict[str, Any] = {}
            for k, v in r.items():
                if v == "" and k in METRIC_INFO:
                    continue  # a metric this row's run does not have (e.g. no classifier): "–" in the tables
                if k in ("method", "geometry"):
                    out[k] = v
                elif k == "seed":
                    out[k] = int(v)
                else:
                    try:
                        out[k] = float(v)
                    except (TypeError, ValueError):
                        out[k] = v
            rows.append(out)
    return rows


def summarise(
    rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] = METRICS
) -> dict[tuple[str, str], dict[str, tuple[float, float, int]]]:
    """Mean, sample standard deviation and count over seeds for each (method, geometry).

    Parameters
    ----------
    rows : sequence of dict
        Per-run rows (see :func:`write_results_csv`).
    metrics : sequence of str
        Metric keys to summarise; each must be present in every row (those of
        :data:`OPTIONAL_METRICS`: in every row of a group, or in none, and then left out of
        that group's entry).

    Returns
    -------
    dict
        ``{(method, geometry): {metric: (mean, std, n)}}`` in first-seen order; ``std`` is
        the sample standard deviation (ddof=1; 0.0 when n = 1).

    Raises
    ------
    ValueError
        Empty rows or a row missing a metric.
    """
    R = _check_rows(rows)
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in R:
        groups.setdefault((str(r["method"]), str(r["geometry"])), []).append(r)
    out: dict[tuple[str, str], dict[str, tuple[float, float, int]]] = {}
    for key, rs in groups.items():
        out[key] = {}
        for m in metrics:
            if m in OPTIONAL_METRICS and all(m not in r for r in rs):
                continue  # e.g. a method without a multi-label classifier: "–" in the tables
            if any(m not in r for r in rs):
                raise ValueError(f"rows: metric {m!r} is missing for method={key[0]!r}, geometry={key[1]!r}")
            v = np.array([float(r[m]) for r in rs], dtype=np.float64)
            std = float(v.std(ddof=1)) if v.size > 1 else 0.0
            out[key][m] = (float(v.mean()), std, int(v.size))
    return out


def _ordered(values: Iterable[str], preferred: Sequence[str] | None) -> list[str]:
    seen: list[str] = []
    for v in values:
        if v not in seen:
            seen.append(v)
    if preferred is None:
        return seen
    return [p for p in preferred if p in seen] + [v for v in seen if v not in preferred]


def _baseline_cells(baselines, metrics, geometries) -> list[tuple[str, list[tuple[str, bool]]]]:
    """Rows of the input-free baselines: the same value under every geometry, "–" where undefined (NaN)."""
    body = []
    for name, vals in (baselines or {}).items():
        cells = []
        for _g in geometries:
            for m in metrics:
                v = vals.get(m)
                ok = v is not None and isinstance(v, (int, float)) and math.isfinite(float(v))
                cells.append((f"{float(v):.3f}" if ok else "–", False))
        body.append((f"*{BASELINE_LABELS.get(name, name)}*", cells))
    return body


def baseline_note(baselines: Mapping[str, Mapping[str, Any]] | None) -> str:
    """The footnote of the baseline rows (empty without baselines)."""
    if not baselines:
        return ""
    notes = []
    if "majority" in baselines:
        notes.append(
            "*Majority class*: the train split's most frequent leaf predicted for every test sample "
            "(hierviz.metrics.baselines.majority_class_report); Violations and PC-Order rank embeddings "
            "against parent prototypes and are undefined for a predictor without embeddings (–)."
        )
        if any(m in baselines["majority"] for m in CLASSIFIER_METRICS):
            notes.append(
                "Clf columns: the micro/macro F1 and Hi-MiF1/Hi-MaF1 (Paper 05 §5.3) of the method's own "
                "multi-label classifier (sigmoid ≥ 0.5) on the test label sets, leaf and ancestors (HyILR "
                "methods; – for methods without one); its Majority row is the most frequent training label "
                "set (hierviz.metrics.htc.frequency_prior_scores)."
            )
    if "chance" in baselines:
        notes.append(
            "*Random ranking (chance)*: the expected scores of a uniformly random ordering of the references "
            "(the training rows), from the class shares (hierviz.metrics.baselines.random_ranking_scores)."
        )
    return " ".join(notes)


def _table_cells(rows, metrics, methods, geometries, baselines=None):
    summary = summarise(rows, metrics)
    methods = _ordered((k[0] for k in summary), methods)
    geometries = _ordered((k[1] for k in summary), geometries)
    cols = [(g, m) for g in geometries for m in metrics]
    best: dict[tuple[str, str], float] = {}
    for g, m in cols:
        vals = [summary[(meth, g)][m][0] for meth in methods if m in summary.get((meth, g), {})]
        if len(vals) > 1:
            best[(g, m)] = max(vals) if higher_is_better(m, rows) else min(vals)
    body = []
    for meth in methods:
        cells = []
        for g, m in cols:
            if m not in summary.get((meth, g), {}):
                cells.append(("–", False))
                continue
            mean, std, n = summary[(meth, g)][m]
            text = f"{mean:.3f} ± {std:.3f}" if n > 1 else f"{mean:.3f}"
            cells.append((text, (g, m) in best and math.isclose(mean, best[(g, m)], abs_tol=5e-4)))
        body.append((method_label(meth, rows), cells))
    body += _baseline_cells(baselines, metrics, geometries)
    header = [f"{metric_label(m, rows)} ({geometry_label(g, rows)})" for g, m in cols]
    nseeds = sorted({v[metrics[0]][2] for v in summary.values()})
    return header, body, nseeds


def results_markdown(
    rows: Sequence[Mapping[str, Any]],
    metrics: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    geometries: Sequence[str] | None = None,
    title: str | None = None,
    baselines: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """Markdown table shaped like paper 01 Table 1: rows = methods, columns = metric per geometry.

    Each cell is "mean ± std" over seeds (sample std, ddof=1; just the mean for one seed);
    the best mean per column is **bold** (lowest for Violations and MNR).  A missing
    method x geometry combination shows "–".

    Parameters
    ----------
    rows : sequence of dict
        Per-run rows with ``method``, ``geometry``, ``seed`` and the metrics.
    metrics : sequence of str, optional
        Default :func:`default_metrics`: paper 04 Table I's columns for unseen-protocol
        runs, else :data:`METRICS`.
    methods, geometries : sequence of str, optional
        Row / column-group order (default: first-seen order).
    title : str, optional
        A caption line put above the table.
    baselines : mapping of str to dict, optional
        Input-free baseline rows, e.g. ``{"majority": majority_class_report(...)}``
        (:mod:`hierviz.metrics.baselines`): shown in italics under the methods, the same
        value in every geometry group, never bold, NaN as "–", with a footnote.

    Returns
    -------
    str
        The Markdown text, ending with a note on seeds and the direction of each metric.

    Raises
    ------
    TypeError, ValueError
        See :func:`summarise`.
    """
    if metrics is None:
        metrics = default_metrics(_check_rows(rows))
    header, body, nseeds = _table_cells(rows, metrics, methods, geometries, baselines)
    lines = []
    if title:
        lines += [title, ""]
    lines.append("| Method | " + " | ".join(header) + " |")
    lines.append("|---|" + "|".join("---:" for _ in header) + "|")
    for name, cells in body:
        lines.append(f"| {name} | " + " | ".join(f"**{t}**" if b else t for t, b in cells) + " |")
    seeds = "/".join(str(n) for n in nseeds)
    lower = [metric_label(m, rows).replace(" ↓", "") for m in metrics if not higher_is_better(m, rows)]
    direction = (
        f"{', '.join(lower)}: lower is better; all other metrics: higher is better."
        if lower
        else "Higher is better for every metric."
    )
    if tuple(metrics)[: len(UNSEEN_METRICS)] == UNSEEN_METRICS:
        direction += (
            " Paper 04 Table I columns (seen/unseen protocol): leaf F1 and the rankings on the seen test samples, "
            "Acc_blind/Acc_aware on the unseen leaves' samples; results.csv has every metric."
        )
    lines += ["", f"Mean ± sample std over {seeds} seed(s); best per column in **bold**. {direction}"]
    note = baseline_note(baselines)
    if note:
        lines[-1] += " " + note
    return "\n".join(lines) + "\n"


def results_html_table(
    rows: Sequence[Mapping[str, Any]],
    metrics: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    geometries: Sequence[str] | None = None,
    baselines: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The table of :func:`results_markdown` as an HTML ``<table>`` fragment (escaped).

    Parameters
    ----------
    rows, metrics, methods, geometries, baselines
        As :func:`results_markdown`.

    Returns
    -------
    str
        HTML fragment.
    """
    if metrics is None:
        metrics = default_metrics(_check_rows(rows))
    header, body, _ = _table_cells(rows, metrics, methods, geometries, baselines)
    out = ["<table class='results'><thead><tr><th>Method</th>"]
    out += [f"<th>{html.escape(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for name, cells in body:
        if name.startswith("*") and name.endswith("*"):  # a baseline row (Markdown italics)
            name = name.strip("*")
        out.append(f"<tr><td>{html.escape(name)}</td>")
        out += [f"<td>{'<b>' if b else ''}{html.escape(t)}{'</b>' if b else ''}</td>" for t, b in cells]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)
