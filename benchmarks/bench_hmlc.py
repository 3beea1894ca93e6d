"""HMCE forward + backward vs our SupCon vs the salesforce-style loop; batched GMM vs a scikit-learn loop.

Paper 02 (HMLC) trains with one SupCon per level (HMCE, Eq. 4) and, for G-HMLC, one 1-D
Gaussian mixture per image and step. This script measures, side by side in one run:

1. forward + backward of ``HMLCLoss("hmce")`` in ``paper`` mode (all levels in one batched
   similarity) and ``official`` mode, our ``SupConLoss`` (one level) and the salesforce
   ``HMLC`` re-implemented line by line in ``tests/test_hmlc.py`` (Python loop over the batch
   to build each level's mask), at B = 256 and 1024 images × 2 views, d = 128, 3 levels;
2. :func:`hierviz.losses.fit_gmm_1d` on B = 256 rows of d = 128 values, K = 2, against
   ``sklearn.mixture.GaussianMixture`` fitted row by row, with the adjusted Rand index of
   the two assignments.

Usage
-----
    python3 benchmarks/bench_hmlc.py                 # both parts, 1 thread
    python3 benchmarks/bench_hmlc.py --repeats 5 --threads 2

Prints median seconds and the median per-round ratio to the first entry of each table.
Never asserted in tests: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import torch

from hierviz.losses import HMLCLoss, SupConLoss, fit_gmm_1d

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_losses import _time_round_robin  # noqa: E402  (interleaved rounds, median ratio to the first)


def _salesforce():
    path = Path(__file__).resolve().parents[1] / "tests" / "test_hmlc.py"
    spec = importlib.util.spec_from_file_location("_test_hmlc", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SalesforceHMLC


def bench_losses(batch: int, d: int, repeats: int, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Forward + backward of the HMLC losses and SupCon on one batch of ``batch`` images × 2 views."""
    g = torch.Generator().manual_seed(seed)
    z0 = torch.nn.functional.normalize(torch.randn(batch, 2, d, generator=g), dim=-1)
    leaf = torch.randint(0, 100, (batch,), generator=g)
    cols = torch.stack([leaf // 20, leaf // 5, leaf, torch.arange(batch)], dim=1)  # coarse first + image id
    paper = HMLCLoss("hmce", "exp", temperature=0.1)
    official = HMLCLoss("hmce", "exp", temperature=0.1, mode="official")
    supcon = SupConLoss(None, "euclidean", tau=0.1)
    sf = _salesforce()(temperature=0.1, layer_penalty=torch.exp, loss_type="hmce")

    def run(f):
        def go():
            z = z0.clone().requires_grad_(True)
            f(z).backward()

        return go

    return _time_round_robin(
        {
            "SupCon (ours, 1 level)": run(lambda z: supcon(z, leaf)),
            "HMCE paper (ours, 3 levels)": run(lambda z: paper(z, cols[:, :3].flip(1))),
            "HMCE official (ours)": run(lambda z: official(z, cols)),
            "HMCE salesforce loop": run(lambda z: sf(z, cols)),
        },
        repeats,
        warmup=1,
    )


def bench_gmm(batch: int, d: int, k: int, repeats: int, seed: int = 0) -> tuple[dict[str, tuple[float, float]], float]:
    """Batched torch EM vs scikit-learn row by row; returns the timings and the mean ARI of the assignments."""
    from sklearn.metrics import adjusted_rand_score
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (batch, k)) + np.arange(k) * 0.6
    x = (centres[np.arange(batch)[:, None], rng.integers(0, k, (batch, d))] + rng.normal(0, 0.1, (batch, d))).astype(
        np.float32
    )
    xt = torch.from_numpy(x)
    out: dict[str, object] = {}

    def ours():
        out["ours"] = fit_gmm_1d(xt, k).labels.numpy()

    def sk():
        out["sk"] = np.stack([GaussianMixture(k, random_state=0).fit_predict(row[:, None]) for row in x])

    times = _time_round_robin({"batched EM (torch)": ours, "sklearn loop": sk}, repeats, warmup=1)
    ari = float(np.mean([adjusted_rand_score(a, b) for a, b in zip(out["ours"], out["sk"])]))
    return times, ari


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    for batch in (256, 1024):
        print(f"\nforward + backward, B = {batch} images x 2 views, d = {args.d}, 3 levels, {args.threads} thread(s)")
        print(f"{'loss':32s} {'median s':>10s} {'ratio':>8s}")
        for name, (sec, ratio) in bench_losses(batch, args.d, args.repeats).items():
            print(f"{name:32s} {sec:10.4f} {ratio:8.2f}")
    times, ari = bench_gmm(256, args.d, 2, args.repeats)
    print(f"\n1-D GMMs, B = 256 rows x {args.d} values, K = 2, {args.threads} thread(s)")
    print(f"{'fit':32s} {'median s':>10s} {'ratio':>8s}")
    for name, (sec, ratio) in times.items():
        print(f"{name:32s} {sec:10.4f} {ratio:8.2f}")
    print(f"mean adjusted Rand index, ours vs sklearn: {ari:.4f}")


if __name__ == "__main__":
    main()
