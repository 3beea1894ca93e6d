"""The 0.2 geometry surface: registry, capability attributes, config round trip, curvature naming,
``to_manifold`` (bit-equal to the model heads) and the old import paths."""

from __future__ import annotations

import warnings

import pytest
import torch

import hierviz.geometry as geometry_pkg
from hierviz._registry import UnknownNameError
from hierviz.geometry import (
    GEOMETRIES,
    Euclidean,
    Geometry,
    Lorentz,
    PoincareBall,
    UnitSphere,
    get_geometry,
    register_geometry,
)
from hierviz.models import HyperbolicHead, L2Normalize

F64 = torch.float64
BUILTINS = [Euclidean(), PoincareBall(c=0.3), PoincareBall(), Lorentz(c=2.5), Lorentz()]

# --------------------------------------------------------------------------- registry and capabilities


def test_registry_holds_the_builtins_in_order():
    assert GEOMETRIES.names()[:3] == ["euclidean", "poincare", "lorentz"]
    assert GEOMETRIES.get("poincare") is PoincareBall and GEOMETRIES.get("Lorentz") is Lorentz
    assert "euclidean" in GEOMETRIES


def test_unknown_geometry_suggests_the_nearest_name():
    with pytest.raises(UnknownNameError, match="did you mean 'lorentz'") as err:
        get_geometry("lorenz")
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)
    with pytest.raises(ValueError, match="euclidean.*poincare.*lorentz|did you mean"):
        get_geometry("hyperbolic-ish")
    with pytest.raises(TypeError, match="name must be a str or Geometry, got int"):
        get_geometry(3)


@pytest.mark.parametrize("g", BUILTINS, ids=repr)
def test_config_round_trip(g):
    cfg = g.config()
    assert set(cfg) == ({"name", "c"} if g.hyperbolic else {"name"})
    rebuilt = get_geometry(**cfg)
    assert rebuilt == g and type(rebuilt) is type(g) and rebuilt.c == g.c
    assert get_geometry(g) is g


def test_capability_attributes():
    e, p, lo = Euclidean(), PoincareBall(c=0.5), Lorentz(c=2.0)
    assert [g.hyperbolic for g in (e, p, lo)] == [False, True, True]
    assert [g.display_name for g in (e, p, lo)] == ["Euclidean (unit sphere)", "Poincaré ball", "Lorentz hyperboloid"]
    assert [g.name for g in (e, p, lo)] == ["euclidean", "poincare", "lorentz"]
    assert [g.curvature for g in (e, p, lo)] == [0.0, -0.5, -2.0]
    assert [type(g.c) for g in (e, p, lo)] == [float, float, float] and e.c == 0.0
    assert [g.point_dim(4) for g in (e, p, lo)] == [4, 4, 5]
    assert UnitSphere is Euclidean
    assert Euclidean.__doc__.splitlines()[0].startswith("The unit sphere S^{d−1}")


def test_get_geometry_curvature_defaults_and_is_ignored_by_the_sphere():
    assert get_geometry("poincare") == PoincareBall(c=1.0)
    assert get_geometry("lorentz", c=0.25) == Lorentz(c=0.25)
    assert get_geometry("euclidean", c=3.0) == Euclidean()  # callers pass model.curvature for every geometry
    with pytest.raises(ValueError, match="c must be a finite number > 0"):
        get_geometry("poincare", c=-1.0)


def test_user_geometry_from_a_module_registers_by_decorator():
    try:

        @register_geometry("half-ball-test")
        class HalfBall(PoincareBall):
            name = "half-ball-test"
            display_name = "half ball"

        g = get_geometry("half-ball-test", c=2.0)
        assert isinstance(g, HalfBall) and g.c == 2.0 and g.config() == {"name": "half-ball-test", "c": 2.0}
        assert get_geometry(**g.config()) == g
        with pytest.raises(ValueError, match="already registered"):
            register_geometry("half-ball-test")(Euclidean)
        with pytest.raises(ValueError, match="'poincare' is already registered"):
            register_geometry("poincare")(HalfBall)
    finally:
        GEOMETRIES.unregister("half-ball-test")


# --------------------------------------------------------------------------- curvature naming


def test_lorentz_c_equals_the_deprecated_k_numerically():
    with pytest.warns(DeprecationWarning, match=r"use Lorentz\(c=\.\.\.\)"):
        old = Lorentz(k=0.7)
    new = Lorentz(c=0.7)
    assert old == new and old.k == new.k == new.c == 0.7
    # geoopt's Lorentz(k=K) is the hyperboloid <x,x>_L = -K, curvature -1/K: we build K = 1/c
    assert float(new.manifold.k) == pytest.approx(1 / 0.7)
    v = torch.randn(6, 3, dtype=F64, generator=torch.Generator().manual_seed(0))
    xo, xn = old.expmap0(v), new.expmap0(v)
    assert torch.equal(xo, xn)
    mink = xn[:, 1:].pow(2).sum(-1) - xn[:, 0].pow(2)
    torch.testing.assert_close(mink, torch.full((6,), -1 / 0.7, dtype=F64))
    assert torch.equal(old.pairwise_dist(xo), new.pairwise_dist(xn))
    assert torch.equal(old.logmap(xo[:1], xo), new.logmap(xn[:1], xn))
    idx = torch.tensor([0, 1, 0, 1, 0, 1])
    assert torch.equal(old.group_mean(xo, idx, 2), new.group_mean(xn, idx, 2))
    # the same c means the same space in both models
    torch.testing.assert_close(
        new.pairwise_dist(xn), PoincareBall(c=0.7).pairwise_dist(new.to_ball(xn)), rtol=1e-9, atol=1e-10
    )
    assert Lorentz(0.7) == new  # positional c, as 0.1's positional k
    with pytest.raises(TypeError, match="pass the curvature once, as c"):
        Lorentz(c=0.7, k=0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Lorentz(c=0.7)  # no warning for the new name


# --------------------------------------------------------------------------- to_manifold


def _inputs():
    g = torch.Generator().manual_seed(3)
    base = torch.randn(17, 6, generator=g) * 3.0
    base[0] = 0.0  # a zero row
    base[1] *= 1e-4  # a short one
    return [base, base.double(), base.half(), base.bfloat16()]


@pytest.mark.parametrize("geom", [PoincareBall(c=0.5), PoincareBall(), Lorentz(c=1.5)], ids=repr)
@pytest.mark.parametrize("clip_r", [2.0, 0.3, None, float("inf")])
def test_to_manifold_equals_the_hyperbolic_head_exactly(geom, clip_r):
    head = HyperbolicHead(geom, clip_r=clip_r, scale_init=1.0, bound="clip")  # to_manifold is the hard clip
    for v in _inputs():
        z = geom.to_manifold(v, clip_r=clip_r)
        ref = head(v)
        assert z.dtype == ref.dtype and torch.equal(z, ref), (v.dtype, clip_r)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        v = _inputs()[0]
        assert torch.equal(geom.to_manifold(v, clip_r=clip_r), head(v))


def test_to_manifold_equals_l2normalize_exactly():
    g, head = Euclidean(), L2Normalize()
    for v in _inputs():
        with pytest.raises(ValueError, match="1 row.* zero vectors"):  # no direction
            g.to_manifold(v)
        v = v[1:]  # the head keeps a zero row zero (no check in training); to_manifold refuses it
        z = g.to_manifold(v, clip_r=2.0)  # clip_r is ignored on the sphere
        assert z.dtype == head(v).dtype and torch.equal(z, head(v))
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        v = _inputs()[0][1:]
        assert g.to_manifold(v).dtype == torch.float32 and torch.equal(g.to_manifold(v), head(v))
    torch.testing.assert_close(g.to_manifold([[3.0, 4.0]]), torch.tensor([[0.6, 0.8]], dtype=F64))  # numpy rules
    with pytest.raises(TypeError, match="v must be a torch.Tensor or numeric array, got str"):
        g.to_manifold("abc")


def test_to_manifold_clips_then_maps_and_refuses_bad_radius():
    ball = PoincareBall()
    z = ball.to_manifold(torch.tensor([[30.0, 40.0], [0.3, 0.4]], dtype=F64), clip_r=2.0)
    torch.testing.assert_close(z.norm(dim=-1), torch.tanh(torch.tensor([2.0, 0.5], dtype=F64)))
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="clip_r must be > 0"):
            ball.to_manifold(torch.ones(1, 2), clip_r=bad)
    with pytest.raises(ValueError, match="v contains 1 non-finite"):
        ball.to_manifold(torch.tensor([[float("nan"), 0.0]]))
    assert Lorentz().to_manifold(torch.zeros(2, 3)).shape == (2, 4)


# --------------------------------------------------------------------------- old import paths


def test_old_import_paths_and_exports_still_work():
    from hierviz.geometry.base import Geometry as G2
    from hierviz.geometry.base import as_float_tensor, check_curvature, full_precision  # noqa: F401
    from hierviz.geometry.euclidean import Euclidean as E2
    from hierviz.geometry.lorentz import Lorentz as L2
    from hierviz.geometry.poincare import PoincareBall as P2

    assert (G2, E2, L2, P2) == (Geometry, Euclidean, Lorentz, PoincareBall)
    old_all = {"Geometry", "Euclidean", "PoincareBall", "Lorentz", "get_geometry", "GEOMETRIES"}
    old_all |= {"check_curvature", "full_precision"}
    new = {"UnitSphere", "register_geometry"}
    assert old_all | new <= set(geometry_pkg.__all__)
    assert all(hasattr(geometry_pkg, n) for n in geometry_pkg.__all__)
