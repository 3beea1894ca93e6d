"""Embedding geometries: one interface for Euclidean, Poincaré-ball and Lorentz spaces.

Sign convention: curvature is always stored as a positive magnitude. ``PoincareBall(c)``
with ``c > 0`` is the ball of radius ``1/sqrt(c)`` with sectional curvature ``−c``
(paper 01 writes ``κ = −c < 0``; the default ``c = 1`` is its ``κ = −1``), and
``Lorentz(k)`` with ``k > 0`` is the hyperboloid ``⟨x, x⟩_L = −1/k`` of curvature ``−k``
(note: geoopt's ``Lorentz(k=K)`` means curvature ``−1/K``; we pass ``K = 1/k``). A
non-positive or non-finite ``c``/``k`` raises ValueError. ``Euclidean()`` has ``c = 0.0``
and is the ``c → 0`` limit of the ball up to the conformal factor 2: the Poincaré distance
tends to ``2‖x − y‖`` and the Karcher mean to the arithmetic mean. Every geometry offers
``dist``, ``pairwise_dist`` (closed form over a Gram matrix), ``similarity``, ``mean``,
``group_mean``, ``ema_step``, ``expmap0``/``logmap0``/``expmap``/``logmap``, ``proj``,
``check_point`` and ``to_tangent0`` (paper 01 §3.1, Eqs. 1–3, 9–10).
"""
from __future__ import annotations

from .base import Geometry, check_curvature, full_precision
from .euclidean import Euclidean
from .lorentz import Lorentz
from .poincare import PoincareBall

__all__ = ["Geometry", "Euclidean", "PoincareBall", "Lorentz", "get_geometry", "GEOMETRIES",
           "check_curvature", "full_precision"]

#: Valid names for :func:`get_geometry`.
GEOMETRIES = ("euclidean", "poincare", "lorentz")


def get_geometry(name: str | Geometry, c: float = 1.0) -> Geometry:
    """Build a geometry by name.

    Parameters
    ----------
    name : {"euclidean", "poincare", "lorentz"} or Geometry
        Case-insensitive name; a :class:`Geometry` instance is returned unchanged.
    c : float, default 1.0
        Curvature magnitude (curvature ``−c``) for ``"poincare"`` (``PoincareBall(c=c)``)
        and ``"lorentz"`` (``Lorentz(k=c)``); ignored for ``"euclidean"``.

    Returns
    -------
    Geometry

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones), or ``c <= 0`` for a hyperbolic space.
    TypeError
        If ``name`` is not a string or Geometry.

    Examples
    --------
    >>> get_geometry("poincare", c=0.5)
    PoincareBall(c=0.5)
    """
    if isinstance(name, Geometry):
        return name
    if not isinstance(name, str):
        raise TypeError(f"name must be a str or Geometry, got {type(name).__name__}")
    key = name.strip().lower()
    if key == "euclidean":
        return Euclidean()
    if key == "poincare":
        return PoincareBall(c=c)
    if key == "lorentz":
        return Lorentz(k=c)
    raise ValueError(f"unknown geometry {name!r}; valid names: {', '.join(GEOMETRIES)}")
