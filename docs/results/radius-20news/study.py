"""The 20 Newsgroups radius study: the label tree in the radius, measured over 5 seeds.

SupCon, HWC and HWC+LAM (paper 01) x Euclidean, Poincaré ball and Lorentz hyperboloid x seeds
0-4, on the official bydate split of 20 Newsgroups (11,314 training messages, 10 % of them held
out for validation; 7,532 test messages), TF-IDF vectors and a two-layer MLP: the README's
``hierviz compare --preset quick`` regime with the library's default depth terms. Every number
is on the test split; the defaults were chosen on the validation split (``sweep.py``).

Three steps, each re-makes files in this folder:

``python3 docs/results/radius-20news/study.py run WORK``
    ``hierviz compare`` into the work folder ``WORK`` (45 runs; about 25 min on one core of this
    project's 2-core CPU; ``--resume`` continues an interrupted study), then ``collect``.
``python3 docs/results/radius-20news/study.py collect WORK``
    From a finished ``WORK``: ``results.csv``, ``baselines.csv``, ``config.json`` (no machine
    paths), ``prototypes.csv`` (every hyperbolic run's node prototype radii on the test split),
    ``embeddings/`` (seed 0's test embeddings of the hyperbolic runs, float16, for the
    figures), then ``tables``.
``python3 docs/results/radius-20news/study.py tables``
    ``results.md`` from the committed CSVs alone: the table with its Majority row, the radius
    metrics, the targets, paired 95 % CIs against Euclidean (same method and seed) and paper 01's
    claims (HWC and HWC+LAM against SupCon). ``--check`` fails when ``results.md`` differs.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
METHODS = ["supcon", "hwc", "hwc+lam"]
GEOMETRIES = ["euclidean", "poincare", "lorentz"]
HYPERBOLIC = ["poincare", "lorentz"]
SEEDS = 5
NAMES = {"supcon": "SupCon", "hwc": "HWC", "hwc+lam": "HWC+LAM", "euclidean": "Euclidean",
         "poincare": "Poincaré", "lorentz": "Lorentz"}  # fmt: skip
ACCURACY = [("hf1", "HF1"), ("top1", "Top-1"), ("bal_acc", "Bal-Acc"), ("macro_f1", "Macro-F1"),
            ("violations", "Violations ↓")]  # fmt: skip
RADIUS = [("radius_depth_spearman", "Spearman"), ("edge_order", "Edge order"), ("radius_gap", "Radius gap"),
          ("clip_fraction", "Clip fraction"), ("norm_auroc", "Norm AUROC"), ("radius_mean", "d(0, z)")]  # fmt: skip
COMMAND = [
    "compare", "--preset", "quick", "--geometry", ",".join(GEOMETRIES), "--seeds", str(SEEDS),
]  # fmt: skip


def run(work: Path, resume: bool) -> None:
    cmd = [sys.executable, "-m", "hierviz", *COMMAND, "--out", str(work), "--quiet"]
    subprocess.run(cmd + (["--resume"] if resume else []), check=True)
    collect(work)


def collect(work: Path) -> None:
    import torch

    from hierviz.data.trees import load_tree
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.metrics.radius import node_prototype_radii

    shutil.copy(work / "results.csv", HERE / "results.csv")
    shutil.copy(work / "baselines.csv", HERE / "baselines.csv")
    cfg = json.loads((work / "config.json").read_text())
    cfg["out"] = "runs/radius-20news"  # the folder name, not this machine's path
    (HERE / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    tree = LabelTree.from_dict(json.loads((work / "tree.json").read_text())) if (work / "tree.json").exists() else None
    tree = tree or load_tree("20news")
    (HERE / "embeddings").mkdir(exist_ok=True)
    rows = []
    for res in sorted((work / "runs").glob("*/result.json")):
        r = json.loads(res.read_text())
        if r["geometry"] not in HYPERBOLIC:
            continue
        f = np.load(res.parent / "embeddings.npz")
        geo = get_geometry(**r["geometry_config"])
        out = node_prototype_radii(torch.as_tensor(f["z_test"], dtype=torch.float64), f["y_test"], tree, geo)
        for i, n in enumerate(out["node"]):
            p = int(out["parent"][i])
            rows.append({"method": r["method"], "geometry": r["geometry"], "seed": r["seed"],
                         "node": tree.nodes[int(n)], "depth": int(out["depth"][i]),
                         "parent": tree.nodes[int(out["node"][p])] if p >= 0 else "",
                         "is_leaf": bool(out["is_leaf"][i]), "radius": round(float(out["radius"][i]), 6)})  # fmt: skip
        if r["seed"] == 0:
            np.savez_compressed(
                HERE / "embeddings" / f"{r['method'].replace('+', '_')}-{r['geometry']}-s0.npz",
                z_test=f["z_test"].astype(np.float16),
                y_test=f["y_test"].astype(np.int16),
                c=np.float64(r["geometry_config"].get("c", 1.0)),
            )
    with (HERE / "prototypes.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    tables(check=False)


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _num(v: str | None) -> float:
    return float(v) if v not in (None, "") else math.nan


def _ms(vals: list[float], digits: int = 3) -> str:
    v = [x for x in vals if math.isfinite(x)]
    if not v:
        return "–"
    sd = float(np.std(v, ddof=1)) if len(v) > 1 else 0.0
    return f"{np.mean(v):.{digits}f} ± {sd:.{digits}f}"


def _ci(a: list[float], b: list[float], scale: float = 100.0) -> tuple[str, float, float, float]:
    from hierviz.report.stats import paired_ci

    mean, lo, hi, _ = paired_ci([x * scale for x in a], [x * scale for x in b])
    return f"{mean:+.2f} [{lo:+.2f}, {hi:+.2f}]", mean, lo, hi


def _yes(ok: bool) -> str:
    return "**yes**" if ok else "no"


def make_markdown() -> str:
    rows = _read(HERE / "results.csv")
    base = _read(HERE / "baselines.csv")
    cfg = json.loads((HERE / "config.json").read_text())
    by: dict[tuple[str, str], dict[int, dict[str, str]]] = defaultdict(dict)
    for r in rows:
        by[(r["method"], r["geometry"])][int(r["seed"])] = r
    seeds = sorted({int(r["seed"]) for r in rows})

    def col(m: str, g: str, key: str) -> list[float]:
        return [_num(by[(m, g)][s].get(key)) for s in seeds]

    out = [
        "# The label tree in the radius: 20 Newsgroups, 5 seeds",
        "",
        "Made by `python3 docs/results/radius-20news/study.py run WORK` (the runs: `hierviz "
        + " ".join(COMMAND)
        + "`), tables by `study.py tables` from the CSVs in this folder. "
        f"Data: 20 Newsgroups bydate, official split ({cfg['data']['split']}), TF-IDF "
        f"(2,000 terms), MLP encoder (hidden {8 * cfg['model']['width']}, embedding {cfg['model']['embed_dim']}), "
        f"{cfg['train']['epochs']} epochs, batch {cfg['train']['batch_size']}, lr {cfg['train']['lr_backbone']:g}; "
        f"seeds {seeds[0]}–{seeds[-1]}; every number on the 7,532 test messages. Hyperbolic runs use the "
        "library's default depth terms, chosen on the validation split (`sweep.py`, `sweep.csv`): "
        + ", ".join(f"{k} {v:g}" for k, v in cfg["loss"].items() if k in _DEPTH_KEYS)
        + ".",
        "",
        "## Accuracy (mean ± sample std over seeds)",
        "",
        "| Method | Geometry | " + " | ".join(lbl for _, lbl in ACCURACY) + " | Train s / run |",
        "|---|---|" + "---:|" * (len(ACCURACY) + 1),
    ]
    for m in METHODS:
        for g in GEOMETRIES:
            if (m, g) not in by:
                continue
            cells = [_ms(col(m, g, k)) for k, _ in ACCURACY]
            out.append(
                f"| {NAMES[m]} | {NAMES[g]} | " + " | ".join(cells) + f" | {_ms(col(m, g, 'train_seconds'), 1)} |"
            )
    maj = next(
        (b for b in base if "ajority" in b.get("baseline", "") or b.get("method", "").startswith("maj")), base[0]
    )
    out.append(
        "| *Majority class* | – | "
        + " | ".join(f"{_num(maj.get(k)):.3f}" if math.isfinite(_num(maj.get(k))) else "–" for k, _ in ACCURACY)
        + " | – |"
    )
    out += [
        "",
        "*Majority class*: the training split's most frequent leaf for every test message "
        "(`baselines.csv`); Violations need embeddings (–).",
        "",
        "## The radius (hyperbolic runs; prototypes are test-split Fréchet means, chains contracted)",
        "",
        "| Method | Geometry | " + " | ".join(lbl for _, lbl in RADIUS) + " |",
        "|---|---|" + "---:|" * len(RADIUS),
    ]
    for m in METHODS:
        for g in HYPERBOLIC:
            if (m, g) in by:
                out.append(f"| {NAMES[m]} | {NAMES[g]} | " + " | ".join(_ms(col(m, g, k)) for k, _ in RADIUS) + " |")
    out += [
        "",
        "## Targets (SupCon and HWC+LAM on both hyperbolic geometries; HWC reported)",
        "",
        "Spearman: mean ≥ 0.9 and ≥ 0.8 in every seed; edge order: mean ≥ 0.95 and ≥ 0.9 in every seed; "
        "radius gap ≥ 1.0 (geodesic units, every seed); clip fraction 0; HF1 and top-1: the paired 95 % CI "
        "against Euclidean (same method, seed) has its lower end ≥ −0.5 points.",
        "",
        "| Method | Geometry | Spearman (min) | Edge order (min) | Gap (min) | Clip (max) | Δ HF1 vs Euclidean (points) "
        "| Δ top-1 vs Euclidean (points) | All met |",
        "|---|---|---:|---:|---:|---:|---|---|---|",
    ]
    for m in METHODS:
        for g in HYPERBOLIC:
            if (m, g) not in by or (m, "euclidean") not in by:
                continue
            sp, eo, gap, clip = (
                col(m, g, k) for k in ("radius_depth_spearman", "edge_order", "radius_gap", "clip_fraction")
            )
            hf, hf_lo = _ci(col(m, g, "hf1"), col(m, "euclidean", "hf1"))[0::2]
            t1, t1_lo = _ci(col(m, g, "top1"), col(m, "euclidean", "top1"))[0::2]
            ok = (
                np.mean(sp) >= 0.9 and min(sp) >= 0.8 and np.mean(eo) >= 0.95 and min(eo) >= 0.9
                and min(gap) >= 1.0 and max(clip) == 0.0 and hf_lo >= -0.5 and t1_lo >= -0.5
            )  # fmt: skip
            out.append(
                f"| {NAMES[m]} | {NAMES[g]} | {np.mean(sp):.3f} ({min(sp):.3f}) | {np.mean(eo):.3f} ({min(eo):.3f}) "
                f"| {np.mean(gap):.2f} ({min(gap):.2f}) | {max(clip):.3f} | {hf} | {t1} | {_yes(bool(ok))} |"
            )
    out += [
        "",
        "## Paper 01's claims on text (paired by seed, 95 % CI, points)",
        "",
        "| Claim | Geometry | Δ HF1 | Δ Violations (↓ better) | Holds here |",
        "|---|---|---|---|---|",
    ]
    for m in ("hwc", "hwc+lam"):
        for g in GEOMETRIES:
            if (m, g) not in by or ("supcon", g) not in by:
                continue
            hf, _, lo, _ = _ci(col(m, g, "hf1"), col("supcon", g, "hf1"))
            vi, _, _, vhi = _ci(col(m, g, "violations"), col("supcon", g, "violations"))
            out.append(f"| {NAMES[m]} > SupCon | {NAMES[g]} | {hf} | {vi} | {_yes(lo > 0 and vhi < 0)} |")
    for m in METHODS:
        for g in HYPERBOLIC:
            if (m, g) not in by or (m, "euclidean") not in by:
                continue
            hf, _, lo, _ = _ci(col(m, g, "hf1"), col(m, "euclidean", "hf1"))
            vi, _, _, vhi = _ci(col(m, g, "violations"), col(m, "euclidean", "violations"))
            out.append(
                f"| {NAMES[g]} > Euclidean ({NAMES[m]}) | {NAMES[g]} | {hf} | {vi} | {_yes(lo > 0 and vhi < 0)} |"
            )
    out += [
        "",
        '"Holds here": the HF1 interval lies above 0 and the violations interval below 0.',
        "",
    ]
    return "\n".join(out)


_DEPTH_KEYS = ("cone_weight", "center_weight", "order_weight", "cpcc_weight", "depth_weight", "depth_step")


def tables(check: bool) -> int:
    text = make_markdown()
    path = HERE / "results.md"
    if check:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is not what study.py tables makes from the CSVs; run it without --check", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("work", type=Path)
    p.add_argument("--resume", action="store_true")
    sub.add_parser("collect").add_argument("work", type=Path)
    sub.add_parser("tables").add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.work, a.resume)
    elif a.cmd == "collect":
        collect(a.work)
    else:
        return tables(a.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
