"""Hierarchy-faithfulness metrics: HF1, H-Acc, parent-distance violations and PC-Order.

All metrics follow paper 01 (*Climbing the label tree*), §3.5 "Measuring hierarchy
faithfulness" and §4.4 "Evaluation protocol and metrics". Labels are **leaf indices**
(integer arrays or tensors, ``0 .. C-1``, in the tree's leaf order); every metric is
computed in one vectorised pass with the tree's cached tensors
(:attr:`LabelTree.ancestor_mask`, :attr:`LabelTree.tree_distance_matrix`,
:attr:`LabelTree.leaf_paths`) -- there is no Python loop over samples.

Which level do the "parent" metrics use?
----------------------------------------
Violations and PC-Order compare a test point with the prototypes of the nodes at one
tree level ``ℓ`` (the "parents"). Each leaf belongs to exactly one group at level ``ℓ``:
its ancestor at that level, read from ``tree.leaf_paths[:, ℓ]``. A leaf shallower than
``ℓ`` (unbalanced trees) is its *own* group -- the same padding rule that
:attr:`LabelTree.leaf_paths` uses. The default level (``level=None``) is given by
:func:`default_parent_level`: the parent level of the deepest leaves, ``L - 1``; when
that level has a single group (e.g. a flat tree root -> leaves, where ``L - 1`` is the
root), the leaf level ``L`` is used instead, i.e. the metric degrades to
nearest-class-mean. An explicit level with a single group has no "wrong parent" and
raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from hierviz.geometry import frechet as _frechet
from hierviz.metrics._validate import as_embeddings, same_dim

if TYPE_CHECKING:  # pragma: no cover - imports for type checkers only
    from hierviz.geometry import Geometry
    from hierviz.hierarchy import LabelTree

__all__ = [
    "violations_by_level",
    "hf1",
    "h_acc",
    "default_parent_level",
    "parent_prototypes",
    "parent_violations",
    "pc_order",
]


# --------------------------------------------------------------------------- validation
def _as_labels(x: Any, name: str, tree: LabelTree, *, allow_empty: bool = False) -> torch.Tensor:
    """Validate leaf-index labels and return them as a 1-D CPU ``torch.long`` tensor.

    Parameters
    ----------
    x : array-like of int, shape (n,)
        Leaf indices in ``0 .. tree.num_leaves - 1``.
    name : str
        Argument name used in error messages.
    tree : LabelTree
        The label tree (for ``num_leaves``).
    allow_empty : bool, default False
        Whether ``n = 0`` is accepted.

    Returns
    -------
    torch.Tensor
        Shape (n,), dtype ``torch.long``, on the CPU.

    Raises
    ------
    TypeError
        If ``x`` is not an integer array/tensor (floats and bools are rejected).
    ValueError
        If ``x`` is not 1-D, is empty (unless ``allow_empty``) or holds an index outside
        ``[0, C)``.
    """
    try:
        t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be an integer array or tensor of leaf indices; got {type(x).__name__}") from err
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n,), got shape {tuple(t.shape)}")
    if t.numel() == 0:
        if not allow_empty:
            raise ValueError(f"{name} is empty; need at least one sample")
        return torch.zeros(0, dtype=torch.long)
    if t.dtype == torch.bool or t.dtype.is_floating_point or t.dtype.is_complex:
        raise TypeError(f"{name} must hold integer leaf indices, got dtype {t.dtype}")
    t = t.detach().to("cpu", torch.long)
    C = tree.num_leaves
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= C):
        bad = t[(t < 0) | (t >= C)].unique()[:10].tolist()
        raise ValueError(f"{name} holds leaf indices outside [0, {C}): {bad}")
    return t


def _pair_labels(y_true: Any, y_pred: Any, tree: LabelTree) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a (y_true, y_pred) pair: both 1-D leaf indices of the same length."""
    a = _as_labels(y_true, "y_true", tree)
    b = _as_labels(y_pred, "y_pred", tree)
    if a.shape != b.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {a.numel()} and {b.numel()}")
    return a, b


def _as_points(z: Any, name: str, geometry: Geometry | None = None) -> torch.Tensor:
    """Validate an embedding matrix (n, D), D >= 1, of finite floats (and, with a geometry, that it lies on it)."""
    return as_embeddings(z, name, geometry)


def _reduce(per_sample: torch.Tensor, reduction: str) -> float | torch.Tensor:
    if reduction == "mean":
        return float(per_sample.double().mean())
    if reduction == "none":
        return per_sample
    raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")


# --------------------------------------------------------------------------- HF1 / H-Acc
def hf1(y_true: Any, y_pred: Any, tree: LabelTree, *, reduction: str = "mean") -> float | torch.Tensor:
    r"""Hierarchical F1: per-sample F1 of the inclusive ancestor sets, averaged.

    For a true leaf :math:`y` and a predicted leaf :math:`\hat y` let :math:`A_y` and
    :math:`A_{\hat y}` be their inclusive ancestor sets (the leaf itself up to, but **not
    including, the root**). Then :math:`P_h = |A_y \cap A_{\hat y}| / |A_{\hat y}|`,
    :math:`R_h = |A_y \cap A_{\hat y}| / |A_y|` and
    :math:`F1_h = 2 P_h R_h / (P_h + R_h) = 2 |A_y \cap A_{\hat y}| / (|A_y| + |A_{\hat y}|)`
    (defined as 0 when the sets are disjoint). HF1 is the mean of :math:`F1_h`.

    The root is left out because every label shares it: keeping it would award credit to
    every prediction, however wrong (with the root, predicting a leaf in the other branch
    of the BreakHis tree would score 1/3 instead of 0). This matches Silla & Freitas
    (2011), who also exclude the root.

    Parameters
    ----------
    y_true, y_pred : array-like or torch.Tensor of int, shape (n,)
        True and predicted leaf indices in ``0 .. tree.num_leaves - 1``.
    tree : LabelTree
        The label tree the indices refer to (needs at least one non-root node).
    reduction : {"mean", "none"}, default "mean"
        ``"mean"`` returns the average as a Python float, ``"none"`` the per-sample
        scores as a float64 tensor of shape (n,).

    Returns
    -------
    float or torch.Tensor
        HF1 in [0, 1]; 1 iff every prediction is correct.

    Raises
    ------
    TypeError
        If the labels are not integer arrays.
    ValueError
        If the labels are empty, not 1-D, of different lengths or out of range.

    Notes
    -----
    Paper 01, §3.5 "HF1" and §4.4; Silla Jr. & Freitas (2011), *A survey of hierarchical
    classification across different application domains*, hierarchical precision/recall.

    Examples
    --------
    In the BreakHis tree (root -> benign/malignant -> 8 subtypes), predicting a sibling
    shares only the parent: :math:`F1_h = 2 \cdot 1 / (2 + 2) = 1/2`.
    """
    a, b = _pair_labels(y_true, y_pred, tree)
    if tree.num_nodes < 2:
        raise ValueError("tree has only a root node: with the root left out the ancestor sets are empty")
    root = tree.node_index[tree.root]
    A = tree.ancestor_mask(a).clone()
    B = tree.ancestor_mask(b).clone()
    A[:, root] = False
    B[:, root] = False
    inter = (A & B).sum(-1).double()
    size = (A.sum(-1) + B.sum(-1)).double()
    # size >= 2: every leaf is a non-root node once the tree has two or more nodes.
    return _reduce(2.0 * inter / size, reduction)


def h_acc(y_true: Any, y_pred: Any, tree: LabelTree, *, reduction: str = "mean") -> float | torch.Tensor:
    r"""Tree-distance-weighted accuracy :math:`1 - d_T(y, \hat y) / (2L)`, averaged.

    :math:`d_T` is the number of edges on the tree path between the true and predicted
    leaves and :math:`L` = ``tree.height`` the maximum leaf depth. Any leaf-leaf path has
    at most :math:`2L` edges, so each score lies in [0, 1]; a correct prediction scores 1,
    a sibling :math:`1 - 2/(2L)`. For unbalanced trees the normalisation by the *maximum*
    depth is conservative (paper 01 §3.5): no pair may reach 0.

    Parameters
    ----------
    y_true, y_pred : array-like or torch.Tensor of int, shape (n,)
        True and predicted leaf indices in ``0 .. tree.num_leaves - 1``.
    tree : LabelTree
        The label tree the indices refer to.
    reduction : {"mean", "none"}, default "mean"
        ``"mean"`` returns a Python float, ``"none"`` the per-sample float64 tensor (n,).

    Returns
    -------
    float or torch.Tensor
        H-Acc in [0, 1].

    Raises
    ------
    TypeError
        If the labels are not integer arrays.
    ValueError
        If the labels are empty, not 1-D, of different lengths or out of range.

    Notes
    -----
    Paper 01, §3.5 "H-Acc" and §4.4; Kosmopoulos et al. (2013), *Evaluation measures for
    hierarchical classification*.
    """
    a, b = _pair_labels(y_true, y_pred, tree)
    d = tree.tree_distance_matrix[a, b].double()
    return _reduce(1.0 - d / (2.0 * tree.height), reduction)


# --------------------------------------------------------------------------- levels
def _level_groups(tree: LabelTree, level: int) -> torch.Tensor:
    """Node index of every leaf's group (ancestor, or the leaf itself) at ``level``: (C,) long."""
    return tree.leaf_paths[:, level]


def _num_groups(tree: LabelTree, level: int) -> int:
    return int(torch.unique(_level_groups(tree, level)).numel())


def default_parent_level(tree: LabelTree) -> int:
    """The tree level whose nodes serve as "parents" for violations and PC-Order.

    Rule: ``L - 1`` (the parent level of the deepest leaves, ``L = tree.height``) if that
    level holds at least two groups; otherwise ``L`` (the leaves themselves, so the
    metrics become nearest-class-mean). Shallower levels never have more groups than
    ``L - 1``, so this is the deepest level with at least two groups below the leaves.
    Groups at a level are the leaves' ancestors at that level, a leaf shallower than the
    level being its own group (``tree.leaf_paths`` padding).

    Parameters
    ----------
    tree : LabelTree
        The label tree.

    Returns
    -------
    int
        A level in ``1 .. L``.

    Raises
    ------
    ValueError
        If the tree has fewer than two leaves (no level has a wrong parent).

    Notes
    -----
    Paper 01 §3.5 uses the "true parent" of each leaf; for balanced trees that is level
    ``L - 1``.
    """
    L = int(tree.height)
    if L >= 2 and _num_groups(tree, L - 1) >= 2:
        return L - 1
    if L >= 1 and _num_groups(tree, L) >= 2:
        return L
    raise ValueError(
        f"tree has {tree.num_leaves} leaf/leaves: no level with two or more nodes, so no wrong parent exists"
    )


def _check_level(tree: LabelTree, level: Any) -> int:
    """Resolve ``level=None`` to the default and validate an explicit level."""
    if level is None:
        return default_parent_level(tree)
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
        raise TypeError(f"level must be an int or None, got {type(level).__name__}")
    level = int(level)
    L = int(tree.height)
    if not 0 <= level <= L:
        raise ValueError(f"level must be in [0, {L}] (tree height L = {L}), got {level}")
    if _num_groups(tree, level) < 2:
        raise ValueError(
            f"level {level} has a single node ({tree.nodes[int(_level_groups(tree, level)[0])]!r}), "
            "so no point has a wrong parent; choose a deeper level (default_parent_level(tree) gives one)"
        )
    return level


# --------------------------------------------------------------------------- prototypes
def parent_prototypes(
    z: Any,
    y: Any,
    tree: LabelTree,
    geometry: Geometry,
    level: int | None = None,
    steps: int = 10,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Evaluation prototypes of the nodes at one level, from frozen training embeddings.

    Each training point is assigned to its leaf's group at ``level`` (its ancestor there,
    or the leaf itself if the leaf is shallower) and every group that has at least one
    training point gets the mean of its points in the embedding's own geometry:
    the arithmetic mean for Euclidean, the Fréchet/Karcher mean (``steps`` fixed-point
    iterations) for the Poincaré ball and the hyperboloid, via
    :meth:`Geometry.group_mean`. Groups without training points get no prototype (they
    are simply not candidates).

    Parameters
    ----------
    z : torch.Tensor or array-like, shape (n, D), float32/float64
        Training embeddings, on the geometry's manifold (D = d + 1 for Lorentz).
    y : array-like or torch.Tensor of int, shape (n,)
        Leaf indices of the training points.
    tree : LabelTree
        The label tree.
    geometry : Geometry
        The embedding's geometry (Euclidean, PoincareBall or Lorentz).
    level : int or None, default None
        Tree level of the "parents"; ``None`` -> :func:`default_parent_level`.
    steps : int, default 10
        At most this many Karcher steps, stopping earlier once every group's Riemannian
        gradient norm is at most 1e-6 (:data:`hierviz.geometry.frechet.DEFAULT_TOL`). Paper
        01 §4.2 uses :math:`T_{mean} = 3`; with the monotone line search of
        :meth:`Geometry.group_mean` (objective compared in float64, the iteration in float64),
        10 steps bring float32 and float64 means of spread sets within 2e-6 of the Fréchet
        mean (measured), 3 steps can be 5e-3 away.

    Returns
    -------
    protos : torch.Tensor, shape (P, D), dtype of ``z``, on ``z``'s device
        One prototype per group present in the training set, on the manifold.
    node_ids : torch.Tensor, shape (P,), long, on ``z``'s device
        Node index (``tree.nodes``) of each prototype, sorted ascending.

    Raises
    ------
    TypeError
        If ``z`` is not floating point, ``y`` not integer or ``level`` not an int.
    ValueError
        If shapes disagree, inputs are empty or non-finite or off the manifold, labels are
        out of range, the level has a single node, or the training labels cover fewer
        than two groups at that level.

    Notes
    -----
    Paper 01 §4.4 "Prototype computation": prototypes are recomputed from the frozen
    training embeddings of each method in the same ambient geometry (Eq. 3 for the
    Karcher mean); training-time EMA prototypes are never used at evaluation.
    """
    z = _as_points(z, "z", geometry)
    y = _as_labels(y, "y", tree)
    if z.shape[0] != y.shape[0]:
        raise ValueError(f"z and y must have the same length, got {z.shape[0]} and {y.shape[0]}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    level = _check_level(tree, level)
    groups = _level_groups(tree, level)[y]
    node_ids = torch.unique(groups)  # sorted
    if node_ids.numel() < 2:
        raise ValueError(
            f"the training labels y cover only one node at level {level} "
            f"({tree.nodes[int(node_ids[0])]!r}); violations need at least two prototypes"
        )
    index = torch.searchsorted(node_ids, groups)
    with torch.no_grad():
        protos = geometry.group_mean(
            z, index.to(z.device), int(node_ids.numel()), steps=int(steps), tol=_frechet.DEFAULT_TOL
        )
    return protos, node_ids.to(z.device)


def _proto_distances(
    z: Any,
    y: Any,
    protos: Any,
    node_ids: Any,
    tree: LabelTree,
    geometry: Geometry,
    level: int | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Distances (n, P) from each point to every prototype and the column of its true parent (n,)."""
    z = _as_points(z, "z", geometry)
    y = _as_labels(y, "y", tree)
    if z.shape[0] != y.shape[0]:
        raise ValueError(f"z and y must have the same length, got {z.shape[0]} and {y.shape[0]}")
    protos = _as_points(protos, "protos", geometry)
    same_dim(protos, "protos", z, "z")
    ids = node_ids if isinstance(node_ids, torch.Tensor) else torch.as_tensor(np.asarray(node_ids))
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.ndim != 1:
        raise TypeError(
            f"node_ids must be a 1-D integer tensor of node indices, got dtype {ids.dtype}, shape {tuple(ids.shape)}"
        )
    ids = ids.detach().to("cpu", torch.long)
    if ids.numel() != protos.shape[0]:
        raise ValueError(f"node_ids has {ids.numel()} entries but protos has {protos.shape[0]} rows")
    if ids.numel() < 2:
        raise ValueError("need at least two prototypes (a true and a wrong parent)")
    if int(ids.min()) < 0 or int(ids.max()) >= tree.num_nodes:
        raise ValueError(f"node_ids must be node indices in [0, {tree.num_nodes})")
    if torch.unique(ids).numel() != ids.numel():
        raise ValueError("node_ids holds duplicate node indices")
    level = _check_level(tree, level)
    groups = _level_groups(tree, level)[y]  # (n,)
    match = groups[:, None] == ids[None, :]  # (n, P)
    found = match.any(1)
    if not bool(found.all()):
        missing = sorted({tree.nodes[int(g)] for g in groups[~found].unique()})
        raise ValueError(
            f"no prototype for the level-{level} node(s) {missing[:10]} of some points in y; "
            "were protos computed at another level, or from training data lacking those nodes?"
        )
    pos = match.to(torch.int8).argmax(1)
    with torch.no_grad():
        D = geometry.pairwise_dist(z, protos.to(device=z.device, dtype=z.dtype))
    if not bool(torch.isfinite(D).all()):
        raise ValueError("distances between z and protos are not finite; are the points on the manifold?")
    return D, pos.to(D.device)


def parent_violations(
    z: Any,
    y: Any,
    protos: Any,
    node_ids: Any,
    tree: LabelTree,
    geometry: Geometry,
    level: int | None = None,
    *,
    margin: float = 0.0,
    reduction: str = "mean",
) -> float | torch.Tensor:
    r"""Parent-distance violation rate (lower is better).

    For every test point :math:`z` with leaf :math:`y`, let :math:`p^+` be the prototype
    of its true parent (its group at ``level``) and :math:`p^-` the nearest *wrong*
    prototype at the same level. The score is the share of points with
    :math:`d_{\mathcal M}(z, p^+) + m \ge d_{\mathcal M}(z, p^-)`, where
    :math:`d_{\mathcal M}` is the geometry's distance and :math:`m` = ``margin`` (paper:
    :math:`m = 0`, ties count as violations).

    For ``margin = 0`` this is the complement of :func:`pc_order` up to ties:
    ``violations + pc_order == 1`` unless a point is exactly equidistant from its true
    parent and its nearest wrong one (then it counts as a violation and, if the true
    parent comes first in ``node_ids``, also as PC-Order-correct).

    Parameters
    ----------
    z : torch.Tensor or array-like, shape (n, D), float
        Test embeddings on the geometry's manifold.
    y : array-like or torch.Tensor of int, shape (n,)
        Leaf indices of the test points.
    protos : torch.Tensor, shape (P, D), float
        Prototypes, usually from :func:`parent_prototypes` on the *training* embeddings.
    node_ids : torch.Tensor, shape (P,), long
        Node index of each prototype (second output of :func:`parent_prototypes`).
    tree : LabelTree
        The label tree.
    geometry : Geometry
        Geometry whose ``pairwise_dist`` is :math:`d_{\mathcal M}`.
    level : int or None, default None
        Level the prototypes belong to; ``None`` -> :func:`default_parent_level` (the
        default of :func:`parent_prototypes` too).
    margin : float, default 0.0
        Non-negative margin :math:`m`; with :math:`m > 0` a point also counts as a
        violation when its true parent is nearer by less than :math:`m`.
    reduction : {"mean", "none"}, default "mean"
        ``"mean"`` -> Python float; ``"none"`` -> per-point bool tensor (n,).

    Returns
    -------
    float or torch.Tensor
        Violation rate in [0, 1].

    Raises
    ------
    TypeError
        If an input has the wrong dtype.
    ValueError
        If shapes disagree, inputs are empty, non-finite or off the manifold, labels are out
        of range, the level has a single node, a point's true parent has no prototype, or
        ``margin`` is negative.

    Notes
    -----
    Paper 01, §3.5 "Parent-distance violations" and §4.4 "Violations".
    """
    is_number = isinstance(margin, (int, float, np.floating, np.integer)) and not isinstance(margin, bool)
    if not is_number or not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite float >= 0, got {margin!r}")
    D, pos = _proto_distances(z, y, protos, node_ids, tree, geometry, level)
    d_pos = D.gather(1, pos[:, None]).squeeze(1)
    wrong = D.scatter(1, pos[:, None], float("inf"))
    d_neg = wrong.min(1).values
    viol = d_pos + float(margin) >= d_neg
    return _reduce(viol.cpu(), reduction)


def pc_order(
    z: Any,
    y: Any,
    protos: Any,
    node_ids: Any,
    tree: LabelTree,
    geometry: Geometry,
    level: int | None = None,
    *,
    reduction: str = "mean",
) -> float | torch.Tensor:
    r"""PC-Order: share of points whose nearest prototype at ``level`` is their true parent.

    Nearest-parent top-1 accuracy, with :math:`d_{\mathcal M}` the geometry's distance and
    ties resolved towards the prototype listed first in ``node_ids``. For the same
    prototypes, ``pc_order = 1 - parent_violations(margin=0)`` up to exact ties (see
    :func:`parent_violations`).

    Parameters
    ----------
    z : torch.Tensor or array-like, shape (n, D), float
        Test embeddings on the geometry's manifold.
    y : array-like or torch.Tensor of int, shape (n,)
        Leaf indices of the test points.
    protos : torch.Tensor, shape (P, D), float
        Prototypes (see :func:`parent_prototypes`).
    node_ids : torch.Tensor, shape (P,), long
        Node index of each prototype.
    tree : LabelTree
        The label tree.
    geometry : Geometry
        The embedding's geometry.
    level : int or None, default None
        Level of the prototypes; ``None`` -> :func:`default_parent_level`.
    reduction : {"mean", "none"}, default "mean"
        ``"mean"`` -> Python float; ``"none"`` -> per-point bool tensor (n,).

    Returns
    -------
    float or torch.Tensor
        PC-Order in [0, 1] (higher is better).

    Raises
    ------
    TypeError
        If an input has the wrong dtype.
    ValueError
        As :func:`parent_violations`.

    Notes
    -----
    Paper 01, §3.5 (PC_order, "nearest-parent top-1") and §4.4.
    """
    D, pos = _proto_distances(z, y, protos, node_ids, tree, geometry, level)
    ok = D.argmin(1) == pos
    return _reduce(ok.cpu(), reduction)


def violations_by_level(
    z_train: Any,
    y_train: Any,
    z_test: Any,
    y_test: Any,
    tree: Any,
    geometry: Any,
    levels: Sequence[int] | None = None,
    steps: int = 10,
) -> dict[int, float]:
    """Parent-distance violation rate per tree level (paper 01 §4.4, LAM's levels of Eq. 11).

    Prototypes of the level-ℓ ancestors are the (Karcher) means of the frozen training
    embeddings (:func:`parent_prototypes`); each test point is scored with
    :func:`parent_violations` at that level.

    Parameters
    ----------
    z_train, z_test : array-like, shape (n, D)
        Embeddings on ``geometry``.
    y_train, y_test : array-like, shape (n,)
        Leaf indices.
    tree : LabelTree
    geometry : Geometry
    levels : sequence of int, optional
        Default ``1 … L-1`` (every level with parents below the root).
    steps : int, default 10
        Karcher steps of the prototypes (see :func:`parent_prototypes`).

    Returns
    -------
    dict of int to float
        Level → violation rate in [0, 1].

    Examples
    --------
    >>> import torch
    >>> from hierviz.hierarchy import LabelTree
    >>> from hierviz.geometry import get_geometry
    >>> tree = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z", "w"]}})
    >>> z = torch.tensor([[1.0, 0.0], [0.9, 0.1], [-1.0, 0.0], [-0.9, -0.1]])
    >>> z = torch.nn.functional.normalize(z, dim=1)
    >>> y = torch.tensor([0, 1, 2, 3])
    >>> violations_by_level(z, y, z, y, tree, get_geometry("euclidean"))
    {1: 0.0}
    """
    levels = list(range(1, tree.height)) if levels is None else list(levels)
    out = {}
    for level in levels:
        p, nodes = parent_prototypes(z_train, y_train, tree, geometry, level=level, steps=steps)
        out[level] = float(parent_violations(z_test, y_test, p, nodes, tree, geometry, level=level))
    return out
