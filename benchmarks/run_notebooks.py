"""Run the course notebooks headless with papermill and record wall time and peak memory.

Every notebook (or those named) is executed in its own runner subprocess with the given
parameters (default ``SMOKE=False``: full size), one after the other. Per notebook it
records the wall time, the kernel's peak resident memory (``RUSAGE_CHILDREN`` of the
runner, whose child is the kernel) and the CUDA peak (``torch.cuda.max_memory_allocated``,
read by a cell appended to the executed copy only), and writes a row to
``benchmarks/results/notebooks_<device>.csv``. A failing notebook is recorded with its
error and the run goes on. Executed copies go to ``--out`` (default ``notebooks/runs/``,
ignored by git); the course notebooks themselves are never modified.

Usage (from the repository root)::

    python3 benchmarks/run_notebooks.py                           # every notebook, SMOKE=False
    python3 benchmarks/run_notebooks.py 00 03 -p SMOKE=True       # two notebooks, smoke size
    python3 benchmarks/run_notebooks.py --timeout 3600 -p SMOKE=False   # on a GPU machine

``-p KEY=VALUE`` values are parsed as Python literals (``True``, ``3``, ``'cuda'``) and
fall back to strings.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
RESULTS = Path(__file__).resolve().parent / "results"
MARK = "HIERVIZ_NOTEBOOK_PEAK "
FIELDS = [
    "notebook",
    "parameters",
    "status",
    "wall_s",
    "kernel_peak_rss_mib",
    "cuda_peak_mib",
    "device",
    "torch",
    "host",
    "error",
]

_RUNNER = textwrap.dedent(
    """
    import json, resource, sys, time
    import nbformat, papermill as pm
    src, dst, params, timeout, mark = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    nb = nbformat.read(src, as_version=4)
    probe = ("import json as _j\\n"
             "try:\\n    import torch as _t\\n"
             "    _p = _t.cuda.max_memory_allocated() / 2**20 if _t.cuda.is_available() else None\\n"
             "    _d = _t.cuda.get_device_name() if _t.cuda.is_available() else 'cpu'\\n"
             "except Exception:\\n    _p, _d = None, 'cpu'\\n"
             f"print({mark!r} + _j.dumps({{'cuda_peak_mib': _p, 'device': _d}}))")
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    tmp = dst + ".in.ipynb"
    nbformat.write(nb, tmp)
    t0 = time.perf_counter()
    err = ""
    try:
        pm.execute_notebook(tmp, dst, parameters=params, kernel_name="python3", progress_bar=False,
                            cwd=str(__import__("pathlib").Path(src).parent),
                            execution_timeout=timeout if timeout > 0 else None)
    except Exception as exc:  # recorded, not raised: the next notebook still runs
        err = (type(exc).__name__ + ": " + str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__)[:300]
    wall = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    extra = {}
    try:
        for cell in nbformat.read(dst, as_version=4).cells:
            for out in cell.get("outputs", []):
                text = out.get("text", "")
                if mark in text:
                    extra = json.loads(text.split(mark, 1)[1].splitlines()[0])
    except Exception:
        pass
    __import__("os").remove(tmp)
    print(json.dumps({"wall_s": wall, "kernel_peak_rss_mib": peak_kib / 1024, "error": err, **extra}))
    """
)


def _parse_param(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise SystemExit(f"-p {text}: expected KEY=VALUE, e.g. -p SMOKE=False")
    k, v = text.split("=", 1)
    try:
        return k.strip(), ast.literal_eval(v)
    except (ValueError, SyntaxError):
        return k.strip(), v


def select(names: list[str]) -> list[Path]:
    """Notebooks whose file name starts with one of ``names`` (all numbered notebooks when empty)."""
    all_nb = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return all_nb
    chosen = [p for p in all_nb if any(p.name.startswith(n) or p.stem == n for n in names)]
    missing = [n for n in names if not any(p.name.startswith(n) or p.stem == n for p in all_nb)]
    if missing:
        raise SystemExit(f"no notebook matches {missing}; have: {', '.join(p.stem for p in all_nb)}")
    return chosen


def run_one(nb: Path, params: dict, out_dir: Path, timeout: float) -> dict:
    """Execute one notebook in a runner subprocess; return its CSV row."""
    out_dir.mkdir(parents=True, exist_ok=True)
    dst = out_dir / nb.name
    cmd = [sys.executable, "-c", _RUNNER, str(nb), str(dst), json.dumps(params), str(timeout), MARK]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT))
    info: dict = {}
    for line in reversed(proc.stdout.strip().splitlines()):
        try:
            info = json.loads(line)
            break
        except json.JSONDecodeError:
            continue
    if not info:  # the runner itself died
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        info = {"wall_s": time.perf_counter() - t0, "error": f"runner failed (rc {proc.returncode}): {tail}"[:300]}
    import torch

    return {
        "notebook": nb.stem,
        "parameters": json.dumps(params, sort_keys=True),
        "status": "error" if info.get("error") else "ok",
        "wall_s": round(float(info.get("wall_s", float("nan"))), 2),
        "kernel_peak_rss_mib": round(float(info.get("kernel_peak_rss_mib", float("nan"))), 1),
        "cuda_peak_mib": "" if info.get("cuda_peak_mib") is None else round(float(info["cuda_peak_mib"]), 1),
        "device": info.get("device", "cpu"),
        "torch": torch.__version__,
        "host": f"{platform.machine()} {os.cpu_count()} cpus",
        "error": info.get("error", ""),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="name prefixes (e.g. 00 03_hwc); default: all")
    ap.add_argument("-p", "--param", action="append", default=[], help="KEY=VALUE (default SMOKE=False)")
    ap.add_argument("--out", default=str(NB_DIR / "runs"), help="folder for the executed copies")
    ap.add_argument("--csv", default=None, help="default benchmarks/results/notebooks_<device>.csv")
    ap.add_argument("--timeout", type=float, default=0, help="per-cell timeout in seconds (0 = none)")
    a = ap.parse_args(argv)
    params = dict(_parse_param(p) for p in a.param) or {"SMOKE": False}
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    csv_path = Path(a.csv) if a.csv else RESULTS / f"notebooks_{device}.csv"
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    from tqdm.auto import tqdm

    for nb in tqdm(select(a.notebooks), desc="notebooks", unit="nb"):
        row = run_one(nb, params, Path(a.out), a.timeout)
        rows.append(row)
        tqdm.write(
            f"{row['notebook']:<28} {row['status']:<6} {row['wall_s']:>9.1f} s  rss {row['kernel_peak_rss_mib']:>8.1f} MiB"
            f"  cuda {row['cuda_peak_mib'] or '-'} MiB  {row['error']}"
        )
        new = not csv_path.exists()
        with open(csv_path, "a", newline="") as fh:  # a row per notebook as soon as it is done
            w = csv.DictWriter(fh, fieldnames=FIELDS)
            if new:
                w.writeheader()
            w.writerow(row)
    print(f"wrote {len(rows)} rows to {csv_path}")
    return rows


if __name__ == "__main__":
    main()
