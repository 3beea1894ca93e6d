"""``radius_order_interval``: stratified bootstrap intervals of the radius-order metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hierviz.geometry import PoincareBall, get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.metrics import radius_metrics, radius_order_interval

TREE = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2", "b3"]}})
BALL = PoincareBall(1.0)
#: Leaf directions and radii: leaves at geodesic radius 2, spread around their parent's direction.
ANGLES = {0: 0.0, 1: 0.5, 2: 2.6, 3: 3.1, 4: 3.6}


def _sample(per_leaf: int, spread: float, seed: int) -> tuple[torch.Tensor, np.ndarray]:
    g = torch.Generator().manual_seed(seed)
    ys, pts = [], []
    for leaf, a in ANGLES.items():
        ang = a + spread * torch.randn(per_leaf, generator=g, dtype=torch.float64)
        rad = 1.0 + 0.3 * torch.randn(per_leaf, generator=g, dtype=torch.float64).abs()
        pts.append(rad[:, None] * torch.stack([ang.cos(), ang.sin()], -1))
        ys += [leaf] * per_leaf
    return BALL.expmap0(torch.cat(pts)), np.asarray(ys)


def test_the_interval_narrows_as_each_leaf_has_more_test_samples():
    """The same embedding distribution: 6 samples per leaf give a wide edge-order interval, 300 a narrow one."""
    widths = {}
    for n in (6, 300):
        z, y = _sample(n, spread=0.9, seed=1)
        iv = radius_order_interval(z, y, TREE, BALL, n_boot=60, seed=0)
        lo, hi = iv["edge_order"]
        assert 0.0 <= lo <= hi <= 1.0
        widths[n] = hi - lo
    assert widths[6] >= 0.25  # at least two of the 7 edges flip between replicates
    assert widths[300] < widths[6]


def test_the_interval_brackets_the_full_sample_value_and_is_seeded():
    z, y = _sample(20, spread=0.5, seed=2)
    full = radius_metrics(z, y, TREE, BALL)
    a = radius_order_interval(z, y, TREE, BALL, n_boot=40, seed=3)
    b = radius_order_interval(z, y, TREE, BALL, n_boot=40, seed=3)
    assert a == b
    for key in ("radius_depth_spearman", "edge_order"):
        lo, hi = a[key]
        assert lo - 1e-12 <= full[key] <= hi + 1e-12, (key, full[key], a[key])


def test_identical_samples_per_leaf_give_a_point_interval_equal_to_the_metric():
    z, y = _sample(1, spread=0.0, seed=0)
    z, y = z.repeat_interleave(4, 0), np.repeat(y, 4)
    full = radius_metrics(z, y, TREE, BALL)
    iv = radius_order_interval(z, y, TREE, BALL, n_boot=20)
    for key, (lo, hi) in iv.items():
        assert lo == pytest.approx(hi) == pytest.approx(full[key])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"n_boot": 10}, "n_boot"), ({"level": 1.0}, "level"), ({"geometry": "euclidean"}, "hyperbolic")],
)
def test_bad_arguments_are_named(kwargs, match):
    z, y = _sample(3, spread=0.2, seed=0)
    geometry = get_geometry(kwargs.pop("geometry", "poincare"))
    if not geometry.hyperbolic:
        z = torch.nn.functional.normalize(z, dim=-1)
    with pytest.raises(ValueError, match=match):
        radius_order_interval(z, y, TREE, geometry, **kwargs)


def test_lorentz_gives_the_ball_s_interval():
    """The hyperboloid and the ball are isometric: the same points give the same interval."""
    z, y = _sample(8, spread=0.6, seed=4)
    lorentz = get_geometry("lorentz")
    zl = lorentz.from_ball(z) if hasattr(lorentz, "from_ball") else None
    if zl is None:
        zl = lorentz.expmap0(BALL.logmap0(z))
    a = radius_order_interval(z, y, TREE, BALL, n_boot=30, seed=5)
    b = radius_order_interval(zl, y, TREE, lorentz, n_boot=30, seed=5)
    for key in a:
        assert all(math.isclose(u, v, abs_tol=1e-6) for u, v in zip(a[key], b[key], strict=True)), (key, a, b)
