"""Forward + backward time of HWC vs our SupCon vs pytorch-metric-learning's SupConLoss.

Paper 01 §3.4 says HWC adds only O(B²) scalar weights on top of SupCon's similarity
matrix; this script checks that the implementation keeps that promise (target: HWC within
1.5× of our SupCon, no Python loop over the batch or the classes).

Usage
-----
    python3 benchmarks/bench_losses.py                  # 2B = 1024, d = 128, CPU
    python3 benchmarks/bench_losses.py --n 512 --d 64 --repeats 20 --threads 1

Prints one table per geometry (Euclidean cosine, Poincaré −d_M) with the median time of
forward + backward and ratios to our SupCon. For the Poincaré ball pytorch-metric-learning
is given the same closed-form distance through a small ``BaseDistance`` adapter, so all
three compute the same loss. Never asserted in tests: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.losses import HWCLoss, SupConLoss


def _pml_supcon(geometry, tau):
    """pytorch-metric-learning SupConLoss using the geometry's similarity (or None if not installed)."""
    try:
        from pytorch_metric_learning.distances import BaseDistance, CosineSimilarity
        from pytorch_metric_learning.losses import SupConLoss as PMLSupCon
    except ImportError:  # pragma: no cover - optional peer
        return None
    if geometry.name == "euclidean":
        return PMLSupCon(temperature=tau, distance=CosineSimilarity())

    class GeometryDistance(BaseDistance):
        def __init__(self):
            super().__init__(normalize_embeddings=False, is_inverted=False)

        def compute_mat(self, query_emb, ref_emb):
            return geometry.pairwise_dist(query_emb, ref_emb)

    return PMLSupCon(temperature=tau, distance=GeometryDistance())


def _time_round_robin(fns: dict, repeats: int, warmup: int = 2) -> dict[str, tuple[float, float]]:
    """Time each callable once per round, rounds interleaved (robust to a machine whose load drifts).

    Returns
    -------
    dict: name → (median seconds, median per-round ratio to the first entry).
    """
    names = list(fns)
    for _ in range(warmup):
        for k in names:
            fns[k]()
    times: dict[str, list[float]] = {k: [] for k in names}
    for _ in range(repeats):
        for k in names:
            t0 = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t0)
    base = times[names[0]]
    return {k: (statistics.median(v), statistics.median([a / b for a, b in zip(v, base)])) for k, v in times.items()}


def bench(geometry_name: str, n: int, d: int, repeats: int, seed: int = 0) -> dict[str, float]:
    """Median seconds of forward + backward for each loss on one random batch.

    Parameters
    ----------
    geometry_name : {"euclidean", "poincare"}
    n : int
        Embeddings in the batch (2B with two views).
    d : int
        Embedding dimension.
    repeats : int
        Timed repetitions (median reported).

    Returns
    -------
    dict: loss name → (median seconds, median ratio to our SupCon over interleaved rounds).
    """
    g = torch.Generator().manual_seed(seed)
    geometry = get_geometry(geometry_name)
    tree = LabelTree.from_nested(
        {"root": {f"p{i}": {f"q{i}{j}": [f"l{i}{j}{k}" for k in range(4)] for j in range(3)} for i in range(4)}}
    )
    B = n // 2
    labels = torch.randint(0, tree.num_leaves, (B,), generator=g)
    raw = torch.randn(B, 2, d, generator=g)
    if geometry_name == "euclidean":
        z0 = torch.nn.functional.normalize(raw, dim=-1)
    else:
        z0 = geometry.expmap0(0.3 * raw / d**0.5)
    tau = 0.1
    ours_sup = SupConLoss(tree, geometry, tau=tau, reduction="anchor")
    ours_hwc = HWCLoss(tree, geometry, tau=tau, alpha=0.5, gamma=0.5, reduction="anchor")
    ours_hwc_pairs = HWCLoss(tree, geometry, tau=tau, alpha=0.5, gamma=0.5, reduction="pairs")
    pml = _pml_supcon(geometry, tau)

    def run(loss_fn, flat: bool):
        def step():
            z = z0.clone().requires_grad_(True)
            if flat:
                loss = loss_fn(z.transpose(0, 1).reshape(n, d), labels.repeat(2))
            else:
                loss = loss_fn(z, labels)
            loss.backward()

        return step

    fns = {
        "SupCon (ours)": run(ours_sup, False),
        "HWC (ours, anchor)": run(ours_hwc, False),
        "HWC (ours, pairs)": run(ours_hwc_pairs, False),
    }
    if pml is not None:
        fns["SupConLoss (pytorch-metric-learning)"] = run(pml, True)
    return _time_round_robin(fns, repeats)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; prints a table per geometry."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024, help="2B, embeddings per batch (default 1024)")
    ap.add_argument("--d", type=int, default=128, help="embedding dimension (default 128)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    ap.add_argument("--geometries", default="euclidean,poincare")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, 2B = {args.n}, d = {args.d}, "
        f"median of {args.repeats} interleaved forward+backward rounds"
    )
    for name in args.geometries.split(","):
        res = bench(name, args.n, args.d, args.repeats)
        print(f"\n[{name}]")
        print(f"  {'loss':40s} {'ms':>9s} {'× our SupCon':>13s}")
        for k, (sec, ratio) in res.items():
            print(f"  {k:40s} {1e3 * sec:9.2f} {ratio:13.2f}")


if __name__ == "__main__":
    main()
