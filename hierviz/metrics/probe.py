"""Linear-probe evaluation of frozen embeddings and the one-row hierarchy report.

Protocol of paper 01 §4.4: freeze the encoder, fit a *balanced multinomial logistic
regression* (``max_iter=3000``) on the training embeddings, report leaf top-1 on the test
set; HF1 / H-Acc are computed from the same probe predictions, violations / PC-Order from
prototypes recomputed on the training embeddings in the embedding's own geometry.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from hierviz.metrics._validate import same_dim
from hierviz.metrics.baselines import imbalance_metrics
from hierviz.metrics.hierarchy import (
    _as_labels,
    _as_points,
    _check_level,
    h_acc,
    hf1,
    parent_prototypes,
    parent_violations,
    pc_order,
)
from hierviz.metrics.radius import radius_report

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.geometry import Geometry
    from hierviz.hierarchy import LabelTree

__all__ = ["linear_probe", "hierarchy_report", "REPORT_KEYS"]

#: Keys of :func:`hierarchy_report`, in display order.
REPORT_KEYS: tuple[str, ...] = ("top1", "hf1", "h_acc", "violations", "pc_order")


def _features(z: torch.Tensor, geometry: Geometry) -> np.ndarray:
    """Euclidean probe features: ``geometry.to_tangent0(z)`` as a float64 numpy array."""
    with torch.no_grad():
        f = geometry.to_tangent0(z)
    f = f.detach().to("cpu", torch.float64).numpy()
    if not np.isfinite(f).all():
        raise ValueError("tangent features geometry.to_tangent0(z) are not finite; are the points on the manifold?")
    return f


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(seed)


def linear_probe(
    z_train: Any,
    y_train: Any,
    z_test: Any,
    geometry: Geometry,
    seed: int = 0,
    *,
    max_iter: int = 3000,
    C: float = 1.0,
) -> np.ndarray:
    """Fit a balanced multinomial logistic-regression probe and predict test leaves.

    Pipeline: ``geometry.to_tangent0(z)`` -> :class:`sklearn.preprocessing.StandardScaler`
    -> :class:`sklearn.linear_model.LogisticRegression` (``class_weight="balanced"``,
    ``max_iter=3000``, lbfgs, multinomial softmax for three or more classes,
    ``random_state=seed``).

    How hyperbolic embeddings are fed to a Euclidean probe: Poincaré and Lorentz points are
    mapped to the tangent space at the origin with the logarithmic map ``logmap0``
    (:meth:`Geometry.to_tangent0`; for Lorentz this gives the d spatial tangent
    coordinates), which is a diffeomorphism, so no information is lost and distances from
    the origin are preserved. Euclidean (unit-sphere) embeddings are used as they are.
    Features are then standardised, so the probe does not depend on the curvature's scale.

    Parameters
    ----------
    z_train : torch.Tensor or array-like, shape (n_train, D), float
        Frozen training embeddings on the geometry's manifold.
    y_train : array-like or torch.Tensor of int, shape (n_train,)
        Their leaf indices; at least two distinct classes.
    z_test : torch.Tensor or array-like, shape (n_test, D), float
        Frozen test embeddings, same D.
    geometry : Geometry
        The embeddings' geometry (supplies ``to_tangent0`` and ``check_point``).
    seed : int, default 0
        ``random_state`` of the estimator (lbfgs is deterministic; kept for solvers that
        are not and for reproducible reports).
    max_iter : int, default 3000
        Solver iterations (paper 01 §4.4 uses 3000).
    C : float, default 1.0
        Inverse L2 regularisation strength.

    Returns
    -------
    numpy.ndarray, shape (n_test,), int64
        Predicted leaf indices (only classes seen in ``y_train`` can be predicted).

    Raises
    ------
    TypeError
        If embeddings are not floating point or labels not integer.
    ValueError
        If inputs are empty, non-finite, off the manifold, of mismatched lengths or
        dimensions, if ``y_train`` has a single class, or ``seed`` is negative.

    Notes
    -----
    Paper 01 §4.4 "Protocol"; scikit-learn's ``LogisticRegression``.
    """
    seed = _check_seed(seed)
    zt = _as_points(z_train, "z_train", geometry)
    ze = _as_points(z_test, "z_test", geometry)
    same_dim(zt, "z_train", ze, "z_test")
    yt = torch.as_tensor(np.asarray(y_train)) if not isinstance(y_train, torch.Tensor) else y_train
    if yt.dtype.is_floating_point or yt.dtype == torch.bool:
        raise TypeError(f"y_train must hold integer leaf indices, got dtype {yt.dtype}")
    if yt.ndim != 1:
        raise ValueError(f"y_train must be 1-D (n,), got shape {tuple(yt.shape)}")
    if yt.numel() != zt.shape[0]:
        raise ValueError(f"z_train and y_train must have the same length, got {zt.shape[0]} and {yt.numel()}")
    if int(torch.unique(yt).numel()) < 2:
        raise ValueError("y_train holds a single class; a probe needs at least two")
    if int(yt.min()) < 0:
        raise ValueError("y_train holds negative leaf indices")
    clf = make_pipeline(
        StandardScaler(),
        LogisticRegression(class_weight="balanced", max_iter=int(max_iter), C=float(C), random_state=seed),
    )
    with warnings.catch_warnings():
        # leaf indices are classes by construction: scikit-learn's guess that many classes among
        # few samples "could represent a regression problem" is noise on a small split
        warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
        clf.fit(_features(zt, geometry), yt.detach().cpu().numpy().astype(np.int64))
    return np.asarray(clf.predict(_features(ze, geometry)), dtype=np.int64)


def hierarchy_report(
    z_train: Any,
    y_train: Any,
    z_test: Any,
    y_test: Any,
    tree: LabelTree,
    geometry: Geometry,
    seed: int = 0,
    *,
    level: int | None = None,
    steps: int = 10,
    with_radius: bool = False,
    clip_r: float | None = None,
    imbalance: bool = False,
) -> dict[str, Any]:
    """All hierarchy-faithfulness numbers of paper 01 for one embedding, as one table row.

    1. ``top1``: leaf accuracy of :func:`linear_probe` (fit on train, scored on test).
    2. ``hf1``, ``h_acc``: :func:`~hierviz.metrics.hf1` / :func:`~hierviz.metrics.h_acc`
       of the probe's test predictions (root left out of HF1).
    3. ``violations``, ``pc_order``: prototypes from :func:`parent_prototypes` on the
       *training* embeddings (arithmetic mean / Karcher mean with ``steps`` steps), then
       :func:`parent_violations` (margin 0) and :func:`pc_order` on the test embeddings.

    Level of the parent metrics (``level=None``): :func:`default_parent_level`, i.e.
    ``L - 1`` if that level has at least two nodes, else the deepest level that does --
    the leaf level ``L`` (nearest-class-mean). The report never returns NaN: a level with
    a single node would make violations undefined, so it is never chosen by default, and
    an explicit such ``level`` raises ``ValueError``.

    Parameters
    ----------
    z_train, z_test : torch.Tensor or array-like, shape (n, D), float
        Frozen train / test embeddings on the geometry's manifold.
    y_train, y_test : array-like or torch.Tensor of int, shape (n,)
        Leaf indices in ``0 .. tree.num_leaves - 1``.
    tree : LabelTree
        The label tree.
    geometry : Geometry
        The embeddings' geometry.
    seed : int, default 0
        Seed of the probe.
    level : int or None, default None
        Parent level for violations / PC-Order.
    steps : int, default 10
        Karcher steps for hyperbolic prototypes (paper 01 uses :math:`T_{mean} = 3`; see
        :func:`~hierviz.metrics.parent_prototypes` for the measured choice of 10).

    with_radius : bool, default False
        Add ``"radius"``: :func:`hierviz.metrics.radius_report` of the test embeddings (radius
        by depth of samples and prototypes, ``clip_fraction``), a dict.
    clip_r : float, optional
        The head's clip radius, for ``clip_fraction`` (see :func:`~hierviz.metrics.max_radius`).
    imbalance : bool, default False
        Add ``"bal_acc"`` and ``"macro_f1"`` of the same probe predictions
        (:func:`hierviz.metrics.baselines.imbalance_metrics`: balanced accuracy and macro-F1,
        which a majority-class predictor cannot inflate), after the five keys.

    Returns
    -------
    dict
        Keys exactly ``{"top1", "hf1", "h_acc", "violations", "pc_order"}`` (in that order),
        each a float in [0, 1]; violations is lower-is-better, the others higher-is-better;
        plus ``"radius"`` (a dict) with ``with_radius=True``.

    Raises
    ------
    TypeError, ValueError
        As the underlying metrics (bad shapes, dtypes, ranges, empty inputs, a single
        training class, a level with a single node, test parents without a prototype).

    Notes
    -----
    Paper 01 §3.5 and §4.4 (Tables 1-3 report exactly these columns).
    """
    y_tr = _as_labels(y_train, "y_train", tree)
    y_te = _as_labels(y_test, "y_test", tree)
    z_tr = _as_points(z_train, "z_train", geometry)
    z_te = _as_points(z_test, "z_test", geometry)
    same_dim(z_tr, "z_train", z_te, "z_test")
    if z_tr.shape[0] != y_tr.numel():
        raise ValueError(f"z_train and y_train must have the same length, got {z_tr.shape[0]} and {y_tr.numel()}")
    if z_te.shape[0] != y_te.numel():
        raise ValueError(f"z_test and y_test must have the same length, got {z_te.shape[0]} and {y_te.numel()}")
    level = _check_level(tree, level)
    y_pred = torch.as_tensor(linear_probe(z_tr, y_tr, z_te, geometry, seed=seed))
    protos, node_ids = parent_prototypes(z_tr, y_tr, tree, geometry, level=level, steps=steps)
    out = {
        "top1": float((y_pred == y_te).double().mean()),
        "hf1": hf1(y_te, y_pred, tree),
        "h_acc": h_acc(y_te, y_pred, tree),
        "violations": parent_violations(z_te, y_te, protos, node_ids, tree, geometry, level=level),
        "pc_order": pc_order(z_te, y_te, protos, node_ids, tree, geometry, level=level),
    }
    if imbalance:
        out.update(imbalance_metrics(y_te.cpu().numpy(), y_pred.cpu().numpy()))
    if with_radius:
        out["radius"] = radius_report(z_te, y_te, tree, geometry, clip_r=clip_r, steps=steps)
    return out
