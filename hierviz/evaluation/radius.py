"""Radius diagnostics of a trained run (what ``result.json`` keeps under ``radius``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from torch import nn

from hierviz.metrics import linear_probe
from hierviz.metrics.radius import radius_metrics, radius_report

__all__ = ["run_radius"]


def run_radius(
    model: nn.Module,
    arrays: Mapping[str, np.ndarray],
    tree: Any,
    geometry: Any,
    embedding: str = "z",
    *,
    seed: int = 0,
    steps: int = 10,
) -> dict[str, Any] | None:
    """:func:`hierviz.metrics.radius_report` of a run's test embeddings, the head's feature scale and the five radius metrics.

    The five numbers of :func:`hierviz.metrics.radius_metrics` (``radius_depth_spearman``,
    ``edge_order``, ``clip_fraction``, ``radius_gap``, ``norm_auroc``) are top-level keys of
    the returned dict; ``norm_auroc`` scores the predictions of the run's linear probe
    (:func:`hierviz.metrics.linear_probe`, fit on ``z_train`` with ``seed``), the probe of
    the run's top-1.

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
    seed : int, default 0
        Seed of the linear probe behind ``norm_auroc``.
    steps : int, default 10
        Karcher steps of the prototypes.

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
    bound = getattr(head, "tangent_bound", clip_r)  # the tanh head's bound is rho / sqrt(c)
    z, y = np.asarray(z), np.asarray(y)
    rep = radius_report(z, y, tree, geometry, clip_r=bound, steps=steps)
    scale = getattr(head, "scale", None)
    rep["scale"] = None if scale is None else float(scale)
    rep["clip_r"] = clip_r
    rep["head_bound"] = getattr(head, "bound", None)
    pred = None
    z_tr, y_tr = arrays.get("z_train"), arrays.get("y_train")
    if z_tr is not None and y_tr is not None and len(np.unique(y_tr)) > 1:
        pred = linear_probe(np.asarray(z_tr), np.asarray(y_tr), z, geometry, seed=seed)
    rep.update(radius_metrics(z, y, tree, geometry, predictions=pred, clip_r=bound, steps=steps))
    return rep
