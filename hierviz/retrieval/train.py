"""Training Paper 03 (Hyper-DINO)'s mapper for ``hierviz retrieval``: the one loop's mapper fit.

``train_mapper`` is :func:`hierviz.evaluation.retrieval.fit_mapper` under its 0.2 name: it trains
:class:`~hierviz.evaluation.retrieval.MapperModel` (or, with ``geometry="euclidean"``, the cosine
control :class:`~hierviz.evaluation.retrieval.CosineMapper`) with HCL through
:func:`hierviz.training.fit`, the loop ``hierviz compare`` uses.
"""

from __future__ import annotations

from hierviz.evaluation.retrieval import CosineMapper, MapperModel, fit_mapper

__all__ = ["CosineMapper", "MapperModel", "train_mapper"]

#: The 0.2 name of :func:`hierviz.evaluation.retrieval.fit_mapper` (same signature and result).
train_mapper = fit_mapper
