"""Fast paths against their references: the fused Poincaré pairwise distance.

The fused kernel (:func:`hierviz.geometry._kernels.poincare_pairwise_dist`, analytic backward
over one Gram matrix) must equal the autograd reference
(:func:`hierviz.geometry.poincare.math.pairwise_dist_reference`) and geoopt's
``PoincareBall.dist`` in values and gradients, pass float64 gradcheck/gradgradcheck, and stay
finite on equal points and near the boundary.
"""

from __future__ import annotations

import geoopt
import pytest
import torch

from hierviz.geometry import PoincareBall
from hierviz.geometry._kernels import poincare_pairwise_dist
from hierviz.geometry.poincare import math as pm


def _ball_points(n: int, d: int, c: float, *, rmax: float = 0.9, seed: int = 0, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(n, d, generator=g, dtype=dtype)
    u = u / u.norm(dim=-1, keepdim=True)
    r = torch.rand(n, 1, generator=g, dtype=dtype) * rmax
    return u * r / c**0.5


@pytest.mark.parametrize("c", [1.0, 0.37, 2.5])
@pytest.mark.parametrize("sym", [True, False])
def test_fused_equals_reference_values_and_gradients(c, sym):
    x = _ball_points(9, 6, c, seed=1).requires_grad_()
    y = None if sym else _ball_points(5, 6, c, seed=2).requires_grad_()
    w = torch.randn(9, 9 if sym else 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    got = poincare_pairwise_dist(x, y, c)
    ref = pm.pairwise_dist_reference(x, y, c)
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-12)
    inputs = (x,) if sym else (x, y)
    g_got = torch.autograd.grad((got * w).sum(), inputs)
    g_ref = torch.autograd.grad((ref * w).sum(), inputs)
    for a, b in zip(g_got, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("sym", [True, False])
def test_fused_gradcheck_and_gradgradcheck_float64(sym):
    c = 0.8
    x = _ball_points(6, 4, c, seed=4).requires_grad_()
    if sym:
        f, inputs = (lambda a: poincare_pairwise_dist(a, None, c)), (x,)
    else:
        y = _ball_points(3, 4, c, seed=5).requires_grad_()
        f, inputs = (lambda a, b: poincare_pairwise_dist(a, b, c)), (x, y)
    assert torch.autograd.gradcheck(f, inputs)
    assert torch.autograd.gradgradcheck(f, inputs)


def test_fused_batched_leading_dims_and_only_y_needs_grad():
    c = 1.0
    x = _ball_points(2 * 3 * 5, 4, c, seed=6).view(2, 3, 5, 4)
    y = _ball_points(2 * 3 * 4, 4, c, seed=7).view(2, 3, 4, 4).requires_grad_()
    got = poincare_pairwise_dist(x, y, c)
    assert got.shape == (2, 3, 5, 4)
    torch.testing.assert_close(got, pm.pairwise_dist_reference(x, y, c), rtol=0, atol=1e-12)
    (gy,) = torch.autograd.grad(got.sum(), y)
    (gy_ref,) = torch.autograd.grad(pm.pairwise_dist_reference(x, y, c).sum(), y)
    torch.testing.assert_close(gy, gy_ref, rtol=1e-10, atol=1e-10)
    sym = poincare_pairwise_dist(x, None, c)
    assert torch.equal(sym, sym.transpose(-1, -2)) and torch.all(sym.diagonal(dim1=-2, dim2=-1) == 0)


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-10), (torch.float32, 3e-5)])
def test_fused_matches_geoopt_dist(dtype, atol):
    c = 1.3
    x = _ball_points(12, 8, c, rmax=0.95, seed=8, dtype=dtype)
    ball = geoopt.PoincareBall(c=c)
    want = ball.dist(x[:, None], x[None]).fill_diagonal_(0.0)
    torch.testing.assert_close(poincare_pairwise_dist(x, None, c), want, rtol=1e-5, atol=atol)


def test_dispatch_cpu_keeps_the_reference_gpu_or_switch_takes_the_fused_kernel(monkeypatch):
    from hierviz.geometry import _kernels as K

    x = _ball_points(5, 3, 1.0, seed=9, dtype=torch.float32)
    xg = x.clone().requires_grad_()
    ball = PoincareBall(c=1.0)
    # a CPU tensor: the reference (CPU preset numbers unchanged)
    assert "PoincarePairwise" not in type(ball.pairwise_dist(xg).grad_fn).__name__
    monkeypatch.setattr(K, "FUSED_ON_CPU", True)  # what a CUDA tensor takes
    fused = ball.pairwise_dist(xg)
    assert "PoincarePairwise" in type(fused.grad_fn).__name__
    learn = PoincareBall(c=1.0, learnable=True)  # a learnable curvature always takes the reference
    d = learn.pairwise_dist(xg)
    assert "PoincarePairwise" not in type(d.grad_fn).__name__
    (gc,) = torch.autograd.grad(d.sum(), learn.manifold.isp_c)
    assert torch.isfinite(gc) and float(gc) != 0.0  # the curvature still receives its gradient
    torch.testing.assert_close(d, fused, rtol=0, atol=1e-6)


def test_fused_equal_points_and_boundary_stay_finite():
    c = 1.0
    base = _ball_points(4, 5, c, seed=10)
    edge = base / base.norm(dim=-1, keepdim=True) * (1 - 1e-9)  # float64 points at 1 − 1e-9
    x = torch.cat([base, base[:2], edge]).requires_grad_()  # two exact duplicates off the diagonal
    d = poincare_pairwise_dist(x, None, c)
    assert torch.isfinite(d).all()
    # duplicates: 0 up to the Gram cancellation (~sqrt(1e-16)/(1 − c‖x‖²)), as in the reference
    assert float(d[0, 4].detach()) < 1e-6 and float(d[1, 5].detach()) < 1e-6
    (g,) = torch.autograd.grad(d.sum(), x)
    assert torch.isfinite(g).all()
    # the gradient of a boundary point still points outward-ish (moving it out grows its distances)
    (g_ref,) = torch.autograd.grad(pm.pairwise_dist_reference(x, None, c).sum(), x)
    torch.testing.assert_close(g, g_ref, rtol=1e-8, atol=1e-6)
    assert float((g[6:] * edge).sum(-1).min()) > 0
    # float32 at the ball's projection margin
    x32 = (edge.float() * (1 - 4e-3)).requires_grad_()
    (g32,) = torch.autograd.grad(poincare_pairwise_dist(x32, None, c).sum(), x32)
    assert torch.isfinite(g32).all()


@pytest.mark.parametrize("sym", [True, False])
def test_pure_elementwise_twins_equal_the_inplace_ones(sym):
    """The functions torch.compile fuses equal the eager in-place ones (same q, floor, distance and p)."""
    from hierviz.geometry import _kernels as K

    c, eps = 0.7, 1e-20
    x = _ball_points(6, 4, c, seed=11)
    y = x if sym else _ball_points(5, 4, c, seed=12)
    nx, a = K._poincare_parts(x, c)
    ny, b = K._poincare_parts(y, c)
    pure = K._fwd_elementwise(x @ y.T, nx, ny, a, b, c, eps, sym)
    eager = K._fwd_inplace(x @ y.T, nx, ny, a, b, c, eps, sym)
    for u, v in zip(pure, eager):
        torch.testing.assert_close(u, v, rtol=1e-14, atol=0)
    grad = torch.randn(pure[0].shape, dtype=torch.float64, generator=torch.Generator().manual_seed(13))
    for u, v in zip(K._bwd_elementwise(grad, pure[1], pure[2], c), K._bwd_inplace(grad, eager[1], eager[2], c)):
        torch.testing.assert_close(u, v, rtol=1e-14, atol=0)


def test_compile_kernels_switch_traces_and_matches():
    """``compile_kernels`` (the ``train.compile`` switch) goes through torch.compile and gives the same numbers.

    ``backend="aot_eager"`` traces with dynamo/AOTAutograd without generating C++ (fast on a CPU);
    on a GPU the default inductor backend fuses the elementwise passes.
    """
    from hierviz.geometry import _kernels as K

    c = 1.0
    x = _ball_points(8, 5, c, seed=14).requires_grad_()
    want = pm.pairwise_dist_reference(x, None, c)
    (g_want,) = torch.autograd.grad(want.sum(), x)
    try:
        K.compile_kernels(True, backend="aot_eager")
        assert K._FWD is not K._fwd_inplace
        got = poincare_pairwise_dist(x, None, c)
        (g_got,) = torch.autograd.grad(got.sum(), x)
    finally:
        K.compile_kernels(False)
    assert K._FWD is K._fwd_inplace and K._BWD is K._bwd_inplace
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(g_got, g_want, rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- LAM / HWC+LAM vs loop references


def _random_tree(depth: int, seed: int):
    """A random, possibly unbalanced tree of height ``depth`` (1..4) with 2-3 children per node."""
    import numpy as np

    from hierviz.hierarchy import LabelTree

    rng = np.random.default_rng(seed)
    count = iter(range(10_000))

    def sub(level: int):
        k = int(rng.integers(2, 4))
        if level == depth - 1 or (level > 0 and rng.random() < 0.3):  # leaves here (unbalanced)
            return [f"l{next(count)}" for _ in range(k)]
        return {f"n{next(count)}": sub(level + 1) for _ in range(k)}

    return LabelTree.from_nested({"root": sub(0)})


def _lam_loop_reference(lam, z, labels, geometry):
    """Eq. 11 with Python loops over samples and levels (prototypes fixed), ``geometry.dist`` per pair."""
    B, V, _ = z.shape
    flat = z.transpose(0, 1).reshape(B * V, -1)
    lab = labels.repeat(V)
    protos = lam.prototypes.to(z.dtype)
    init = lam.proto_initialized.tolist()
    levels = lam.proto_level.tolist()
    total = z.sum() * 0.0
    for lvl in range(1, lam.num_levels + 1):
        acc = z.sum() * 0.0
        for i in range(flat.shape[0]):
            a = int(lam.leaf_slot[lvl - 1, lab[i]])
            negs = [b for b in range(len(levels)) if levels[b] == lvl and init[b] and b != a]
            if not init[a] or not negs:
                continue
            d_pos = geometry.dist(flat[i], protos[a])
            d_neg = torch.stack([geometry.dist(flat[i], protos[b]) for b in negs]).min()
            acc = acc + torch.relu(d_pos - d_neg + float(lam.margins[lvl - 1]))
        total = total + float(lam.level_weights[lvl - 1]) * acc / flat.shape[0]
    return total


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("geo", ["euclidean", "poincare"])
def test_lam_and_hwc_lam_equal_loop_references_on_random_trees(depth, geo):
    """The vectorised LAM (no per-level loop) equals a per-sample, per-level loop (float64, values and
    gradients), on random unbalanced trees of height 1-4, with classes missing from the batch."""
    from hierviz.geometry import get_geometry
    from hierviz.losses import HWCLoss, LAMLoss
    from hierviz.methods import build_objective

    tree = _random_tree(depth, seed=depth)
    geometry = get_geometry(geo)
    g = torch.Generator().manual_seed(depth)
    C = tree.num_leaves
    present = torch.arange(0, C, 2) if C > 2 else torch.arange(C)  # every other class is missing
    B = 10
    labels = present[torch.randint(0, len(present), (B,), generator=g)]
    raw = torch.randn(B, 2, 6, generator=g, dtype=torch.float64)
    z0 = torch.nn.functional.normalize(raw, dim=-1) if geo == "euclidean" else geometry.expmap0(0.4 * raw)
    lam = LAMLoss(tree, geometry, margins=0.3)
    lam(z0, labels)  # training call: prototypes of the present ancestors from this batch
    lam.eval()  # fixed prototypes from here on
    z = z0.clone().requires_grad_()
    got = lam(z, labels)
    (g_got,) = torch.autograd.grad(got, z)
    z2 = z0.clone().requires_grad_()
    want = _lam_loop_reference(lam, z2, labels, geometry)
    (g_want,) = torch.autograd.grad(want, z2) if want.requires_grad else (torch.zeros_like(z2),)
    torch.testing.assert_close(got.detach(), want.detach(), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(g_got, g_want, rtol=1e-8, atol=1e-10)
    if depth == 1:
        assert lam.num_levels == 0 and got.item() == 0.0
    else:
        assert got.item() > 0.0  # margins 0.3 on random embeddings: active hinges, so the comparison bites
    # the objective HWC+LAM is the weighted sum of its terms (one call, the same numbers)
    obj = build_objective(
        "hwc+lam", tree, geometry, cone_weight=0.0, center_weight=0.0, cpcc_weight=0.0
    )  # the paper's loss
    obj.eval()
    obj.term("lam").load_state_dict(lam.state_dict())
    obj.term("lam").margins, obj.term("lam").level_weights = lam.margins, lam.level_weights
    total, terms = obj(z0, labels)
    hwc = HWCLoss(tree, geometry, tau=obj.term("hwc").tau, alpha=obj.term("hwc").alpha, gamma=obj.term("hwc").gamma)
    torch.testing.assert_close(terms["hwc"], hwc(z0, labels), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(terms["lam"], lam(z0, labels), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(total, terms["hwc"] + obj.weights["lam"] * terms["lam"], rtol=1e-12, atol=1e-12)
