"""Radius diagnostics of a trained run (what ``result.json`` keeps under ``radius``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from torch import nn

from hierviz.metrics.radius import radius_report

__all__ = ["run_radius"]


def run_radius(
    model: nn.Module, arrays: Mapping[str, np.ndarray], tree: Any, geometry: Any, embedding: str = "z"
) -> dict[str, Any] | None:
    """:func:`hierviz.metrics.radius_report` of a run's test embeddings, plus the head's feature scale.

    Parameters
    ----------
    model : hierviz.models.EmbeddingModel
        The trained model (its manifold map gives ``clip_r`` and the learned scale).
    arrays : mapping
        The protocol record's ``arrays()``; needs ``z_test`` (n, D) and ``y_test`` (n,).
    tree : LabelTree
    geometry : Geometry
    embedding : {"z", "features"}
        Which map produced the embeddings (``features``: the fixed-scale features map).

    Returns
    -------
    dict or None
        The radius report with ``scale`` (float or None) and ``clip_r``; ``None`` when the
        protocol saved no test embeddings.
    """
    z, y = arrays.get("z_test"), arrays.get("y_test")
    if z is None or y is None or len(z) == 0:
        return None
    head = getattr(model, "features_to_manifold" if embedding == "features" else "to_manifold", None)
    clip_r = getattr(head, "clip_r", None)
    rep = radius_report(np.asarray(z), np.asarray(y), tree, geometry, clip_r=clip_r)
    scale = getattr(head, "scale", None)
    rep["scale"] = None if scale is None else float(scale)
    rep["clip_r"] = clip_r
    return rep
