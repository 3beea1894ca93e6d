"""Paper 04 ranking metrics: hierviz's vectorised MNR / NDCG vs per-query loops as the authors wrote them.

``python3 benchmarks/bench_ranking.py [--n 1000] [--repeats 3]`` times, on n leave-one-out
queries over the 20news tree (20 leaves, 3 levels) with random similarities:

* ``hierviz.metrics.ranking.mnr`` against a port of the authors' ``_compute_mnr`` (a Python
  loop over queries and levels, ``torch.nonzero`` per level; frdysf/label-metric), checking
  that both give the same value;
* ``ndcg_tree`` against ``sklearn.metrics.ndcg_score`` on the same relevance matrix.

Prints the median seconds and the ratio to hierviz (one torch thread).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn.metrics import ndcg_score

from hierviz.data import load_tree
from hierviz.metrics.ranking import mnr, mnr_levels, ndcg_tree
from hierviz.metrics.retrieval import tree_relevance


def authors_mnr(sim: torch.Tensor, per_level_labels: torch.Tensor) -> float:
    n, levels = per_level_labels.shape
    per_query = []
    for i in range(n):
        s = torch.cat([sim[i, :i], sim[i, i + 1 :]])
        _, idx = torch.sort(s, descending=True, stable=True)
        vals = []
        for j in range(levels):
            lab = torch.cat([per_level_labels[:i, j], per_level_labels[i + 1 :, j]])
            same = (lab == per_level_labels[i, j]).nonzero(as_tuple=True)[0]
            r = (idx.unsqueeze(1) == same).nonzero(as_tuple=True)[0].double()
            vals.append(torch.mean(r / (n - 1)))
        per_query.append(torch.nanmean(torch.stack(vals)))
    return float(torch.mean(torch.stack(per_query)))


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    tree = load_tree("20news")
    rng = np.random.default_rng(0)
    y = rng.integers(0, tree.num_leaves, size=args.n)
    S = torch.as_tensor(rng.normal(size=(args.n, args.n)))
    labels = tree.leaf_paths[torch.as_tensor(y)][:, mnr_levels(tree)]

    t_ours, v_ours = median_time(lambda: mnr(S, y, y, tree, exclude_self=True), args.repeats)
    t_ref, v_ref = median_time(lambda: authors_mnr(S, labels), args.repeats)
    print(f"MNR, n = {args.n}: hierviz {t_ours:.3f} s, authors' loop {t_ref:.3f} s, ratio {t_ref / t_ours:.1f}x")
    print(f"  values: {v_ours:.12f} vs {v_ref:.12f} (|diff| {abs(v_ours - v_ref):.1e})")

    R = tree_relevance(tree, "sum").numpy()[y][:, y]
    off = ~np.eye(args.n, dtype=bool)
    true, score = R[off].reshape(args.n, -1), S.numpy()[off].reshape(args.n, -1)
    t_ours, v_ours = median_time(lambda: ndcg_tree(S, y, y, tree, "sum", exclude_self=True), args.repeats)
    t_ref, v_ref = median_time(lambda: ndcg_score(true, score), args.repeats)
    print(
        f"NDCG_sum, n = {args.n}: hierviz {t_ours:.3f} s, sklearn ndcg_score {t_ref:.3f} s, ratio {t_ref / t_ours:.1f}x"
    )
    print(f"  values: {v_ours:.12f} vs {v_ref:.12f} (|diff| {abs(v_ours - v_ref):.1e})")


if __name__ == "__main__":
    main()
