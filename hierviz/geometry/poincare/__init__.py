"""The poincare geometry (see :mod:`.manifold`)."""

from hierviz.geometry.poincare.manifold import PoincareBall

__all__ = ["PoincareBall"]
