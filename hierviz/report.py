"""Results tables and the self-contained HTML report of ``hierviz compare``.

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
import json
import math
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

__all__ = [
    "METRICS",
    "METRIC_LABELS",
    "METHOD_LABELS",
    "GEOMETRY_LABELS",
    "LOWER_IS_BETTER",
    "write_results_csv",
    "read_results_csv",
    "summarise",
    "results_markdown",
    "results_html_table",
    "write_report_html",
    "build_report",
    "load_records",
]

#: Metric keys in paper 01 Table 1 column order.
METRICS = ("hf1", "h_acc", "pc_order", "violations", "top1")
#: Column titles used in the tables (paper 01 Table 1).
METRIC_LABELS = {"hf1": "HF1", "h_acc": "H-Acc", "pc_order": "PC-Order", "violations": "Violations ↓",
                 "top1": "Top-1"}
#: Metrics where lower is better (bolded as minimum).
LOWER_IS_BETTER = frozenset({"violations"})
#: Row titles of the methods (paper 01 §4.3 names).
METHOD_LABELS = {"simclr": "SimCLR", "supcon": "SupCon", "hc-outside": "Hierarchical Contrastive (outside)",
                 "hxe": "HXE", "hwc": "HWC", "lam": "LAM", "hwc+lam": "HWC+LAM"}
GEOMETRY_LABELS = {"euclidean": "Euclidean", "poincare": "Poincaré", "lorentz": "Lorentz"}

_CSV_FIRST = ["method", "geometry", "seed", *METRICS]


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


def write_results_csv(rows: Sequence[Mapping[str, Any]], path: Union[str, Path]) -> Path:
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
    cols = [c for c in _CSV_FIRST if any(c in r for r in R)]
    for r in R:
        cols += [k for k in r if k not in cols and not isinstance(r[k], (dict, list, tuple))]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in R:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items() if k in cols})
    return path


def read_results_csv(path: Union[str, Path]) -> list[dict]:
    """Read ``results.csv`` back (numbers as float, ``seed`` as int).

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


def summarise(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] = METRICS
              ) -> dict[tuple[str, str], dict[str, tuple[float, float, int]]]:
    """Mean, sample standard deviation and count over seeds for each (method, geometry).

    Parameters
    ----------
    rows : sequence of dict
        Per-run rows (see :func:`write_results_csv`).
    metrics : sequence of str
        Metric keys to summarise; each must be present in every row.

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
            if any(m not in r for r in rs):
                raise ValueError(f"rows: metric {m!r} is missing for method={key[0]!r}, geometry={key[1]!r}")
            v = np.array([float(r[m]) for r in rs], dtype=np.float64)
            std = float(v.std(ddof=1)) if v.size > 1 else 0.0
            out[key][m] = (float(v.mean()), std, int(v.size))
    return out


def _ordered(values: Iterable[str], preferred: Optional[Sequence[str]]) -> list[str]:
    seen: list[str] = []
    for v in values:
        if v not in seen:
            seen.append(v)
    if preferred is None:
        return seen
    return [p for p in preferred if p in seen] + [v for v in seen if v not in preferred]


def _table_cells(rows, metrics, methods, geometries):
    summary = summarise(rows, metrics)
    methods = _ordered((k[0] for k in summary), methods)
    geometries = _ordered((k[1] for k in summary), geometries)
    cols = [(g, m) for g in geometries for m in metrics]
    best: dict[tuple[str, str], float] = {}
    for g, m in cols:
        vals = [summary[(meth, g)][m][0] for meth in methods if (meth, g) in summary]
        if len(vals) > 1:
            best[(g, m)] = min(vals) if m in LOWER_IS_BETTER else max(vals)
    body = []
    for meth in methods:
        cells = []
        for g, m in cols:
            if (meth, g) not in summary:
                cells.append(("–", False))
                continue
            mean, std, n = summary[(meth, g)][m]
            text = f"{mean:.3f} ± {std:.3f}" if n > 1 else f"{mean:.3f}"
            cells.append((text, (g, m) in best and math.isclose(mean, best[(g, m)], abs_tol=5e-4)))
        body.append((METHOD_LABELS.get(meth, meth), cells))
    header = [f"{METRIC_LABELS.get(m, m)} ({GEOMETRY_LABELS.get(g, g)})" for g, m in cols]
    nseeds = sorted({v[metrics[0]][2] for v in summary.values()})
    return header, body, nseeds


def results_markdown(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] = METRICS,
                     methods: Optional[Sequence[str]] = None, geometries: Optional[Sequence[str]] = None,
                     title: Optional[str] = None) -> str:
    """Markdown table shaped like paper 01 Table 1: rows = methods, columns = metric per geometry.

    Each cell is "mean ± std" over seeds (sample std, ddof=1; just the mean for one seed);
    the best mean per column is **bold** (lowest for Violations).  A missing
    method x geometry combination shows "–".

    Parameters
    ----------
    rows : sequence of dict
        Per-run rows with ``method``, ``geometry``, ``seed`` and the metrics.
    metrics : sequence of str, default :data:`METRICS`
    methods, geometries : sequence of str, optional
        Row / column-group order (default: first-seen order).
    title : str, optional
        A caption line put above the table.

    Returns
    -------
    str
        The Markdown text, ending with a note on seeds and the direction of each metric.

    Raises
    ------
    TypeError, ValueError
        See :func:`summarise`.
    """
    header, body, nseeds = _table_cells(rows, metrics, methods, geometries)
    lines = []
    if title:
        lines += [title, ""]
    lines.append("| Method | " + " | ".join(header) + " |")
    lines.append("|---|" + "|".join("---:" for _ in header) + "|")
    for name, cells in body:
        lines.append(f"| {name} | " + " | ".join(f"**{t}**" if b else t for t, b in cells) + " |")
    seeds = "/".join(str(n) for n in nseeds)
    lines += ["", f"Mean ± sample std over {seeds} seed(s); best per column in **bold**. "
                  "Violations: lower is better; all other metrics: higher is better."]
    return "\n".join(lines) + "\n"


def results_html_table(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] = METRICS,
                       methods: Optional[Sequence[str]] = None,
                       geometries: Optional[Sequence[str]] = None) -> str:
    """The table of :func:`results_markdown` as an HTML ``<table>`` fragment (escaped).

    Parameters
    ----------
    rows, metrics, methods, geometries
        As :func:`results_markdown`.

    Returns
    -------
    str
        HTML fragment.
    """
    header, body, _ = _table_cells(rows, metrics, methods, geometries)
    out = ["<table class='results'><thead><tr><th>Method</th>"]
    out += [f"<th>{html.escape(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for name, cells in body:
        out.append(f"<tr><td>{html.escape(name)}</td>")
        out += [f"<td>{'<b>' if b else ''}{html.escape(t)}{'</b>' if b else ''}</td>" for t, b in cells]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}thead th{background:#f3f3f3}
pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}
dl.header dt{font-weight:bold;float:left;clear:left;width:11em}dl.header dd{margin-left:12em;margin-bottom:4px}
.fig{margin:1em 0;border-top:1px solid #eee;padding-top:.5em}
"""


def write_report_html(path: Union[str, Path], *, title: str, header: Mapping[str, str], table_html: str,
                      figures: Sequence[tuple[str, Any]], notes: Sequence[str] = ()) -> Path:
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
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>{html.escape(title)}</title><style>{_CSS}</style>",
             f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>",
             f"<h1>{html.escape(title)}</h1><dl class='header'>"]
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
        div = fig.to_html(full_html=False, include_plotlyjs=False, default_width="100%",
                          config={"responsive": True, "displaylogo": False})
        parts.append(f"<div class='fig'><h3>{html.escape(sec)}</h3>{div}</div>")
    parts.append("</body></html>")
    path.write_text("".join(parts), encoding="utf-8")
    return path


def _figure_or_note(title: str, make, figures: list, notes: list) -> None:
    """Add ``make()`` to ``figures``; a failure becomes a note instead of killing the report."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figures.append((title, make()))
    except (ValueError, TypeError, RuntimeError) as exc:  # one bad figure must not lose the results
        notes.append(f"Figure '{title}' could not be drawn: {exc}")


def build_report(
    out_dir: Union[str, Path],
    records: Sequence[Mapping[str, Any]],
    tree,
    *,
    header: Mapping[str, str],
    methods: Optional[Sequence[str]] = None,
    geometries: Optional[Sequence[str]] = None,
    projection: str = "tsne",
    max_points: int = 1000,
    title: str = "hierviz compare",
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
    tree : hierviz.tree.LabelTree
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

    Returns
    -------
    dict
        ``{"csv": Path, "markdown": Path, "html": Path}``.

    Raises
    ------
    ValueError
        No records, or an unknown ``projection``.
    """
    from .geometry import get_geometry
    from .viz import plot_loss_curves, plot_poincare_disk, plot_projection, plot_tree
    from .viz.curves import plot_metric_bars

    if projection not in ("tsne", "umap", "pca"):
        raise ValueError(f"projection must be one of ['tsne', 'umap', 'pca'], got {projection!r}")
    out_dir = Path(out_dir)
    recs = [dict(r) for r in records]
    if not recs:
        raise ValueError("records is empty: there are no finished runs to report")
    rows = []
    for r in recs:
        row = {"method": r["method"], "geometry": r["geometry"], "seed": int(r["seed"])}
        row.update({m: float(r["metrics"][m]) for m in METRICS})
        for k in ("curvature", "epochs", "train_seconds", "eval_seconds", "eval_embedding"):
            if k in r:
                row[k] = r[k]
        rows.append(row)
    paths = {"csv": write_results_csv(rows, out_dir / "results.csv")}
    first = lambda key: str(header.get(key, "")).splitlines()[0] if header.get(key) else ""  # noqa: E731
    title_md = " — ".join(t for t in (f"**{title}**", first("Dataset"), first("Tree")) if t)
    md = results_markdown(rows, methods=methods, geometries=geometries,
                          title=title_md)
    paths["markdown"] = out_dir / "results.md"
    paths["markdown"].write_text(md, encoding="utf-8")

    figures: list = []
    notes: list[str] = []
    summary = summarise(rows)
    bar_rows = []
    for (meth, geo), vals in summary.items():
        br: dict[str, Any] = {"method": f"{METHOD_LABELS.get(meth, meth)} ({GEOMETRY_LABELS.get(geo, geo)})"}
        for m in METRICS:
            br[m], br[f"{m}_std"] = vals[m][0], vals[m][1]
        bar_rows.append(br)
    _figure_or_note("Metrics (mean ± std over seeds)",
                    lambda: plot_metric_bars(bar_rows, metrics=list(METRICS), title="Metrics per method"),
                    figures, notes)
    _figure_or_note("Label tree", lambda: plot_tree(tree), figures, notes)

    # one representative run (lowest seed) per method x geometry
    firsts: dict[tuple[str, str], dict] = {}
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
            label = f"{METHOD_LABELS.get(meth, meth)} ({GEOMETRY_LABELS.get(geo, geo)}, seed {r['seed']})"
            hist = r.get("step_history") or {}
            if hist.get("loss"):
                losses[label] = list(hist["loss"])
            emb = r.get("embeddings")
            if not emb or not Path(emb).is_file():
                notes.append(f"{label}: no saved test embeddings, figures skipped")
                continue
            with np.load(emb) as f:
                z, y = f["z_test"], f["y_test"]
                protos, pnodes = f["prototypes"], f["proto_nodes"]
            geom = get_geometry(geo, c=float(r.get("curvature", 1.0)))
            what = "encoder features" if r.get("eval_embedding") == "features" else "embeddings"
            if geo in ("poincare", "lorentz"):
                if geo == "lorentz":
                    import torch

                    zb = geom.to_ball(torch.as_tensor(z)).numpy()
                    pb = geom.to_ball(torch.as_tensor(protos)).numpy() if len(protos) else protos
                else:
                    zb, pb = z, protos
                names = [tree.nodes[int(i)] for i in pnodes]
                _figure_or_note(
                    f"{label}: Poincaré disk of test {what} and parent prototypes",
                    lambda zb=zb, y=y, pb=pb, names=names, c=geom.c: plot_poincare_disk(
                        zb, y, tree, prototypes=pb if len(pb) else None, proto_nodes=names if len(pb) else None,
                        c=c, max_points=max_points, title=f"{label}: test {what} (Poincaré disk)"),
                    figures, notes)
            _figure_or_note(
                f"{label}: {projection.upper()} of test {what} with the tree drawn over it",
                lambda z=z, y=y, geom=geom: plot_projection(
                    z, y, tree, method=projection, geometry=geom, overlay="centroids", max_points=max_points,
                    title=f"{label}: {projection.upper()} of test {what}"),
                figures, notes)
    if losses:
        _figure_or_note("Training loss per step (lowest seed of each run)",
                        lambda: plot_loss_curves(losses, title="Training loss", xlabel="step"), figures, notes)
    paths["html"] = write_report_html(out_dir / "report.html", title=title, header=header,
                                      table_html=results_html_table(rows, methods=methods, geometries=geometries),
                                      figures=figures, notes=notes)
    return paths


def load_records(out_dir: Union[str, Path]) -> list[dict]:
    """Read every ``runs/*/result.json`` below ``out_dir`` (finished runs only).

    Parameters
    ----------
    out_dir : str or Path

    Returns
    -------
    list of dict
        Sorted by run folder name; ``embeddings`` made absolute.
    """
    out = []
    for p in sorted(Path(out_dir).glob("runs/*/result.json")):
        rec = json.loads(p.read_text(encoding="utf-8"))
        if rec.get("embeddings"):
            rec["embeddings"] = str(p.parent / Path(rec["embeddings"]).name)
        out.append(rec)
    return out
