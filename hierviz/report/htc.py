"""``hierviz htc``'s HTML report (Paper 05 (HyILR)): the table, label embeddings, levels, long tail, curves.

Moved here from :mod:`hierviz.viz.hyilr` (figures stay there): a report imports figures, a figure
module imports no report.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.metrics.htc import frequency_bucket_f1, leaf_path_targets, per_level_f1
from hierviz.report.html import write_report_html
from hierviz.viz.hyilr import history_figure, label_disk_figure, level_bucket_figure

__all__ = ["write_report", "classifier_rows", "classifier_markdown", "classifier_levels"]

#: Paper 05 Table 4's columns: the record keys (``RunRecord.classifier_metrics``) and their titles.
_TABLE4 = (
    ("clf_micro_f1", "Micro-F1"),
    ("clf_macro_f1", "Macro-F1"),
    ("clf_hi_micro_f1", "Hi-MiF1"),
    ("clf_hi_macro_f1", "Hi-MaF1"),
)


def classifier_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 4's rows from typed run records: one per method × λ, mean ± std over seeds, percent.

    A table kind of ``compare``'s records (issue 23): it reads ``method``, ``method_display``,
    ``seed``, ``hparams["hyilr_lambda"]`` and ``classifier_metrics`` only, never the code that
    made them. Records without ``classifier_metrics`` (methods without a classifier) are left out.

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
    >>> recs = [{"method": "hyilr", "method_display": "HyILR", "seed": s, "hparams": {"hyilr_lambda": 0.3},
    ...          "classifier_metrics": dict.fromkeys(("clf_micro_f1", "clf_macro_f1", "clf_hi_micro_f1",
    ...                                                "clf_hi_macro_f1"), v)} for s, v in ((0, 0.5), (1, 0.7))]
    >>> r = classifier_rows(recs)[0]
    >>> r["lam"], r["seeds"], round(r["micro_f1_mean"], 6), round(r["micro_f1_std"], 4)
    (0.3, 2, 60.0, 14.1421)
    """
    groups: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for r in records:
        if not r.get("classifier_metrics"):
            continue
        lam = (r.get("hparams") or {}).get("hyilr_lambda")
        groups.setdefault((str(r["method"]), lam), []).append(r)
    if not groups:
        raise ValueError("records: no run has classifier metrics (run HyILR methods, e.g. --methods hyilr)")
    rows = []
    for (method, lam), rs in groups.items():
        row: dict[str, Any] = {"method": method, "display_name": rs[0].get("method_display") or method, "lam": lam}
        row["seeds"] = len(rs)
        for key, _ in _TABLE4:
            v = np.array([100.0 * float(r["classifier_metrics"][key]) for r in rs])
            row[f"{key[4:]}_mean"] = float(v.mean())
            row[f"{key[4:]}_std"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
        for k in ("c", "alpha_t", "alpha_l"):  # HyILR's learned scalars (RunRecord.learned), mean over seeds
            vals = [float(r["learned"][k]) for r in rs if k in (r.get("learned") or {})]
            row[k] = float(np.mean(vals)) if len(vals) == len(rs) else None
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


def write_report(out: str | Path, rows: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]]) -> Path:
    """``<out>/report.html`` for ``hierviz htc``: the table, label embeddings per method, levels, long tail, curves.

    Parameters
    ----------
    out : path
        The run folder (reads ``labels_<method>.npz`` and ``config.json`` there).
    rows, records : sequences of dict
        The :func:`hierviz.methods.paper05.summarise` rows and the run records.

    Returns
    -------
    pathlib.Path
    """
    out = Path(out)
    cfg = json.loads((out / "config.json").read_text()) if (out / "config.json").is_file() else {}
    heads = [
        "method",
        "λ",
        "seeds",
        "Micro-F1",
        "Macro-F1",
        "Hi-MiF1",
        "Hi-MaF1",
        "c",
        "α_t",
        "α_l",
        "label r",
        "text r",
    ]
    body = []
    for r in rows:
        cells = [html.escape(f"{r['display_name']} ({r['method']})"), f"{r['lam']:g}", str(r["seeds"])]
        cells += [f"{r[k + '_mean']:.2f} ± {r[k + '_std']:.2f}" for k in ("micro_f1", "macro_f1", "hi_micro_f1",
                                                                        "hi_macro_f1")]  # fmt: skip
        cells += [f"{r[k]:.3g}" for k in ("c", "alpha_t", "alpha_l")]
        cells += [f"{r['label_radius']:.2f}", f"{r['text_radius']:.2f}"]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    table = "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr></thead><tbody>"
    table += "".join(body) + "</tbody></table>"
    figures: list[tuple[str, go.Figure]] = []
    tree = LabelTree.from_json(out / "tree.json") if (out / "tree.json").is_file() else None
    for npz in sorted(out.glob("labels_*.npz")):
        f = np.load(npz, allow_pickle=False)
        names = [str(n) for n in f["names"]]
        if tree is None:
            break
        m = npz.stem[len("labels_") :]
        figures.append((f"label embeddings: {m}", label_disk_figure(f["points"], names, tree,
                        geometry=get_geometry(str(f["geometry"]), c=float(f["c"])))))  # fmt: skip
    if records:
        figures.append(("per-level and long-tail F1 (macro)", level_bucket_figure(records)))
        figures.append(("training curves", history_figure(records)))
    header = {"command": "hierviz htc", "config": json.dumps(cfg)}
    return write_report_html(out / "report.html", title="HyILR (Paper 05) — hierviz htc", header=header,
                             table_html=table, figures=figures)  # fmt: skip


def classifier_levels(records: Sequence[dict[str, Any]], tree: Any) -> tuple[list[dict], list[dict]]:
    """Per-level and long-tail F1 (Paper 05 §5.5, Fig. 2) of each run's saved classifier predictions.

    Reads each record's ``embeddings.npz`` (``clf_true_test``, ``clf_pred_test``, ``y_train``;
    :mod:`hierviz.evaluation.multilabel`), never the code that made the run.

    Parameters
    ----------
    records : sequence of dict
        :func:`hierviz.experiments.load_records` rows; runs without saved label sets are skipped.
    tree : LabelTree

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
        key = {"method": r["method"], "lam": (r.get("hparams") or {}).get("hyilr_lambda"), "seed": r["seed"]}
        levels += [{**key, **row} for row in per_level_f1(yt, yp, tree)]
        counts = leaf_path_targets(y_train, tree).sum(0)
        buckets += [{**key, **row} for row in frequency_bucket_f1(yt, yp, tree, counts, min(4, tree.num_nodes - 1))]
    return levels, buckets
