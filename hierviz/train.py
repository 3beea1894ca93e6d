"""Deprecated alias of :mod:`hierviz.training`; will be removed in 0.3."""

from hierviz.training import *  # noqa: F403
from hierviz.training import __all__  # noqa: F401
from hierviz.training.checkpoint import atomic_save as _atomic_save  # noqa: F401
from hierviz.training.checkpoint import rng_state as _rng_state  # noqa: F401
from hierviz.training.checkpoint import set_rng_state as _set_rng_state  # noqa: F401
from hierviz.training.loop import _augment_threads  # noqa: F401
