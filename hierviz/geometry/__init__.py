"""Embedding geometries: one interface for the unit sphere, the Poincaré ball and the Lorentz model.

Curvature convention (one name everywhere): ``c > 0`` means sectional curvature ``−c``.
``PoincareBall(c)`` is the ball of radius ``1/sqrt(c)``; ``Lorentz(c)`` is the hyperboloid
``⟨x, x⟩_L = −1/c``. Paper 01 writes ``κ = −c < 0``; the default ``c = 1`` is its ``κ = −1``.
A non-positive or non-finite ``c`` raises ValueError.

geoopt's conventions, beside ours: ``geoopt.PoincareBall(c=c)`` uses the same ``c`` (we pass
it through); ``geoopt.Lorentz(k=K)`` is the hyperboloid ``⟨x, x⟩_L = −K``, i.e. curvature
``−1/K``, so ``Lorentz(c)`` builds ``geoopt.Lorentz(k=1/c)``. ``Lorentz(k=...)`` (hierviz
0.1, where ``k`` meant our ``c``) still works with a DeprecationWarning.

``Euclidean()`` is the unit sphere S^{d−1} with cosine similarity (alias ``UnitSphere``), the
space of SupCon/SimCLR embeddings. Its distances (chordal, ``‖x̂ − ŷ‖``) and maps are those of
flat ``R^d``, so it has ``c = 0.0`` and ``curvature == 0.0`` (the sphere's own curvature +1
enters no formula here); it is the ``c → 0`` limit of the ball up to the conformal factor 2
(the Poincaré distance tends to ``2‖x − y‖``). Every geometry has ``.c`` (float, ``> 0`` for
the hyperbolic ones) and ``.curvature`` (the signed sectional curvature, ``−c`` or 0.0).

Layout: ``base.py`` (the :class:`Geometry` interface and input checks), ``_kernels.py`` (the
closed-form pairwise-distance autograd kernel), ``frechet.py`` (Karcher/Fréchet means, Eq. 3,
and the EMA step, Eqs. 9–10), one folder per manifold (``euclidean/manifold.py``;
``poincare/`` and ``lorentz/`` with ``manifold.py``, the class wrapping geoopt, and
``math.py``, the formulas as pure tensor functions of ``c``) and ``registry.py``
(:data:`GEOMETRIES`, :func:`register_geometry`, :func:`get_geometry`). Every geometry offers
``dist``, ``pairwise_dist``, ``similarity``, ``mean``, ``group_mean``, ``ema_step``,
``expmap0``/``logmap0``/``expmap``/``logmap``, ``proj``, ``check_point``, ``to_tangent0``,
``to_manifold`` and ``point_dim``, and the capability attributes ``hyperbolic``,
``display_name``, ``curvature`` and ``config()`` (paper 01 §3.1, Eqs. 1–3, 9–10); code outside
this package never switches on ``geometry.name``.

Examples
--------
>>> import torch
>>> from hierviz.geometry import get_geometry
>>> g = get_geometry("lorentz", c=2.0)
>>> g.hyperbolic, g.display_name, g.curvature, g.config()
(True, 'Lorentz hyperboloid', -2.0, {'name': 'lorentz', 'c': 2.0})
>>> g.to_manifold(torch.zeros(1, 3)).shape  # d + 1 ambient coordinates
torch.Size([1, 4])
"""

from __future__ import annotations

import warnings as _warnings

with _warnings.catch_warnings():  # geoopt scripts its maths with torch.jit, deprecated in torch 2.14
    _warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated", category=FutureWarning)
    _warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated", category=DeprecationWarning)
    import geoopt  # noqa: F401

# Registration order is the order names are listed to users: keep poincare before lorentz.
# isort: off
from hierviz.geometry.base import DEFAULT_CURVATURE, Geometry, check_curvature, full_precision
from hierviz.geometry.euclidean import Euclidean, UnitSphere
from hierviz.geometry.poincare import PoincareBall
from hierviz.geometry.lorentz import Lorentz
from hierviz.geometry.registry import GEOMETRIES, get_geometry, register_geometry
# isort: on

__all__ = [
    "Geometry",
    "Euclidean",
    "UnitSphere",
    "PoincareBall",
    "Lorentz",
    "GEOMETRIES",
    "get_geometry",
    "register_geometry",
    "check_curvature",
    "full_precision",
    "DEFAULT_CURVATURE",
]
