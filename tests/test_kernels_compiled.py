"""The compiled fused Poincaré kernel (the CUDA default) equals the reference."""

from __future__ import annotations

import pytest
import torch

from hierviz.geometry import _kernels as K
from hierviz.geometry.poincare import math as pm


def _points(n=48, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, d, generator=g, dtype=torch.float64)
    return v / v.norm(dim=-1, keepdim=True) * torch.rand(n, 1, generator=g, dtype=torch.float64) * 0.95


def _value_and_grad(fn, x, w):
    xx = x.clone().requires_grad_()
    out = fn(xx)
    (out * w).sum().backward()
    return out.detach(), xx.grad


@pytest.mark.slow
def test_compiled_kernel_equals_the_reference_in_float64():
    torch._dynamo.reset()
    x, y = _points(), _points(20, seed=1)
    w = torch.randn(48, 48, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    ref = _value_and_grad(lambda t: pm.pairwise_dist_reference(t, None, 1.0), x, w)
    try:
        K.compile_kernels(True)  # the kernels the CUDA path compiles by default, here on the CPU
        got = _value_and_grad(lambda t: K.poincare_pairwise_dist(t, None, 1.0), x, w)
        got_xy = K.poincare_pairwise_dist(x, y, 1.0)
    finally:
        K.compile_kernels(False)
    torch.testing.assert_close(got[0], ref[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(got[1], ref[1], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(got_xy, pm.pairwise_dist_reference(x, y, 1.0), rtol=0, atol=1e-12)
    assert torch.equal(got[0], got[0].T) and bool((got[0].diagonal() == 0).all())


def test_kernel_choice_cpu_eager_cuda_compiled_and_pure_inside_a_compiled_graph(monkeypatch):
    x = _points()
    assert K._kernels(x) == (K._fwd_inplace, K._bwd_inplace)
    seen = []

    def probe(t):
        seen.append(K._kernels(t))
        return K.poincare_pairwise_dist(t, None, 1.0)

    torch._dynamo.reset()
    torch.compile(probe, backend="eager", fullgraph=True)(x)
    assert (K._fwd_elementwise, K._bwd_elementwise) in seen


def test_a_failing_compiled_cuda_kernel_falls_back_to_eager_with_a_warning(monkeypatch):
    def broken(*args):
        raise RuntimeError("no triton here")

    monkeypatch.setattr(K, "_CUDA_KERNELS", (broken, broken))
    monkeypatch.setattr(K, "_CUDA_FAILED", False)
    monkeypatch.setattr(
        K, "_kernels", lambda t: K._CUDA_KERNELS if not K._CUDA_FAILED else (K._fwd_inplace, K._bwd_inplace)
    )
    x = _points()
    w = torch.randn(48, 48, dtype=torch.float64)
    with pytest.warns(RuntimeWarning, match="no triton here"):
        got = _value_and_grad(lambda t: K.poincare_pairwise_dist(t, None, 1.0), x, w)
    assert K._CUDA_FAILED
    ref = _value_and_grad(lambda t: pm.pairwise_dist_reference(t, None, 1.0), x, w)
    torch.testing.assert_close(got[0], ref[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(got[1], ref[1], rtol=1e-10, atol=1e-10)


def test_the_backward_uses_the_kernel_kind_of_its_forward(monkeypatch):
    calls = []
    pair = (
        lambda *a: (calls.append("fwd"), K._fwd_elementwise(*a))[1],
        lambda *a: (calls.append("bwd"), K._bwd_elementwise(*a))[1],
    )
    monkeypatch.setattr(K, "_kernels", lambda t: pair)
    x = _points().requires_grad_()
    out = K.poincare_pairwise_dist(x, None, 1.0)
    monkeypatch.setattr(K, "_kernels", lambda t: (K._fwd_inplace, K._bwd_inplace))  # switched before backward
    out.sum().backward()
    assert calls == ["fwd", "bwd"]
