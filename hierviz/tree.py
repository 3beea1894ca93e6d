"""Deprecated alias of :mod:`hierviz.hierarchy`; will be removed in 0.3."""

from hierviz.hierarchy import *  # noqa: F403
from hierviz.hierarchy import __all__  # noqa: F401
