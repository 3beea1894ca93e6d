"""The course notebooks run headless (papermill, SMOKE=True) and are stored clean.

Each notebook is executed once per test session: in its own papermill subprocess, or, for a
notebook with panels whose browser test (tests/test_browser.py, same xdist group, run first)
has already run it to the end in JupyterLab, by that run (its saved outputs are checked here).
Its run time and the kernel's peak resident memory are attached to the test report and
printed in the terminal summary with the runner (see ``conftest.pytest_terminal_summary``)
so regressions show.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import _browser as B  # tests/ is on sys.path (rootdir conftest): the notebooks the browser tests ran
import nbformat  # noqa: E402  (a declared dev dependency: imported, never skipped)
import papermill
import pytest

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(p for p in NB_DIR.glob("[0-9][0-9]_*.ipynb"))
PLOTLY_MIME = "application/vnd.plotly.v1+json"

# What each notebook must show once executed: at least this many plotly figures, and
# these strings somewhere in its outputs (a table's column names, a metric's name).
EXPECTED = {
    "00_label_trees": dict(figures=3, text=["HF1", "H-Acc"]),
    "01_hyperbolic_geometry": dict(figures=3, text=["Gromov"]),
    "02_simclr_supcon": dict(figures=2, text=["top1"]),
    "03_hwc": dict(figures=3, text=["violations"]),
    "04_lam": dict(figures=3, text=["violations"]),
    "05_compare": dict(figures=2, text=["hf1", "violations", "pc_order"]),
    "07_hyperbolic_retrieval": dict(figures=6, text=["MAP@20", "Hyper-DINO", "clip fraction"]),
    "06_hmlc": dict(figures=6, text=["top1", "official (salesforce) mode", "attention heads"]),
    "08_triplets_unseen": dict(figures=5, text=["triplets per epoch", "acc_blind", "n_unseen_leaves", "ndcg_sum"]),
    "09_hyilr": dict(figures=7, text=["d(u0, u1)", "true labels", "learned c", "Eq. 15 on 20 test documents"]),
    "10_capstone": dict(figures=5, text=["runs in", "HF1 of the baselines: Majority class", "Chance"]),
    "11_evaluation_pitfalls": dict(figures=7, text=["closed forms: p_max", "Hi-MiF1 1.000", "paired 95 % CI"]),
    "12_hyperbolic_failure_modes": dict(figures=8, text=["clip fraction", "radius_depth_s", "settings trained"]),
}

_RUNNER = textwrap.dedent(
    """
    import json, resource, sys, time
    import papermill as pm
    src, dst = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    pm.execute_notebook(src, dst, parameters={"SMOKE": True}, kernel_name="python3",
                        progress_bar=False, cwd=str(__import__("pathlib").Path(src).parent))
    wall = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"wall_s": wall, "kernel_peak_mib": peak_kib / 1024}))
    """
)


def _outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield from cell.get("outputs", [])


def test_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert names == set(EXPECTED), f"notebooks {sorted(names)} != expected {sorted(EXPECTED)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_clean(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "no code cells"
    dirty = [i for i, c in enumerate(code) if c.get("outputs") or c.get("execution_count")]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs; strip them before committing"
    assert "parameters" in code[0].metadata.get("tags", []), "first code cell must be tagged 'parameters'"
    assert "SMOKE" in code[0].source, "the parameters cell must define SMOKE"
    assert nb.cells[0].cell_type == "markdown", "a notebook opens with what the reader will learn"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_follows_the_course_conventions(path):
    """SIZE convention (hierviz.course), opening and closing sections, no library code in cells, a link to the next notebook."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert re.search(r'^SIZE = "auto"', code[0].source, re.M), (
        f'{path.name}: the parameters cell must hold SIZE = "auto"'
    )
    assert any("resolve_size(SMOKE, SIZE)" in c.source for c in code), f"{path.name}: resolve SIZE with hierviz.course"
    # papermill must see both parameters (an '=' inside a comment hides a line from its parser)
    assert {"SMOKE", "SIZE"} <= set(papermill.inspect_notebook(str(path))), f"{path.name}: papermill cannot parse SIZE"
    defs = [
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"^\s*(def|class) ", c.source, re.M)
    ]
    assert not defs, f"{path.name}: cells {defs} define functions/classes; move them into the package (with tests)"
    opening = nb.cells[0].source if nb.cells[0].cell_type == "markdown" else ""
    for mark in ("*Prerequisites:*", "*Time:*"):
        assert mark in opening, f"{path.name}: the first cell must state {mark} (goals, prerequisites, time)"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for heading in ("## Summary", "## Exercises"):
        assert re.search(rf"^{heading}\b", text, re.M), f"{path.name}: end with a '{heading}' section"
    later = [p for p in NOTEBOOKS if p.name > path.name]
    if later:
        nxt = later[0].name
        assert any(c.cell_type == "markdown" and "Where next" in c.source and nxt in c.source for c in nb.cells), (
            f"{path.name}: end with a 'Where next' link to {nxt}"
        )


#: A kernel that could not start: jupyter_client picks its five TCP ports by binding and releasing them, and
#: on a busy machine another process (the other worker's kernel) can take one before the kernel binds it.
#: Nothing of the notebook ran; the start is retried.
_PORT_RACE = ("Address already in use", "Kernel died before replying to kernel_info")


def _papermill(path: Path, out: Path, tries: int = 3) -> subprocess.CompletedProcess:
    """Run :data:`_RUNNER` on ``path``; a kernel start lost to a port race (:data:`_PORT_RACE`) is retried."""
    for attempt in range(1, tries + 1):
        proc = subprocess.run(
            [sys.executable, "-c", _RUNNER, str(path), str(out)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode == 0 or not all(m in (proc.stderr or "") for m in _PORT_RACE):
            break
        if attempt < tries:
            time.sleep(attempt)
    return proc


def _run_with_papermill(path: Path, out: Path, record_property) -> nbformat.NotebookNode:
    """Execute ``path`` at SMOKE=True in a papermill subprocess; record its time and the kernel's peak memory."""
    t0 = time.perf_counter()
    proc = _papermill(path, out)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-4000:]
        pytest.fail(f"{path.name} failed under papermill (SMOKE=True):\n{tail}")
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    record_property("notebook_wall_s", round(stats["wall_s"], 1))
    record_property("notebook_kernel_peak_mib", round(stats["kernel_peak_mib"], 1))
    record_property("notebook_total_s", round(time.perf_counter() - t0, 1))
    record_property("notebook_run_by", "papermill")
    return nbformat.read(out, as_version=4)


@pytest.mark.notebook
@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=B.xdist_group(p)) for p in NOTEBOOKS], ids=[p.stem for p in NOTEBOOKS]
)
def test_notebook_runs_in_smoke_mode(path, tmp_path, record_property):
    """Every cell runs at SMOKE=True without an error or a warning, and the outputs show what ``EXPECTED`` says.

    A notebook with panels that tests/test_browser.py has already run to the end in JupyterLab in this
    process (Run All on a SMOKE copy parameterized by papermill, then saved: ``_browser.EXECUTED``)
    is checked on those saved outputs instead of being executed a second time; any other (no panel,
    the browser tests not selected or skipped, or their run stopped before the save) runs here under papermill.
    """
    done = B.EXECUTED.get(path.name)
    if done is None:
        nb = _run_with_papermill(path, tmp_path / path.name, record_property)
    else:
        nb = done["nb"]
        record_property("notebook_wall_s", round(done["wall_s"], 1))
        peak = done["kernel_peak_mib"]
        record_property("notebook_kernel_peak_mib", float("nan") if peak is None else round(peak, 1))
        record_property("notebook_run_by", "jupyterlab (tests/test_browser.py)")
    outputs = list(_outputs(nb))
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, f"{path.name} raised: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    n_fig = sum(1 for o in outputs if PLOTLY_MIME in o.get("data", {}))
    want = EXPECTED[path.stem]
    assert n_fig >= want["figures"], f"{path.name} showed {n_fig} plotly figures, expected ≥ {want['figures']}"
    text = json.dumps(
        [o.get("data", {}).get("text/plain", "") for o in outputs]
        + [o.get("data", {}).get("text/html", "") for o in outputs]
        + [o.get("text", "") for o in outputs]
    )
    missing = [s for s in want["text"] if s not in text]
    assert not missing, f"{path.name} outputs never mention {missing}"
    # a student sees every Python warning as a red box: fix them at their source, do not filter them
    warned = [
        line.strip()
        for o in outputs
        if o.get("output_type") == "stream" and o.get("name") == "stderr"
        for line in o.get("text", "").splitlines()
        if re.search(r"\w+Warning\b", line)
    ]
    assert not warned, f"{path.name} printed warning(s): {warned[:3]}"


def test_a_kernel_start_lost_to_a_port_race_is_retried_and_a_notebook_error_is_not(monkeypatch, tmp_path):
    """Seen under load: 'Address already in use' then 'Kernel died before replying to kernel_info'."""
    race = "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:41345')\n" \
           "RuntimeError: Kernel died before replying to kernel_info"  # fmt: skip
    answers = [(1, race), (0, "")]
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        code, err = answers.pop(0)
        return subprocess.CompletedProcess(cmd, code, stdout='{"wall_s": 1}', stderr=err)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    assert _papermill(tmp_path / "x.ipynb", tmp_path / "y.ipynb").returncode == 0 and len(calls) == 2
    answers[:] = [(1, "PapermillExecutionError: ZeroDivisionError"), (0, "")]
    assert _papermill(tmp_path / "x.ipynb", tmp_path / "y.ipynb").returncode == 1  # the notebook's own error: no retry
    answers[:] = [(1, race)] * 3
    assert _papermill(tmp_path / "x.ipynb", tmp_path / "y.ipynb").returncode == 1 and not answers  # three tries at most
