"""HyILR's hierarchy-aware negatives (Paper 05 (HyILR) Eqs. 13–14): vectorised vs the loop reference.

:func:`hierviz.losses.hyilr.hierarchy_negatives` picks, for every sample and positive label, the
nearest non-positive descendant and the nearest non-positive same-level label with one masked
arg-min over a ``(B, c, c)`` tensor. The loop reference (``negatives_loop`` in
``tests/test_hyilr.py``, written from the equations, as the authors' code loops over samples) is
timed side by side on the same batch, and the two masks are checked equal.

Usage
-----
    python3 benchmarks/bench_hyilr.py                       # 20news tree (30 labels), B = 10, 32
    python3 benchmarks/bench_hyilr.py --repeats 5 --threads 1

Prints median seconds and the median per-round ratio to the vectorised version.
Never asserted in tests: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import torch

from hierviz.data.loaders.htc import synthetic_htc
from hierviz.data.trees import load_tree
from hierviz.losses.hyilr import hierarchy_negatives, label_relations

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_losses import _time_round_robin  # noqa: E402


def _loop():
    path = Path(__file__).resolve().parents[1] / "tests" / "test_hyilr.py"
    spec = importlib.util.spec_from_file_location("_test_hyilr", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.negatives_loop


def bench(tree, B: int, repeats: int, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Time both selections on B samples with 1–3 random paths each over ``tree``."""
    data = synthetic_htc(n_docs=max(B, 3), max_paths=3, tree=tree, seed=seed)
    cols = [i for i, n in enumerate(tree.nodes) if n != tree.root]
    y = torch.from_numpy(data.targets[:B][:, cols])
    d = torch.rand(B, len(cols), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    rel = label_relations(tree)
    loop = _loop()
    assert torch.equal(hierarchy_negatives(d, y, *rel), loop(d, y, tree))
    return _time_round_robin(
        {"vectorised": lambda: hierarchy_negatives(d, y, *rel), "loop (reference)": lambda: loop(d, y, tree)},
        repeats,
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    trees = {
        "20news (30 labels)": load_tree("20news"),
        "synthetic (≈60 labels)": synthetic_htc(10, branching=(5, 3, 3)).tree,
    }
    for name, tree in trees.items():
        for B in (10, 32):
            res = bench(tree, B, a.repeats)
            base = res["vectorised"][0]
            print(f"{name}, B = {B}")
            for k, (med, ratio) in res.items():
                print(
                    f"  {k:18s} {med * 1e3:9.3f} ms   ×{ratio:.1f}"
                    + ("" if k == "vectorised" else f" (vectorised {base * 1e3:.3f} ms)")
                )


if __name__ == "__main__":
    main()
