"""Do the 0.4 hyperbolic defaults make the HAM10000 quick preset worse? Paired over 5 seeds.

``hierviz compare --preset quick-ham10000 --geometry poincare`` (the 0.3 main job: the bundled
2,003-image HAM10000 sample, small CNN, 3 epochs; SupCon, HWC, HWC+LAM; seeds 0-4) twice: with
0.3's depth terms (entailment cones 0.2, centring 1.0, nothing else) and with the library's
0.4 defaults. Euclidean runs read no depth term, so they are the same in both and left out.

    python3 docs/results/radius-20news/ham_check.py run WORK   # both, into WORK/{old,new}; then tables
    python3 docs/results/radius-20news/ham_check.py tables [--check]

writes ``ham10000-old.csv``, ``ham10000-new.csv`` and ``ham10000-check.md`` (paired 95 % CIs,
new − old, per method) beside this file.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OLD = ["loss.cone_weight=0.2", "loss.center_weight=1", "loss.order_weight=0", "loss.cpcc_weight=0", "loss.depth_weight=0"]
COMMAND = ["compare", "--preset", "quick-ham10000", "--geometry", "poincare", "--seeds", "5"]
KEYS = [("hf1", "HF1"), ("top1", "Top-1"), ("violations", "Violations ↓"), ("macro_f1", "Macro-F1"),
        ("radius_depth_spearman", "Spearman"), ("edge_order", "Edge order"), ("radius_gap", "Radius gap")]  # fmt: skip
NAMES = {"supcon": "SupCon", "hwc": "HWC", "hwc+lam": "HWC+LAM"}


def run(work: Path) -> None:
    for tag, extra in (("old", OLD), ("new", [])):
        cmd = [sys.executable, "-m", "hierviz", *COMMAND, "--out", str(work / tag), "--quiet", "--resume"]
        for o in extra:
            cmd += ["--set", o]
        subprocess.run(cmd, check=True)
        shutil.copy(work / tag / "results.csv", HERE / f"ham10000-{tag}.csv")
    tables(check=False)


def _rows(tag: str) -> dict[tuple[str, int], dict[str, str]]:
    with (HERE / f"ham10000-{tag}.csv").open(newline="") as fh:
        return {(r["method"], int(r["seed"])): r for r in csv.DictReader(fh)}


def make_markdown() -> str:
    from hierviz.report.stats import paired_ci

    old, new = _rows("old"), _rows("new")
    out = [
        "# The 0.4 hyperbolic defaults on the HAM10000 quick preset (paired, 5 seeds)",
        "",
        f"`hierviz {' '.join(COMMAND)}`, once with 0.3's depth terms (`--set "
        + " --set ".join(OLD)
        + "`, `ham10000-old.csv`) and once with the 0.4 defaults (`ham10000-new.csv`); "
        "made by `ham_check.py`. Cells: new − old, mean over seeds and paired 95 % CI (points for HF1, top-1, "
        "violations and Macro-F1; raw for the radius metrics).",
        "",
        "| Method | " + " | ".join(lbl for _, lbl in KEYS) + " |",
        "|---|" + "---|" * len(KEYS),
    ]
    for m in NAMES:
        seeds = sorted(s for (mm, s) in new if mm == m and (m, s) in old)
        if len(seeds) < 2:
            continue
        cells = []
        for k, _ in KEYS:
            scale = 1.0 if k.startswith("radius") or k == "edge_order" else 100.0
            a = [float(new[(m, s)][k]) * scale for s in seeds]
            b = [float(old[(m, s)][k]) * scale for s in seeds]
            mean, lo, hi, _ = paired_ci(a, b)
            cells.append(f"{mean:+.2f} [{lo:+.2f}, {hi:+.2f}]" if scale == 100 else f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        out.append(f"| {NAMES[m]} | " + " | ".join(cells) + " |")
    out += ["", "An interval that excludes 0 is a change the 5 seeds resolve; violations: lower is better.", ""]
    return "\n".join(out)


def tables(check: bool) -> int:
    text, path = make_markdown(), HERE / "ham10000-check.md"
    if check:
        ok = path.exists() and path.read_text() == text
        if not ok:
            print(f"{path} is not what ham_check.py tables makes from the CSVs", file=sys.stderr)
        return 0 if ok else 1
    path.write_text(text)
    print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("run").add_argument("work", type=Path)
    sub.add_parser("tables").add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.work)
        return 0
    return tables(a.check)


if __name__ == "__main__":
    sys.exit(main())
