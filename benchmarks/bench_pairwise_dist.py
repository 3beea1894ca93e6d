"""Pairwise hyperbolic distances: hierviz's Gram-matrix closed form vs geoopt broadcasting.

Times forward + backward of the full ``N×N`` distance matrix of ``N`` points in ``d``
dimensions (default 1024×256, float32, CPU) for

* ours:   ``geometry.pairwise_dist(x)``            (one GEMM, ``O(N²)`` memory)
* geoopt: ``manifold.dist(x[:, None], x[None])``   (broadcast, ``O(N²·d)`` memory)

for the Poincaré ball (curvature −c) and the Lorentz model (curvature −k), and prints the
median time of several runs, the speed-up ratio and the maximum absolute difference of the
two distance matrices (overall and off the diagonal, where ours is exactly 0).

Run from the repository root::

    python3 benchmarks/bench_pairwise_dist.py                 # 1024×256, both models
    python3 benchmarks/bench_pairwise_dist.py --n 256 --d 64  # quick

``--vs-cdist`` instead times the Poincaré distance (the fused kernel with its analytic
backward, and the autograd reference it replaced) against Euclidean ``torch.cdist``, forward +
backward, on ``--device cpu|cuda`` (the goal: ≤ 1.5× cdist at 4096×128 and 16384×128)::

    python3 benchmarks/bench_pairwise_dist.py --vs-cdist --n 4096 --d 128
    python3 benchmarks/bench_pairwise_dist.py --vs-cdist --n 16384 --d 128 --device cuda [--compile]

geoopt's broadcast needs several ``N×N×d`` float32 tensors (≈7 GB peak at the default
size) and tens of seconds per run on a 2-core CPU; nothing here is asserted in tests.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import warnings

import torch

warnings.filterwarnings("ignore", category=FutureWarning)  # geoopt's torch.jit.script notices

from hierviz.geometry import Lorentz, PoincareBall  # noqa: E402


def _time_fwd_bwd(fn, x: torch.Tensor, repeats: int) -> tuple[float, list[float], torch.Tensor]:
    """Median wall time of ``fn(x).sum().backward()`` over ``repeats`` runs (plus one warm-up)."""
    times = []
    out = None
    for i in range(repeats + 1):
        xi = x.detach().clone().requires_grad_(True)
        t0 = time.perf_counter()
        d = fn(xi)
        d.sum().backward()
        dt = time.perf_counter() - t0
        if i == 0:
            out = d.detach()
            continue  # warm-up
        times.append(dt)
        del d, xi
    assert out is not None
    return statistics.median(times), times, out


def bench(name: str, ours_fn, geo_fn, x: torch.Tensor, rep_ours: int, rep_geo: int) -> float:
    t_ours, all_ours, d_ours = _time_fwd_bwd(ours_fn, x, rep_ours)
    t_geo, all_geo, d_geo = _time_fwd_bwd(geo_fn, x, rep_geo)
    ref = ours_fn(x.double()).float()  # float64 reference (ours in float64 = geoopt float64 to ~1e-12)
    off = ~torch.eye(x.shape[0], dtype=torch.bool)
    diff = (d_ours - d_geo).abs()
    ratio = t_geo / t_ours
    print(f"\n[{name}] N={x.shape[0]} points, {x.shape[1]} coords, {x.dtype}, forward+backward")
    print(
        f"  ours   (Gram closed form) median {t_ours * 1e3:9.1f} ms  runs: "
        + ", ".join(f"{t * 1e3:.0f}" for t in all_ours)
    )
    print(
        f"  geoopt (broadcast dist)   median {t_geo * 1e3:9.1f} ms  runs: "
        + ", ".join(f"{t * 1e3:.0f}" for t in all_geo)
    )
    print(f"  speed-up geoopt/ours: {ratio:.1f}x")
    print(
        f"  max |ours - geoopt|: {float(diff.max()):.3e} (all entries), "
        f"{float(diff[off].max()):.3e} (off-diagonal); max distance {float(d_ours.max()):.3f}"
    )
    print(
        f"  vs float64 reference: max |ours - ref| {float((d_ours - ref).abs().max()):.3e}, "
        f"max |geoopt - ref| {float((d_geo - ref).abs().max()):.3e}"
    )
    return ratio


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_on(fn, x: torch.Tensor, repeats: int) -> float:
    """Median seconds of ``fn(x).sum().backward()`` on ``x.device`` (one warm-up, synchronised)."""
    times = []
    for i in range(repeats + 1):
        xi = x.detach().clone().requires_grad_(True)
        _sync(x.device)
        t0 = time.perf_counter()
        fn(xi).sum().backward()
        _sync(x.device)
        if i:
            times.append(time.perf_counter() - t0)
        del xi
    return statistics.median(times)


def bench_vs_cdist(n: int, d: int, c: float, device: torch.device, repeats: int) -> dict[str, float]:
    """Poincaré pairwise distance (fused, reference) vs ``torch.cdist``, fwd+bwd; prints ratios.

    Returns the median seconds of each (keys ``"cdist"``, ``"fused"``, ``"reference"``).
    """
    from hierviz.geometry._kernels import poincare_pairwise_dist
    from hierviz.geometry.poincare import math as pm

    torch.manual_seed(0)
    v = torch.randn(n, d, device=device)
    v = v / v.norm(dim=-1, keepdim=True) * torch.rand(n, 1, device=device) * 1.5
    x = PoincareBall(c=c).expmap0(v / c**0.5)
    from hierviz.geometry import _kernels

    def fused_eager(z):  # the eager kernels even on CUDA (hierviz 0.2's CUDA path)
        prev = _kernels.COMPILE_ON_CUDA
        _kernels.COMPILE_ON_CUDA = False
        try:
            return poincare_pairwise_dist(z, None, c)
        finally:
            _kernels.COMPILE_ON_CUDA = prev

    fns = {
        "cdist": lambda z: torch.cdist(z, z),
        "fused": lambda z: poincare_pairwise_dist(z, None, c),  # the default: compiled on CUDA
        "fused-eager": fused_eager,
        "reference": lambda z: pm.pairwise_dist_reference(z, None, c),
    }
    if device.type != "cuda":
        del fns["fused-eager"]  # the same function on a CPU
    # interleave the three so a neighbour's load on a shared machine hits all of them alike
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(max(1, repeats)):
        for k, f in fns.items():
            times[k].append(_time_on(f, x, 1))
    med = {k: statistics.median(v) for k, v in times.items()}
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or "cpu")
    print(f"\n[Poincaré vs torch.cdist] N={n}, d={d}, float32, forward+backward, {device} ({name})")
    for k in fns:
        print(f"  {k:<10} median {med[k] * 1e3:9.2f} ms   ratio to cdist {med[k] / med['cdist']:.2f}x")
    print(f"  fused / reference: {med['fused'] / med['reference']:.2f}x")
    ratio = med["fused"] / med["cdist"]
    print(
        f"GOAL Poincaré pairwise fwd+bwd <= {CDIST_GOAL}x torch.cdist at {n}x{d} | measured "
        f"{ratio:.2f}x ({med['fused'] * 1e3:.2f} ms vs {med['cdist'] * 1e3:.2f} ms, {device}) | "
        f"{'met' if ratio <= CDIST_GOAL else 'not met'}"
    )
    return med


#: The target for the default Poincaré kernel (fused; compiled on CUDA).
CDIST_GOAL = 1.5


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", default="1024", help="number of points (default 1024); --vs-cdist: a list, e.g. 4096,16384")
    p.add_argument("--d", type=int, default=256, help="dimension (default 256)")
    p.add_argument("--c", type=float, default=1.0, help="Poincaré curvature magnitude (curvature -c)")
    p.add_argument("--k", type=float, default=1.0, help="Lorentz curvature magnitude (curvature -k)")
    p.add_argument("--repeats", type=int, default=7, help="timed runs for ours (median)")
    p.add_argument("--geoopt-repeats", type=int, default=3, help="timed runs for geoopt (median)")
    p.add_argument("--only", choices=["poincare", "lorentz"], default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vs-cdist", action="store_true", help="time Poincaré (fused, reference) against torch.cdist")
    p.add_argument("--device", default="cpu", help="cpu or cuda (with --vs-cdist)")
    p.add_argument("--compile", action="store_true", help="fuse the kernel's elementwise passes (torch.compile)")
    p.add_argument("--json", default=None, metavar="PATH", help="with --vs-cdist: also write the results as JSON")
    a = p.parse_args(argv)
    sizes = [int(s) for s in str(a.n).split(",")]
    a.n = sizes[0]
    if a.compile:
        from hierviz.geometry._kernels import compile_kernels

        compile_kernels(True)
    if a.vs_cdist:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
        device = torch.device(a.device)
        rows = []
        for n in sizes:
            med = bench_vs_cdist(n, a.d, a.c, device, a.repeats)
            ratio = med["fused"] / med["cdist"]
            rows.append(dict(n=n, d=a.d, ms={k: 1e3 * v for k, v in med.items()}, ratio=ratio, met=ratio <= CDIST_GOAL))
        if a.json:
            import json

            name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or "cpu")
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(
                    dict(
                        benchmark="bench_pairwise_dist --vs-cdist",
                        torch=torch.__version__,
                        device=name,
                        date=time.strftime("%Y-%m-%d", time.gmtime()),
                        goal=f"fused <= {CDIST_GOAL}x torch.cdist, forward+backward, float32",
                        compile_kernels=a.compile,
                        rows=rows,
                    ),
                    f,
                    indent=2,
                )
            print(f"wrote {a.json}")
        return

    torch.manual_seed(a.seed)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}")
    # Tangent vectors with norm ~ U(0, 1.5)/sqrt(curv): distances stay below ~7/sqrt(curv),
    # where geoopt's float32 artanh/arcosh is still accurate (it saturates near 16/sqrt(c)).
    v = torch.randn(a.n, a.d)
    v = v / v.norm(dim=-1, keepdim=True) * torch.rand(a.n, 1) * 1.5

    if a.only in (None, "poincare"):
        P = PoincareBall(c=a.c)
        x = P.expmap0(v / a.c**0.5)
        bench(
            f"Poincaré ball c={a.c:g}",
            P.pairwise_dist,
            lambda z: P.manifold.dist(z[:, None], z[None]),
            x,
            a.repeats,
            a.geoopt_repeats,
        )
    if a.only in (None, "lorentz"):
        L = Lorentz(c=a.k)
        x = L.expmap0(v / a.k**0.5)
        bench(
            f"Lorentz k={a.k:g}",
            L.pairwise_dist,
            lambda z: L.manifold.dist(z[:, None], z[None]),
            x,
            a.repeats,
            a.geoopt_repeats,
        )


if __name__ == "__main__":
    main()
