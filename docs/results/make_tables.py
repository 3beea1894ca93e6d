"""Regenerate the tables of the results pages from the committed per-run CSVs (issue 24).

Every table of ``docs/results/paper01.md`` sits between ``<!-- table: FOLDER -->`` and
``<!-- /table -->`` and is rebuilt here from ``FOLDER/results.csv`` (one row per run) and
``FOLDER/baselines.csv`` (the Majority-class row) with the library's own table code
(:func:`hierviz.report.results_markdown`, :func:`hierviz.report.stats.paired_markdown`), so a
page cannot drift from its CSVs::

    python3 docs/results/make_tables.py            # rewrite the tables in place
    python3 docs/results/make_tables.py --check    # exit 1 if a page is out of date (CI, tests)
    python3 docs/results/make_tables.py --baselines  # recompute every folder's baselines.csv from its
                                                     # data and split (needs ham10000_64.npz, mnist/)

Pages of the other papers have their own scripts (``paper04_table.py``, ``paper02_level_probe.py``).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGES = ["paper01.md", "paper02.md"]
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
    """The Markdown of one ``<!-- table: FOLDER[/FILE.csv] [baseline=METHOD] -->`` block."""
    from hierviz.report import read_results_csv, results_markdown
    from hierviz.report.stats import paired_markdown
    from hierviz.report.tables import default_metrics

    parts = spec.split()
    target = HERE / parts[0]
    opts = dict(p.split("=", 1) for p in parts[1:])
    csv_path = target if target.suffix == ".csv" else target / "results.csv"
    folder = csv_path.parent
    rows = read_results_csv(csv_path)
    base = read_baselines(folder)
    md = results_markdown(rows, baselines=base)
    seeds = sorted({int(r["seed"]) for r in rows})
    if len(seeds) < 3:
        return md + f"\nNo paired confidence intervals: {len(seeds)} seed(s); the paired table needs at least 3.\n"
    return md + "\n" + paired_markdown(rows, opts.get("baseline", "supcon"), default_metrics(rows))


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a page's tables are out of date")
    ap.add_argument("--baselines", action="store_true", help="recompute the full-HAM10000 baselines.csv first")
    args = ap.parse_args(argv)
    if args.baselines:
        write_full_ham_baselines()
        write_split_baselines()
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
