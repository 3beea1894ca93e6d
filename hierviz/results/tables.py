"""The tables of the results pages ``docs/results/paper0[1-5].md``, built from their committed CSVs.

Every table of a results page sits between ``<!-- table: SPEC -->`` and ``<!-- /table -->``;
:func:`table_markdown` builds the Markdown of one ``SPEC`` from the CSVs committed beside the pages,
and :func:`render` rewrites every block of a page. ``docs/results/make_tables.py`` (which rewrites
or ``--check``-s the pages) and :func:`hierviz.results.pages.results_tables` (which shows a page's
tables in a notebook) both call these functions, so a notebook and its results page show the same numbers
by construction. ``SPEC`` is one of

* ``FOLDER [baseline=METHOD]`` (papers 01, 02): ``hierviz compare``'s ``FOLDER/results.csv`` (one
  row per run) with the Majority row of ``FOLDER/baselines.csv``
  (:func:`hierviz.report.results_markdown`) and, with >= 3 seeds, the paired differences to
  ``METHOD`` (:func:`hierviz.report.stats.paired_markdown`);
* ``paper03 CSV... [chance=CSV]``: paper 03's Table 2 shape (:func:`hierviz.retrieval.tables.table2_markdown`)
  from ``hierviz retrieval`` summaries (mean and std over folds per variant), with the random-ranking row;
  ``paper03-list CSV...``: the same rows as a flat list; ``paper03-paired FOLDS_CSV [against=cosine]``:
  each Hyper-DINO(·, 32) minus its base (or the cosine control), paired by fold, mean and 95 % interval;
  ``paper03-storage CSV...`` and ``paper03-storage-error JSON``: float32 against float16 storage;
* ``paper04 FOLDER...`` / ``paper04-spread FOLDER...``: paper 04's Table I shape over unseen-leaf
  folds (:func:`folds_table`: mean (standard error over folds), :func:`seed_spread`: the seeds' spread);
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
  ``buckets.csv``);
* ``power CSV page=PAGE``: the page's power line (:mod:`hierviz.results.power`): each claim's
  effect in the paper, the paired σ_Δ measured here and the seeds or folds n it needs;
* ``fidelity-runs``, ``fidelity-summary``, ``fidelity-paired``, ``csv``: the radius tables of
  ``docs/hyperbolic-fidelity.md`` (:mod:`hierviz.results.fidelity`), from per-run rows transcribed
  into ``docs/results/fidelity/``.

Paths in a ``SPEC`` are relative to the ``docs/results/`` folder passed as ``root``.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.methods.paper05 import HTC_METHODS, METRIC_KEYS
from hierviz.report import read_results_csv, results_markdown
from hierviz.report.htc import summarise_runs
from hierviz.report.stats import paired_ci, paired_markdown
from hierviz.report.tables import default_metrics
from hierviz.results.fidelity import csv_table, fidelity_paired, fidelity_runs, fidelity_summary
from hierviz.results.power import power_table
from hierviz.retrieval.tables import paired_markdown as retrieval_paired_markdown
from hierviz.retrieval.tables import table2_markdown

#: One generated block of a results page: the spec line, the body and the closing line.
BLOCK = re.compile(r"(<!-- table: (?P<spec>[^>]+?) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)


def render(text: str, root: str | Path) -> str:
    """``text`` with every table block regenerated from the CSVs under ``root`` (``docs/results/``)."""
    return BLOCK.sub(lambda m: m.group(1) + table_markdown(m.group("spec").strip(), root) + m.group(4), text)


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


def table_markdown(spec: str, root: str | Path) -> str:
    """The Markdown of one ``<!-- table: SPEC -->`` block, paths relative to ``root`` (the module docstring lists the specs)."""
    root = Path(root)
    parts = spec.split()
    args = [p for p in parts[1:] if "=" not in p]
    opts = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
    if parts[0] in KINDS:
        return KINDS[parts[0]](root, args, opts)
    target = root / parts[0]
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


def _paper03_summary(root: Path, args: list[str], opts: dict[str, str]) -> list[dict[str, Any]]:
    rows: dict[tuple, dict[str, Any]] = {}
    for name in [*args, *([opts["chance"]] if "chance" in opts else [])]:
        for r in _read_csv(root / name):
            rows[(r["variant"], r["storage"])] = r
    return list(rows.values())


def paper03_table(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Paper 03 Table 2 shape from ``hierviz retrieval`` summary CSVs (+ the chance summary)."""
    folds = sorted({int(r["folds"]) for r in _paper03_summary(root, args, opts) if r["base"] != "chance"})
    md = table2_markdown(_paper03_summary(root, args, opts))
    return (
        md + f"\nMAP@k (%), mean ± std over {'/'.join(map(str, folds))} grouped folds; ·→32 and ·→N: fp16 tangents.\n"
    )


def paper03_list(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """One row per variant of the summary CSVs: bytes, MAP@1/5/10/20, R-precision (%, mean ± std over folds)."""
    keys = ["map@1", "map@5", "map@10", "map@20", "r_precision"]
    lines = ["| features | bytes | MAP@1 | MAP@5 | MAP@10 | MAP@20 | R-precision |", "|---|---:" + "|---:" * 5 + "|"]
    for r in _paper03_summary(root, args, opts):
        kind = (
            " (float16)"
            if r["dim_out"] == ""
            else (", fp16 tangents" if r["storage"] == "fp16" else ", fp32 coordinates")
        )
        cells = [f"{100 * r[f'{k}_mean']:.2f} ± {100 * r[f'{k}_std']:.2f}" for k in keys]
        lines.append(f"| {r['variant']}{kind} | {r['bytes']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def paper03_paired(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Hyper-DINO(V, 32) − V (``against=cosine``: − the cosine control) per fold, mean and 95 % interval over folds.

    Several mapper seeds of a fold (a ``mapper_seed`` column) are averaged within the fold first.
    """
    keys = opts.get("metrics", "map@1,map@5,map@20").split(",")
    return retrieval_paired_markdown(
        _read_csv(root / args[0]),
        storage=opts.get("storage", "fp16"),
        metrics=keys,
        against=opts.get("against", "base"),
    )


def paper03_storage(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """MAP@20 of each Hyper-DINO variant with float32 ball coordinates against 16-bit log₀ tangents (bytes from the rows)."""
    rows = _paper03_summary(root, args, opts)
    by = {(r["variant"], r["storage"]): r for r in rows}
    size = {st: next((int(float(r["bytes"])) for r in rows if r["storage"] == st and r["dim_out"] == 32
                      and r.get("bytes")), None) for st in ("fp32", "fp16")}  # fmt: skip
    fp32_b, fp16_b = size["fp32"] or 128, size["fp16"] or 64  # the records' own sizes
    fp16_name = "float16 log₀ tangents" if fp16_b == 64 else "16-bit log₀ tangents"  # 0.3's codes: 64 B float16
    lines = [
        f"| variant | float32 ball coordinates ({fp32_b} B): MAP@20 | {fp16_name} ({fp16_b} B): MAP@20 |",
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


def paper03_storage_error(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """p99 relative distance error by stored radius (``storage_error.json`` of :func:`storage_error_curve`)."""
    d = json.loads((root / args[0]).read_text(encoding="utf-8"))
    names = {"fp16": "float16 log₀ tangents", "fp16-ball": "float16 coordinates", "fp32": "float32 coordinates"}
    lines = ["| stored point's radius | " + " | ".join(f"{r:g}" for r in d["radius"]) + " |"]
    lines.append("|---|" + "---:|" * len(d["radius"]))
    for key in ("fp16", "fp16-ball", "fp32"):
        lines.append(f"| {names[key]} | " + " | ".join(f"{v:.1e}" for v in d[key]) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ paper 04's Table I (paper04_table.py's CLI)
#: Paper 04 Table I's columns: (results.csv key, title).
PAPER04_COLUMNS = [
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


def read_prior(path: str | Path) -> dict[str, list[tuple[float, float]]]:
    """``{METHOD: [(mean, se) per column]}`` from a Markdown table written by :func:`folds_table`."""
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(PAPER04_COLUMNS) + 1 or cells[0] in ("method", "---"):
            continue
        pairs = [re.fullmatch(r"(-?[\d.]+) \(([\d.]+)\)", c) for c in cells[1:]]
        if all(pairs):
            out[cells[0]] = [(float(m.group(1)), float(m.group(2))) for m in pairs]
    if not out:
        raise ValueError(f"{path}: no table rows 'METHOD | mean (se) | ...' with {len(PAPER04_COLUMNS)} columns")
    return out


def _pooled_cell(v: Any, prior: tuple[float, float] | None, n_prior: int) -> str:
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


def seed_values(rows: list[dict], method: str, key: str) -> Any:
    """The finite values (float ndarray) of ``key`` over the seeds of ``method`` in one fold's rows."""
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
    cols = PAPER04_COLUMNS
    head = ["| method | " + " | ".join(t for _, t in cols) + " |", "|---|" + "---:|" * len(cols)]
    return per_fold, methods, head


def folds_table(folders: list[str], prior: dict[str, list[tuple[float, float]]] | None = None, n_prior: int = 0) -> str:
    """Mean (standard error over folds): seeds are averaged within a fold first, so the error is the folds'."""
    per_fold, methods, lines = _read_folds(folders)
    seeds = sorted({len([r for r in rows if r["method"] == m]) for rows in per_fold for m in methods} - {0})
    for m in methods:
        cells = []
        for j, (key, _) in enumerate(PAPER04_COLUMNS):
            v = np.array([fold_means(rows, m, key) for rows in per_fold], dtype=float)
            v = v[np.isfinite(v)] * 100
            p = prior.get(m.upper()) if prior else None
            cells.append(_pooled_cell(v, p[j] if p else None, n_prior if p else 0))
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    lines += _baseline_rows(folders)
    names = ", ".join(Path(f).name for f in folders)
    per = "/".join(str(s) for s in seeds)
    folds = f"{len(folders)} fold(s), {per} seed(s) per fold averaged within the fold: {names}" + (
        f", plus {n_prior} earlier fold(s) from their summary" if prior else ""
    )
    return "\n".join(lines) + f"\n\n{folds}"


#: The rows of a fold's ``baselines.csv`` (``docs/results/paper04_baselines.py``) and their titles.
PAPER04_BASELINES = (("majority", "*Majority class*"), ("chance", "*Chance (random embedding)*"))


def _baseline_rows(folders: list[str]) -> list[str]:
    """Majority and chance rows, mean (standard error over folds), when every fold has ``baselines.csv``.

    A metric a baseline does not define (a constant embedding has no ranking) shows "—".
    """
    files = [Path(f) / "baselines.csv" for f in folders]
    if not all(f.is_file() for f in files):
        return []
    per_fold = [{r["baseline"]: r for r in read_results_csv(f)} for f in files]
    rows = []
    for name, title in PAPER04_BASELINES:
        cells = []
        for key, _ in PAPER04_COLUMNS:
            v = np.array([float(b.get(name, {}).get(key, np.nan)) for b in per_fold], dtype=float)
            v = v[np.isfinite(v)] * 100
            cells.append(_pooled_cell(v, None, 0) if len(v) else "—")
        rows.append(f"| {title} | " + " | ".join(cells) + " |")
    return rows


def seed_spread(folders: list[str]) -> str:
    """Mean over folds of the sample std over seeds within a fold (percent): the seeds' own noise."""
    per_fold, methods, lines = _read_folds(folders)
    for m in methods:
        cells = []
        for key, _ in PAPER04_COLUMNS:
            sds = [100 * v.std(ddof=1) for rows in per_fold if len(v := seed_values(rows, m, key)) > 1]
            cells.append(f"{np.mean(sds):.1f}" if sds else "–")
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paper04_table(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Paper 04 Table I shape: mean (standard error over folds), seeds averaged within a fold."""
    return folds_table([str(root / a) for a in args]) + "\n"


def paper04_spread(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """The mean over folds of the standard deviation over seeds (percentage points)."""
    head = ["| method | " + " | ".join(t for _, t in PAPER04_COLUMNS) + " |", "|---|" + "---:|" * len(PAPER04_COLUMNS)]
    body = seed_spread([str(root / a) for a in args]).splitlines()[2:]
    return "\n".join(head + body) + "\n"


def paper04_paired(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Each method − ``baseline``, seeds averaged within a fold, paired by fold (percentage points)."""
    base = opts.get("baseline", "l")
    per_fold = [read_results_csv(root / a / "results.csv") for a in args]
    methods = [m for m in dict.fromkeys(r["method"] for rows in per_fold for r in rows) if m != base]
    cols = [c for c in PAPER04_COLUMNS if c[0] in opts.get("metrics", "leaf_f1,rp5,mnr,ndcg_sum,acc_blind").split(",")]
    lines = [
        f"| method − {base.upper()} | " + " | ".join(f"Δ {t}" for _, t in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for m in methods:
        cells = []
        for key, _ in cols:
            a = [fold_means(rows, m, key) for rows in per_fold]
            b = [fold_means(rows, base, key) for rows in per_fold]
            cells.append(_ci(paired_ci(a, b), digits=1))
        lines.append(f"| {m.upper()} | " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + f"\n\nΔ = method − {base.upper()} in the same fold (seeds averaged within the fold), over {len(args)} folds; "
        "[low, high]: 95 % Student-t interval of the mean difference; * the interval excludes 0. For MNR a "
        "negative Δ is the better one.\n"
    )


def paper04_folds(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Acc_blind / Acc_aware (%) per fold and method (seeds averaged within a fold) and the ratio of their means.

    ``unseen=A+B,C,...`` names each fold's unseen leaves (``+`` joins two leaves of one fold).
    """
    per_fold = [read_results_csv(root / a / "results.csv") for a in args]
    methods = list(dict.fromkeys(r["method"] for rows in per_fold for r in rows))
    unseen = opts["unseen"].split(",") if "unseen" in opts else [""] * len(args)
    if len(unseen) != len(args):
        raise ValueError(f"paper04-folds: unseen= names {len(unseen)} folds, the spec has {len(args)} folders")
    lines = [
        "| fold (unseen) | n | " + " | ".join(m.upper() for m in methods) + " |",
        "|---|---:|" + "---:|" * len(methods),
    ]
    for a, rows, names in zip(args, per_fold, unseen):
        fold = json.loads((root / a / "compare.json").read_text(encoding="utf-8"))["config"]["eval"]["fold"]
        n = sorted({int(r["n_predict"]) for r in rows})
        label = f"{fold} ({names.replace('+', ', ')})" if names else str(fold)
        cells = [
            f"{100 * fold_means(rows, m, 'acc_blind'):.0f} / {100 * fold_means(rows, m, 'acc_aware'):.0f}"
            for m in methods
        ]
        lines.append(f"| {label} | {', '.join(map(str, n))} | " + " | ".join(cells) + " |")
    ratio = []
    for m in methods:
        blind = sum(fold_means(rows, m, "acc_blind") for rows in per_fold)
        aware = sum(fold_means(rows, m, "acc_aware") for rows in per_fold)
        ratio.append(f"{100 * blind / aware:.0f} %")
    lines.append("| ratio of the means | | " + " | ".join(ratio) + " |")
    return "\n".join(lines) + "\n"


def paper04_weighted(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Weighted minus unweighted runs, paired by fold: mean (standard error over folds); folds where weighted is higher.

    ``args``: the weighted folds; ``unweighted=F0,F1,...``: the same folds without class weights, in
    the same order; the rows are the methods of the unweighted folders.
    """
    other = opts["unweighted"].split(",")
    if len(other) != len(args):
        raise ValueError(f"paper04-weighted: {len(args)} weighted folders but {len(other)} unweighted ones")
    w = [read_results_csv(root / a / "results.csv") for a in args]
    u = [read_results_csv(root / a / "results.csv") for a in other]
    methods = list(dict.fromkeys(r["method"] for rows in u for r in rows))
    keys = opts.get("metrics", "leaf_f1,rp5,mnr,ndcg_sum,acc_blind,acc_aware").split(",")
    titles = dict(PAPER04_COLUMNS)
    lines = ["| method | " + " | ".join(titles.get(k, k) for k in keys) + " |", "|---|" + "---:|" * len(keys)]
    for m in methods:
        cells = []
        for k in keys:
            d = [100 * (fold_means(a, m, k) - fold_means(b, m, k)) for a, b in zip(w, u)]
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
    "paper02-hier-mnist-48px-cpu/level_probe.csv": (
        ["Method", "level order", "seeds", "leaf (100)", "class digit (10)", "category digit (10)"],
        {"leaf", "class_digit", "category_digit"},
    ),
    "paper02-hier-mnist-cpu/level_order.csv": (
        ["Method", "order", "Top-1 (100 leaves)", "HF1", "Violations ↓", "class digit", "category digit"],
        set(),
    ),
}


def summary_table(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """A summary CSV of :data:`SUMMARY_TABLES`: ``X_mean``/``X_std`` column pairs as ``mean ± std`` (3 decimals)."""
    titles, bold = SUMMARY_TABLES[args[0]]
    with (root / args[0]).open(newline="", encoding="utf-8") as f:
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


def paper04_leaf_counts(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Sampled images per leaf and fold (``leaf_counts.csv``: one row per fold, one column per leaf)."""
    with (root / args[0]).open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    lines = ["| fold | sampled images per leaf |", "|---|---|"]
    lines += [f"| {r['fold']} | " + ", ".join(v for k, v in r.items() if k != "fold") + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _htc_rows(folder: Path) -> tuple[list[dict[str, Any]], bool]:
    """Summary rows (percent) of an htc folder: from ``seeds.csv`` when committed, else ``results.csv``."""
    if (folder / "seeds.csv").is_file():
        runs = _read_csv(folder / "seeds.csv")
        for r in runs:
            r.setdefault("c", r.get("k"))  # the learned curvature: "k" in seeds.csv before 0.3
        names = {str(r["method"]): HTC_METHODS.get(r["method"]).display_name for r in runs}
        return summarise_runs(runs, names), True
    rows = _read_csv(folder / "results.csv")
    for r in rows:
        r.setdefault("c", r.get("k"))
    return rows, False


def _lam_cell(lam: Any) -> str:
    """λ of an htc row; '–' for a method that reads none (``hyilr-no-cl``: an empty cell)."""
    return "–" if lam in ("", None) else f"{lam:g}"


def _htc_prior(folder: Path) -> dict[str, float] | None:
    """The frequency prior's four F1s: ``frequency_prior`` (the token driver's ``baselines.csv``) or the
    classifier columns (``clf_*``) of compare's ``majority`` row (``hierviz htc`` since 0.3)."""
    b = read_baselines(folder)
    if "frequency_prior" in b:
        return b["frequency_prior"]
    major = b.get("majority", {})
    return {k: major[f"clf_{k}"] for k in METRIC_KEYS} if all(f"clf_{k}" in major for k in METRIC_KEYS) else None


def _htc_lam(folder: Path) -> float:
    """The main λ of an htc folder's ``config.json``: the driver's ``lam`` or compare's ``loss.hyilr.lambda``

    (``loss.hyilr_lambda`` in folders written before 0.4)."""
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if "lam" in cfg:
        return cfg["lam"]
    return cfg["loss"]["hyilr.lambda"] if "hyilr.lambda" in cfg["loss"] else cfg["loss"]["hyilr_lambda"]


def paper05_table(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """``hierviz htc``'s table (percent, mean ± std over seeds), the frequency prior and paired differences."""
    folder = root / args[0]
    rows, per_run = _htc_rows(folder)
    radii = "label_radius" in rows[0]
    head = "| method | λ | seeds | Micro-F1 | Macro-F1 | Hi-MiF1 | Hi-MaF1 | c | α_t | α_l |" + (
        " label r | text r |" if radii else ""
    )
    lines = [head, "|---|---:|---:|" + "---:|" * (7 + 2 * radii)]
    for r in rows:
        cells = [f"{r[f'{k}_mean']:.2f} ± {r[f'{k}_std']:.2f}" for k in METRIC_KEYS]
        scal = [f"{r[k]:#.3g}" for k in ("c", "alpha_t", "alpha_l")]
        extra = [f"{r['label_radius']:.2f}", f"{r['text_radius']:.2f}"] if radii else []
        if r["method"] == "hyilr-no-cl":  # BCE alone trains none of the three: radii of the initial scales
            scal, extra = ["–", "–", "–"], [f"({x})" for x in extra]
        elif r["method"] == "hyilr-euclidean":  # no curvature in Euclidean space
            scal[0] = "–"
        lines.append(
            f"| {r['display_name']} (`{r['method']}`) | {_lam_cell(r['lam'])} | {r['seeds']} | "
            + " | ".join(cells + scal + extra)
            + " |"
        )
    prior = _htc_prior(folder)
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
        "label set predicted for every test document (`baselines.csv`). c, α_t, α_l: learned values, mean over seeds.\n"
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
        lines.append(f"| `{m}` | {_lam_cell(lam)} | " + " | ".join(cells) + " |")
    return (
        md
        + f"\n**Paired difference to `{base}`** (same seed; points)\n\n"
        + "\n".join(lines)
        + f"\n\nΔ = method − `{base}` at the same seed (same data, split and initialisation seed), over "
        f"{len(ref)} seeds; [low, high]: 95 % Student-t interval of the mean difference; * the interval excludes 0.\n"
    )


def paper05_levels(root: Path, args: list[str], opts: dict[str, str]) -> str:
    """Macro-F1 (%) per level and per label-frequency bucket, mean over seeds, at the run's main λ."""
    folder = root / args[0]
    lam = _htc_lam(folder)
    levels = [r for r in _read_csv(folder / "levels.csv") if r["lam"] in (lam, "")]  # "": reads no λ
    buckets = [r for r in _read_csv(folder / "buckets.csv") if r["lam"] in (lam, "")]
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
    "power": power_table,
    "fidelity-runs": fidelity_runs,
    "fidelity-summary": fidelity_summary,
    "fidelity-paired": fidelity_paired,
    "csv": csv_table,
}
