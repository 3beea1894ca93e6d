r"""Hierarchical text classification (HTC) metrics: micro/macro F1, Hi-MiF1/Hi-MaF1, per level, long tail.

Inputs are boolean ``(N, tree.num_nodes)`` arrays in ``tree.nodes`` order (multi-label: every
label on the path, possibly several paths); the root's column is ignored.

**Hierarchy-consistent F1** (Paper 05 (HyILR) §5.3, Table 3). The paper: "a label is
considered correct only if all its ancestor labels are also predicted correctly". No public
implementation exists; hierviz reads it as follows. A predicted label ``n`` of sample ``i``
*counts* only if every ancestor ``a`` of ``n`` (root excluded) is predicted for ``i`` too:

.. math::
    \hat y^{\mathrm{hi}}_{in} = \hat y_{in} \wedge \bigwedge_{a \in \mathrm{Anc}(n)} \hat y_{ia}.

A prediction that does not count is dropped (it is neither a true nor a false positive; a true
label it would have hit becomes a false negative). Hi-MiF1 and Hi-MaF1 are scikit-learn's
micro and macro F1 of ``y_true`` against ``ŷ^hi``. On path-closed targets (every true label's
ancestors are true) a counted true positive therefore has all its ancestors predicted
*correctly*, which is the paper's sentence. Hi-F1 ≤ F1 label by label in recall; on
hierarchy-consistent predictions the two coincide.

Macro F1 averages over every non-root label, including labels absent from both ``y_true`` and
``y_pred`` (their F1 is 0, scikit-learn's ``zero_division=0``), as HTC code usually does.

Examples
--------
>>> import numpy as np
>>> from hierviz.hierarchy import LabelTree
>>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
>>> tree.nodes
['root', 'a', 'b', 'a1', 'a2', 'b1']
>>> y_true = np.array([[0, 1, 0, 1, 0, 0]], bool)      # a / a1
>>> y_pred = np.array([[0, 0, 0, 1, 0, 0]], bool)      # a1 without its parent
>>> r = hierarchical_f1(y_true, y_pred, tree)
>>> round(r["micro_f1"], 4), r["hi_micro_f1"]          # 1 of 2 found; Hi: a1 does not count
(0.6667, 0.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.metrics import f1_score

from hierviz.metrics.baselines import frequency_prior_targets

__all__ = [
    "hierarchical_f1",
    "hierarchy_consistent",
    "per_level_f1",
    "frequency_bucket_f1",
    "label_columns",
    "CLASSIFIER_METRICS",
    "leaf_path_targets",
    "classifier_scores",
    "frequency_prior_scores",
]

#: The columns of a run's multi-label classifier in ``hierviz compare``'s tables: the
#: keys of :func:`hierarchical_f1` with a ``clf_`` prefix, kept apart from the probe's ``macro_f1``.
CLASSIFIER_METRICS = ("clf_micro_f1", "clf_macro_f1", "clf_hi_micro_f1", "clf_hi_macro_f1")


def label_columns(tree: Any) -> np.ndarray:
    """Indices of the non-root columns of a ``(N, tree.num_nodes)`` array, in ``tree.nodes`` order."""
    return np.array([i for i, n in enumerate(tree.nodes) if n != tree.root], dtype=np.int64)


def _check(y: Any, tree: Any, name: str) -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 2 or a.shape[1] != tree.num_nodes:
        raise ValueError(
            f"{name} must be a (N, tree.num_nodes={tree.num_nodes}) boolean array in tree.nodes order, "
            f"got shape {a.shape}"
        )
    if a.dtype != bool:
        if not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must be boolean (or 0/1), got values other than 0 and 1")
        a = a.astype(bool)
    return a


def _ancestor_matrix(tree: Any) -> np.ndarray:
    """(num_nodes, num_nodes) bool: ``[n, a]`` iff ``a`` is a proper, non-root ancestor of ``n``."""
    idx = tree.node_index
    m = np.zeros((tree.num_nodes, tree.num_nodes), dtype=bool)
    for n in tree.nodes:
        for a in tree.ancestors(n, inclusive=False):
            if a != tree.root:
                m[idx[n], idx[a]] = True
    return m


def hierarchy_consistent(y_pred: Any, tree: Any) -> np.ndarray:
    """Keep a predicted label only where all its (non-root) ancestors are predicted too.

    Parameters
    ----------
    y_pred : array_like, shape (N, tree.num_nodes), bool
    tree : LabelTree

    Returns
    -------
    numpy.ndarray, shape (N, tree.num_nodes), bool
        ``y_pred`` with inconsistent labels switched off (the root column unchanged).

    Examples
    --------
    >>> import numpy as np
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1"], "b": ["b1"]}})  # root, a, b, a1, b1
    >>> hierarchy_consistent(np.array([[0, 1, 0, 1, 1]], bool), tree).astype(int).tolist()
    [[0, 1, 0, 1, 0]]
    """
    p = _check(y_pred, tree, "y_pred")
    anc = _ancestor_matrix(tree)
    # missing[i, n] = number of ancestors of n not predicted for i
    missing = (~p).astype(np.int64) @ anc.T.astype(np.int64)
    return p & (missing == 0)


def _f1(y_true: np.ndarray, y_pred: np.ndarray, average: str) -> float:
    if average == "macro":
        # macro over the labels that occur in the truth or the prediction: a label
        # absent from both has no true positives, false positives or false negatives, and counting it
        # as F1 = 0 made hierarchical_f1(y, y) score 0.4; scikit-learn's zero_division=1 reading
        present = y_true.any(0) | y_pred.any(0)
        y_true, y_pred = y_true[:, present], y_pred[:, present]
    if y_true.shape[1] == 0 or not (y_true.any() or y_pred.any()):  # no positive anywhere: F1 is 0/0
        return float("nan")
    return float(f1_score(y_true, y_pred, average=average, zero_division=0))


def hierarchical_f1(y_true: Any, y_pred: Any, tree: Any) -> dict[str, float]:
    """Micro/macro F1 and the hierarchy-consistent Hi-MiF1/Hi-MaF1 (Paper 05 (HyILR) §5.3).

    Parameters
    ----------
    y_true, y_pred : array_like, shape (N, tree.num_nodes), bool (or 0/1)
        Targets and predictions in ``tree.nodes`` order; the root's column is ignored.
    tree : LabelTree

    Returns
    -------
    dict
        ``micro_f1``, ``macro_f1`` (scikit-learn ``f1_score`` over the non-root labels,
        ``zero_division=0``), ``hi_micro_f1``, ``hi_macro_f1`` (the same on
        :func:`hierarchy_consistent` predictions; module notes), all in [0, 1]. The macro
        averages run over the labels present in ``y_true`` or the predictions: paper 05 §5.2
        defers to the HTC studies' Macro-F1 without defining absent labels, and a label with
        no true and no predicted document has F1 undefined (scikit-learn's ``zero_division``);
        counting it as 0 would make ``hierarchical_f1(y, y)`` less than 1. NaN (micro and
        macro) if no label occurs at all, in the truth or the predictions: F1 is 0/0 there, and
        0.3 scored identical all-negative labels micro-F1 0.0.

    Examples
    --------
    >>> import numpy as np
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> y = np.zeros((2, tree.num_nodes), bool)
    >>> y[0, [tree.node_index["a"], tree.node_index["a1"]]] = True  # a2, b, b1 never occur
    >>> y[1, [tree.node_index["a"], tree.node_index["a1"]]] = True
    >>> hierarchical_f1(y, y, tree)["macro_f1"]
    1.0

    Raises
    ------
    ValueError
        A shape other than ``(N, tree.num_nodes)``, different N, or non-0/1 values.
    """
    t = _check(y_true, tree, "y_true")
    p = _check(y_pred, tree, "y_pred")
    if t.shape != p.shape:
        raise ValueError(f"y_true {t.shape} and y_pred {p.shape} must have the same shape")
    cols = label_columns(tree)
    hi = hierarchy_consistent(p, tree)
    return {
        "micro_f1": _f1(t[:, cols], p[:, cols], "micro"),
        "macro_f1": _f1(t[:, cols], p[:, cols], "macro"),
        "hi_micro_f1": _f1(t[:, cols], hi[:, cols], "micro"),
        "hi_macro_f1": _f1(t[:, cols], hi[:, cols], "macro"),
    }


def per_level_f1(y_true: Any, y_pred: Any, tree: Any) -> list[dict[str, Any]]:
    """Micro and macro F1 of the labels at each depth (Paper 05 (HyILR) §5.5, Fig. 2 (a-b)).

    Parameters
    ----------
    y_true, y_pred : array_like, shape (N, tree.num_nodes), bool
    tree : LabelTree

    Returns
    -------
    list of dict
        One row per level ``1 .. L``: ``level``, ``labels`` (count), ``micro_f1``, ``macro_f1``.

    Examples
    --------
    >>> import numpy as np
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1"], "b": ["b1"]}})  # root, a, b, a1, b1
    >>> t = np.array([[0, 1, 0, 1, 0]], bool)
    >>> [(r["level"], r["micro_f1"]) for r in per_level_f1(t, np.array([[0, 1, 0, 0, 1]], bool), tree)]
    [(1, 1.0), (2, 0.0)]
    """
    t = _check(y_true, tree, "y_true")
    p = _check(y_pred, tree, "y_pred")
    rows = []
    for level, names in enumerate(tree.levels()):
        if level == 0 or not names:
            continue
        cols = np.array([tree.node_index[n] for n in names])
        rows.append(
            {
                "level": level,
                "labels": len(names),
                "micro_f1": _f1(t[:, cols], p[:, cols], "micro"),
                "macro_f1": _f1(t[:, cols], p[:, cols], "macro"),
            }
        )
    return rows


def frequency_bucket_f1(
    y_true: Any, y_pred: Any, tree: Any, train_counts: Sequence[int] | Mapping[str, int] | Any, buckets: int = 4
) -> list[dict[str, Any]]:
    """F1 by label-frequency bucket (Paper 05 (HyILR) §5.5, Fig. 2 (c-d): the long tail).

    Labels (non-root) are sorted by training count, most frequent first (ties by node order),
    and split into ``buckets`` groups of (nearly) equal size, C1 (frequent) … C``buckets``
    (sparse), with :func:`numpy.array_split`.

    Parameters
    ----------
    y_true, y_pred : array_like, shape (N, tree.num_nodes), bool
    tree : LabelTree
    train_counts : array_like of shape (tree.num_nodes,) or mapping name -> count
        Training documents per label (e.g. ``Y_train.sum(0)``).
    buckets : int, default 4

    Returns
    -------
    list of dict
        ``bucket`` ("C1", …), ``labels``, ``min_count``, ``max_count``, ``micro_f1``, ``macro_f1``.

    Raises
    ------
    ValueError
        ``buckets`` < 1 or more than the number of labels; counts of the wrong length.
    """
    t = _check(y_true, tree, "y_true")
    p = _check(y_pred, tree, "y_pred")
    cols = label_columns(tree)
    if isinstance(buckets, bool) or not isinstance(buckets, int) or not 1 <= buckets <= len(cols):
        raise ValueError(f"buckets must be an integer in [1, {len(cols)}] (the number of labels), got {buckets!r}")
    if isinstance(train_counts, Mapping):
        counts = np.array([int(train_counts.get(n, 0)) for n in tree.nodes])
    else:
        counts = np.asarray(train_counts).reshape(-1)
        if counts.shape[0] != tree.num_nodes:
            raise ValueError(f"train_counts must have tree.num_nodes={tree.num_nodes} entries, got {counts.shape[0]}")
    order = cols[np.argsort(-counts[cols], kind="stable")]
    rows = []
    for b, group in enumerate(np.array_split(order, buckets)):
        rows.append(
            {
                "bucket": f"C{b + 1}",
                "labels": len(group),
                "min_count": int(counts[group].min()),
                "max_count": int(counts[group].max()),
                "micro_f1": _f1(t[:, group], p[:, group], "micro"),
                "macro_f1": _f1(t[:, group], p[:, group], "macro"),
            }
        )
    return rows


def leaf_path_targets(y: Any, tree: Any) -> np.ndarray:
    """The label sets of leaf-labelled samples: each leaf and its ancestors, root column False.

    Parameters
    ----------
    y : array_like of int, shape (N,), or of bool, shape (N, tree.num_leaves)
        Leaf indices ``0 .. tree.num_leaves - 1`` (``tree.leaves`` order), or each sample's set
        of leaves (several label paths: the union of their paths).
    tree : LabelTree

    Returns
    -------
    numpy.ndarray, shape (N, tree.num_nodes), bool
        In ``tree.nodes`` order, the input of :func:`hierarchical_f1`.

    Raises
    ------
    ValueError
        ``y`` not 1-D, or a leaf index outside ``[0, tree.num_leaves)``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})  # root, a, b, a1, a2, b1
    >>> leaf_path_targets([1, 2], tree).astype(int).tolist()
    [[0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1]]
    >>> leaf_path_targets([[False, True, True]], tree).astype(int).tolist()  # a2 and b1
    [[0, 1, 1, 0, 1, 1]]
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.dtype == bool:
        if y.shape[1] != tree.num_leaves:
            raise ValueError(f"y: leaf sets must have shape (N, {tree.num_leaves}), got {y.shape}")
        paths = leaf_path_targets(np.arange(tree.num_leaves), tree)
        return (y.astype(np.int64) @ paths.astype(np.int64)) > 0
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of leaf indices, got shape {y.shape}")
    if y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= tree.num_leaves):
        raise ValueError(f"y must hold leaf indices in [0, {tree.num_leaves}), got values in [{y.min()}, {y.max()}]")
    paths = np.zeros((tree.num_leaves, tree.num_nodes), dtype=bool)
    for i, leaf in enumerate(tree.leaves):
        for a in tree.ancestors(leaf, inclusive=True):
            if a != tree.root:
                paths[i, tree.node_index[a]] = True
    return paths[y.astype(np.int64)]


def classifier_scores(y_true: Any, y_pred: Any, tree: Any) -> dict[str, float]:
    """:func:`hierarchical_f1` under the table keys :data:`CLASSIFIER_METRICS` (``clf_`` prefix).

    Examples
    --------
    >>> import numpy as np
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> y = leaf_path_targets([0], tree)
    >>> classifier_scores(y, y, tree)
    {'clf_micro_f1': 1.0, 'clf_macro_f1': 1.0, 'clf_hi_micro_f1': 1.0, 'clf_hi_macro_f1': 1.0}
    """
    return {f"clf_{k}": v for k, v in hierarchical_f1(y_true, y_pred, tree).items()}


def frequency_prior_scores(y_train: Any, y_test: Any, tree: Any) -> dict[str, float]:
    """The classifier columns of the Majority row: the train split's most frequent label set for every test sample.

    The multi-label frequency prior (:func:`hierviz.metrics.baselines.frequency_prior_targets`)
    of the training label sets (:func:`leaf_path_targets`), scored by :func:`classifier_scores`.
    With one leaf per sample it is the majority leaf's path.

    Parameters
    ----------
    y_train, y_test : array_like of int, shape (n,)
        Leaf indices.
    tree : LabelTree

    Returns
    -------
    dict
        :data:`CLASSIFIER_METRICS` in [0, 1].

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> r = frequency_prior_scores([0, 0, 2], [0, 1], tree)  # predicts a, a1 for both
    >>> round(r["clf_micro_f1"], 4)  # TP: a, a1, a; FP: a1; FN: a2 -> 2*3 / (2*3 + 1 + 1)
    0.75
    """
    train = leaf_path_targets(y_train, tree)
    test = leaf_path_targets(y_test, tree)
    return classifier_scores(test, frequency_prior_targets(train, len(test)), tree)
