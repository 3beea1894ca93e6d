"""Training steps/s of the real input pipeline against the pure model step, in one run.

Three rates on the same model, loss and optimiser (two views, SupCon, AdamW; bf16 autocast
and channels_last on CUDA):

* ``pure``   — the model step on synthetic float views already on the device (the ceiling);
* ``cpu``    — the CPU path: :class:`hierviz.data.TwoViewTransform` per image in DataLoader
  workers (``--workers``, persistent, ``--prefetch``), pinned, copied to the device;
* ``device`` — the device path: uint8 batches of :class:`hierviz.data.gpu_augment.UInt8Images`
  copied to the device and augmented there by :class:`~hierviz.data.gpu_augment.BatchTwoViewAugment`.

Each pipeline is also timed without the model step (``input only``: the rate the input
side alone can sustain). Prints steps/s and the ratio to ``pure`` (the goal on an
H100 at 64 px: ≥ 0.8 for the pipeline that training uses).

Usage (from the repository root)::

    python3 benchmarks/bench_pipeline.py --device cuda --dataset ham10000 --encoder resnet18 --batch 256 --workers 12
    python3 benchmarks/bench_pipeline.py --device cpu --encoder small_cnn --image-size 32 --batch 64 --steps 5  # CPU smoke

``--dataset`` is any :func:`hierviz.data.load_dataset` name (``ham10000`` needs
``../shared/data`` or ``HIERVIZ_DATA``); ``synthetic`` makes random uint8 images of
``--image-size`` (``--n`` of them). Timings are never asserted in tests.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time

import numpy as np
import torch


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Synthetic:
    def __init__(self, n: int, size: int, classes: int, seed: int = 0):
        g = np.random.default_rng(seed)
        self.images = g.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
        self.labels = g.integers(0, classes, n)


def _rate(batches, step, steps: int, warmup: int, device: torch.device) -> float:
    """Steps/s of ``step(batch)`` over ``steps`` batches after ``warmup`` ones."""
    it = iter(batches)
    for _ in range(warmup):
        step(next(it))
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step(next(it))
    _sync(device)
    return steps / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dataset", default="synthetic", help="a load_dataset name, or 'synthetic'")
    ap.add_argument("--n", type=int, default=4096, help="images for --dataset synthetic")
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--encoder", default="resnet18")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, default=8, help="DataLoader workers of the CPU path")
    ap.add_argument("--prefetch", type=int, default=4, help="prefetch_factor of the CPU path")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--paths", default="pure,cpu,device")
    ap.add_argument("--no-channels-last", action="store_true")
    a = ap.parse_args(argv)

    from torch.utils.data import DataLoader

    from hierviz.data import ContrastiveDataset, TwoViewTransform
    from hierviz.data.gpu_augment import BatchTwoViewAugment, UInt8Images, batch_seed
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.losses import SupConLoss
    from hierviz.models import build_model

    device = torch.device(a.device)
    cuda = device.type == "cuda"
    channels_last = cuda and not a.no_channels_last
    if a.dataset == "synthetic":
        ds = _Synthetic(a.n, a.image_size, 7)
    else:
        from hierviz.data import load_dataset

        ds = load_dataset(a.dataset, image_size=a.image_size)
    size = a.image_size
    tree = LabelTree.from_nested(
        {"root": {"benign": ["nv", "bkl", "df", "vasc"], "malignant": ["mel", "bcc", "akiec"]}}
    )
    geometry = get_geometry("euclidean")
    torch.manual_seed(0)
    model = build_model(a.encoder, geometry, embed_dim=128, small_input=size <= 64).to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = SupConLoss(tree, geometry, tau=0.1)
    labels_all = np.asarray(ds.labels) % tree.num_leaves

    def train_step(x: torch.Tensor, y: torch.Tensor) -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            z = model(x)["z"].float()
        loss = loss_fn(z, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    name = torch.cuda.get_device_name(device) if cuda else (platform.processor() or platform.machine())
    print(
        f"torch {torch.__version__}, {device} ({name}), {a.encoder}, {size} px, batch {a.batch} x 2 views, "
        f"{len(labels_all)} images ({a.dataset}), channels_last={channels_last}, bf16={cuda}"
    )
    res: dict[str, float] = {}
    total = a.steps + a.warmup
    paths = a.paths.split(",")
    if "pure" in paths:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(a.batch, 2, 3, size, size, generator=g).to(device)
        y = torch.as_tensor(labels_all[: a.batch]).to(device)
        res["pure"] = _rate(itertools.repeat((x, y)), lambda b: train_step(*b), a.steps, a.warmup, device)

    class _Lab:  # labels folded onto the tree's leaves (a dataset with other classes still works)
        def __init__(self, base):
            self.base = base

        def __len__(self):
            return len(self.base)

        def __getitem__(self, i):
            v, _ = self.base[i]
            return v, int(labels_all[i])

    def loader(dataset, workers: int):
        kw = dict(persistent_workers=True, prefetch_factor=a.prefetch) if workers > 0 else {}
        return DataLoader(
            dataset, batch_size=a.batch, shuffle=True, drop_last=True, num_workers=workers, pin_memory=cuda, **kw
        )

    def cycle(dl):
        while True:
            yield from dl

    if "cpu" in paths:
        views = _Lab(ContrastiveDataset(ds, TwoViewTransform(size), views=2))
        dl = cycle(loader(views, a.workers))

        def cpu_step(b, train=True):
            x = b[0].to(device, non_blocking=True)
            y = b[1].to(device, non_blocking=True)
            if train:
                train_step(x, y)

        res["cpu input only"] = _rate(dl, lambda b: cpu_step(b, False), min(a.steps, 10), 2, device)
        res["cpu"] = _rate(dl, cpu_step, a.steps, a.warmup, device)
    if "device" in paths:
        raw = _Lab(UInt8Images(ds))
        aug = BatchTwoViewAugment(size, views=2, channels_last=channels_last)
        dl = cycle(loader(raw, 0))
        counter = itertools.count()

        def dev_step(b, train=True):
            x = aug(b[0].to(device, non_blocking=True), seed=batch_seed(0, next(counter)))
            y = b[1].to(device, non_blocking=True)
            if train:
                train_step(x, y)

        res["device input only"] = _rate(dl, lambda b: dev_step(b, False), min(a.steps, 10), 2, device)
        res["device"] = _rate(dl, dev_step, a.steps, a.warmup, device)
    del total
    pure = res.get("pure")
    print(f"  {'path':<20} {'steps/s':>9} {'x pure':>8}")
    for k, v in res.items():
        ratio = f"{v / pure:8.2f}" if pure else "       -"
        print(f"  {k:<20} {v:9.2f} {ratio}")
    return res


if __name__ == "__main__":
    main()
