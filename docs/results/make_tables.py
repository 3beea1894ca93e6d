"""Regenerate the tables of the five results pages from the committed per-run CSVs.

Every table of ``docs/results/paper0[1-5].md`` (and the radius tables of
``docs/hyperbolic-fidelity.md``, :data:`OTHER_PAGES`) sits between ``<!-- table: SPEC -->`` and
``<!-- /table -->`` and is rebuilt here from CSVs committed beside the page, so a page cannot
drift from its data::

    python3 docs/results/make_tables.py            # rewrite the tables in place
    python3 docs/results/make_tables.py --check    # exit 1 if a page is out of date (CI, tests)
    python3 docs/results/make_tables.py --baselines  # recompute the Majority / chance CSVs from the data
                                                     # and splits (needs ham10000_64.npz, mnist/)

The table builders (one per ``SPEC`` kind; :mod:`hierviz.results.tables` lists them) live in the
package, so that the course notebooks show a page's tables through the same code
(:func:`hierviz.course.results_tables`); this script only walks the pages and writes them.
Paths in a ``SPEC`` are relative to ``docs/results/``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from hierviz.results.tables import BLOCK, _read_csv, read_baselines, table_markdown  # noqa: F401 (used by tests)
from hierviz.results.tables import render as render_page

HERE = Path(__file__).resolve().parent
PAGES = ["paper01.md", "paper02.md", "paper03.md", "paper04.md", "paper05.md"]
#: Other pages whose tables come from CSVs under ``docs/results/`` (paths relative to it): the radius
#: tables of the hyperbolic-fidelity page, the README's quick-run tables and the platform-noise page (docs/results/README.md).
OTHER_PAGES = ["../hyperbolic-fidelity.md", "../../README.md", "README.md"]
#: Folders whose runs used the whole HAM10000 file, lesion-grouped split seed 0 (for --baselines).
FULL_HAM = ["ham10000-cpu", "ham10000-medium-cpu", "ham10000-medium-cpu-new-head"]
#: Other folders: the ``quick``-preset overrides that load their data and split (for --baselines).
DATA_OF = {
    "paper02-hier-mnist-cpu": ["data.dataset=hier-mnist", "data.tree=hier-mnist", "data.limit=3000"],
    "paper02-ham10000-sample-cpu": [],
    "paper01-h200-sample": [],
}
_BLOCK = BLOCK


def table(spec: str) -> str:
    """The Markdown of one ``<!-- table: SPEC -->`` block (:func:`hierviz.results.tables.table_markdown`)."""
    return table_markdown(spec, HERE)


def render(text: str) -> str:
    """``text`` with every table block regenerated (:func:`hierviz.results.tables.render`)."""
    return render_page(text, HERE)


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
    for page in PAGES + OTHER_PAGES:
        path = HERE / page
        old = path.read_text(encoding="utf-8")
        new = render(old)
        if new != old:
            stale.append(Path(page).name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run python3 docs/results/make_tables.py", file=sys.stderr)
        return 1
    print("rewrote " + (", ".join(stale) if stale else "nothing (up to date)") if not args.check else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
