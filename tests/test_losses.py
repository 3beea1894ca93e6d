"""Contrastive losses (SimCLR, SupCon, HWC, outside-softmax control), HXE and the objective builder.

Reference values come from loop-based re-implementations written plainly here (paper 01
Eqs. 4–8 with ρ written by hand for the BreakHis tree), from pytorch-metric-learning (peer),
from limiting cases (α = γ = 0, flat tree, α = 0 in HXE) and from float64 gradcheck.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.losses import (
    HWCLoss,
    HXELoss,
    Objective,
    OutsideSoftmaxHCLoss,
    SimCLRLoss,
    SoftLabelLoss,
    SupConLoss,
    contrastive_log_prob,
    hwc_logit_gradient,
    hwc_omega,
)
from hierviz.methods import METHODS as OBJECTIVES
from hierviz.methods import build_objective

GEOMS = ["euclidean", "poincare"]

# BreakHis leaf order of tests/conftest.py: 0-3 benign, 4-7 malignant; L = 2.
PARENT = {i: ("benign" if i < 4 else "malignant") for i in range(8)}


def rho_hand(a: int, b: int) -> float:
    """Paper 01 Eq. 4 on the BreakHis tree, by hand: depth(lca)/L with L = 2."""
    if a == b:
        return 1.0
    return 0.5 if PARENT[a] == PARENT[b] else 0.0


def make_z(geom: str, B: int, V: int, d: int, seed: int = 0, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    raw = torch.randn(B, V, d, generator=g, dtype=dtype)
    if geom == "euclidean":
        return F.normalize(raw, dim=-1)
    # points inside the unit ball, norms in (0, 0.8)
    r = 0.8 * torch.rand(B, V, 1, generator=g, dtype=dtype)
    return r * F.normalize(raw, dim=-1)


def sim_hand(geom: str, u: torch.Tensor, v: torch.Tensor) -> float:
    """cosine (Euclidean) or −d (Poincaré ball, c = 1, paper 01 Eq. 2), in plain Python."""
    u, v = u.tolist(), v.tolist()
    dot = sum(a * b for a, b in zip(u, v))
    nu, nv = sum(a * a for a in u), sum(b * b for b in v)
    if geom == "euclidean":
        return dot / math.sqrt(nu * nv)
    diff = sum((a - b) ** 2 for a, b in zip(u, v))
    x = 1.0 + 2.0 * diff / ((1.0 - nu) * (1.0 - nv))
    return -math.acosh(max(x, 1.0))


def ref_hwc(
    z,
    labels,
    geom,
    tau,
    alpha,
    gamma,
    *,
    alpha_max=None,
    reduction="pairs",
    positives="label",
    omega_mode="pair",
    outside=False,
):
    """Loop-based HWC (Eqs. 5–7) / outside-softmax control, written plainly."""
    B, V = z.shape[0], z.shape[1]
    samples = [(b, v) for b in range(B) for v in range(V)]
    n = len(samples)
    lab = [int(labels[b]) for b, _ in samples]
    s = [[sim_hand(geom, z[samples[i]], z[samples[k]]) / tau for k in range(n)] for i in range(n)]

    def is_pos(i, k):
        same_image = samples[i][0] == samples[k][0]
        return same_image or (positives == "label" and lab[i] == lab[k])

    def omega(i, k):
        r = rho_hand(lab[i], lab[k])
        w = 1 + alpha * r if is_pos(i, k) else 1 + gamma * (1 - r)
        w = max(w, 1.0)
        if alpha_max is not None:
            w = min(w, 1 + alpha_max)
        return w

    if omega_mode == "constant":
        vals = [omega(i, k) for i in range(n) for k in range(n) if k != i]
        wbar = sum(vals) / len(vals)
        om = lambda i, k: wbar  # noqa: E731
    else:
        om = omega
    pair_terms, anchor_means, weight_total = [], [], 0.0
    for i in range(n):
        if outside:
            logits = {k: s[i][k] for k in range(n) if k != i}
        else:
            logits = {k: om(i, k) * s[i][k] for k in range(n) if k != i}
        m = max(logits.values())
        lse = m + math.log(sum(math.exp(v - m) for v in logits.values()))
        terms, wsum = [], 0.0
        for k in range(n):
            if k == i:
                continue
            if outside:
                w = 1.0 if is_pos(i, k) else alpha * rho_hand(lab[i], lab[k])
            else:
                w = 1.0 if is_pos(i, k) else 0.0
            if w > 0:
                terms.append(-w * (logits[k] - lse))
                wsum += w
        pair_terms.extend(terms)
        weight_total += wsum
        if wsum > 0:
            anchor_means.append(sum(terms) / wsum)
    if reduction == "pairs":
        return sum(pair_terms) / weight_total if weight_total else 0.0
    return sum(anchor_means) / len(anchor_means) if anchor_means else 0.0


@pytest.fixture
def batch6():
    """6 images × 2 views on the BreakHis tree: same leaf, siblings and cross-branch pairs."""
    return torch.tensor([0, 0, 1, 4, 4, 7])


# ---------------------------------------------------------------------------- loop reference
@pytest.mark.parametrize("geom", GEOMS)
@pytest.mark.parametrize("reduction", ["pairs", "anchor"])
@pytest.mark.parametrize("omega_mode", ["pair", "constant"])
def test_hwc_matches_loop_reference(breakhis_tree, batch6, geom, reduction, omega_mode):
    z = make_z(geom, 6, 2, 5, seed=1)
    loss = HWCLoss(
        breakhis_tree, get_geometry(geom), tau=0.2, alpha=0.7, gamma=0.4, reduction=reduction, omega=omega_mode
    )
    ref = ref_hwc(z, batch6, geom, 0.2, 0.7, 0.4, reduction=reduction, omega_mode=omega_mode)
    assert loss(z, batch6).item() == pytest.approx(ref, rel=1e-9, abs=1e-9)


def test_hwc_loop_reference_clamp_and_view_positives(breakhis_tree, batch6):
    z = make_z("euclidean", 6, 2, 5, seed=2)
    geo = get_geometry("euclidean")
    loss = HWCLoss(breakhis_tree, geo, tau=0.1, alpha=1.0, gamma=0.8, alpha_max=0.3)
    assert loss(z, batch6).item() == pytest.approx(
        ref_hwc(z, batch6, "euclidean", 0.1, 1.0, 0.8, alpha_max=0.3), rel=1e-9
    )
    loss_v = HWCLoss(breakhis_tree, geo, tau=0.1, alpha=1.0, gamma=0.8, positives="view")
    assert loss_v(z, batch6).item() == pytest.approx(
        ref_hwc(z, batch6, "euclidean", 0.1, 1.0, 0.8, positives="view"), rel=1e-9
    )


def test_hwc_hand_values(breakhis_tree):
    """Two views of one image: one positive, a one-entry softmax → loss 0 exactly."""
    z = make_z("euclidean", 1, 2, 3)
    assert HWCLoss(breakhis_tree, "euclidean")(z, torch.tensor([3])).item() == pytest.approx(0.0, abs=1e-12)
    # three single-view images on the unit circle: e1 (leaf 0), e2 (leaf 0), −e1 (leaf 4)
    z3 = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]], [[-1.0, 0.0]]], dtype=torch.float64)
    lab = torch.tensor([0, 0, 4])  # anchors 0 and 1 are same-leaf positives; anchor 2 has none
    # τ = 0.5, α = γ = 0.5: ω(pos, ρ=1) = 1.5, ω(neg, ρ=0) = 1.5
    # anchor 0: s01 = 0, s02 = −1/τ = −2  →  −log e^0/(e^0 + e^{1.5·(−2)})
    l0 = math.log(1.0 + math.exp(-3.0))
    # anchor 1: s10 = 0, s12 = 0          →  −log 1/2
    l1 = math.log(2.0)
    loss = HWCLoss(breakhis_tree, "euclidean", tau=0.5, alpha=0.5, gamma=0.5)
    assert loss(z3, lab).item() == pytest.approx((l0 + l1) / 2, rel=1e-12)


# ---------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("geom", GEOMS)
@pytest.mark.parametrize("reduction", ["pairs", "anchor"])
def test_hwc_reduces_to_supcon_and_simclr(breakhis_tree, geom, reduction):
    geo = get_geometry(geom)
    z = make_z(geom, 16, 2, 8, seed=3, dtype=torch.float32)
    y = torch.randint(0, 8, (16,), generator=torch.Generator().manual_seed(0))
    hwc0 = HWCLoss(breakhis_tree, geo, tau=0.1, alpha=0.0, gamma=0.0, reduction=reduction)
    sup = SupConLoss(breakhis_tree, geo, tau=0.1, reduction=reduction)
    assert abs(hwc0(z, y).item() - sup(z, y).item()) < 1e-6
    hwc_view = HWCLoss(breakhis_tree, geo, tau=0.1, alpha=0.0, gamma=0.0, positives="view", reduction=reduction)
    simclr = SimCLRLoss(breakhis_tree, geo, tau=0.1)
    assert abs(hwc_view(z, y).item() - simclr(z, y).item()) < 1e-6
    # α = γ = 0 is not a no-op otherwise: HWC with hierarchy differs
    assert abs(HWCLoss(breakhis_tree, geo, reduction=reduction)(z, y).item() - sup(z, y).item()) > 1e-3


def test_alpha_max_zero_is_supcon(breakhis_tree):
    z = make_z("euclidean", 10, 2, 6, seed=4)
    y = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 0, 4])
    a = HWCLoss(breakhis_tree, "euclidean", alpha=0.9, gamma=0.9, alpha_max=0.0)(z, y)
    b = SupConLoss(breakhis_tree, "euclidean", reduction="pairs")(z, y)
    assert a.item() == pytest.approx(b.item(), rel=1e-12)


@pytest.mark.parametrize("reduction", ["pairs", "anchor"])
def test_constant_omega_is_global_temperature(breakhis_tree, batch6, reduction):
    """§3.2: ω̄ (batch-constant) ≡ SupCon at τ' = τ/ω̄."""
    z = make_z("euclidean", 6, 2, 4, seed=5)
    alpha, gamma, tau = 0.6, 0.9, 0.15
    n = 12
    lab = batch6.repeat(2)
    img = torch.arange(6).repeat(2)
    vals = []
    for i in range(n):
        for k in range(n):
            if k != i:
                pos = bool(lab[i] == lab[k]) or bool(img[i] == img[k])
                r = rho_hand(int(lab[i]), int(lab[k]))
                vals.append(1 + alpha * r if pos else 1 + gamma * (1 - r))
    wbar = sum(vals) / len(vals)
    hwc = HWCLoss(breakhis_tree, "euclidean", tau=tau, alpha=alpha, gamma=gamma, omega="constant", reduction=reduction)
    sup = SupConLoss(breakhis_tree, "euclidean", tau=tau / wbar, reduction=reduction)
    assert hwc(z, batch6).item() == pytest.approx(sup(z, batch6).item(), rel=1e-10)
    assert float(hwc.omega_matrix(batch6, views=2)) == pytest.approx(wbar, rel=1e-6)


# ---------------------------------------------------------------------------- peers
def _flat(z: torch.Tensor, labels: torch.Tensor):
    B, V, d = z.shape
    return z.transpose(0, 1).reshape(V * B, d), labels.repeat(V)


def test_supcon_equals_pytorch_metric_learning():
    import pytorch_metric_learning.losses as pml

    z = make_z("euclidean", 24, 2, 16, seed=6).requires_grad_(True)
    y = torch.randint(0, 5, (24,), generator=torch.Generator().manual_seed(1))
    ours = SupConLoss(None, "euclidean", tau=0.07)(z, y)
    zf, yf = _flat(z, y)
    peer = pml.SupConLoss(temperature=0.07)(zf, yf)
    assert ours.item() == pytest.approx(peer.item(), rel=1e-9)
    g1 = torch.autograd.grad(ours, z)[0]
    g2 = torch.autograd.grad(peer, z)[0]
    torch.testing.assert_close(g1, g2, rtol=1e-7, atol=1e-9)


def test_supcon_single_view_no_positive_anchor_matches_pml():
    """V = 1 with a unique label: that anchor has no positive — contributes nothing, no NaN (HobbitLong/SupContrast#141)."""
    import pytorch_metric_learning.losses as pml

    z = make_z("euclidean", 7, 1, 6, seed=7).requires_grad_(True)
    y = torch.tensor([0, 0, 1, 1, 1, 2, 3])  # labels 2 and 3 are alone
    ours = SupConLoss(None, "euclidean", tau=0.1)(z, y)
    peer = pml.SupConLoss(temperature=0.1)(z[:, 0], y)
    assert torch.isfinite(ours) and ours.item() == pytest.approx(peer.item(), rel=1e-9)
    ours.backward()
    assert torch.isfinite(z.grad).all()
    # all labels distinct: no positive anywhere → exactly 0, gradient 0, never NaN
    z2 = make_z("euclidean", 5, 1, 4, seed=8).requires_grad_(True)
    for loss in (
        SupConLoss(None, "euclidean"),
        HWCLoss(LabelTree.from_nested({"r": ["a", "b", "c", "d", "e"]}), "euclidean"),
    ):
        val = loss(z2, torch.arange(5))
        val.backward()
        assert val.item() == 0.0 and torch.equal(z2.grad, torch.zeros_like(z2))
        z2.grad = None


def test_simclr_equals_ntxent():
    import pytorch_metric_learning.losses as pml

    z = make_z("euclidean", 20, 2, 8, seed=9)
    ours = SimCLRLoss(None, "euclidean", tau=0.2)(z)
    zf, ids = _flat(z, torch.arange(20))
    peer = pml.NTXentLoss(temperature=0.2)(zf, ids)
    assert ours.item() == pytest.approx(peer.item(), rel=1e-9)


def test_poincare_supcon_equals_pml_with_hyperbolic_distance():
    """Peer check in the ball: PML's SupConLoss given Eq. 2 as its distance (it negates distances)."""
    import pytorch_metric_learning  # noqa: F401  (declared dev dependency)
    from pytorch_metric_learning.distances import BaseDistance
    from pytorch_metric_learning.losses import SupConLoss as PMLSupCon

    class BallDistance(BaseDistance):
        def __init__(self):
            super().__init__(normalize_embeddings=False, is_inverted=False)

        def compute_mat(self, q, r):
            sq = ((q[:, None] - r[None]) ** 2).sum(-1)
            den = (1 - (q**2).sum(-1))[:, None] * (1 - (r**2).sum(-1))[None]
            return torch.acosh((1 + 2 * sq / den).clamp_min(1.0))

    z = make_z("poincare", 12, 2, 5, seed=10)
    y = torch.randint(0, 4, (12,), generator=torch.Generator().manual_seed(2))
    ours = SupConLoss(None, get_geometry("poincare"), tau=0.5)(z, y)
    zf, yf = _flat(z, y)
    peer = PMLSupCon(temperature=0.5, distance=BallDistance())(zf, yf)
    assert ours.item() == pytest.approx(peer.item(), rel=1e-7)


# ---------------------------------------------------------------------------- Eq. 8 gradient
def test_eq8_gradient_matches_autograd():
    g = torch.Generator().manual_seed(11)
    n = 9
    s = torch.randn(n, n, generator=g, dtype=torch.float64).requires_grad_(True)
    lab = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3, 4])  # label 2 and 4: anchors without positive
    pos = (lab[:, None] == lab[None]) & ~torch.eye(n, dtype=torch.bool)
    rho = torch.rand(n, n, generator=g, dtype=torch.float64)
    rho = torch.where(pos, torch.ones_like(rho), rho)
    omega = hwc_omega(rho, pos, alpha=0.7, gamma=1.3)
    logp = contrastive_log_prob(omega * s)
    posf = pos.double()
    npos = posf.sum(1)
    per_anchor = -(posf * logp).sum(1) / npos.clamp_min(1)
    (auto,) = torch.autograd.grad(per_anchor.sum(), s)
    analytic = hwc_logit_gradient(s.detach(), omega, pos)
    torch.testing.assert_close(analytic, auto, rtol=1e-10, atol=1e-12)
    assert torch.all(analytic[npos == 0] == 0)
    # ω ≡ 1: the SupCon gradient π − 1[P]/|P|
    pi = torch.softmax(s.detach().masked_fill(torch.eye(n, dtype=torch.bool), -math.inf), 1)
    sup = torch.where(npos[:, None] > 0, pi - posf / npos.clamp_min(1)[:, None], torch.zeros_like(pi))
    torch.testing.assert_close(hwc_logit_gradient(s.detach(), 1.0, pos), sup)


def test_eq8_chain_rule_through_hwc_module(breakhis_tree):
    """The module's "anchor" loss gradient w.r.t. z equals Eq. 8 pushed through s = cos/τ."""
    z = make_z("euclidean", 5, 2, 4, seed=12).requires_grad_(True)
    y = torch.tensor([0, 1, 4, 4, 7])
    loss = HWCLoss(breakhis_tree, "euclidean", tau=0.3, alpha=0.5, gamma=0.8, reduction="anchor")
    (gz,) = torch.autograd.grad(loss(z, y), z)
    flat = z.detach().transpose(0, 1).reshape(10, 4).requires_grad_(True)
    unit = F.normalize(flat, dim=-1)  # the geometry's cosine normalises: its Jacobian is part of the chain
    s = (unit @ unit.T) / 0.3
    lab = y.repeat(2)
    img = torch.arange(5).repeat(2)
    pos = ((lab[:, None] == lab[None]) | (img[:, None] == img[None])) & ~torch.eye(10, dtype=torch.bool)
    omega = hwc_omega(breakhis_tree.rho_matrix.double()[lab][:, lab], pos, 0.5, 0.8)
    G = hwc_logit_gradient(s.detach(), omega, pos) / 10  # 10 anchors, all with a positive
    (gflat,) = torch.autograd.grad((G * s).sum(), flat)
    torch.testing.assert_close(gz, gflat.reshape(2, 5, 4).transpose(0, 1), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------- gradcheck
@pytest.mark.parametrize("geom", GEOMS)
@pytest.mark.parametrize("omega_mode", ["pair", "constant"])
def test_hwc_gradcheck_float64(breakhis_tree, geom, omega_mode):
    geo = get_geometry(geom)
    loss = HWCLoss(breakhis_tree, geo, tau=0.3, alpha=0.6, gamma=0.4, omega=omega_mode)
    y = torch.tensor([0, 1, 4])
    v = 0.5 * torch.randn(3, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(13))
    v.requires_grad_(True)
    to_manifold = (lambda t: F.normalize(t, dim=-1)) if geom == "euclidean" else geo.expmap0
    assert torch.autograd.gradcheck(lambda t: loss(to_manifold(t), y), (v,), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("cls", [SupConLoss, SimCLRLoss, OutsideSoftmaxHCLoss])
def test_other_losses_gradcheck(breakhis_tree, cls):
    loss = cls(breakhis_tree, get_geometry("poincare"), tau=0.4)
    geo = get_geometry("poincare")
    y = torch.tensor([0, 1, 1])
    v = 0.4 * torch.randn(3, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(14))
    v.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: loss(geo.expmap0(t), y), (v,), eps=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------- outside-softmax control
@pytest.mark.parametrize("reduction", ["pairs", "anchor"])
def test_hc_outside_matches_loop_reference(breakhis_tree, batch6, reduction):
    z = make_z("euclidean", 6, 2, 5, seed=15)
    loss = OutsideSoftmaxHCLoss(breakhis_tree, "euclidean", tau=0.2, alpha=0.6, reduction=reduction)
    ref = ref_hwc(z, batch6, "euclidean", 0.2, 0.6, 0.0, reduction=reduction, outside=True)
    assert loss(z, batch6).item() == pytest.approx(ref, rel=1e-9)


def test_hc_outside_limits(breakhis_tree):
    z = make_z("euclidean", 10, 2, 6, seed=16)
    y = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 1, 5])
    sup = SupConLoss(breakhis_tree, "euclidean", reduction="pairs")(z, y)
    assert OutsideSoftmaxHCLoss(breakhis_tree, "euclidean", alpha=0.0)(z, y).item() == pytest.approx(
        sup.item(), rel=1e-12
    )
    flat = LabelTree.from_nested({"root": [f"c{i}" for i in range(8)]})  # ρ = 0 between leaves
    assert OutsideSoftmaxHCLoss(flat, "euclidean", alpha=0.9)(z, y).item() == pytest.approx(sup.item(), rel=1e-12)
    # the softmax is untouched: changing α changes only the weights, and α > 0 differs from SupCon here
    assert abs(OutsideSoftmaxHCLoss(breakhis_tree, "euclidean", alpha=0.9)(z, y).item() - sup.item()) > 1e-4


# ---------------------------------------------------------------------------- similarity override
def test_similarity_override(breakhis_tree):
    geo = get_geometry("euclidean")
    z = make_z("euclidean", 6, 2, 4, seed=17)
    y = torch.tensor([0, 1, 2, 3, 4, 5])
    neg = HWCLoss(breakhis_tree, geo, similarity="neg_dist")
    call = HWCLoss(breakhis_tree, geo, similarity=lambda x: -geo.pairwise_dist(x))
    assert neg(z, y).item() == pytest.approx(call(z, y).item(), rel=1e-12)
    cos = HWCLoss(breakhis_tree, get_geometry("poincare"), similarity="cosine")
    assert cos(z * 0.5, y).item() == pytest.approx(HWCLoss(breakhis_tree, geo)(z, y).item(), rel=1e-9)
    with pytest.raises(ValueError, match="similarity"):
        HWCLoss(breakhis_tree, geo, similarity="dot")


# ---------------------------------------------------------------------------- properties
_BREAKHIS_TREE = LabelTree.from_nested(
    {"root": {"benign": ["a", "f", "p", "t"], "malignant": ["d", "l", "m", "pc"]}}
)  # same shape as conftest's BreakHis tree (hypothesis cannot use function-scoped fixtures)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    B=st.integers(2, 8),
    alpha=st.floats(0, 2),
    gamma=st.floats(0, 2),
    geom=st.sampled_from(GEOMS),
)
def test_hwc_properties(seed, B, alpha, gamma, geom):
    """Finite, ≥ 0, invariant to permuting images and views; ω ∈ [1, 1 + max(α, γ)]."""
    breakhis_tree = _BREAKHIS_TREE
    g = torch.Generator().manual_seed(seed)
    z = make_z(geom, B, 2, 4, seed=seed)
    y = torch.randint(0, 8, (B,), generator=g)
    loss = HWCLoss(breakhis_tree, geom, tau=0.2, alpha=alpha, gamma=gamma)
    val = loss(z, y)
    assert torch.isfinite(val) and val.item() >= 0
    perm = torch.randperm(B, generator=g)
    assert loss(z[perm].flip(1), y[perm]).item() == pytest.approx(val.item(), rel=1e-9, abs=1e-12)
    om = loss.omega_matrix(y, views=2)
    assert om.min() >= 1.0 and om.max() <= 1 + max(alpha, gamma) + 1e-6


# ---------------------------------------------------------------------------- bad input
def test_bad_inputs(breakhis_tree):
    z = make_z("euclidean", 4, 2, 3)
    y = torch.tensor([0, 1, 2, 3])
    hwc = HWCLoss(breakhis_tree, "euclidean")
    with pytest.raises(ValueError, match="labels.*outside"):
        hwc(z, torch.tensor([0, 1, 2, 8]))
    with pytest.raises(ValueError, match="labels.*outside"):
        hwc(z, torch.tensor([0, -1, 2, 3]))
    with pytest.raises(ValueError, match="labels.*shape"):
        hwc(z, torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="labels"):
        hwc(z, torch.tensor([0.0, 1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="V=1.*2 views"):
        SimCLRLoss(breakhis_tree, "euclidean")(z[:, :1], y)
    with pytest.raises(ValueError, match="V=1"):
        HWCLoss(breakhis_tree, "euclidean", positives="view")(z[:, :1], y)
    with pytest.raises(ValueError, match=r"z must have shape \(B, V, d\)"):
        hwc(z[:, 0], y)
    for kw, name in [
        ({"alpha": -0.1}, "alpha"),
        ({"gamma": -1}, "gamma"),
        ({"tau": 0.0}, "tau"),
        ({"tau": -0.1}, "tau"),
        ({"alpha_max": -1}, "alpha_max"),
        ({"tau": float("nan")}, "tau"),
        ({"reduction": "mean"}, "reduction"),
        ({"omega": "global"}, "omega"),
    ]:
        with pytest.raises(ValueError, match=name):
            HWCLoss(breakhis_tree, "euclidean", **kw)
    hwc.alpha = -1.0  # a slider may set it later: checked at call time
    with pytest.raises(ValueError, match="alpha"):
        hwc(z, y)
    bad = z.clone()
    bad[1, 0, 2] = float("nan")
    for loss in (HWCLoss(breakhis_tree, "euclidean"), SupConLoss(None, "euclidean"), SimCLRLoss(None, "euclidean")):
        with pytest.raises(ValueError, match="z contains NaN"):
            loss(bad, y)
    with pytest.raises(TypeError, match="tree"):
        HWCLoss(None, "euclidean")
    with pytest.raises(ValueError, match="z"):
        HWCLoss(breakhis_tree, "poincare")(z * 2.0, y)  # outside the unit ball


# ---------------------------------------------------------------------------- HXE
def test_hxe_alpha_zero_is_cross_entropy(breakhis_tree, unbalanced_tree):
    g = torch.Generator().manual_seed(18)
    for tree in (breakhis_tree, unbalanced_tree):
        C = tree.num_leaves
        logits = 3 * torch.randn(7, C, generator=g, dtype=torch.float64)
        y = torch.randint(0, C, (7,), generator=g)
        assert HXELoss(tree, alpha=0.0, normalize=False)(logits, y).item() == pytest.approx(
            F.cross_entropy(logits, y).item(), rel=1e-12
        )


def test_hxe_hand_value(breakhis_tree):
    """Bertinetto et al. Eq. 2–4 by hand: two edges root→parent (λ = e^{-α}) and parent→leaf (λ = e^{-2α})."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, 0.5, 0.0, 0.0, -2.0]], dtype=torch.float64)
    p = torch.softmax(logits, 1)[0].tolist()
    alpha = 0.4
    y = 1  # fibroadenoma, parent benign (leaves 0-3)
    p_parent = sum(p[:4])
    expected = -(math.exp(-alpha) * math.log(p_parent) + math.exp(-2 * alpha) * math.log(p[y] / p_parent))
    assert HXELoss(breakhis_tree, alpha=alpha, normalize=False)(logits, torch.tensor([y])).item() == pytest.approx(
        expected, rel=1e-12
    )
    # authors' normalisation: Σ over all 11 nodes (root e^0, 2 parents e^{-α}, 8 leaves e^{-2α})
    total = 1 + 2 * math.exp(-alpha) + 8 * math.exp(-2 * alpha)
    assert HXELoss(breakhis_tree, alpha=alpha, normalize=True)(logits, torch.tensor([y])).item() == pytest.approx(
        expected / total, rel=1e-12
    )
    # the default is the authors' scale (0.1's default was 5.9× it here)
    assert HXELoss(breakhis_tree, alpha=alpha)(logits, torch.tensor([y])).item() == pytest.approx(
        expected / total, rel=1e-12
    )


def test_hxe_unbalanced_and_stable(unbalanced_tree):
    """Shallow leaf 'c' (depth 1) has a single edge; huge logits stay finite."""
    C = unbalanced_tree.num_leaves
    c = unbalanced_tree.leaf_index["c"]
    logits = torch.zeros(1, C, dtype=torch.float64)
    logits[0, c] = 2.0
    p = torch.softmax(logits, 1)[0]
    expected = -math.exp(-0.3) * math.log(p[c].item())
    assert HXELoss(unbalanced_tree, alpha=0.3, normalize=False)(logits, torch.tensor([c])).item() == pytest.approx(
        expected, rel=1e-12
    )
    big = torch.full((2, C), -1e4)
    big[:, 0] = 1e4
    val = HXELoss(unbalanced_tree, alpha=0.3)(big.requires_grad_(True), torch.tensor([0, 1]))
    val.backward()
    assert torch.isfinite(val) and torch.isfinite(big.grad).all()


def test_hxe_gradcheck_and_bad_input(breakhis_tree):
    logits = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 3, 4, 7])
    assert torch.autograd.gradcheck(lambda t: HXELoss(breakhis_tree, alpha=0.5)(t, y), (logits,))
    with pytest.raises(ValueError, match="alpha"):
        HXELoss(breakhis_tree, alpha=-0.1)
    with pytest.raises(ValueError, match="logits must have shape"):
        HXELoss(breakhis_tree)(torch.zeros(4, 7), y)
    with pytest.raises(ValueError, match="labels"):
        HXELoss(breakhis_tree)(torch.zeros(4, 8), torch.tensor([0, 1, 2, 9]))
    with pytest.raises(ValueError, match="logits contains NaN"):
        HXELoss(breakhis_tree)(torch.full((4, 8), float("nan")), y)


def test_soft_labels(breakhis_tree):
    logits = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(19))
    y = torch.tensor([0, 2, 4, 5, 7])
    sl = SoftLabelLoss(breakhis_tree, beta=4.0)
    q = sl.targets(y, torch.float64)
    # hand: weights e^0 (self), e^{-β/2} (3 siblings), e^{-β} (4 cousins)
    z = 1 + 3 * math.exp(-2.0) + 4 * math.exp(-4.0)
    assert q[0, 0].item() == pytest.approx(1 / z) and q[0, 1].item() == pytest.approx(math.exp(-2.0) / z)
    assert q[0, 4].item() == pytest.approx(math.exp(-4.0) / z)
    assert SoftLabelLoss(breakhis_tree, beta=200.0)(logits, y).item() == pytest.approx(
        F.cross_entropy(logits, y).item(), rel=1e-9
    )
    with pytest.raises(ValueError, match="beta"):
        SoftLabelLoss(breakhis_tree, beta=0.0)


# ---------------------------------------------------------------------------- objective builder
def test_objectives_names_and_terms(breakhis_tree):
    # the 0.1 names all survive; 0.2's method registry may add more (e.g. "soft-labels")
    assert {"simclr", "supcon", "hc-outside", "hxe", "hwc", "lam", "hwc+lam"} <= set(OBJECTIVES)
    z = make_z("euclidean", 8, 2, 4, seed=20, dtype=torch.float32)
    y = torch.tensor([0, 0, 1, 4, 4, 7, 2, 5])
    logits = torch.randn(8, 8)
    expected_terms = {
        "simclr": {"simclr"},
        "supcon": {"supcon"},
        "hc-outside": {"hc"},
        "hxe": {"hxe"},
        "hwc": {"hwc"},
        "lam": {"supcon", "lam"},
        "hwc+lam": {"hwc", "lam"},
        "soft-labels": {"soft"},
    }
    for name in [n for n in OBJECTIVES if n in expected_terms]:
        obj = build_objective(name, breakhis_tree, "euclidean", **{"lam.lambda": 0.5})
        assert isinstance(obj, Objective) and obj.requires_logits == (name in ("hxe", "soft-labels"))
        # a term consumes logits exactly when the objective needs them (routing by input_kind)
        assert obj.requires_logits == any(m.input_kind == "logits" for m in obj.terms.values())
        loss, terms = obj(z, y, logits=logits)
        assert set(terms) == expected_terms[name] and torch.isfinite(loss)
        weighted = sum((0.5 if k == "lam" else 1.0) * v for k, v in terms.items())
        assert loss.item() == pytest.approx(weighted.item(), rel=1e-6)


def test_objective_matches_modules(breakhis_tree):
    z = make_z("poincare", 8, 2, 4, seed=21)
    y = torch.tensor([0, 0, 1, 4, 4, 7, 2, 5])
    geo = get_geometry("poincare")
    bare = dict(cone_weight=0.0, center_weight=0.0, cpcc_weight=0.0)  # the paper's loss: no depth terms
    obj = build_objective(
        "hwc+lam", breakhis_tree, geo, alpha=0.3, gamma=0.7, tau=0.2, margins=0.2, **{"lam.lambda": 2.0}, **bare
    )
    loss, terms = obj(z, y)
    ref = HWCLoss(breakhis_tree, geo, alpha=0.3, gamma=0.7, tau=0.2)(z, y)
    assert terms["hwc"].item() == pytest.approx(ref.item(), rel=1e-12)
    assert loss.item() == pytest.approx(ref.item() + 2.0 * terms["lam"].item(), rel=1e-12)
    assert obj.term("lam").proto_initialized.all()
    sup = build_objective("supcon", breakhis_tree, geo, tau=0.2, **bare)(z, y)[0]
    assert sup.item() == pytest.approx(SupConLoss(breakhis_tree, geo, tau=0.2, reduction="pairs")(z, y).item())
    # SimCLR needs no labels
    assert torch.isfinite(build_objective("simclr", breakhis_tree, geo)(z, None)[0])


def test_objective_errors(breakhis_tree):
    with pytest.raises(ValueError, match="hwc\\+lam"):
        build_objective("hwc-lam", breakhis_tree, "euclidean")
    with pytest.raises(TypeError, match="tua"):
        build_objective("hwc", breakhis_tree, "euclidean", tua=0.1)
    with pytest.raises(ValueError, match="logits"):
        build_objective("hxe", breakhis_tree, "euclidean")(None, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="lam.lambda"):
        build_objective("hwc+lam", breakhis_tree, "euclidean", **{"lam.lambda": -1})
    with pytest.raises(ValueError, match="tau"):
        build_objective("supcon", breakhis_tree, "euclidean", tau=0)
