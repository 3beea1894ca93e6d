"""hierviz.evaluation: the protocol registry and the classification protocol's typed record (paper 01 §4.4)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hierviz.data import ArrayDataset
from hierviz.evaluation import (
    PROTOCOLS,
    ClassificationRecord,
    EvalResult,
    classification_protocol,
    embed_dataset,
    evaluate_model,
    register_protocol,
)
from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.metrics import hierarchy_report
from hierviz.models import build_model

TREE = LabelTree.from_nested({"root": {"p": ["a", "b"], "q": ["c", "d"]}})
COLOURS = np.array([[230, 20, 20], [20, 230, 20], [20, 20, 230], [230, 230, 20]])


def _data(n: int, seed: int) -> ArrayDataset:
    """n images of 16 px, one solid colour per class plus a little noise: separable by any encoder."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 4
    images = np.clip(COLOURS[y][:, None, None, :] + rng.normal(0, 5, (n, 16, 16, 3)), 0, 255).astype(np.uint8)
    return ArrayDataset(images, y, ["a", "b", "c", "d"])


@pytest.fixture(scope="module")
def data():
    return _data(40, 0), _data(20, 1)


def _model(geometry):
    torch.manual_seed(0)
    return build_model("small_cnn", geometry, embed_dim=8, width=4)


def test_protocol_registry():
    assert "classification" in PROTOCOLS and "classification" in PROTOCOLS.names()
    assert PROTOCOLS.get("classification") is classification_protocol
    assert EvalResult is ClassificationRecord  # 0.1 name kept
    with pytest.raises(ValueError, match=r"unknown evaluation protocol 'clasification'; did you mean 'classification'"):
        PROTOCOLS.get("clasification")


@pytest.mark.parametrize("name", ["euclidean", "poincare", "lorentz"])
def test_evaluate_model_returns_a_classification_record(data, name):
    train, test = data
    geo = get_geometry(name)
    model = _model(geo)
    model.train()
    rec = evaluate_model(model, train, test, TREE, geo, image_size=16)
    assert isinstance(rec, ClassificationRecord) and rec.use == "z" and rec.seconds > 0
    assert model.training  # mode restored
    D = 9 if name == "lorentz" else 8  # Lorentz: d + 1 hyperboloid coordinates
    arrays = rec.arrays()
    assert {"z_test", "y_test", "prototypes", "proto_nodes"} <= set(arrays)
    assert set(arrays) == {"z_test", "y_test", "z_train", "y_train", "prototypes", "proto_nodes"}
    assert arrays["z_test"].shape == (20, D) and arrays["z_test"].dtype == np.float32
    assert arrays["z_train"].shape == (40, D)
    np.testing.assert_array_equal(arrays["y_test"], np.arange(20) % 4)  # test order kept
    assert arrays["y_test"].dtype == np.int64
    # one prototype per parent node (root excluded): p and q
    assert [TREE.nodes[i] for i in arrays["proto_nodes"]] == ["p", "q"] and arrays["prototypes"].shape == (2, D)
    z = arrays["z_test"].astype(np.float64)
    if name == "euclidean":
        np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, atol=1e-5)  # the unit sphere
    elif name == "poincare":
        assert (np.linalg.norm(z, axis=1) < 1).all()
    else:
        np.testing.assert_allclose(-(z[:, 0] ** 2) + (z[:, 1:] ** 2).sum(1), -1.0, atol=1e-3)
    m = rec.metrics
    assert set(m) == {"top1", "hf1", "h_acc", "violations", "pc_order", "bal_acc", "macro_f1"}
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in m.values())
    # solid-colour classes are linearly separable even through an untrained encoder
    assert (m["top1"], m["hf1"], m["h_acc"], m["bal_acc"], m["macro_f1"]) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert m["violations"] + m["pc_order"] == pytest.approx(1.0)
    # the metrics are hierarchy_report's on the saved arrays
    again = hierarchy_report(
        rec.z_train, rec.y_train, rec.z_test, rec.y_test, TREE, geo, seed=0, steps=3, imbalance=True
    )
    assert {k: float(v) for k, v in again.items()} == m


def test_protocol_call_and_features_embedding(data):
    train, test = data
    geo = get_geometry("euclidean")
    model = _model(geo)
    a = classification_protocol(model, train, test, TREE, geo, embedding="z", image_size=16, batch_size=7)
    b = evaluate_model(model, train, test, TREE, geo, image_size=16)
    np.testing.assert_allclose(a.z_test, b.z_test, atol=1e-6)  # batch size does not change embeddings
    assert a.metrics == b.metrics
    f = classification_protocol(model, train, test, TREE, geo, embedding="features", image_size=16)
    assert f.use == "features" and f.z_test.shape == (20, 32)  # small_cnn width 4 -> 32 features
    np.testing.assert_allclose(np.linalg.norm(f.z_test, axis=1), 1.0, atol=1e-5)  # mapped into the geometry


def test_embed_dataset_input_errors(data):
    train, _ = data
    model = _model(get_geometry("euclidean"))
    with pytest.raises(ValueError, match=r"^use must be 'z' or 'features', got 'logits'$"):
        embed_dataset(model, train, 16, use="logits")
    with pytest.raises(ValueError, match=r"^batch_size must be a positive integer, got 0$"):
        embed_dataset(model, train, 16, batch_size=0)
    with pytest.raises(ValueError, match=r"^image_size must be a positive integer, got 0$"):
        embed_dataset(model, train, 0)
    with pytest.raises(ValueError, match=r"^dataset is empty: nothing to embed$"):
        embed_dataset(model, train.subset(np.zeros(0, np.int64)), 16)


def test_a_new_protocol_is_one_registered_function():
    @register_protocol("toy-protocol")
    def toy(model, train_data, test_data, tree, geometry, **kw):
        return "ran"

    try:
        assert PROTOCOLS.get("toy-protocol")(None, None, None, TREE, None) == "ran"
    finally:
        PROTOCOLS.unregister("toy-protocol")
    assert "toy-protocol" not in PROTOCOLS
