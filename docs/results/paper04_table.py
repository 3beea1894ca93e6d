"""Paper 04 Table I in shape from the fold folders of ``hierviz compare --protocol unseen``.

Usage: ``python docs/results/paper04_table.py /tmp/p04/fold0 /tmp/p04/fold1 ...`` prints the
Markdown table of ``docs/results/paper04.md``: mean (standard error of the mean over folds) of
each metric, in percent, as the paper's Table I.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from hierviz.report import read_results_csv

COLUMNS = [
    ("leaf_f1", "leaf F1"),
    ("rp5", "leaf RP@5"),
    ("mnr", "MNR ↓"),
    ("ndcg_sum", "NDCG_sum"),
    ("ndcg_max", "NDCG_max"),
    ("acc_blind", "Acc_blind"),
    ("acc_aware", "Acc_aware"),
    ("blind_over_aware", "blind / aware"),
    ("pred_ndcg_sum", "NDCG_sum (unseen)"),
]


def table(folders: list[str]) -> str:
    rows = [r for f in folders for r in read_results_csv(Path(f) / "results.csv")]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    head = "| method | " + " | ".join(t for _, t in COLUMNS) + " |"
    lines = [head, "|---|" + "---:|" * len(COLUMNS)]
    for m in methods:
        cells = []
        for key, _ in COLUMNS:
            v = np.array([float(r[key]) for r in rows if r["method"] == m], dtype=float)
            v = v[np.isfinite(v)] * 100
            sem = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
            cells.append(f"{v.mean():.1f}" + (f" ({sem:.1f})" if np.isfinite(sem) else ""))
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\n{len(folders)} fold(s): " + ", ".join(Path(f).name for f in folders)


if __name__ == "__main__":
    print(table(sys.argv[1:]))
