"""A committed ``compare`` folder of ``docs/results/`` as a table a notebook shows beside its own live run.

The course notebooks train small live runs; the converged runs they are measured against are
committed as folders of ``docs/results/`` (``results.csv``: one row per method × geometry × seed;
``baselines.csv``: the Majority-class row). :func:`committed_table` reads such a folder and writes
the same mean ± std table as ``hierviz compare``'s ``results.md``, for the methods, metrics and
geometries a notebook names, with a caption that says where the numbers come from.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

from hierviz.report.tables import read_results_csv, results_markdown
from hierviz.results.pages import results_dir

__all__ = ["committed_table"]


def committed_table(
    folder: str | Path,
    methods: Sequence[str] | None = None,
    metrics: Sequence[str] = ("hf1", "violations", "top1"),
    geometries: Sequence[str] | None = None,
    *,
    root: str | Path | None = None,
) -> str:
    """Mean ± std table of a committed ``compare`` folder, with its Majority-class row.

    Parameters
    ----------
    folder : str or Path
        A folder name under ``docs/results/`` (``"paper01-h200-sample"``) or a path to a folder
        holding ``results.csv`` (and optionally ``baselines.csv``).
    methods : sequence of str, optional
        Rows to show, in this order (default: every method of the CSV).
    metrics : sequence of str, default ("hf1", "violations", "top1")
        Columns per geometry (``results.csv`` column names).
    geometries : sequence of str, optional
        Column groups (default: those of the CSV).
    root : str or Path, optional
        The ``docs/results/`` folder (default :func:`hierviz.results.pages.results_dir`).

    Returns
    -------
    str
        Markdown: a caption naming ``docs/results/<folder>`` and the seeds per row, then the table.

    Raises
    ------
    FileNotFoundError
        No ``results.csv`` in the folder (the message names it).
    ValueError
        ``methods`` names a method the folder does not hold (the message lists those it has).

    Examples
    --------
    >>> md = committed_table("paper01-h200-sample", methods=["supcon", "hwc"])  # doctest: +ELLIPSIS
    >>> md.splitlines()[0]
    '**Committed run** `docs/results/paper01-h200-sample` (results.csv; mean ± sample std over 2/5 seeds):'
    """
    path = Path(folder)
    if not (path / "results.csv").is_file():
        path = results_dir(root) / str(folder)
    csv_file = path / "results.csv"
    if not csv_file.is_file():
        raise FileNotFoundError(f"folder={str(folder)!r}: no results.csv at {csv_file}; name a folder of docs/results/")
    rows = read_results_csv(csv_file)
    have = list(dict.fromkeys(str(r["method"]) for r in rows))
    if methods is not None:
        unknown = [m for m in methods if m not in have]
        if unknown:
            raise ValueError(f"methods: {unknown} not in {csv_file}; it holds {have}")
        rows = [r for r in rows if r["method"] in methods]
    if geometries is not None:
        rows = [r for r in rows if r["geometry"] in geometries]
    baselines = {}
    base_file = path / "baselines.csv"
    if base_file.is_file():
        with base_file.open(encoding="utf-8") as f:
            for r in csv.DictReader(f):
                name = r.pop("baseline", "majority")
                baselines[name] = {
                    k: (float(v) if v not in ("", None) else math.nan) for k, v in r.items() if k in metrics
                }
    seeds: dict[tuple[str, str], set[int]] = {}
    for r in rows:
        seeds.setdefault((r["method"], r["geometry"]), set()).add(int(r["seed"]))
    counts = "/".join(str(n) for n in sorted({len(s) for s in seeds.values()}))
    try:
        name = path.resolve().relative_to(results_dir(root).resolve()).as_posix()
    except (ValueError, FileNotFoundError):
        name = path.name
    caption = f"**Committed run** `docs/results/{name}` (results.csv; mean ± sample std over {counts} seeds):"
    table = results_markdown(
        rows, metrics=list(metrics), methods=methods, geometries=geometries, baselines=baselines or None
    )
    return caption + "\n\n" + table
