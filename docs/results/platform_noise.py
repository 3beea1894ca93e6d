"""Platform noise of one config: the same runs on other torch builds and thread counts (docs/results/README.md).

Usage::

    python3 docs/results/platform_noise.py NAME=FOLDER NAME=FOLDER ... [--csv PREFIX]

Each FOLDER is the output of the same ``hierviz compare`` command (the same config and seeds) run on
another torch build or with another ``train.threads``. Prints one Markdown table: per run and metric,
the value in each folder and the spread (max − min); then per run the largest difference of any
test-embedding coordinate and of the last training loss between the folders. ``--csv PREFIX`` also
writes both tables as ``PREFIX-metrics.csv`` and ``PREFIX-embeddings.csv`` (what the results page
embeds through ``make_tables.py``).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

from hierviz.report import read_results_csv

METRICS = ("hf1", "top1", "macro_f1", "violations", "radius_depth_spearman", "edge_order")


def tables(pairs: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """The metric table and the embedding table, each a header row then one row per run (and metric)."""
    names = [p.split("=", 1)[0] for p in pairs]
    folders = [Path(p.split("=", 1)[1]) for p in pairs]
    per_folder = [
        {f"{r['method']}-{r['geometry']}-s{r['seed']}": r for r in read_results_csv(f / "results.csv")} for f in folders
    ]
    runs = list(per_folder[0])
    metric_rows = [["run", "metric", *names, "max − min"]]
    for run in runs:
        for m in METRICS:
            if not all(t[run].get(m, "") not in ("", None) for t in per_folder):
                continue
            x = np.array([float(t[run][m]) for t in per_folder])
            metric_rows.append([run, m, *(f"{v:.6f}" for v in x), f"{x.max() - x.min():.2g}"])
    embed_rows = [["run", "max abs Δ of a test-embedding coordinate", "max abs Δ of the last training loss"]]
    for run in runs:
        folder = run.replace("+", "_")
        zs = [np.load(f / "runs" / folder / "embeddings.npz")["z_test"].astype(np.float64) for f in folders]
        losses = [json.loads((f / "runs" / folder / "result.json").read_text())["history"]["loss"][-1] for f in folders]
        dz = max(float(np.abs(z - zs[0]).max()) for z in zs)
        dl = max(abs(v - losses[0]) for v in losses)
        embed_rows.append([run, f"{dz:.2g}", f"{dl:.2g}"])
    return metric_rows, embed_rows


def markdown(rows: list[list[str]], left: int) -> str:
    """A Markdown table of ``rows`` (header first); the first ``left`` columns left-aligned, the rest right."""
    align = "|" + "---|" * left + "---:|" * (len(rows[0]) - left)
    return "\n".join(["| " + " | ".join(rows[0]) + " |", align, *("| " + " | ".join(r) + " |" for r in rows[1:])])


if __name__ == "__main__":
    args = sys.argv[1:]
    prefix = None
    if "--csv" in args:
        i = args.index("--csv")
        prefix, args = args[i + 1], args[:i] + args[i + 2 :]
    metric_rows, embed_rows = tables(args)
    if prefix:
        for suffix, rows in (("metrics", metric_rows), ("embeddings", embed_rows)):
            with open(f"{prefix}-{suffix}.csv", "w", newline="", encoding="utf-8") as fh:
                csv.writer(fh, lineterminator="\n").writerows(rows)
    print(markdown(metric_rows, 2) + "\n\n" + markdown(embed_rows, 1))
