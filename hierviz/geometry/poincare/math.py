r"""Poincaré-ball maths as pure tensor functions of the curvature magnitude ``c > 0`` (curvature ``−c``).

No classes and no input checks: :class:`~hierviz.geometry.PoincareBall` validates its inputs
and calls :func:`pairwise_dist` (our closed Gram form). For the maps, the projection and the
broadcast distance the class keeps calling ``geoopt.PoincareBall`` (κ-stereographic, with its
Taylor switch near ``c = 0``), so its results are bit-identical to hierviz 0.1; the functions
here are the same formulas written out as in the papers, tested against geoopt in
``tests/test_geometry_math.py`` (float64: agreement to ~1e-12).

Formulas (Ganea et al., NeurIPS 2018, "Hyperbolic neural networks"; paper 01 §3.1, Eq. 2):

.. math::
    x \oplus_c y = \frac{(1 + 2c\langle x,y\rangle + c\|y\|^2)\,x + (1 - c\|x\|^2)\,y}
                        {1 + 2c\langle x,y\rangle + c^2\|x\|^2\|y\|^2},\qquad
    \lambda^c_x = \frac{2}{1 - c\|x\|^2},

.. math::
    d_c(x, y) = \frac{2}{\sqrt c}\operatorname{artanh}\big(\sqrt c\,\|{-x} \oplus_c y\|\big),\quad
    \exp^c_0(v) = \tanh(\sqrt c\|v\|)\frac{v}{\sqrt c\|v\|},\quad
    \log^c_0(x) = \operatorname{artanh}(\sqrt c\|x\|)\frac{x}{\sqrt c\|x\|}.

Examples
--------
>>> import torch
>>> from hierviz.geometry.poincare import math as pm
>>> x = torch.tensor([[0.3, 0.0]], dtype=torch.float64)
>>> y = torch.tensor([[0.0, -0.4]], dtype=torch.float64)
>>> round(float(pm.dist(x, y, c=1.0)), 6)
1.089137
>>> torch.allclose(pm.logmap0(pm.expmap0(y, c=2.0), c=2.0), y)
True
"""

from __future__ import annotations

import torch

from hierviz.geometry import _kernels
from hierviz.geometry._kernels import _sq_eps, augmented_gram, poincare_pairwise_dist, scaled_asinh_sqrt

Tensor = torch.Tensor

__all__ = [
    "mobius_add",
    "lambda_x",
    "dist",
    "pairwise_dist",
    "pairwise_dist_reference",
    "proj",
    "expmap0",
    "logmap0",
    "expmap",
    "logmap",
    "BALL_EPS",
]

#: Margin of :func:`proj` per dtype: points are kept at norm ``<= (1 − eps)/sqrt(c)`` (geoopt's values).
BALL_EPS = {torch.float32: 4e-3, torch.float64: 1e-5}

_MIN_NORM = 1e-15


def _norm(x: Tensor) -> Tensor:
    return x.norm(dim=-1, keepdim=True, p=2).clamp_min(_MIN_NORM)


def _artanh(z: Tensor) -> Tensor:
    """``artanh`` clamped only at the largest float below 1 of the dtype (finite, no lost digits).

    geoopt clamps at ``1 − 1e-7`` in every dtype, which caps float64 distances at ``≈ 16.8/√c``
    (hierviz 0.2); ``torch.atanh`` itself is accurate up to the last representable ``z < 1``.
    """
    top = 1.0 - torch.finfo(z.dtype).eps / 2  # largest float < 1
    return torch.atanh(z.clamp(-top, top))


def _one_minus_cx2(x: Tensor, c: float) -> Tensor:
    """``1 − c‖x‖²`` as ``(1 − √c‖x‖)(1 + √c‖x‖)``: exact near the boundary (Sterbenz), floored at ``tiny``."""
    z = c**0.5 * x.norm(dim=-1, p=2)
    return ((1.0 - z) * (1.0 + z)).clamp_min(torch.finfo(x.dtype).tiny)


def mobius_add(x: Tensor, y: Tensor, c: float) -> Tensor:
    r"""Möbius addition :math:`x \oplus_c y` (Ganea et al. 2018, Eq. 4 with curvature ``−c``).

    Parameters
    ----------
    x, y : Tensor, shape (..., d), broadcastable
        Points of the ball of radius ``1/sqrt(c)``.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d)
        ``x ⊕_c y``; ``0 ⊕ y = y`` and ``(−x) ⊕ x = 0``.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([0.2, 0.1], dtype=torch.float64)
    >>> bool(mobius_add(-x, x, c=1.0).abs().max() < 1e-15)
    True
    """
    x2 = (x * x).sum(-1, keepdim=True)
    y2 = (y * y).sum(-1, keepdim=True)
    xy = (x * y).sum(-1, keepdim=True)
    num = (1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y
    den = 1 + 2 * c * xy + c**2 * x2 * y2
    return num / den.clamp_min(_MIN_NORM)


def lambda_x(x: Tensor, c: float) -> Tensor:
    r"""Conformal factor :math:`\lambda^c_x = 2/(1 - c\|x\|^2)`, shape ``(..., 1)``.

    Parameters
    ----------
    x : Tensor, shape (..., d)
        Points inside the ball.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., 1)
        ``>= 2``; it tends to 2 as ``c → 0`` (twice the Euclidean metric).
    """
    return 2.0 / _one_minus_cx2(x, c).unsqueeze(-1)


def dist(x: Tensor, y: Tensor, c: float) -> Tensor:
    r"""Geodesic distance :math:`\frac{2}{\sqrt c}\operatorname{arsinh}\frac{\sqrt c\,\|x-y\|}{\sqrt{(1-c\|x\|^2)(1-c\|y\|^2)}}`, broadcast.

    Equal to paper 01 Eq. 2, :math:`\frac{1}{\sqrt c}\operatorname{arcosh}\big(1 + \frac{2c\|x-y\|^2}
    {(1-c\|x\|^2)(1-c\|y\|^2)}\big)` (the paper omits ``1/sqrt(c)``; same at ``c = 1``), and to
    :math:`\frac{2}{\sqrt c}\operatorname{artanh}(\sqrt c\|{-x}\oplus_c y\|)`. The arsinh form (the one
    :func:`pairwise_dist` uses) takes ``x − y`` directly and ``1 − c‖x‖²`` as
    ``(1 − √c‖x‖)(1 + √c‖x‖)``, so it keeps every digit up to the boundary: no artanh clamp
    (geoopt's caps float64 distances at ``≈ 16.8/√c``; two float64 points at norm ``1 − 1e-9``
    on opposite sides are 42.83 apart, as mpmath gives). ``dist(x, x)`` is exactly 0 with a zero
    gradient.

    Parameters
    ----------
    x, y : Tensor, shape (..., d), broadcastable
        Points inside the ball.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (...)
        Non-negative distances.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1 - 1e-9, 0.0]], dtype=torch.float64)
    >>> round(float(dist(x, -x, 1.0)), 4)  # 4·artanh(1 − 1e-9)
    42.8328
    """
    sc = c**0.5
    diff = (x - y).norm(dim=-1, p=2)
    den = (_one_minus_cx2(x, c) * _one_minus_cx2(y, c)).sqrt()
    return (2.0 / sc) * torch.asinh(sc * diff / den)


def pairwise_dist(x: Tensor, y: Tensor | None, c: float) -> Tensor:
    r"""All-pairs distances in closed form over one Gram matrix (paper 01 Eq. 2), ``O(B·M)`` memory.

    With :math:`q_{ij} = \max\big(\frac{c\,\|x_i - y_j\|^2}{(1-c\|x_i\|^2)(1-c\|y_j\|^2)}, c\,\epsilon\big)`
    returns :math:`\frac{2}{\sqrt c}\operatorname{arsinh}\sqrt{q_{ij}}`
    (:func:`~hierviz.geometry._kernels.scaled_asinh_sqrt`, finite gradients on the diagonal).

    Parameters
    ----------
    x : Tensor, shape (..., B, d)
        Points inside the ball, float32/float64.
    y : Tensor, shape (..., M, d) or None
        Second set (same dtype/device); ``None``: ``x`` against itself, with an exactly zero
        diagonal whose gradient is zero.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., B, M)

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[0.3, 0.0], [0.0, -0.4]], dtype=torch.float64)
    >>> torch.allclose(pairwise_dist(x, None, 1.0)[0, 1], dist(x[0], x[1], 1.0))
    True

    Notes
    -----
    On a GPU (or on a CPU with ``hierviz.geometry._kernels.FUSED_ON_CPU = True``) a fixed
    curvature (a float, or a tensor without gradient) takes the fused path,
    :func:`~hierviz.geometry._kernels.poincare_pairwise_dist` (analytic backward, one GEMM
    each way). A CPU tensor, or a learnable curvature, takes :func:`pairwise_dist_reference`
    (its autograd graph reaches ``c``): the CPU numbers of every preset stay bit-identical to
    earlier releases. The two agree to rounding (tests/test_fused_losses.py).
    """
    fixed_c = not (isinstance(c, Tensor) and c.requires_grad)
    if fixed_c and (x.device.type != "cpu" or _kernels.FUSED_ON_CPU):
        return poincare_pairwise_dist(x, y, float(c))
    return pairwise_dist_reference(x, y, c)


def pairwise_dist_reference(x: Tensor, y: Tensor | None, c: float | Tensor) -> Tensor:
    """:func:`pairwise_dist` by autograd through an augmented GEMM (the reference; learnable ``c``).

    Same parameters and result as :func:`pairwise_dist`; ``c`` may be a 0-d tensor that
    requires grad.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[0.3, 0.0], [0.0, -0.4]], dtype=torch.float64)
    >>> torch.allclose(pairwise_dist_reference(x, None, 1.0), pairwise_dist(x, None, 1.0))
    True
    """
    tiny = torch.finfo(x.dtype).tiny

    def parts(t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        t2 = (t * t).sum(-1, keepdim=True)
        return t, t2, 1.0 / (1.0 - c * t2).clamp_min(tiny)

    xs, x2, a = parts(x)
    ys, y2, b = (xs, x2, a) if y is None else parts(y)
    # q_ij = c·‖x_i − y_j‖² / ((1 − c‖x_i‖²)(1 − c‖y_j‖²)) from a single GEMM
    left = (c * a) * torch.cat([-2.0 * xs, x2, torch.ones_like(x2)], dim=-1)
    right = b * torch.cat([ys, torch.ones_like(y2), y2], dim=-1)
    q = augmented_gram(left, right, y is None)
    return scaled_asinh_sqrt(q, c * _sq_eps(x.dtype), 2.0 / c**0.5, zero_diag=y is None)


def proj(x: Tensor, c: float, eps: float | None = None) -> Tensor:
    """Clip norms to ``(1 − eps)/sqrt(c)`` (paper 01 §3.1: "clip norms to < 1/sqrt(−κ) − ε").

    Parameters
    ----------
    x : Tensor, shape (..., d)
        Any finite vectors.
    c : float
        Curvature magnitude, ``c > 0``.
    eps : float, optional
        Margin; default :data:`BALL_EPS` for the dtype (4e-3 float32, 1e-5 float64).

    Returns
    -------
    Tensor, shape (..., d)
        ``x`` where its norm is within the bound, else ``x`` rescaled onto it.
    """
    if eps is None:
        eps = BALL_EPS.get(x.dtype, 4e-3)
    n = _norm(x)
    maxnorm = (1.0 - eps) / c**0.5
    return torch.where(n > maxnorm, x / n * maxnorm, x)


def expmap0(v: Tensor, c: float) -> Tensor:
    r"""Exponential map at the origin, :math:`\tanh(\sqrt c\|v\|)\,v/(\sqrt c\|v\|)`, then :func:`proj`.

    Parameters
    ----------
    v : Tensor, shape (..., d)
        Tangent vectors at the origin.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d)
        Points with norm ``<= (1 − eps)/sqrt(c)``.
    """
    sc = c**0.5
    n = _norm(v)
    return proj(torch.tanh(sc * n) * v / (sc * n), c)


def logmap0(x: Tensor, c: float) -> Tensor:
    r"""Logarithmic map at the origin, :math:`\operatorname{artanh}(\sqrt c\|x\|)\,x/(\sqrt c\|x\|)`.

    Parameters
    ----------
    x : Tensor, shape (..., d)
        Points inside the ball.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d)
        Tangent vectors at the origin; their norm is the distance to the origin (no clamp
        below the largest float under 1: a float64 point at norm ``1 − 1e-12`` maps to norm
        14.16, as mpmath gives; geoopt stops at 8.41).
    """
    sc = c**0.5
    n = _norm(x)
    return _artanh(sc * n) * x / (sc * n)


def expmap(x: Tensor, v: Tensor, c: float) -> Tensor:
    r"""Exponential map at ``x``: :math:`x \oplus_c \tanh(\sqrt c\,\lambda^c_x\|v\|/2)\,v/(\sqrt c\|v\|)`, then :func:`proj`.

    Parameters
    ----------
    x : Tensor, shape (..., d)
        Base points inside the ball.
    v : Tensor, shape (..., d)
        Tangent vectors at ``x`` (broadcastable with ``x``).
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d)
    """
    sc = c**0.5
    n = _norm(v)
    second = torch.tanh(sc * lambda_x(x, c) * n / 2.0) * v / (sc * n)
    return proj(mobius_add(x, second, c), c)


def logmap(x: Tensor, y: Tensor, c: float) -> Tensor:
    r"""Logarithmic map of ``y`` at ``x``: :math:`\frac{2}{\sqrt c\,\lambda^c_x}\operatorname{artanh}(\sqrt c\|u\|)\frac{u}{\|u\|}`, :math:`u = -x \oplus_c y`.

    Parameters
    ----------
    x, y : Tensor, shape (..., d), broadcastable
        Points inside the ball.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d)
        Tangent vectors at ``x`` whose Riemannian norm ``λ_x‖·‖`` is ``dist(x, y)``. The
        length is taken from :func:`dist` (exact up to the boundary), the direction from
        ``u``, so no artanh of ``‖u‖ ≈ 1/√c`` is needed.
    """
    u = mobius_add(-x, y, c)
    n = _norm(u)
    length = dist(x, y, c).unsqueeze(-1) / lambda_x(x, c)
    return length * u / n
