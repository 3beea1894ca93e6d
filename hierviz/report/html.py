"""The self-contained HTML report of ``hierviz compare``.

Three outputs per comparison:

* ``results.csv`` - one row per method x geometry x seed with every metric of
  :func:`hierviz.metrics.hierarchy_report` and the timings;
* ``results.md`` - a Markdown table shaped like paper 01 Table 1/2: one row per method,
  for each geometry the columns HF1, H-Acc, PC-Order, Violations and Top-1 as
  "mean ± std" over seeds, best per column in bold;
* ``report.html`` - one file with no external resources (plotly.js is inlined once):
  a header (command, dataset, tree, timings), the table, metric bars, the label tree,
  for each method x geometry the Poincaré disk of the test embeddings with the parent
  prototypes (hyperbolic runs) and a t-SNE/UMAP/PCA map with the tree drawn over it,
  and the loss curves.
"""

from __future__ import annotations

import csv
import html
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierviz.geometry import get_geometry
from hierviz.metrics.baselines import majority_class_report, random_ranking_scores
from hierviz.metrics.htc import CLASSIFIER_METRICS, frequency_prior_scores
from hierviz.report.run_files import read_run_file, require_keys
from hierviz.report.stats import paired_markdown
from hierviz.report.tables import (
    DISPLAY_KEYS,
    METRICS,
    UNSEEN_METRICS,
    _ordered,
    baseline_note,
    default_metrics,
    geometry_label,
    method_label,
    results_html_table,
    results_markdown,
    summarise,
    write_results_csv,
)

__all__ = [
    "write_report_html",
    "build_report",
    "collapsed_note",
    "majority_baseline",
    "chance_baseline",
    "write_baselines_csv",
]

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}thead th{background:#f3f3f3}
pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}
dl.header dt{font-weight:bold;float:left;clear:left;width:11em}dl.header dd{margin-left:12em;margin-bottom:4px}
.fig{margin:1em 0;border-top:1px solid #eee;padding-top:.5em}
tr.flag td{background:#fff1e6}
"""


def write_report_html(
    path: str | Path,
    *,
    title: str,
    header: Mapping[str, str],
    table_html: str,
    figures: Sequence[tuple[str, Any]],
    notes: Sequence[str] = (),
) -> Path:
    """Write a single self-contained HTML file (plotly.js inlined once, no network needed).

    Parameters
    ----------
    path : str or Path
    title : str
        Page title.
    header : mapping of str to str
        Key/value lines shown at the top (command, dataset, tree, timings...); values
        are escaped, multi-line values shown pre-formatted.
    table_html : str
        HTML fragment of the results table (e.g. :func:`results_html_table`), inserted as is.
    figures : sequence of (str, plotly.graph_objects.Figure)
        Section title and figure, in order.
    notes : sequence of str
        Paragraphs (escaped) added after the table.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError
        If a figure is not a plotly figure.
    """
    # heavy: plotly, imported only when a report page is written
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs  # heavy: plotly

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>",
        f"<h1>{html.escape(title)}</h1><dl class='header'>",
    ]
    for k, v in header.items():
        v = str(v)
        shown = f"<pre>{html.escape(v)}</pre>" if "\n" in v else html.escape(v)
        parts.append(f"<dt>{html.escape(str(k))}</dt><dd>{shown}</dd>")
    parts.append("</dl><h2>Results</h2>")
    parts.append(table_html)
    for n in notes:
        parts.append(f"<p>{html.escape(n)}</p>")
    for i, (sec, fig) in enumerate(figures):
        if not isinstance(fig, go.Figure):
            raise TypeError(f"figures[{i}] ({sec!r}) must be a plotly Figure, got {type(fig).__name__}")
        div = fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            default_width="100%",
            config={"responsive": True, "displaylogo": False},
        )
        parts.append(f"<div class='fig'><h3>{html.escape(sec)}</h3>{div}</div>")
    parts.append("</body></html>")
    path.write_text("".join(parts), encoding="utf-8")
    return path


def _paired_html(paired_md: str) -> str:
    """The paired-difference Markdown table of :func:`hierviz.report.stats.paired_markdown` as HTML."""
    rows = [ln for ln in paired_md.splitlines() if ln.startswith("|") and not ln.startswith("|---")]
    if not rows:
        return ""
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in rows]
    out = ["<h3>Paired difference to the baseline (95 % CI over seeds)</h3><table class='results'><thead><tr>"]
    out += [f"<th>{html.escape(c)}</th>" for c in cells[0]]
    out.append("</tr></thead><tbody>")
    for r in cells[1:]:
        out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def collapsed_note(z: np.ndarray, tol: float = 1e-6) -> str:
    """A sentence when embeddings are collapsed (fewer than 3 distinct points), else ``""``.

    t-SNE and UMAP cannot lay out (and scikit-learn's Barnes-Hut t-SNE may crash on) a
    set whose points coincide, which is what a run that learned a constant map produces.

    Parameters
    ----------
    z : numpy.ndarray, shape (n, D)
    tol : float, default 1e-6
        Points closer than this (max-abs coordinate difference) count as one.

    Returns
    -------
    str

    Examples
    --------
    >>> collapsed_note(np.zeros((50, 4)))
    'the test embeddings are collapsed: all 50 points lie within 1e-06 of 1 point(s) (the encoder learned a constant map)'
    >>> collapsed_note(np.eye(4))
    ''
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2 or len(z) == 0:
        return "there are no test embeddings"
    if not np.isfinite(z).all():
        return "the test embeddings contain NaN or inf"
    distinct = np.unique(np.round(z / tol), axis=0).shape[0]
    if distinct < 3:
        return (
            f"the test embeddings are collapsed: all {len(z)} points lie within {tol:g} of {distinct} point(s) "
            "(the encoder learned a constant map)"
        )
    return ""


def _figure_or_note(title: str, make, figures: list, notes: list) -> None:
    """Add ``make()`` to ``figures``; a failure becomes a note instead of killing the report."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figures.append((title, make()))
    except (ValueError, TypeError, RuntimeError) as exc:  # one bad figure must not lose the results
        notes.append(f"Figure '{title}' could not be drawn: {exc}")


def _saved_labels(records: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(y_train, y_test)`` of the first run whose ``embeddings.npz`` saved both (every run shares the split)."""
    for r in records:
        emb = r.get("embeddings")
        if not emb or not Path(emb).is_file():
            continue
        with np.load(emb) as f:
            if "y_train" in f.files and "y_test" in f.files:
                return f["y_train"], f["y_test"]
    return None


def majority_baseline(records: Sequence[Mapping[str, Any]], tree, classifier: bool = False) -> dict[str, float] | None:
    """The Majority-class row of a comparison, from the first run's saved ``y_train``/``y_test``.

    Every run of the classification protocol shares the split, so one run's labels give
    the row (:func:`hierviz.metrics.baselines.majority_class_report`). None when no run
    saved both label arrays. With ``classifier=True`` (a run has its own multi-label
    classifier) the row also holds :data:`hierviz.metrics.htc.CLASSIFIER_METRICS` of the
    frequency prior (:func:`hierviz.metrics.htc.frequency_prior_scores`: the most frequent
    training label set, i.e. the majority leaf's path).
    """
    labels = _saved_labels(records)
    if labels is None:
        return None
    row = majority_class_report(*labels, tree)
    if classifier:
        row.update(frequency_prior_scores(*labels, tree))
    return row


def chance_baseline(records: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    """The Random-ranking row of a retrieval comparison, from the first run's saved ``y_test``/``y_train``.

    :func:`hierviz.metrics.baselines.random_ranking_scores` of the queries (test rows) against
    the references (training rows), MAP@k for the k <= the references. None when no run saved
    both label arrays, or when a query class has no reference.
    """
    labels = _saved_labels(records)
    if labels is None:
        return None
    yg, yq = labels
    try:
        return random_ranking_scores(yq, yg, tuple(k for k in (1, 5, 10, 20) if k <= len(yg)))
    except ValueError:
        return None


def write_baselines_csv(baselines: Mapping[str, Mapping[str, float]], path: str | Path) -> Path:
    """``baselines.csv``: one row per input-free baseline (``baseline`` then its metrics; NaN left empty)."""
    path = Path(path)
    cols = ["baseline", *dict.fromkeys(k for v in baselines.values() for k in v)]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for name, vals in baselines.items():
            w.writerow({"baseline": name, **{k: ("" if v != v else f"{v:.6g}") for k, v in vals.items()}})
    return path


def _result_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """The ``results.csv`` row of one run record: run, display names, metrics, timings and radius columns."""
    row = {"method": r["method"], "geometry": r["geometry"], "seed": int(r["seed"])}
    folds = ((r.get("config") or {}).get("eval") or {}).get("folds")
    if folds:  # a per-seed split with several seeds per fold (eval.folds): the paired tables pair by fold
        row["fold"] = int(r["seed"]) % int(folds)
    row.update({k: r[k] for k in DISPLAY_KEYS if r.get(k)})  # the record's names: no registry needed
    if r.get("metric_info"):  # titles of metrics a user module computed (not a results.csv column)
        row["metric_info"] = r["metric_info"]
    row.update({m: float(r["metrics"][m]) for m in METRICS if m in r["metrics"]})
    row.update({m: float(v) for m, v in r["metrics"].items() if m not in METRICS and _is_number(v)})
    # the method's own multi-label classifier (RunRecord.classifier_metrics), beside the probe's
    row.update({m: float(v) for m, v in (r.get("classifier_metrics") or {}).items() if _is_number(v)})
    for k in ("curvature", "epochs", "train_seconds", "eval_seconds", "eval_embedding"):
        if k in r:
            row[k] = r[k]
    rad = r.get("radius") or {}
    if rad.get("clip_fraction") is not None:  # hyperbolic runs: radius columns in results.csv
        row["radius_mean"], row["clip_fraction"] = float(rad["radius_mean"]), float(rad["clip_fraction"])
    if rad.get("radius_std") is not None:  # every run's radius spread, whatever its geometry
        row["radius_std"] = float(rad["radius_std"])
    for k in ("radius_depth_spearman", "edge_order", "radius_gap", "norm_auroc"):
        if _is_number(rad.get(k)):
            row[k] = float(rad[k])
    return row


def _table_baselines(recs: Sequence[Mapping[str, Any]], tree, shown: Sequence[str]) -> dict[str, dict[str, float]]:
    """The input-free rows of the tables with metrics ``shown``: ``{"chance": ...}`` or ``{"majority": ...}``.

    Retrieval tables (first metric ``map@1``) get the random-ranking row; every other
    table except the unseen protocol's gets the majority-class row (with the frequency
    prior's classifier metrics when a classifier column is shown). Empty when the runs
    saved no labels to compute it from.
    """
    baselines: dict[str, dict[str, float]] = {}
    if shown and shown[0] == "map@1":  # retrieval runs get the random-ranking row
        chance = chance_baseline(recs)
        if chance is not None:
            baselines["chance"] = chance
    elif shown[: len(UNSEEN_METRICS)] != UNSEEN_METRICS:  # the chance line of every classification table
        maj = majority_baseline(recs, tree, classifier=any(m in CLASSIFIER_METRICS for m in shown))
        if maj is not None:
            baselines["majority"] = maj
    return baselines


def _results_md(
    rows: list[dict[str, Any]],
    recs: Sequence[Mapping[str, Any]],
    title_md: str,
    baselines: Mapping[str, Mapping[str, float]],
    baseline: str | None,
    shown: Sequence[str],
    methods: Sequence[str] | None,
    geometries: Sequence[str] | None,
) -> tuple[str, str]:
    """The text of ``results.md`` (results table, paired differences, radius table) and the paired-difference part alone."""
    from hierviz.report.radius import radius_markdown  # heavy: plotly (hierviz.report.radius imports it)

    md = results_markdown(rows, methods=methods, geometries=geometries, title=title_md, baselines=baselines)
    paired = paired_markdown(rows, baseline, shown, methods=methods, geometries=geometries)
    if paired:
        md += "\n" + paired
    rad_md = radius_markdown(recs)
    if rad_md:
        md += "\n" + rad_md
    return md, paired


def _summary_figures(
    rows: list[dict[str, Any]],
    recs: Sequence[Mapping[str, Any]],
    tree,
    shown: Sequence[str],
    figures: list,
    notes: list[str],
) -> None:
    """The figures over every run: metric bars (mean ± std over seeds), the label tree, radius by depth."""
    from hierviz.report.radius import plot_runs_radius_by_depth, radius_rows  # heavy: plotly
    from hierviz.viz import plot_tree  # heavy: plotly
    from hierviz.viz.curves import plot_metric_bars  # heavy: plotly

    summary = summarise(rows, shown)
    bar_rows = []
    for (meth, geo), vals in summary.items():
        br: dict[str, Any] = {"method": f"{method_label(meth, recs)} ({geometry_label(geo, recs)})"}
        for m in shown:  # a column the run lacks (e.g. a classifier's): NaN, no bar
            br[m], br[f"{m}_std"] = vals[m][:2] if m in vals else (math.nan, 0.0)
        bar_rows.append(br)
    bars_title = (
        "Metrics per method (paper 04 Table I columns; MNR: lower is better)"
        if shown[: len(UNSEEN_METRICS)] == UNSEEN_METRICS
        else "Metrics per method"
    )
    _figure_or_note(
        "Metrics (mean ± std over seeds)",
        lambda: plot_metric_bars(bar_rows, metrics=list(shown), title=bars_title),
        figures,
        notes,
    )
    _figure_or_note("Label tree", lambda: plot_tree(tree), figures, notes)
    if radius_rows(recs):
        _figure_or_note(
            "Radius by tree depth: prototypes should move outwards with depth",
            lambda: plot_runs_radius_by_depth(recs),
            figures,
            notes,
        )


def _run_figures(
    recs: Sequence[Mapping[str, Any]],
    tree,
    methods: Sequence[str] | None,
    geometries: Sequence[str] | None,
    projection: str,
    max_points: int,
    figures: list,
    notes: list[str],
) -> None:
    """The figures of one representative run (lowest seed) per method x geometry, then their loss curves."""
    from hierviz.viz import plot_loss_curves  # heavy: plotly

    firsts: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in sorted(recs, key=lambda r: int(r["seed"])):
        firsts.setdefault((r["method"], r["geometry"]), r)
    order_m = _ordered((k[0] for k in firsts), methods)
    order_g = _ordered((k[1] for k in firsts), geometries)
    losses: dict[str, list[float]] = {}
    for meth in order_m:
        for geo in order_g:
            r = firsts.get((meth, geo))
            if r is None:
                continue
            label = f"{method_label(meth, recs)} ({geometry_label(geo, recs)}, seed {r['seed']})"
            hist = r.get("step_history") or {}
            if hist.get("loss"):
                losses[label] = list(hist["loss"])
            _embedding_figures(r, label, tree, projection, max_points, figures, notes)
    if losses:
        _figure_or_note(
            "Training loss per step (lowest seed of each run)",
            lambda: plot_loss_curves(losses, title="Training loss", xlabel="step"),
            figures,
            notes,
        )


def _embedding_figures(
    r: Mapping[str, Any], label: str, tree, projection: str, max_points: int, figures: list, notes: list[str]
) -> None:
    """The maps of one run's saved test embeddings: its Poincaré disk (hyperbolic runs) and its 2-D projection.

    A run without saved embeddings, with a geometry this process has not registered, or
    whose embeddings collapsed gets a note instead.

    Raises
    ------
    ValueError
        If the saved embeddings file lacks ``y_test``, ``prototypes`` or ``proto_nodes``.
    """
    from hierviz.viz import plot_poincare_disk, plot_projection  # heavy: plotly

    geo = r["geometry"]
    emb = r.get("embeddings")
    f = read_run_file(emb, what="saved embeddings") if emb and Path(emb).is_file() else {}
    if "z_test" not in f:  # no file, or a protocol that saved its labels only (retrieval-folds)
        notes.append(f"{label}: no saved test embeddings, figures skipped")
        return
    require_keys(emb, f, ("y_test", "prototypes", "proto_nodes"), "saved embeddings")
    z, y = f["z_test"], f["y_test"]
    protos, pnodes = f["prototypes"], f["proto_nodes"]
    try:
        geom = get_geometry(**r["geometry_config"]) if r.get("geometry_config") else get_geometry(geo)
    except (KeyError, ValueError):  # a geometry a user module registered, not imported in this process
        notes.append(
            f"{label}: geometry {geo!r} is not registered in this process, so its disk and "
            f"{projection.upper()} map are not drawn; the tables above come from the run records "
            "(hierviz report --import MODULE draws them)."
        )
        return
    what = "encoder features" if r.get("eval_embedding") == "features" else "embeddings"
    note = collapsed_note(z)
    if note:
        notes.append(f"{label}: {note}; its disk and {projection.upper()} map are not drawn.")
        return
    if getattr(geom, "hyperbolic", False):
        if hasattr(geom, "to_ball"):
            zb = geom.to_ball(torch.as_tensor(z)).numpy()
            pb = geom.to_ball(torch.as_tensor(protos)).numpy() if len(protos) else protos
        else:
            zb, pb = z, protos
        names = [tree.nodes[int(i)] for i in pnodes]
        _figure_or_note(
            f"{label}: Poincaré disk of test {what} and parent prototypes",
            lambda c=geom.c: plot_poincare_disk(
                zb,
                y,
                tree,
                prototypes=pb if len(pb) else None,
                proto_nodes=names if len(pb) else None,
                c=c,
                max_points=max_points,
                title=f"{label}: test {what} (Poincaré disk)",
            ),
            figures,
            notes,
        )
    _figure_or_note(
        f"{label}: {projection.upper()} of test {what} with the tree drawn over it",
        lambda: plot_projection(
            z,
            y,
            tree,
            method=projection,
            geometry=geom,
            overlay="centroids",
            max_points=max_points,
            title=f"{label}: {projection.upper()} of test {what}",
        ),
        figures,
        notes,
    )


def build_report(
    out_dir: str | Path,
    records: Sequence[Mapping[str, Any]],
    tree,
    *,
    header: Mapping[str, str],
    methods: Sequence[str] | None = None,
    geometries: Sequence[str] | None = None,
    projection: str = "tsne",
    max_points: int = 1000,
    title: str = "hierviz compare",
    baseline: str | None = None,
) -> dict[str, Path]:
    """Write ``results.csv``, ``results.md`` and ``report.html`` into ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path
    records : sequence of dict
        One per finished run, as saved in ``runs/<name>/result.json`` by the CLI: keys
        ``method``, ``geometry``, ``curvature``, ``seed``, ``metrics`` (dict),
        ``step_history`` (dict of lists), timings, and ``embeddings`` - the path of an
        ``.npz`` with ``z_test`` (n, D), ``y_test`` (n,), ``prototypes`` (P, D),
        ``proto_nodes`` (P,) node indices.
    tree : hierviz.hierarchy.LabelTree
        The tree aligned with the data's classes.
    header : mapping of str to str
        Header lines of the HTML page.
    methods, geometries : sequence of str, optional
        Table order.
    projection : {"tsne", "umap", "pca"}, default "tsne"
        2-D map drawn for every method x geometry.
    max_points : int, default 1000
        Points per figure (seeded subsample).
    title : str
    baseline : str, optional
        The method of the paired-difference table (``report.baseline``; default SupCon when
        run, else the first method), shown when every method has at least 3 seeds
        (:mod:`hierviz.report.stats`).

    Returns
    -------
    dict
        ``{"csv": Path, "markdown": Path, "html": Path}``, plus ``"baselines"``
        (``baselines.csv``, the Majority-class row) for classification runs.

    Raises
    ------
    ValueError
        No records, or an unknown ``projection``.
    """
    # heavy: plotly (report.radius and hierviz.viz import it), imported only when a report is built
    from hierviz.report.radius import radius_flags, radius_html_table, radius_rows
    from hierviz.viz.projection import PROJECTIONS  # heavy: plotly

    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS.names()}, got {projection!r}")
    out_dir = Path(out_dir)
    recs = [dict(r) for r in records]
    if not recs:
        raise ValueError("records is empty: there are no finished runs to report")
    rows = [_result_row(r) for r in recs]
    paths = {"csv": write_results_csv(rows, out_dir / "results.csv")}
    first = lambda key: str(header.get(key, "")).splitlines()[0] if header.get(key) else ""  # noqa: E731
    title_md = " — ".join(t for t in (f"**{title}**", first("Dataset"), first("Tree")) if t)
    shown = default_metrics(rows)  # paper 04 Table I's columns for unseen-protocol runs, as the tables
    baselines = _table_baselines(recs, tree, shown)
    if baselines:
        paths["baselines"] = write_baselines_csv(baselines, out_dir / "baselines.csv")
    md, paired = _results_md(rows, recs, title_md, baselines, baseline, shown, methods, geometries)
    paths["markdown"] = out_dir / "results.md"
    paths["markdown"].write_text(md, encoding="utf-8")

    figures: list = []
    notes: list[str] = list(radius_flags(radius_rows(recs)))
    if baselines:
        notes.insert(0, baseline_note(baselines).replace("*", ""))
    if paired:
        notes.append(" ".join(ln for ln in paired.splitlines() if ln and not ln.startswith("|")).replace("**", ""))
    _summary_figures(rows, recs, tree, shown, figures, notes)
    _run_figures(recs, tree, methods, geometries, projection, max_points, figures, notes)
    paths["html"] = write_report_html(
        out_dir / "report.html",
        title=title,
        header=header,
        table_html=results_html_table(rows, methods=methods, geometries=geometries, baselines=baselines)
        + _paired_html(paired)
        + radius_html_table(recs),
        figures=figures,
        notes=notes,
    )
    return paths
