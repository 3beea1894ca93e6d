"""HypStructure's CPCC term (hierviz.losses.CPCCLoss) against a loop reference, by hand and by gradcheck."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.stats import pearsonr

from hierviz.geometry import Lorentz, PoincareBall
from hierviz.hierarchy import LabelTree
from hierviz.losses import CPCCLoss
from hierviz.losses.cpcc import weighted_pearson
from hierviz.methods import build_objective
from hierviz.methods.registry import loss_keys

F64 = torch.float64


def _tree():
    return LabelTree.from_nested({"r": {"a": {"a1": ["x", "y"], "a2": ["w"]}, "b": ["u", "v"]}})


def _cpcc_ref(z, y, tree, geo, steps=3):
    """Loop reference: one Karcher mean per node, nodes and pairs by the tree's own queries, scipy's Pearson r."""
    zf = z.reshape(-1, z.shape[-1])
    yf = y.repeat_interleave(z.shape[1])
    members, protos = {}, {}
    for name in tree.nodes:
        leaves = {tree.leaf_index[lf] for lf in tree.leaves_under(name)}
        members[name] = [i for i in range(len(yf)) if int(yf[i]) in leaves]
        if members[name]:
            idx = members[name]
            protos[name] = geo.group_mean(zf[idx], torch.zeros(len(idx), dtype=torch.long), 1, steps=steps)[0]
    used = [
        n for n in tree.nodes if members[n] and not any(len(members[c]) == len(members[n]) for c in tree.children(n))
    ]
    d, t = [], []
    for i, u in enumerate(used):
        for v in used[i + 1 :]:
            lca_depth = len(set(tree.ancestors(u)) & set(tree.ancestors(v))) - 1
            t.append(tree.depth(u) + tree.depth(v) - 2 * lca_depth)
            d.append(float(geo.dist(protos[u], protos[v])))
    if len(d) < 2 or len(set(t)) < 2:
        return 0.0
    return 1.0 - pearsonr(d, t).statistic


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0), PoincareBall(2.0), Lorentz(0.5)])
def test_cpcc_loss_matches_the_loop_reference(geo):
    tree = _tree()
    g = torch.Generator().manual_seed(7)
    for y in (
        torch.tensor([0, 0, 1, 2, 2, 3, 4, 4, 0]),  # every leaf; "w" is a2's only child: a2 is left out
        torch.tensor([0, 1, 1, 3, 0]),  # x, y, u: a's samples are all a1's, so a is left out too
    ):
        z = geo.expmap0(0.8 * torch.randn(len(y), 2, 3, generator=g, dtype=F64))
        got = float(CPCCLoss(tree, geo)(z, y))
        assert got == pytest.approx(_cpcc_ref(z, y, tree, geo), abs=1e-9)
        assert 0.0 < got < 2.0


def test_cpcc_loss_hand_values():
    ball = PoincareBall(1.0)
    at = lambda r, a: ball.expmap0(r / 2 * torch.stack([a.cos(), a.sin()], -1))  # noqa: E731  geodesic radius r
    # two leaves opposite at radius 1: the root's mean is the origin, distances (1, 1, 2) = tree distances
    tree = LabelTree.from_nested({"r": ["x", "y"]})
    z = at(1.0, torch.tensor([0.0, math.pi], dtype=F64))
    assert float(CPCCLoss(tree, ball)(z, torch.tensor([0, 1]))) == pytest.approx(0.0, abs=1e-9)
    # cousins together, siblings apart: a1 with b1 at angle 0, a2 with b2 at angle pi (radius 2), so the
    # prototypes of r, a and b are the origin. The 21 (distance, tree distance) pairs of r, a, b, a1, a2, b1, b2:
    pairs = [(0, 1), (0, 1), (2, 2), (2, 2), (2, 2), (2, 2),  # r - a, b, a1, a2, b1, b2
             (0, 2), (2, 1), (2, 1), (2, 3), (2, 3),  # a - b, a1, a2, b1, b2
             (2, 3), (2, 3), (2, 1), (2, 1),  # b - a1, a2, b1, b2
             (4, 2), (0, 4), (4, 4), (4, 4), (0, 4), (4, 2)]  # a1-a2, a1-b1, a1-b2, a2-b1, a2-b2, b1-b2  # fmt: skip
    d, t = zip(*pairs, strict=True)
    tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    y = torch.tensor([0, 1, 2, 3])
    crossed = float(CPCCLoss(tree, ball)(at(2.0, torch.tensor([0.0, math.pi, 0.0, math.pi], dtype=F64)), y))
    assert crossed == pytest.approx(1.0 - pearsonr(d, t).statistic, abs=1e-6)  # 0.845
    # the tree drawn right (a's leaves at angles 0 and 0.4, b's at pi and pi + 0.4) scores far better
    drawn = float(CPCCLoss(tree, ball)(at(2.0, torch.tensor([0.0, 0.4, math.pi, math.pi + 0.4], dtype=F64)), y))
    assert drawn < 0.15 < crossed


def test_cpcc_loss_undefined_cases_give_zero_and_no_gradient():
    ball, tree = PoincareBall(1.0), _tree()
    v = (0.5 * torch.randn(4, 2, 3, dtype=F64)).requires_grad_()
    loss = CPCCLoss(tree, ball)
    for y in (None, torch.tensor([0, 0, 0, 0])):  # no labels; one leaf (its chain up to the root is one node)
        out = loss(ball.expmap0(v), y)
        (g,) = torch.autograd.grad(out, v)
        assert float(out.detach()) == 0.0 and torch.equal(g, torch.zeros_like(v))
    # x and y only: nodes a1, x, y (a and r are a1's), tree distances 1, 1, 2: defined
    assert float(loss(ball.expmap0(v), torch.tensor([0, 1, 0, 1])).detach()) > 0.0


def test_cpcc_loss_is_intrinsic_ball_and_hyperboloid_agree():
    tree = _tree()
    v = 0.9 * torch.randn(7, 2, 3, generator=torch.Generator().manual_seed(3), dtype=F64)
    y = torch.tensor([0, 1, 2, 3, 4, 4, 1])
    for c in (0.5, 1.0, 2.0):  # the same points in both models (Lorentz.to_ball, an isometry)
        lor, ball = Lorentz(c), PoincareBall(c)
        z = lor.expmap0(v)
        a = CPCCLoss(tree, ball, steps=60)(lor.to_ball(z), y)  # Karcher means run to convergence in both
        b = CPCCLoss(tree, lor, steps=60)(z, y)
        assert float(a) == pytest.approx(float(b), abs=1e-8)


@pytest.mark.parametrize("geo", [PoincareBall(1.0), Lorentz(1.0), PoincareBall(2.0)])
def test_cpcc_loss_gradcheck_float64(geo):
    tree = _tree()
    y = torch.tensor([0, 1, 2, 3, 3, 4])
    v = (0.7 * torch.randn(6, 2, 3, generator=torch.Generator().manual_seed(5), dtype=F64)).requires_grad_()
    loss = CPCCLoss(tree, geo)
    assert torch.autograd.gradcheck(lambda t: loss(geo.expmap0(t), y), (v,), eps=1e-6, atol=1e-5)


def test_weighted_pearson_equals_scipy_on_the_selected_entries():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(40, generator=g, dtype=F64), torch.randn(40, generator=g, dtype=F64)
    w = torch.rand(40, generator=g) < 0.6
    assert float(weighted_pearson(a, b, w)) == pytest.approx(pearsonr(a[w].numpy(), b[w].numpy()).statistic, abs=1e-12)
    assert float(weighted_pearson(a, torch.ones_like(b), w)) == 0.0  # no spread on one side: 0, not NaN


def test_cpcc_term_is_reachable_for_every_method_on_hyperbolic_geometries_only():
    tree = _tree()
    assert "cpcc_weight" in loss_keys("supcon", "poincare") and "cpcc_weight" not in loss_keys("supcon", "euclidean")
    obj = build_objective("hwc+lam", tree, "lorentz", cpcc_weight=0.5)
    assert isinstance(obj.terms["cpcc"], CPCCLoss) and obj.weights["cpcc"] == 0.5
    assert build_objective("supcon", tree, "poincare").weights["cpcc"] == 1.0  # on by default since 0.4
    assert "cpcc" not in build_objective("supcon", tree, "poincare", cpcc_weight=0.0).terms
    assert "cpcc" not in build_objective("supcon", tree, "euclidean", cpcc_weight=0.5).terms
    with pytest.raises(ValueError, match="cpcc_weight"):
        build_objective("supcon", tree, "poincare", cpcc_weight=-1.0)
    with pytest.raises(ValueError, match="CPCCLoss needs a hyperbolic geometry"):
        from hierviz.geometry import Euclidean

        CPCCLoss(tree, Euclidean())
    ball = PoincareBall(1.0)
    z = ball.expmap0(0.5 * torch.randn(6, 2, 3, dtype=F64))
    y = torch.tensor([0, 1, 2, 3, 4, 0])
    loss, terms = build_objective("supcon", tree, ball, cpcc_weight=0.25, cone_weight=0.0, center_weight=0.0)(z, y)
    assert float(loss) == pytest.approx(float(terms["supcon"] + 0.25 * terms["cpcc"]), abs=1e-12)
