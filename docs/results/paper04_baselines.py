"""The trivial baselines of paper 04's tables: Majority class and a random embedding, per fold.

Usage::

    python docs/results/paper04_baselines.py docs/results/paper04/20news_fold0 ...

For each fold folder (written by ``hierviz compare --protocol unseen``), rebuilds the fold's
split from its ``compare.json`` (the same data, limit, split seed and fold) and writes
``baselines.csv`` beside ``results.csv``: one row ``majority`` and one row ``chance``
(:func:`hierviz.evaluation.unseen_baselines`, 10 random draws of the run's embedding
dimension). ``make_tables.py``'s ``paper04`` tables add them as their last two rows.
Needs the datasets under ``../shared/data`` (or ``HIERVIZ_DATA``); seconds per fold.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

from hierviz.evaluation.unseen import unseen_baselines, unseen_split
from hierviz.experiments import resolve_config
from hierviz.experiments.inputs import load_data
from hierviz.results.tables import PAPER04_COLUMNS

KEYS = ["top1", "hf1", "h_acc"] + [k for k, _ in PAPER04_COLUMNS] + ["pred_ndcg_max"]


def fold_baselines(folder: Path, draws: int = 10) -> dict[str, dict[str, float]]:
    """``{"majority": ..., "chance": ...}`` of the fold run in ``folder``."""
    cfg_dict = json.loads((folder / "compare.json").read_text(encoding="utf-8"))["config"]
    d, e = cfg_dict["data"], cfg_dict["eval"]
    sets = [f"data.dataset={d['dataset']}", f"data.tree={d['tree']}", f"data.split_seed={d['split_seed']}"]
    sets += [f"data.limit={d['limit']}" if d["limit"] is not None else "data.limit=null"]
    cfg = resolve_config("quick", sets)
    ds, tree, _ = load_data(cfg)
    labels = np.asarray(ds.labels)
    groups = None if ds.groups is None else np.asarray(ds.groups)
    split = unseen_split(labels, groups, num_leaves=tree.num_leaves, seed=d["split_seed"], fold=e["fold"])
    y_train, y_test = labels[split["train"]], labels[split[e.get("split", "test")]]
    n_predict = int((~np.isin(y_test, y_train)).sum())
    with (folder / "results.csv").open(encoding="utf-8") as f:
        ran = {int(float(r["n_predict"])) for r in csv.DictReader(f)}
    if ran != {n_predict}:
        raise SystemExit(f"{folder}: the rebuilt split has {n_predict} prediction samples, the runs had {sorted(ran)}")
    return unseen_baselines(y_train, y_test, tree, draws=draws, dim=int(cfg_dict["model"]["embed_dim"]))


def write_csv(folder: Path, base: dict[str, dict[str, float]]) -> Path:
    """``folder/baselines.csv``: ``baseline`` then :data:`KEYS` (NaN left empty)."""
    path = folder / "baselines.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["baseline", *KEYS])
        for name, row in base.items():
            w.writerow([name, *("" if not np.isfinite(row.get(k, np.nan)) else f"{row[k]:.6g}" for k in KEYS)])
    return path


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(write_csv(Path(arg), fold_baselines(Path(arg))))
