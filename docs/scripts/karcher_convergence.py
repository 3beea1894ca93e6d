"""Karcher-mean convergence curve: geodesic error to a brute-force Fréchet mean after k steps.

The evaluation prototypes' default of 10 steps (``eval.mean_steps``) comes from this table
(docs/hyperbolic-fidelity.md). The reference minimises Σ d²(exp_0(u), x_i) over u with scipy's
BFGS in float64; the sets are 40 points in 8 dimensions, spread up to the given tangent radius.

    python docs/scripts/karcher_convergence.py
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import torch

from hierviz.geometry import Lorentz, PoincareBall

F64 = torch.float64
STEPS = (1, 2, 3, 5, 10, 20, 50)


def spread_points(geom, spread: float, seed: int = 0, n: int = 40, d: int = 8) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, d, generator=g, dtype=F64)
    v = v / v.norm(dim=1, keepdim=True) * spread * torch.rand(n, 1, generator=g, dtype=F64) ** 0.3
    v[:, 0] += 0.5 * spread
    return geom.expmap0(v / (2 if isinstance(geom, PoincareBall) else 1))  # same geodesic spread in both


def brute_force_mean(geom, x: torch.Tensor) -> torch.Tensor:
    def f(u):
        ut = torch.tensor(u, dtype=F64, requires_grad=True)
        val = (geom.dist(geom.expmap0(ut).expand_as(x), x) ** 2).sum()
        (grad,) = torch.autograd.grad(val, ut)
        return float(val.detach()), grad.numpy()

    u0 = np.zeros(x.shape[1] - (geom.point_dim(1) - 1))
    res = scipy.optimize.minimize(f, u0, jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 5000})
    return geom.expmap0(torch.tensor(res.x, dtype=F64))


def main() -> None:
    print("| geometry | spread (geodesic radius) | " + " | ".join(f"{k} steps" for k in STEPS) + " |")
    print("|---|---:|" + "---:|" * len(STEPS))
    for geom in (PoincareBall(1.0), Lorentz(1.0)):
        for spread in (1.0, 3.0, 5.0):
            errs = []
            for seed in range(3):
                x = spread_points(geom, spread, seed)
                ref = brute_force_mean(geom, x)
                errs.append([float(geom.dist(geom.mean(x, steps=k)[None], ref[None])[0]) for k in STEPS])
            worst = np.max(np.array(errs), axis=0)
            print(f"| {geom!r} | {spread:g} | " + " | ".join(f"{e:.1e}" for e in worst) + " |")


if __name__ == "__main__":
    main()
