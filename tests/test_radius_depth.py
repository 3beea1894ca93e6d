"""A head with a radial gradient, depth regularisers (cones, centring), radius metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hierviz.geometry import Lorentz, PoincareBall
from hierviz.hierarchy import LabelTree
from hierviz.losses import (
    CentringLoss,
    EntailmentConeLoss,
    RadialDepthLoss,
    RadialOrderLoss,
    cone_energy,
    cone_exterior_angle,
    cone_half_aperture,
)
from hierviz.losses.radial import origin_radius
from hierviz.methods import build_objective
from hierviz.models import HyperbolicHead, clamp_curvature

F64 = torch.float64


def _tree():
    return LabelTree.from_nested({"r": {"a": {"a1": ["x", "y"], "a2": ["w"]}, "b": ["u", "v"]}})


# ----------------------------------------------------------------------------- references
def _minkowski(u, v):
    return -u[..., 0] * v[..., 0] + (u[..., 1:] * v[..., 1:]).sum(-1)


def _angle_ref(x, y, geo):
    """Exterior angle from the geometry's log map: angle(log_x y, -log_x 0), one pair."""
    d = x.shape[-1] - (1 if geo.name == "lorentz" else 0)
    o = geo.origin(d, dtype=F64)
    u, w = geo.logmap(x, y), -geo.logmap(x, o)
    if geo.name == "lorentz":
        cos = _minkowski(u, w) / (_minkowski(u, u).sqrt() * _minkowski(w, w).sqrt())
    else:  # conformal: the Euclidean angle is the Riemannian one
        cos = (u * w).sum() / (u.norm() * w.norm())
    return math.acos(max(-1.0, min(1.0, float(cos))))


def _aperture_ref(x, geo, K):
    d = x.shape[-1] - (1 if geo.name == "lorentz" else 0)
    r = float(geo.dist(x, geo.origin(d, dtype=F64)))
    return math.asin(min(1.0 - 1e-12, 2 * K / math.sinh(math.sqrt(float(geo.c)) * r)))  # the float64 clamp


def _points(geo, n, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return geo.expmap0(scale * torch.randn(n, 3, generator=g, dtype=F64))


@pytest.mark.parametrize("geo", [PoincareBall(1.0), PoincareBall(0.5), PoincareBall(2.0), Lorentz(1.0), Lorentz(2.0)])
def test_cone_angle_and_aperture_match_the_log_map_reference(geo):
    x, y = _points(geo, 12, 0), _points(geo, 12, 1)
    got_a = cone_exterior_angle(x, y, geo)
    got_p = cone_half_aperture(x, geo, K=0.1)
    for i in range(12):
        assert float(got_a[i]) == pytest.approx(_angle_ref(x[i], y[i], geo), abs=1e-7)
        assert float(got_p[i]) == pytest.approx(_aperture_ref(x[i], geo, 0.1), abs=1e-9)


def test_cone_closed_forms_agree_between_ball_and_hyperboloid():
    lor, ball = Lorentz(1.5), PoincareBall(1.5)
    x, y = _points(lor, 20, 2), _points(lor, 20, 3)
    torch.testing.assert_close(
        cone_exterior_angle(x, y, lor), cone_exterior_angle(lor.to_ball(x), lor.to_ball(y), ball)
    )
    torch.testing.assert_close(cone_half_aperture(x, lor, 0.2), cone_half_aperture(lor.to_ball(x), ball, 0.2))


def test_cone_energy_hand_values():
    ball = PoincareBall(1.0)
    x = torch.tensor([0.5, 0.0], dtype=F64)
    # straight inward: angle pi; aperture asin(0.1 * 0.75 / 0.5) = asin(0.15)
    assert float(cone_energy(x, torch.tensor([0.2, 0.0], dtype=F64), ball)) == pytest.approx(math.pi - math.asin(0.15))
    assert float(cone_energy(x, torch.tensor([0.9, 0.0], dtype=F64), ball)) == 0.0
    # near the origin the cone is a half-space: anything not inward is entailed
    near = torch.tensor([0.05, 0.0], dtype=F64)
    assert float(cone_half_aperture(near, ball)) == pytest.approx(math.pi / 2, abs=1e-5)
    assert float(cone_energy(near, torch.tensor([0.3, 0.6], dtype=F64), ball)) == 0.0
    assert float(cone_energy(near, torch.tensor([-0.3, 0.6], dtype=F64), ball)) > 0.1


def _cone_loss_ref(z, y, tree, geo, K, steps=3, kappa=0.5):
    """Loop reference: one Karcher mean per node, its apex, energies pair by pair."""
    zf = z.reshape(-1, z.shape[-1])
    yf = y.repeat_interleave(z.shape[1])
    members = {}
    for n, name in enumerate(tree.nodes):
        leaves = {tree.leaf_index[lf] for lf in tree.leaves_under(name)}
        members[n] = [i for i in range(len(yf)) if int(yf[i]) in leaves]
    protos = {}
    for n, idx in members.items():
        if idx:
            mu = geo.group_mean(zf[idx], torch.zeros(len(idx), dtype=torch.long), 1, steps=steps)[0]
            protos[n] = geo.expmap0(kappa * geo.logmap0(mu))
    edges = []
    for n, name in enumerate(tree.nodes):
        p = tree.parent(name)
        if p is None or tree.depth(p) == 0:
            continue
        pn = tree.node_index[p]
        if members[n] and len(members[pn]) > len(members[n]):
            a, b = protos[pn], protos[n]
            edges.append(max(0.0, _angle_ref(a, b, geo) - _aperture_ref(a, geo, K)))
    samples = []
    for i in range(len(yf)):
        a = protos[int(tree.leaf_node[int(yf[i])])]
        samples.append(max(0.0, _angle_ref(a, zf[i], geo) - _aperture_ref(a, geo, K)))
    return (np.mean(edges) if edges else 0.0) + (np.mean(samples) if samples else 0.0)


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0), PoincareBall(2.0)])
def test_entailment_cone_loss_matches_the_loop_reference(geo):
    tree = _tree()
    g = torch.Generator().manual_seed(4)
    y = torch.tensor([0, 0, 1, 2, 2, 3, 4, 4, 0])  # leaf 2 ("w") is a single child
    z = geo.expmap0(0.8 * torch.randn(9, 2, 3, generator=g, dtype=F64))
    got = EntailmentConeLoss(tree, geo, aperture=0.3)(z, y)
    assert float(got) == pytest.approx(_cone_loss_ref(z, y, tree, geo, 0.3), abs=1e-7)
    assert float(got) > 0


def test_entailment_cone_loss_zero_when_the_tree_is_in_the_radius_and_not_otherwise():
    # leaves at radius 3, siblings fanned 0.6 rad apart (their mean, the parent, lies inward):
    # every cone holds; siblings on opposite sides of the disk break the parent's cone
    tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    ball = PoincareBall(1.0)

    def at(angles, radii=(3.0, 3.0, 3.0, 3.0)):
        a, r = torch.tensor(angles, dtype=F64), torch.tensor(radii, dtype=F64)
        pts = ball.expmap0(r[:, None] / 2 * torch.stack([a.cos(), a.sin()], -1))
        return torch.stack([pts, pts], 1)  # two equal views

    y = torch.tensor([0, 1, 2, 3])
    loss = EntailmentConeLoss(tree, ball, aperture=0.5)
    assert float(loss(at([0.0, 0.6, 3.0, 3.6]), y)) == pytest.approx(0.0, abs=1e-9)
    assert float(loss(at([0.0, 3.1, 1.5, 4.6]), y)) == pytest.approx(0.0, abs=1e-9)  # parents at the origin
    assert float(loss(at([0.0, 0.1, 3.0, 3.6], [3.0, 0.5, 3.0, 3.0]), y)) > 0.3  # a2 inward of its parent


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0)])
def test_radial_losses_gradcheck_float64(geo):
    tree = _tree()
    y = torch.tensor([0, 1, 2, 3, 3, 4])
    g = torch.Generator().manual_seed(5)
    v = (0.7 * torch.randn(6, 2, 3, generator=g, dtype=F64)).requires_grad_()
    cone = EntailmentConeLoss(tree, geo, aperture=0.3)
    cen = CentringLoss(geo)
    assert torch.autograd.gradcheck(lambda t: cone(geo.expmap0(t), y), (v,), eps=1e-6, atol=1e-5)
    assert torch.autograd.gradcheck(lambda t: cen(geo.expmap0(t), y), (v,), eps=1e-6, atol=1e-5)


def _order_loss_ref(z, y, tree, geo, m, steps=3):
    """Loop reference: one Karcher mean per node, d(0, mean) by the geometry's own ``dist``, edge by edge."""
    zf = z.reshape(-1, z.shape[-1])
    yf = y.repeat_interleave(z.shape[1])
    d = zf.shape[-1] - (1 if geo.name == "lorentz" else 0)
    o = geo.origin(d, dtype=F64)
    members, radius = {}, {}
    for n, name in enumerate(tree.nodes):
        leaves = {tree.leaf_index[lf] for lf in tree.leaves_under(name)}
        members[n] = [i for i in range(len(yf)) if int(yf[i]) in leaves]
        if members[n]:
            idx = members[n]
            mu = geo.group_mean(zf[idx], torch.zeros(len(idx), dtype=torch.long), 1, steps=steps)[0]
            radius[n] = float(geo.dist(mu, o))
    hinges = []
    for n, name in enumerate(tree.nodes):
        p = tree.parent(name)
        if p is None:
            continue
        pn = tree.node_index[p]
        if members[n] and len(members[pn]) > len(members[n]):
            hinges.append(max(0.0, radius[pn] - radius[n] + m))
    return float(np.mean(hinges)) if hinges else 0.0


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0), PoincareBall(2.0), Lorentz(0.5)])
def test_radial_order_loss_matches_the_loop_reference(geo):
    tree = _tree()
    g = torch.Generator().manual_seed(6)
    y = torch.tensor([0, 0, 1, 2, 2, 3, 4, 4, 0])  # leaf 2 ("w") is a single child: a -> a2 -> w counts once
    z = geo.expmap0(0.8 * torch.randn(9, 2, 3, generator=g, dtype=F64))
    for m in (0.0, 0.1, 1.0):
        got = RadialOrderLoss(tree, geo, margin=m)(z, y)
        assert float(got) == pytest.approx(_order_loss_ref(z, y, tree, geo, m), abs=1e-9)
    assert float(RadialOrderLoss(tree, geo, margin=1.0)(z, y)) > 0


def test_origin_radius_matches_dist_to_the_origin_and_the_metric():
    from hierviz.metrics.radius import origin_distance

    for geo in (PoincareBall(1.0), PoincareBall(0.3), Lorentz(1.0), Lorentz(3.0)):
        x = _points(geo, 10, 7, scale=2.0)
        o = geo.origin(3, dtype=F64)
        torch.testing.assert_close(origin_radius(x, geo), torch.stack([geo.dist(xi, o) for xi in x]))
        torch.testing.assert_close(origin_radius(x, geo), origin_distance(x, geo))


def test_radial_order_loss_hand_values_and_edges():
    # two leaves at radius 2 and 1 under one parent, a third leaf elsewhere: the parent
    # (their mean) lies inward of the outer leaf only; edges counted: r->a, r->b, a->a1, a->a2
    tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1"]}})
    ball = PoincareBall(1.0)
    z = ball.expmap0(torch.tensor([[1.0, 0.0], [0.5, 0.0], [-1.0, 0.0]], dtype=F64))  # radii 2, 1, 2
    y = torch.tensor([0, 1, 2])
    mu_a = ball.group_mean(z[:2], torch.zeros(2, dtype=torch.long), 1, steps=3)[0]
    r_a = float(origin_radius(mu_a, ball))
    assert 1.0 < r_a < 2.0  # the mean of two points on one ray lies between them
    loss = RadialOrderLoss(tree, ball, margin=0.0)(z, y)
    assert float(loss) == pytest.approx((r_a - 1.0) / 4, abs=1e-9)  # only a -> a2 is violated
    # b -> b1 is a single-child edge (same prototype): with a margin it still does not count
    loss_m = RadialOrderLoss(tree, ball, margin=0.5)(z, y)
    mu_r = ball.group_mean(z, torch.zeros(3, dtype=torch.long), 1, steps=3)[0]
    r_r, r_b = float(origin_radius(mu_r, ball)), 2.0
    expected = (
        max(0, r_r - r_a + 0.5) + max(0, r_r - r_b + 0.5) + max(0, r_a - 2.0 + 0.5) + max(0, r_a - 1.0 + 0.5)
    ) / 4
    assert float(loss_m) == pytest.approx(expected, abs=1e-9)
    # one leaf only: no edge with two different ends, a zero that still carries a graph
    z1 = z[:1].clone().requires_grad_()
    out = RadialOrderLoss(tree, ball)(z1, y[:1])
    assert float(out.detach()) == 0.0 and out.requires_grad
    with pytest.raises(ValueError, match="margin"):
        RadialOrderLoss(tree, ball, margin=-0.1)
    from hierviz.geometry import get_geometry

    with pytest.raises(ValueError, match="geometry"):
        RadialOrderLoss(tree, get_geometry("euclidean"))


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0)])
def test_radial_order_loss_gradcheck_float64(geo):
    tree = _tree()
    y = torch.tensor([0, 1, 2, 3, 3, 4])
    g = torch.Generator().manual_seed(8)
    v = (0.7 * torch.randn(6, 2, 3, generator=g, dtype=F64)).requires_grad_()
    order = RadialOrderLoss(tree, geo, margin=1.0)  # margin 1: every edge active, no kink at the data
    assert float(order(geo.expmap0(v.detach()), y)) > 0
    assert torch.autograd.gradcheck(lambda t: order(geo.expmap0(t), y), (v,), eps=1e-6, atol=1e-5)


def test_centring_loss_hand_value_and_lorentz_agrees():
    v = torch.tensor([[0.3, 0.0, 0.1], [0.1, -0.4, 0.1]], dtype=F64)
    expected = float(v.mean(0).norm())
    for geo in (PoincareBall(1.0), Lorentz(1.0)):
        assert float(CentringLoss(geo)(geo.expmap0(v)[:, None], None)) == pytest.approx(expected, abs=1e-12)


def test_radial_losses_reject_the_sphere_and_bad_aperture():
    from hierviz.geometry import get_geometry

    with pytest.raises(ValueError, match="geometry"):
        EntailmentConeLoss(_tree(), get_geometry("euclidean"))
    with pytest.raises(ValueError, match="geometry"):
        CentringLoss(get_geometry("euclidean"))
    with pytest.raises(ValueError, match="aperture"):
        EntailmentConeLoss(_tree(), PoincareBall(1.0), aperture=0.0)


def test_every_method_gets_the_radial_terms_on_hyperbolic_geometries_only():
    tree = _tree()
    obj = build_objective("supcon", tree, "poincare", cone_weight=0.3, center_weight=0.02)
    assert obj.weights["cone"] == 0.3 and obj.weights["center"] == 0.02
    assert "cone" not in build_objective("supcon", tree, "euclidean", cone_weight=0.3).terms
    off = build_objective("hwc+lam", tree, "lorentz", cone_weight=0.0, center_weight=0.0, cpcc_weight=0.0)
    assert set(off.terms) == {"hwc", "lam"}
    assert "cone" not in build_objective("hxe", tree, "poincare", cone_weight=0.3).terms  # evaluates features
    with pytest.raises(ValueError, match="cone_weight"):
        build_objective("supcon", tree, "poincare", cone_weight=-1.0)
    ball = PoincareBall(1.0)
    z = ball.expmap0(0.5 * torch.randn(10, 2, 4, dtype=F64))
    y = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    loss, terms = build_objective("supcon", tree, ball, cone_weight=0.3, center_weight=0.02, cpcc_weight=0.0)(z, y)
    expected = terms["supcon"] + 0.3 * terms["cone"] + 0.02 * terms["center"]
    assert float(loss) == pytest.approx(float(expected), rel=1e-9)
    assert "order" not in terms  # off by default (loss.order_weight = 0)
    obj = build_objective("hwc+lam", tree, "lorentz", order_weight=0.5, order_margin=0.2)
    assert obj.weights["order"] == 0.5 and obj.terms["order"].margin == 0.2
    assert "order" not in build_objective("supcon", tree, "euclidean", order_weight=0.5).terms
    with pytest.raises(ValueError, match="order_weight"):
        build_objective("supcon", tree, "poincare", order_weight=-1.0)
    bare = dict(cone_weight=0.0, center_weight=0.0, cpcc_weight=0.0)
    loss, terms = build_objective("supcon", tree, ball, order_weight=0.7, order_margin=0.3, **bare)(z, y)
    ref = RadialOrderLoss(tree, ball, margin=0.3)(z, y)
    assert float(terms["order"]) == pytest.approx(float(ref), rel=1e-12)
    assert float(loss) == pytest.approx(float(terms["supcon"] + 0.7 * ref), rel=1e-9)


def test_the_hyperbolic_defaults_are_cones_centring_cpcc_and_tau_one():
    """0.4's defaults (docs/results/radius-20news): every hyperbolic run of a ``z`` method gets them, no --set."""
    tree = _tree()
    obj = build_objective("supcon", tree, "poincare")
    assert obj.weights == {"supcon": 1.0, "cone": 0.2, "center": 1.0, "cpcc": 1.0}
    assert obj.terms["supcon"].tau == 1.0  # loss.tau_hyperbolic
    assert build_objective("supcon", tree, "poincare", tau=0.2).terms["supcon"].tau == 0.2  # an explicit tau is kept
    assert build_objective("supcon", tree, "poincare", tau=0.2, tau_hyperbolic=1.0).terms["supcon"].tau == 1.0
    eu = build_objective("supcon", tree, "euclidean")
    assert set(eu.terms) == {"supcon"} and eu.terms["supcon"].tau == 0.1  # loss.tau on the sphere
    assert build_objective("supcon", tree, "lorentz", tau_hyperbolic=None, tau=0.3).terms["supcon"].tau == 0.3
    assert build_objective("supcon", tree, "lorentz", tau_hyperbolic=0.5).terms["supcon"].tau == 0.5
    assert set(build_objective("hxe", tree, "poincare").terms) == {"hxe"}  # evaluated on encoder features
    with pytest.raises(ValueError, match="tau_hyperbolic"):
        build_objective("supcon", tree, "poincare", tau_hyperbolic=0.0)


# ----------------------------------------------------------------------------- the head
def test_tanh_head_keeps_a_radial_gradient_where_the_clip_has_none():
    ball = PoincareBall(1.0)
    v = torch.tensor([[40.0, 0.0, 0.0]], dtype=F64)
    for bound, expect_grad in (("tanh", True), ("clip", False)):
        head = HyperbolicHead(ball, clip_r=3.0, scale_init=0.2, bound=bound)  # tangent 8 > 3
        r = ball.dist(head(v), torch.zeros(1, 3, dtype=F64)).sum()
        r.backward()
        g = float(head.log_scale.grad)
        assert (abs(g) > 1e-4) == expect_grad, (bound, g)
    # hand value: u = 3 tanh(8/3), d(0, z) = 2u
    z = HyperbolicHead(ball, clip_r=3.0, scale_init=0.2)(v).detach()
    assert float(ball.dist(z, torch.zeros(1, 3, dtype=F64))) == pytest.approx(6 * math.tanh(8 / 3), rel=1e-6)


@pytest.mark.parametrize("geo,k", [(PoincareBall(1.0), 2.0), (Lorentz(1.0), 1.0), (PoincareBall(4.0), 2.0)])
def test_auto_scale_puts_the_median_sample_at_init_radius(geo, k):
    torch.manual_seed(0)
    head = HyperbolicHead(geo, scale_init="auto", init_radius=1.2).train()
    v = torch.randn(101, 8, dtype=F64) * 25
    z = head(v).detach()
    d = z.shape[-1] - (1 if geo.name == "lorentz" else 0)
    r = geo.dist(z, geo.origin(d, dtype=F64).expand_as(z))
    assert float(r.median()) == pytest.approx(1.2, rel=1e-6)
    assert bool(head.scale_initialised)
    # a second batch does not re-initialise; eval mode never does
    before = float(head.log_scale.detach())
    head(v * 3)
    assert float(head.log_scale.detach()) == before
    fresh = HyperbolicHead(geo).eval()
    fresh(v)
    assert not bool(fresh.scale_initialised) and float(fresh.log_scale.detach()) == 0.0


def test_auto_scale_flag_travels_in_the_state_dict():
    ball = PoincareBall(1.0)
    head = HyperbolicHead(ball).train()
    head(torch.randn(16, 4) * 30)
    other = HyperbolicHead(ball).train()
    other.load_state_dict(head.state_dict())
    assert bool(other.scale_initialised) and float(other.log_scale.detach()) == float(head.log_scale.detach())
    other(torch.randn(16, 4))  # loaded: not re-initialised from this batch
    assert float(other.log_scale.detach()) == float(head.log_scale.detach())
    # a 0.2 checkpoint (no flag) loads as initialised
    old = {"log_scale": torch.tensor(0.5)}
    third = HyperbolicHead(ball)
    third.load_state_dict(old)
    assert bool(third.scale_initialised)


def test_learnable_curvature_is_clamped_into_its_range():
    ball = PoincareBall(1.0, learnable=True)
    head = HyperbolicHead(ball, scale_init=1.0, c_range=(0.1, 10.0))
    with torch.no_grad():
        ball.manifold.isp_c.fill_(50.0)  # c = softplus(50) = 50
    head(torch.randn(4, 3))
    assert float(ball.c.detach()) == pytest.approx(10.0, rel=1e-9)
    lor = Lorentz(1.0, learnable=True)
    head = HyperbolicHead(lor, scale_init=1.0)
    with torch.no_grad():
        lor.manifold.k.fill_(100.0)  # c = 0.01
    head(torch.randn(4, 3))
    assert float(lor.c.detach()) == pytest.approx(0.1, rel=1e-9)
    clamp_curvature(PoincareBall(1.0))  # a fixed curvature is left alone
    with pytest.raises(ValueError, match="c_range"):
        HyperbolicHead(ball, c_range=(0.0, 1.0))


def test_head_rejects_bad_bound_and_init_radius():
    with pytest.raises(ValueError, match="bound"):
        HyperbolicHead(PoincareBall(1.0), bound="soft")
    with pytest.raises(ValueError, match="init_radius"):
        HyperbolicHead(PoincareBall(1.0), clip_r=1.0, init_radius=2.5)  # bound's radius is 2


# ----------------------------------------------------------------------------- saturation (CPU regression)
def _train_head(head_kwargs, steps=200, seed=0, with_head=False):
    """SupCon on the Poincaré ball, a linear head on fixed features with ResNet-like raw norms (~20-40)."""
    from hierviz.losses import SupConLoss
    from hierviz.metrics import clip_fraction, max_radius, origin_distance

    g = torch.Generator().manual_seed(seed)
    tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    ball = PoincareBall(1.0)
    n, F, d = 128, 32, 16
    y = torch.arange(n) % 4
    centres = 2.0 * torch.randn(4, F, generator=g)
    feats = centres[y] + torch.randn(n, F, generator=g)
    torch.manual_seed(seed)
    lin = torch.nn.Linear(F, d)
    with torch.no_grad():  # raw head outputs of a ResNet-18 projection head: norm ~20-40
        lin.weight.mul_(30.0 / float(lin(feats).norm(dim=-1).median()))
        lin.bias.zero_()
    head = HyperbolicHead(ball, **head_kwargs).train()
    loss_fn = SupConLoss(tree, ball, tau=0.1)
    opt = torch.optim.Adam(list(lin.parameters()) + list(head.parameters()), lr=1e-2)
    for _ in range(steps):
        views = torch.stack([feats + 0.3 * torch.randn(n, F, generator=g) for _ in range(2)], 1)
        z = head(lin(views.reshape(2 * n, F))).reshape(n, 2, d)
        loss = loss_fn(z, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    z = head(lin(views.reshape(2 * n, F)))
    opt.zero_grad()
    loss_fn(z.reshape(n, 2, d), y).backward()
    r = origin_distance(z.detach(), ball)
    top = max_radius(ball, head.tangent_bound)
    out = (clip_fraction(r, top), float(head.log_scale.grad.abs()), r)
    return (*out, head) if with_head else out


def test_head_saturation_old_head_clips_everything_new_head_keeps_the_radius():
    old_cf, old_grad, _ = _train_head({"bound": "clip", "scale_init": 1.0, "clip_r": 3.0})
    new_cf, new_grad, r = _train_head({})  # the defaults: tanh bound, scale from the data, init_radius 1
    # the 0.2 head (ResNet-18 on a GPU): every point at the clip radius, no radial gradient left
    assert old_cf >= 0.9 and old_grad < 1e-3 * new_grad
    # the new head: nothing at the bound, a radial gradient, and radii that still differ
    assert new_cf <= 0.05
    assert new_grad > 1e-4
    assert float(r.std()) > 0.05 * float(r.mean())


def test_head_saturation_centred_batch_scale_head_keeps_the_radius_and_the_origin():
    # the presets' hyperbolic head (model.head_center=batch, model.scale_init=batch): same ResNet-like norms
    cf, grad, r, head = _train_head({"center": "batch", "dim": 16, "scale_init": "batch"}, with_head=True)
    assert cf == 0.0 and grad > 1e-4
    # the batch median pinned at tangent norm t = 3 artanh(1/6) (radius 1), times the learned e^s, then bounded
    s = float(head.log_scale.detach().exp())
    assert float(r.median()) == pytest.approx(6.0 * math.tanh(s * math.atanh(1.0 / 6.0)), rel=1e-5)
    assert 0.2 < float(r.median()) < 3.0  # neither the flat origin nor the bound
    assert float(r.std()) > 0.05 * float(r.mean())  # the same bar as the default head above (measured: 0.09)


# ----------------------------------------------------------------------------- metrics
def test_radius_depth_spearman_max_is_the_best_ordering_over_permutations():
    import itertools

    from scipy.stats import spearmanr

    from hierviz.metrics import radius_depth_spearman

    depth = [0, 1, 1, 2, 2, 2, 2]
    best = max(spearmanr(depth, p).statistic for p in itertools.permutations(range(7)))
    rng = np.random.default_rng(0)
    for _ in range(5):
        r = rng.random(7)
        assert radius_depth_spearman(r, depth) == pytest.approx(spearmanr(depth, r).statistic / best)
    assert radius_depth_spearman([0.0, 1, 2, 3, 4, 5, 6], depth) == pytest.approx(1.0)
    assert radius_depth_spearman([6.0, 5, 4, 3, 2, 1, 0], depth) == pytest.approx(-1.0)
    assert math.isnan(radius_depth_spearman([1.0, 2.0], [1, 1]))


def test_edge_order_gap_auroc_and_clip_hand_computed():
    from hierviz.metrics import clip_fraction, edge_order, norm_auroc, radius_gap

    r = [0.2, 1.0, 1.5, 2.5, 0.9, 3.0]
    parent = [-1, 0, 0, 1, 1, 2]  # edges 0-1, 0-2, 1-3, 1-4 (inward), 2-5
    assert edge_order(r, parent) == pytest.approx(4 / 5)
    assert radius_gap(r, [0, 1, 1, 2, 2, 2], [False, False, False, True, True, True]) == pytest.approx(
        (2.5 + 0.9 + 3.0) / 3 - 1.25
    )
    # AUROC by pair counting: errors (positives) should have the smaller radius
    rad = np.array([3.0, 2.0, 1.0, 2.5, 0.5])
    ok = np.array([True, True, False, False, True])
    pairs = [(e, c) for e in np.nonzero(~ok)[0] for c in np.nonzero(ok)[0]]
    expect = np.mean([1.0 if rad[e] < rad[c] else 0.5 if rad[e] == rad[c] else 0.0 for e, c in pairs])
    assert norm_auroc(rad, ok) == pytest.approx(expect)
    assert math.isnan(norm_auroc(rad, np.ones(5, bool)))
    assert clip_fraction([6.0, 5.9995, 5.99, 1.0], 6.0) == 0.5 and clip_fraction([1.0], None) is None


def test_node_prototypes_contract_the_two_step_trees_single_child_chains():
    from hierviz.data import load_tree
    from hierviz.metrics import node_prototype_radii, radius_metrics

    tree = load_tree("two-step")
    ball = PoincareBall(1.0)
    g = torch.Generator().manual_seed(0)
    y = torch.arange(70) % 7
    z = ball.expmap0(0.5 * torch.randn(70, 4, generator=g, dtype=F64))
    out = node_prototype_radii(z, y, tree, ball)
    names = [tree.nodes[n] for n in out["node"]]
    assert "melanocytic_benign" not in names and "melanocytic_malignant" not in names  # one child each
    assert len(names) == 12 and int((out["parent"] >= 0).sum()) == 11
    nv = names.index("nv")
    assert names[out["parent"][nv]] == "melanocytic"
    m = radius_metrics(z, y, tree, ball, predictions=y.numpy(), clip_r=3.0)
    assert math.isnan(m["norm_auroc"]) and m["clip_fraction"] == 0.0


def test_radius_table_shows_the_radius_metrics():
    from hierviz.report.radius import radius_markdown

    rec = {
        "method": "supcon",
        "geometry": "poincare",
        "seed": 0,
        "radius": {
            "scale": 0.1,
            "radius_mean": 1.0,
            "radius_std": 0.2,
            "clip_fraction": 0.0,
            "radius_by_depth": [{"proto_mean": 0.1}, {"proto_mean": 0.5}],
            "radius_depth_spearman": 0.91,
            "edge_order": 1.0,
            "radius_gap": 1.25,
            "norm_auroc": float("nan"),
        },
    }
    md = radius_markdown([rec])
    assert "Edge order" in md and "| 0.91 | 1.00 | 1.25 | – |" in md


def test_batch_scale_pins_the_median_radius_in_training_and_tracks_it_for_eval():
    ball = PoincareBall(1.0)
    head = HyperbolicHead(ball, scale_init="batch", learn_scale=False, init_radius=1.5).train()
    g = torch.Generator().manual_seed(0)
    v = torch.randn(65, 6, generator=g, dtype=F64) * 30
    o = torch.zeros(1, 6, dtype=F64)
    for factor in (1.0, 0.01, 100.0):  # whatever the raw scale, the training median sits at 1.5
        r = ball.dist(head(v * factor), o)
        assert float(r.median()) == pytest.approx(1.5, rel=1e-9)
    m1 = float(v.norm(dim=-1).median())
    expect = 0.9 * (0.9 * m1 + 0.1 * 0.01 * m1) + 0.1 * 100 * m1  # EMA of the three medians
    assert float(head.running_norm) == pytest.approx(expect, rel=1e-9)
    head.eval()  # eval mode: the running median, so one sample's radius does not depend on its batch
    z1 = head(v[:1])
    z2 = head(v)[:1]
    torch.testing.assert_close(z1, z2)
    assert "running_norm" in head.state_dict()


def test_radius_metrics_are_none_on_the_sphere():
    from hierviz.geometry import get_geometry
    from hierviz.metrics import RADIUS_METRICS, radius_metrics

    sphere = get_geometry("euclidean")
    z = torch.nn.functional.normalize(torch.randn(8, 3, dtype=F64), dim=-1)
    assert radius_metrics(z, [0, 1, 2, 3, 0, 1, 2, 3], _tree(), sphere) == dict.fromkeys(RADIUS_METRICS)


def _two_rank_scale(rank, world, port, v, out):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        head = HyperbolicHead(PoincareBall(1.0)).train()
        half = v.shape[0] // world
        head(v[rank * half : (rank + 1) * half])
        out[rank] = float(head.log_scale.detach())
    finally:
        dist.destroy_process_group()


def test_auto_scale_under_two_ranks_equals_one_process_on_the_global_batch():
    import socket

    import torch.multiprocessing as mp

    g = torch.Generator().manual_seed(1)
    v = torch.randn(40, 5, generator=g) * torch.linspace(1, 50, 40)[:, None]
    one = HyperbolicHead(PoincareBall(1.0)).train()
    one(v)
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(_two_rank_scale, args=(2, port, v, out), nprocs=2, join=True)
    assert out[0] == out[1] == pytest.approx(float(one.log_scale.detach()), rel=1e-6)


# ----------------------------------------------------------------------------- radial-depth term
def _depth_loss_ref(z, y, tree, geo, step, steps=3):
    """Loop reference: one Karcher mean per non-root node with batch samples, chains left out."""
    zf = z.reshape(-1, z.shape[-1])
    yf = y.repeat_interleave(z.shape[1]) if z.dim() == 3 else y
    d = zf.shape[-1] - (1 if geo.name == "lorentz" else 0)
    o = geo.origin(d, dtype=F64)
    members = {}
    for n, name in enumerate(tree.nodes):
        leaves = {tree.leaf_index[lf] for lf in tree.leaves_under(name)}
        members[n] = [i for i in range(len(yf)) if int(yf[i]) in leaves]
    errs = []
    for n, name in enumerate(tree.nodes):
        if name == tree.root or not members[n]:
            continue
        if any(len(members[tree.node_index[ch]]) == len(members[n]) for ch in tree.children(name)):
            continue  # every batch sample of n lies under one child: n is that child's chain
        idx = members[n]
        mu = geo.group_mean(zf[idx], torch.zeros(len(idx), dtype=torch.long), 1, steps=steps)[0]
        errs.append((float(geo.dist(mu, o)) - step * int(tree.node_depth[n])) ** 2)
    return float(np.mean(errs)) if errs else 0.0


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0), PoincareBall(2.0), Lorentz(0.5)])
def test_radial_depth_loss_matches_the_loop_reference(geo):
    tree = _tree()
    g = torch.Generator().manual_seed(9)
    y = torch.tensor([0, 0, 1, 2, 2, 3, 4, 4, 0])  # leaf 2 ("w") is a2's only leaf: a2 is left out
    z = geo.expmap0(0.8 * torch.randn(9, 2, 3, generator=g, dtype=F64))
    for step in (0.25, 1.0, 2.0):
        got = RadialDepthLoss(tree, geo, step=step)(z, y)
        assert float(got) == pytest.approx(_depth_loss_ref(z, y, tree, geo, step), abs=1e-9)
    # only the samples of x and y (both under a1): a and a1 are chains of each other's samples
    y2 = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1, 0])
    assert float(RadialDepthLoss(tree, geo)(z, y2)) == pytest.approx(_depth_loss_ref(z, y2, tree, geo, 1.0), abs=1e-9)


def test_radial_depth_loss_hand_values_zero_at_sarkars_radii_and_rejects_bad_input():
    tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    ball = PoincareBall(1.0)

    def at(r, ang):
        ang = torch.tensor(ang, dtype=F64)
        return ball.expmap0(torch.as_tensor(r, dtype=F64).reshape(-1, 1) / 2 * torch.stack([ang.cos(), ang.sin()], -1))

    y = torch.tensor([0, 1, 2, 3])
    z = at([2.0] * 4, [0.0, 0.0, 3.0, 3.0])  # a1 = a2 and b1 = b2 at radius 2: a and b sit at 2, not 1
    assert float(RadialDepthLoss(tree, ball, step=1.0)(z, y)) == pytest.approx((1.0 + 1.0) / 6, abs=1e-9)
    assert float(RadialDepthLoss(tree, ball, step=2.0)(z, y)) == pytest.approx((4 * 4.0) / 6, abs=1e-9)

    # a fan whose parent means land at radius 1: siblings at radius 2, angles ±t, t found by bisection
    def mean_radius(t):
        pair = at([2.0, 2.0], [t, -t])
        return float(origin_radius(ball.group_mean(pair, torch.zeros(2, dtype=torch.long), 1, steps=3)[0], ball))

    lo, hi = 0.0, math.pi / 2  # radius 2 at t = 0, 0 at t = π/2
    for _ in range(60):
        lo, hi = ((lo + hi) / 2, hi) if mean_radius((lo + hi) / 2) > 1.0 else (lo, (lo + hi) / 2)
    t = (lo + hi) / 2
    z = at([2.0] * 4, [t, -t, math.pi + t, math.pi - t])
    assert float(RadialDepthLoss(tree, ball, step=1.0)(z, y)) < 1e-5
    with pytest.raises(ValueError, match="depth_step"):
        RadialDepthLoss(tree, ball, step=0.0)
    from hierviz.geometry import get_geometry

    with pytest.raises(ValueError, match="geometry"):
        RadialDepthLoss(tree, get_geometry("euclidean"))


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0), PoincareBall(0.5)])
def test_radial_depth_loss_gradcheck_float64(geo):
    tree = _tree()
    y = torch.tensor([0, 1, 2, 3, 3, 4])
    g = torch.Generator().manual_seed(10)
    v = (0.7 * torch.randn(6, 2, 3, generator=g, dtype=F64)).requires_grad_()
    depth = RadialDepthLoss(tree, geo, step=0.8)
    assert float(depth(geo.expmap0(v.detach()), y)) > 0
    assert torch.autograd.gradcheck(lambda t: depth(geo.expmap0(t), y), (v,), eps=1e-6, atol=1e-5)


def test_radial_depth_loss_ball_equals_hyperboloid():
    tree = _tree()
    y = torch.tensor([0, 1, 2, 3, 3, 4, 0])
    v = 0.9 * torch.randn(7, 3, generator=torch.Generator().manual_seed(11), dtype=F64)
    for c in (0.5, 1.0, 2.0):
        ball, hyp = PoincareBall(c), Lorentz(c)
        zl = hyp.expmap0(v)  # (7, 4) on the hyperboloid
        zb = hyp.to_ball(zl)
        a = RadialDepthLoss(tree, ball, step=0.7, steps=50)(zb, y)  # converged means: intrinsic, model-free
        b = RadialDepthLoss(tree, hyp, step=0.7, steps=50)(zl, y)
        assert float(a) == pytest.approx(float(b), rel=1e-6)
