r"""Lorentz (hyperboloid) maths as pure tensor functions of the curvature magnitude ``c > 0``.

Points are ``(d+1)``-vectors, time coordinate first, on the upper sheet
:math:`\langle x, x\rangle_{\mathcal L} = -1/c`, :math:`x_0 > 0`, with
:math:`\langle x, y\rangle_{\mathcal L} = -x_0 y_0 + x_s\cdot y_s` and sectional curvature
``−c`` (geoopt's ``Lorentz(k=1/c)``). No classes and no input checks:
:class:`~hierviz.geometry.Lorentz` validates its inputs and calls :func:`pairwise_dist`,
:func:`logmap`, :func:`logmap0`, :func:`expmap` (between geoopt's ``proju`` and ``projx``),
:func:`to_ball` and :func:`from_ball`. :func:`dist`, :func:`expmap0`, :func:`proj` and
:func:`proju` are written out for reading and tested against geoopt, whose versions the class
calls (bit-identical to hierviz 0.1).

The closed-form maps take differences directly (:math:`\tfrac{c}{4}\|y - x\|^2_{\mathcal L}
= \sinh^2(\sqrt c\,d/2)`), so close points keep their digits; geoopt's ``logmap`` clamps the
squared Minkowski norm at 1e-8 and under-shoots below distances of ~1e-4.

Examples
--------
>>> import torch
>>> from hierviz.geometry.lorentz import math as lm
>>> x = lm.expmap0(torch.tensor([[0.5, 0.0]], dtype=torch.float64), c=2.0)
>>> round(float(lm.minkowski_inner(x, x)), 12)  # on <x,x>_L = -1/c
-0.5
>>> torch.allclose(lm.logmap0(x, c=2.0)[..., 1:], torch.tensor([[0.5, 0.0]], dtype=torch.float64))
True
"""

from __future__ import annotations

import math

import torch

from hierviz.geometry._kernels import _sq_eps, augmented_gram, scaled_asinh_sqrt

Tensor = torch.Tensor

__all__ = [
    "minkowski_inner",
    "dist",
    "COORD_MAX",
    "max_radius",
    "pairwise_dist",
    "proj",
    "proju",
    "expmap0",
    "logmap0",
    "expmap",
    "logmap",
    "to_ball",
    "from_ball",
]


def _sign(D: int, like: Tensor) -> Tensor:
    s = torch.ones(D, dtype=like.dtype, device=like.device)
    s[0] = -1.0
    return s


def _pad(v: Tensor) -> Tensor:
    """Prepend a zero time coordinate: spatial tangent ``(..., d)`` → ambient ``(..., d+1)``."""
    return torch.cat([torch.zeros_like(v[..., :1]), v], dim=-1)


def _asinh_ratio(z2: Tensor, extra: Tensor | None = None) -> Tensor:
    """``arsinh(√z2)/√z2`` (divided by ``sqrt(1 + extra)`` if given), series below 1e-8/1e-4."""
    thr = 1e-8 if z2.dtype == torch.float64 else 1e-4
    small = z2 < thr
    safe = torch.where(small, torch.ones_like(z2), z2)  # keeps both branches' gradients finite
    r = torch.asinh(safe.sqrt()) / safe.sqrt()
    series = 1.0 - z2 / 6.0
    if extra is not None:
        r = r / (1.0 + safe).sqrt()
        series = 1.0 - z2 * (2.0 / 3.0)  # (1 − w/6)(1 − w/2)
    return torch.where(small, series, r)


def minkowski_inner(x: Tensor, y: Tensor, keepdim: bool = False) -> Tensor:
    r"""Minkowski inner product :math:`\langle x, y\rangle_{\mathcal L} = -x_0 y_0 + x_s\cdot y_s`.

    Parameters
    ----------
    x, y : Tensor, shape (..., d+1), broadcastable
    keepdim : bool, default False

    Returns
    -------
    Tensor, shape (...) or (..., 1)
    """
    p = x * y
    return p[..., 1:].sum(-1, keepdim=keepdim) - p[..., 0:1].sum(-1, keepdim=keepdim)


def dist(x: Tensor, y: Tensor, c: float) -> Tensor:
    r"""Geodesic distance :math:`\frac{2}{\sqrt c}\operatorname{arsinh}\sqrt{\tfrac c4\|y - x\|^2_{\mathcal L}}`, broadcast.

    Equal to :math:`\frac{1}{\sqrt c}\operatorname{arcosh}(-c\langle x, y\rangle_{\mathcal L})` on the
    hyperboloid (:math:`\tfrac c4\|y-x\|^2_{\mathcal L} = \sinh^2(\sqrt c\,d/2)`), the form
    :func:`pairwise_dist` and :func:`logmap` use: the difference is taken directly, so close points
    keep their digits (no ``1 + 1e-7`` clamp) and far points do not overflow: the arcosh form
    multiplies coordinates (``x_0 y_0 ≈ e^{2√c r}/4c``), which is inf in float64 from radius
    ``≈ 355/√c`` on; this one squares differences, finite up to the coordinate bound
    :data:`COORD_MAX` (two float64 points at radius 300: 587.2, not inf).

    The difference form alone cancels when the two points lie at very different radii:
    ``‖y − x‖²_L = −(x_0 − y_0)² + ‖x_s − y_s‖²`` subtracts two numbers of size ``x_0²`` to
    leave one of size ``x_0 y_0``, so a point at radius 40 and one near the origin gave 0.0 in
    float64 (hierviz 0.3; reference 40.604). Each entry therefore uses whichever of the
    difference form and the inner-product form
    :math:`w = \tfrac12(-c\langle x, y\rangle_{\mathcal L} - 1)` (``⟨x,x⟩_L = −1/c`` exactly)
    rounds less: the inner form when :math:`x_0 y_0 < \max(x_0, y_0)\,\|y - x\|`, i.e. for
    far-apart pairs at unequal radii, and the difference form for close pairs.

    Parameters
    ----------
    x, y : Tensor, shape (..., d+1), broadcastable
        Points on the hyperboloid.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (...)
        Non-negative distances; ``dist(x, x)`` is exactly 0 with a zero gradient.
    """
    diff = y - x
    w_diff = (0.25 * c) * minkowski_inner(diff, diff)
    # the same w from the inner product, with <x,x>_L = <y,y>_L = -1/c taken exactly
    w_inner = 0.5 * (-c * minkowski_inner(x, y) - 1.0)
    # rounding of each form: ~eps·c·max(x0, y0)·‖y − x‖ (difference) vs ~eps·c·x0·y0 (inner)
    x0, y0 = x[..., 0].abs(), y[..., 0].abs()
    use_inner = x0 * y0 < torch.maximum(x0, y0) * diff.norm(dim=-1)
    w = torch.where(use_inner, w_inner, w_diff)
    pos = w > 0
    root = torch.where(pos, w, torch.ones_like(w)).sqrt()  # zero gradient where w <= 0 (x == y)
    return torch.where(pos, (2.0 / c**0.5) * torch.asinh(root), torch.zeros_like(w))


#: Largest coordinate magnitude a Lorentz point may have, per dtype: float64 keeps squared
#: differences of two points finite (``(2B)²·(d+1) < max``); a float32 point must be
#: representable (every formula runs in float64 on it). Beyond it the maps refuse (radius guard).
COORD_MAX = {
    torch.float64: (torch.finfo(torch.float64).max / 64.0) ** 0.5,
    torch.float32: torch.finfo(torch.float32).max / 16.0,
}


def max_radius(c: float, dtype: torch.dtype) -> float:
    """Largest distance from the origin whose point has coordinates below :data:`COORD_MAX`.

    ``x_0 = cosh(√c r)/√c ≤ B`` gives ``r ≤ arcosh(B√c)/√c``: ``≈ 354`` (float64) and
    ``≈ 87`` (float32) at ``c = 1``.

    Examples
    --------
    >>> round(max_radius(1.0, torch.float64)), round(max_radius(1.0, torch.float32))
    (354, 87)
    """
    sc = float(c) ** 0.5
    return math.acosh(max(COORD_MAX.get(dtype, COORD_MAX[torch.float32]) * sc, 1.0)) / sc


def pairwise_dist(x: Tensor, y: Tensor | None, c: float) -> Tensor:
    r"""All-pairs distances in closed form over one Minkowski Gram matrix, ``O(B·M)`` memory.

    With :math:`w_{ij} = \max\big(\tfrac{c}{4}\|x_i - y_j\|^2_{\mathcal L}, \epsilon\big)`
    (``= sinh²(√c·d/2)`` on the hyperboloid) returns :math:`\frac{2}{\sqrt c}\operatorname{arsinh}\sqrt{w_{ij}}`,
    which equals :math:`\frac{1}{\sqrt c}\operatorname{arcosh}(-c\langle x_i, y_j\rangle_{\mathcal L})`.
    The Gram form expands :math:`\|x_i - y_j\|^2_{\mathcal L} = -2/c - 2\langle x_i, y_j\rangle_{\mathcal L}`
    with ``⟨x,x⟩_L = −1/c`` exact, so its rounding is ``~eps·c·x_0 y_0``: a far point against a
    near one keeps its digits (computing ``⟨x,x⟩_L`` cancels ``x_0²`` and gave 2e-12 for radii 40
    and 1 in hierviz 0.3); close pairs far from the origin keep ``~sqrt(eps)·x_0`` (use
    :func:`dist` for those).

    Parameters
    ----------
    x : Tensor, shape (..., B, d+1)
        Points on the hyperboloid, float32/float64.
    y : Tensor, shape (..., M, d+1) or None
        Second set (same dtype/device); ``None``: ``x`` against itself with an exactly zero
        diagonal (zero gradient there).
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., B, M)

    Examples
    --------
    >>> import torch
    >>> x = expmap0(torch.tensor([[0.3, 0.0], [0.0, -0.4]], dtype=torch.float64), c=1.0)
    >>> torch.allclose(pairwise_dist(x, None, 1.0)[0, 1], dist(x[0], x[1], 1.0))
    True
    """
    s = _sign(x.shape[-1], x)

    # <x,x>_L = -1/c on the hyperboloid, taken exactly: computed, it cancels x0² against ‖x_s‖²
    # with an error ~eps·x0², larger than w itself for a far point against a near one
    # (hierviz 0.3 returned 2e-12 for points at radius 40 and 1; reference 40.604)
    def parts(t: Tensor) -> tuple[Tensor, Tensor]:
        return t, torch.zeros_like(t[..., :1]) - 1.0 / c

    xs, xx = parts(x)
    ys, yy = (xs, xx) if y is None else parts(y)
    # w_ij = (c/4)·‖x_i − y_j‖²_L from a single GEMM (Minkowski sign folded into the left factor)
    left = (0.25 * c) * torch.cat([-2.0 * xs * s, xx, torch.ones_like(xx)], dim=-1)
    right = torch.cat([ys, torch.ones_like(yy), yy], dim=-1)
    w = augmented_gram(left, right, y is None)
    return scaled_asinh_sqrt(w, _sq_eps(x.dtype), 2.0 / c**0.5, zero_diag=y is None)


def proj(x: Tensor, c: float) -> Tensor:
    r"""Onto the hyperboloid by recomputing the time coordinate, :math:`x_0 = \sqrt{1/c + \|x_s\|^2}`.

    Parameters
    ----------
    x : Tensor, shape (..., d+1)
        Any vectors (the time coordinate is ignored).
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d+1)
    """
    xs = x[..., 1:]
    return torch.cat([(1.0 / c + (xs * xs).sum(-1, keepdim=True)).sqrt(), xs], dim=-1)


def proju(x: Tensor, v: Tensor, c: float) -> Tensor:
    r"""Onto the tangent space at ``x``: :math:`v + c\,\langle x, v\rangle_{\mathcal L}\,x`.

    Parameters
    ----------
    x : Tensor, shape (..., d+1)
        Points on the hyperboloid.
    v : Tensor, shape (..., d+1)
        Ambient vectors.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d+1)
        Vectors with :math:`\langle x, v\rangle_{\mathcal L} = 0`.
    """
    return v + c * minkowski_inner(x, v, keepdim=True) * x


def expmap0(v: Tensor, c: float) -> Tensor:
    r"""Exponential map at the origin :math:`o = (1/\sqrt c, 0, \dots, 0)` of a spatial tangent vector.

    :math:`\exp_o(v) = \big(\cosh(\sqrt c\|v\|)/\sqrt c,\ \sinh(\sqrt c\|v\|)\,v/(\sqrt c\|v\|)\big)`.

    Parameters
    ----------
    v : Tensor, shape (..., d)
        Spatial coordinates of tangent vectors at the origin.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d+1)
        Points on the hyperboloid.
    """
    sc = c**0.5
    n = v.norm(dim=-1, keepdim=True, p=2)
    z = sc * n
    sinhc = torch.where(z > 0, torch.sinh(z) / z.clamp_min(1e-15), torch.ones_like(z))
    return torch.cat([torch.cosh(z) / sc, sinhc * v], dim=-1)


def logmap0(x: Tensor, c: float) -> Tensor:
    r"""Logarithmic map at the origin, ambient coordinates (time coordinate 0).

    :math:`\log_o(x) = \big(0,\ \frac{\operatorname{arsinh}(\sqrt c\|x_s\|)}{\sqrt c\|x_s\|}\,x_s\big)`,
    accurate down to ``x_s = 0``.

    Parameters
    ----------
    x : Tensor, shape (..., d+1)
        Points on the hyperboloid.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d+1)
        Tangent vectors at the origin; the spatial part's norm is ``dist(o, x)``.
    """
    xs = x[..., 1:]
    z2 = c * xs.pow(2).sum(-1, keepdim=True)  # sinh²(√c·d(o, x))
    return _pad(_asinh_ratio(z2) * xs)


def expmap(x: Tensor, v: Tensor, c: float) -> Tensor:
    r"""Exponential map at ``x`` of a tangent vector: :math:`\cosh(\sqrt c\|v\|_{\mathcal L})\,x + \frac{\sinh(\sqrt c\|v\|_{\mathcal L})}{\sqrt c\|v\|_{\mathcal L}}\,v`.

    ``v`` must already be tangent at ``x`` (apply :func:`proju`) and the result is not
    re-projected (apply :func:`proj`). A series is used below ``c‖v‖²_L < 1e-8`` (float64) /
    ``1e-4`` (float32), so short steps do not move the base point spuriously.

    Parameters
    ----------
    x : Tensor, shape (..., d+1)
        Base points on the hyperboloid.
    v : Tensor, shape (..., d+1)
        Tangent vectors at ``x``.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d+1)
    """
    n2 = (v[..., 1:].pow(2).sum(-1, keepdim=True) - v[..., :1].pow(2)).clamp_min(0.0)
    z2 = c * n2  # (√c‖v‖_L)²
    thr = 1e-8 if v.dtype == torch.float64 else 1e-4
    small = z2 < thr
    safe = torch.where(small, torch.ones_like(z2), z2).sqrt()
    sinhc = torch.where(small, 1.0 + z2 / 6.0, torch.sinh(safe) / safe)  # sinh(z)/z
    cosh = torch.where(small, 1.0 + z2 / 2.0, torch.cosh(safe))
    return cosh * x + sinhc * v


def logmap(x: Tensor, y: Tensor, c: float) -> Tensor:
    r"""Logarithmic map of ``y`` at ``x``, ambient coordinates.

    With :math:`w = \tfrac{c}{4}\|y - x\|^2_{\mathcal L} = \sinh^2(\sqrt c\,d/2)` and
    :math:`u = (y - x) - 2w\,x` (the part of ``y`` Minkowski-orthogonal to ``x``),
    :math:`\log_x(y) = \frac{\operatorname{arsinh}\sqrt w}{\sqrt w\,\sqrt{1+w}}\,u`.

    Parameters
    ----------
    x, y : Tensor, shape (..., d+1), broadcastable
        Points on the hyperboloid.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d+1)
        Tangent vectors at ``x`` whose Minkowski norm is ``dist(x, y)``.
    """
    diff = y - x
    sq = diff[..., 1:].pow(2).sum(-1, keepdim=True) - diff[..., :1].pow(2)
    w = (0.25 * c) * sq.clamp_min(0.0)
    return _asinh_ratio(w, extra=w) * (diff - 2.0 * w * x)


def to_ball(x: Tensor, c: float) -> Tensor:
    r"""Isometry onto the Poincaré ball of the same curvature: :math:`p = x_s/(1 + \sqrt c\,x_0)`.

    Parameters
    ----------
    x : Tensor, shape (..., d+1)
        Points on the hyperboloid.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d)
        Points with norm ``< 1/sqrt(c)``.
    """
    return x[..., 1:] / (1.0 + c**0.5 * x[..., :1])


def from_ball(p: Tensor, c: float) -> Tensor:
    r"""Inverse of :func:`to_ball`: :math:`x = \big(\frac{1 + c\|p\|^2}{\sqrt c(1 - c\|p\|^2)},\ \frac{2p}{1 - c\|p\|^2}\big)`.

    Parameters
    ----------
    p : Tensor, shape (..., d)
        Points of the Poincaré ball of curvature ``−c``.
    c : float
        Curvature magnitude, ``c > 0``.

    Returns
    -------
    Tensor, shape (..., d+1)
    """
    p2 = p.pow(2).sum(-1, keepdim=True)
    den = 1.0 - c * p2
    x0 = (1.0 + c * p2) / (c**0.5 * den)
    return torch.cat([x0, 2.0 * p / den], dim=-1)
