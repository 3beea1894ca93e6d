"""``hierviz htc``'s tables (Paper 05 (HyILR) Table 4, per-level and long-tail F1) from typed run records.

``hierviz htc`` runs through ``compare`` (:mod:`hierviz.experiments.htc`), whose report is the
HTML report of the runs; these functions write Table 4's shape from the records it saved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.metrics.htc import frequency_bucket_f1, leaf_path_targets, per_level_f1

__all__ = [
    "classifier_rows",
    "classifier_runs",
    "summarise_runs",
    "classifier_markdown",
    "classifier_levels",
    "write_label_figures",
]

#: Paper 05 Table 4's columns: the record keys (``RunRecord.classifier_metrics``) and their titles.
_TABLE4 = (
    ("clf_micro_f1", "Micro-F1"),
    ("clf_macro_f1", "Macro-F1"),
    ("clf_hi_micro_f1", "Hi-MiF1"),
    ("clf_hi_macro_f1", "Hi-MaF1"),
)


def _lam(record: Mapping[str, Any]) -> Any:
    """HyILR's λ of a run record: ``hparams["hyilr.lambda"]`` (``"hyilr_lambda"`` before 0.4); None if it reads none."""
    hp = record.get("hparams") or {}
    return hp.get("hyilr.lambda", hp.get("hyilr_lambda"))


def classifier_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 4's rows from typed run records: one per method × λ, mean ± std over seeds, percent.

    A table kind of ``compare``'s records: it reads ``method``, ``method_display``,
    ``seed``, ``hparams["hyilr.lambda"]`` (``"hyilr_lambda"`` in records before 0.4) and
    ``classifier_metrics`` only, never the code that made them. Records without ``classifier_metrics`` (methods without a classifier) are left out.

    Parameters
    ----------
    records : sequence of dict
        :func:`hierviz.experiments.load_records` of one or more folders.

    Returns
    -------
    list of dict
        ``method``, ``display_name``, ``lam`` (None for a method that reads no λ), ``seeds``,
        ``<metric>_mean`` / ``<metric>_std`` (sample std, 0 for one seed) for Micro-F1, Macro-F1,
        Hi-MiF1, Hi-MaF1 (keys without the ``clf_`` prefix), and the mean learned ``c``,
        ``alpha_t``, ``alpha_l`` (``RunRecord.learned``; None when a run lacks them), in
        first-seen order.

    Raises
    ------
    ValueError
        No record has classifier metrics.

    Examples
    --------
    >>> recs = [{"method": "hyilr", "method_display": "HyILR", "seed": s, "hparams": {"hyilr.lambda": 0.3},
    ...          "classifier_metrics": dict.fromkeys(("clf_micro_f1", "clf_macro_f1", "clf_hi_micro_f1",
    ...                                                "clf_hi_macro_f1"), v)} for s, v in ((0, 0.5), (1, 0.7))]
    >>> r = classifier_rows(recs)[0]
    >>> r["lam"], r["seeds"], round(r["micro_f1_mean"], 6), round(r["micro_f1_std"], 4)
    (0.3, 2, 60.0, 14.1421)
    """
    runs = classifier_runs(records)
    if not runs:
        raise ValueError("records: no run has classifier metrics (run HyILR methods, e.g. --methods hyilr)")
    names = {str(r["method"]): r.get("method_display") or str(r["method"]) for r in records}
    return summarise_runs(runs, names)


def classifier_runs(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 4's columns per run (one row per method × λ × seed, fractions): what paired intervals need.

    Reads the same record keys as :func:`classifier_rows`; ``hierviz htc`` writes these rows to
    ``<out>/seeds.csv``, the per-run file :func:`hierviz.results.tables.table_markdown`'s
    ``paper05`` tables read.

    Parameters
    ----------
    records : sequence of dict
        :func:`hierviz.experiments.load_records` of one or more folders.

    Returns
    -------
    list of dict
        ``method``, ``lam``, ``seed``, ``micro_f1``, ``macro_f1``, ``hi_micro_f1``, ``hi_macro_f1``
        (in [0, 1]) and the learned ``c``, ``alpha_t``, ``alpha_l`` (NaN when a run
        lacks them), in record order; records without ``classifier_metrics`` are left out.

    Examples
    --------
    >>> rec = {"method": "hyilr", "seed": 2, "hparams": {"hyilr_lambda": 0.3}, "learned": {"c": 1.1},
    ...        "classifier_metrics": dict.fromkeys(("clf_micro_f1", "clf_macro_f1", "clf_hi_micro_f1",
    ...                                             "clf_hi_macro_f1"), 0.5)}
    >>> row = classifier_runs([rec])[0]
    >>> row["lam"], row["seed"], row["micro_f1"], row["c"], row["alpha_t"]
    (0.3, 2, 0.5, 1.1, nan)
    """
    rows = []
    for r in records:
        if not r.get("classifier_metrics"):
            continue
        row: dict[str, Any] = {
            "method": str(r["method"]),
            "lam": _lam(r),
            "seed": int(r["seed"]),
        }
        row.update({key[4:]: float(r["classifier_metrics"][key]) for key, _ in _TABLE4})
        learned = r.get("learned") or {}
        row.update({k: float(learned.get(k, float("nan"))) for k in ("c", "alpha_t", "alpha_l")})
        rows.append(row)
    return rows


def summarise_runs(runs: Sequence[dict[str, Any]], display_names: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Table 4's rows from per-run rows: one per method × λ (first-seen order), mean ± std over seeds, percent.

    Parameters
    ----------
    runs : sequence of dict
        :func:`classifier_runs`' rows, or ``seeds.csv`` read back: ``method``, ``lam``, the four F1s
        (fractions) and the learned ``c``, ``alpha_t``, ``alpha_l``.
    display_names : dict, optional
        ``method`` → the name shown (default: the method's own).

    Returns
    -------
    list of dict
        As :func:`classifier_rows`: ``<metric>_mean`` / ``<metric>_std`` (sample std, 0 for one
        seed) in percent, and the mean learned scalars (None when a run lacks one).
    """
    groups: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((str(r["method"]), r["lam"]), []).append(r)
    rows = []
    for (method, lam), rs in groups.items():
        name = (display_names or {}).get(method, method)
        row: dict[str, Any] = {"method": method, "display_name": name, "lam": lam, "seeds": len(rs)}
        for key, _ in _TABLE4:
            v = np.array([100.0 * float(r[key[4:]]) for r in rs])
            row[f"{key[4:]}_mean"] = float(v.mean())
            row[f"{key[4:]}_std"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
        for k in ("c", "alpha_t", "alpha_l"):  # HyILR's learned scalars, mean over seeds
            v = np.array([float(r[k]) for r in rs])
            row[k] = float(v.mean()) if np.isfinite(v).all() else None
        rows.append(row)
    return rows


def classifier_markdown(rows: Sequence[dict[str, Any]], title: str, prior: dict[str, float] | None = None) -> str:
    """Table 4 as Markdown: method, λ, seeds, Micro-F1, Macro-F1, Hi-MiF1, Hi-MaF1 (mean ± std, percent), c, α_t, α_l.

    ``prior``: the frequency prior's ``clf_*`` scores (fractions; compare's Majority row,
    ``baselines.csv``), shown as an italic last row when given.
    """
    learned = ("c", "α_t", "α_l")
    head = "| method | λ | seeds | " + " | ".join(t for _, t in _TABLE4) + " | " + " | ".join(learned) + " |"
    lines = [f"### {title}", "", head, "|" + "---|" * (3 + len(_TABLE4) + len(learned))]
    for r in rows:
        cells = [f"{r[k[4:] + '_mean']:.2f} ± {r[k[4:] + '_std']:.2f}" for k, _ in _TABLE4]
        cells += ["–" if r.get(k) is None else f"{r[k]:.3g}" for k in ("c", "alpha_t", "alpha_l")]
        lam = "–" if r["lam"] is None else f"{r['lam']:g}"
        lines.append(f"| {r['display_name']} (`{r['method']}`) | {lam} | {r['seeds']} | " + " | ".join(cells) + " |")
    if prior and all(k in prior for k, _ in _TABLE4):
        cells = [f"{100 * float(prior[k]):.2f}" for k, _ in _TABLE4] + ["–"] * len(learned)
        lines.append("| *Frequency prior* | – | – | " + " | ".join(cells) + " |")
        lines += ["", "*Frequency prior*: the train split's most frequent label set for every test text "
                  "(hierviz.metrics.htc.frequency_prior_scores)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def classifier_levels(
    records: Sequence[dict[str, Any]], tree: Any, counts: np.ndarray | None = None
) -> tuple[list[dict], list[dict]]:
    """Per-level and long-tail F1 (Paper 05 §5.5, Fig. 2) of each run's saved classifier predictions.

    Reads each record's ``embeddings.npz`` (``clf_true_test``, ``clf_pred_test``, ``y_train``;
    :mod:`hierviz.evaluation.multilabel`), never the code that made the run.

    Parameters
    ----------
    records : sequence of dict
        :func:`hierviz.experiments.load_records` rows; runs without saved label sets are skipped.
    tree : LabelTree
    counts : numpy.ndarray, shape (tree.num_nodes,), optional
        Training documents per label, the buckets' frequencies; default from each run's
        ``y_train`` leaves (one path per sample; ``hierviz htc`` passes the counts of every
        path of its corpus).

    Returns
    -------
    levels, buckets : list of dict
        ``method``, ``lam``, ``seed`` and the rows of :func:`hierviz.metrics.htc.per_level_f1` /
        :func:`hierviz.metrics.htc.frequency_bucket_f1` (4 buckets of training frequency, at
        most one per label).
    """
    levels, buckets = [], []
    for r in records:
        emb = r.get("embeddings")
        if not r.get("classifier_metrics") or not emb or not Path(emb).is_file():
            continue
        with np.load(emb) as f:
            if "clf_pred_test" not in f.files:
                continue
            yt, yp, y_train = f["clf_true_test"], f["clf_pred_test"], f["y_train"]
        key = {"method": r["method"], "lam": _lam(r), "seed": r["seed"]}
        levels += [{**key, **row} for row in per_level_f1(yt, yp, tree)]
        n = leaf_path_targets(y_train, tree).sum(0) if counts is None else counts
        buckets += [{**key, **row} for row in frequency_bucket_f1(yt, yp, tree, n, min(4, tree.num_nodes - 1))]
    return levels, buckets


def write_label_figures(path: str | Path, tree: Any, labels: Sequence[tuple[str, np.ndarray, Any]]) -> Path | None:
    """An HTML page of label embeddings on the Poincaré disk, coloured by depth, one figure per run.

    Parameters
    ----------
    path : path
        The page (``hierviz htc`` writes ``<out>/labels.html``).
    tree : LabelTree
    labels : sequence of (title, points, geometry)
        ``points`` (N − 1, h): the labels' points in ``tree.nodes`` order without the root, space
        part (:func:`hierviz.experiments.htc.label_points`); ``geometry`` the one they lie on.

    Returns
    -------
    pathlib.Path or None
        None (nothing written) when ``labels`` is empty.
    """
    if not labels:
        return None
    # heavy: plotly (the figures and the page import it), imported only when the page is written
    from hierviz.report.html import write_report_html
    from hierviz.viz.hyilr import label_disk_figure  # heavy: plotly

    names = [n for n in tree.nodes if n != tree.root]
    figures = [(f"label embeddings: {t}", label_disk_figure(p, names, tree, geometry=g)) for t, p, g in labels]
    return write_report_html(Path(path), title="HyILR (Paper 05): label embeddings — hierviz htc",
                             header={"runs": str(Path(path).parent / "runs")}, table_html="", figures=figures)  # fmt: skip
