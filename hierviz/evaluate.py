"""Deprecated alias of :mod:`hierviz.evaluation`; will be removed in 0.3."""

from hierviz.evaluation import *  # noqa: F403
from hierviz.evaluation import __all__  # noqa: F401
