"""Data-parallel scaling on CPU: one process vs 2 gloo ranks with the same global batch.

``python3 benchmarks/bench_distributed.py [--batch 128] [--steps 10] [--size 32]`` times
training steps (forward, SupCon on the global batch, backward, AdamW) of the quick preset's
model (small CNN, width 16, d = 32, Euclidean) on random 2-view images:

* one process, 1 torch thread (the reference, ratio 1.00);
* one process, 2 torch threads (intra-op parallelism, the alternative to DDP on one box);
* 2 processes x 1 thread, DDP + :func:`hierviz.training.distributed.gather_batch` (each rank
  half the global batch), gloo on 127.0.0.1, batch norm on each rank's half (``train.sync_bn
  = false``) and over the global batch (:class:`~hierviz.training.distributed.AllReduceBatchNorm`,
  the default).

Prints the median seconds per step and the speed-up over the reference, plus the time of
the gather alone on 2 ranks.  The first 2 steps are warm-up and not timed.  Then the cost of
per-sample augmentation seeds (``data.augment_seeds=sample``): two-view items of
:class:`hierviz.data.ContrastiveDataset` per second with and without them (1 thread).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _setup(batch: int, size: int, seed: int = 0):
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.losses import SupConLoss
    from hierviz.models import build_model

    tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    geo = get_geometry("euclidean")
    torch.manual_seed(seed)
    model = build_model("small_cnn", geo, embed_dim=32, width=16)
    loss = SupConLoss(tree, geo, tau=0.1)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, 2, 3, size, size, generator=g)
    y = torch.randint(0, 4, (batch,), generator=g)
    return model, loss, x, y


def _time_steps(model, loss_fn, x, y, steps: int, distributed: bool) -> list[float]:
    from hierviz.training.distributed import gather_batch

    train = torch.nn.parallel.DistributedDataParallel(model, static_graph=True) if distributed else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        out = train(x)
        if distributed:
            out, yy = gather_batch(out, y)
        else:
            yy = y
        loss = loss_fn(out["z"], yy)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if distributed:
            dist.barrier()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return times


def _rank(rank: int, store: str, args: argparse.Namespace, result: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        from hierviz.training.distributed import convert_batchnorm, gather_batch

        half = args.batch // 2
        step = []
        for sync_bn in (False, True):
            model, loss_fn, x, y = _setup(args.batch, args.size)
            if sync_bn:
                model = convert_batchnorm(model)
            xs, ys = (x[:half], y[:half]) if rank == 0 else (x[half:], y[half:])
            step.append(np.median(_time_steps(model, loss_fn, xs, ys, args.steps, distributed=True)))

        z = torch.randn(half, 2, 32, requires_grad=True)
        gt = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            out, _ = gather_batch({"z": z}, ys)
            out["z"].sum().backward()
            gt.append(time.perf_counter() - t0)
        if rank == 0:
            np.save(result, np.array([*step, np.median(gt)]))
    finally:
        dist.destroy_process_group()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=128, help="global batch (images; 2 views each)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--size", type=int, default=32, help="image side in pixels")
    args = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        model, loss_fn, x, y = _setup(args.batch, args.size)
        rows.append(
            (f"1 process x {threads} thread(s)", float(np.median(_time_steps(model, loss_fn, x, y, args.steps, False))))
        )
    with tempfile.TemporaryDirectory() as tmp:
        res = os.path.join(tmp, "r.npy")
        mp.spawn(_rank, args=(os.path.join(tmp, "store"), args, res), nprocs=2, join=True)
        step_local, step_sync, gather = np.load(res)
    rows.append(("2 processes x 1 thread (DDP, gloo), batch norm per rank", float(step_local)))
    rows.append(("2 processes x 1 thread (DDP, gloo), AllReduceBatchNorm", float(step_sync)))
    ref = rows[0][1]
    print(f"global batch {args.batch} images x 2 views, {args.size} px, small_cnn width 16, SupCon, {args.steps} steps")
    print("| setup | median s / step | speed-up |")
    print("|---|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.4f} | {ref / t:.2f} |")
    print(
        f"gather_batch + its backward alone on 2 ranks (z {args.batch // 2} x 2 x 32 per rank): {gather * 1e3:.2f} ms"
    )
    torch.set_num_threads(1)
    stream, sample = _augment_rates(args.size)
    print(
        f"two-view items / s ({args.size} px, TwoViewTransform, 1 thread, median of 5 x 64 items): "
        f"stream {stream:.0f}, per-sample seeds {sample:.0f} (ratio {sample / stream:.2f})"
    )


def _augment_rates(size: int, n: int = 64, repeats: int = 5) -> tuple[float, float]:
    """Items per second of ContrastiveDataset without (torch's stream) and with per-sample seeds."""
    from hierviz.data import ArrayDataset, ContrastiveDataset, TwoViewTransform

    rng = np.random.default_rng(0)
    ds = ArrayDataset(rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8), np.arange(n) % 2, ["a", "b"])
    rates: dict[str, list[float]] = {"stream": [], "sample": []}
    for _ in range(repeats):  # interleaved, so a burst of load hits both
        for mode, seed in (("stream", None), ("sample", 0)):
            views = ContrastiveDataset(ds, TwoViewTransform(size), seed=seed)
            t0 = time.perf_counter()
            for i in range(n):
                views[i]
            rates[mode].append(n / (time.perf_counter() - t0))
    return float(np.median(rates["stream"])), float(np.median(rates["sample"]))


if __name__ == "__main__":
    main()
