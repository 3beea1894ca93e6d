"""Loss inputs at the edges (each test failed on hierviz 0.2)."""

from __future__ import annotations

import math

import pytest
import torch

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.losses import (
    AHMLCLoss,
    BinaryLoss,
    GHMLCLoss,
    HCLLoss,
    HMLCLoss,
    HWCLoss,
    LAMLoss,
    LeafLoss,
    PerLevelLoss,
    SimCLRLoss,
    SupConLoss,
    TripletLoss,
)
from hierviz.losses.hyilr import hyilr_contrastive_loss

TREE = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z", "w"]}})
EUC = get_geometry("euclidean")
Y = torch.tensor([0, 1, 2, 3, 0, 1])


def _z(d=6, v=2, seed=0):
    return torch.nn.functional.normalize(torch.randn(6, v, d, generator=torch.Generator().manual_seed(seed)), dim=-1)


@pytest.mark.parametrize("scale", [1e-13, 1e-30])
def test_cosine_losses_do_not_depend_on_the_norm_even_below_1e_12(scale):
    z = _z()
    for loss in (SupConLoss(TREE, EUC), HWCLoss(TREE, EUC), SupConLoss(TREE, EUC, similarity="cosine")):
        torch.testing.assert_close(loss(z * scale, Y), loss(z, Y), rtol=1e-5, atol=1e-6)
    simclr = SimCLRLoss(None, EUC)
    torch.testing.assert_close(simclr(z * scale, None), simclr(z, None), rtol=1e-5, atol=1e-6)


def test_tau_below_float32_normal_range_is_refused_never_nan():
    for make in (
        lambda t: SupConLoss(TREE, EUC, tau=t),
        lambda t: HWCLoss(TREE, EUC, tau=t),
        lambda t: HMLCLoss(tau=t, tree=TREE),
    ):
        with pytest.raises(ValueError, match=r"(tau|temperature)=1e-39 is below 1.18e-38"):
            make(1e-39)
    loss = SupConLoss(TREE, EUC, tau=0.1)
    loss.tau = 1e-40  # a slider sets the attribute: re-checked at the call
    with pytest.raises(ValueError, match="tau"):
        loss(_z(), Y)
    with pytest.raises(ValueError, match="tau"):
        hyilr_contrastive_loss(torch.rand(2, 3), torch.ones(2, 3, dtype=torch.bool), torch.zeros(2, 3), tau=1e-39)
    assert not math.isnan(float(SupConLoss(TREE, EUC, tau=1e-30)(_z(), Y)))


@pytest.mark.parametrize(
    "make",
    [
        lambda: SupConLoss(TREE, EUC),
        lambda: HWCLoss(TREE, EUC),
        lambda: LAMLoss(TREE, EUC),
        lambda: HMLCLoss(tree=TREE),
        lambda: GHMLCLoss(tree=TREE),
        lambda: AHMLCLoss(tree=TREE),
        lambda: HCLLoss(EUC, tree=TREE),
        lambda: LeafLoss(TREE),
        lambda: PerLevelLoss(TREE),
        lambda: BinaryLoss(TREE),
        lambda: TripletLoss(EUC),
    ],
)
def test_zero_dimensional_embeddings_are_refused_by_every_loss(make):
    with pytest.raises(ValueError, match=r"d ?[=>]=? ?[01]|D >= 1"):
        make()(torch.zeros(6, 1, 0), Y)


@pytest.mark.parametrize("cls", [LeafLoss, PerLevelLoss, BinaryLoss])
def test_head_losses_never_return_values_from_uninitialised_weights(cls):
    loss = cls(TREE)
    with pytest.raises(ValueError, match="d=0"):
        loss(torch.zeros(6, 1, 0), Y)
    assert isinstance(loss.head, torch.nn.LazyLinear) and loss.head.has_uninitialized_params()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cls", [LeafLoss, PerLevelLoss, BinaryLoss, AHMLCLoss])
def test_losses_with_their_own_modules_accept_half_precision(cls, dtype):
    z = _z(d=8, v=1).to(dtype)
    kw = {"tree": TREE} if cls is AHMLCLoss else {}
    torch.manual_seed(0)
    ref_loss = cls(TREE) if cls is not AHMLCLoss else cls(**kw)
    want = ref_loss(z.float(), Y)
    torch.manual_seed(0)
    half_loss = cls(TREE) if cls is not AHMLCLoss else cls(**kw)
    got = half_loss(z, Y)
    assert got.dtype == torch.float32 and torch.isfinite(got)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("bad", [float("nan"), 2.5, 0, True])
def test_ghmlc_max_iter_is_named_in_its_error(bad):
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        GHMLCLoss(tree=TREE, max_iter=bad)


def test_hyilr_contrastive_loss_refuses_non_finite_distances():
    d = torch.rand(3, 4)
    d[1, 2] = float("nan")
    t = torch.zeros(3, 4, dtype=torch.bool)
    t[:, 0] = True
    with pytest.raises(ValueError, match="d contains NaN or inf"):
        hyilr_contrastive_loss(d, t, ~t)
    d[1, 2] = 0.5
    assert torch.isfinite(hyilr_contrastive_loss(d, t, ~t))
