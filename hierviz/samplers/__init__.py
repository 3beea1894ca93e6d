"""Batch samplers a method can ask for (``Needs(sampler="<name>")``).

A sampler factory is registered with :func:`register_sampler` and called by
:func:`hierviz.experiments.compare` as ``factory(labels=..., tree=..., batch_size=..., seed=...)``
with the training split's leaf labels; it returns a batch sampler (an iterable of index lists,
optionally with ``set_epoch``) that :func:`hierviz.training.fit` uses instead of shuffling.
Paper 04's tree-triplet sampler registers here.

Examples
--------
>>> import numpy as np
>>> s = SAMPLERS.get("class-balanced")(labels=np.array([0, 0, 1, 1, 1, 2]), tree=None, batch_size=3, seed=0)
>>> [len(b) for b in s]
[3, 3]
"""

from hierviz.samplers.base import SAMPLERS, ClassBalancedBatchSampler, register_sampler
from hierviz.samplers.tree_triplet import TreeTripletBatchSampler, TreeTripletSampler, triplet_templates

__all__ = [
    "SAMPLERS",
    "register_sampler",
    "ClassBalancedBatchSampler",
    "TreeTripletSampler",
    "TreeTripletBatchSampler",
    "triplet_templates",
]
