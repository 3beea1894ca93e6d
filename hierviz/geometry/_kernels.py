"""The closed-form pairwise-distance kernel shared by the hyperbolic geometries.

``scaled_asinh_sqrt(q) = scale · asinh(sqrt(q))`` over a Gram-form argument ``q`` (B × B, no
B × B × d tensor), with an analytic backward that stays finite on the diagonal
(``q = 0``); ``pairwise_dist`` of the Poincaré ball and the Lorentz model build ``q`` from
Gram matrices and call it. Tested against geoopt and with float64 gradcheck/gradgradcheck.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

__all__ = ["scaled_asinh_sqrt", "augmented_gram", "poincare_pairwise_dist", "compile_kernels", "SQ_EPS"]

#: Floor on the squared distance under the square root of every closed-form pairwise distance
#: (``sqrt(max(w, eps))``), per dtype. It keeps the derivative of the square root finite on the
#: diagonal (``arcosh'(1) = ∞``) while moving a distance by at most ``sqrt(eps)``.
SQ_EPS = {torch.float32: 1e-12, torch.float64: 1e-24}


def _sq_eps(dtype: torch.dtype) -> float:
    return SQ_EPS.get(dtype, 1e-12)


def augmented_gram(left: Tensor, right: Tensor, symmetric: bool) -> Tensor:
    """``left @ rightᵀ``: one matmul yields ``a_i b_j (‖x_i‖² + ‖y_j‖² − 2⟨x_i, y_j⟩)``.

    ``left_i = a_i [−2 x_i, ‖x_i‖², 1]`` and ``right_j = b_j [y_j, 1, ‖y_j‖²]`` (built by the
    caller), so the squared-distance matrix costs one GEMM and no ``B×M`` broadcasting passes.

    Parameters
    ----------
    left : Tensor, shape (..., B, D + 2)
    right : Tensor, shape (..., M, D + 2)
    symmetric : bool
        ``y is None`` (``B == M``): average with the transpose so the result is exactly symmetric.

    Returns
    -------
    Tensor, shape (..., B, M)
    """
    if symmetric:
        g = (0.5 * left) @ right.transpose(-1, -2)
        return g + g.transpose(-1, -2)
    return left @ right.transpose(-1, -2)


class _ScaledAsinhSqrt(torch.autograd.Function):
    """``scale · arsinh(sqrt(max(q, eps)))`` with a fused backward (pairwise distances).

    Forward reuses buffers in place; backward is one division by the saved
    ``2·sqrt(q)·sqrt(1+q)/scale``. With ``zero_diag`` the last-two-dims diagonal of the
    output is set to exactly 0 and receives zero gradient. Entries floored at ``eps``
    receive zero gradient (the derivative of ``max``). When autograd records the backward
    (``create_graph=True``, e.g. gradient penalties or ``gradgradcheck``) the derivative is
    recomputed from the saved input with differentiable ops, so higher derivatives are exact.
    """

    @staticmethod
    def forward(ctx, q: Tensor, eps: float, scale: float, zero_diag: bool) -> Tensor:  # type: ignore[override]
        below = q < eps  # kept as a mask (no host sync); their gradient is 0
        qc = q.clamp_min(eps)
        s = qc.sqrt()
        t = qc.add(1.0).sqrt_()  # sqrt(1 + q)
        out = qc.div_(t.add(1.0)).add_(s).log1p_().mul_(scale)
        deriv = s.mul_(t).mul_(2.0 / scale)  # 1 / (d out / d q)
        if zero_diag:
            out.diagonal(dim1=-2, dim2=-1).zero_()
        ctx.eps, ctx.scale, ctx.zero_diag = eps, scale, zero_diag
        ctx.save_for_backward(q, deriv, below)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        q, deriv, below = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: differentiable recomputation
            qc = q.clamp_min(ctx.eps)
            g = (grad / (qc.sqrt() * (1.0 + qc).sqrt() * (2.0 / ctx.scale))).masked_fill(below, 0.0)
            if ctx.zero_diag:
                n = g.shape[-1]
                g = g.masked_fill(torch.eye(n, dtype=torch.bool, device=g.device), 0.0)
            return g, None, None, None
        g = (grad / deriv).masked_fill_(below, 0.0)
        if ctx.zero_diag:
            g.diagonal(dim1=-2, dim2=-1).zero_()
        return g, None, None, None


def scaled_asinh_sqrt(q: Tensor, eps: float, scale: float, zero_diag: bool = False) -> Tensor:
    """``scale · arsinh(sqrt(max(q, eps)))`` elementwise, optionally with a zero diagonal.

    Parameters
    ----------
    q : Tensor, shape (..., B, M)
        Non-negative (up to rounding) squared quantities, float32/float64.
    eps : float
        Floor on ``q``; keeps the derivative ``1/(2 sqrt(q) sqrt(1+q))`` finite.
    scale : float or 0-d Tensor
        Output scale (``2/sqrt(c)`` for a ball of curvature ``-c``); a tensor that requires
        grad (a learnable curvature) is multiplied outside the fused kernel so its gradient
        flows.
    zero_diag : bool
        Set the diagonal of the last two dims to exactly 0 (``B == M``).

    Returns
    -------
    Tensor, shape (..., B, M)
    """
    if isinstance(scale, Tensor) and scale.requires_grad:
        return _ScaledAsinhSqrt.apply(
            q, float(eps.detach()) if isinstance(eps, Tensor) else float(eps), 1.0, bool(zero_diag)
        ) * scale.to(q.dtype)
    eps = float(eps.detach()) if isinstance(eps, Tensor) else float(eps)
    return _ScaledAsinhSqrt.apply(q, eps, float(scale), bool(zero_diag))


# --------------------------------------------------------------------------- fused Poincaré


def _poincare_parts(x: Tensor, c: float) -> tuple[Tensor, Tensor]:
    """``‖x_i‖²`` (..., B) and the conformal factor ``a_i = 1 / (1 − c‖x_i‖²)`` (..., B)."""
    n = (x * x).sum(-1)
    return n, (1.0 - c * n).clamp_min(torch.finfo(x.dtype).tiny).reciprocal()


def _fwd_elementwise(
    g: Tensor, nx: Tensor, ny: Tensor, a: Tensor, b: Tensor, c: float, eps: float, sym: bool
) -> tuple[Tensor, Tensor, Tensor]:
    """From the Gram matrix to ``(d, max(q, eps), q < eps)``; every op is elementwise on (B, M).

    ``q_ij = c a_i b_j (‖x_i‖² + ‖y_j‖² − 2 g_ij)``, averaged with its transpose when
    ``sym`` (exactly symmetric), and ``d = (2/√c) arsinh(√q)`` written as
    ``log1p(√q + q / (1 + √(1 + q)))`` (accurate at small ``q``). Pure (no in-place ops), so
    :func:`compile_kernels` can fuse it into one pass; :func:`_fwd_inplace` is the eager
    twin that reuses buffers.
    """
    q = (nx[..., :, None] - 2.0 * g + ny[..., None, :]) * (c * a)[..., :, None] * b[..., None, :]
    if sym:
        q = 0.5 * (q + q.transpose(-1, -2))
    below = q < eps
    qc = q.clamp_min(eps)
    out = torch.log1p(qc.sqrt() + qc / (1.0 + (1.0 + qc).sqrt())) * (2.0 / c**0.5)
    return out, qc, below


def _fwd_inplace(
    g: Tensor, nx: Tensor, ny: Tensor, a: Tensor, b: Tensor, c: float, eps: float, sym: bool
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`_fwd_elementwise` with the (B, M) buffers reused in place (eager mode: fewer page-faulting allocations)."""
    q = g.mul_(-2.0).add_(nx[..., :, None]).add_(ny[..., None, :]).mul_((c * a)[..., :, None]).mul_(b[..., None, :])
    if sym:
        # a blocked transpose copy, then a contiguous add: far cheaper on a CPU than a strided read
        q = q.add_(q.transpose(-1, -2).contiguous()).mul_(0.5)
    below = q < eps
    qc = q.clamp_min_(eps)
    t = qc.add(1.0).sqrt_().add_(1.0).reciprocal_().mul_(qc)  # q / (1 + √(1 + q))
    out = t.add_(qc.sqrt()).log1p_().mul_(2.0 / c**0.5)
    return out, qc, below


def _bwd_elementwise(grad: Tensor, qc: Tensor, below: Tensor, c: float) -> tuple[Tensor, Tensor]:
    """``p = ∂L/∂q = grad / (√c √q √(1+q))`` (0 where ``q`` was floored) and ``p ⊙ q``."""
    p = (grad / ((qc * (1.0 + qc)).sqrt() * c**0.5)).masked_fill(below, 0.0)
    return p, p * qc


def _bwd_inplace(grad: Tensor, qc: Tensor, below: Tensor, c: float) -> tuple[Tensor, Tensor]:
    """:func:`_bwd_elementwise` with one (B, M) buffer for ``p`` (eager mode)."""
    p = qc.add(1.0).mul_(qc).sqrt_().mul_(c**0.5).reciprocal_().mul_(grad).masked_fill_(below, 0.0)
    return p, p * qc


_FWD = _fwd_inplace
_BWD = _bwd_inplace

#: On CUDA the elementwise passes run through ``torch.compile`` by default (eager, the
#: ~10 passes over the (B, M) matrix made the fused kernel slower than the autograd reference,
#: 2.38x vs 2.16x ``torch.cdist`` at 4096x128 on an H200; compiled 1.19x at 16384x128). Compiled
#: lazily on the first CUDA call; if compiling fails the eager kernels are used, with a warning.
COMPILE_ON_CUDA = True
_CUDA_KERNELS: tuple | None = None
_CUDA_FAILED = False


def _cuda_kernels() -> tuple:
    global _CUDA_KERNELS
    if _CUDA_KERNELS is None:
        _CUDA_KERNELS = (
            torch.compile(_fwd_elementwise, dynamic=True),
            torch.compile(_bwd_elementwise, dynamic=True),
        )
    return _CUDA_KERNELS


def _kernels(t: Tensor) -> tuple:
    """(forward, backward) elementwise kernels for a tensor: see :data:`COMPILE_ON_CUDA`."""
    if torch.compiler.is_compiling():  # inside a compiled graph: the pure functions, fused by the caller
        return _fwd_elementwise, _bwd_elementwise
    if _FWD is not _fwd_inplace:  # compile_kernels(True): compiled on every device
        return _FWD, _BWD
    if t.is_cuda and COMPILE_ON_CUDA and not _CUDA_FAILED:
        return _cuda_kernels()
    return _fwd_inplace, _bwd_inplace


def _run(fns: tuple, which: int, *args):
    """Call the forward (0) or backward (1) kernel of the pair ``fns`` (from :func:`_kernels`).

    The forward records its pair, so the backward uses the same kind (compiled or eager). A
    failing compiled CUDA kernel falls back to the eager one, with a warning, for good.
    """
    global _CUDA_FAILED
    # Inside a compiled graph (``train.compile_loss``) ``fns`` are the pure functions: call them
    # before comparing kernel pairs, a ``tuple is not tuple`` that torch 2.11's dynamo cannot
    # trace (a graph break that sent every Poincaré objective back to eager on CUDA, H100, 2026-11-26).
    if torch.compiler.is_compiling() or fns is not _CUDA_KERNELS or _CUDA_KERNELS is None:
        return fns[which](*args)
    if _CUDA_FAILED:
        return (_fwd_inplace, _bwd_inplace)[which](*args)
    try:
        return fns[which](*args)
    except Exception as err:  # noqa: BLE001 - e.g. no Triton/compiler on this machine: stay correct, eagerly
        _CUDA_FAILED = True
        warnings.warn(
            f"hierviz: compiling the fused Poincaré kernel failed ({type(err).__name__}: {err}); using the eager "
            "kernel (set hierviz.geometry._kernels.COMPILE_ON_CUDA = False to skip the attempt)",
            RuntimeWarning,
            stacklevel=3,
        )
        return (_fwd_inplace, _bwd_inplace)[which](*args)


#: Use :func:`poincare_pairwise_dist` for CPU tensors too (default False: on a CPU the Poincaré
#: ball keeps the reference autograd path, so CPU results stay bit-identical to hierviz 0.2's
#: presets; the fused kernel is ~1.5x faster there but rounds differently).
FUSED_ON_CPU = False


def compile_kernels(enabled: bool = True, **compile_kwargs) -> None:
    """Fuse the elementwise parts of :func:`poincare_pairwise_dist` with ``torch.compile`` (optional).

    On CUDA tensors the compiled kernels are the default already (:data:`COMPILE_ON_CUDA`);
    this switch compiles them for every device (a CPU too, where eager mode is the tested
    reference and compiling costs tens of seconds). The fused kernels cut the ~10 elementwise
    passes over the (B, M) matrix to one each way (the GEMMs stay cuBLAS). Set by
    ``train.compile`` (see :mod:`hierviz.experiments.config`) or by hand; idempotent.

    Parameters
    ----------
    enabled : bool, default True
        ``False`` restores the eager functions.
    **compile_kwargs
        Passed to ``torch.compile`` (default ``dynamic=True``: one graph for every batch size).
    """
    global _FWD, _BWD
    if not enabled:
        _FWD, _BWD = _fwd_inplace, _bwd_inplace
        return
    kw = {"dynamic": True, **compile_kwargs}
    _FWD = torch.compile(_fwd_elementwise, **kw)
    _BWD = torch.compile(_bwd_elementwise, **kw)


def _mv(m: Tensor, v: Tensor) -> Tensor:
    """``m @ v`` for a batch of matrices (..., B, M) and vectors (..., M) → (..., B)."""
    return (m @ v[..., :, None])[..., 0]


class _PoincarePairwise(torch.autograd.Function):
    """Poincaré pairwise distance, forward and backward over one shared Gram matrix.

    Forward: one GEMM ``x yᵀ`` and elementwise work (:func:`_fwd_elementwise`). Backward,
    with ``p = ∂L/∂q`` and ``∂q_ij/∂x_i = 2c a_i [b_j (x_i − y_j) + q_ij x_i]``::

        ∇x = 2c a ⊙ (x ⊙ (p b + Σ_j p_ij q_ij) − p (b ⊙ y))
        ∇y = 2c b ⊙ (y ⊙ (pᵀ a + Σ_i p_ij q_ij) − pᵀ (a ⊙ x))

    (for ``y=None`` both sides add up): the (B, M) matrix is only read by GEMMs and
    matrix-vector products (a transposed operand costs nothing in BLAS), instead of autograd
    through an augmented GEMM, concatenations and transposed adds. Saves ``max(q, eps)`` and
    the floor mask. Under ``create_graph=True`` the backward recomputes ``q`` from the inputs
    with differentiable ops, so higher derivatives are exact.
    """

    @staticmethod
    def forward(ctx, x: Tensor, y: Tensor | None, c: float, eps: float) -> Tensor:  # type: ignore[override]
        sym = y is None
        nx, a = _poincare_parts(x, c)
        ny, b = (nx, a) if sym else _poincare_parts(y, c)
        g = x @ (x if sym else y).transpose(-1, -2)
        fns = _kernels(g)
        out, qc, below = _run(fns, 0, g, nx, ny, a, b, c, eps, sym)
        if sym:  # the diagonal: exactly 0, no gradient
            out.diagonal(dim1=-2, dim2=-1).zero_()
            below.diagonal(dim1=-2, dim2=-1).fill_(True)
        ctx.c, ctx.eps, ctx.sym, ctx.fns = c, eps, sym, fns
        ctx.save_for_backward(x, x if sym else y, qc, a, b, below)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        x, y, qc, a, b, below = ctx.saved_tensors
        c, sym = ctx.c, ctx.sym
        if torch.is_grad_enabled():  # create_graph: differentiable recomputation from the inputs
            nx, a = _poincare_parts(x, c)
            ny, b = (nx, a) if sym else _poincare_parts(y, c)
            _, qc, _ = _fwd_elementwise(x @ y.transpose(-1, -2), nx, ny, a, b, c, ctx.eps, sym)
            p, pq = _bwd_elementwise(grad, qc, below, c)
        else:
            p, pq = _run(ctx.fns, 1, grad, qc, below, c)
        pt = p.transpose(-1, -2)
        two_c = 2.0 * c
        ax, by = a[..., None] * x, b[..., None] * y
        if sym:
            coef = _mv(p, a) + _mv(pt, a) + pq.sum(-1) + pq.sum(-2)
            gx = (x * coef[..., None] - p @ ax - pt @ ax) * (two_c * a[..., None])
            return gx, None, None, None
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = (x * (_mv(p, b) + pq.sum(-1))[..., None] - p @ by) * (two_c * a[..., None])
        if ctx.needs_input_grad[1]:
            gy = (y * (_mv(pt, a) + pq.sum(-2))[..., None] - pt @ ax) * (two_c * b[..., None])
        return gx, gy, None, None


def poincare_pairwise_dist(x: Tensor, y: Tensor | None, c: float, eps: float | None = None) -> Tensor:
    r"""All-pairs Poincaré distances with an analytic backward over one shared Gram matrix.

    ``d_ij = (2/√c) arsinh(√q_ij)``, ``q_ij = max(c‖x_i − y_j‖² / ((1 − c‖x_i‖²)(1 − c‖y_j‖²)), eps)``
    (paper 01 Eq. 2 in closed form). The fast path of
    :func:`hierviz.geometry.poincare.math.pairwise_dist`; the reference is the autograd
    path through :func:`augmented_gram` and :func:`scaled_asinh_sqrt`
    (``pairwise_dist_reference``), which it equals to rounding in values and gradients
    (tests/test_fused_losses.py, float64 gradcheck and gradgradcheck, geoopt).

    Parameters
    ----------
    x : Tensor, shape (..., B, d), float32/float64
        Points inside the ball of curvature ``-c``.
    y : Tensor, shape (..., M, d), or None
        ``None``: ``x`` against itself; the diagonal is exactly 0 with zero gradient.
    c : float
        Curvature magnitude ``> 0`` (a Python float: a learnable curvature takes the
        reference path).
    eps : float, optional
        Floor on ``q`` (default ``c · SQ_EPS[dtype]``); floored entries get zero gradient.

    Returns
    -------
    Tensor, shape (..., B, M)

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[0.3, 0.0], [0.0, -0.4]], dtype=torch.float64)
    >>> d = poincare_pairwise_dist(x, None, 1.0)
    >>> round(float(d[0, 1]), 6), float(d[0, 0])  # arcosh(1 + 2·0.25/(0.91·0.84))
    (1.089137, 0.0)
    """
    if eps is None:
        eps = c * _sq_eps(x.dtype)
    return _PoincarePairwise.apply(x, y, float(c), float(eps))
