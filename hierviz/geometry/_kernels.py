"""The closed-form pairwise-distance kernel shared by the hyperbolic geometries.

``scaled_asinh_sqrt(q) = scale · asinh(sqrt(q))`` over a Gram-form argument ``q`` (B × B, no
B × B × d tensor), with an analytic backward that stays finite on the diagonal
(``q = 0``); ``pairwise_dist`` of the Poincaré ball and the Lorentz model build ``q`` from
Gram matrices and call it. Tested against geoopt and with float64 gradcheck/gradgradcheck.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["scaled_asinh_sqrt", "augmented_gram", "SQ_EPS"]

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


def _poincare_q(x: Tensor, y: Tensor | None, c: float) -> tuple[Tensor, Tensor, Tensor]:
    """``q_ij = c a_i b_j (‖x_i‖² + ‖y_j‖² − 2⟨x_i, y_j⟩)`` from one GEMM; returns (q, a, b)."""
    nx, a = _poincare_parts(x, c)
    if y is None:
        g = x @ x.transpose(-1, -2)
        g = 0.5 * (g + g.transpose(-1, -2))  # exactly symmetric
        ny, b = nx, a
    else:
        g = x @ y.transpose(-1, -2)
        ny, b = _poincare_parts(y, c)
    w = (nx[..., :, None] + ny[..., None, :]).sub_(g, alpha=2.0)
    sc = c**0.5
    # (√c a_i)(√c b_j) as one product: exactly symmetric when y is None (w is)
    return w.mul_((sc * a)[..., :, None] * (sc * b)[..., None, :]), a, b


def _poincare_grads(
    p: Tensor, q: Tensor, x: Tensor, y: Tensor | None, a: Tensor, b: Tensor, c: float, need_x: bool, need_y: bool
) -> tuple[Tensor | None, Tensor | None]:
    """Gradients w.r.t. ``x`` (and ``y``) from ``p = ∂L/∂q`` (zero where q was floored / on the diagonal).

    ``∂q_ij/∂x_i = 2c a_i [b_j (x_i − y_j) + q_ij x_i]``, so
    ``∇x = 2c a ⊙ (x ⊙ Σ_j p_ij (b_j + q_ij) − (p ⊙ b) y)`` (one GEMM per side); the symmetric
    case (``y is None``) adds both sides in a single GEMM with ``p + pᵀ``.
    """
    pq = p * q
    if y is None:
        ps = p + p.transpose(-1, -2)
        r = ps * a[..., None, :]
        coef = r.sum(-1) + pq.sum(-1) + pq.sum(-2)
        gx = (x * coef[..., None]).sub_(r @ x).mul_((2.0 * c) * a[..., None])
        return gx, None
    gx = gy = None
    if need_x:
        r = p * b[..., None, :]
        coef = r.sum(-1) + pq.sum(-1)
        gx = (x * coef[..., None]).sub_(r @ y).mul_((2.0 * c) * a[..., None])
    if need_y:
        s = p * a[..., :, None]
        coef = s.sum(-2) + pq.sum(-2)
        gy = (y * coef[..., None]).sub_(s.transpose(-1, -2) @ x).mul_((2.0 * c) * b[..., None])
    return gx, gy


class _PoincarePairwise(torch.autograd.Function):
    """Poincaré pairwise distance, forward and backward from one shared Gram matrix each.

    Forward: one GEMM ``x yᵀ`` and elementwise work. Backward: the analytic gradient of
    :func:`_poincare_grads` (one GEMM per input that needs a gradient, one in all for
    ``y=None``) instead of autograd through the augmented GEMM, the concatenations and the
    norms (three GEMMs and a dozen elementwise passes). Saves ``q`` (B×M) and a mask.
    Under ``create_graph=True`` the backward recomputes ``q`` from ``x`` with differentiable
    ops, so higher derivatives are exact.
    """

    @staticmethod
    def forward(ctx, x: Tensor, y: Tensor | None, c: float, eps: float) -> Tensor:  # type: ignore[override]
        q, a, b = _poincare_q(x, y, c)
        below = q < eps
        qc = q.clamp_min_(eps)
        t = qc.add(1.0).sqrt_()
        s = qc.sqrt()
        out = (qc / (t + 1.0)).add_(s).log1p_().mul_(2.0 / c**0.5)  # 2/√c · arsinh(√q)
        if y is None:
            out.diagonal(dim1=-2, dim2=-1).zero_()
            below.diagonal(dim1=-2, dim2=-1).fill_(True)
        ctx.c, ctx.eps, ctx.sym = c, eps, y is None
        ctx.save_for_backward(x, y if y is not None else x, qc, a, b, below)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        x, y, qc, a, b, below = ctx.saved_tensors
        c, sym = ctx.c, ctx.sym
        need_x, need_y = ctx.needs_input_grad[0], (not sym) and ctx.needs_input_grad[1]
        yy = None if sym else y
        if torch.is_grad_enabled():  # create_graph: differentiable recomputation from the inputs
            q, a, b = _poincare_q(x, yy, c)
            qd = q.clamp_min(ctx.eps)
            p = (grad * (c**-0.5) / (qd.sqrt() * (1.0 + qd).sqrt())).masked_fill(below, 0.0)
            gx, gy = _poincare_grads(p, qd, x, yy, a, b, c, need_x, need_y)
            return gx, gy, None, None
        # d/dq [2/√c · arsinh(√q)] = 1 / (√c √q √(1+q))
        p = grad / (qc.sqrt().mul_((1.0 + qc).sqrt_()).mul_(c**0.5))
        p.masked_fill_(below, 0.0)
        gx, gy = _poincare_grads(p, qc, x, yy, a, b, c, need_x, need_y)
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
