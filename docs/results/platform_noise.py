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

METRICS = ("hf1", "top1", "macro_f1", "violations", "radius_depth_spearman", "edge_order")


def main(pairs: list[str]) -> str:
    names = [p.split("=", 1)[0] for p in pairs]
    folders = [Path(p.split("=", 1)[1]) for p in pairs]
    tables = [
        {r["method"] + "-" + r["geometry"] + "-s" + r["seed"]: r for r in csv.DictReader(open(f / "results.csv"))}
        for f in folders
    ]
    runs = list(tables[0])
    lines = ["| run | metric | " + " | ".join(names) + " | max − min |", "|---|---|" + "---:|" * (len(names) + 1)]
    for run in runs:
        for m in METRICS:
            vals = [t[run].get(m, "") for t in tables]
            if not all(v not in ("", None) for v in vals):
                continue
            x = np.array([float(v) for v in vals])
            lines.append(f"| {run} | {m} | " + " | ".join(f"{v:.6f}" for v in x) + f" | {x.max() - x.min():.2g} |")
    lines += [
        "",
        "| run | max abs Δ of a test-embedding coordinate | max abs Δ of the last training loss |",
        "|---|---:|---:|",
    ]
    for run in runs:
        folder = run.replace("+", "_")
        zs = [np.load(f / "runs" / folder / "embeddings.npz")["z_test"].astype(np.float64) for f in folders]
        losses = [json.loads((f / "runs" / folder / "result.json").read_text())["history"]["loss"][-1] for f in folders]
        dz = max(float(np.abs(z - zs[0]).max()) for z in zs)
        dl = max(abs(v - losses[0]) for v in losses)
        lines.append(f"| {run} | {dz:.2g} | {dl:.2g} |")
    return "\n".join(lines)


def _write_csv(markdown: str, prefix: str) -> None:
    """The two Markdown tables of :func:`main` as CSV files (header row first)."""
    for part, suffix in zip(markdown.split("\n\n"), ("metrics", "embeddings"), strict=True):
        rows = [
            [c.strip() for c in line.strip("|").split("|")] for line in part.splitlines() if not line.startswith("|---")
        ]
        with open(f"{prefix}-{suffix}.csv", "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, lineterminator="\n").writerows(rows)


if __name__ == "__main__":
    args = sys.argv[1:]
    prefix = None
    if "--csv" in args:
        i = args.index("--csv")
        prefix, args = args[i + 1], args[:i] + args[i + 2 :]
    text = main(args)
    if prefix:
        _write_csv(text, prefix)
    print(text)
