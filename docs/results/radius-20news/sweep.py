"""The documented sweep behind the hyperbolic defaults: 20 Newsgroups, scored on the validation split.

Each setting is one ``hierviz compare`` call (SupCon and HWC+LAM on the Poincaré ball, seed 0, the
``quick`` preset's 20news regime) with ``--set eval.split=val``: the settings are chosen on the 10 %
of bydate-train held out for validation, never on the test split the study reports. One row per run
goes to ``sweep.csv`` (the setting's label, its overrides, the five radius metrics, HF1 and top-1).

Run from the repository root (``python3 docs/results/radius-20news/sweep.py [--only LABEL ...]``);
rows already in ``sweep.csv`` are kept, so an interrupted sweep resumes.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: label -> overrides on top of the base regime; "base" is the regime with the depth terms off.
OFF = ["loss.cone_weight=0", "loss.center_weight=0", "loss.order_weight=0", "loss.depth_weight=0", "loss.cpcc_weight=0"]
SETTINGS: dict[str, list[str]] = {
    "off": OFF,
    "cone+centre (0.3 presets)": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1"],
    "cone+centre+order m0.3": [
        *OFF,
        "loss.cone_weight=0.2",
        "loss.center_weight=1",
        "loss.order_weight=1",
        "loss.order_margin=0.3",
    ],
    "cone+centre+cpcc 1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "loss.cpcc_weight=1"],
    "cone+centre+depth 0.1 l1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "loss.depth_weight=0.1"],
    "cone+centre+depth 1 l1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "loss.depth_weight=1"],
    "cone+centre+depth 1 l0.75": [
        *OFF,
        "loss.cone_weight=0.2",
        "loss.center_weight=1",
        "loss.depth_weight=1",
        "loss.depth_step=0.75",
    ],
    "cone+centre+depth 1 l1.5": [
        *OFF,
        "loss.cone_weight=0.2",
        "loss.center_weight=1",
        "loss.depth_weight=1",
        "loss.depth_step=1.5",
    ],
    "centre+depth 1 l1": [*OFF, "loss.center_weight=1", "loss.depth_weight=1"],
    # a larger radius: SupCon's classes spread by angle, so at radius ~3 a parent's Fréchet mean falls inward
    "R3 fixed, cone+centre": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "model.init_radius=3",
                              "model.learn_scale=false"],
    "R3 fixed, cone+centre+cpcc 1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "loss.cpcc_weight=1",
                                     "model.init_radius=3", "model.learn_scale=false"],
    "R3 fixed, centre+cpcc 1": [*OFF, "loss.center_weight=1", "loss.cpcc_weight=1", "model.init_radius=3",
                                "model.learn_scale=false"],
    "R3 fixed, tau 0.3, cone+centre": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "model.init_radius=3",
                                       "model.learn_scale=false", "loss.tau=0.3"],
    "tau 0.5, cone+centre+cpcc 1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "loss.cpcc_weight=1",
                                    "loss.tau=0.5"],
    "R3 fixed, tau 0.5, cone+centre+cpcc 1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1",
                                              "loss.cpcc_weight=1", "model.init_radius=3", "model.learn_scale=false",
                                              "loss.tau=0.5"],
    "tau 1, cone+centre+cpcc 1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "loss.cpcc_weight=1",
                                  "loss.tau=1"],
    "tau 2, cone+centre+cpcc 1": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "loss.cpcc_weight=1",
                                  "loss.tau=2"],
    "tau 0.5, centre+cpcc 1": [*OFF, "loss.center_weight=1", "loss.cpcc_weight=1", "loss.tau=0.5"],
    "R3, cone+centre+order m0.5": [*OFF, "loss.cone_weight=0.2", "loss.center_weight=1", "model.init_radius=3",
                                   "loss.order_weight=1", "loss.order_margin=0.5"],
}

BASE = ["--preset", "quick", "--seeds", "1", "--set", "eval.split=val", "--quiet"]
FIELDS = [
    "label",
    "overrides",
    "method",
    "geometry",
    "seed",
    "hf1",
    "top1",
    "violations",
    "radius_mean",
    "radius_std",
    "clip_fraction",
    "radius_depth_spearman",
    "edge_order",
    "radius_gap",
    "norm_auroc",
    "train_seconds",
]


def run(label: str, overrides: list[str], methods: str, geometry: str, out: Path) -> list[dict]:
    cmd = [
        sys.executable,
        "-m",
        "hierviz",
        "compare",
        *BASE,
        "--methods",
        methods,
        "--geometry",
        geometry,
        "--out",
        str(out),
    ]
    for o in overrides:
        cmd += ["--set", o]
    subprocess.run(cmd, check=True)
    rows = []
    for res in sorted((out / "runs").glob("*/result.json")):
        r = json.loads(res.read_text())
        m, rad = r["metrics"], r.get("radius") or {}
        rows.append(
            {
                "label": label,
                "overrides": " ".join(overrides),
                "method": r["method"],
                "geometry": r["geometry"],
                "seed": r["seed"],
                "hf1": m["hf1"],
                "top1": m["top1"],
                "violations": m["violations"],
                **{k: rad.get(k) for k in FIELDS[8:15]},
                "train_seconds": r["train_seconds"],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="labels to run (default: all not yet in sweep.csv)")
    ap.add_argument("--methods", default="supcon,hwc+lam")
    ap.add_argument("--geometry", default="poincare")
    ap.add_argument("--csv", type=Path, default=HERE / "sweep.csv")
    args = ap.parse_args(argv)
    done = set()
    if args.csv.exists():
        with args.csv.open() as f:
            done = {(r["label"], r["method"], r["geometry"]) for r in csv.DictReader(f)}
    for label, overrides in SETTINGS.items():
        if args.only and label not in args.only:
            continue
        if all((label, m, g) in done for m in args.methods.split(",") for g in args.geometry.split(",")):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            rows = run(label, overrides, args.methods, args.geometry, Path(tmp) / "out")
        new = not args.csv.exists()
        with args.csv.open("a", newline="") as f:
            w = csv.DictWriter(f, FIELDS)
            if new:
                w.writeheader()
            w.writerows(rows)
        for r in rows:
            print(
                label,
                r["method"],
                r["geometry"],
                {
                    k: round(r[k], 3) if isinstance(r[k], float) else r[k]
                    for k in ("hf1", "top1", "radius_depth_spearman", "edge_order", "radius_gap", "clip_fraction")
                },
                flush=True,
            )


if __name__ == "__main__":
    main()
