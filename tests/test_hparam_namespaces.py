"""Namespaced loss hyperparameters: a method's keys live under its own name (``loss.hwc.alpha``) or are
declared shared (``loss.tau``); two methods never share a key by accident. The flat names of hierviz 0.3
(``loss.alpha``) still work with a DeprecationWarning, and run folders written with them report and resume.
Depth terms are added to a user method only when it asks, and every run that has them says so."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hierviz.cli import main
from hierviz.experiments import report, resolve_config
from hierviz.hierarchy import LabelTree
from hierviz.losses import Objective, SupConLoss
from hierviz.methods import (
    LOSS_HPARAMS,
    METHODS,
    build_objective,
    get_method,
    legacy_keys,
    loss_keys,
    register_method,
    upgrade_loss,
)

TREE = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})

TINY_CLI = [
    "--preset", "quick-ham10000", "--limit", "60", "--seeds", "1", "--epochs", "1",
    "--set", "model.width=4", "--set", "model.embed_dim=8", "--set", "data.image_size=16",
    "--projection", "pca", "--batch-size", "32", "--quiet",
]  # fmt: skip

SEEN: list[dict] = []


def _weighted(tree, geometry, hp):
    SEEN.append(dict(hp))
    return Objective("my-alpha", {"supcon": SupConLoss(tree, geometry, tau=hp["tau"])}, {"supcon": hp["alpha"]})


@pytest.fixture
def my_alpha():
    """A user method with its own key ``alpha`` (default 0.3) and the shared ``tau``."""
    SEEN.clear()
    register_method("my-alpha", display_name="My alpha", hparams=("tau", {"alpha": 0.3}), replace=True)(_weighted)
    yield "my-alpha"
    for name in ("my-alpha", "my-deep"):
        if name in METHODS:
            METHODS.unregister(name)
    LOSS_HPARAMS.pop("my_alpha.alpha", None)
    LOSS_HPARAMS.pop("my_deep.alpha", None)


def _cli(capsys, argv, code=0):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == code, err
    return out, err


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_user_key_named_alpha_never_touches_hwc_alpha(my_alpha):
    assert get_method("my-alpha").hparams == ("tau", "my_alpha.alpha")
    assert LOSS_HPARAMS["my_alpha.alpha"].default == 0.3 and LOSS_HPARAMS["hwc.alpha"].default == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the namespaced keys: no warning
        mine = resolve_config("quick-ham10000", ["loss.my_alpha.alpha=0.9"])
        theirs = resolve_config("quick-ham10000", ["loss.hwc.alpha=0.8"])
    assert (mine.loss["my_alpha.alpha"], mine.loss["hwc.alpha"]) == (0.9, 0.5)
    assert (theirs.loss["my_alpha.alpha"], theirs.loss["hwc.alpha"]) == (0.3, 0.8)
    # one dict of keys drives both methods; each reads its own alpha
    assert build_objective("hwc", TREE, "euclidean", **mine.loss).term("hwc").alpha == 0.5
    assert build_objective("my-alpha", TREE, "euclidean", **mine.loss).weights == {"supcon": 0.9}
    assert build_objective("hwc", TREE, "euclidean", **theirs.loss).term("hwc").alpha == 0.8
    assert build_objective("my-alpha", TREE, "euclidean", **theirs.loss).weights == {"supcon": 0.3}
    assert SEEN[-1] == {"tau": 0.1, "alpha": 0.3}  # the build function reads short names
    # a run's config holds the keys its method reads: my-alpha's fingerprint ignores HWC's alpha
    assert theirs.run_config("my-alpha", "euclidean", 0)["loss"] == {"tau": 0.1, "my_alpha.alpha": 0.3}
    # reading another method's key is said explicitly
    register_method("my-deep", hparams=("tau", "hwc.alpha"), depth_terms=True)(_weighted)
    assert loss_keys("my-deep", "euclidean") == ("tau", "hwc.alpha")
    assert build_objective("my-deep", TREE, "euclidean", **theirs.loss).weights == {"supcon": 0.8}
    with pytest.raises(ValueError, match=r"share the short name\(s\) \['alpha'\]"):
        register_method("my-clash", hparams=("hwc.alpha", {"alpha": 1.0}))(_weighted)
    assert "my-clash" not in METHODS


def test_a_flat_key_warns_and_sets_the_namespaced_ones(my_alpha):
    with pytest.warns(DeprecationWarning) as rec:
        cfg = resolve_config("quick-ham10000", ["loss.lambda_lam=0.25", "loss.hcl_m0=0.7"])
    assert [str(w.message) for w in rec] == [
        "--set loss.lambda_lam=0.25: loss.lambda_lam is now loss.lam.lambda",
        "--set loss.hcl_m0=0.7: loss.hcl_m0 is now loss.hcl.m0",
    ]
    assert cfg.loss["lam.lambda"] == 0.25 and cfg.loss["hcl.m0"] == 0.7
    assert "lambda_lam" not in cfg.loss and "hcl_m0" not in cfg.loss
    # a flat name that several methods' keys had: it sets all of them, and says so
    assert legacy_keys("alpha") == ("hwc.alpha", "my_alpha.alpha")
    with pytest.warns(DeprecationWarning, match=r"loss.alpha is now loss.hwc.alpha and loss.my_alpha.alpha; this one "):
        cfg = resolve_config("quick-ham10000", ["loss.alpha=0.6"])
    assert cfg.loss["hwc.alpha"] == cfg.loss["my_alpha.alpha"] == 0.6
    # library calls: a flat keyword warns too, and reaches the loss
    with pytest.warns(DeprecationWarning, match="'lambda_lam' is now 'lam.lambda'"):
        obj = build_objective("hwc+lam", TREE, "euclidean", lambda_lam=0.5)
    assert obj.weights["lam"] == 0.5
    # a record's flat names are read silently, restricted to the keys its run reads
    assert upgrade_loss({"alpha": 0.6, "tau": 0.2}, loss_keys("hwc", "euclidean")) == {"tau": 0.2, "hwc.alpha": 0.6}


def test_hierviz_config_lists_the_namespaced_keys(capsys):
    out, _ = _cli(capsys, ["config", "--keys"])
    listed = {line.split(" = ")[0]: line for line in out.splitlines()}
    for key in (
        "loss.tau",
        "loss.hwc.alpha",
        "loss.lam.lambda",
        "loss.hcl.m0",
        "loss.hyilr.lambda",
        "loss.cone_weight",
    ):
        assert key in listed, key
    assert listed["loss.hwc.alpha"].startswith("loss.hwc.alpha = 0.5    # HWC/outside-softmax α")
    assert listed["loss.lam.lambda"].startswith("loss.lam.lambda = 1.0    # λ_LAM")
    for flat in ("loss.alpha", "loss.lambda_lam", "loss.hcl_m0", "loss.hyilr_lambda", "loss.class_weight"):
        assert flat not in listed, flat
    # from the shell, a flat key works and the warning is shown (Python hides DeprecationWarnings by default)
    proc = subprocess.run(
        [sys.executable, "-m", "hierviz", "config", "--preset", "quick-ham10000", "--set", "loss.alpha=0.9", "--keys"],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1], check=True,
    )  # fmt: skip
    assert "loss.hwc.alpha = 0.9" in proc.stdout
    assert "DeprecationWarning: --set loss.alpha=0.9: loss.alpha is now loss.hwc.alpha" in proc.stderr


def _as_flat_folder(out: Path) -> None:
    """Rewrite each run's config.json and result.json as hierviz 0.3 wrote them: flat loss names."""
    for cfg_file in out.glob("runs/*/config.json"):
        d = _json(cfg_file)
        d["loss"] = {(LOSS_HPARAMS[k].formerly or (k,))[0]: v for k, v in d["loss"].items()}
        d.pop("fingerprint", None)
        cfg_file.write_text(json.dumps(d, indent=1), encoding="utf-8")
        res = cfg_file.parent / "result.json"
        r = _json(res)
        r["hparams"] = {(LOSS_HPARAMS[k].formerly or (k,))[0]: v for k, v in r["hparams"].items()}
        res.write_text(json.dumps(r, indent=1), encoding="utf-8")


def test_an_old_flat_folder_reports_and_resumes_and_depth_terms_are_listed(tmp_path, capsys, my_alpha):
    out = tmp_path / "out"
    base = [*TINY_CLI, "--geometry", "poincare", "--out", str(out)]
    _cli(capsys, ["compare", *base, "--methods", "hwc,my-alpha", "--set", "loss.hwc.alpha=0.7"])
    hwc_cfg = _json(out / "runs" / "hwc-poincare-s0" / "config.json")
    assert hwc_cfg["loss"]["hwc.alpha"] == 0.7 and hwc_cfg["loss"]["cone_weight"] == 0.2
    assert hwc_cfg["run"]["depth_terms"] == {"cone": 0.2, "center": 1.0, "cpcc": 1.0}
    hwc_rec = _json(out / "runs" / "hwc-poincare-s0" / "result.json")
    assert hwc_rec["depth_terms"] == {"cone": 0.2, "center": 1.0, "cpcc": 1.0}
    # the user method did not ask for depth terms: none added, none recorded, no depth keys in its config
    mine = _json(out / "runs" / "my-alpha-poincare-s0" / "config.json")
    assert mine["loss"] == {"tau": 0.1, "my_alpha.alpha": 0.3} and "depth_terms" not in mine["run"]
    mine_rec = _json(out / "runs" / "my-alpha-poincare-s0" / "result.json")
    assert "depth_terms" not in mine_rec and set(mine_rec["step_history"]) == {"loss", "supcon"}
    header = _json(out / "compare.json")["header"]["Depth terms"]
    assert (
        header == "entailment cone × 0.2, centring × 1, CPCC × 1 added to: HWC (Poincaré ball); none on the other runs"
    )
    assert header in (out / "report.html").read_text(encoding="utf-8")
    seconds = hwc_rec["train_seconds"]

    _as_flat_folder(out)
    old = _json(out / "runs" / "hwc-poincare-s0" / "config.json")
    assert old["loss"]["alpha"] == 0.7 and "hwc.alpha" not in old["loss"] and "lambda_lam" not in old["loss"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # reading a record is no use of a flat key
        result = report(out, verbose=False)
        assert [r["method"] for r in result.rows] == ["hwc", "my-alpha"]
        assert result.config.loss["hwc.alpha"] == 0.7
        assert result.record("hwc", "poincare", 0)["hparams"]["hwc.alpha"] == 0.7
        stdout, _ = _cli(capsys, ["compare", *base, "--methods", "hwc,my-alpha", "--set", "loss.hwc.alpha=0.7",
                                  "--resume"])  # fmt: skip
    assert stdout.count("finished earlier, reusing") == 2
    assert _json(out / "runs" / "hwc-poincare-s0" / "result.json")["train_seconds"] == seconds
    # a key the run reads still matters, by its new name
    _, err = _cli(capsys, ["compare", *base, "--methods", "hwc", "--set", "loss.hwc.alpha=0.4", "--resume"], 2)
    assert "different settings (loss.hwc.alpha)" in err


def test_a_user_method_that_asks_gets_the_depth_terms(my_alpha):
    register_method("my-deep", hparams=("tau", {"alpha": 0.3}), depth_terms=True)(_weighted)
    assert "cone_weight" in loss_keys("my-deep", "poincare") and "cone_weight" not in loss_keys("my-alpha", "poincare")
    deep = build_objective("my-deep", TREE, "poincare")
    plain = build_objective("my-alpha", TREE, "poincare")
    assert set(deep.terms) == {"supcon", "cone", "center", "cpcc"} and set(plain.terms) == {"supcon"}
    assert SEEN[-2]["tau"] == 1.0  # loss.tau_hyperbolic: a method that takes the depth terms
    assert SEEN[-1]["tau"] == 0.1  # loss.tau as written
