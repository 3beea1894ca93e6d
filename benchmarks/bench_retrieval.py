"""Hyperbolic retrieval at scale: exact Poincaré top-k as one GEMM, fp32/fp16 storage, FAISS, vs Euclidean.

Paper 03 (Hyper-DINO) §2.4 / §4: 32-dimensional references, 64-byte float16 codes. For each
number of references G this times, side by side in one process, the top-20 of Q queries by

* the Euclidean search a PCA(32) baseline needs: ``torch.cdist`` + ``torch.topk`` (chunks of
  65,536) and FAISS's own ``IndexFlatL2`` on the same G × 32 float32 matrix;
* ``ReferenceIndex`` (torch backend) with fp32 and fp16 storage, fp16 also with the refine step
  against the full-precision references;
* ``ReferenceIndex(backend="faiss")`` with ``kind="flat"``, ``"ivf"`` and ``"hnsw"``;
* geoopt's broadcast ``PoincareBall.dist`` at G ≤ 20,000 (a Q × G × d tensor, 32 queries at a time);

and prints per row the median seconds, queries/s, bytes per reference, recall@20 against the
exact top-20 (a float64 brute force from differences at G ≤ --truth-max, else the exact FAISS
flat search, which the tests prove equal to it) and the ratio to the Euclidean search of the
same engine (torch rows to ``cdist``+``topk``, FAISS rows to ``IndexFlatL2``). Sizes in
``--faiss-sizes`` run the FAISS rows only (and FAISS ``IndexFlatL2``). References and queries
are drawn from 1,000 clusters (``--data clusters``: tangent centres of norm 1.5–4.5, radii
≈ 0.85–0.9999, the shape of trained embeddings) or ``expmap0(0.7·N(0, I))`` (``--data
gaussian``, hierviz ≤ 0.3's data: radii 0.97–0.99999, whose hyperbolic neighbours are the
same few interior points for every query).

Run: ``python3 benchmarks/bench_retrieval.py`` (options: ``--sizes 10000 1000000 --faiss-sizes
10000000 --queries 256 --repeats 3 --threads 1 --nprobe 16 --nlist-max 4096 --json benchmarks/results/retrieval_cpu.json``).
Figures and the machine are in ``benchmarks/README.md``.
"""

# ruff: noqa: B023  (every lambda is timed, and dropped, inside its loop iteration)
from __future__ import annotations

import argparse
import datetime
import json
import platform
import resource
import statistics
import time

import geoopt
import torch

from hierviz.geometry import PoincareBall
from hierviz.retrieval import ReferenceIndex


def _euclidean_topk(q: torch.Tensor, ref: torch.Tensor, k: int, chunk: int = 65536) -> torch.Tensor:
    best = None
    for s in range(0, len(ref), chunk):
        d = torch.cdist(q, ref[s : s + chunk])
        v = torch.topk(d, min(k, d.shape[1]), dim=1, largest=False).values
        best = v if best is None else torch.topk(torch.cat([best, v], 1), k, dim=1, largest=False).values
    return best


def _brute_force(q: torch.Tensor, ref: torch.Tensor, k: int) -> torch.Tensor:
    """Exact top-k rows in float64 from differences (the reference ranking)."""
    q64 = q.double()
    best_d = torch.full((len(q), 0), float("inf"), dtype=torch.float64)
    best_i = torch.zeros((len(q), 0), dtype=torch.long)
    rows = max(1, (1 << 24) // (len(q) * q.shape[1]))
    for s in range(0, len(ref), rows):
        x = ref[s : s + rows].double()
        num = (q64[:, None, :] - x[None]).pow(2).sum(-1)
        d = num / ((1 - q64.pow(2).sum(-1))[:, None] * (1 - x.pow(2).sum(-1))[None])
        v, i = torch.topk(torch.cat([best_d, d], 1), k, dim=1, largest=False)
        best_d, best_i = v, torch.cat([best_i, torch.arange(s, s + len(x)).expand(len(q), -1)], 1).gather(1, i)
    return best_i


def _recall(got: torch.Tensor, truth: torch.Tensor) -> float:
    k = truth.shape[1]
    return sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(got[:, :k], truth)) / truth.numel()


def _data(G: int, Q: int, dim: int, seed: int, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``clusters``: 1,000 clusters, tangent centres of norm U(1.5, 4.5) in random directions plus
    N(0, 0.1²) per coordinate (radii ≈ 0.85–0.9999); ``gaussian``: ``expmap0(0.7·N(0, I))``."""
    ball = PoincareBall(1.0)
    g = torch.Generator().manual_seed(seed)
    u = torch.nn.functional.normalize(torch.randn(1000, dim, generator=g, dtype=torch.float64), dim=-1)
    centres = u * (1.5 + 3.0 * torch.rand(1000, 1, generator=g, dtype=torch.float64))

    def draw(n: int) -> torch.Tensor:
        if kind == "gaussian":
            return ball.expmap0(0.7 * torch.randn(n, dim, generator=g, dtype=torch.float64)).float()
        lab = torch.randint(0, 1000, (n,), generator=g)
        return ball.expmap0(centres[lab] + 0.1 * torch.randn(n, dim, generator=g, dtype=torch.float64)).float()

    ref = torch.empty(G, dim)
    for s in range(0, G, 1 << 20):  # float32 in chunks: no G × d float64 copy at 10^7
        n = min(1 << 20, G - s)
        ref[s : s + n] = draw(n)
    return ref, draw(Q)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    ap.add_argument("--faiss-sizes", type=int, nargs="*", default=[10_000_000])
    ap.add_argument("--queries", type=int, default=256)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--nprobe", type=int, default=16, help="IVF cells scanned per query")
    ap.add_argument("--nlist-max", type=int, default=4096, help="IVF cells: min(4·sqrt(G), this)")
    ap.add_argument("--faiss-repeats", type=int, default=1, help="rounds at the --faiss-sizes")
    ap.add_argument("--hnsw-max", type=int, default=1_000_000, help="largest G that builds an HNSW graph")
    ap.add_argument("--truth-max", type=int, default=1_000_000, help="largest G with a float64 brute-force truth")
    ap.add_argument("--data", choices=["clusters", "gaussian"], default="clusters")
    ap.add_argument("--hnsw-m", type=int, default=16)
    ap.add_argument("--json", default=None, help="write the rows and settings here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    try:
        import faiss

        faiss.omp_set_num_threads(args.threads)
    except ImportError:
        faiss = None
    k = args.k
    print(
        f"Q = {args.queries} queries, d = {args.dim}, top-{k}, {args.threads} thread(s), CPU, torch {torch.__version__}, "
        f"faiss {getattr(faiss, '__version__', 'absent')}"
    )
    print("| G | search | median s | queries/s | bytes/ref | recall@20 | ratio | build s | peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    rows_out = []
    sizes = [(G, False) for G in args.sizes] + [(G, True) for G in args.faiss_sizes]
    for G, faiss_only in sizes:
        ref, q = _data(G, args.queries, args.dim, 0, args.data)
        truth = _brute_force(q, ref, k) if G <= args.truth_max else None
        # every search built first, then timed in interleaved rounds (a loaded machine drifts: ratios
        # come from rounds that time every row once, in a rotating order)
        runs = []  # (name, fn, bytes/ref, engine, build seconds, exact?)
        if not faiss_only:
            runs.append(("Euclidean cdist+topk (torch, fp32)", lambda: _euclidean_topk(q, ref, k), 4 * args.dim,
                         "torch", 0.0, None))  # fmt: skip
        if faiss is not None:
            l2 = faiss.IndexFlatL2(args.dim)
            l2.add(ref.numpy())
            runs.append(("Euclidean FAISS IndexFlatL2", lambda l2=l2: l2.search(q.numpy(), k), 4 * args.dim, "faiss",
                         0.0, None))  # fmt: skip
        if not faiss_only:
            for storage in ("fp32", "fp16"):
                t0 = time.perf_counter()
                index = ReferenceIndex(ref, storage=storage)
                build = time.perf_counter() - t0
                runs.append((f"ours {storage}", lambda index=index: index.search(q, k=k), index.bytes_per_reference,
                             "torch", build, True))  # fmt: skip
                if storage == "fp16":
                    runs.append(("ours fp16 + refine (fp32 refs outside)",
                                 lambda index=index: index.search(q, k=k, refine=ref), index.bytes_per_reference,
                                 "torch", build, True))  # fmt: skip
        if faiss is not None:
            for kind in ["flat", "ivf"] + (["hnsw"] if G <= args.hnsw_max else []):
                opts = {"nprobe": args.nprobe, "nlist": min(round(4 * G**0.5), args.nlist_max)} if kind == "ivf" else {}
                if kind == "hnsw":
                    opts = {"hnsw_m": args.hnsw_m, "ef_construction": 40}
                t0 = time.perf_counter()
                index = ReferenceIndex(ref, storage="fp32", backend="faiss", kind=kind, faiss_options=opts)
                build = time.perf_counter() - t0
                name = f"FAISS {kind}" + (f" (nlist {opts['nlist']}, nprobe {args.nprobe})" if kind == "ivf" else "")
                runs.append((name, lambda index=index: index.search(q, k=k), index.bytes_per_reference, "faiss", build,
                             kind == "flat"))  # fmt: skip
        if G <= 20_000 and not faiss_only:
            m = geoopt.PoincareBall(c=1.0)

            def peer(m=m):
                for s in range(0, len(q), 32):  # 32 × G × d floats at a time
                    torch.topk(m.dist(q[s : s + 32, None], ref[None]), k, dim=1, largest=False)

            runs.append(("geoopt dist broadcast (fp32)", peer, 4 * args.dim, "torch", 0.0, None))
        repeats = args.repeats if not faiss_only else args.faiss_repeats
        times: dict[str, list[float]] = {r[0]: [] for r in runs}
        found: dict[str, torch.Tensor] = {}
        for rnd in range(repeats):
            for j in range(len(runs)):
                name, fn = runs[(j + rnd) % len(runs)][:2]
                t0 = time.perf_counter()
                out = fn()
                times[name].append(time.perf_counter() - t0)
                if isinstance(out, tuple) and isinstance(out[1], torch.Tensor):
                    found[name] = out[1]
        if truth is None:
            truth = found["FAISS flat"]  # exact (tests: FAISS flat = float64 brute force)
        rows = [(name, statistics.median(times[name]), nb, None if ex is None else _recall(found[name], truth), eng, b)
                for name, _, nb, eng, b, ex in runs]  # fmt: skip
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        base = {r[4]: r[1] for r in rows if r[0].startswith("Euclidean")}
        for name, t, nbytes, rec, engine, build in rows:
            ratio = t / base[engine] if engine in base else float("nan")
            rec_s = "—" if rec is None else f"{rec:.4f}"
            print(f"| {G:,} | {name} | {t:.4f} | {args.queries / t:,.0f} | {nbytes} | {rec_s} | {ratio:.2f} | "
                  f"{build:.1f} | {peak:.0f} |", flush=True)  # fmt: skip
            rows_out.append({"G": G, "search": name, "seconds": t, "queries_per_s": args.queries / t,
                             "bytes_per_reference": nbytes, "recall_at_k": rec, "ratio_to_euclidean": ratio,
                             "ratio_base": engine, "build_seconds": build, "peak_rss_mib": peak})  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"settings": vars(args), "machine": platform.machine(), "processor": platform.processor(),
                       "torch": torch.__version__, "faiss": getattr(faiss, "__version__", None),
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "rows": rows_out}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
