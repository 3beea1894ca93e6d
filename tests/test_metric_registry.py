"""A metric is one registration: its function of a protocol's arrays, its title and its direction; runs compute
and record it, and the tables show the keys the records hold, in registration order."""

from __future__ import annotations

import csv
import json
import sys

import numpy as np
import pytest

from hierviz.cli import main
from hierviz.metrics import METRIC_INFO, compute_metrics, register_metric
from hierviz.report import METRIC_LABELS, results_markdown
from hierviz.report.tables import LOWER_IS_BETTER, default_metrics

TINY_CLI = ["--limit", "60", "--seeds", "1", "--set", "model.width=4", "--set", "model.embed_dim=8", "--set",
            "data.image_size=16", "--projection", "pca", "--batch-size", "32", "--epochs", "1", "--quiet"]  # fmt: skip


@pytest.fixture
def metric_cleanup():
    """Forget ``tests.user_metric`` and its registration after the test."""
    sys.modules.pop("tests.user_metric", None)
    yield
    if "mean_norm" in METRIC_INFO:
        METRIC_INFO.unregister("mean_norm")
    sys.modules.pop("tests.user_metric", None)


def test_registration_is_live_in_the_tables(metric_cleanup):
    """A metric registered after hierviz.report was imported has its title, direction and column."""
    assert "late_score" not in METRIC_LABELS
    register_metric("late_score", "Late score", higher_is_better=False)
    try:
        assert METRIC_LABELS["late_score"] == "Late score" and "late_score" in LOWER_IS_BETTER
        rows = [{"method": m, "geometry": "euclidean", "seed": 0, "hf1": h, "late_score": v}
                for m, h, v in (("user-one", 0.6, 0.2), ("user-two", 0.5, 0.1))]  # fmt: skip
        assert default_metrics(rows) == ("hf1", "late_score")
        md = results_markdown(rows)
        assert "| Late score (Euclidean) |" in md and "| user-two | 0.500 | **0.100** |" in md  # lower is bold
        assert "Late score: lower is better" in md
    finally:
        METRIC_INFO.unregister("late_score")
    assert "late_score" not in METRIC_LABELS


def test_compute_metrics_by_hand():
    """Functions run in registration order on the arrays they need; a protocol's own keys are skipped."""
    register_metric("n_test", "n", fn=lambda a, t: len(a["y_test"]), needs=("y_test",))
    register_metric("bad", "Bad", fn=lambda a, t: "x", needs=("y_test",))
    try:
        with pytest.raises(ValueError, match="metric 'bad': fn returned 'x', not a real number"):
            compute_metrics({"y_test": np.arange(4)}, None)
        METRIC_INFO.unregister("bad")
        assert compute_metrics({"y_test": np.arange(4)}, None) == {"n_test": 4.0}
        assert compute_metrics({"y_test": np.arange(4)}, None, skip={"n_test"}) == {}
        assert compute_metrics({"z_test": np.zeros((2, 2))}, None) == {}
    finally:
        for name in ("n_test", "bad"):
            if name in METRIC_INFO:
                METRIC_INFO.unregister(name)
    with pytest.raises(ValueError, match="name the arrays fn reads"):
        register_metric("no_needs", "x", fn=lambda a, t: 0.0)


def test_user_metric_from_import_is_computed_recorded_and_shown(tmp_path, capsys, metric_cleanup):
    """``--import tests.user_metric``: every run computes mean_norm from its saved z_test, records it with its
    title, results.csv/md show it (bold = lowest), and ``report`` rebuilds the column without the module."""
    out = tmp_path / "out"
    argv = ["compare", "--import", "tests.user_metric", "--preset", "quick-ham10000", "--methods", "supcon,simclr",
            "--geometry", "euclidean", *TINY_CLI, "--out", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    values = {}
    for m in ("supcon", "simclr"):
        run = out / "runs" / f"{m}-euclidean-s0"
        rec = json.loads((run / "result.json").read_text())
        with np.load(run / "embeddings.npz") as f:
            ref = float(np.linalg.norm(f["z_test"].astype(np.float64), axis=1).mean())
        assert rec["metrics"]["mean_norm"] == pytest.approx(ref, rel=1e-12)
        assert rec["metric_info"] == {"mean_norm": {"label": "Mean ‖z‖ ↓", "higher_is_better": False}}
        assert "hf1" in rec["metrics"]  # the protocol's own metrics are still there
        values[m] = ref
    with open(out / "results.csv", newline="") as fh:
        rows = {r["method"]: r for r in csv.DictReader(fh)}
    assert float(rows["supcon"]["mean_norm"]) == pytest.approx(values["supcon"], rel=1e-5)
    md = (out / "results.md").read_text()
    head = next(ln for ln in md.splitlines() if ln.startswith("| Method |"))
    assert head.endswith("| Macro-F1 (Euclidean) | Mean ‖z‖ ↓ (Euclidean) |")  # after the built-ins: registry order
    best = min(values, key=values.get)
    best_row = next(ln for ln in md.splitlines() if ln.startswith(f"| {'SupCon' if best == 'supcon' else 'SimCLR'} |"))
    assert best_row.endswith(f"**{values[best]:.3f}** |")
    assert "Mean ‖z‖ ↓" in (out / "report.html").read_text()

    # a later process that never imported the module: the column and its title come from the records
    METRIC_INFO.unregister("mean_norm")
    sys.modules.pop("tests.user_metric", None)
    (out / "results.md").unlink()
    assert main(["report", "--out", str(out)]) == 0, capsys.readouterr().err
    md2 = (out / "results.md").read_text()
    assert next(ln for ln in md2.splitlines() if ln.startswith("| Method |")) == head
    assert next(ln for ln in md2.splitlines() if ln.startswith("| SupCon |")) == next(
        ln for ln in md.splitlines() if ln.startswith("| SupCon |")
    )
