"""The method registry: built-ins equal the losses they wrap, registration rules, declarations."""

from __future__ import annotations

import pytest
import torch

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.losses import HWCLoss, HXELoss, LAMLoss, Objective, SupConLoss
from hierviz.methods import LOSS_HPARAMS, METHODS, Needs, build_objective, get_method, register_method

TREE = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": {"c": ["z", "w"], "d": ["v"]}}})


def _batch(geometry, seed=0, B=10, V=2, d=6):
    g = torch.Generator().manual_seed(seed)
    v = 0.3 * torch.randn(B, V, d, generator=g, dtype=torch.float64)
    z = geometry.proj(geometry.expmap0(v)) if geometry.hyperbolic else torch.nn.functional.normalize(v, dim=-1)
    y = torch.randint(0, TREE.num_leaves, (B,), generator=g)
    return z, y


def test_builtin_methods_are_registered_with_declarations():
    assert METHODS.names()[:8] == ["simclr", "supcon", "hc-outside", "hxe", "soft-labels", "hwc", "lam", "hwc+lam"]
    assert get_method("hxe").needs.logits and get_method("hxe").embedding == "features"
    assert get_method("soft-labels").needs.logits
    assert not get_method("hwc+lam").needs.logits and get_method("hwc+lam").embedding == "z"
    assert get_method("HWC+LAM").display_name == "HWC+LAM"
    hwc_lam = {"tau", "hwc.alpha", "hwc.gamma", "hwc.alpha_max", "lam.lambda", "lam.margins", "lam.eta"}
    assert hwc_lam <= set(get_method("hwc+lam").hparams)


@pytest.mark.parametrize("geo", ["euclidean", "poincare"])
def test_hwc_lam_equals_its_terms_built_by_hand(geo):
    geometry = get_geometry(geo)
    z, y = _batch(geometry)
    bare = dict(cone_weight=0.0, center_weight=0.0, cpcc_weight=0.0)  # the paper's loss: no depth terms
    obj = build_objective("hwc+lam", TREE, geometry, alpha=0.7, gamma=0.3, tau=0.2, **{"lam.lambda": 0.5}, **bare)
    loss, terms = obj(z, y)
    hwc = HWCLoss(TREE, geometry, tau=0.2, alpha=0.7, gamma=0.3, reduction="pairs")(z, y)
    lam = LAMLoss(TREE, geometry)(z, y)
    assert torch.allclose(terms["hwc"], hwc.detach()) and torch.allclose(terms["lam"], lam.detach())
    assert torch.allclose(loss, hwc + 0.5 * lam)


def test_lam_is_supcon_plus_lam_and_supcon_matches():
    geometry = get_geometry("euclidean")
    z, y = _batch(geometry, seed=3)
    loss, terms = build_objective("lam", TREE, geometry, **{"lam.lambda": 2.0})(z, y)
    sup = SupConLoss(TREE, geometry, tau=0.1, reduction="pairs")(z, y)
    assert torch.allclose(terms["supcon"], sup.detach())
    assert torch.allclose(loss, sup + 2.0 * terms["lam"])


def test_hxe_objective_reads_logits_of_every_view():
    geometry = get_geometry("euclidean")
    obj = build_objective("hxe", TREE, geometry)
    logits = torch.randn(6, 2, TREE.num_leaves, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 3, 4, 0])
    loss, _ = obj.loss_from_output({"z": None, "logits": logits}, y)
    ref = HXELoss(TREE, alpha=0.1)
    want = 0.5 * (ref(logits[:, 0], y) + ref(logits[:, 1], y))
    assert torch.allclose(loss, want)
    with pytest.raises(ValueError, match="requires logits"):
        obj.loss_from_output({"z": torch.zeros(6, 2, 4)}, y)


def test_unknown_method_and_hparam_are_refused_with_suggestions():
    with pytest.raises(ValueError, match="did you mean 'supcon'"):
        build_objective("supcn", TREE, "euclidean")
    with pytest.raises(TypeError, match="unknown hyperparameter"):
        build_objective("supcon", TREE, "euclidean", temperature=0.1)


def test_user_method_registers_declares_hparams_and_builds():
    try:

        @register_method("toy-reg", display_name="Toy", hparams={"toy_weight": 2.0}, needs=Needs(views=3))
        def toy(tree, geometry, hp):
            return Objective("toy-reg", {"supcon": SupConLoss(tree, geometry)}, {"supcon": hp["toy_weight"]})

        assert LOSS_HPARAMS["toy_reg.toy_weight"].default == 2.0 and "toy_weight" not in LOSS_HPARAMS
        assert get_method("toy-reg").hparams == ("toy_reg.toy_weight",)
        assert get_method("toy-reg").needs.views == 3
        obj = build_objective("toy-reg", TREE, "euclidean", toy_weight=3.0)
        assert obj.weights == {"supcon": 3.0}
        assert build_objective("toy-reg", TREE, "euclidean", **{"toy_reg.toy_weight": 4.0}).weights == {"supcon": 4.0}
        with pytest.raises(ValueError, match="already registered"):
            register_method("toy-reg")(toy)
        with pytest.raises(ValueError, match="loss.toy_reg.toy_weight is already declared with default 2.0"):
            register_method("toy-reg", hparams={"toy_weight": 5.0}, replace=True)(toy)
        register_method("toy-reg2", hparams={"toy_weight": 5.0})(toy)  # its own key: no clash with toy-reg's
        assert build_objective("toy-reg2", TREE, "euclidean").weights == {"supcon": 5.0}
        with pytest.raises(ValueError, match="not declared"):
            register_method("toy-reg3", hparams=("no_such_hparam",))(toy)
    finally:
        for name in ("toy-reg", "toy-reg2"):
            if name in METHODS:
                METHODS.unregister(name)
        LOSS_HPARAMS.pop("toy_reg.toy_weight", None)
        LOSS_HPARAMS.pop("toy_reg2.toy_weight", None)


def test_needs_validates_views():
    with pytest.raises(ValueError, match="views must be an integer >= 1"):
        Needs(views=0)


def test_the_0_1_aliases_are_gone():
    """hierviz.losses imports no method code: build_objective, OBJECTIVES and HPARAMS live in hierviz.methods."""
    from pathlib import Path

    import hierviz
    import hierviz.losses
    import hierviz.losses.objective

    for mod in (hierviz.losses, hierviz.losses.objective):
        for name in ("build_objective", "OBJECTIVES", "HPARAMS"):
            assert not hasattr(mod, name), f"{mod.__name__}.{name}"
    for gone in ("tree", "train", "evaluate"):  # the 0.1 module aliases
        assert not (Path(hierviz.__file__).parent / f"{gone}.py").exists(), gone


def test_a_method_sampler_drives_the_training_batches(tmp_path):

    from hierviz.experiments import compare, resolve_config
    from hierviz.samplers import SAMPLERS, ClassBalancedBatchSampler, register_sampler

    seen = {"epochs": [], "batches": 0}

    class Recording(ClassBalancedBatchSampler):
        def set_epoch(self, epoch):
            seen["epochs"].append(epoch)
            super().set_epoch(epoch)

        def __iter__(self):
            for b in super().__iter__():
                seen["batches"] += 1
                yield b

    try:
        register_sampler("recording")(lambda *, labels, tree, batch_size, seed: Recording(labels, batch_size, seed))

        @register_method("supcon-rec", hparams=("tau",), needs=Needs(sampler="recording"))
        def supcon_rec(tree, geometry, hp):
            return Objective("supcon-rec", {"supcon": SupConLoss(tree, geometry, tau=hp["tau"])})

        cfg = resolve_config(
            "quick-ham10000",
            [
                "methods=supcon-rec",
                "geometries=euclidean",
                "seeds=1",
                "train.epochs=2",
                "data.limit=60",
                "model.width=4",
                "model.embed_dim=8",
                "data.image_size=16",
                "train.batch_size=16",
                "eval.projection=pca",
                "data.workers=0",
                f"out={tmp_path}",
            ],
        )
        compare(cfg, progress=False, verbose=False)
        assert seen["epochs"] == [0, 1] and seen["batches"] >= 2
    finally:
        METHODS.unregister("supcon-rec")
        SAMPLERS.unregister("recording")


def test_class_balanced_sampler_covers_each_image_once_per_epoch():
    import numpy as np

    from hierviz.samplers import ClassBalancedBatchSampler

    labels = np.array([0] * 7 + [1] * 3 + [2] * 2)
    s = ClassBalancedBatchSampler(labels, batch_size=4, seed=1)
    batches = list(s)
    flat = [i for b in batches for i in b]
    assert len(batches) == 3 and len(flat) == len(set(flat)) == 12
    assert set(labels[batches[0]]) == {0, 1, 2}  # the first round robin holds every class
    s.set_epoch(1)
    assert list(s) != batches
