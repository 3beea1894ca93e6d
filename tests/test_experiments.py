"""Experiments as a library: config, presets, overrides, fingerprints, compare/report, clean failures."""

from __future__ import annotations

import csv
import json
import re
import sys

import numpy as np
import pytest

from hierviz.cli import main
from hierviz.experiments import (
    ConfigError,
    ExperimentConfig,
    compare,
    config_keys,
    diff_keys,
    fingerprint,
    load_data,
    preset_names,
    report,
    resolve_config,
)
from hierviz.report import METRICS
from hierviz.training import load_checkpoint

TINY = [
    "data.limit=60",
    "seeds=1",
    "model.width=4",
    "model.embed_dim=8",
    "data.image_size=16",
    "eval.projection=pca",
    "train.batch_size=32",
    "train.epochs=1",
]
TINY_CLI = [
    "--limit",
    "60",
    "--seeds",
    "1",
    "--set",
    "model.width=4",
    "--set",
    "model.embed_dim=8",
    "--set",
    "data.image_size=16",
    "--projection",
    "pca",
    "--batch-size",
    "32",
    "--quiet",
]


def _cli(capsys, argv, code):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == code, err
    if code != 0:
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return out, err


# --------------------------------------------------------------------------- config


def test_quick_preset_with_overrides():
    cfg = resolve_config("quick-ham10000", ["loss.tau=0.2", "train.epochs=1"])
    assert (cfg.loss["tau"], cfg.train.epochs) == (0.2, 1)
    assert cfg.methods == ["supcon", "hwc", "hwc+lam"] and cfg.data.dataset == "ham10000-sample"
    assert (cfg.model.encoder, cfg.model.width, cfg.train.lr_backbone) == ("small_cnn", 16, 1e-3)


@pytest.mark.parametrize("name", ["quick", "medium", "full", "gpu"])
def test_every_bundled_preset_resolves(name):
    assert name in preset_names()
    cfg = resolve_config(name)
    assert cfg.seeds >= 1 and cfg.train.epochs >= 1


def test_every_method_hyperparameter_is_a_key():
    keys = set(config_keys())
    for k in (
        "loss.tau",
        "loss.hwc.alpha",
        "loss.hwc.gamma",
        "loss.hwc.alpha_max",
        "loss.lam.lambda",
        "loss.lam.margins",
        "loss.lam.level_weights",
        "loss.lam.eta",
        "loss.hxe.alpha",
        "loss.soft_labels.beta",
        "model.curvature",
        "model.clip_r",
        "train.epochs",
        "data.limit",
        "eval.projection",
    ):
        assert k in keys
    cfg = resolve_config(
        "quick-ham10000", ["loss.lam.margins=[0.5, 0.3, 0.1]", "loss.hwc.alpha_max=2", "model.clip_r=null"]
    )
    assert cfg.loss["lam.margins"] == [0.5, 0.3, 0.1] and cfg.loss["hwc.alpha_max"] == 2 and cfg.model.clip_r is None


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.epoch=1", "--set train.epoch=1: unknown key 'train.epoch'; did you mean 'train.epochs'?"),
        ("loss.taus=0.1", "--set loss.taus=0.1: unknown key 'loss.taus'; did you mean 'loss.tau'"),
        ("train.epochs=abc", "--set train.epochs=abc: expected an integer, got 'abc'"),
        ("train.epochs=0", "train.epochs: must be an integer >= 1, got 0"),
        ("data.limit=1.5", "--set data.limit=1.5: expected an integer, got 1.5"),
        (
            "model.curvature=-1",
            "model.curvature: must be in [1e-07, 500] (c of curvature -c; outside it the maps are wrong), got -1.0",
        ),
        (
            "model.curvature=1000",
            "model.curvature: must be in [1e-07, 500] (c of curvature -c; outside it the maps are wrong), got 1000.0",
        ),
        ("model.clip_r=0", "model.clip_r: must be > 0 (or null), got 0.0"),
        ("loss.tau=0", "loss.tau: must be > 0, got 0.0"),
        ("loss.lam.eta=abc", "--set loss.lam.eta=abc: expected a finite number, got 'abc'"),
        ("train.amp=maybe", "--set train.amp=maybe: expected true or false, got 'maybe'"),
        ("methods=supcn", "methods: unknown name 'supcn'; did you mean 'supcon'? valid names: "),
        ("train.epochs", "--set train.epochs: expected key=value, e.g. --set train.epochs=5"),
    ],
)
def test_bad_overrides_name_the_key_and_the_fix(override, message):
    with pytest.raises(ConfigError) as ei:
        resolve_config("quick-ham10000", [override])
    assert str(ei.value).startswith(message), str(ei.value)


def test_bad_set_on_the_command_line_is_one_line(capsys):
    _, err = _cli(capsys, ["compare", "--preset=quick-ham10000", "--set", "train.epoch=1"], 2)
    assert err == "hierviz: error: --set train.epoch=1: unknown key 'train.epoch'; did you mean 'train.epochs'?\n"
    _, err = _cli(capsys, ["config", "--set", "train.epochs"], 2)
    assert err == "hierviz: error: --set train.epochs: expected key=value, e.g. --set train.epochs=5\n"
    _, err = _cli(capsys, ["config", "--preset=quick-ham10000", "--set", "train.epochs=0"], 2)
    assert err == "hierviz: error: --epochs (train.epochs): must be an integer >= 1, got 0\n"


def test_user_preset_file_and_bad_toml(tmp_path):
    good = tmp_path / "mine.toml"
    good.write_text('methods = ["supcon"]\n[train]\nepochs = 7\n', encoding="utf-8")
    cfg = resolve_config(str(good))
    assert cfg.methods == ["supcon"] and cfg.train.epochs == 7
    bad = tmp_path / "bad.toml"
    bad.write_text("[train\nepochs = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^--preset {re.escape(str(bad))}: invalid TOML \(.*line 1"):
        resolve_config(str(bad))
    with pytest.raises(ConfigError, match=r"^--preset .*nope\.toml: no such file$"):
        resolve_config(str(tmp_path / "nope.toml"))
    typo = tmp_path / "typo.toml"
    typo.write_text("[train]\nepoch = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"typo\.toml: train\.epoch: unknown key 'train\.epoch'; did you mean"):
        resolve_config(str(typo))
    with pytest.raises(ConfigError, match=r"unknown preset 'quik'; did you mean 'quick'"):
        resolve_config("quik")


def test_fingerprint_ignores_out_but_not_results_keys():
    a, b = ExperimentConfig().to_dict(), ExperimentConfig().to_dict()
    b["out"], b["train"]["device"], b["eval"]["projection"] = "elsewhere", "cpu", "pca"
    assert fingerprint(a) == fingerprint(b) and len(fingerprint(a)) == 16 and diff_keys(a, b) == []
    b["loss"]["tau"] = 0.2
    assert fingerprint(a) != fingerprint(b) and diff_keys(a, b) == ["loss.tau"]
    b["train"]["epochs"] = 3
    assert diff_keys(a, b) == ["loss.tau", "train.epochs"]
    assert diff_keys(a, b, ignore=set()) == ["eval.projection", "loss.tau", "out", "train.device", "train.epochs"]
    # the same config resolved twice gives the same fingerprint
    x = resolve_config("quick-ham10000", ["loss.tau=0.2", "out=a"]).to_dict()
    y = resolve_config("quick-ham10000", ["out=b", "loss.tau=0.2"]).to_dict()
    assert fingerprint(x) == fingerprint(y)


def test_config_round_trips_through_json():
    cfg = resolve_config("quick-ham10000", ["loss.tau=0.3"])
    assert ExperimentConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))).to_dict() == cfg.to_dict()


# --------------------------------------------------------------------------- compare, report, registry


def test_compare_library_call_writes_runs_and_returns_the_table(tmp_path):
    cfg = resolve_config(
        "quick-ham10000", [*TINY, "methods=supcon", "geometries=euclidean,poincare", f"out={tmp_path}"]
    )
    result = compare(cfg, progress=False, verbose=False)
    assert [(r["method"], r["geometry"]) for r in result.rows] == [("supcon", "euclidean"), ("supcon", "poincare")]
    assert "| SupCon |" in result.markdown and result.paths["html"].is_file()
    saved = json.loads((tmp_path / "runs" / "supcon-poincare-s0" / "config.json").read_text())
    assert saved["run"] == {"method": "supcon", "geometry": "poincare", "seed": 0, "world_size": 1,
                            "global_batch_size": saved["train"]["batch_size"],
                            "depth_terms": {"cone": 0.2, "center": 1.0, "cpcc": 1.0}}  # fmt: skip
    assert saved["train"]["epochs"] == 1
    rec = json.loads((tmp_path / "runs" / "supcon-poincare-s0" / "result.json").read_text())
    assert rec["geometry_config"] == {"name": "poincare", "c": 1.0} and rec["method_display"] == "SupCon"
    assert (rec["world_size"], rec["global_batch_size"]) == (1, 32)  # one process; train.batch_size=32
    # radius diagnostics: per depth of the two-step tree, the learned scale, the clip share
    rad = rec["radius"]
    assert [row["depth"] for row in rad["radius_by_depth"]] == [0, 1, 2, 3]
    assert 0.0 <= rad["clip_fraction"] <= 1.0 and rad["scale"] > 0 and rad["radius_std"] > 0
    eu = json.loads((tmp_path / "runs" / "supcon-euclidean-s0" / "result.json").read_text())
    assert eu["radius"]["clip_fraction"] is None and eu["radius"]["max_radius"] is None
    assert "**Radius**" in result.markdown and "SupCon (Poincaré, seed 0)" in result.markdown


def test_cli_set_values_reach_the_run_config(tmp_path, capsys):
    _cli(
        capsys,
        [
            "compare",
            "--preset",
            "quick-ham10000",
            "--set",
            "loss.tau=0.2",
            "--set",
            "train.epochs=1",
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            *TINY_CLI,
            "--out",
            str(tmp_path),
        ],
        0,
    )
    saved = json.loads((tmp_path / "runs" / "supcon-euclidean-s0" / "config.json").read_text())
    assert saved["loss"]["tau"] == 0.2 and saved["train"]["epochs"] == 1


def test_config_command_prints_resolved_config_and_keys(capsys):
    out, _ = _cli(capsys, ["config", "--preset", "quick-ham10000", "--set", "loss.tau=0.2"], 0)
    assert json.loads(out)["loss"]["tau"] == 0.2
    out, _ = _cli(capsys, ["config", "--keys"], 0)
    listed = {line.split(" = ")[0]: line.split(" = ", 1)[1].split("    #")[0] for line in out.splitlines()}
    assert {
        k: listed[k]
        for k in (
            "loss.tau",
            "loss.hwc.alpha",
            "loss.hwc.gamma",
            "loss.hwc.alpha_max",
            "loss.lam.lambda",
            "loss.lam.margins",
            "loss.lam.eta",
            "loss.hxe.alpha",
            "model.curvature",
            "model.clip_r",
        )
    } == {
        "loss.tau": "0.1",
        "loss.hwc.alpha": "0.5",
        "loss.hwc.gamma": "0.5",
        "loss.hwc.alpha_max": "null",
        "loss.lam.lambda": "1.0",
        "loss.lam.margins": "null",
        "loss.lam.eta": "0.05",
        "loss.hxe.alpha": "0.1",
        "model.curvature": "1.0",
        "model.clip_r": "3.0",
    }
    assert list(listed) == config_keys()  # every key, in order
    assert "# λ_LAM: weight of the LAM term" in out


@pytest.fixture
def toy_cleanup():
    """Forget ``tests.toy_method`` and what it registered, after the test."""
    from hierviz.methods import LOSS_HPARAMS, METHODS

    sys.modules.pop("tests.toy_method", None)
    yield
    if "toy-l2" in METHODS:
        METHODS.unregister("toy-l2")
    LOSS_HPARAMS.pop("toy_l2.toy_scale", None)
    sys.modules.pop("tests.toy_method", None)


def test_toy_method_from_python_without_touching_package_files(tmp_path, toy_cleanup):
    import importlib

    toy = importlib.import_module("tests.toy_method")
    assert "loss.toy_l2.toy_scale" in config_keys() and "loss.toy_scale" not in config_keys()
    cfg = resolve_config("quick-ham10000", [*TINY, "geometries=euclidean", f"out={tmp_path}"])
    cfg.methods = ["toy-l2"]
    result = compare(cfg, progress=False, verbose=False)
    rows = list(csv.DictReader(open(tmp_path / "results.csv", newline="")))
    assert [(r["method"], r["geometry"], r["seed"]) for r in rows] == [("toy-l2", "euclidean", "0")]
    for m in METRICS:
        assert 0.0 <= float(rows[0][m]) <= 1.0
    md = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert "| Toy L2 | " in md and md == result.markdown
    assert toy.SEEN_SCALES == [1.0]
    rec = result.record("toy-l2", "euclidean", 0)
    assert rec["method_display"] == "Toy L2" and set(rec["step_history"]) == {"loss", "pull"}
    assert all(v >= 0 for v in rec["step_history"]["pull"])


def test_toy_method_from_the_shell_with_import_and_set(tmp_path, capsys, toy_cleanup):
    _cli(
        capsys,
        [
            "compare",
            "--import",
            "tests.toy_method",
            "--preset",
            "quick-ham10000",
            "--methods",
            "toy-l2",
            "--geometry",
            "euclidean",
            "--set",
            "loss.toy_l2.toy_scale=2",
            "--epochs",
            "1",
            *TINY_CLI,
            "--out",
            str(tmp_path),
        ],
        0,
    )
    assert sys.modules["tests.toy_method"].SEEN_SCALES == [2.0]  # --set reached the loss
    rows = list(csv.DictReader(open(tmp_path / "results.csv", newline="")))
    assert [r["method"] for r in rows] == ["toy-l2"]
    assert "| Toy L2 |" in (tmp_path / "results.md").read_text()
    saved = json.loads((tmp_path / "runs" / "toy-l2-euclidean-s0" / "config.json").read_text())
    assert saved["loss"]["toy_l2.toy_scale"] == 2.0 and saved["methods"] == ["toy-l2"]


def test_toy_method_without_import_is_unknown(capsys, toy_cleanup):
    _, err = _cli(capsys, ["compare", "--preset=quick-ham10000", "--methods", "toy-l2"], 2)
    assert err.startswith("hierviz: error: --methods (methods): unknown name 'toy-l2'; valid names: simclr, ")


def test_report_refuses_runs_with_different_settings(tmp_path, capsys):
    base = ["compare", "--preset", "quick-ham10000", "--methods", "supcon", *TINY_CLI, "--out", str(tmp_path)]
    _cli(capsys, [*base, "--geometry", "euclidean", "--epochs", "1"], 0)
    other = tmp_path / "other"
    _cli(capsys, [*base[:-1], str(other), "--geometry", "poincare", "--epochs", "2"], 0)
    import shutil

    shutil.copytree(other / "runs" / "supcon-poincare-s0", tmp_path / "runs" / "supcon-poincare-s0")
    _, err = _cli(capsys, ["report", "--out", str(tmp_path)], 2)
    assert "were trained with different settings (train.epochs: 1 vs 2)" in err
    with pytest.raises(ConfigError, match="train.epochs"):
        report(tmp_path, verbose=False)


# --------------------------------------------------------------------------- clean failures


def test_corrupt_npz_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(np.random.default_rng(0).bytes(500))
    _, err = _cli(capsys, ["compare", "--data", str(bad), "--tree", "two-step", "--out", str(tmp_path / "o")], 2)
    assert err.startswith(f"hierviz: error: could not read {bad}: ") and "numpy.savez_compressed(path" in err


def test_unwritable_out_is_refused_before_training(tmp_path, capsys):
    blocker = tmp_path / "f.txt"
    blocker.write_text("x")
    _, err = _cli(capsys, ["compare", "--preset=quick-ham10000", "--out", str(blocker / "out")], 2)
    assert err == (
        f"hierviz: error: --out {blocker / 'out'}: cannot write there (Not a directory); "
        "choose a folder you can write to\n"
    )
    assert blocker.read_text() == "x"


@pytest.mark.parametrize("content", ["random", "no-match", "missing"])
def test_bad_pretrained_file_is_one_line(tmp_path, capsys, content):
    bad = tmp_path / "w.pt"
    if content == "random":
        bad.write_bytes(np.random.default_rng(0).bytes(300))
        want = f"--pretrained (model.pretrained): could not read {str(bad)!r} as a torch state_dict ("
    elif content == "no-match":
        import torch

        torch.save({"x": torch.zeros(3)}, bad)
        want = f"--pretrained (model.pretrained): no tensor in {str(bad)!r} matches the encoder's parameter names"
    else:
        want = f"--pretrained (model.pretrained): weights file {str(bad)!r} does not exist"
    _, err = _cli(
        capsys,
        [
            "compare",
            "--preset=quick-ham10000",
            "--pretrained",
            str(bad),
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            *TINY_CLI,
            "--out",
            str(tmp_path / "o"),
        ],
        2,
    )
    assert err.startswith(f"hierviz: error: {want}"), err
    assert not (tmp_path / "o" / "runs" / "supcon-euclidean-s0" / "checkpoint.pt").exists()


def test_limit_below_classes_times_splits_is_refused(tmp_path, capsys):
    _, err = _cli(capsys, ["compare", "--preset=quick-ham10000", "--limit", "15", "--out", str(tmp_path)], 2)
    assert err == (
        "hierviz: error: data.limit=15 is below classes × splits (7 × 3 = 21): every class needs "
        "images in train, val and test; use --limit 21 or more\n"
    )
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    ds, tree, n_all = load_data(resolve_config("quick-ham10000", ["data.limit=21"]))  # the bound itself is accepted
    assert (len(ds.labels), tree.num_leaves) == (21, 7) and n_all > 21
    assert (np.bincount(np.asarray(ds.labels), minlength=7) > 0).all()


def test_unknown_dataset_and_tree_name_the_option(tmp_path, capsys):
    _, err = _cli(capsys, ["compare", "--preset=quick-ham10000", "--tree", "two-stp", "--out", str(tmp_path)], 2)
    assert err.startswith("hierviz: error: --tree (data.tree): unknown tree 'two-stp'; did you mean 'two-step'?")
    _, err = _cli(capsys, ["compare", "--dataset", "ham1000", "--out", str(tmp_path)], 2)
    assert err.startswith("hierviz: error: --dataset (data.dataset): unknown dataset 'ham1000'; did you mean")


@pytest.mark.parametrize("form", ["parent-map", "nested", "paths"])
def test_plain_tree_json_forms_with_own_data(tmp_path, capsys, form):
    rng = np.random.default_rng(0)
    labels = np.arange(60) % 3
    images = rng.integers(0, 255, (60, 16, 16, 3), dtype=np.uint8)
    npz = tmp_path / "toy.npz"
    np.savez(npz, images=images, labels=labels, classes=np.array(["cat", "dog", "car"]))
    tree = tmp_path / "tree.json"
    obj = {
        "parent-map": {"cat": "animal", "dog": "animal", "car": "vehicle", "animal": "root", "vehicle": "root"},
        "nested": {"root": {"animal": {"cat": {}, "dog": {}}, "vehicle": {"car": {}}}},
        "paths": [["root", "animal", "cat"], ["root", "animal", "dog"], ["root", "vehicle", "car"]],
    }[form]
    tree.write_text(json.dumps(obj))
    _cli(
        capsys,
        [
            "compare",
            "--data",
            str(npz),
            "--tree",
            str(tree),
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            "--epochs",
            "1",
            "--seeds",
            "1",
            "--set",
            "model.encoder=small_cnn",
            "--set",
            "model.width=4",
            "--set",
            "model.embed_dim=8",
            "--projection",
            "pca",
            "--quiet",
            "--out",
            str(tmp_path / "o"),
        ],
        0,
    )
    rows = list(csv.DictReader(open(tmp_path / "o" / "results.csv", newline="")))
    assert [(r["method"], r["geometry"]) for r in rows] == [("supcon", "euclidean")]
    saved = json.loads((tmp_path / "o" / "tree.json").read_text())
    from hierviz.hierarchy import LabelTree

    t = LabelTree.from_dict(saved)
    assert list(t.leaves) == ["cat", "dog", "car"] and t.height == 2


def test_corrupt_checkpoint_on_resume_names_the_file_and_keeps_the_previous(tmp_path, capsys):
    args = [
        "compare",
        "--preset=quick-ham10000",
        "--methods",
        "supcon",
        "--geometry",
        "euclidean",
        *TINY_CLI,
        "--epochs",
        "3",
        "--out",
        str(tmp_path),
    ]

    def stop(epoch, info):
        if epoch == 1:
            raise KeyboardInterrupt

    assert main(args, _run_callbacks={"supcon-euclidean-s0": [stop]}) == 130
    capsys.readouterr()
    ckpt = tmp_path / "runs" / "supcon-euclidean-s0" / "checkpoint.pt"
    assert (ckpt.parent / "checkpoint.pt.prev").is_file()
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 0xFF
    ckpt.write_bytes(bytes(data))
    prev = ckpt.parent / "checkpoint.pt.prev"
    done = load_checkpoint(prev)["epoch"]
    _, err = _cli(capsys, [*args, "--resume"], 2)
    assert err.startswith(
        f"hierviz: error: checkpoint {str(ckpt)!r} is corrupt (sha256 mismatch: the file changed after it was "
        f"written); refusing to resume from it; the previous checkpoint is kept at {str(prev)!r}: move it to "
        "'checkpoint.pt'"
    )
    assert prev.is_file() and not (ckpt.parent / "result.json").exists()
    # following the message loses one epoch, nothing more
    prev.replace(ckpt)
    assert done == 1
    _cli(capsys, [*args, "--resume"], 0)
    assert json.loads((ckpt.parent / "result.json").read_text())["epochs"] == 3
    assert load_checkpoint(ckpt)["epoch"] == 3


def test_unknown_import_is_one_line(capsys):
    _, err = _cli(capsys, ["compare", "--import", "no_such_module_xyz", "--preset=quick-ham10000"], 2)
    assert err == (
        "hierviz: error: --import no_such_module_xyz: cannot import it (No module named "
        "'no_such_module_xyz'); put the module on PYTHONPATH or in the current folder, "
        "or give the path of a .py file\n"
    )


def test_constant_images_give_a_report_with_a_note_not_a_crash(tmp_path, capsys):
    """0.1 segfaulted in t-SNE here and wrote no results.csv."""
    npz = tmp_path / "flat.npz"
    labels = np.arange(60) % 3
    np.savez(npz, images=np.full((60, 16, 16, 3), 128, np.uint8), labels=labels, classes=np.array(["a", "b", "c"]))
    tree = tmp_path / "tree.json"
    tree.write_text(json.dumps({"a": "x", "b": "x", "c": "root", "x": "root"}))
    _cli(
        capsys,
        [
            "compare",
            "--data",
            str(npz),
            "--tree",
            str(tree),
            "--methods",
            "supcon",
            "--geometry",
            "euclidean",
            "--epochs",
            "1",
            "--seeds",
            "1",
            "--set",
            "model.encoder=small_cnn",
            "--set",
            "model.width=4",
            "--set",
            "model.embed_dim=8",
            "--projection",
            "tsne",
            "--quiet",
            "--out",
            str(tmp_path / "o"),
        ],
        0,
    )
    rows = list(csv.DictReader(open(tmp_path / "o" / "results.csv", newline="")))
    assert [r["method"] for r in rows] == ["supcon"]
    html = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "SupCon (Euclidean, seed 0): the test embeddings are collapsed: all " in html
    assert "its disk and TSNE map are not drawn." in html


def test_report_input_errors_are_one_line(tmp_path, capsys):
    _, err = _cli(capsys, ["report", "--out", str(tmp_path)], 2)
    assert err == (
        f"hierviz: error: --out: no finished runs under {tmp_path / 'runs'} (run 'hierviz compare "
        f"--out {tmp_path}' first)\n"
    )
    run = tmp_path / "runs" / "supcon-euclidean-s0"
    run.mkdir(parents=True)
    (run / "result.json").write_text('{"method": "supcon"', encoding="utf-8")
    _, err = _cli(capsys, ["report", "--out", str(tmp_path)], 2)
    assert err.startswith(f"hierviz: error: {run / 'result.json'}: not a readable JSON run record (")
    assert err.endswith("; delete the run folder and rerun\n")
    (run / "result.json").write_text('{"method": "supcon", "geometry": "euclidean", "seed": 0}', encoding="utf-8")
    _, err = _cli(capsys, ["report", "--out", str(tmp_path)], 2)  # the missing keys named, with the file
    assert err == f"hierviz: error: {run / 'result.json'}: run record without key 'name' (and 'metrics'); " + (
        "delete the run folder and rerun\n"
    )
    rec = '{"name": "supcon-euclidean-s0", "method": "supcon", "geometry": "euclidean", "seed": 0, "metrics": {}}'
    (run / "result.json").write_text(rec, encoding="utf-8")
    _, err = _cli(capsys, ["report", "--out", str(tmp_path)], 2)
    assert err == (
        f"hierviz: error: {run}: no config.json (written by hierviz 0.1?); rerun it with this version "
        "or report it from its own --out folder\n"
    )


def test_another_dataset_on_the_command_line_takes_its_own_default_tree():
    cfg = resolve_config("quick-ham10000", ["data.dataset=hier-mnist"])  # quick pins two-step, HAM10000's tree
    assert cfg.data.tree is None
    cfg = resolve_config("quick-ham10000", ["data.dataset=hier-mnist", "data.tree=hier-mnist"])
    assert cfg.data.tree == "hier-mnist"
    assert resolve_config("quick-ham10000", ["train.epochs=1"]).data.tree == "two-step"
