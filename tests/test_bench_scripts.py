"""The benchmark and GPU-session scripts run end to end at a tiny size on a CPU (timings are never asserted).

``benchmarks/gpu_session.sh --dry-run`` runs the whole plan of the one prepared device call (pytest -m
gpu, the radius table, the loss shares and pairwise distances, the extra seeds) at tiny sizes, so the
script cannot rot between the rare GPU loans: the checks below read its archive.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # ~10 s idle; measured 88 s on the shared 2-core machine (first model build + imports)
def test_bench_pipeline_reports_every_path(capsys):
    mod = _load("bench_pipeline")
    res = mod.main(
        ["--device", "cpu", "--dataset", "synthetic", "--n", "32", "--image-size", "16", "--encoder", "small_cnn",
         "--batch", "8", "--steps", "1", "--warmup", "1", "--workers", "0"]
    )  # fmt: skip
    assert set(res) == {"pure", "cpu input only", "cpu", "device input only", "device"}
    assert all(v > 0 for v in res.values())
    assert "x pure" in capsys.readouterr().out


def test_bench_losses_share_runs():
    mod = _load("bench_losses")
    rows = mod.bench_share("small_cnn", 16, 8, __import__("torch").device("cpu"), repeats=1, geometries=("poincare",))
    assert [r["method"] for r in rows] == ["supcon", "hwc+lam"]
    assert all(r["step_ms"] > 0 and r["loss_ms"] > 0 for r in rows)


def test_bench_pairwise_vs_cdist_runs():
    mod = _load("bench_pairwise_dist")
    med = mod.bench_vs_cdist(64, 8, 1.0, __import__("torch").device("cpu"), repeats=1)
    assert set(med) == {"cdist", "fused", "reference"} and all(v > 0 for v in med.values())


def test_run_notebooks_selection_and_parameters():
    mod = _load("run_notebooks")
    assert mod._parse_param("SMOKE=False") == ("SMOKE", False)
    assert mod._parse_param("N=3") == ("N", 3)
    assert mod._parse_param("DEVICE=cuda") == ("DEVICE", "cuda")
    names = [p.stem for p in mod.select(["00", "03"])]
    assert names == ["00_label_trees", "03_hwc"]
    assert len(mod.select([])) >= 10
    with pytest.raises(SystemExit, match="no notebook matches"):
        mod.select(["99"])
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        mod._parse_param("SMOKE")


def test_bench_goal_lines_and_json(tmp_path, capsys):
    """One GOAL line per measured objective / size, met or not met, and a JSON file."""
    import json

    losses = _load("bench_losses")
    rows = [
        dict(geometry="euclidean", method="supcon", step_ms=100.0, base_ms=99.0, share=0.01, loss_ms=1.0),
        dict(geometry="poincare", method="hwc+lam", step_ms=100.0, base_ms=90.0, share=0.10, loss_ms=9.0),
        dict(geometry="poincare", method="simclr", step_ms=100.0, base_ms=90.0, share=0.10, loss_ms=9.0),
    ]
    v = losses.verdicts(rows)
    assert [x["met"] for x in v] == [True, False]  # simclr has no goal
    assert v[0]["goal"] == "supcon euclidean: share of the step <= 1.5%" and v[0]["measured"].startswith("1.00%")
    pairwise = _load("bench_pairwise_dist")
    out = tmp_path / "pd.json"
    pairwise.main(["--vs-cdist", "--n", "32,48", "--d", "4", "--repeats", "1", "--json", str(out)])
    text = capsys.readouterr().out
    assert text.count("GOAL Poincaré pairwise fwd+bwd <= 1.5x torch.cdist") == 2
    data = json.loads(out.read_text())
    assert [r["n"] for r in data["rows"]] == [32, 48] and data["device"] and data["date"]
    assert all(r["met"] == (r["ratio"] <= 1.5) for r in data["rows"])


# ----------------------------------------------------------------------------- gpu_session.sh

SESSION = BENCH / "gpu_session.sh"
LIMIT = 8 * 1024 * 1024  # what the archive must stay under
RUNS = [f"{m}-{g}-s{s}" for m in ("supcon", "hwc_lam") for g in ("euclidean", "poincare") for s in (0, 1)]
HEADER_KEYS = ("date", "commit", "torch", "nvidia-smi")


def _session(tmp: Path, *args: str, timeout: float = 850) -> subprocess.CompletedProcess:
    """Run gpu_session.sh in its own process group; on a timeout the whole group goes (no orphaned steps)."""
    env = {**os.environ, "OUT": str(tmp / "out"), "WORK": str(tmp / "work"), "PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)  # the script puts the checkout first itself
    cmd = ["bash", str(SESSION), *args]
    with subprocess.Popen(
        cmd, env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _members(tgz: Path) -> dict[str, bytes]:
    with tarfile.open(tgz, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def _header(name: str, data: bytes) -> dict[str, str]:
    """The header fields of one archived file (JSON key, HTML comment or '# ' lines)."""
    text = data.decode("utf-8")
    if name.endswith(".json") and text.startswith('{"gpu_session": '):
        return json.loads(text)["gpu_session"]
    if name.endswith(".md"):
        assert text.startswith("<!--\ngpu_session.sh: "), name
        block = text[5 : text.index("\n-->\n")].splitlines()
    else:
        assert text.startswith("# gpu_session.sh: "), name
        block = [ln[2:] for ln in text[: text.index("# ---\n")].splitlines()]
    return dict(ln.split(": ", 1) for ln in block[1:])


@pytest.fixture(scope="module")
def dry_session(tmp_path_factory):
    """One CPU dry run of the whole plan (about a minute on an idle 2-core CPU, several on a busy one)."""
    tmp = tmp_path_factory.mktemp("gpu_session")
    proc = _session(tmp, "--dry-run")
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    return tmp, proc


@pytest.mark.slow  # the whole plan: five python processes (pytest, two compares, two benchmarks)
def test_gpu_session_dry_run_archive(dry_session):
    tmp, proc = dry_session
    out = tmp / "out"
    assert sorted(p.name for p in out.iterdir()) == ["gpu_session.tgz", "session.txt"]  # <= 8 files come back
    assert (out / "gpu_session.tgz").stat().st_size < LIMIT
    files = _members(out / "gpu_session.tgz")
    names = {n.removeprefix("gpu_session/") for n in files}
    expected = {
        "session.txt", "status.txt", "commands.txt",
        "logs/a_pytest_gpu.txt", "logs/b_radius_seed0.txt", "logs/c1_pairwise_vs_cdist.txt",
        "logs/c2_losses_share_compiled.txt", "logs/d_radius_seeds2.txt",
        "cost/pairwise_vs_cdist.json", "cost/losses_share_compiled.json",
        "radius/results.csv", "radius/results.md", "radius/config.json", "radius/tree.json",
    } | {f"radius/runs/{r}/{f}" for r in RUNS for f in ("result.json", "config.json")}  # fmt: skip
    assert expected <= names, sorted(expected - names)
    # no checkpoints, embeddings, data or report pages: the archive holds results only
    assert not [n for n in names if re.search(r"checkpoint|\.pt\b|\.pth$|\.npz$|report\.html$", n)]
    # every file carries the session header: nvidia-smi, the torch version, the commit and the date
    import torch

    for name, data in files.items():
        head = _header(name, data)
        assert set(HEADER_KEYS) <= set(head), name
        assert head["torch"].startswith(torch.__version__), (name, head["torch"])
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", head["date"]), head["date"]
        assert head["mode"].startswith("dry run"), head["mode"]
        assert "not available" in head["nvidia-smi"] or "," in head["nvidia-smi"]
        commit = subprocess.run(["git", "-C", str(BENCH.parent), "rev-parse", "HEAD"], capture_output=True, text=True)
        if commit.returncode == 0:
            assert head["commit"].startswith(commit.stdout.strip()), head["commit"]
    # the summary: every step ran and exited 0, CUDA graphs skipped on a CPU, GOAL lines with verdicts
    summary = (out / "session.txt").read_text(encoding="utf-8")
    assert summary == files["gpu_session/session.txt"].decode()
    for step in (
        "a_pytest_gpu",
        "b_radius_seed0",
        "c1_pairwise_vs_cdist",
        "c2_losses_share_compiled",
        "d_radius_seeds2",
    ):
        assert re.search(rf"^{step} rc=0 seconds=\d+ budget=\d+$", summary, re.M), (step, summary)
    assert "c3_losses_share_cudagraphs skipped: CUDA graphs apply on a CUDA device only" in summary
    assert re.search(r"^pytest -m gpu: .*\d+ (skipped|passed)", summary, re.M)
    goals = [ln for ln in summary.splitlines() if "GOAL" in ln]
    assert sum("torch.cdist at 32x4" in g or "torch.cdist at 48x4" in g for g in goals) == 2
    assert sum("share of the step" in g for g in goals) == 2  # SupCon, HWC+LAM on the Poincaré ball
    for m in ("supcon", "hwc+lam"):
        radius = [g for g in goals if g.startswith(f"GOAL radius {m} poincare:")]
        assert len(radius) == 6 and all(g.endswith(("| met", "| not met")) for g in radius), radius
        assert all("(seeds 0,1)" in g for g in radius), radius
    # the Poincaré objectives trace as one graph (no eager fallback) in the compiled step
    assert "compiling the objective failed" not in files["gpu_session/logs/c2_losses_share_compiled.txt"].decode()


@pytest.mark.slow
def test_gpu_session_unpack_restores_the_files(dry_session, tmp_path):
    """--unpack takes every header off: the files are byte for byte what the session wrote, and load."""
    tmp, _ = dry_session
    proc = _session(tmp_path, "--unpack", str(tmp / "out" / "gpu_session.tgz"), str(tmp_path / "x"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "a dry run: no figures to commit" in proc.stdout
    root = tmp_path / "x" / "gpu_session"
    work = tmp / "work"
    restored = [p for p in root.rglob("*") if p.is_file() and p.name != "session.txt"]
    assert len(restored) >= 20
    for p in restored:
        assert p.read_bytes() == (work / p.relative_to(root)).read_bytes(), p
    from hierviz.experiments.records import load_records
    from hierviz.report.tables import read_results_csv

    records = load_records(root / "radius")
    assert sorted(r["name"] for r in records) == sorted(RUNS)
    rows = read_results_csv(root / "radius" / "results.csv")
    assert len(rows) == 8 and {r["geometry"] for r in rows} == {"euclidean", "poincare"}
    pairwise = json.loads((root / "cost" / "pairwise_vs_cdist.json").read_text())
    assert [r["n"] for r in pairwise["rows"]] == [32, 48]


def test_gpu_session_unpack_names_the_results_folder(tmp_path):
    """docs/results/gpu/<date>-<gpu>/: the session's UTC date and the card's model from the header."""
    head = (
        "# gpu_session.sh: session.txt, archived 2026-12-08T10:09:00Z\n"
        "# date: 2026-12-08T10:00:00Z (session start, UTC)\n# commit: 0123abc (0 files changed since)\n"
        "# torch: 2.11.0+cu130 (CUDA 13.0, NVIDIA H100 80GB HBM3); geoopt 0.5.1\n"
        "# nvidia-smi: NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 1980 MHz, 700.00 W\n"
        "# mode: GPU; budget 540 s; host x\n# ---\n"
    )
    csv_text = "method,seed\nsupcon,0\n"
    json_text = '{\n "a": 1\n}'
    members = {
        "gpu_session/session.txt": head + "steps:\n",
        "gpu_session/radius/results.csv": head + csv_text,
        "gpu_session/cost/x.json": '{"gpu_session": {"date": "2026-12-08"},\n' + json_text[1:],
        "gpu_session/radius/results.md": "<!--\ngpu_session.sh: radius/results.md\ndate: d\n-->\n| a |\n",
    }
    tgz = tmp_path / "g.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    proc = _session(tmp_path, "--unpack", str(tgz), str(tmp_path / "x"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "the figures go to docs/results/gpu/2026-12-08-h100/" in proc.stdout
    root = tmp_path / "x" / "gpu_session"
    assert (root / "radius" / "results.csv").read_text() == csv_text
    assert (root / "cost" / "x.json").read_text() == json_text and json.loads(json_text) == {"a": 1}
    assert (root / "radius" / "results.md").read_text() == "| a |\n"
    assert (root / "session.txt").read_text() == "steps:\n"


def test_gpu_session_out_of_budget_still_archives(tmp_path):
    """With no time left every step is skipped, and the archive and the summary still come back."""
    proc = _session(tmp_path, "--dry-run", "1", timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = (tmp_path / "out" / "session.txt").read_text(encoding="utf-8")
    for step in ("a_pytest_gpu", "b_radius_seed0", "c1_pairwise_vs_cdist", "c2_losses_share_compiled"):
        assert re.search(rf"^{step} skipped at \d+ s: -?\d+ s left of the budget$", summary, re.M), summary
    assert "radius table: no finished run yet" in summary
    files = _members(tmp_path / "out" / "gpu_session.tgz")
    assert {"gpu_session/session.txt", "gpu_session/status.txt"} <= set(files)
    assert all(set(HEADER_KEYS) <= set(_header(n, d)) for n, d in files.items())


def test_gpu_session_refuses_bad_arguments(tmp_path):
    proc = _session(tmp_path, "--bogus", timeout=60)
    assert proc.returncode == 2 and "unknown argument '--bogus'" in proc.stderr
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    proc = subprocess.run(["bash", str(SESSION), "--dry-run"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "set OUT to the folder that comes back" in proc.stderr
    proc = _session(tmp_path, "--unpack", "only-one", timeout=60)
    assert proc.returncode == 2 and "--unpack needs ARCHIVE DIR" in proc.stderr


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("gpu_*.sh")))
def test_gpu_scripts_parse(script):
    """bash -n: every GPU script at least parses (the device is the first place a syntax error would show)."""
    proc = subprocess.run(["bash", "-n", str(BENCH / script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
