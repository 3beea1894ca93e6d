"""Benchmark: ρ lookup (paper 01, Eq. 4) for a batch of labels via LabelTree's precomputed C × C table.

Tree: 100 leaves, 3 levels (root → 4 groups → 5 subgroups each → 5 leaves each, L = 3).
Measures
  * ``tree.rho(y[:, None], y[None, :])`` — the B × B ρ sub-matrix HWC needs, one gather
    (label validation included) — at B = 4,096 and B = 256;
  * plain broadcast advanced indexing ``tree.rho_matrix[y[:, None], y[None, :]]`` at the same
    sizes (``tree.rho`` takes two ``index_select`` calls for this outer pattern instead);
  * a naive Python loop over all B² pairs (walk both ancestor lists to the LCA) at B = 256,
    reported as a ratio to the vectorised call at the same B.
Also prints the one-off construction time of the tree (C × C tables built once).

Run:  python3 benchmarks/bench_tree.py            (CPU, 1 thread; --threads N, --cuda to time on a GPU too)
At B = 4,096 the output is 4096² float32 = 64 MB, so the time is mostly allocating and writing it.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.utils.benchmark as tbench

from hierviz.hierarchy import LabelTree


def make_tree(groups: int = 4, subgroups: int = 5, leaves: int = 5) -> LabelTree:
    """root → ``groups`` → ``subgroups`` each → ``leaves`` each (balanced, L = 3)."""
    nested = {
        "root": {
            f"g{i}": {f"g{i}s{j}": [f"g{i}s{j}l{k}" for k in range(leaves)] for j in range(subgroups)}
            for i in range(groups)
        }
    }
    return LabelTree.from_nested(nested)


def naive_rho(tree: LabelTree, y: list[int]) -> list[list[float]]:
    """ρ for every pair by walking root→leaf name lists in Python (no tables)."""
    paths = [tree.ancestors(tree.leaves[i]) for i in range(tree.num_leaves)]
    L = tree.height
    out = []
    for a in y:
        row = []
        pa = paths[a]
        for b in y:
            pb = paths[b]
            d = 0
            while d + 1 < len(pa) and d + 1 < len(pb) and pa[d + 1] == pb[d + 1]:
                d += 1
            row.append(d / L)
        out.append(row)
    return out


def time_ms(stmt: str, env: dict, min_run_time: float = 1.0) -> float:
    m = tbench.Timer(stmt=stmt, globals=env, num_threads=torch.get_num_threads()).blocked_autorange(
        min_run_time=min_run_time
    )
    return m.median * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda", action="store_true", help="also time the gather on a CUDA device")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 gives stable numbers on a shared machine)"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    tree = make_tree()
    build_ms = (time.perf_counter() - t0) * 1e3
    print(
        f"tree: C={tree.num_leaves} leaves, N={tree.num_nodes} nodes, L={tree.height}; "
        f"built (incl. C×C tables) in {build_ms:.1f} ms"
    )
    print(f"torch {torch.__version__}, CPU threads {torch.get_num_threads()}")

    g = torch.Generator().manual_seed(args.seed)
    y_big = torch.randint(0, tree.num_leaves, (4096,), generator=g)
    y_small = y_big[:256].clone()

    devices = ["cpu"] + (["cuda"] if args.cuda and torch.cuda.is_available() else [])
    results = {}
    for dev in devices:
        for name, y in (("B=4096", y_big), ("B=256", y_small)):
            yd = y.to(dev)
            env = {"tree": tree, "y": yd, "R": tree.rho_matrix.to(dev)}
            tree.rho(yd[:, None], yd[None, :])  # warm the per-device cache
            sync = "; torch.cuda.synchronize()" if dev == "cuda" else ""
            api = time_ms("tree.rho(y[:, None], y[None, :])" + sync, env)
            raw = time_ms("R[y[:, None], y[None, :]]" + sync, env)  # broadcast advanced indexing
            results[(dev, name)] = api
            print(f"[{dev}] {name:7s} tree.rho (B×B): {api:8.3f} ms/call   R[y[:,None], y[None,:]]: {raw:8.3f} ms/call")

    # Naive Python loop over the 256² pairs; check the values agree.
    ref = naive_rho(tree, y_small.tolist())
    assert torch.allclose(torch.tensor(ref, dtype=torch.float32), tree.rho(y_small[:, None], y_small[None, :]))
    t0 = time.perf_counter()
    reps = 3
    for _ in range(reps):
        naive_rho(tree, y_small.tolist())
    naive_ms = (time.perf_counter() - t0) / reps * 1e3
    vec_ms = results[("cpu", "B=256")]
    print(f"[cpu] B=256   naive Python loop over pairs: {naive_ms:8.1f} ms/call")
    print(f"speed-up of tree.rho over the naive loop at B=256: {naive_ms / vec_ms:,.0f}×")


if __name__ == "__main__":
    main()
