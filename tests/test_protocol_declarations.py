"""A user protocol declared through ``register_protocol``'s keywords runs end to end through ``compare``;
the pre-0.4 form (keyword function, extras as attributes) still does, with DeprecationWarnings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hierviz.cli import main
from hierviz.evaluation import PROTOCOLS

REPO = Path(__file__).resolve().parents[1]
ARGS = ["--preset", "quick-ham10000", "--methods", "supcon", "--geometry", "euclidean", "--limit", "60", "--seeds",
        "1", "--set", "model.width=4", "--set", "model.embed_dim=8", "--set", "data.image_size=16", "--projection",
        "pca", "--batch-size", "32", "--epochs", "1", "--set", "eval.batch_size=16", "--set", "eval.mean_steps=3",
        "--quiet"]  # fmt: skip


@pytest.fixture
def declared():
    """Import ``tests.declared_protocol`` afresh; forget it and its protocols after the test."""
    sys.modules.pop("tests.declared_protocol", None)
    yield
    mod = sys.modules.pop("tests.declared_protocol", None)
    for name in ("even-odd", "old-even-odd"):
        PROTOCOLS.unregister(name)
    assert mod is not None


def _run(protocol: str, out: Path, capsys) -> tuple[dict, list]:
    argv = ["compare", "--import", "tests.declared_protocol", *ARGS, "--protocol", protocol, "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    mod = sys.modules["tests.declared_protocol"]
    rec = json.loads((out / "runs" / "supcon-euclidean-s0" / "result.json").read_text())
    return rec, mod.CONTEXTS


def test_a_user_protocol_declared_with_keywords_runs_through_compare(tmp_path, capsys, declared, recwarn):
    rec, contexts = _run("even-odd", tmp_path / "out", capsys)
    assert not [w for w in recwarn if "'even-odd'" in str(w.message)]  # the declared form warns about nothing
    spec = PROTOCOLS.get("even-odd")
    mod = sys.modules["tests.declared_protocol"]
    assert (spec.make_split, spec.per_seed, spec.doc) == (
        mod.even_odd_split, False, "The classification probe on the even/odd row split.")  # fmt: skip
    assert mod.SPLITS == [(60, 0, 0)]  # compare made the protocol's split: data.split_seed 0, eval.fold 0
    assert rec["protocol"] == "even-odd" and set(rec["metrics"]) >= {"top1", "hf1", "h_acc"}
    # the context is what run_one passes: the run's model, the even/odd rows and the eval.* settings
    [(name, ctx)] = contexts
    assert name == "even-odd"
    assert (len(ctx.train_data), len(ctx.test_data)) == (30, 30)
    assert (ctx.image_size, ctx.embedding, ctx.seed, ctx.batch_size, ctx.mean_steps, ctx.index) == (
        16, "z", 0, 16, 3, "exact")  # fmt: skip
    assert ctx.tree.num_leaves == 7 and type(ctx.geometry).__name__ == "Euclidean"
    assert str(next(ctx.model.parameters()).device) == rec["device"]
    saved = json.loads((tmp_path / "out" / "runs" / "supcon-euclidean-s0" / "config.json").read_text())
    assert saved["eval"]["protocol"] == "even-odd" and ctx.num_workers == saved["data"]["workers"] == 1


def test_an_old_style_user_protocol_still_runs_through_compare_with_warnings(tmp_path, capsys, declared):
    with pytest.warns(DeprecationWarning) as caught:
        rec, contexts = _run("old-even-odd", tmp_path / "out", capsys)
    messages = [str(w.message) for w in caught if "old-even-odd" in str(w.message)]
    assert any("a protocol function taking (model, train_data" in m for m in messages)
    assert any("make_split set as attributes of the function is deprecated" in m for m in messages)
    mod = sys.modules["tests.declared_protocol"]
    assert mod.SPLITS == [(60, 0, 0)]  # the attribute's split was made
    [(name, ctx)] = contexts
    assert name == "old-even-odd" and (len(ctx.train_data), len(ctx.test_data)) == (30, 30)
    assert (ctx.image_size, ctx.batch_size, ctx.mean_steps) == (16, 16, 3)  # passed as keywords by the adapter
    assert rec["protocol"] == "old-even-odd" and 0.0 <= rec["metrics"]["top1"] <= 1.0
    assert PROTOCOLS.get("old-even-odd").make_split is mod.even_odd_split


def test_the_run_core_reads_protocol_fields_not_attributes():
    """Nothing in hierviz probes a protocol, its function or its split with getattr."""
    found = subprocess.run(
        ["grep", "-rn", r"getattr(PROTOCOLS\|getattr(protocol\|getattr(maker\|_protocol\.[a-z_]* = ",
         str(REPO / "hierviz")],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert found.stdout == ""
