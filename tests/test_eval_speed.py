"""Evaluation speed paths: the batched uint8 embedding equals the per-image eval transform."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hierviz.evaluation.classification import _uint8_batches, embed_dataset
from hierviz.geometry import get_geometry
from hierviz.models import build_model


class _Arrays:
    def __init__(self, n=37, size=16, gray=False):
        g = np.random.default_rng(0)
        shape = (n, size, size) if gray else (n, size, size, 3)
        self.images = g.integers(0, 256, shape, dtype=np.uint8)
        self.labels = g.integers(0, 4, n)

    def __len__(self):
        return len(self.labels)


@pytest.mark.parametrize("geometry", ["euclidean", "poincare"])
@pytest.mark.parametrize("use", ["z", "features"])
def test_batched_uint8_embedding_is_bit_identical_to_the_per_image_path(geometry, use, monkeypatch):
    from hierviz.evaluation import classification as C

    torch.manual_seed(0)
    model = build_model("small_cnn", get_geometry(geometry), embed_dim=8, width=4)
    model.train()  # embed_dataset switches to eval and back
    ds = _Arrays()
    assert _uint8_batches(ds, 16) is not None
    z_fast, y_fast = embed_dataset(model, ds, 16, use=use, batch_size=10)
    monkeypatch.setattr(C, "_uint8_batches", lambda *a: None)  # force the per-image DataLoader path
    z_slow, y_slow = embed_dataset(model, ds, 16, use=use, batch_size=10)
    assert model.training
    assert z_fast.dtype == np.float32 and z_fast.shape == z_slow.shape
    np.testing.assert_array_equal(z_fast, z_slow)
    np.testing.assert_array_equal(y_fast, y_slow)


def test_other_sizes_and_gray_images_take_the_per_image_path():
    assert _uint8_batches(_Arrays(size=16), 24) is None  # resize needed
    assert _uint8_batches(_Arrays(gray=True), 16) is None  # channel repeat
    torch.manual_seed(0)
    model = build_model("small_cnn", get_geometry("euclidean"), embed_dim=8, width=4)
    z, y = embed_dataset(model, _Arrays(size=16), 24, batch_size=16)
    assert z.shape == (37, 8) and np.isfinite(z).all()
