"""Paper 02's linear evaluation reads encoder features for every paper-02 method by default.

Paper 02 §4 follows SimCLR's linear evaluation (a linear classifier on the frozen encoder's
features, not on the projection). hierviz ≤ 0.3-dev probed CE on features and HMC/HCE/HMCE,
G-HMLC and A-HMLC on the projection ``z``; the methods now declare ``embedding="features"``,
``eval.embedding=z`` still probes the projection, and the run record and the report header say
which was read.
"""

from __future__ import annotations

import json

import pytest

from hierviz.experiments import compare, resolve_config
from hierviz.hierarchy import LabelTree
from hierviz.methods import METHODS, build_objective

PAPER02 = ["ce", "hmc", "hce", "hmce", "g-hmlc", "a-hmlc"]
# one seed, one epoch, 300 hier-MNIST images (synthetic digits where mnist/ is absent), CPU
TINY = [
    "data.dataset=hier-mnist",
    "data.tree=hier-mnist",
    "data.limit=300",
    "data.workers=0",
    "seeds=1",
    "train.epochs=1",
    "train.batch_size=64",
    "geometries=euclidean",
]


@pytest.mark.parametrize("name", PAPER02)
def test_paper02_methods_declare_the_encoder_features_probe(name):
    assert METHODS.get(name).embedding == "features"
    assert METHODS.get(name).paper == "Paper 02 (HMLC)"


def test_paper01_methods_keep_the_projection_probe():
    # SupCon (paper 01's Table 1 baseline) and HWC keep z: the paired comparisons of paper 01 are unchanged
    assert METHODS.get("supcon").embedding == "z" and METHODS.get("hwc+lam").embedding == "z"


def test_depth_terms_skip_feature_probed_paper02_methods():
    # the cone/centre terms shape z's radius; a method probed on features does not get them (as HXE)
    tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    assert "cone" not in build_objective("hmce", tree, "poincare", cone_weight=0.3).terms
    assert "cone" in build_objective("supcon", tree, "poincare", cone_weight=0.3).terms


def test_a_paper02_run_records_and_labels_the_probed_embedding(tmp_path):
    cfg = resolve_config("quick-ham10000", [*TINY, "methods=supcon,hmce", f"out={tmp_path}"])
    assert cfg.eval.embedding is None  # the default: each method's own
    result = compare(cfg, progress=False, verbose=False)
    rec = result.record("hmce", "euclidean")
    assert rec["eval_embedding"] == "features"
    assert result.record("supcon", "euclidean")["eval_embedding"] == "z"
    # features: the small CNN's 8 x width = 128 pooled channels, not the d = 32 projection
    assert result.arrays("hmce", "euclidean")["z_test"].shape[1] == 128
    assert result.arrays("supcon", "euclidean")["z_test"].shape[1] == 32
    header = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))["header"]["Evaluation"]
    assert (
        header
        == "linear probe on each method's own embedding: the projection head's output z (SupCon); encoder features (HMCE)"
    )


def test_the_projection_stays_an_option(tmp_path):
    cfg = resolve_config("quick-ham10000", [*TINY, "methods=g-hmlc", "eval.embedding=z", f"out={tmp_path}"])
    result = compare(cfg, progress=False, verbose=False)
    assert result.record("g-hmlc", "euclidean")["eval_embedding"] == "z"
    assert result.arrays("g-hmlc", "euclidean")["z_test"].shape[1] == 32
    header = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))["header"]["Evaluation"]
    assert header == "linear probe on the projection head's output z (every method)"


def test_paper02_cpu_preset_is_paper02s_protocol_at_64_px():
    cfg = resolve_config("paper02-cpu")
    assert (cfg.data.dataset, cfg.data.tree, cfg.data.image_size, cfg.data.limit) == (
        "hier-mnist",
        "hier-mnist",
        64,
        3000,
    )
    assert cfg.methods == ["ce", "supcon", "hmce", "g-hmlc", "a-hmlc"] and cfg.geometries == ["euclidean"]
    assert cfg.eval.embedding == "features" and cfg.report.baseline == "supcon" and cfg.seeds >= 3
    assert cfg.loss["g_hmlc.gmm_dims"] == 2  # paper 02 §3's two-dimensional GMM


def test_paper02_cpu_preset_probes_supcon_on_features_too(tmp_path):
    over = ["data.limit=300", "data.workers=0", "seeds=1", "train.epochs=1", "methods=supcon", f"out={tmp_path}"]
    result = compare(resolve_config("paper02-cpu", over), progress=False, verbose=False)
    assert result.record("supcon", "euclidean")["eval_embedding"] == "features"
    assert result.arrays("supcon", "euclidean")["z_test"].shape[1] == 128
    assert "64 px" in result.markdown and "| *Majority class* |" in result.markdown
