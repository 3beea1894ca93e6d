"""HCL (Paper 03 (Hyper-DINO) §2.3): loop reference, hand case, gradcheck, views, errors, method."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.experiments import compare, resolve_config
from hierviz.geometry import Euclidean, PoincareBall
from hierviz.hierarchy import LabelTree
from hierviz.losses import HCLLoss, Objective, hcl_terms
from hierviz.methods import build_objective, get_method


def _ball_points(B, d, seed, scale=0.6, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    v = scale * torch.randn(B, d, generator=g, dtype=dtype)
    return PoincareBall(1.0).expmap0(v)


def _loop_reference(h, y, geometry, m0, alpha, lam, eps):
    """HCL with plain Python loops over pairs and geoopt's broadcast distance (geometry.dist)."""
    n = h.shape[0]
    D = [[float(geometry.dist(h[i], h[j])) if i != j else 0.0 for j in range(n)] for i in range(n)]
    d_bar = sum(sum(row) for row in D) / n**2
    m = m0 + alpha * d_bar
    pos_num = pos_den = neg_num = neg_den = 0.0
    for i in range(n):
        for j in range(n):
            if int(y[i]) == int(y[j]):
                pos_num += D[i][j]
                pos_den += 1
            else:
                neg_num += max(0.0, m - D[i][j])
                neg_den += 1
    norm = lam * sum(float(h[i].norm()) for i in range(n)) / n
    return pos_num / (pos_den + eps) + neg_num / (neg_den + eps) + norm


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("params", [(0.5, 0.1, 1e-3), (2.0, 0.3, 0.1), (0.0, 0.0, 0.0)])
def test_poincare_matches_loop_reference(seed, params):
    m0, alpha, lam = params
    h = _ball_points(9, 5, seed)
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 0, 3])
    got = HCLLoss(PoincareBall(1.0), m0=m0, alpha=alpha, lam=lam)(h, y)
    ref = _loop_reference(h, y, PoincareBall(1.0), m0, alpha, lam, 1e-8)
    assert got.item() == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_euclidean_control_matches_loop_reference():
    g = torch.Generator().manual_seed(4)
    h = torch.nn.functional.normalize(torch.randn(8, 3, generator=g, dtype=torch.float64), dim=-1)
    y = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    geometry = Euclidean()
    got = HCLLoss(geometry, m0=1.5, alpha=0.2, lam=0.01)(h, y)
    ref = _loop_reference(h, y, geometry, 1.5, 0.2, 0.01, 1e-8)
    assert got.item() == pytest.approx(ref, rel=1e-9)


def test_hand_case_on_a_line():
    # three points on a line in the unit ball: 0, +t, -t with d(0, ±t) = 2 artanh(t) and
    # d(t, -t) = 2 artanh(2t / (1 + t²)) = 4 artanh(t).
    t = 0.5
    a = 2 * math.atanh(t)
    h = torch.tensor([[0.0, 0.0], [t, 0.0], [-t, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1])  # positives: (0,1), (1,0) and the 2 diagonal pairs of class 0 + 1 of class 1
    loss = HCLLoss(PoincareBall(1.0), m0=3.0, alpha=0.1, lam=0.5, eps=1e-8)
    value = loss(h, y).item()
    d_bar = (2 * a + 2 * a + 2 * (2 * a)) / 9  # D sums to 4 + 2·(4 artanh t)... written out per pair
    m = 3.0 + 0.1 * d_bar
    pos = (2 * a) / (5 + 1e-8)  # 5 positive ordered pairs, two of them off-diagonal at distance a
    neg = (2 * max(0.0, m - a) + 2 * max(0.0, m - 2 * a)) / (4 + 1e-8)  # (0,2), (2,0) at a; (1,2), (2,1) at 2a
    norm = 0.5 * (0 + t + t) / 3
    assert value == pytest.approx(pos + neg + norm, rel=1e-12)
    assert loss.last_terms["margin"] == pytest.approx(m, rel=1e-12)
    assert loss.last_terms["d_bar"] == pytest.approx(d_bar, rel=1e-12)


def test_terms_function_doc_case_and_no_negatives():
    D = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
    t = hcl_terms(D, torch.tensor([0, 0]), torch.ones(2, dtype=torch.float64), m0=0.5, alpha=0.1, lam=1.0, eps=1e-8)
    assert t["neg"].item() == 0.0  # no negative pair: 0 / eps, not NaN
    assert t["pos"].item() == pytest.approx(2 / 4)
    assert t["norm"].item() == pytest.approx(1.0)


def test_views_are_flattened_and_are_positives_of_each_other():
    h2 = _ball_points(12, 4, seed=5).reshape(6, 2, 4)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    loss = HCLLoss(PoincareBall(1.0))
    flat = h2.transpose(0, 1).reshape(12, 4)
    assert loss(h2, y).item() == pytest.approx(loss(flat, y.repeat(2)).item(), rel=1e-12)


def test_gradcheck_float64():
    h = _ball_points(6, 3, seed=6, scale=0.4).requires_grad_(True)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    loss = HCLLoss(PoincareBall(1.0), m0=2.0, alpha=0.1, lam=0.1)
    assert torch.autograd.gradcheck(lambda x: loss(x, y), (h,), eps=1e-6, atol=1e-6)
    lossE = HCLLoss(Euclidean(), m0=1.0, alpha=0.1, lam=0.1)
    assert torch.autograd.gradcheck(lambda x: lossE(x, y), (h,), eps=1e-6, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m0=st.floats(0, 3), alpha=st.floats(0, 1), B=st.integers(2, 10))
def test_property_nonnegative_finite_gradient_and_reference(seed, m0, alpha, B):
    h = _ball_points(B, 3, seed, scale=0.8).requires_grad_(True)  # geoopt saturates near the rim
    y = torch.randint(0, 3, (B,), generator=torch.Generator().manual_seed(seed))
    value = HCLLoss(PoincareBall(1.0), m0=m0, alpha=alpha, lam=1e-3)(h, y)
    value.backward()
    assert value.item() >= 0 and torch.isfinite(h.grad).all()
    ref = _loop_reference(h.detach(), y, PoincareBall(1.0), m0, alpha, 1e-3, 1e-8)
    assert value.item() == pytest.approx(ref, rel=1e-7, abs=1e-9)


def test_float32_runs_and_default_geometry_is_the_unit_ball():
    loss = HCLLoss()
    assert isinstance(loss.geometry, PoincareBall) and loss.geometry.c == 1.0
    assert (loss.m0, loss.alpha, loss.lam) == (0.5, 0.1, 1e-3)
    h = _ball_points(5, 4, 7, dtype=torch.float32)
    assert torch.isfinite(loss(h, torch.tensor([0, 1, 0, 1, 2])))


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"m0": -1.0}, ValueError, "m0 must be >= 0.0, got -1.0"),
        ({"alpha": float("nan")}, ValueError, "alpha must be finite"),
        ({"lam": "big"}, TypeError, "lam must be a real number"),
        ({"eps": 0.0}, ValueError, "eps must be > 0.0"),
        ({"geometry": 3}, TypeError, "geometry must be a hierviz Geometry"),
    ],
)
def test_bad_hyperparameters(kwargs, err, match):
    with pytest.raises(err, match=match):
        HCLLoss(**kwargs)


def test_bad_inputs_are_one_line():
    loss = HCLLoss(tree=LabelTree.from_nested({"root": {"a": ["x", "y"]}}))
    with pytest.raises(ValueError, match="outside the Poincaré ball"):
        loss(torch.tensor([[0.9, 0.9], [0.0, 0.1]]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"labels must have shape \(B,\) = \(2,\)"):
        loss(torch.zeros(2, 2), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="labels has values outside"):
        loss(torch.zeros(2, 2), torch.tensor([0, 5]))
    with pytest.raises(ValueError, match="NaN or inf"):
        loss(torch.tensor([[float("nan"), 0.0], [0.0, 0.1]]), torch.tensor([0, 1]))


TREE = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})


def test_method_hcl_builds_the_loss_with_its_hyperparameters():
    method = get_method("hcl")
    assert method.paper == "Paper 03 (Hyper-DINO)" and method.hparams == ("hcl.m0", "hcl.alpha", "hcl.lambda")
    ball = PoincareBall(1.0)
    obj = build_objective(
        "hcl",
        TREE,
        ball,
        m0=1.0,
        alpha=0.2,
        **{"hcl.lambda": 0.01},
        cone_weight=0.0,
        center_weight=0.0,
        cpcc_weight=0.0,
    )
    assert isinstance(obj, Objective)
    h = _ball_points(8, 4, 8).reshape(4, 2, 4)
    y = torch.tensor([0, 1, 2, 0])
    loss, terms = obj(h, y)
    ref = HCLLoss(ball, m0=1.0, alpha=0.2, lam=0.01)(h, y)
    assert torch.allclose(loss, ref) and set(terms) == {"hcl"}


def test_compare_runs_hcl_on_images(tmp_path):
    cfg = resolve_config(
        "quick-ham10000",
        [
            "data.limit=60",
            "seeds=1",
            "model.width=4",
            "model.embed_dim=8",
            "data.image_size=16",
            "eval.projection=pca",
            "train.batch_size=32",
            "train.epochs=1",
            "methods=hcl",
            "geometries=poincare",
            f"out={tmp_path}",
        ],
    )
    result = compare(cfg, progress=False, verbose=False)
    (row,) = result.rows
    assert row["method"] == "hcl" and "| HCL |" in result.markdown
    assert 0.0 <= row["top1"] <= 1.0
