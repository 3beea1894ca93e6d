"""Hyper-DINO retrieval at scale: exact Poincaré top-k over 10⁴ / 10⁶ references, fp32 vs fp16 storage.

Paper 03 (Hyper-DINO) §2.4 / §4: 32-dimensional references, 64 bytes each in float16. For each
number of references G and each storage mode this times ``ReferenceIndex.search`` (top-20 of Q
queries, batched, chunked) side by side, in the same run, with the Euclidean search a PCA(32)
baseline would need (``torch.cdist`` + ``torch.topk`` over the same G × 32 float32 matrix), and
prints the ratio, the throughput (queries/s), the stored bytes and the process's peak resident
memory. At G = 10⁴ it also times geoopt's broadcast ``PoincareBall.dist`` (the peer that
materialises a Q × G × d tensor).

Run: ``python3 benchmarks/bench_retrieval.py`` (options: ``--sizes 10000 1000000 --queries 256
--repeats 3 --threads 1 --device cpu``). Figures and the machine are in ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import geoopt
import torch

from hierviz.geometry import PoincareBall
from hierviz.retrieval import ReferenceIndex


def _time(fn, repeats: int, device: torch.device) -> float:
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _euclidean_topk(q: torch.Tensor, ref: torch.Tensor, k: int, chunk: int = 65536) -> torch.Tensor:
    best = None
    for s in range(0, len(ref), chunk):
        d = torch.cdist(q, ref[s : s + chunk])
        v = torch.topk(d, min(k, d.shape[1]), dim=1, largest=False).values
        best = v if best is None else torch.topk(torch.cat([best, v], 1), k, dim=1, largest=False).values
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=256)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    ball = PoincareBall(1.0)
    g = torch.Generator().manual_seed(0)
    print(f"Q = {args.queries} queries, d = {args.dim}, top-{args.k}, {args.threads} thread(s), device {device}")
    print("| G | search | median s | queries/s | ratio to Euclidean | stored MiB | peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for G in args.sizes:
        ref = ball.expmap0(0.7 * torch.randn(G, args.dim, generator=g))  # radii spread up to ~0.99
        q = ball.expmap0(0.7 * torch.randn(args.queries, args.dim, generator=g))
        ref_e = ref.to(device)
        q_e = q.to(device)
        t_euc = _time(lambda q_e=q_e, ref_e=ref_e: _euclidean_topk(q_e, ref_e, args.k), args.repeats, device)
        rows = [("Euclidean cdist+topk (fp32)", t_euc, G * args.dim * 4)]
        for storage in ("fp32", "fp16"):
            index = ReferenceIndex(ref, storage=storage, device=device)
            qd = q.to(device)
            t = _time(lambda index=index, qd=qd: index.search(qd, k=args.k), args.repeats, device)
            rows.append((f"ReferenceIndex {storage}", t, index.nbytes))
        if G <= 20_000:
            m = geoopt.PoincareBall(c=1.0)
            qg, rg = q.to(device), ref.to(device)

            def peer(m=m, qg=qg, rg=rg):
                for s in range(0, len(qg), 32):  # 32 × G × d floats at a time
                    torch.topk(m.dist(qg[s : s + 32, None], rg[None]), args.k, dim=1, largest=False)

            rows.append(("geoopt dist broadcast (fp32)", _time(peer, args.repeats, device), G * args.dim * 4))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        for name, t, nbytes in rows:
            print(
                f"| {G:,} | {name} | {t:.4f} | {args.queries / t:,.0f} | {t / t_euc:.2f} | "
                f"{nbytes / 2**20:.1f} | {peak:.0f} |"
            )


if __name__ == "__main__":
    main()
