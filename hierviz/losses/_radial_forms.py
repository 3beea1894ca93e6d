r"""The closed forms the depth regularisers read: cone half-aperture, exterior angle, cone energy, radius.

On the Poincaré ball and on the hyperboloid (told apart by the geometry's ``point_dim``, never
its name), each with a finite gradient everywhere (``asin``/``acos``/``artanh`` arguments
clamped by dtype). The terms and the references are described in :mod:`hierviz.losses.radial`,
which re-exports these functions (their public import path).
"""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["cone_half_aperture", "cone_exterior_angle", "cone_energy", "origin_radius"]

_EPS = 1e-6


def _margin(t: torch.Tensor) -> float:
    """Distance from ±1 at which ``asin``/``acos`` arguments are clamped (finite gradients)."""
    return 1e-12 if t.dtype == torch.float64 else 1e-7


def _check_hyperbolic(geometry: Any, who: str) -> None:
    if not getattr(geometry, "hyperbolic", False):
        raise ValueError(
            f"geometry: {who} needs a hyperbolic geometry (Poincaré or Lorentz), got {geometry!r}; "
            "on the unit sphere every point has radius 1"
        )


def _has_time(geometry: Any) -> bool:
    """True for a model with a time coordinate (the hyperboloid: d+1 numbers per point), read from
    the geometry's ``point_dim``, never from its name."""
    return geometry.point_dim(1) != 1


def _sqrt_c(geometry: Any, like: torch.Tensor) -> torch.Tensor:
    c = geometry.c
    if isinstance(c, torch.Tensor):
        return c.to(like.dtype).sqrt()
    return torch.tensor(math.sqrt(float(c)), dtype=like.dtype, device=like.device)


def cone_half_aperture(x: torch.Tensor, geometry: Any, K: float = 0.1, eps: float = _EPS) -> torch.Tensor:
    r"""Half-aperture :math:`\psi(x)` of the entailment cone at ``x`` (Ganea et al. Eq. 26; MERU).

    Parameters
    ----------
    x : torch.Tensor, shape (..., D)
        Points on the ball (D = d) or the hyperboloid (D = d + 1, time first).
    geometry : PoincareBall or Lorentz
    K : float, default 0.1
        Aperture constant (MERU and HyCoCLIP: 0.1); the cone is a half-space
        (:math:`\psi = \pi/2`) within :math:`\sinh(\sqrt c\,d(0,x)) \le 2K`.
    eps : float
        Floor of the radius in the denominator (the origin); the ``asin`` argument is
        clamped 1e-7 (float32) / 1e-12 (float64) below 1.

    Returns
    -------
    torch.Tensor, shape (...,), in (0, π/2)

    Raises
    ------
    ValueError
        A non-hyperbolic geometry, or ``K <= 0``.

    Examples
    --------
    >>> import math, torch
    >>> from hierviz.geometry import PoincareBall
    >>> x = torch.tensor([[0.5, 0.0]], dtype=torch.float64)  # K (1 - |x|^2)/|x| = 0.15
    >>> round(float(cone_half_aperture(x, PoincareBall(1.0))[0]), 6) == round(math.asin(0.15), 6)
    True
    """
    _check_hyperbolic(geometry, "cone_half_aperture")
    if not (float(K) > 0):
        raise ValueError(f"K (loss.cone_aperture) must be > 0, got {K!r}")
    sc = _sqrt_c(geometry, x)
    if _has_time(geometry):
        arg = 2.0 * K / (sc * x[..., 1:].norm(dim=-1)).clamp_min(eps)
    else:
        s = (sc * x.norm(dim=-1)).clamp_min(eps)
        arg = K * (1.0 - s.square()) / s
    m = _margin(arg)
    return torch.asin(arg.clamp(-1.0 + m, 1.0 - m))


def cone_exterior_angle(x: torch.Tensor, y: torch.Tensor, geometry: Any, eps: float = _EPS) -> torch.Tensor:
    r"""Exterior angle :math:`\Xi(x, y)` at ``x`` between the origin→x geodesic extended and x→y.

    Ball (Ganea et al. Eq. 28, at :math:`\sqrt c\,x, \sqrt c\,y`):

    .. math::
        \cos\Xi = \frac{\langle x,y\rangle(1+\|x\|^2) - \|x\|^2(1+\|y\|^2)}
        {\|x\|\,\|x-y\|\sqrt{1+\|x\|^2\|y\|^2-2\langle x,y\rangle}};

    hyperboloid (MERU's ``oxy_angle``), with :math:`\ell = c\langle x, y\rangle_L`:
    :math:`\cos\Xi = (y_0 + \ell\,x_0)/(\|x_{1:}\|\sqrt{\ell^2-1})`.

    Parameters
    ----------
    x, y : torch.Tensor, shape (..., D)
        Points (broadcastable) on the geometry's manifold.
    geometry : PoincareBall or Lorentz
    eps : float
        Floor of the denominators; the ``acos`` argument is clamped 1e-7 (float32) /
        1e-12 (float64) inside [-1, 1] (finite gradients).

    Returns
    -------
    torch.Tensor, shape (...,), in [0, π]
        0 when ``y`` lies straight outward of ``x``, π when straight inward.

    Examples
    --------
    >>> import math, torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall(1.0)
    >>> x = torch.tensor([0.3, 0.0], dtype=torch.float64)
    >>> [round(float(cone_exterior_angle(x, torch.tensor(y, dtype=torch.float64), ball)), 4)
    ...  for y in ([0.6, 0.0], [0.1, 0.0])]  # outward 0, inward pi
    [0.0, 3.1416]
    """
    _check_hyperbolic(geometry, "cone_exterior_angle")
    sc = _sqrt_c(geometry, x)
    if _has_time(geometry):
        c = sc.square()
        x0, xs = x[..., 0], x[..., 1:]
        y0, ys = y[..., 0], y[..., 1:]
        ell = c * ((xs * ys).sum(-1) - x0 * y0)
        num = y0 + ell * x0
        den = xs.norm(dim=-1) * (ell.square() - 1.0).clamp_min(eps).sqrt()
        cos = num / den.clamp_min(eps)
    else:
        x, y = sc * x, sc * y
        xy = (x * y).sum(-1)
        nx2, ny2 = x.square().sum(-1), y.square().sum(-1)
        num = xy * (1.0 + nx2) - nx2 * (1.0 + ny2)
        den = nx2.clamp_min(eps**2).sqrt() * (x - y).norm(dim=-1) * (1.0 + nx2 * ny2 - 2.0 * xy).clamp_min(eps).sqrt()
        cos = num / den.clamp_min(eps)
    m = _margin(cos)
    return torch.acos(cos.clamp(-1.0 + m, 1.0 - m))


def cone_energy(x: torch.Tensor, y: torch.Tensor, geometry: Any, K: float = 0.1) -> torch.Tensor:
    r"""Entailment-cone violation :math:`E(x, y) = \max(0, \Xi(x, y) - \psi(x))` (Ganea et al. Eq. 32).

    Parameters
    ----------
    x : torch.Tensor, shape (..., D)
        The general concepts (parents: the cone apices).
    y : torch.Tensor, shape (..., D)
        The specific ones (children), broadcastable with ``x``.
    geometry : PoincareBall or Lorentz
    K : float, default 0.1

    Returns
    -------
    torch.Tensor, shape (...,), >= 0

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall(1.0)
    >>> x = torch.tensor([0.5, 0.0], dtype=torch.float64)
    >>> float(cone_energy(x, torch.tensor([0.8, 0.01], dtype=torch.float64), ball))  # inside
    0.0
    >>> round(float(cone_energy(x, torch.tensor([0.2, 0.0], dtype=torch.float64), ball)), 4)  # pi - asin(0.15)
    2.991
    """
    return torch.relu(cone_exterior_angle(x, y, geometry) - cone_half_aperture(x, geometry, K))


def origin_radius(x: torch.Tensor, geometry: Any) -> torch.Tensor:
    r"""Geodesic distance to the origin, :math:`d(0, x)`, in closed form with a finite gradient everywhere.

    The differentiable twin of :func:`hierviz.metrics.radius.origin_distance` (which detaches
    and evaluates in float64); the same values (tested).

    Ball: :math:`\frac{2}{\sqrt c}\operatorname{artanh}(\sqrt c\,\|x\|)`; hyperboloid:
    :math:`\frac{1}{\sqrt c}\operatorname{arsinh}(\sqrt c\,\|x_{1:}\|)` (the spatial part, not
    the cancelling :math:`\operatorname{arcosh}(\sqrt c\,x_0)`).

    Parameters
    ----------
    x : torch.Tensor, shape (..., D)
        Points on the ball (D = d) or the hyperboloid (D = d + 1, time first).
    geometry : PoincareBall or Lorentz

    Returns
    -------
    torch.Tensor, shape (...,), >= 0
        The artanh argument is clamped 1e-7 (float32) / 1e-12 (float64) below 1.

    Raises
    ------
    ValueError
        A non-hyperbolic geometry.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> x = torch.tensor([[0.5, 0.0]], dtype=torch.float64)  # 2 artanh(0.5) = ln 3
    >>> round(float(origin_radius(x, PoincareBall(1.0))[0]), 6)
    1.098612
    """
    _check_hyperbolic(geometry, "origin_radius")
    sc = _sqrt_c(geometry, x)
    if _has_time(geometry):
        return torch.asinh(sc * x[..., 1:].norm(dim=-1)) / sc
    s = sc * x.norm(dim=-1)
    return 2.0 * torch.atanh(s.clamp_max(1.0 - _margin(s))) / sc
