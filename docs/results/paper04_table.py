"""Paper 04 Table I in shape from the fold folders of ``hierviz compare --protocol unseen``.

Usage::

    python docs/results/paper04_table.py /tmp/p04/fold0 /tmp/p04/fold1 ...
    python docs/results/paper04_table.py --prior docs/results/paper04/20news_folds0-3.md 4 /tmp/p04/fold4
    python docs/results/paper04_table.py --seed-spread /tmp/p04/fold0 /tmp/p04/fold1 ...

prints the Markdown table of ``docs/results/paper04.md``: mean (standard error of the mean over
folds) of each metric, in percent, as the paper's Table I. Several seeds in a fold are averaged
first, so the error is the folds' (which leaves are held out); ``--seed-spread`` prints the mean
over folds of the standard deviation over seeds instead.

``--prior FILE N`` adds N earlier folds known only by such a table (mean and standard error,
rounded to 0.1): the pooled mean and standard error over N + len(folders) folds are computed
from the summary statistics (for each cell: sum = N * mean, sum of squared deviations =
(N - 1) * N * SE^2). Rounding the prior cells to 0.1 moves a pooled mean by at most
0.05 * N / (N + k) and the pooled standard error by a comparable amount.
"""

from __future__ import annotations

import re
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


def read_prior(path: str) -> dict[str, list[tuple[float, float]]]:
    """``{METHOD: [(mean, se) per column]}`` from a Markdown table written by :func:`table`."""
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(COLUMNS) + 1 or cells[0] in ("method", "---"):
            continue
        pairs = [re.fullmatch(r"(-?[\d.]+) \(([\d.]+)\)", c) for c in cells[1:]]
        if all(pairs):
            out[cells[0]] = [(float(m.group(1)), float(m.group(2))) for m in pairs]
    if not out:
        raise ValueError(f"{path}: no table rows 'METHOD | mean (se) | ...' with {len(COLUMNS)} columns")
    return out


def _cell(v: np.ndarray, prior: tuple[float, float] | None, n_prior: int) -> str:
    n, total, ss = len(v), float(v.sum()), float(((v - v.mean()) ** 2).sum()) if len(v) else 0.0
    mean = v.mean() if n else float("nan")
    if prior is not None and n_prior:
        pm, pse = prior
        pss = (n_prior - 1) * n_prior * pse**2  # SE = sd / sqrt(N), sd^2 = ss / (N - 1)
        N = n_prior + n
        mean = (n_prior * pm + total) / N
        ss = pss + n_prior * (pm - mean) ** 2 + (ss + n * ((v.mean() if n else mean) - mean) ** 2)
        n = N
    sem = np.sqrt(ss / (n - 1)) / np.sqrt(n) if n > 1 else float("nan")
    return f"{mean:.1f}" + (f" ({sem:.1f})" if np.isfinite(sem) else "")


def seed_values(rows: list[dict], method: str, key: str) -> np.ndarray:
    """The finite values of ``key`` over the seeds of ``method`` in one fold's rows."""
    v = np.array([float(r[key]) for r in rows if r["method"] == method], dtype=float)
    return v[np.isfinite(v)]


def fold_means(rows: list[dict], method: str, key: str) -> float:
    """Mean of ``key`` over the seeds of ``method`` in one fold's rows (NaN if none is finite)."""
    v = seed_values(rows, method, key)
    return float(v.mean()) if len(v) else float("nan")


def _read_folds(folders: list[str]) -> tuple[list[list[dict]], list[str], list[str]]:
    """Each fold's rows, the methods in order of appearance, and the table's two header lines."""
    per_fold = [read_results_csv(Path(f) / "results.csv") for f in folders]
    methods = list(dict.fromkeys(r["method"] for rows in per_fold for r in rows))
    head = ["| method | " + " | ".join(t for _, t in COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    return per_fold, methods, head


def table(folders: list[str], prior: dict[str, list[tuple[float, float]]] | None = None, n_prior: int = 0) -> str:
    """Mean (standard error over folds): seeds are averaged within a fold first, so the error is the folds'."""
    per_fold, methods, lines = _read_folds(folders)
    seeds = sorted({len([r for r in rows if r["method"] == m]) for rows in per_fold for m in methods} - {0})
    for m in methods:
        cells = []
        for j, (key, _) in enumerate(COLUMNS):
            v = np.array([fold_means(rows, m, key) for rows in per_fold], dtype=float)
            v = v[np.isfinite(v)] * 100
            p = prior.get(m.upper()) if prior else None
            cells.append(_cell(v, p[j] if p else None, n_prior if p else 0))
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    names = ", ".join(Path(f).name for f in folders)
    per = "/".join(str(s) for s in seeds)
    folds = f"{len(folders)} fold(s), {per} seed(s) per fold averaged within the fold: {names}" + (
        f", plus {n_prior} earlier fold(s) from their summary" if prior else ""
    )
    return "\n".join(lines) + f"\n\n{folds}"


def seed_spread(folders: list[str]) -> str:
    """Mean over folds of the sample std over seeds within a fold (percent): the seeds' own noise."""
    per_fold, methods, lines = _read_folds(folders)
    for m in methods:
        cells = []
        for key, _ in COLUMNS:
            sds = [100 * v.std(ddof=1) for rows in per_fold if len(v := seed_values(rows, m, key)) > 1]
            cells.append(f"{np.mean(sds):.1f}" if sds else "–")
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    prior, n_prior = None, 0
    if args[:1] == ["--prior"]:
        prior, n_prior, args = read_prior(args[1]), int(args[2]), args[3:]
    if args[:1] == ["--seed-spread"]:
        print(seed_spread(args[1:]))
        sys.exit(0)
    print(table(args, prior, n_prior))
