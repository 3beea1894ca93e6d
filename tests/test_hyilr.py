"""HyILR (Paper 05): Lorentz scalars, hierarchy negatives (Eqs. 13–14), Eq. 15, BCE + λ·CL."""

from __future__ import annotations

import math

import geoopt
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.hierarchy import LabelTree
from hierviz.losses.hyilr import (
    HyperbolicScales,
    distance,
    hierarchy_negatives,
    hyilr_contrastive_loss,
    hyilr_loss,
    label_relations,
    lorentz_distance,
    lorentz_expmap0,
    project,
    random_negatives,
)

D64 = torch.float64


def random_tree(rng: np.random.Generator, n: int) -> LabelTree:
    parents = {"n0": None}
    for i in range(1, n):
        parents[f"n{i}"] = f"n{rng.integers(0, i)}"
    return LabelTree.from_parents(parents)


def random_targets(rng: np.random.Generator, tree: LabelTree, B: int) -> torch.Tensor:
    """Multi-label path targets: each sample takes 0–3 random nodes and all their ancestors."""
    labels = [n for n in tree.nodes if n != tree.root]
    idx = {n: i for i, n in enumerate(labels)}
    y = torch.zeros(B, len(labels), dtype=torch.bool)
    for i in range(B):
        for n in rng.choice(labels, size=rng.integers(0, 4)):
            for a in tree.ancestors(str(n)):
                if a != tree.root:
                    y[i, idx[a]] = True
    return y


# ---------------------------------------------------------------- loop references (from the equations)
def negatives_loop(d: torch.Tensor, y: torch.Tensor, tree: LabelTree) -> torch.Tensor:
    labels = [n for n in tree.nodes if n != tree.root]
    idx = {n: i for i, n in enumerate(labels)}
    out = torch.zeros_like(y)
    for i in range(y.shape[0]):
        P = [labels[j] for j in range(len(labels)) if y[i, j]]
        N1 = set()
        for p in P:  # Eq. 13
            cand = [idx[j] for j in tree.descendants(p) if not y[i, idx[j]]]
            if cand:
                N1.add(min(cand, key=lambda j: (float(d[i, j]), j)))
        N2 = set()
        for p in P:  # Eq. 14
            cand = [
                idx[j]
                for j in labels
                if tree.depth(j) == tree.depth(p) and j != p and not y[i, idx[j]] and idx[j] not in N1
            ]
            if cand:
                N2.add(min(cand, key=lambda j: (float(d[i, j]), j)))
        for j in N1 | N2:
            out[i, j] = True
    return out


def cl_loop(d: torch.Tensor, y: torch.Tensor, neg: torch.Tensor, tau: float) -> torch.Tensor:
    rows = []
    for i in range(d.shape[0]):
        P = [j for j in range(d.shape[1]) if y[i, j]]
        if not P:
            continue
        S = [j for j in range(d.shape[1]) if y[i, j] or neg[i, j]]
        den = sum(torch.exp(-d[i, s] / tau) for s in S)
        rows.append(sum(-torch.log(torch.exp(-d[i, p] / tau) / den) for p in P) / len(P))
    return torch.stack(rows).mean()


# ---------------------------------------------------------------- 1. Lorentz with learnable scalars
def test_expmap0_and_distance_match_geoopt():
    torch.manual_seed(0)
    for k in (0.3, 1.0, 2.5):
        man = geoopt.Lorentz(k=torch.tensor(1.0 / k, dtype=D64))  # geoopt's k is 1/curvature
        v = torch.randn(6, 5, dtype=D64) * 0.8
        w = torch.randn(4, 5, dtype=D64) * 1.5
        x = lorentz_expmap0(v, k)
        gx = man.expmap0(torch.cat([torch.zeros(6, 1, dtype=D64), v], -1))
        torch.testing.assert_close(x, gx[:, 1:], rtol=1e-10, atol=1e-12)
        y = lorentz_expmap0(w, k)
        gy = man.expmap0(torch.cat([torch.zeros(4, 1, dtype=D64), w], -1))
        torch.testing.assert_close(lorentz_distance(x, y, k), man.dist(gx[:, None], gy[None]), rtol=1e-9, atol=1e-9)
        # on the hyperboloid <u,u>_L = -1/k, and d(O, exp_O(v)) = |v|
        t = (1 / k + (x * x).sum(-1)).sqrt()
        torch.testing.assert_close(-t * t + (x * x).sum(-1), torch.full((6,), -1 / k, dtype=D64))
        o = torch.zeros(1, 5, dtype=D64)
        torch.testing.assert_close(lorentz_distance(o, x, k)[0], v.norm(dim=-1), rtol=1e-9, atol=1e-9)


def test_eq11_closed_form():
    e = torch.tensor([[0.3, -0.4]], dtype=D64)  # |e| = 0.5
    k = 2.0
    r = math.sqrt(k) * 0.5
    torch.testing.assert_close(lorentz_expmap0(e, k), e * math.sinh(r) / r)


def test_scales_init_and_log_space():
    s = HyperbolicScales(h=16)
    assert s.c.item() == 1.0 and s.log_c.item() == 0.0
    assert s.alpha_t.item() == pytest.approx(0.25) and s.alpha_l.item() == pytest.approx(0.25)
    assert {n for n, _ in s.named_parameters()} == {"log_c", "log_alpha_t", "log_alpha_l"}
    assert all(p.dtype == D64 for p in s.parameters())
    with pytest.raises(ValueError, match="geometry"):
        HyperbolicScales(4, geometry="klein")
    with pytest.raises(ValueError, match="h "):
        HyperbolicScales(0)


def test_gradcheck_projection_and_distance():
    torch.manual_seed(1)
    t = torch.randn(3, 4, dtype=D64, requires_grad=True)
    w = torch.randn(5, 4, dtype=D64, requires_grad=True)
    for geo in ("lorentz", "poincare", "euclidean"):

        def f(t, w, lk, la, ll, geo=geo):
            k = lk.exp()
            return distance(project(t, la.exp(), k, geo), project(w, ll.exp(), k, geo), k, geo)

        args = (t, w, *(torch.tensor(v, dtype=D64, requires_grad=True) for v in (math.log(0.7), -0.1, 0.2)))
        assert torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-6)


def test_scales_gradients_reach_log_c_and_alphas():
    torch.manual_seed(2)
    s = HyperbolicScales(4)
    T, L = s.project_text(torch.randn(3, 4)), s.project_labels(torch.randn(5, 4))
    s.distance(T, L).sum().backward()
    for p in s.parameters():
        assert p.grad is not None and torch.isfinite(p.grad) and p.grad != 0


def test_far_from_origin_float64():
    # a point at distance 12 from the origin: float32 features, float64 inside
    s = HyperbolicScales(2)
    with torch.no_grad():
        s.log_alpha_t.fill_(0.0)
    T = s.project_text(torch.tensor([[12.0, 0.0], [12.0, 1e-3]]))
    assert T.dtype == D64
    r = s.radius(T)
    torch.testing.assert_close(r, torch.tensor([12.0, math.hypot(12.0, 1e-3)], dtype=D64), rtol=1e-9, atol=1e-9)
    d = s.distance(T[:1], T[1:])
    # geodesic distance of two points at radius 12, angle 1e-3/12 apart: ~ sinh(12)·angle
    assert float(d.detach()) == pytest.approx(2 * math.asinh(math.sinh(12.0) * math.sin(1e-3 / 12 / 2)), rel=1e-4)


# ---------------------------------------------------------------- 2. negatives
def test_negatives_hand_case():
    tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    # labels: a, b, a1, a2, b1, b2
    desc, same = label_relations(tree)
    assert desc[0].tolist() == [False, False, True, True, False, False]
    assert same[2].tolist() == [False, False, False, True, True, True]
    d = torch.tensor([[0.1, 0.9, 0.2, 0.3, 0.5, 0.4]])
    y = torch.tensor([[True, False, False, False, False, False]])  # only "a"
    # N1 = nearest non-positive descendant of a: a1; N2 = nearest non-positive at level 1: b
    assert hierarchy_negatives(d, y, desc, same).tolist() == [[False, True, True, False, False, False]]
    y = torch.tensor([[True, False, True, False, False, False]])  # a, a1
    # N1: a2 (a1 is positive); a1 is a leaf. N2: b for a; for a1 the nearest same-level non-positive not in N1: b2
    assert hierarchy_negatives(d, y, desc, same).tolist() == [[False, True, False, True, False, True]]


def test_negatives_none_available():
    tree = LabelTree.from_nested({"root": {"a": ["a1"]}})
    desc, same = label_relations(tree)
    d = torch.rand(2, 2)
    y = torch.tensor([[True, True], [True, False]])
    neg = hierarchy_negatives(d, y, desc, same)
    assert neg.tolist() == [[False, False], [False, True]]  # a full path has no negative; a alone gets a1
    loss = hyilr_contrastive_loss(d, y, neg)
    assert torch.isfinite(loss)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 14), B=st.integers(1, 6))
def test_negatives_match_loop(seed, n, B):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n)
    y = random_targets(rng, tree, B)
    c = y.shape[1]
    d = torch.tensor(rng.integers(0, 5, size=(B, c)), dtype=D64)  # ties included
    got = hierarchy_negatives(d, y, *label_relations(tree))
    assert torch.equal(got, negatives_loop(d, y, tree))
    assert not (got & y).any()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12), B=st.integers(1, 6), tau=st.sampled_from([0.07, 0.5, 2.0]))
def test_contrastive_loss_matches_loop(seed, n, B, tau):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n)
    y = random_targets(rng, tree, B)
    if not y.any():
        y[0, 0] = True
    d = torch.tensor(rng.uniform(0, 3, size=y.shape), dtype=D64)
    neg = hierarchy_negatives(d, y, *label_relations(tree))
    torch.testing.assert_close(hyilr_contrastive_loss(d, y, neg, tau), cl_loop(d, y, neg, tau))


def test_contrastive_loss_hand_value_and_grad():
    d = torch.tensor([[1.0, 2.0, 3.0]], dtype=D64, requires_grad=True)
    y = torch.tensor([[True, False, False]])
    neg = torch.tensor([[False, True, False]])
    tau = 0.5
    want = -math.log(math.exp(-2.0) / (math.exp(-2.0) + math.exp(-4.0)))
    loss = hyilr_contrastive_loss(d, y, neg, tau)
    assert float(loss.detach()) == pytest.approx(want)
    assert torch.autograd.gradcheck(lambda d: hyilr_contrastive_loss(d, y, neg, tau), (d,))
    no_pos = hyilr_contrastive_loss(d, torch.zeros_like(y), neg)
    assert no_pos.item() == 0.0 and no_pos.requires_grad
    with pytest.raises(ValueError, match="tau"):
        hyilr_contrastive_loss(d, y, neg, tau=0.0)


def test_random_negatives_counts():
    g = torch.Generator().manual_seed(0)
    y = torch.tensor([[True, False, False, False, False, False], [True, True, True, True, True, False]])
    neg = random_negatives(y, generator=g)
    assert neg.sum(1).tolist() == [2, 1]
    assert not (neg & y).any()


def test_hyilr_loss_lambda_zero_is_bce_and_ablations_run():
    torch.manual_seed(0)
    tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    rel = label_relations(tree)
    logits = torch.randn(4, 6, requires_grad=True)
    y = torch.tensor([[1, 0, 1, 0, 0, 0], [0, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 0, 1]]).bool()
    text, lab = torch.randn(4, 8, requires_grad=True), torch.randn(6, 8, requires_grad=True)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, y.float())
    loss0, terms = hyilr_loss(logits, text, lab, y, HyperbolicScales(8), rel, lam=0.0)
    torch.testing.assert_close(loss0, bce)
    for geo in ("lorentz", "poincare", "euclidean"):
        for negs in ("hierarchy", "random"):
            s = HyperbolicScales(8, geometry=geo)
            loss, terms = hyilr_loss(logits, text, lab, y, s, rel, lam=0.4, negatives=negs)
            assert loss.dtype == torch.float32 and torch.isfinite(loss)
            torch.testing.assert_close(loss, bce + 0.4 * terms["cl"], rtol=1e-5, atol=1e-6)
            loss.backward()
            assert text.grad is not None and s.log_alpha_t.grad is not None
    with pytest.raises(ValueError, match="lam"):
        hyilr_loss(logits, text, lab, y, HyperbolicScales(8), rel, lam=-1.0)
