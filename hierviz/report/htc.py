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
from hierviz.report.html import write_report_html
from hierviz.viz.hyilr import history_figure, label_disk_figure, level_bucket_figure

__all__ = ["write_report"]


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
