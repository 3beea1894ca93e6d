"""Per-method hyperparameters in run records, report/resume without the user's module, user geometry.

* A run's ``config.json``/``result.json`` and fingerprint hold only the ``loss.*`` keys its
  method reads (:func:`hierviz.methods.loss_keys`), so ``--resume`` ignores keys no run reads.
* ``hierviz report`` reads the run records only: a folder made with a user loss (``--import``)
  is reported in a process where that module was never imported.
* Folders written with every loss key (hierviz 0.2 / main before 0.3) still resume and report.
* A geometry registered from a user module runs through compare's losses, figures and report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from hierviz.cli import main
from hierviz.experiments import ConfigError, fingerprint, report, resolve_config
from hierviz.geometry import GEOMETRIES, PoincareBall
from hierviz.hierarchy import LabelTree
from hierviz.methods import LOSS_HPARAMS, METHODS, build_objective, loss_keys

TINY_CLI = [
    "--preset",
    "quick-ham10000",
    "--limit",
    "60",
    "--seeds",
    "1",
    "--epochs",
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

USER_LOSS = '''
import torch
import hierviz.methods
from hierviz.losses import Objective


class Pull(torch.nn.Module):
    """Mean squared distance of same-label pairs x scale."""

    def __init__(self, scale):
        super().__init__()
        self.scale = float(scale)

    def forward(self, z, labels):
        flat = z.reshape(-1, z.shape[-1])
        y = labels.repeat_interleave(z.shape[1])
        same = (y[:, None] == y[None, :]).to(flat.dtype)
        return self.scale * (torch.cdist(flat, flat).pow(2) * same).sum() / same.sum()


@hierviz.methods.register_method("user-pull", hparams={"user_scale": 1.0}, display_name="User Pull", replace=True)
def user_pull(tree, geometry, hp):
    return Objective("user-pull", {"pull": Pull(hp["user_scale"])})
'''

# the same method, and one more loss key (read by another method): the 0.2 fingerprint changed for every run
USER_LOSS_PLUS_KEY = (
    USER_LOSS
    + """

@hierviz.methods.register_method("user-push", hparams={"user_margin": 0.5}, display_name="User Push", replace=True)
def user_push(tree, geometry, hp):
    return Objective("user-push", {"pull": Pull(hp["user_margin"])})
"""
)

USER_GEOMETRY = '''
from hierviz.geometry import PoincareBall, register_geometry


@register_geometry("user-ball")
class UserBall(PoincareBall):
    """The Poincaré ball under another name: nothing may switch on the name 'poincare'."""

    name = "user-ball"
    display_name = "User ball"
'''


def _cli(capsys, argv, code=0):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == code, err
    return out, err


def _forget_user_modules():
    """What a fresh process knows: no user method, loss key, geometry or imported user module."""
    for name in ("user-pull", "user-push"):
        if name in METHODS:
            METHODS.unregister(name)
    for key in ("user_pull.user_scale", "user_push.user_margin"):
        LOSS_HPARAMS.pop(key, None)
    if "user-ball" in GEOMETRIES:
        GEOMETRIES.unregister("user-ball")
    for mod in [m for m in sys.modules if m.startswith("hierviz_user_")]:
        del sys.modules[mod]


@pytest.fixture
def fresh():
    _forget_user_modules()
    yield
    _forget_user_modules()


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_loss_keys_are_the_method_hparams_plus_the_radial_keys_on_hyperbolic_geometries():
    assert loss_keys("supcon", "euclidean") == ("tau", "supcon.reduction", "similarity")
    assert loss_keys("supcon", "poincare") == ("tau", "supcon.reduction", "similarity", *("cone_weight", "center_weight",
                                                                                    "cone_aperture", "order_weight",
                                                                                    "order_margin", "cpcc_weight", "depth_weight",
                                                                                    "depth_step", "tau_hyperbolic"))  # fmt: skip
    assert "cone_weight" not in loss_keys("hxe", "poincare")  # evaluated on encoder features: no depth terms
    cfg = resolve_config("quick-ham10000", ["loss.hwc.alpha=0.9"])
    run = cfg.run_config("supcon", "euclidean", 0)
    assert run["loss"] == {"tau": cfg.loss["tau"], "supcon.reduction": cfg.loss["supcon.reduction"],
                           "similarity": cfg.loss["similarity"]}  # fmt: skip
    # a key supcon does not read leaves its fingerprint alone; one it reads changes it
    assert fingerprint(run) == fingerprint(resolve_config("quick-ham10000").run_config("supcon", "euclidean", 0))
    assert fingerprint(run) != fingerprint(
        resolve_config("quick-ham10000", ["loss.tau=0.3"]).run_config("supcon", "euclidean", 0)
    )


def test_user_loss_reports_without_import_and_resumes_with_a_module_that_adds_a_key(tmp_path, capsys, fresh):
    mod_a, mod_b = tmp_path / "user_loss_a.py", tmp_path / "user_loss_b.py"
    mod_a.write_text(USER_LOSS, encoding="utf-8")
    mod_b.write_text(USER_LOSS_PLUS_KEY, encoding="utf-8")
    out = tmp_path / "out"
    base = [*TINY_CLI, "--methods", "user-pull,supcon", "--geometry", "euclidean", "--out", str(out)]
    _cli(capsys, ["compare", "--import", str(mod_a), *base, "--set", "loss.user_pull.user_scale=2"])
    run_cfg = _json(out / "runs" / "user-pull-euclidean-s0" / "config.json")
    assert run_cfg["loss"] == {"user_pull.user_scale": 2.0}  # the keys this method reads, and only those
    rec = _json(out / "runs" / "user-pull-euclidean-s0" / "result.json")
    assert rec["hparams"] == {"user_pull.user_scale": 2.0} and rec["method_display"] == "User Pull"
    assert _json(out / "runs" / "supcon-euclidean-s0" / "config.json")["loss"] == {
        "tau": 0.1,
        "supcon.reduction": "pairs",
        "similarity": None,
    }
    first_md = (out / "results.md").read_text(encoding="utf-8")
    seconds = {r: _json(out / "runs" / r / "result.json")["train_seconds"] for r in ("user-pull-euclidean-s0",
                                                                                       "supcon-euclidean-s0")}  # fmt: skip

    _forget_user_modules()  # a fresh registry: the user's module is not imported in this process
    for name in ("results.md", "results.csv", "report.html"):
        (out / name).unlink()
    _cli(capsys, ["report", "--out", str(out)])
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "| User Pull |" in md and "| SupCon |" in md
    assert md.split("\n", 1)[1] == first_md.split("\n", 1)[1]  # the same table as compare wrote
    assert (out / "report.html").is_file()

    # --resume with another module that declares one more key: both runs are reused
    stdout, _ = _cli(capsys, ["compare", "--import", str(mod_b), *base[:-1], str(out), "--set",
                              "loss.user_pull.user_scale=2", "--resume"])  # fmt: skip
    assert stdout.count("finished earlier, reusing") == 2
    for run, before in seconds.items():  # reused, not retrained
        assert _json(out / "runs" / run / "result.json")["train_seconds"] == before
    md_b = (out / "results.md").read_text(encoding="utf-8")
    assert md_b.split("\n", 1)[1] == first_md.split("\n", 1)[1]  # nothing retrained
    # a key the run reads still matters
    _, err = _cli(
        capsys, ["compare", "--import", str(mod_b), *base, "--set", "loss.user_pull.user_scale=3", "--resume"], 2
    )
    assert "different settings (loss.user_pull.user_scale)" in err


def _as_0_2_folder(out: Path) -> None:
    """Rewrite each run's config.json as hierviz 0.2 and main before 0.3 wrote it: every declared loss key, flat."""
    every = {k: h.default for k, h in LOSS_HPARAMS.items() if not k.startswith("user_")}
    for cfg_file in out.glob("runs/*/config.json"):
        d = _json(cfg_file)
        loss = {**every, **d["loss"]}  # by the flat names of 0.2 and 0.3 (loss.alpha, not loss.hwc.alpha)
        d["loss"] = {(LOSS_HPARAMS[k].formerly or (k,))[0]: v for k, v in loss.items()}
        cfg_file.write_text(json.dumps(d, indent=1), encoding="utf-8")
        res = cfg_file.parent / "result.json"
        r = _json(res)
        r.pop("hparams", None)
        res.write_text(json.dumps(r, indent=1), encoding="utf-8")


def test_a_folder_with_every_loss_key_resumes_merges_and_reports(tmp_path, capsys):
    out = tmp_path / "old"
    base = [*TINY_CLI, "--geometry", "euclidean,poincare", "--out", str(out)]
    _cli(capsys, ["compare", *base, "--methods", "supcon"])
    _as_0_2_folder(out)
    old = _json(out / "runs" / "supcon-poincare-s0" / "config.json")
    assert {"alpha", "lambda_lam", "hxe_alpha"} <= set(old["loss"])  # keys supcon does not read
    seconds = _json(out / "runs" / "supcon-poincare-s0" / "result.json")["train_seconds"]

    # resume adds a method: the old runs are reused, the new one is written with its own keys
    _cli(capsys, ["compare", *base, "--methods", "supcon,hwc", "--resume"])
    assert _json(out / "runs" / "supcon-poincare-s0" / "result.json")["train_seconds"] == seconds
    new = _json(out / "runs" / "hwc-poincare-s0" / "config.json")
    assert "hxe.alpha" not in new["loss"] and "hwc.alpha" in new["loss"] and new["loss"]["tau"] == old["loss"]["tau"]
    result = report(out, verbose=False)  # old and new records merge on the keys both read
    assert [(r["method"], r["geometry"]) for r in result.rows] == [
        ("supcon", "euclidean"),
        ("supcon", "poincare"),
        ("hwc", "euclidean"),
        ("hwc", "poincare"),
    ]
    assert "| HWC |" in result.markdown

    # an old record that differs on a key its method does not read still resumes; one it reads does not
    cfg_file = out / "runs" / "supcon-euclidean-s0" / "config.json"
    d = _json(cfg_file)
    d["loss"]["alpha"] = 0.9
    cfg_file.write_text(json.dumps(d), encoding="utf-8")
    _cli(capsys, ["compare", *base, "--methods", "supcon", "--resume"])
    d["loss"]["tau"] = 0.3
    cfg_file.write_text(json.dumps(d), encoding="utf-8")
    _, err = _cli(capsys, ["compare", *base, "--methods", "supcon", "--resume"], 2)
    assert "different settings (loss.tau)" in err
    with pytest.raises(ConfigError, match=r"loss\.tau: 0\.1 vs 0\.3|loss\.tau: 0\.3 vs 0\.1"):
        report(out, verbose=False)


def test_user_geometry_runs_through_losses_figures_and_the_report(tmp_path, capsys, fresh):
    mod = tmp_path / "user_geometry.py"
    mod.write_text(USER_GEOMETRY, encoding="utf-8")
    out = tmp_path / "geo"
    argv = [*TINY_CLI, "--methods", "supcon", "--geometry", "user-ball,poincare", "--out", str(out)]
    _cli(capsys, ["compare", "--import", str(mod), *argv, "--set", "loss.cone_weight=0.2"])
    user_ball = GEOMETRIES.get("user-ball")
    # the losses: the user's ball gives the Poincaré ball's SupCon (+ cone, centring terms) on the same points
    tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
    z = PoincareBall().expmap0(0.3 * torch.randn(6, 2, 4, generator=torch.Generator().manual_seed(0)))
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    hp = {"tau": 0.1, "cone_weight": 0.2, "center_weight": 1.0, "cpcc_weight": 0.0}
    mine, ref = (
        build_objective("supcon", tree, user_ball(), **hp),
        build_objective("supcon", tree, PoincareBall(), **hp),
    )
    (l1, t1), (l2, _) = mine(z, y), ref(z, y)
    assert sorted(t1) == ["center", "cone", "supcon"] and torch.allclose(l1, l2)
    # the run's record and keys: hyperbolic, so the depth-regulariser keys are read
    rec = _json(out / "runs" / "supcon-user-ball-s0" / "result.json")
    assert rec["geometry_config"] == {"name": "user-ball", "c": 1.0} and rec["geometry_display"] == "User ball"
    assert rec["hparams"]["cone_weight"] == 0.2 and rec["radius"]["clip_fraction"] is not None
    ref_rec = _json(out / "runs" / "supcon-poincare-s0" / "result.json")
    assert rec["metrics"] == pytest.approx(ref_rec["metrics"], abs=1e-6)  # the same run under another name
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "(User ball)" in md and "(Poincaré)" in md
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "SupCon (User ball, seed 0): Poincaré disk of test embeddings" in page
    assert "SupCon (User ball, seed 0): PCA of test embeddings" in page

    _forget_user_modules()  # report without the module: the tables from the records, a note for its figures
    result = report(out, verbose=False)
    assert "(User ball)" in result.markdown
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "geometry &#x27;user-ball&#x27; is not registered in this process" in page or (
        "geometry 'user-ball' is not registered in this process" in page
    )
    assert "SupCon (Poincaré, seed 0): Poincaré disk of test embeddings" in page


def test_tau_is_the_temperature_of_every_loss_and_the_old_keyword_warns():
    import inspect

    import hierviz.losses as L
    from hierviz.losses import AHMLCLoss, GHMLCLoss, HMLCLoss
    from hierviz.losses._validation import _NOT_GIVEN

    for name in L.__all__:  # a parameter still called temperature is only the deprecated alias
        obj = getattr(L, name)
        if inspect.isclass(obj):
            for pname in ("temperature", "base_temperature"):
                p = inspect.signature(obj).parameters.get(pname)
                assert p is None or p.default is _NOT_GIVEN, (name, pname)
    assert not [n for n, m in METHODS.items() if {"temperature", "base_temperature"} & set(m.hparams)]
    g = torch.Generator().manual_seed(1)
    z = torch.nn.functional.normalize(torch.randn(6, 2, 8, generator=g), dim=-1)
    y = torch.tensor([[0, 0], [0, 0], [1, 0], [1, 0], [2, 1], [2, 1]])
    with pytest.warns(DeprecationWarning) as caught:
        old = HMLCLoss("hmc", "exp", temperature=0.3, base_temperature=0.07)
    assert [str(w.message).split(";")[0] for w in caught] == [
        "HMLCLoss(temperature=...) is now HMLCLoss(tau=...)",
        "HMLCLoss(base_temperature=...) is now HMLCLoss(base_tau=...)",
    ]
    new = HMLCLoss("hmc", "exp", tau=0.3, base_tau=0.07)
    assert (old.tau, old.base_tau, old.temperature) == (0.3, 0.07, 0.3)
    assert old(z, y).item() == new(z, y).item() != HMLCLoss("hmc", "exp", tau=0.3)(z, y).item()
    for cls, kw in ((GHMLCLoss, {}), (AHMLCLoss, {"levels": 2, "dim": 8})):
        with pytest.warns(DeprecationWarning, match=rf"{cls.__name__}\(temperature=\.\.\.\)"):
            assert cls(temperature=0.4, **kw).hmlc.tau == 0.4
        assert cls(tau=0.4, **kw).hmlc.tau == 0.4
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="give tau only, not temperature"):
        HMLCLoss(tau=0.2, temperature=0.3)


def test_run_records_are_typed_on_read_and_keep_unknown_keys(tmp_path, capsys):
    from hierviz.experiments import load_records

    run = tmp_path / "runs" / "x-euclidean-s0"
    run.mkdir(parents=True)
    rec = {"name": run.name, "method": "x", "method_display": "X", "geometry": "euclidean", "seed": 0,
           "metrics": {"hf1": 0.5}, "from_a_newer_writer": [1, 2]}  # fmt: skip
    (run / "result.json").write_text(json.dumps(rec), encoding="utf-8")
    (got,) = load_records(tmp_path)
    assert {k: got[k] for k in rec} == rec and got["config"] is None and got["folder"] == str(run)
    (run / "result.json").write_text(json.dumps({**rec, "seed": "zero"}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"result\.json: 'seed' must be an integer, got 'zero'"):
        load_records(tmp_path)
    (run / "result.json").write_text(json.dumps({**rec, "metrics": [0.5]}), encoding="utf-8")
    _, err = _cli(capsys, ["report", "--out", str(tmp_path)], 2)
    assert "result.json: 'metrics' must be a JSON object, got list" in err and len(err.strip().splitlines()) == 1
