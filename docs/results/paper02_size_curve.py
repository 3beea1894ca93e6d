"""Where hier-MNIST's category digit becomes learnable on a CPU: a size curve (docs/results/paper02.md).

Usage::

    python3 docs/results/paper02_size_curve.py run OUT        # train the grid (cross-entropy, seed 0)
    python3 docs/results/paper02_size_curve.py collect OUT    # write docs/results/paper02-size-curve/curve.csv

``run`` trains cross-entropy, the fastest of paper 02's methods, at each (image size, images,
epochs) of :data:`GRID` with the ``paper02-cpu`` preset otherwise unchanged (small CNN,
encoder features probed); ``collect`` reads each run's ``result.json`` and ``embeddings.npz``
and adds the per-level probe of ``paper02_level_probe.py`` (class digit, category digit; chance
0.1 each) beside the violations (chance 0.9).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from paper02_level_probe import probe
from threadpoolctl import threadpool_limits

#: (image size in px, images, epochs): the category digit is a quarter of the image side.
GRID = [(32, 3000, 8), (48, 3000, 8), (64, 3000, 8), (64, 3000, 16)]
HERE = Path(__file__).resolve().parent


def _name(size: int, n: int, epochs: int) -> str:
    return f"px{size}-n{n}-e{epochs}"


def run(out: Path) -> None:
    for size, n, epochs in GRID:
        folder = out / _name(size, n, epochs)
        if (folder / "results.csv").is_file():
            continue
        sets = [f"data.image_size={size}", f"data.limit={n}", f"train.epochs={epochs}", "methods=ce", "seeds=1"]
        t0 = time.perf_counter()
        argv = [sys.executable, "-m", "hierviz", "compare", "--preset", "paper02-cpu", "--quiet", "--out", str(folder)]
        subprocess.run(argv + [a for s in sets for a in ("--set", s)], check=True)
        print(f"{folder.name}: {time.perf_counter() - t0:.0f} s wall", flush=True)


def collect(out: Path) -> Path:
    rows = []
    for size, n, epochs in GRID:
        run_dir = out / _name(size, n, epochs) / "runs" / "ce-euclidean-s0"
        rec = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
        e = np.load(run_dir / "embeddings.npz")
        with threadpool_limits(1):
            digits = {
                name: probe(e["z_train"], f(e["y_train"]), e["z_test"], f(e["y_test"]))
                for name, f in (("class_digit", lambda y: y % 10), ("category_digit", lambda y: y // 10))
            }
        m = rec["metrics"]
        rows.append(
            {
                "image size (px)": size,
                "images": n,
                "epochs": epochs,
                "leaf top-1": f"{m['top1']:.3f}",
                "HF1": f"{m['hf1']:.3f}",
                "violations ↓ (chance 0.90)": f"{m['violations']:.3f}",
                "class digit (chance 0.10)": f"{digits['class_digit']:.3f}",
                "category digit (chance 0.10)": f"{digits['category_digit']:.3f}",
                "train s": f"{rec.get('train_seconds', float('nan')):.0f}",
            }
        )
    dest = HERE / "paper02-size-curve" / "curve.csv"
    dest.parent.mkdir(exist_ok=True)
    with dest.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return dest


if __name__ == "__main__":
    step, out = sys.argv[1], Path(sys.argv[2])
    print(run(out) if step == "run" else collect(out))
