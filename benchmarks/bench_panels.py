"""Kernel-side redraw time of every course panel: figure function, bundle, whole callback.

Each widget notebook (or those named) is executed at SMOKE size in a fresh kernel (nbclient); a
cell appended to the executed copy then finds every ``hierviz.viz.widgets.Panel`` the notebook
made and moves each of its controls one step, as the browser test does (a slider one step
right, or left at its maximum; a dropdown to its next option), and back, ``--repeat`` times.
Per move it times

- ``figure_ms``: the panel's figure function at the new values,
- ``bundle_ms``: :func:`hierviz.viz.widgets.figure_bundle` of that figure (plotly JSON),
- ``callback_ms``: setting the control's ``value`` (what a slider release does in the kernel:
  observer, figure function, bundle, the Output's state message to the front end),

and prints the median per control (the browser test's "kernel ms" adds the websocket and the
front end's message handling to ``callback_ms``). Nothing is written unless ``--json`` is given.

Usage (from the repository root)::

    PYTHONPATH=$PWD python3 benchmarks/bench_panels.py            # every widget notebook
    PYTHONPATH=$PWD python3 benchmarks/bench_panels.py 01 04 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
MARK = "HIERVIZ_PANEL_TIMES "

_PROBE = """
import gc as _gc, json as _json, statistics as _st, time as _time
from hierviz.viz.widgets.panel import Panel as _Panel, figure_bundle as _bundle

def _step(w, back=False):
    opts = getattr(w, "options", None)
    if opts is not None and not hasattr(w, "step"):
        return (w.index + (-1 if back else 1)) % len(opts), "dropdown"
    if hasattr(w, "base"):  # FloatLogSlider: value = base ** exponent
        import math
        e = math.log(w.value, w.base)
        up = e + w.step <= w.max + 1e-9
        return w.base ** (e + (w.step if up != back else -w.step)), "log slider"
    up = w.value + w.step <= w.max + 1e-9
    return w.value + (w.step if up != back else -w.step), "slider"

def _set(w, v, kind):
    if kind == "dropdown":
        w.index = v
    else:
        w.value = v

_rows = []
_panels = sorted((o for o in _gc.get_objects() if isinstance(o, _Panel)), key=lambda p: p.model_id)
for _pi, _p in enumerate(_panels):
    for _ci, (_name, _w) in enumerate(_p.controls.items()):
        _fig, _bun, _cb = [], [], []
        start = _w.index if hasattr(_w, "index") and not hasattr(_w, "step") else _w.value
        for _r in range(REPEAT):
            for _back in (False, True):
                _v, _kind = _step(_w, back=False) if not _back else (start, _kind)
                vals = _p.values()
                _t0 = _time.perf_counter()
                _set(_w, _v, _kind)
                _t1 = _time.perf_counter()
                _cb.append(1e3 * (_t1 - _t0))
                if not _back:
                    vals = _p.values()
                    _t0 = _time.perf_counter(); _f = _p._figure_fn(**vals); _t1 = _time.perf_counter()
                    _b = _bundle(_f); _t2 = _time.perf_counter()
                    _fig.append(1e3 * (_t1 - _t0)); _bun.append(1e3 * (_t2 - _t1))
                    _kb = len(_json.dumps(_b)) / 1e3
        _rows.append({"panel": _pi, "control": _ci, "name": _name, "kind": _kind,
                      "function": getattr(_p._figure_fn, "__qualname__", "?"),
                      "figure_ms": _st.median(_fig), "bundle_ms": _st.median(_bun),
                      "callback_ms": _st.median(_cb[0::2]), "figure_kb": _kb})
print("MARK" + _json.dumps(_rows))
"""


def widget_notebooks(names: list[str]) -> list[Path]:
    sys.path.insert(0, str(ROOT / "tests"))
    import _browser as B

    nbs = B.widget_notebooks()
    return [p for p in nbs if not names or any(p.name.startswith(n) for n in names)]


def run(path: Path, repeat: int, timeout: float) -> list[dict]:
    import nbformat
    from nbclient import NotebookClient
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(path)), {"SMOKE": True})
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    probe = _PROBE.replace("REPEAT", str(repeat)).replace('"MARK"', repr(MARK))
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(NB_DIR)}}).execute()
    for o in nb.cells[-1].outputs:
        for line in o.get("text", "").splitlines():
            if line.startswith(MARK):
                return json.loads(line[len(MARK) :])
    raise RuntimeError(f"{path.name}: the timing cell printed nothing")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="notebook number prefixes (default: every widget notebook)")
    ap.add_argument("--repeat", type=int, default=3, help="moves (and moves back) per control; the median is printed")
    ap.add_argument("--timeout", type=float, default=600.0, help="per-cell timeout, seconds")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    a = ap.parse_args(argv)
    out = {}
    print("| notebook | panel · control | function | figure ms | bundle ms | callback ms | figure kB |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for p in widget_notebooks(a.notebooks):
        t0 = time.perf_counter()
        rows = run(p, a.repeat, a.timeout)
        out[p.stem] = rows
        for r in rows:
            print(
                f"| {p.stem} | {r['panel']} · {r['control']} ({r['name']}, {r['kind']}) | {r['function']} | "
                f"{r['figure_ms']:.0f} | {r['bundle_ms']:.0f} | {r['callback_ms']:.0f} | {r['figure_kb']:.0f} |",
                flush=True,
            )
        print(f"<!-- {p.stem}: {time.perf_counter() - t0:.0f} s including the SMOKE run -->", flush=True)
    cbs = sorted(r["callback_ms"] for rows in out.values() for r in rows)
    if cbs:
        print(
            f"\n{len(cbs)} controls: callback median {cbs[len(cbs) // 2]:.0f} ms, max {cbs[-1]:.0f} ms, "
            f"{sum(c > 150 for c in cbs)} above 150 ms"
        )
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
