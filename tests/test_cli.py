"""``hierviz compare`` end to end on tiny subsets, resume, bring-your-own data, bad input."""
from __future__ import annotations

import csv
import json
import runpy
import sys

import numpy as np
import pytest
import torch

from hierviz.cli import main
from hierviz.report import METRICS
from hierviz.training import load_checkpoint

# tiny, fast settings shared by every end-to-end test (16 px, 1-2 epochs, small CNN)
TINY = ["--encoder", "small_cnn", "--width", "4", "--embed-dim", "8", "--image-size", "16",
        "--batch-size", "32", "--projection", "pca", "--quiet"]


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_compare_end_to_end_on_bundled_sample(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["compare", "--quick", "--limit", "90", "--epochs", "1", "--seeds", "1",
               "--methods", "supcon,hwc+lam", "--geometry", "euclidean,poincare", "--out", str(out), *TINY])
    assert rc == 0
    rows = _rows(out / "results.csv")
    assert [(r["method"], r["geometry"], r["seed"]) for r in rows] == [
        ("supcon", "euclidean", "0"), ("supcon", "poincare", "0"),
        ("hwc+lam", "euclidean", "0"), ("hwc+lam", "poincare", "0")]
    for r in rows:
        for m in METRICS:
            assert 0.0 <= float(r[m]) <= 1.0
        assert abs(float(r["violations"]) + float(r["pc_order"]) - 1.0) < 1e-9  # complements at margin 0
    md = (out / "results.md").read_text()
    assert "| Method | HF1 (Euclidean) | H-Acc (Euclidean) | PC-Order (Euclidean)" in md
    assert "| SupCon |" in md and "| HWC+LAM |" in md and "Top-1 (Poincaré)" in md
    html = (out / "report.html").read_text()
    head, _, body = html.partition("</script></head>")  # plotly.js inlined once, in <head>
    assert len(head) > 1_000_000 and "<script type='text/javascript'>" in head
    no_external = "<script src" not in body and "cdn.plot.ly" not in body and "<link" not in body
    assert no_external  # self-contained: nothing fetched when the file is opened offline
    assert body.count("Plotly.newPlot") >= 6
    assert "Poincaré disk of test embeddings and parent prototypes" in html
    assert "PCA of test embeddings with the tree drawn over it" in html
    assert "Training loss per step" in html and "hierviz compare --quick" in html
    assert "could not be drawn" not in html and "figures skipped" not in html
    rec = json.loads((out / "runs" / "hwc_lam-poincare-s0" / "result.json").read_text())
    assert set(rec["step_history"]) == {"loss", "hwc", "lam"}
    emb = np.load(out / "runs" / "hwc_lam-poincare-s0" / "embeddings.npz")
    assert (np.linalg.norm(emb["z_test"], axis=1) < 1).all()
    assert emb["prototypes"].shape[1] == 8 and emb["proto_nodes"].shape[0] == emb["prototypes"].shape[0]
    printed = capsys.readouterr().out
    assert "[4/4] hwc+lam · poincare · seed 0" in printed and "wrote" in printed

    # `hierviz report` rebuilds the outputs from the finished runs
    (out / "results.csv").unlink()
    assert main(["report", "--out", str(out), "--projection", "pca"]) == 0
    assert _rows(out / "results.csv") == rows


def test_resume_after_interruption_loses_nothing(tmp_path, capsys):
    args = ["compare", "--quick", "--limit", "80", "--epochs", "2", "--seeds", "2", "--methods", "supcon",
            "--geometry", "poincare", *TINY]
    assert main([*args, "--out", str(tmp_path / "ref")]) == 0

    def crash(epoch, info):
        if epoch == 0:
            raise KeyboardInterrupt

    out = tmp_path / "run"
    assert main([*args, "--out", str(out)], _run_callbacks={"supcon-poincare-s1": [crash]}) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "rerun with --resume" in err and "Traceback" not in err
    assert (out / "runs" / "supcon-poincare-s0" / "result.json").is_file()
    assert not (out / "runs" / "supcon-poincare-s1" / "result.json").exists()
    assert load_checkpoint(out / "runs" / "supcon-poincare-s1")["epoch"] == 1
    capsys.readouterr()

    assert main([*args, "--out", str(out), "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "[1/2] supcon · poincare · seed 0: finished earlier" in printed
    ra, rb = _rows(out / "results.csv"), _rows(tmp_path / "ref" / "results.csv")
    assert [(r["method"], r["seed"]) for r in ra] == [("supcon", "0"), ("supcon", "1")]
    for x, y in zip(ra, rb):
        assert all(x[m] == y[m] for m in METRICS), (x, y)
    a = load_checkpoint(out / "runs" / "supcon-poincare-s1")["model"]
    b = load_checkpoint(tmp_path / "ref" / "runs" / "supcon-poincare-s1")["model"]
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_resume_refuses_other_settings(tmp_path, capsys):
    args = ["compare", "--quick", "--limit", "60", "--epochs", "1", "--seeds", "1", "--methods", "supcon",
            "--geometry", "euclidean", "--out", str(tmp_path), *TINY]
    assert main(args) == 0
    capsys.readouterr()
    assert main([*args, "--resume", "--tau", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "was made with different settings (loss.tau)" in err and "Traceback" not in err


def _write_toy(tmp_path, leaves=("cat", "dog", "car")):
    rng = np.random.default_rng(0)
    n = 60
    labels = np.arange(n) % 3
    colours = np.array([[200, 40, 40], [160, 80, 40], [40, 40, 200]])
    images = np.clip(colours[labels][:, None, None, :] + rng.normal(0, 30, (n, 16, 16, 3)), 0, 255)
    npz = tmp_path / "toy.npz"
    np.savez(npz, images=images.astype(np.uint8), labels=labels, classes=np.array(["cat", "dog", "car"]))
    tree = tmp_path / "toy_tree.json"
    tree.write_text(json.dumps({"name": "toy", "source": "test",
                                "tree": {"root": {"animal": list(leaves[:2]), "vehicle": list(leaves[2:])}}}))
    return npz, tree


def test_bring_your_own_npz_and_tree(tmp_path, capsys):
    npz, tree = _write_toy(tmp_path)
    out = tmp_path / "out"
    rc = main(["compare", "--data", str(npz), "--tree", str(tree), "--methods", "hwc,hxe",
               "--geometry", "euclidean,lorentz", "--seeds", "1", "--epochs", "1", "--out", str(out), *TINY])
    assert rc == 0, capsys.readouterr().err
    rows = _rows(out / "results.csv")
    assert {(r["method"], r["geometry"]) for r in rows} == {
        ("hwc", "euclidean"), ("hwc", "lorentz"), ("hxe", "euclidean"), ("hxe", "lorentz")}
    assert {r["eval_embedding"] for r in rows if r["method"] == "hxe"} == {"features"}  # penultimate features
    html = (out / "report.html").read_text()
    assert "toy_tree.json" in html and "vehicle" in html
    assert "could not be drawn" not in html
    assert "HXE (Lorentz, seed 0): Poincaré disk of test encoder features" in html  # via Lorentz.to_ball
    z = np.load(out / "runs" / "hwc-lorentz-s0" / "embeddings.npz")["z_test"]
    assert z.shape[1] == 9  # d + 1 hyperboloid coordinates
    np.testing.assert_allclose(-z[:, 0] ** 2 + (z[:, 1:] ** 2).sum(1), -1.0, atol=1e-3)


def test_tree_that_does_not_match_the_classes_names_the_mismatch(tmp_path, capsys):
    npz, tree = _write_toy(tmp_path, leaves=("cat", "dog", "bus"))
    rc = main(["compare", "--data", str(npz), "--tree", str(tree), "--out", str(tmp_path / "o"), *TINY])
    assert rc == 2
    err = capsys.readouterr().err
    assert "bus" in err and "car" in err


def test_data_without_tree_asks_for_one(tmp_path, capsys):
    npz, _ = _write_toy(tmp_path)
    assert main(["compare", "--data", str(npz), "--out", str(tmp_path / "o"), *TINY]) == 2
    err = capsys.readouterr().err
    assert "data.tree is required with data.path (--tree: a tree name or a tree JSON file" in err


@pytest.mark.parametrize("option,value,valid", [
    ("--methods", "supcon,simclr2", ["simclr", "supcon", "hc-outside", "hxe", "hwc", "lam", "hwc+lam"]),
    ("--geometry", "spherical", ["euclidean", "poincare", "lorentz"]),
    ("--dataset", "imagenet", ["ham10000", "ham10000-sample", "breastmnist"]),
    ("--tree", "linnaeus", ["two-step", "benign-malignant", "breakhis"]),
    ("--encoder", "vit", ["small_cnn", "resnet18", "resnet50"]),
])
def test_unknown_names_list_the_valid_ones(tmp_path, capsys, option, value, valid):
    rc = main(["compare", "--quick", option, value, "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert value.split(",")[-1] in err
    for name in valid:
        assert name in err


def test_missing_data_file_names_file_and_fetch_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    rc = main(["compare", "--dataset", "dermamnist", "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "dermamnist.npz" in err and "data_scripts" in err


def test_missing_data_path(tmp_path, capsys):
    rc = main(["compare", "--data", str(tmp_path / "nope.npz"), "--tree", "two-step", "--out", str(tmp_path)])
    assert rc == 2
    assert "nope.npz" in capsys.readouterr().err


@pytest.mark.parametrize("extra,match", [
    (["--epochs", "0"], "--epochs"), (["--limit", "1"], "--limit"), (["--curvature", "-1"], "--curvature"),
    (["--seeds", "0"], "--seeds"), (["--threads", "0"], "--threads"),
])
def test_bad_numbers_are_refused(tmp_path, capsys, extra, match):
    assert main(["compare", "--quick", *extra, "--out", str(tmp_path)]) == 2
    assert match in capsys.readouterr().err


def test_nan_loss_stops_with_exit_code_1_and_keeps_checkpoint(tmp_path, capsys, monkeypatch):
    import hierviz.methods

    real = hierviz.methods.build_objective

    class Poison(torch.nn.Module):
        requires_logits = False

        def __init__(self, inner):
            super().__init__()
            self.inner, self.calls = inner, 0

        def forward(self, z, labels, logits=None):
            loss, terms = self.inner(z, labels)
            self.calls += 1
            if self.calls == 2:  # the first step of epoch 1 (one step per epoch)
                loss = loss * float("nan")
            return loss, terms

    monkeypatch.setattr(hierviz.methods, "build_objective", lambda *a, **k: Poison(real(*a, **k)))
    out = tmp_path / "o"
    rc = main(["compare", "--quick", "--limit", "40", "--epochs", "3", "--seeds", "1", "--methods", "supcon",
               "--geometry", "euclidean", "--out", str(out), *TINY, "--batch-size", "64"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "non-finite loss at epoch 1, step 0" in err and "supcon=" in err
    assert load_checkpoint(out / "runs" / "supcon-euclidean-s0")["epoch"] == 1


def test_python_dash_m_entry_point(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["hierviz", "compare", "--help"])
    with pytest.raises(SystemExit) as ei:
        runpy.run_module("hierviz", run_name="__main__")
    assert ei.value.code == 0
    text = capsys.readouterr().out
    for opt in ("--dataset", "--tree", "--methods", "--geometry", "--seeds", "--epochs", "--resume", "--quick",
                "--limit", "--workers", "--encoder", "--embed-dim", "--image-size", "--device", "--out"):
        assert opt in text
