"""The geometry registry: name → :class:`~hierviz.geometry.Geometry` class.

Built-ins register themselves where they are defined (``@register_geometry("poincare")``);
a new manifold is one folder ``geometry/<name>/`` and one decorator (CONTRIBUTING.md).
"""

from __future__ import annotations

from typing import Any

from hierviz._registry import Registry
from hierviz.geometry.base import Geometry

__all__ = ["GEOMETRIES", "register_geometry", "get_geometry"]

#: Registered geometry classes by name.
GEOMETRIES: Registry = Registry("geometry")


def register_geometry(name: str):
    """Decorator registering a :class:`~hierviz.geometry.Geometry` subclass under ``name``.

    The class must set ``hyperbolic`` (bool) and ``display_name``, and accept ``c`` as a
    keyword when ``hyperbolic`` is True.

    Raises
    ------
    ValueError
        ``name`` is already registered.
    """
    return GEOMETRIES.register(name)


def get_geometry(name: Any, c: float | None = None, **kwargs: Any):
    """Build a registered geometry by name.

    Parameters
    ----------
    name : str or Geometry
        Case-insensitive registered name (``"euclidean"``, ``"poincare"``, ``"lorentz"``, or
        one added with :func:`register_geometry`); a Geometry instance is returned unchanged.
    c : float, optional
        Curvature magnitude (sectional curvature ``−c``) of a hyperbolic geometry; default:
        the class's default (1.0 for the built-ins). Ignored by non-hyperbolic geometries
        (the unit sphere), so a config can carry ``c`` for every geometry.
    **kwargs
        Further constructor arguments (``learnable=True``: a trainable curvature; ignored,
        like ``c``, by non-hyperbolic geometries).

    Returns
    -------
    Geometry

    Raises
    ------
    ValueError
        Unknown name (``UnknownNameError``, the nearest names suggested), or ``c`` out of range.
    TypeError
        ``name`` is neither a string nor a Geometry.

    Examples
    --------
    >>> get_geometry("poincare", c=0.5)
    PoincareBall(c=0.5)
    >>> get_geometry("lorentz")
    Lorentz(c=1)
    >>> get_geometry(**get_geometry("poincare", c=2.0).config())
    PoincareBall(c=2)
    """
    if isinstance(name, Geometry):
        return name
    if not isinstance(name, str):
        raise TypeError(f"name must be a str or Geometry, got {type(name).__name__}")
    cls = GEOMETRIES.get(name)
    if c is not None and getattr(cls, "hyperbolic", False):
        kwargs["c"] = c
    if not getattr(cls, "hyperbolic", False):
        kwargs.pop("learnable", None)  # like c: the sphere has no curvature to learn
    return cls(**kwargs)
