"""The pure formulas in ``geometry/{poincare,lorentz}/math.py`` against geoopt's peers and the classes."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # geoopt's torch.jit.script notices
    import geoopt
    from geoopt.manifolds.lorentz import math as glm

from hierviz.geometry import Lorentz, PoincareBall
from hierviz.geometry.lorentz import math as lm
from hierviz.geometry.poincare import math as pm

F64 = torch.float64


def tangent(n, d, scale=0.8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=F64) * scale


def gball(c):
    return geoopt.PoincareBall(c=torch.tensor(c, dtype=F64))


def ghyp(c):
    return geoopt.Lorentz(k=torch.tensor(1.0 / c, dtype=F64))  # geoopt's k is 1/c


CS = [0.3, 1.0, 2.5]

# --------------------------------------------------------------------------- Poincaré


@pytest.mark.parametrize("c", CS)
def test_poincare_math_matches_geoopt(c):
    ball = gball(c)
    x = ball.expmap0(tangent(12, 4, seed=1))
    y = ball.expmap0(tangent(12, 4, seed=2))
    v = tangent(12, 4, scale=0.5, seed=3)
    close = dict(rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(pm.mobius_add(x, y, c), ball.mobius_add(x, y, project=False), **close)
    torch.testing.assert_close(pm.lambda_x(x, c), ball.lambda_x(x, keepdim=True), **close)
    # geoopt clamps its artanh argument at 1 - 1e-7 (distances cap at 16.8/sqrt(c)): compare below it,
    # and every row with paper 01 Eq. 2 (arcosh form)
    ok = ball.dist(x, y) < 0.99 * 2 * math.atanh(1 - 1e-7) / c**0.5
    assert int(ok.sum()) >= 8
    torch.testing.assert_close(pm.dist(x, y, c)[ok], ball.dist(x, y)[ok], **close)
    d2, den = (x - y).pow(2).sum(-1), (1 - c * x.pow(2).sum(-1)) * (1 - c * y.pow(2).sum(-1))
    torch.testing.assert_close(pm.dist(x, y, c), torch.acosh(1 + 2 * c * d2 / den) / c**0.5, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(pm.expmap0(v, c), ball.expmap0(v), **close)
    torch.testing.assert_close(pm.logmap0(x, c), ball.logmap0(x), **close)
    torch.testing.assert_close(pm.expmap(x, v, c), ball.expmap(x, v), **close)
    torch.testing.assert_close(pm.logmap(x, y, c)[ok], ball.logmap(x, y)[ok], **close)
    far = tangent(12, 4, scale=3.0, seed=4)  # some rows beyond the ball: projected
    torch.testing.assert_close(pm.proj(far, c), ball.projx(far), **close)
    assert bool((pm.proj(far, c).norm(dim=-1) <= (1 - 1e-5) / c**0.5 + 1e-15).all())


@pytest.mark.parametrize("c", CS)
def test_poincare_math_pairwise_is_the_class_kernel_and_eq2(c):
    ball = gball(c)
    x = ball.expmap0(tangent(9, 3, seed=5))
    y = ball.expmap0(tangent(7, 3, seed=6))
    assert torch.equal(pm.pairwise_dist(x, y, c), PoincareBall(c=c).pairwise_dist(x, y))
    assert torch.equal(pm.pairwise_dist(x, None, c), PoincareBall(c=c).pairwise_dist(x))
    torch.testing.assert_close(pm.pairwise_dist(x, y, c), ball.dist(x[:, None], y[None]), rtol=1e-10, atol=1e-12)
    # paper 01 Eq. 2 (times 1/sqrt(c)): arcosh(1 + 2c‖x−y‖²/((1−c‖x‖²)(1−c‖y‖²)))/sqrt(c)
    d2 = (x[:, None] - y[None]).pow(2).sum(-1)
    den = (1 - c * x.pow(2).sum(-1))[:, None] * (1 - c * y.pow(2).sum(-1))[None]
    torch.testing.assert_close(pm.pairwise_dist(x, y, c), torch.acosh(1 + 2 * c * d2 / den) / c**0.5)
    assert torch.equal(torch.diagonal(pm.pairwise_dist(x, None, c)), torch.zeros(9, dtype=F64))


def test_poincare_math_maps_are_inverse_and_float32_agrees():
    c = 1.0
    v = tangent(10, 5, seed=7)
    x = pm.expmap0(v, c)
    torch.testing.assert_close(pm.logmap0(x, c), v, rtol=1e-9, atol=1e-12)
    y = pm.expmap0(tangent(10, 5, seed=8), c)
    torch.testing.assert_close(pm.expmap(x, pm.logmap(x, y, c), c), y, rtol=1e-9, atol=1e-12)
    # float32 against float64 on the same float32 inputs: the arsinh form keeps 1e-5 where geoopt's
    # float32 dist is 1.2e-3 off (row 5, norms 0.997 and 0.974)
    ball32 = geoopt.PoincareBall(c=1.0)
    ref = pm.dist(x.float().double(), y.float().double(), c)
    torch.testing.assert_close(pm.dist(x.float(), y.float(), c).double(), ref, rtol=2e-6, atol=2e-6)
    assert float((ball32.dist(x.float(), y.float()).double() - ref).abs().max()) > 1e-4


# --------------------------------------------------------------------------- Lorentz


@pytest.mark.parametrize("c", CS)
def test_lorentz_math_matches_geoopt(c):
    hyp = ghyp(c)
    v = tangent(12, 3, seed=1)
    x = hyp.expmap0(lm._pad(v))
    y = hyp.expmap0(lm._pad(tangent(12, 3, seed=2)))
    close = dict(rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(lm.minkowski_inner(x, y), glm.inner(x, y), **close)
    torch.testing.assert_close(lm.minkowski_inner(x, x), torch.full((12,), -1.0 / c, dtype=F64), **close)
    torch.testing.assert_close(lm.dist(x, y, c), hyp.dist(x, y), **close)
    torch.testing.assert_close(lm.expmap0(v, c), x, **close)
    torch.testing.assert_close(lm.logmap0(x, c), hyp.logmap0(x), **close)
    torch.testing.assert_close(lm.logmap(x, y, c), hyp.logmap(x, y), **close)
    raw = tangent(12, 4, seed=3)
    torch.testing.assert_close(lm.proj(raw, c), hyp.projx(raw), **close)
    torch.testing.assert_close(lm.proju(x, raw, c), hyp.proju(x, raw), **close)
    u = lm.proju(x, 0.4 * raw, c)
    torch.testing.assert_close(lm.expmap(x, u, c), hyp.expmap(x, u), **close)


@pytest.mark.parametrize("c", CS)
def test_lorentz_math_pairwise_and_ball_conversion(c):
    x = lm.expmap0(tangent(8, 3, seed=4), c)
    y = lm.expmap0(tangent(6, 3, seed=5), c)
    # the class recomputes the time coordinate in float64 (proj) before the same formula
    ulp = dict(rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(lm.pairwise_dist(x, y, c), Lorentz(c=c).pairwise_dist(x, y), **ulp)
    torch.testing.assert_close(lm.pairwise_dist(x, None, c), Lorentz(c=c).pairwise_dist(x), **ulp)
    torch.testing.assert_close(lm.pairwise_dist(x, y, c), ghyp(c).dist(x[:, None], y[None]), rtol=1e-9, atol=1e-10)
    # to_ball is an isometry onto the ball of the same curvature, and from_ball inverts it
    p, q = lm.to_ball(x, c), lm.to_ball(y, c)
    assert bool((p.norm(dim=-1) < c**-0.5).all())
    torch.testing.assert_close(pm.pairwise_dist(p, q, c), lm.pairwise_dist(x, y, c), rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(lm.from_ball(p, c), x, rtol=1e-10, atol=1e-12)


def test_lorentz_math_short_distances_keep_their_digits():
    """The closed forms stay exact where geoopt's clamped log map under-shoots (d ~ 1e-6)."""
    c = 1.0
    x = lm.expmap0(tangent(4, 3, seed=6), c)
    step = lm.proju(x, 1e-6 * tangent(4, 4, scale=1.0, seed=7), c)
    y = lm.proj(lm.expmap(x, step, c), c)
    torch.testing.assert_close(lm.logmap(x, y, c), step, rtol=1e-7, atol=1e-16)
    # geoopt clamps the squared Minkowski norm at 1e-8: its log map is off by far more here
    assert float((ghyp(c).logmap(x, y) - step).abs().max()) > 1e3 * float((lm.logmap(x, y, c) - step).abs().max())
