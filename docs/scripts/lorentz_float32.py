"""Lorentz in float32 far from the origin: distance and mean errors against float64.

Close pairs (directions 2e-3 apart) at distance R from the origin; float32 coordinates from
``expmap0``; relative error of ``dist``/``pairwise_dist`` and the geodesic error of a 10-step
mean, each against the same computation on float64 inputs (docs/hyperbolic-fidelity.md).

    python docs/scripts/lorentz_float32.py
"""

from __future__ import annotations

import torch

from hierviz.geometry import Lorentz


def main() -> None:
    g = Lorentz(1.0)
    gen = torch.Generator().manual_seed(0)
    print("| R | dist, max rel. error | pairwise_dist, max rel. error | mean, geodesic error |")
    print("|---:|---:|---:|---:|")
    for R in (2.0, 5.0, 8.0, 12.0, 20.0):
        u = torch.nn.functional.normalize(torch.randn(200, 8, generator=gen, dtype=torch.float64), dim=1)
        w = torch.nn.functional.normalize(u + 2e-3 * torch.randn(200, 8, generator=gen, dtype=torch.float64), dim=1)
        ref = g.dist(g.expmap0(R * u), g.expmap0(R * w))
        x32, y32 = g.expmap0((R * u).float()), g.expmap0((R * w).float())
        e1 = float(((g.dist(x32, y32).double() - ref).abs() / ref).max())
        e2 = float(((g.pairwise_dist(x32, y32).diagonal().double() - ref).abs() / ref).max())
        m32 = g.mean(x32[:50], steps=10).double()
        m64 = g.mean(g.expmap0(R * u)[:50], steps=10)
        em = float(g.dist(m32[None], m64[None])[0])
        print(f"| {R:g} | {e1:.1e} | {e2:.1e} | {em:.1e} |")


if __name__ == "__main__":
    main()
