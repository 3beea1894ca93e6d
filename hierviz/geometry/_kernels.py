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
