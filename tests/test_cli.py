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
TINY = [
    "--encoder",
    "small_cnn",
    "--width",
    "4",
    "--embed-dim",
    "8",
    "--image-size",
    "16",
    "--batch-size",
    "32",
    "--projection",
    "pca",
    "--quiet",
]


def _fails(capsys, argv, code=2, **kw):
    """Run the CLI expecting exit ``code``; stderr must be one line, no traceback. Returns that line."""
    rc = main(argv, **kw)
    err = capsys.readouterr().err
    assert rc == code, err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.endswith("\n"), err
    return err.rstrip("\n")


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_compare_end_to_end_on_bundled_sample(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(
        [
            "compare",
            "--preset=quick-ham10000",
            "--limit",
            "90",
            "--epochs",
            "1",
            "--seeds",
            "1",
            "--methods",
            "supcon,hwc+lam",
            "--geometry",
            "euclidean,poincare",
            "--out",
            str(out),
            *TINY,
        ]
    )
    assert rc == 0
    rows = _rows(out / "results.csv")
    assert [(r["method"], r["geometry"], r["seed"]) for r in rows] == [
        ("supcon", "euclidean", "0"),
        ("supcon", "poincare", "0"),
        ("hwc+lam", "euclidean", "0"),
        ("hwc+lam", "poincare", "0"),
    ]
    for r in rows:
        for m in METRICS:
            assert 0.0 <= float(r[m]) <= 1.0
        # complements at margin 0 (results.csv keeps 6 significant digits)
        assert abs(float(r["violations"]) + float(r["pc_order"]) - 1.0) < 2e-6
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
    assert "Training loss per step" in html and "hierviz compare --preset=quick-ham10000" in html
    assert "could not be drawn" not in html and "figures skipped" not in html
    rec = json.loads((out / "runs" / "hwc_lam-poincare-s0" / "result.json").read_text())
    # hyperbolic runs get the library's default depth regularisers (cones, centring, CPCC)
    assert set(rec["step_history"]) == {"loss", "hwc", "lam", "cone", "center", "cpcc"}
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
    args = [
        "compare",
        "--preset=quick-ham10000",
        "--limit",
        "80",
        "--epochs",
        "2",
        "--seeds",
        "2",
        "--methods",
        "supcon",
        "--geometry",
        "poincare",
        *TINY,
    ]
    assert main([*args, "--out", str(tmp_path / "ref")]) == 0

    def crash(epoch, info):
        if epoch == 0:
            raise KeyboardInterrupt

    out = tmp_path / "run"
    err = _fails(capsys, [*args, "--out", str(out)], 130, _run_callbacks={"supcon-poincare-s1": [crash]})
    assert err == (
        "hierviz: interrupted; finished runs and the last checkpoint of the current run are kept: "
        "rerun with --resume to continue"
    )
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


def test_resume_refuses_other_settings_and_accepts_a_larger_plan(tmp_path, capsys):
    args = [
        "compare",
        "--preset=quick-ham10000",
        "--limit",
        "60",
        "--epochs",
        "1",
        "--seeds",
        "1",
        "--methods",
        "supcon",
        "--geometry",
        "euclidean",
        "--out",
        str(tmp_path),
        *TINY,
    ]
    assert main(args) == 0
    capsys.readouterr()
    err = _fails(capsys, [*args, "--resume", "--tau", "0.5"])
    cfg = tmp_path / "runs" / "supcon-euclidean-s0" / "config.json"
    assert err == (
        f"hierviz: error: --resume: {cfg} was made with different settings (loss.tau); "
        "use the same preset and --set values, or another --out"
    )
    err = _fails(capsys, [*args, "--resume", "--set", "loss.tau=0.5", "--set", "train.epochs=2"])
    assert "was made with different settings (loss.tau, train.epochs)" in err
    # keys that do not change results may differ
    assert main([*args, "--resume", "--projection", "tsne", "--threads", "1"]) == 0
    assert "finished earlier" in capsys.readouterr().out
    # so may the plan: a second seed and a second method are added, the finished run is reused
    i = args.index("--seeds")
    more = [*args[:i], "--seeds", "2", *args[i + 2 :]]
    j = more.index("--methods")
    more[j + 1] = "supcon,simclr"
    assert main([*more, "--resume"]) == 0
    out = capsys.readouterr().out
    assert "supcon · euclidean · seed 0: finished earlier" in out
    assert "seed 1: finished earlier" not in out and "simclr · euclidean · seed 0: finished earlier" not in out
    rows = (tmp_path / "results.csv").read_text().splitlines()[1:]
    assert len(rows) == 4, rows


def _write_toy(tmp_path, leaves=("cat", "dog", "car")):
    rng = np.random.default_rng(0)
    n = 60
    labels = np.arange(n) % 3
    colours = np.array([[200, 40, 40], [160, 80, 40], [40, 40, 200]])
    images = np.clip(colours[labels][:, None, None, :] + rng.normal(0, 30, (n, 16, 16, 3)), 0, 255)
    npz = tmp_path / "toy.npz"
    np.savez(npz, images=images.astype(np.uint8), labels=labels, classes=np.array(["cat", "dog", "car"]))
    tree = tmp_path / "toy_tree.json"
    tree.write_text(
        json.dumps(
            {
                "name": "toy",
                "source": "test",
                "tree": {"root": {"animal": list(leaves[:2]), "vehicle": list(leaves[2:])}},
            }
        )
    )
    return npz, tree


def test_bring_your_own_npz_and_tree(tmp_path, capsys):
    npz, tree = _write_toy(tmp_path)
    out = tmp_path / "out"
    rc = main(
        [
            "compare",
            "--data",
            str(npz),
            "--tree",
            str(tree),
            "--methods",
            "hwc,hxe",
            "--geometry",
            "euclidean,lorentz",
            "--seeds",
            "1",
            "--epochs",
            "1",
            "--out",
            str(out),
            *TINY,
        ]
    )
    assert rc == 0, capsys.readouterr().err
    rows = _rows(out / "results.csv")
    assert {(r["method"], r["geometry"]) for r in rows} == {
        ("hwc", "euclidean"),
        ("hwc", "lorentz"),
        ("hxe", "euclidean"),
        ("hxe", "lorentz"),
    }
    assert {r["eval_embedding"] for r in rows if r["method"] == "hxe"} == {"features"}  # penultimate features
    html = (out / "report.html").read_text()
    assert "toy_tree.json" in html and "vehicle" in html
    assert "could not be drawn" not in html
    assert "HXE (Lorentz, seed 0): Poincaré disk of test encoder features" in html  # via Lorentz.to_ball
    z = np.load(out / "runs" / "hwc-lorentz-s0" / "embeddings.npz")["z_test"]
    assert z.shape[1] == 9  # d + 1 hyperboloid coordinates
    np.testing.assert_allclose(-(z[:, 0] ** 2) + (z[:, 1:] ** 2).sum(1), -1.0, atol=1e-3)


def test_tree_that_does_not_match_the_classes_names_the_mismatch(tmp_path, capsys):
    npz, tree = _write_toy(tmp_path, leaves=("cat", "dog", "bus"))
    err = _fails(capsys, ["compare", "--data", str(npz), "--tree", str(tree), "--out", str(tmp_path / "o"), *TINY])
    assert err == (
        f"hierviz: error: --tree (data.tree): {tree}: tree 'toy' does not match the dataset's 3 classes: "
        "data classes not among the tree's leaves: ['car']; tree leaves with no data class: ['bus']"
    )


def test_data_without_tree_asks_for_one(tmp_path, capsys):
    npz, _ = _write_toy(tmp_path)
    err = _fails(capsys, ["compare", "--data", str(npz), "--out", str(tmp_path / "o"), *TINY])
    assert err == (
        "hierviz: error: data.tree is required with data.path (--tree: a tree name or a tree JSON file "
        "whose leaves are the data's classes: ['cat', 'dog', 'car'])"
    )


@pytest.mark.parametrize(
    "option,value,start,valid",
    [
        (
            "--methods",
            "supcon,simclr2",
            "--methods (methods): unknown name 'simclr2'; did you mean 'simclr' or 'hyilr'?",
            ["simclr", "supcon", "hc-outside", "hxe", "soft-labels", "hwc", "lam", "hwc+lam"],
        ),
        ("--methods", "supcn", "--methods (methods): unknown name 'supcn'; did you mean 'supcon'?", ["hwc+lam"]),
        (
            "--geometry",
            "spherical",
            "--geometry (geometries): unknown name 'spherical';",
            ["euclidean", "poincare", "lorentz"],
        ),
        ("--geometry", "poincar", "--geometry (geometries): unknown name 'poincar'; did you mean 'poincare'?", []),
        (
            "--dataset",
            "imagenet",
            "--dataset (data.dataset): unknown dataset 'imagenet';",
            ["ham10000", "ham10000-sample", "breastmnist"],
        ),
        (
            "--tree",
            "linnaeus",
            "--tree (data.tree): unknown tree 'linnaeus';",
            ["two-step", "benign-malignant", "breakhis"],
        ),
        (
            "--encoder",
            "vit",
            "--encoder (model.encoder): unknown encoder 'vit';",
            ["small_cnn", "resnet18", "resnet50"],
        ),
        ("--projection", "tsen", "--projection (eval.projection): unknown projection 'tsen';", ["tsne", "umap", "pca"]),
    ],
)
def test_unknown_names_list_the_valid_ones(tmp_path, capsys, option, value, start, valid):
    err = _fails(capsys, ["compare", "--preset=quick-ham10000", option, value, "--out", str(tmp_path / "o"), "--quiet"])
    assert err.startswith(f"hierviz: error: {start}"), err
    for name in valid:
        assert name in err


def test_missing_data_file_names_file_and_fetch_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    err = _fails(capsys, ["compare", "--dataset", "dermamnist", "--out", str(tmp_path / "o"), "--quiet"])
    assert "dermamnist.npz" in err and "data_scripts" in err


def test_missing_data_path(tmp_path, capsys):
    err = _fails(
        capsys, ["compare", "--data", str(tmp_path / "nope.npz"), "--tree", "two-step", "--out", str(tmp_path)]
    )
    assert err == f"hierviz: error: {tmp_path / 'nope.npz'} does not exist (expected a .npz file or an image folder)"


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--epochs", "0"], "--epochs (train.epochs): must be an integer >= 1, got 0"),
        (["--limit", "1"], "--limit (data.limit): must be an integer >= 2 (or null), got 1"),
        (
            ["--curvature", "-1"],
            "--curvature (model.curvature): must be in [1e-07, 500] (c of curvature -c; outside it the maps are wrong), "
            "got -1.0",
        ),
        (["--seeds", "0"], "--seeds (seeds): must be an integer >= 1, got 0"),
        (["--threads", "0"], "--threads (train.threads): must be an integer >= 1 (or null), got 0"),
        (["--tau", "0"], "--tau (loss.tau): must be > 0, got 0.0"),
    ],
)
def test_bad_numbers_are_refused(tmp_path, capsys, extra, message):
    assert (
        _fails(capsys, ["compare", "--preset=quick-ham10000", *extra, "--out", str(tmp_path)])
        == f"hierviz: error: {message}"
    )


def test_argparse_errors_are_one_line_with_exit_2(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["compare", "--epochs", "three"])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1] == (
        "hierviz compare: error: argument --epochs: invalid int value: 'three' (see 'hierviz compare --help')"
    )


def test_quick_and_another_preset_contradict(capsys):
    err = _fails(capsys, ["compare", "--quick", "--preset", "full"])
    assert err == "hierviz: error: --quick and --preset full contradict each other; give one"


def test_debug_prints_the_traceback(tmp_path, capsys):
    assert main(["compare", "--preset=quick-ham10000", "--epochs", "0", "--out", str(tmp_path), "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("hierviz: error: --epochs (train.epochs)")


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
    err = _fails(
        capsys,
        [
            "compare",
            "--preset=quick-ham10000",
            "--limit",
            "40",
            "--epochs",
            "3",
            "--seeds",
            "1",
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            "--out",
            str(out),
            *TINY,
            "--batch-size",
            "64",
        ],
        1,
    )
    assert err.startswith("hierviz: error: non-finite loss at epoch 1, step 0") and "supcon=" in err
    assert load_checkpoint(out / "runs" / "supcon-euclidean-s0")["epoch"] == 1
    assert not (out / "runs" / "supcon-euclidean-s0" / "result.json").exists()


def test_python_dash_m_entry_point(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["hierviz", "compare", "--help"])
    with pytest.raises(SystemExit) as ei:
        runpy.run_module("hierviz", run_name="__main__")
    assert ei.value.code == 0
    text = capsys.readouterr().out
    for opt in (
        "--dataset",
        "--tree",
        "--methods",
        "--geometry",
        "--seeds",
        "--epochs",
        "--resume",
        "--quick",
        "--limit",
        "--workers",
        "--encoder",
        "--embed-dim",
        "--image-size",
        "--device",
        "--out",
    ):
        assert opt in text


def test_full_disk_is_exit_1_and_keeps_the_last_checkpoint(tmp_path, capsys, monkeypatch):
    import errno

    import hierviz.training.loop as loop

    real, saves = loop.atomic_save, []

    def save(obj, path, **kw):
        saves.append(obj["epoch"])
        if len(saves) == 2:  # the second epoch's checkpoint hits a full disk
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(obj, path, **kw)

    monkeypatch.setattr(loop, "atomic_save", save)
    out = tmp_path / "o"
    err = _fails(
        capsys,
        [
            "compare",
            "--preset=quick-ham10000",
            "--limit",
            "60",
            "--epochs",
            "3",
            "--seeds",
            "1",
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            "--out",
            str(out),
            *TINY,
        ],
        1,
    )
    ckpt = out / "runs" / "supcon-euclidean-s0" / "checkpoint.pt"
    assert err == (
        f"hierviz: error: no space left on the device while writing {ckpt}; the last complete "
        "checkpoint of each run is kept: free some space and rerun with --resume"
    )
    assert load_checkpoint(ckpt)["epoch"] == 1
    monkeypatch.setattr(loop, "atomic_save", real)
    assert (
        main(
            [
                "compare",
                "--preset=quick-ham10000",
                "--limit",
                "60",
                "--epochs",
                "3",
                "--seeds",
                "1",
                "--methods",
                "supcon",
                "--geometry",
                "euclidean",
                "--out",
                str(out),
                "--resume",
                *TINY,
            ]
        )
        == 0
    )
    assert load_checkpoint(ckpt)["epoch"] == 3


def test_unexpected_runtime_error_is_exit_1_one_line(tmp_path, capsys):
    def boom(epoch, info):
        raise RuntimeError("boom\nsecond line")

    err = _fails(
        capsys,
        [
            "compare",
            "--preset=quick-ham10000",
            "--limit",
            "60",
            "--epochs",
            "1",
            "--seeds",
            "1",
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            "--out",
            str(tmp_path),
            *TINY,
        ],
        1,
        _run_callbacks={"supcon-euclidean-s0": [boom]},
    )
    assert err == "hierviz: error: RuntimeError: boom second line (rerun with --debug for the traceback)"
