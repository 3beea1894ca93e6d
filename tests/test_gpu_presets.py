"""The GPU presets paper01-gpu … paper05-gpu resolve, and a tiny CPU override of each runs.

The presets are sized for one H100-class GPU; here each is cut to 1 epoch on a few dozen
samples on the CPU, so only the plumbing (data, encoder, methods, protocol, tables) is tested.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hierviz.experiments import compare, resolve_config
from hierviz.experiments.config import preset_names

# what makes a compare preset run on a CPU in seconds: one seed, one epoch, a few batches
CPU = [
    "seeds=1",
    "train.epochs=1",
    "train.batch_size=32",
    "train.device=cpu",
    "train.amp=false",
    "train.augment_on=cpu",
    "train.channels_last=false",
    "data.workers=0",
    "data.persistent_workers=false",
    "data.prefetch_factor=null",
    "data.augment_seeds=auto",
]


@pytest.mark.parametrize("name", ["paper01-gpu", "paper02-gpu", "paper04-gpu"])
def test_gpu_compare_presets_resolve_to_the_paper_set_ups(name):
    assert name in preset_names()
    cfg = resolve_config(name)
    assert cfg.train.device == "cuda" and cfg.seeds >= 3  # paired CIs need >= 3 seeds
    assert cfg.report.baseline in cfg.methods
    if name == "paper01-gpu":
        assert cfg.methods == ["supcon", "hwc", "lam", "hwc+lam"] and cfg.geometries == ["euclidean", "poincare"]
        assert (cfg.data.dataset, cfg.data.image_size, cfg.model.encoder, cfg.train.epochs, cfg.seeds) == (
            "ham10000",
            64,
            "resnet18",
            30,
            5,
        )
    if name == "paper02-gpu":
        assert cfg.data.dataset == "hier-mnist" and cfg.data.image_size >= 64  # the category digit >= 16 px
        assert cfg.eval.embedding == "features"
    if name == "paper04-gpu":
        assert cfg.eval.protocol == "unseen" and len(cfg.methods) == 9


def _tiny_run(name, tmp_path, extra):
    cfg = resolve_config(name, [*CPU, *extra, f"out={tmp_path}"])
    result = compare(cfg, progress=False, verbose=False)
    assert result.rows and all(np.isfinite(float(v)) for r in result.rows for k, v in r.items() if k == "top1")
    return result


def test_paper01_gpu_preset_runs_a_tiny_cpu_override(tmp_path, data_dir):
    result = _tiny_run(
        "paper01-gpu", tmp_path, ["data.limit=42", "methods=hwc+lam", "geometries=poincare", "data.image_size=32"]
    )
    assert "ham10000: 42 images (subset of 10015)" in result.markdown and "| *Majority class* |" in result.markdown
    assert result.record("hwc+lam", "poincare")["device"] == "cpu"


def test_paper02_gpu_preset_runs_a_tiny_cpu_override(tmp_path):
    # hier-MNIST composes synthetic digits when mnist/t10k-* are absent, so this runs everywhere
    result = _tiny_run("paper02-gpu", tmp_path, ["data.limit=300", "methods=g-hmlc", "model.encoder=small_cnn"])
    assert "64 px" in result.markdown and result.rows[0]["method"] == "g-hmlc"
    # paper 02's linear evaluation: every method is probed on its encoder features, not the d = 128 projection
    rec = result.record("g-hmlc", "euclidean")
    z = result.arrays("g-hmlc", "euclidean")["z_test"]
    assert rec["eval_embedding"] == "features" and z.shape[1] != result.config.model.embed_dim
    compare_json = (tmp_path / "compare.json").read_text(encoding="utf-8")
    assert "linear probe on encoder features (every method)" in compare_json


def test_paper04_gpu_preset_runs_a_tiny_cpu_override(tmp_path, data_dir):
    result = _tiny_run("paper04-gpu", tmp_path, ["data.limit=400", "methods=t+pl+b"])
    assert "leaf_f1" in result.rows[0] and "Leaf F1" in result.markdown


def test_paper03_gpu_retrieval_preset_runs_on_the_cpu(tmp_path):
    from hierviz.features import FeaturesData
    from hierviz.retrieval import RETRIEVAL_PRESETS, run_retrieval

    cfg = RETRIEVAL_PRESETS["paper03-gpu"]
    assert (cfg.epochs, cfg.dim_out, cfg.device) == (100, (32, "in"), "cuda")
    g = np.random.default_rng(0)
    y = np.arange(120) % 3
    X = (3 * g.normal(size=(3, 24))[y] + g.normal(size=(120, 24))).astype(np.float32)
    tiny = replace(cfg, reducers=("pca",), n_grid=(8,), folds=2, epochs=1, device="cpu", storages=("fp16",))
    res = run_retrieval(FeaturesData(X, y, groups=np.arange(120)), tiny, out=tmp_path, progress=False, verbose=False)
    assert "Hyper-DINO(PCA(8), 32)" in {s["variant"] for s in res["summary"]}
    assert "Random ranking (chance)" in res["markdown"]


def test_paper05_gpu_htc_preset_runs_on_the_cpu(tmp_path):
    from hierviz.experiments.htc import run_htc
    from hierviz.methods.paper05 import HTCConfig

    cfg = HTCConfig.preset("paper05-gpu")
    assert cfg.methods == ("hyilr", "hyilr-no-cl") and len(cfg.seeds) == 5 and cfg.max_train is None
    tiny = HTCConfig.preset(
        "paper05-gpu", dataset="synthetic-htc", seeds=(0,), methods=("hyilr",), epochs=1, h=16, layers=1,
        max_len=32, vocab=500, max_train=40, threads=1,
    )  # fmt: skip
    rows = run_htc(tiny, tmp_path, progress=False)
    assert rows[0]["method"] == "hyilr" and "*Frequency prior*" in (tmp_path / "htc_results.md").read_text()
