"""``hierviz report``: rebuild a finished folder's tables and report from its run records.

Split from :mod:`hierviz.experiments.compare` (issue 23: no module over 700 lines).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from hierviz.experiments.config import ConfigError, ExperimentConfig
from hierviz.experiments.inputs import load_data
from hierviz.experiments.records import (
    check_mergeable,
    load_records,
    read_run_file,
)
from hierviz.experiments.result import CompareResult


def report(out: str | os.PathLike, *, projection: str | None = None, verbose: bool = True) -> CompareResult:
    """Rebuild ``results.csv``/``.md`` and ``report.html`` from the finished runs in ``out``.

    Parameters
    ----------
    out : str or Path
        A folder written by :func:`compare`.
    projection : str, optional
        Override the config's ``eval.projection``.
    verbose : bool, default True

    Returns
    -------
    CompareResult

    Raises
    ------
    ConfigError
        No finished runs, or runs trained with different settings (the keys are named).
    """
    from hierviz.hierarchy import LabelTree
    from hierviz.report import build_report, read_results_csv

    out = Path(out)
    records = load_records(out)
    if not records:
        raise ConfigError(f"--out: no finished runs under {out / 'runs'} (run 'hierviz compare --out {out}' first)")
    check_mergeable(records)
    meta_file = out / "compare.json"
    meta = read_run_file(meta_file) if meta_file.is_file() else {}
    order = {name: i for i, name in enumerate(meta.get("runs", []))}
    records.sort(key=lambda r: (order.get(r.get("name"), len(order)), r.get("name", "")))
    cfg_dict = {k: v for k, v in records[0]["config"].items() if k not in ("run", "fingerprint")}
    cfg = ExperimentConfig.from_dict(cfg_dict, where=str(Path(records[0]["folder"]) / "config.json"))
    tree_file = out / "tree.json"
    if tree_file.is_file():
        try:  # LabelTree.from_json reads iteratively (any depth) and names the file
            tree = LabelTree.from_json(tree_file)
        except (ValueError, TypeError, KeyError, OSError) as exc:  # a readable JSON object that is no tree
            text = str(exc) if str(exc).startswith(str(tree_file)) else f"{tree_file}: not a label tree ({exc})"
            raise ConfigError(f"{text}; delete it and rerun compare") from None
    else:
        _, tree, _ = load_data(cfg)
    methods = list(dict.fromkeys(r["method"] for r in records))
    geos = list(dict.fromkeys(r["geometry"] for r in records))
    header = dict(
        meta.get("header") or {"Dataset": str(cfg.data.path or cfg.data.dataset), "Tree": f"{cfg.data.tree}\n{tree}"}
    )
    header["Report"] = f"rebuilt by 'hierviz report --out {shlex.quote(str(out))}' from {len(records)} finished runs"
    paths = build_report(
        out,
        records,
        tree,
        header=header,
        methods=methods,
        geometries=geos,
        projection=projection or cfg.eval.projection,
        baseline=cfg.report.baseline,
    )
    markdown = paths["markdown"].read_text(encoding="utf-8")
    if verbose:
        print(f"wrote {paths['csv']}, {paths['markdown']}, {paths['html']}")
    return CompareResult(
        rows=read_results_csv(paths["csv"]),
        records=records,
        markdown=markdown,
        paths=paths,
        out=out,
        config=cfg,
        tree=tree,
    )
