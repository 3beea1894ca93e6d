"""The sweep behind the hyperbolic head's defaults (docs/hyperbolic-fidelity.md).

Runs Poincaré SupCon and HWC+LAM on a preset for each head setting (the 0.1 head, HyILR's
1/sqrt(d) and three initial scales of the learned scale) through
:func:`hierviz.experiments.sweep`, and prints one Markdown table: metrics (mean ± std over
seeds) beside the radius diagnostics of the test embeddings (norm std, geodesic radius, clip
fraction, learned scale, prototype radius by depth).

    python docs/scripts/head_sweep.py --preset quick --out runs/head-sweep
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hierviz.experiments import resolve_config, sweep

VARIANTS = {
    "0.1 head (scale 1 fixed, clip 2)": ["model.learn_scale=false", "model.scale_init=1.0", "model.clip_r=2.0"],
    "learned scale, init 1/sqrt(d)": ["model.scale_init=0.1768"],  # d = 32 in quick/medium
    "learned scale, init 1 (default)": ["model.scale_init=1.0"],
    "learned scale, init 1.4": ["model.scale_init=1.4"],
    "learned scale, init 2": ["model.scale_init=2.0"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--out", default="runs/head-sweep")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--variants", default=None, help="comma-separated subset of the variant labels' indices")
    args = ap.parse_args()
    base = resolve_config(
        args.preset,
        ['geometries=["poincare"]', 'methods=["supcon","hwc+lam"]', f"seeds={args.seeds}", f"out={args.out}"],
    )
    chosen = VARIANTS
    if args.variants:
        keep = [int(i) for i in args.variants.split(",")]
        chosen = {k: v for i, (k, v) in enumerate(VARIANTS.items()) if i in keep}
    _, results = sweep(base, grid={}, variants=chosen, progress=False, verbose=False)
    print(
        "| Head | Method | Top-1 | Violations ↓ | norm std | d(0, z) | clip fraction | learned scale | prototype d(0, ·) by depth |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for (label,), res in results.items():
        for method in ("supcon", "hwc+lam"):
            recs = [r for r in res.records if r["method"] == method]
            top1 = [r["metrics"]["top1"] for r in recs]
            viol = [r["metrics"]["violations"] for r in recs]
            nstd, rad, clip, scale, protos = [], [], [], [], []
            for r in recs:
                with np.load(r["embeddings"]) as f:
                    nstd.append(float(np.linalg.norm(f["z_test"], axis=1).std()))
                rr = r["radius"]
                rad.append(rr["radius_mean"])
                clip.append(rr["clip_fraction"])
                scale.append(rr["scale"])
                protos.append([row["proto_mean"] for row in rr["radius_by_depth"]])
            pm = np.mean(np.array(protos, dtype=float), axis=0)

            def ms(v):
                return f"{np.mean(v):.3f} ± {np.std(v, ddof=1) if len(v) > 1 else 0:.3f}"

            print(
                f"| {label} | {recs[0]['method_display']} | {ms(top1)} | {ms(viol)} | "
                f"{min(nstd):.3f}–{max(nstd):.3f} | {np.mean(rad):.2f} | {np.mean(clip):.2f} | "
                f"{np.mean(scale):.2f} | {' → '.join(f'{p:.2f}' for p in pm)} |"
            )
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "sweep.json").write_text(json.dumps({"preset": args.preset, "variants": chosen}, indent=1))


if __name__ == "__main__":
    main()
