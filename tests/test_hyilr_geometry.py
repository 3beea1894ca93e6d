"""HyILR's spaces as geometry objects: old name-switched formulas vs the Geometry path, float64.

The reference below is the 0.3-dev implementation this module replaced (``project``/``distance``
switched on ``geometry="lorentz"|"poincare"|"euclidean"`` and called the curvature ``k``), kept
as a loop reference: distances, the loss and its gradients must agree on fixed inputs.
"""

import math

import pytest
import torch

from hierviz.geometry import Euclidean, Lorentz, PoincareBall
from hierviz.geometry.lorentz import math as lmath
from hierviz.geometry.poincare import math as pmath
from hierviz.hierarchy import LabelTree
from hierviz.losses.hyilr import (
    HyperbolicScales,
    distance,
    hierarchy_negatives,
    hyilr_contrastive_loss,
    hyilr_loss,
    label_relations,
    project,
)

D64 = torch.float64
TREE = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})


def _old_project(e, scale, k, geometry):
    e = e.to(D64) * scale
    if geometry == "lorentz":
        return lmath.expmap0(e, k)[..., 1:]
    if geometry == "poincare":
        return pmath.expmap0(e, k)
    return e


def _old_distance(x, y, k, geometry):
    if geometry == "lorentz":
        t = lambda u: torch.cat([(1.0 / k + u.pow(2).sum(-1, keepdim=True)).sqrt(), u], -1)  # noqa: E731
        return lmath.pairwise_dist(t(x), t(y), k)
    if geometry == "poincare":
        return pmath.pairwise_dist(x, y, k)
    return torch.cdist(x, y)


SPACES = [("lorentz", Lorentz), ("poincare", PoincareBall), ("euclidean", Euclidean)]


@pytest.mark.parametrize("name,cls", SPACES)
@pytest.mark.parametrize("c", [0.3, 1.0, 2.5])
def test_geometry_object_matches_the_name_switched_formulas(name, cls, c):
    g = torch.Generator().manual_seed(0)
    e, w = torch.randn(6, 5, generator=g, dtype=D64), torch.randn(4, 5, generator=g, dtype=D64)
    a_t, a_l = 0.7, 0.4
    old = _old_distance(_old_project(e, a_t, c, name), _old_project(w, a_l, c, name), c, name)
    for geometry in (cls(), cls() if name == "euclidean" else cls(c=2.0)):  # the object's own c is only c0
        new = distance(project(e, a_t, c, geometry), project(w, a_l, c, geometry), c, geometry)
        torch.testing.assert_close(new, old, rtol=1e-12, atol=1e-12)
    assert float(old.min()) > 0.05  # distinct points: the comparison is not of zeros


@pytest.mark.parametrize("name,cls", SPACES)
def test_loss_and_gradients_match_the_old_path(name, cls):
    g = torch.Generator().manual_seed(1)
    text = torch.randn(5, 4, generator=g, dtype=D64)
    lab = torch.randn(6, 4, generator=g, dtype=D64)
    logits = torch.randn(5, 6, generator=g, dtype=D64)
    y = torch.tensor(
        [[1, 0, 1, 0, 0, 0], [1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0], [0, 1, 0, 0, 0, 1], [1, 0, 1, 0, 0, 0]]
    )
    rel = label_relations(TREE)
    s = HyperbolicScales(4, geometry=cls())
    with torch.no_grad():
        s.log_c.fill_(math.log(1.7))
        s.log_alpha_t.fill_(math.log(0.6))
    t1, l1 = text.clone().requires_grad_(), lab.clone().requires_grad_()
    loss, _ = hyilr_loss(logits, t1, l1, y, s, rel, lam=0.4, tau=0.1)
    loss.backward()
    # old path with the same scalars, as a tensor function of its own leaves
    t2, l2, lc = text.clone().requires_grad_(), lab.clone().requires_grad_(), torch.tensor(math.log(1.7), dtype=D64)
    lc.requires_grad_()
    k = lc.exp()
    d = _old_distance(_old_project(t2, 0.6, k, name), _old_project(l2, 0.5, k, name), k, name)
    neg = hierarchy_negatives(d, y.bool(), *rel)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, y.to(D64))
    old = bce + 0.4 * hyilr_contrastive_loss(d, y.bool(), neg, tau=0.1)
    old.backward()
    torch.testing.assert_close(loss, old, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(t1.grad, t2.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(l1.grad, l2.grad, rtol=1e-10, atol=1e-12)
    if name != "euclidean":  # the curvature's gradient reaches log c (unused by the flat ablation)
        torch.testing.assert_close(s.log_c.grad, lc.grad, rtol=1e-9, atol=1e-12)
        assert abs(float(lc.grad)) > 1e-6
    else:
        assert s.log_c.grad is None


def test_a_user_geometry_works_through_its_methods():
    """A geometry registered from a user module (a renamed Lorentz) gives HyILR's numbers: no name switch."""
    from hierviz.geometry import GEOMETRIES, get_geometry, register_geometry

    @register_geometry("my-hyperboloid")
    class MyHyperboloid(Lorentz):
        name = "my-hyperboloid"

    try:
        e = torch.randn(3, 4, generator=torch.Generator().manual_seed(2), dtype=D64)
        ref = HyperbolicScales(4, geometry=Lorentz())
        for geometry in (MyHyperboloid(), get_geometry("my-hyperboloid"), "my-hyperboloid"):
            s = HyperbolicScales(4, geometry=geometry)
            torch.testing.assert_close(s.distance(s.project_text(e), s.project_labels(e)),
                                       ref.distance(ref.project_text(e), ref.project_labels(e)))  # fmt: skip
            torch.testing.assert_close(s.radius(s.project_text(e)), s.alpha_t * e.norm(dim=-1))  # d(O, φ(v)) = ‖v‖
    finally:
        GEOMETRIES.unregister("my-hyperboloid")


def test_scales_arguments():
    s = HyperbolicScales(16)
    assert isinstance(s.geometry, Lorentz) and s.c.item() == 1.0 and s.log_c.item() == 0.0
    assert HyperbolicScales(4, geometry=PoincareBall(c=0.5)).c.item() == pytest.approx(0.5)
    assert HyperbolicScales(4, geometry=Euclidean()).c.item() == 1.0  # unused; log c stays at 0
    assert not HyperbolicScales(4, learn_c=False).log_c.requires_grad
    with pytest.raises(TypeError, match="geometry must be a hierviz.geometry.Geometry"):
        HyperbolicScales(4, geometry=3.0)
    with pytest.raises(ValueError, match="c \\(initial curvature\\) must be in"):
        HyperbolicScales(4, c=1e4)
