"""A method is a declared object: what the run core reads about a method is a typed field of
:class:`hierviz.methods.Method`, recorded in each run's ``config.json``, fingerprinted and shown in the
report header; the optimiser a run records is the one ``fit`` built."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from hierviz.cli import main
from hierviz.experiments import compare, fingerprint, resolve_config
from hierviz.experiments.config import ExperimentConfig
from hierviz.losses import Objective
from hierviz.methods import METHODS, Method, TrainOverrides, get_method, register_method
from hierviz.methods import registry as method_registry
from hierviz.training import config as train_config
from hierviz.training import load_checkpoint

REPO = Path(__file__).resolve().parents[1]


def _spy(seen: dict):
    """A ``fit`` callback recording the optimiser and the learning rates ``fit`` actually steps with."""

    def cb(epoch, info):
        opt = info["optimizer"]
        seen.setdefault("type", type(opt))
        seen.setdefault("groups", [])
        seen["groups"].append([(g["name"], g["lr"], g["weight_decay"], g.get("decoupled_weight_decay")) for g in
                               opt.param_groups])  # fmt: skip

    return cb


def test_override_values_are_train_configs():
    """TrainOverrides accepts exactly TrainConfig's optimisers and schedules (methods does not import training)."""
    assert method_registry.OVERRIDE_OPTIMIZERS == train_config.OPTIMIZERS
    assert method_registry.OVERRIDE_SCHEDULES == train_config.SCHEDULES
    with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0"):
        TrainOverrides(weight_decay=-1.0)
    with pytest.raises(ValueError, match="feature_dropout must be a number in"):
        Method("x", lambda *a: None, "X", feature_dropout=1.0)
    with pytest.raises(ValueError, match="label_prior must be callable"):
        Method("x", lambda *a: None, "X", label_prior="no")


def test_builtin_methods_without_declarations_keep_their_run_config():
    """A method that declares nothing adds no ``method`` section: its fingerprint is what it was before."""
    cfg = ExperimentConfig()
    for name in ("supcon", "hwc+lam", "hxe", "hmce", "t"):
        assert get_method(name).declared() == {}
        assert "method" not in cfg.run_config(name, "poincare", 0)
    hyilr = cfg.run_config("hyilr", "lorentz", 0)
    bare = {k: v for k, v in hyilr.items() if k != "method"}
    assert fingerprint(hyilr) != fingerprint(bare)  # the declaration is fingerprinted


def test_legacy_build_attributes_are_lifted_with_a_warning():
    """A 0.3 method that glued ``train`` onto its build function still works, and is told the new way."""

    def build(tree, geometry, hp):
        return Objective("legacy", {})

    build.train = {"optimizer": "adam", "schedule": "constant"}
    build.feature_dropout = 0.0
    with pytest.warns(DeprecationWarning, match=r"register_method\(feature_dropout=..., train=...\)"):
        register_method("legacy-glue", replace=True)(build)
    try:
        m = get_method("legacy-glue")
        assert m.train == TrainOverrides(optimizer="adam", schedule="constant") and m.feature_dropout == 0.0
    finally:
        METHODS.unregister("legacy-glue")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        register_method("declared-ok", train={"optimizer": "adam"}, replace=True)(lambda t, g, hp: None)
    assert get_method("declared-ok").train.optimizer == "adam"
    METHODS.unregister("declared-ok")


def test_hyilr_records_the_optimiser_fit_built(tmp_path, monkeypatch):
    """A HyILR run's config.json and result.json state Adam, a constant rate and no weight decay, which is the
    optimiser fit built and stepped; SupCon in the same comparison keeps AdamW, warm-up + cosine and train.*'s
    weight decay. The report header names the override."""
    from test_paper04 import make_corpus

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=6, n_test=2)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    out = tmp_path / "out"
    cfg = resolve_config(
        "quick",
        ["data.dataset=20news", "methods=hyilr,supcon", "geometries=euclidean", "seeds=1", "train.epochs=3",
         "train.weight_decay=0.05", "train.lr_backbone=0.002", "eval.projection=pca", f"out={out}"],
    )  # fmt: skip
    seen = {"hyilr": {}, "supcon": {}}
    compare(cfg, progress=False, verbose=False, callbacks={f"{m}-euclidean-s0": [_spy(seen[m])] for m in seen})

    hy_cfg = json.loads((out / "runs" / "hyilr-euclidean-s0" / "config.json").read_text())
    hy_rec = json.loads((out / "runs" / "hyilr-euclidean-s0" / "result.json").read_text())
    assert hy_cfg["method"]["train"] == {"optimizer": "adam", "schedule": "constant", "weight_decay": 0.0}
    assert hy_cfg["method"]["classifier"] is True
    assert hy_cfg["fingerprint"] == hy_rec["fingerprint"]
    rec_opt = hy_rec["optimizer"]
    assert (rec_opt["optimizer"], rec_opt["schedule"], rec_opt["weight_decay"]) == ("adam", "constant", 0.0)
    # the optimiser fit built: torch.optim.Adam (not AdamW), L2 decay 0, the peak rates at every epoch
    assert seen["hyilr"]["type"] is torch.optim.Adam
    assert len(seen["hyilr"]["groups"]) == 3
    for groups in seen["hyilr"]["groups"]:
        lrs = {name: lr for name, lr, _, _ in groups}
        assert lrs["backbone"] == pytest.approx(rec_opt["lr_backbone"]) == pytest.approx(0.002)
        assert lrs["head"] == lrs["objective"] == pytest.approx(rec_opt["lr_head"]) == pytest.approx(0.02)
        assert all(wd == 0.0 and not decoupled for _, _, wd, decoupled in groups)

    sup_cfg = json.loads((out / "runs" / "supcon-euclidean-s0" / "config.json").read_text())
    sup_rec = json.loads((out / "runs" / "supcon-euclidean-s0" / "result.json").read_text())
    assert "method" not in sup_cfg
    assert sup_rec["optimizer"]["optimizer"] == "adamw" and sup_rec["optimizer"]["weight_decay"] == 0.05
    assert seen["supcon"]["type"] is torch.optim.AdamW
    head_lrs = [dict((n, lr) for n, lr, _, _ in g)["head"] for g in seen["supcon"]["groups"]]
    assert head_lrs[-1] < head_lrs[0]  # cosine decay
    assert all(wd == 0.05 for g in seen["supcon"]["groups"] for _, _, wd, _ in g)

    header = json.loads((out / "compare.json").read_text())["header"]["Training"]
    assert "weight decay 0.05" in header
    assert header.endswith("the methods' own optimiser: HyILR: Adam, constant learning rate, weight decay 0")
    assert "HyILR: Adam, constant learning rate, weight decay 0" in (out / "report.html").read_text()


@pytest.fixture
def declared_cleanup():
    """Forget ``tests.declared_method`` and what it registered, after the test."""
    sys.modules.pop("tests.declared_method", None)
    yield
    if "adam-pull" in METHODS:
        METHODS.unregister("adam-pull")
    sys.modules.pop("tests.declared_method", None)


def test_user_method_with_its_own_optimiser_through_compare_report_and_resume(tmp_path, capsys, declared_cleanup):
    """``--import`` a method declaring Adam at a constant rate: compare records and uses it, report rebuilds,
    --resume reuses the run, and a folder written before the ``method`` section existed still resumes."""
    out = tmp_path / "out"
    argv = ["compare", "--import", "tests.declared_method", "--preset", "quick-ham10000", "--methods", "adam-pull",
            "--geometry", "euclidean", "--limit", "60", "--seeds", "1", "--set", "model.width=4", "--set",
            "model.embed_dim=8", "--set", "data.image_size=16", "--projection", "pca", "--batch-size", "32",
            "--epochs", "2", "--quiet", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    run = out / "runs" / "adam-pull-euclidean-s0"
    saved = json.loads((run / "config.json").read_text())
    assert saved["method"] == {"train": {"optimizer": "adam", "schedule": "constant", "weight_decay": 0.0}}
    rec = json.loads((run / "result.json").read_text())
    assert rec["optimizer"]["optimizer"] == "adam" and rec["optimizer"]["warmup_epochs"] == 0.0
    assert rec["history"]["lr_head"][0] == rec["history"]["lr_head"][-1] == rec["optimizer"]["lr_head"]
    ckpt = load_checkpoint(run / "checkpoint.pt")
    assert ckpt["config"]["optimizer"] == "adam" and ckpt["config"]["weight_decay"] == 0.0
    assert "Adam pull: Adam, constant learning rate" in json.loads((out / "compare.json").read_text())["header"][
        "Training"]  # fmt: skip

    assert main(["report", "--out", str(out)]) == 0, capsys.readouterr().err
    assert "| Adam pull |" in (out / "results.md").read_text()
    capsys.readouterr()
    assert main([a for a in argv if a != "--quiet"] + ["--resume"]) == 0
    assert "finished earlier" in capsys.readouterr().out
    # a folder written before 0.4 (no method section) resumes: it is read as declaring what the method declares now
    del saved["method"]
    (run / "config.json").write_text(json.dumps(saved))
    assert main([a for a in argv if a != "--quiet"] + ["--resume"]) == 0
    assert "finished earlier" in capsys.readouterr().out
    # a changed declaration is a changed setting
    saved["method"] = {"train": {"optimizer": "adamw"}}
    (run / "config.json").write_text(json.dumps(saved))
    assert main(argv + ["--resume"]) == 2
    assert "method.train" in capsys.readouterr().err


def test_run_core_reads_fields_not_attributes():
    """The run core finds nothing with getattr on a method, its build function or its objective."""
    found = subprocess.run(
        ["grep", "-rn", r"getattr(method\|getattr(objective\|method\.build\.", str(REPO / "hierviz" / "experiments")],
        capture_output=True,
        text=True,
    )
    assert found.stdout == ""


def test_depth_terms_are_recorded_and_in_the_header(tmp_path):
    """On a hyperbolic geometry the depth regularisers build_objective adds are listed in the run record (the terms
    the loss actually had: its step history) and in the header; a Euclidean run has none."""
    from hierviz.methods import DEPTH_TERMS

    cfg = resolve_config(
        "quick-ham10000",
        ["methods=supcon", "geometries=euclidean,poincare", "data.limit=60", "seeds=1", "model.width=4",
         "model.embed_dim=8", "data.image_size=16", "eval.projection=pca", "train.batch_size=32", "train.epochs=1",
         "loss.cone_weight=0.3", "loss.center_weight=0.5", "loss.cpcc_weight=0", f"out={tmp_path}"],
    )  # fmt: skip
    result = compare(cfg, progress=False, verbose=False)
    hyp, flat = result.record("supcon", "poincare", 0), result.record("supcon", "euclidean", 0)
    assert hyp["depth_terms"] == {"cone": 0.3, "center": 0.5}
    assert set(hyp["step_history"]) == {"loss", "supcon", *hyp["depth_terms"]}  # the loss had these terms, no other
    assert "depth_terms" not in flat and set(flat["step_history"]) == {"loss", "supcon"}
    assert set(DEPTH_TERMS) == {"cone", "center", "order", "cpcc", "depth"}
    header = json.loads((tmp_path / "compare.json").read_text())["header"]["Depth terms"]
    assert header == "entailment cone × 0.3, centring × 0.5 added to: SupCon (Poincaré ball); none on the other runs"
    assert "entailment cone × 0.3" in (tmp_path / "report.html").read_text()


def test_fingerprint_covers_declared_values_not_code_names():
    """Renaming a hook or a model builder (a refactor) keeps a run resumable; changing an override does not."""
    run = ExperimentConfig().run_config("hyilr", "lorentz", 0)
    renamed = json.loads(json.dumps(run))
    renamed["method"]["label_prior"] = "somewhere.else"
    renamed["method"]["model"] = "a.new.builder"
    assert fingerprint(renamed) == fingerprint(run)
    renamed["method"]["train"]["weight_decay"] = 1e-4
    assert fingerprint(renamed) != fingerprint(run)
    renamed = json.loads(json.dumps(run))
    renamed["method"]["feature_dropout"] = 0.0
    assert fingerprint(renamed) != fingerprint(run)
