"""Add ``bal_acc`` and ``macro_f1`` (imbalance-aware, since 0.3) to the runs of a ``hierviz compare`` folder recorded before them.

Each run's saved ``embeddings.npz`` (train/test embeddings and labels) is scored again with
:func:`hierviz.metrics.hierarchy_report` (``imbalance=True``) in the run's geometry, with the run's
probe seed and Karcher steps. The recomputed paper-01 metrics must agree with the recorded ones to
within 3 test samples (the probe is deterministic on one machine; another machine's BLAS may flip a
prediction near the boundary); then ``bal_acc`` and ``macro_f1`` are written into ``result.json``
and the largest deviation is printed.
Rebuild the tables afterwards with ``hierviz report --out DIR``.

Usage::

    python3 docs/results/rescore.py runs/paper01-gpu
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np


def rescore(out: Path) -> int:
    from hierviz.data import load_tree  # noqa: F401  (registers the trees)
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.metrics import hierarchy_report

    tree = LabelTree.from_dict(json.loads((out / "tree.json").read_text(encoding="utf-8")))
    n, worst = 0, 0.0
    for res in sorted(out.glob("runs/*/result.json")):
        rec = json.loads(res.read_text(encoding="utf-8"))
        emb = res.parent / "embeddings.npz"
        if "bal_acc" in rec["metrics"] or not emb.is_file():
            continue
        cfg = json.loads((res.parent / "config.json").read_text(encoding="utf-8"))
        geo = get_geometry(**rec["geometry_config"])
        with np.load(emb) as f:
            m = hierarchy_report(
                f["z_train"], f["y_train"], f["z_test"], f["y_test"], tree, geo,
                seed=int(rec["seed"]), steps=int(cfg["eval"]["mean_steps"]), imbalance=True,
            )  # fmt: skip
            tol = 3.0 / len(f["y_test"])
        for k, v in rec["metrics"].items():
            if k in m and not math.isclose(float(v), float(m[k]), abs_tol=tol):
                raise SystemExit(f"{res}: recomputed {k} = {m[k]:.6f} differs from the recorded {v:.6f}")
            if k in m:
                worst = max(worst, abs(float(v) - float(m[k])))
        rec["metrics"].update(bal_acc=float(m["bal_acc"]), macro_f1=float(m["macro_f1"]))
        res.write_text(json.dumps(rec, indent=1), encoding="utf-8")
        n += 1
    print(f"{out}: largest |recomputed - recorded| over the paper-01 metrics: {worst:.4g}")
    return n


if __name__ == "__main__":
    for d in sys.argv[1:] or ["."]:
        print(f"{d}: {rescore(Path(d))} runs rescored")
