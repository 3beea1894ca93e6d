"""The euclidean geometry (see :mod:`.manifold`)."""

from hierviz.geometry.euclidean.manifold import Euclidean, UnitSphere

__all__ = ["Euclidean", "UnitSphere"]
