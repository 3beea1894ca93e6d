"""hierviz.evaluation: the protocol registry and the classification protocol's typed record (paper 01 §4.4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from hierviz.data import ArrayDataset
from hierviz.evaluation import (
    PROTOCOLS,
    ClassificationRecord,
    EvalContext,
    EvalResult,
    ProtocolSpec,
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
    spec = PROTOCOLS.get("classification")
    assert isinstance(spec, ProtocolSpec) and spec.evaluate is classification_protocol
    assert (spec.name, spec.make_split, spec.per_seed, spec.refines, spec.takes_index) == (
        "classification", None, False, None, False)  # fmt: skip
    assert spec.doc == "Paper 01 §4.4: a balanced linear probe on frozen embeddings + the hierarchy metrics."
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
    ctx = EvalContext(model=model, train_data=train, test_data=test, tree=TREE, geometry=geo, image_size=16)
    a = classification_protocol(EvalContext(**{**vars(ctx), "batch_size": 7}))
    b = evaluate_model(model, train, test, TREE, geo, image_size=16)
    np.testing.assert_allclose(a.z_test, b.z_test, atol=1e-6)  # batch size does not change embeddings
    assert a.metrics == b.metrics
    f = PROTOCOLS.get("classification").evaluate(EvalContext(**{**vars(ctx), "embedding": "features"}))
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


def test_the_built_in_protocols_declare_their_extras():
    from hierviz.evaluation.retrieval import grouped_fold_split
    from hierviz.evaluation.unseen import unseen_split

    got = {n: (s.make_split, s.per_seed, s.refines, s.takes_index) for n, s in PROTOCOLS.items()}
    got = {
        n: v
        for n, v in got.items()
        if n in ("classification", "retrieval", "retrieval-cosine", "retrieval-folds", "unseen")
    }
    assert got == {
        "classification": (None, False, None, False),
        "retrieval": (None, False, None, True),
        "retrieval-cosine": (None, False, "retrieval", False),
        "retrieval-folds": (grouped_fold_split, True, None, False),
        "unseen": (unseen_split, False, None, False),
    }
    assert all(not hasattr(s.evaluate, k) for _, s in PROTOCOLS.items() for k in ("make_split", "refines"))


def test_a_new_protocol_is_one_registered_function():
    seen = []

    @register_protocol("Toy-Protocol", refines="classification", doc="Counts the test rows.")
    def toy(ctx):
        seen.append(ctx)
        return len(ctx.test_data)

    try:
        spec = PROTOCOLS.get("toy-protocol")
        assert (spec.name, spec.refines, spec.doc, spec.evaluate) == ("toy-protocol", "classification",
                                                                      "Counts the test rows.", toy)  # fmt: skip
        ctx = EvalContext(model=None, train_data=[1], test_data=[1, 2, 3], tree=TREE, geometry=None, image_size=4)
        assert spec.evaluate(ctx) == 3 and seen == [ctx]
        register_protocol("toy-protocol", refines="classification")(toy)  # the same function again: kept
        with pytest.raises(ValueError, match=r"^evaluation protocol 'toy-protocol' is already registered"):
            register_protocol("toy-protocol")(lambda ctx: None)
    finally:
        PROTOCOLS.unregister("toy-protocol")
    assert "toy-protocol" not in PROTOCOLS


def test_an_old_style_protocol_function_works_through_an_adapter_with_a_warning():
    calls = []

    with pytest.warns(DeprecationWarning, match=r"protocol 'old-toy': a protocol function taking \(model, "):

        @register_protocol("old-toy", takes_index=True)
        def old(model, train_data, test_data, tree, geometry, **kw):
            calls.append((model, train_data, test_data, tree, geometry, kw))
            return "ran"

    try:
        spec = PROTOCOLS.get("old-toy")
        assert spec.function is old and spec.evaluate is not old and spec.takes_index
        ctx = EvalContext(model="m", train_data="tr", test_data="te", tree=TREE, geometry="g", image_size=16,
                          embedding="features", seed=3, num_workers=1, batch_size=8, mean_steps=2, index="faiss-flat")  # fmt: skip
        assert spec.evaluate(ctx) == "ran"
        assert calls == [("m", "tr", "te", TREE, "g", {"embedding": "features", "seed": 3, "image_size": 16,
                          "device": None, "num_workers": 1, "batch_size": 8, "mean_steps": 2, "index": "faiss-flat"})]  # fmt: skip
    finally:
        PROTOCOLS.unregister("old-toy")


def test_extras_set_as_function_attributes_are_read_once_with_a_warning():
    def split(labels, groups=None, *, num_leaves=0, seed=0, fold=0, folds=5):
        return {"train": np.arange(1), "val": np.arange(0), "test": np.arange(1)}

    split.per_seed = True

    @register_protocol("attr-toy")
    def toy(ctx):
        return ctx.index

    toy.make_split = split
    toy.takes_index = True
    try:
        with pytest.warns(DeprecationWarning, match=r"make_split, per_seed, takes_index set as attributes"):
            spec = PROTOCOLS.get("attr-toy")
        assert (spec.make_split, spec.per_seed, spec.takes_index, spec.evaluate) == (split, True, True, toy)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # read once: the registry now holds the declared spec
            assert PROTOCOLS.get("attr-toy") is spec
    finally:
        PROTOCOLS.unregister("attr-toy")


def test_spec_and_context_errors():
    with pytest.raises(ValueError, match=r"^protocol 'p': per_seed needs a make_split"):
        ProtocolSpec("p", lambda ctx: None, per_seed=True)
    with pytest.raises(ValueError, match=r"^protocol 'p': evaluate must be callable, got 3$"):
        ProtocolSpec("p", 3)
    with pytest.raises(ValueError, match=r"^protocol 'p': make_split must be callable or None, got 'x'$"):
        ProtocolSpec("p", lambda ctx: None, make_split="x")
    with pytest.raises(ValueError, match=r"^protocol 'p': takes_index must be a bool, got 1$"):
        ProtocolSpec("p", lambda ctx: None, takes_index=1)
    with pytest.raises(ValueError, match=r"^protocol 'p': refines must be a protocol name or None, got ''$"):
        ProtocolSpec("p", lambda ctx: None, refines="")
    with pytest.raises(ValueError, match=r"^EvalContext: num_workers must be an integer >= 0, got -1$"):
        EvalContext(model=None, train_data=None, test_data=None, tree=None, geometry=None, image_size=8, num_workers=-1)
    with pytest.raises(TypeError):  # keyword-only: no positional mix-ups
        EvalContext(None, None, None, None, None, 8)
