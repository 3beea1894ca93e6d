"""The lorentz geometry (see :mod:`.manifold`)."""

from hierviz.geometry.lorentz.manifold import Lorentz

__all__ = ["Lorentz"]
