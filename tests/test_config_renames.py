"""Renamed config keys: τ is ``tau`` in every method, paper 02's ``base_temperature``
included. The old key is still read (``--set``, presets, older run folders) with a DeprecationWarning,
and a run folder written with it keeps its fingerprint."""

import warnings

import pytest
import torch

from hierviz.experiments import ExperimentConfig, resolve_config
from hierviz.experiments.config import RENAMED_KEYS, apply_overrides
from hierviz.experiments.records import diff_keys, fingerprint


def test_paper02_tau_keys():
    assert RENAMED_KEYS == {"loss.base_temperature": "loss.hmlc.base_tau"}
    cfg = resolve_config("quick-ham10000")
    assert (
        cfg.loss["hmlc.base_tau"] is None
        and "base_tau" not in cfg.loss
        and "base_temperature" not in cfg.loss
        and cfg.loss["tau"] == 0.1
    )


def test_old_key_is_read_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"--set loss.base_temperature=0.07: loss.base_temperature is now "):
        cfg = apply_overrides(resolve_config("quick-ham10000"), ["loss.base_temperature=0.07"])
    assert cfg.loss["hmlc.base_tau"] == 0.07 and "base_temperature" not in cfg.loss
    with pytest.warns(DeprecationWarning, match=r"loss.base_tau is now loss.hmlc.base_tau"):  # the 0.3 flat name
        assert apply_overrides(resolve_config("quick-ham10000"), ["loss.base_tau=0.06"]).loss["hmlc.base_tau"] == 0.06
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new key: no warning
        cfg = apply_overrides(resolve_config("quick-ham10000"), ["loss.hmlc.base_tau=0.07"])
        assert cfg.loss["hmlc.base_tau"] == 0.07


def test_a_run_folder_written_with_the_old_key_keeps_its_fingerprint():
    new = ExperimentConfig().to_dict()
    old = ExperimentConfig().to_dict()
    old["loss"]["base_temperature"] = old["loss"].pop("hmlc.base_tau")
    assert fingerprint(old) == fingerprint(new) and diff_keys(old, new) == []
    old["loss"]["base_temperature"] = new["loss"]["hmlc.base_tau"] = 0.07
    assert fingerprint(old) == fingerprint(new) != fingerprint(ExperimentConfig().to_dict())
    with pytest.warns(DeprecationWarning, match="loss.base_temperature is now loss.hmlc.base_tau"):
        back = ExperimentConfig.from_dict(old, where="run/config.json")
    assert back.to_dict() == new


def test_base_tau_reaches_the_hmlc_loss(breakhis_tree):
    from hierviz.losses import HMLCLoss
    from hierviz.methods import build_objective

    torch.manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(16, 2, 8, dtype=torch.float64), dim=-1)  # (B, V, d)
    y = torch.arange(16) % breakhis_tree.num_leaves
    objective = build_objective("hmc", breakhis_tree, "euclidean", tau=0.1, base_tau=0.2)
    got, _ = objective(z, y)
    # positional: (loss_type, layer_penalty, τ, τ_b, mode)
    want = HMLCLoss("hmc", "exp", 0.1, 0.2, "paper", tree=breakhis_tree, order="class")(z, y)
    default = HMLCLoss("hmc", "exp", 0.1, None, "paper", tree=breakhis_tree, order="class")(z, y)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got, default * 0.5)  # τ/τ_b = 0.5 scales every level's loss
