"""Defaults that follow the data: a dataset's input kind picks the encoder, and
``ham10000`` at another image size reads the file made at that size when there is one."""

import json

import numpy as np
import pytest

from hierviz.data import DATASETS, INPUT_KINDS, ArrayDataset, load_dataset, register_dataset
from hierviz.data.loaders import ham10000
from hierviz.data.loaders._io import HAM_CLASSES as IO_HAM_CLASSES
from hierviz.experiments import resolve_config
from hierviz.experiments.config import apply_overrides, default_encoder
from hierviz.models import ENCODERS, register_encoder


# --------------------------------------------------------------------------- input kinds → encoder
def test_registered_input_kinds():
    assert INPUT_KINDS == ("images", "vectors", "text")
    assert DATASETS["20news"].inputs == "vectors"
    assert {DATASETS[n].inputs for n in ("ham10000", "ham10000-sample", "cifar100", "hier-mnist")} == {"images"}


def test_register_dataset_refuses_an_unknown_input_kind():
    with pytest.raises(ValueError, match="inputs must be one of images, vectors, text, got 'audio'"):
        register_dataset("x-audio", inputs="audio")
    assert "x-audio" not in DATASETS


def test_encoder_follows_the_dataset_unless_set():
    assert default_encoder("20news", "small_cnn") == "mlp"
    assert default_encoder("20news", "mlp") == "mlp"
    assert default_encoder("ham10000-sample", "small_cnn") == "small_cnn"
    assert default_encoder("not-registered", "resnet18") == "resnet18"
    assert resolve_config("quick-ham10000", {"data.dataset": "20news"}).model.encoder == "mlp"
    assert resolve_config("quick-ham10000").model.encoder == "small_cnn"  # the preset's CNN for its images
    # set explicitly: kept, and compare refuses an image encoder on vectors as before
    cfg = resolve_config("quick-ham10000", {"data.dataset": "20news", "model.encoder": "small_cnn"})
    assert cfg.model.encoder == "small_cnn"
    # the CLI applies --set after the shortcuts: a dataset named there follows too
    assert apply_overrides(resolve_config("quick-ham10000"), ["data.dataset=20news"]).model.encoder == "mlp"
    assert apply_overrides(
        resolve_config("quick-ham10000"), ["data.dataset=20news", "model.encoder=resnet18"]
    ).model.encoder == ("resnet18")


def test_the_vector_preset_on_an_image_dataset_takes_the_small_cnn_and_the_grouped_split():
    """``--preset quick --dataset ham10000``: the quick preset's MLP and 20news' official split belong to 20news."""
    assert default_encoder("ham10000", "mlp") == "small_cnn"
    assert default_encoder("ham10000-sample", "hyilr-text") == "small_cnn"
    cfg = resolve_config("quick", {"data.dataset": "ham10000-sample"})
    assert (cfg.model.encoder, cfg.data.split) == ("small_cnn", "grouped")
    assert resolve_config("quick").data.split == "official"  # its own dataset keeps it
    cfg = resolve_config("quick", {"data.dataset": "ham10000-sample", "data.split": "official"})
    assert cfg.data.split == "official"  # set explicitly: kept (compare then says the dataset has none)


def test_a_text_dataset_takes_the_registered_text_encoder():
    @register_dataset("toy-text", inputs="text")
    def toy_text():
        """Two vectors standing in for texts."""
        return ArrayDataset(np.zeros((6, 4), np.float32), np.array([0, 1] * 3), ["a", "b"], name="toy-text")

    try:
        # the first registered text encoder, hierviz.models.text's "hyilr-text"
        assert default_encoder("toy-text", "small_cnn") == "hyilr-text"

        @register_encoder("toy-text-encoder", inputs="text")
        def _enc(**kw):  # pragma: no cover - never built here
            raise AssertionError

        try:
            assert default_encoder("toy-text", "small_cnn") == "hyilr-text"
            assert default_encoder("toy-text", "toy-text-encoder") == "toy-text-encoder"  # a text encoder is kept
        finally:
            ENCODERS.unregister("toy-text-encoder")
    finally:
        DATASETS.unregister("toy-text")


@pytest.mark.shared_data
@pytest.mark.slow  # 20news is TF-IDF-encoded on load (~20 s on a 2-core CPU)
def test_cli_20news_unseen_runs_without_naming_an_encoder(tmp_path, data_dir, capsys):
    """``hierviz compare --preset quick --dataset 20news --methods t+pl,... --protocol unseen`` (tiny)."""
    from hierviz.cli import main

    out = tmp_path / "news"
    argv = ["compare", "--preset", "quick-ham10000", "--dataset", "20news", "--methods", "t+pl", "--geometry", "euclidean",
            "--protocol", "unseen", "--seeds", "1", "--limit", "200", "--set", "train.epochs=1",
            "--projection", "pca", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    saved = json.loads((out / "runs" / "t_pl-euclidean-s0" / "config.json").read_text())
    assert saved["model"]["encoder"] == "mlp" and saved["eval"]["protocol"] == "unseen"
    rec = json.loads((out / "runs" / "t_pl-euclidean-s0" / "result.json").read_text())
    assert rec["protocol"] == "unseen" and 0.0 <= rec["metrics"]["acc_blind"] <= 1.0
    # naming an image encoder is still refused, in one line that says what to use
    capsys.readouterr()
    assert main([*argv[:-3], "--encoder", "small_cnn", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "use --encoder mlp" in err and "Traceback" not in err


# --------------------------------------------------------------------------- ham10000 at another size
def _fake_ham(path, size: int, value_offset: int, n: int = 14) -> np.ndarray:
    rng = np.random.default_rng(size)
    images = rng.integers(0, 200, (n, size, size, 3)).astype(np.uint8) + np.uint8(value_offset)
    np.savez_compressed(
        path,
        images=images,
        labels=np.arange(n) % 7,
        classes=np.array(IO_HAM_CLASSES),
        lesion_id=np.array([f"L{i}" for i in range(n)]),
    )
    return images


def test_ham10000_reads_the_file_of_the_asked_size(tmp_path, monkeypatch):
    assert DATASETS["ham10000"].takes_image_size and not DATASETS["ham10000-sample"].takes_image_size
    assert ham10000.HAM_CLASSES is IO_HAM_CLASSES  # the constants moved to _io.py, still exported here
    big = _fake_ham(tmp_path / "ham10000_64.npz", 64, 0)
    small = _fake_ham(tmp_path / "ham10000_32.npz", 32, 50)
    ds = load_dataset("ham10000", tmp_path, image_size=32)
    np.testing.assert_array_equal(ds.images, small)  # the 32 px file, not a resize of the 64 px one
    assert ds.name == "ham10000" and ds.classes == IO_HAM_CLASSES and ds.groups is not None
    np.testing.assert_array_equal(load_dataset("ham10000", tmp_path).images, big)
    np.testing.assert_array_equal(load_dataset("ham10000", tmp_path, image_size=64).images, big)
    # without a file of that size: the 64 px file, resized once
    (tmp_path / "ham10000_32.npz").unlink()
    resized = load_dataset("ham10000", tmp_path, image_size=32)
    from hierviz.data.loaders.npz import load_npz

    np.testing.assert_array_equal(resized.images, load_npz(tmp_path / "ham10000_64.npz").resized(32).images)
    assert resized.images.shape == (14, 32, 32, 3)
    # through compare's loader and $HIERVIZ_DATA
    _fake_ham(tmp_path / "ham10000_32.npz", 32, 50)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    from hierviz.experiments.compare import load_data

    ds, tree, n = load_data(resolve_config("quick-ham10000", {"data.dataset": "ham10000", "data.image_size": 32}))
    assert n == 14 and tree.num_leaves == 7
    np.testing.assert_array_equal(np.sort(ds.images.reshape(-1))[:5], np.sort(small.reshape(-1))[:5])
    assert ds.images.shape[1:] == (32, 32, 3) and int(ds.images.min()) >= 50
