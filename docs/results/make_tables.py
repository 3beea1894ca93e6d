"""Regenerate the tables of the five results pages from the committed per-run CSVs (issue 24).

Every table of ``docs/results/paper0[1-5].md`` sits between ``<!-- table: SPEC -->`` and
``<!-- /table -->`` and is rebuilt here from CSVs committed beside the page, so a page cannot
drift from its data::

    python3 docs/results/make_tables.py            # rewrite the tables in place
    python3 docs/results/make_tables.py --check    # exit 1 if a page is out of date (CI, tests)
    python3 docs/results/make_tables.py --baselines  # recompute the Majority / chance CSVs from the data
                                                     # and splits (needs ham10000_64.npz, mnist/)

``SPEC`` is one of

* ``FOLDER [baseline=METHOD]`` (papers 01, 02): ``hierviz compare``'s ``FOLDER/results.csv`` (one
  row per run) with the Majority row of ``FOLDER/baselines.csv``
  (:func:`hierviz.report.results_markdown`) and, with >= 3 seeds, the paired differences to
  ``METHOD`` (:func:`hierviz.report.stats.paired_markdown`);
* ``paper03 CSV... [chance=CSV]``: paper 03's Table 2 shape (:func:`hierviz.retrieval.tables.table2_markdown`)
  from ``hierviz retrieval`` summaries (mean and std over folds per variant), with the random-ranking row;
  ``paper03-list CSV...``: the same rows as a flat list; ``paper03-paired FOLDS_CSV``: each
  Hyper-DINO(·, 32) minus its base, paired by fold, mean and 95 % interval;
* ``paper04 FOLDER...`` / ``paper04-spread FOLDER...``: paper 04's Table I shape over unseen-leaf
  folds (``paper04_table.py``: mean (standard error over folds), the seeds' spread);
  ``paper04-paired FOLDER... baseline=METHOD``: each method minus ``METHOD``, seeds averaged within
  a fold, paired by fold; ``paper04-folds FOLDER... unseen=A+B,C,...``: Acc_blind / Acc_aware per
  fold and method; ``paper04-weighted FOLDER... unweighted=F0,F1,...``: weighted minus unweighted
  runs, paired by fold; ``paper04-leaf-counts CSV``: the sampler's images per leaf and fold;
* ``summary CSV``: a summary CSV (mean and std per row) of :data:`SUMMARY_TABLES`, for tables whose
  runs' arrays (``embeddings.npz``, checkpoints) are too large to commit;
* ``paper05 FOLDER [baseline=METHOD]``: ``hierviz htc``'s table, from ``seeds.csv`` (one row per
  run; with ``METHOD`` and >= 3 seeds also the paired differences) or, for the older folders that
  have only the summary, ``results.csv``, with the frequency prior of ``baselines.csv``;
  ``paper05-levels FOLDER``: macro-F1 per level and per label-frequency bucket (``levels.csv``,
  ``buckets.csv``).

Paths are relative to ``docs/results/``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAGES = ["paper01.md", "paper02.md", "paper03.md", "paper04.md", "paper05.md"]
#: Folders whose runs used the whole HAM10000 file, lesion-grouped split seed 0 (for --baselines).
FULL_HAM = ["ham10000-cpu", "ham10000-medium-cpu", "ham10000-medium-cpu-new-head"]
#: Other folders: the ``quick``-preset overrides that load their data and split (for --baselines).
DATA_OF = {
    "paper02-hier-mnist-cpu": ["data.dataset=hier-mnist", "data.tree=hier-mnist", "data.limit=3000"],
    "paper02-ham10000-sample-cpu": [],
    "paper01-h200-sample": [],
}
_BLOCK = re.compile(r"(<!-- table: (?P<spec>[^>]+?) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)


def read_baselines(folder: Path) -> dict[str, dict[str, float]]:
    """``baselines.csv`` as ``{name: {metric: value}}`` (empty cells as NaN); {} without the file."""
    path = folder / "baselines.csv"
    if not path.is_file():
        return {}
    out = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            name = row.pop("baseline")
            out[name] = {k: float(v) if v != "" else float("nan") for k, v in row.items()}
    return out


def table(spec: str) -> str:
    """The Markdown of one ``<!-- table: SPEC -->`` block (the module docstring lists the specs)."""
    from hierviz.report import read_results_csv, results_markdown
    from hierviz.report.stats import paired_markdown
    from hierviz.report.tables import default_metrics

    parts = spec.split()
    args = [p for p in parts[1:] if "=" not in p]
    opts = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
    if parts[0] in KINDS:
        return KINDS[parts[0]](args, opts)
    target = HERE / parts[0]
    csv_path = target if target.suffix == ".csv" else target / "results.csv"
    folder = csv_path.parent
    rows = read_results_csv(csv_path)
    base = read_baselines(folder)
    md = results_markdown(rows, baselines=base)
    seeds = sorted({int(r["seed"]) for r in rows})
    if len(seeds) < 3:
        return md + f"\nNo paired confidence intervals: {len(seeds)} seed(s); the paired table needs at least 3.\n"
    return md + "\n" + paired_markdown(rows, opts.get("baseline", "supcon"), default_metrics(rows))


# ------------------------------------------------------------------ papers 03, 04, 05
def _num(v: str) -> Any:
    """A CSV cell as int, float or the string itself ('' stays '')."""
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def _read_csv(path: Path) -> list[dict[str, Any]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: _num(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def _ci(d: tuple[float, float, float, int], scale: float = 100.0, digits: int = 2) -> str:
    """``+m [lo, hi]`` (``*`` when the interval excludes 0) of a :func:`paired_ci` result."""
    m, lo, hi = (x * scale for x in d[:3])
    star = "*" if lo > 0 or hi < 0 else ""
    return f"{m:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]{star}"


def _paper03_summary(args: list[str], opts: dict[str, str]) -> list[dict[str, Any]]:
    rows: dict[tuple, dict[str, Any]] = {}
    for name in [*args, *([opts["chance"]] if "chance" in opts else [])]:
        for r in _read_csv(HERE / name):
            rows[(r["variant"], r["storage"])] = r
    return list(rows.values())


def paper03_table(args: list[str], opts: dict[str, str]) -> str:
    """Paper 03 Table 2 shape from ``hierviz retrieval`` summary CSVs (+ the chance summary)."""
    from hierviz.retrieval.tables import table2_markdown

    folds = sorted({int(r["folds"]) for r in _paper03_summary(args, opts) if r["base"] != "chance"})
    md = table2_markdown(_paper03_summary(args, opts))
    return (
        md + f"\nMAP@k (%), mean ± std over {'/'.join(map(str, folds))} grouped folds; ·→32 and ·→N: fp16 tangents.\n"
    )


def paper03_list(args: list[str], opts: dict[str, str]) -> str:
    """One row per variant of the summary CSVs: bytes, MAP@1/5/10/20, R-precision (%, mean ± std over folds)."""
    keys = ["map@1", "map@5", "map@10", "map@20", "r_precision"]
    lines = ["| features | bytes | MAP@1 | MAP@5 | MAP@10 | MAP@20 | R-precision |", "|---|---:" + "|---:" * 5 + "|"]
    for r in _paper03_summary(args, opts):
        kind = (
            " (float16)"
            if r["dim_out"] == ""
            else (", fp16 tangents" if r["storage"] == "fp16" else ", fp32 coordinates")
        )
        cells = [f"{100 * r[f'{k}_mean']:.2f} ± {100 * r[f'{k}_std']:.2f}" for k in keys]
        lines.append(f"| {r['variant']}{kind} | {r['bytes']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def paper03_paired(args: list[str], opts: dict[str, str]) -> str:
    """Hyper-DINO(V, 32) − V per fold (same queries and references), mean and 95 % interval over folds."""
    from hierviz.retrieval.tables import paired_markdown

    keys = opts.get("metrics", "map@1,map@5,map@20").split(",")
    return paired_markdown(_read_csv(HERE / args[0]), storage=opts.get("storage", "fp16"), metrics=keys)


def paper03_storage(args: list[str], opts: dict[str, str]) -> str:
    """MAP@20 of each Hyper-DINO variant with float32 ball coordinates against float16 log₀ tangents."""
    rows = _paper03_summary(args, opts)
    by = {(r["variant"], r["storage"]): r for r in rows}
    lines = [
        "| variant | float32 ball coordinates (128 B): MAP@20 | float16 log₀ tangents (64 B): MAP@20 |",
        "|---|---:|---:|",
    ]
    for v in dict.fromkeys(r["variant"] for r in rows if r["dim_out"] == 32):
        cells = [by.get((v, st)) for st in ("fp32", "fp16")]
        lines.append(
            f"| {v} | "
            + " | ".join(
                "–" if c is None else f"{100 * c['map@20_mean']:.2f} ± {100 * c['map@20_std']:.2f}" for c in cells
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def paper03_storage_error(args: list[str], opts: dict[str, str]) -> str:
    """p99 relative distance error by stored radius (``storage_error.json`` of :func:`storage_error_curve`)."""
    d = json.loads((HERE / args[0]).read_text(encoding="utf-8"))
    names = {"fp16": "float16 log₀ tangents", "fp16-ball": "float16 coordinates", "fp32": "float32 coordinates"}
    lines = ["| stored point's radius | " + " | ".join(f"{r:g}" for r in d["radius"]) + " |"]
    lines.append("|---|" + "---:|" * len(d["radius"]))
    for key in ("fp16", "fp16-ball", "fp32"):
        lines.append(f"| {names[key]} | " + " | ".join(f"{v:.1e}" for v in d[key]) + " |")
    return "\n".join(lines) + "\n"


def _paper04() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("paper04_table", HERE / "paper04_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def paper04_table(args: list[str], opts: dict[str, str]) -> str:
    """Paper 04 Table I shape: mean (standard error over folds), seeds averaged within a fold."""
    return _paper04().table([str(HERE / a) for a in args]) + "\n"


def paper04_spread(args: list[str], opts: dict[str, str]) -> str:
    """The mean over folds of the standard deviation over seeds (percentage points)."""
    p4 = _paper04()
    head = ["| method | " + " | ".join(t for _, t in p4.COLUMNS) + " |", "|---|" + "---:|" * len(p4.COLUMNS)]
    body = p4.seed_spread([str(HERE / a) for a in args]).splitlines()[2:]
    return "\n".join(head + body) + "\n"


def paper04_paired(args: list[str], opts: dict[str, str]) -> str:
    """Each method − ``baseline``, seeds averaged within a fold, paired by fold (percentage points)."""
    from hierviz.report import read_results_csv
    from hierviz.report.stats import paired_ci

    p4 = _paper04()
    base = opts.get("baseline", "l")
    per_fold = [read_results_csv(HERE / a / "results.csv") for a in args]
    methods = [m for m in dict.fromkeys(r["method"] for rows in per_fold for r in rows) if m != base]
    cols = [c for c in p4.COLUMNS if c[0] in opts.get("metrics", "leaf_f1,rp5,mnr,ndcg_sum,acc_blind").split(",")]
    lines = [
        f"| method − {base.upper()} | " + " | ".join(f"Δ {t}" for _, t in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for m in methods:
        cells = []
        for key, _ in cols:
            a = [p4.fold_means(rows, m, key) for rows in per_fold]
            b = [p4.fold_means(rows, base, key) for rows in per_fold]
            cells.append(_ci(paired_ci(a, b), digits=1))
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + f"\n\nΔ = method − {base.upper()} in the same fold (seeds averaged within the fold), over {len(args)} folds; "
        "[low, high]: 95 % Student-t interval of the mean difference; * the interval excludes 0. For MNR a "
        "negative Δ is the better one.\n"
    )


def paper04_folds(args: list[str], opts: dict[str, str]) -> str:
    """Acc_blind / Acc_aware (%) per fold and method (seeds averaged within a fold) and the ratio of their means.

    ``unseen=A+B,C,...`` names each fold's unseen leaves (``+`` joins two leaves of one fold).
    """
    from hierviz.report import read_results_csv

    p4 = _paper04()
    per_fold = [read_results_csv(HERE / a / "results.csv") for a in args]
    methods = list(dict.fromkeys(r["method"] for rows in per_fold for r in rows))
    unseen = opts["unseen"].split(",") if "unseen" in opts else [""] * len(args)
    if len(unseen) != len(args):
        raise ValueError(f"paper04-folds: unseen= names {len(unseen)} folds, the spec has {len(args)} folders")
    lines = [
        "| fold (unseen) | n | " + " | ".join(m.upper() for m in methods) + " |",
        "|---|---:|" + "---:|" * len(methods),
    ]
    for a, rows, names in zip(args, per_fold, unseen):
        fold = json.loads((HERE / a / "compare.json").read_text(encoding="utf-8"))["config"]["eval"]["fold"]
        n = sorted({int(r["n_predict"]) for r in rows})
        label = f"{fold} ({names.replace('+', ', ')})" if names else str(fold)
        cells = [
            f"{100 * p4.fold_means(rows, m, 'acc_blind'):.0f} / {100 * p4.fold_means(rows, m, 'acc_aware'):.0f}"
            for m in methods
        ]
        lines.append(f"| {label} | {', '.join(map(str, n))} | " + " | ".join(cells) + " |")
    ratio = []
    for m in methods:
        blind = sum(p4.fold_means(rows, m, "acc_blind") for rows in per_fold)
        aware = sum(p4.fold_means(rows, m, "acc_aware") for rows in per_fold)
        ratio.append(f"{100 * blind / aware:.0f} %")
    lines.append("| ratio of the means | | " + " | ".join(ratio) + " |")
    return "\n".join(lines) + "\n"


def paper04_weighted(args: list[str], opts: dict[str, str]) -> str:
    """Weighted minus unweighted runs, paired by fold: mean (standard error over folds); folds where weighted is higher.

    ``args``: the weighted folds; ``unweighted=F0,F1,...``: the same folds without class weights, in
    the same order; the rows are the methods of the unweighted folders.
    """
    from hierviz.report import read_results_csv

    p4 = _paper04()
    other = opts["unweighted"].split(",")
    if len(other) != len(args):
        raise ValueError(f"paper04-weighted: {len(args)} weighted folders but {len(other)} unweighted ones")
    w = [read_results_csv(HERE / a / "results.csv") for a in args]
    u = [read_results_csv(HERE / a / "results.csv") for a in other]
    methods = list(dict.fromkeys(r["method"] for rows in u for r in rows))
    keys = opts.get("metrics", "leaf_f1,rp5,mnr,ndcg_sum,acc_blind,acc_aware").split(",")
    titles = dict(p4.COLUMNS)
    lines = ["| method | " + " | ".join(titles.get(k, k) for k in keys) + " |", "|---|" + "---:|" * len(keys)]
    for m in methods:
        cells = []
        for k in keys:
            d = [100 * (p4.fold_means(a, m, k) - p4.fold_means(b, m, k)) for a, b in zip(w, u)]
            n = len(d)
            mean = sum(d) / n
            se = (sum((x - mean) ** 2 for x in d) / (n - 1)) ** 0.5 / n**0.5 if n > 1 else float("nan")
            cells.append(f"{mean:+.1f} ({se:.1f}); {sum(x > 0 for x in d)}/{n}")
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: Summary CSVs (mean and std per row, the runs' own arrays not committed) and how their tables look:
#: column titles, and the columns whose largest mean is set in bold.
SUMMARY_TABLES = {
    "paper02-hier-mnist-cpu/level_probe.csv": (
        ["Method", "level order", "seeds", "leaf (100)", "class digit (10)", "category digit (10)"],
        {"class_digit", "category_digit"},
    ),
    "paper02-hier-mnist-cpu/level_order.csv": (
        ["Method", "order", "Top-1 (100 leaves)", "HF1", "Violations ↓", "class digit", "category digit"],
        set(),
    ),
}


def summary_table(args: list[str], opts: dict[str, str]) -> str:
    """A summary CSV of :data:`SUMMARY_TABLES`: ``X_mean``/``X_std`` column pairs as ``mean ± std`` (3 decimals)."""
    titles, bold = SUMMARY_TABLES[args[0]]
    with (HERE / args[0]).open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if not c.endswith("_std")]
    best = {c[:-5]: max(float(r[c]) for r in rows) for c in cols if c.endswith("_mean") and c[:-5] in bold}
    text_cols = sum(1 for c in cols if not c.endswith("_mean") and c not in ("seeds",))
    lines = ["| " + " | ".join(titles) + " |", "|" + "---|" * text_cols + "---:|" * (len(cols) - text_cols)]
    for r in rows:
        cells = []
        for c in cols:
            if not c.endswith("_mean"):
                cells.append(r[c])
                continue
            key = c[:-5]
            cell = f"{float(r[c]):.3f} ± {float(r[key + '_std']):.3f}"
            cells.append(f"**{cell}**" if key in best and float(r[c]) == best[key] else cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def paper04_leaf_counts(args: list[str], opts: dict[str, str]) -> str:
    """Sampled images per leaf and fold (``leaf_counts.csv``: one row per fold, one column per leaf)."""
    with (HERE / args[0]).open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    lines = ["| fold | sampled images per leaf |", "|---|---|"]
    lines += [f"| {r['fold']} | " + ", ".join(v for k, v in r.items() if k != "fold") + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _htc_rows(folder: Path) -> tuple[list[dict[str, Any]], bool]:
    """Summary rows (percent) of an htc folder: from ``seeds.csv`` when committed, else ``results.csv``."""
    import numpy as np

    from hierviz.methods.paper05 import HTC_METHODS, METRIC_KEYS

    if (folder / "seeds.csv").is_file():
        runs = _read_csv(folder / "seeds.csv")
        out = []
        for key in dict.fromkeys((r["method"], r["lam"]) for r in runs):
            rs = [r for r in runs if (r["method"], r["lam"]) == key]
            row = {"method": key[0], "display_name": HTC_METHODS.get(key[0]).display_name, "lam": key[1]}
            row["seeds"] = len(rs)
            for k in METRIC_KEYS:
                v = 100 * np.array([r[k] for r in rs], dtype=float)
                row[f"{k}_mean"], row[f"{k}_std"] = float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0
            for k in ("k", "alpha_t", "alpha_l"):
                row[k] = float(np.mean([r[k] for r in rs]))
            out.append(row)
        return out, True
    return _read_csv(folder / "results.csv"), False


def paper05_table(args: list[str], opts: dict[str, str]) -> str:
    """``hierviz htc``'s table (percent, mean ± std over seeds), the frequency prior and paired differences."""
    from hierviz.methods.paper05 import METRIC_KEYS
    from hierviz.report.stats import paired_ci

    folder = HERE / args[0]
    rows, per_run = _htc_rows(folder)
    radii = "label_radius" in rows[0]
    head = "| method | λ | seeds | Micro-F1 | Macro-F1 | Hi-MiF1 | Hi-MaF1 | k | α_t | α_l |" + (
        " label r | text r |" if radii else ""
    )
    lines = [head, "|---|---:|---:|" + "---:|" * (7 + 2 * radii)]
    for r in rows:
        cells = [f"{r[f'{k}_mean']:.2f} ± {r[f'{k}_std']:.2f}" for k in METRIC_KEYS]
        scal = [f"{r[k]:#.3g}" for k in ("k", "alpha_t", "alpha_l")]
        extra = [f"{r['label_radius']:.2f}", f"{r['text_radius']:.2f}"] if radii else []
        if r["method"] == "hyilr-no-cl":  # BCE alone trains none of the three: radii of the initial scales
            scal, extra = ["–", "–", "–"], [f"({x})" for x in extra]
        elif r["method"] == "hyilr-euclidean":  # no curvature in Euclidean space
            scal[0] = "–"
        lines.append(
            f"| {r['display_name']} (`{r['method']}`) | {r['lam']:g} | {r['seeds']} | "
            + " | ".join(cells + scal + extra)
            + " |"
        )
    prior = read_baselines(folder).get("frequency_prior")
    if prior:
        lines.append(
            "| *Frequency prior* | – | – | "
            + " | ".join(f"{100 * prior[k]:.2f}" for k in METRIC_KEYS)
            + " | – | – | –"
            + (" | – | –" if radii else "")
            + " |"
        )
    md = "\n".join(lines) + (
        "\n\nPercent, test split, mean ± sample std over seeds. *Frequency prior*: the train split's most frequent "
        "label set predicted for every test document (`baselines.csv`). k, α_t, α_l: learned values, mean over seeds.\n"
    )
    base = opts.get("baseline")
    if not (per_run and base):
        return md + (
            "" if per_run else "Only the summary (`results.csv`) was kept for this run: no paired intervals.\n"
        )
    runs = _read_csv(folder / "seeds.csv")
    lam0 = next(r["lam"] for r in runs if r["method"] == base)
    ref = {r["seed"]: r for r in runs if r["method"] == base and r["lam"] == lam0}
    lines = [
        f"| method − {base} | λ | "
        + " | ".join(f"Δ {t}" for t in ("Micro-F1", "Macro-F1", "Hi-MiF1", "Hi-MaF1"))
        + " |",
        "|---|---:|" + "---:|" * 4,
    ]
    for m, lam in dict.fromkeys((r["method"], r["lam"]) for r in runs):
        if m == base:
            continue
        mine = {r["seed"]: r for r in runs if (r["method"], r["lam"]) == (m, lam)}
        seeds = sorted(set(mine) & set(ref))
        if len(seeds) < 3:
            continue
        cells = [_ci(paired_ci([mine[s][k] for s in seeds], [ref[s][k] for s in seeds])) for k in METRIC_KEYS]
        lines.append(f"| `{m}` | {lam:g} | " + " | ".join(cells) + " |")
    return (
        md
        + f"\n**Paired difference to `{base}`** (same seed; points)\n\n"
        + "\n".join(lines)
        + f"\n\nΔ = method − `{base}` at the same seed (same data, split and initialisation seed), over "
        f"{len(ref)} seeds; [low, high]: 95 % Student-t interval of the mean difference; * the interval excludes 0.\n"
    )


def paper05_levels(args: list[str], opts: dict[str, str]) -> str:
    """Macro-F1 (%) per level and per label-frequency bucket, mean over seeds, at the run's main λ."""
    import numpy as np

    folder = HERE / args[0]
    lam = json.loads((folder / "config.json").read_text(encoding="utf-8"))["lam"]
    levels = [r for r in _read_csv(folder / "levels.csv") if r["lam"] == lam]
    buckets = [r for r in _read_csv(folder / "buckets.csv") if r["lam"] == lam]
    lv = sorted({r["level"] for r in levels})
    bk = sorted({r["bucket"] for r in buckets})
    lines = [
        "| method | " + " | ".join([f"level {v}" for v in lv] + bk) + " |",
        "|---|" + "---:|" * (len(lv) + len(bk)),
    ]
    for m in dict.fromkeys(r["method"] for r in levels):
        cells = [np.mean([r["macro_f1"] for r in levels if r["method"] == m and r["level"] == v]) for v in lv]
        cells += [np.mean([r["macro_f1"] for r in buckets if r["method"] == m and r["bucket"] == b]) for b in bk]
        lines.append(f"| `{m}` | " + " | ".join(f"{100 * c:.1f}" for c in cells) + " |")
    return "\n".join(lines) + f"\n\nMacro-F1 (%) of the test split, mean over seeds, λ = {lam:g}.\n"


KINDS = {
    "paper03": paper03_table,
    "paper03-list": paper03_list,
    "paper03-paired": paper03_paired,
    "paper03-storage": paper03_storage,
    "paper03-storage-error": paper03_storage_error,
    "paper04": paper04_table,
    "paper04-spread": paper04_spread,
    "paper04-paired": paper04_paired,
    "paper04-folds": paper04_folds,
    "paper04-leaf-counts": paper04_leaf_counts,
    "summary": summary_table,
    "paper04-weighted": paper04_weighted,
    "paper05": paper05_table,
    "paper05-levels": paper05_levels,
}


def render(text: str) -> str:
    """``text`` with every table block regenerated."""
    return _BLOCK.sub(lambda m: m.group(1) + table(m.group("spec").strip()) + m.group(4), text)


def write_split_baselines() -> None:
    """Recompute ``baselines.csv`` of :data:`DATA_OF` from each folder's data and split (as ``hierviz compare``)."""
    import numpy as np

    from hierviz.data import grouped_split
    from hierviz.experiments import resolve_config
    from hierviz.experiments.compare import load_data
    from hierviz.metrics.baselines import majority_class_report
    from hierviz.report.html import write_baselines_csv

    for name, overrides in DATA_OF.items():
        cfg = resolve_config("quick", overrides)
        ds, tree, _ = load_data(cfg)
        y = np.asarray(ds.labels)
        split = grouped_split(y, None if ds.groups is None else np.asarray(ds.groups), seed=cfg.data.split_seed)
        rep = majority_class_report(y[split["train"]], y[split["test"]], tree)
        write_baselines_csv({"majority": rep}, HERE / name / "baselines.csv")
        print(f"wrote {HERE / name / 'baselines.csv'}: top1 {rep['top1']:.4f}, hf1 {rep['hf1']:.4f}")


def write_full_ham_baselines() -> None:
    """Recompute ``baselines.csv`` of :data:`FULL_HAM` from the data (grouped split, seed 0, two-step tree)."""
    import numpy as np

    from hierviz.data import bind_tree, grouped_split, load_dataset
    from hierviz.metrics.baselines import majority_class_report
    from hierviz.report.html import write_baselines_csv

    ds, tree = bind_tree(load_dataset("ham10000"), "two-step")
    y = np.asarray(ds.labels)
    split = grouped_split(y, np.asarray(ds.groups), seed=0)
    rep = majority_class_report(y[split["train"]], y[split["test"]], tree)
    for name in FULL_HAM:
        write_baselines_csv({"majority": rep}, HERE / name / "baselines.csv")
        print(f"wrote {HERE / name / 'baselines.csv'}: top1 {rep['top1']:.4f}, hf1 {rep['hf1']:.4f}")


def write_paper03_chance() -> None:
    """Recompute ``paper03/chance.csv``: the random-ranking row of the 5 lesion-grouped folds of all HAM10000.

    The retrieval runs of ``paper03.md`` ranked the full HAM10000 file's 10,015 images (features
    from ``hierviz features``, rows in the data set's order) over ``grouped_folds(labels, lesions, 5,
    seed 0)``; the chance row depends on the labels and folds only.
    """
    import numpy as np

    from hierviz.data import load_dataset
    from hierviz.evaluation.retrieval import grouped_folds
    from hierviz.retrieval import RETRIEVAL_PRESETS
    from hierviz.retrieval.tables import chance_row, summarise

    ds = load_dataset("ham10000")
    y, groups = np.asarray(ds.labels), np.asarray(ds.groups)
    cfg = RETRIEVAL_PRESETS["quick"]
    folds = grouped_folds(y, groups, cfg.folds, cfg.seed)
    rows = [
        chance_row(f, y[t], y[np.setdiff1d(np.arange(len(y)), t)], cfg.ks, cfg.denominator) for f, t in enumerate(folds)
    ]
    summary = summarise(rows, tuple(cfg.ks))
    path = HERE / "paper03" / "chance.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(summary[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(summary)
    print(f"wrote {path}: MAP@1 {summary[0]['map@1_mean']:.4f}, MAP@20 {summary[0]['map@20_mean']:.4f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a page's tables are out of date")
    ap.add_argument("--baselines", action="store_true", help="recompute the full-HAM10000 baselines.csv first")
    args = ap.parse_args(argv)
    if args.baselines:
        write_full_ham_baselines()
        write_split_baselines()
        write_paper03_chance()
    stale = []
    for page in PAGES:
        path = HERE / page
        old = path.read_text(encoding="utf-8")
        new = render(old)
        if new != old:
            stale.append(page)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run python3 docs/results/make_tables.py", file=sys.stderr)
        return 1
    print("rewrote " + (", ".join(stale) if stale else "nothing (up to date)") if not args.check else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
