"""Radius order of finished hyperbolic runs, with test-set intervals and the training split beside it.

For each run of each ``hierviz compare`` folder given (its ``runs/*/embeddings.npz`` hold the
test and training embeddings), print one Markdown row: ``radius_depth_spearman`` and
``edge_order`` on the test embeddings with their 95 % stratified bootstrap intervals
(:func:`hierviz.metrics.radius_order_interval`), and the same two numbers on the training
embeddings. docs/hyperbolic-fidelity.md ("How much the quick preset's test split can tell")
was made with it.

    python3 docs/results/radius_intervals.py RUN_FOLDER [RUN_FOLDER ...] [--n-boot 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hierviz.experiments.records import load_records
from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.metrics import radius_metrics, radius_order_interval


def rows(folder: Path, n_boot: int):
    tree = LabelTree.from_json(folder / "tree.json")
    for rec in load_records(folder):  # the typed run records: the test values are the run's own
        if rec["geometry"] == "euclidean" or not rec.get("embeddings"):
            continue
        geometry = (
            get_geometry(**rec["geometry_config"]) if rec.get("geometry_config") else get_geometry(rec["geometry"])
        )
        emb = np.load(rec["embeddings"])
        test = rec["radius"]
        iv = radius_order_interval(emb["z_test"], emb["y_test"], tree, geometry, n_boot=n_boot)
        train = radius_metrics(emb["z_train"], emb["y_train"], tree, geometry)
        yield (
            f"| {folder.name} | {rec['method_display']} | {rec['seed']} "
            f"| {test['radius_depth_spearman']:.2f} [{iv['radius_depth_spearman'][0]:.2f}, {iv['radius_depth_spearman'][1]:.2f}] "
            f"| {test['edge_order']:.2f} [{iv['edge_order'][0]:.2f}, {iv['edge_order'][1]:.2f}] "
            f"| {train['radius_depth_spearman']:.2f} | {train['edge_order']:.2f} |"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--n-boot", type=int, default=200)
    args = ap.parse_args(argv)
    print(
        "| folder | method | seed | test Spearman [95 % CI] | test edge order [95 % CI] | train Spearman | train edge order |"
    )
    print("|---|---|---:|---|---|---:|---:|")
    for folder in args.folders:
        if not (folder / "tree.json").is_file():
            print(f"radius_intervals.py: {folder} is not a hierviz compare folder (no tree.json)", file=sys.stderr)
            return 2
        for row in rows(folder, args.n_boot):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
