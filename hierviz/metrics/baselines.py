"""Trivial baselines: what a predictor that ignores its input scores on the same metrics.

A results table without its chance line cannot say whether a method learned anything. On
HAM10000 a constant "nevus" predictor already scores top-1 0.669 (nv is 66.9 % of the
images), and a random ranking of the references scores MAP@20 near 0.48. Every table of
hierviz therefore carries a row for the input-free predictor of its task:

* classification (paper 01, 02, 04): :func:`majority_class_report`, the train split's most
  frequent leaf predicted for every test sample, scored by top-1, HF1, H-Acc and the
  imbalance-aware :func:`imbalance_metrics` (balanced accuracy, macro-F1);
* retrieval (paper 03): :func:`random_ranking_scores`, the exact expectation of MAP@k,
  P@1 and R-precision over uniformly random rankings of the references (derivation in its
  docstring), computed from the class counts alone;
* multi-label (paper 05): :func:`frequency_prior_targets`, the train split's most frequent
  label set predicted for every document.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.metrics import balanced_accuracy_score, f1_score

from hierviz.metrics.hierarchy import h_acc, hf1

__all__ = [
    "imbalance_metrics",
    "majority_class",
    "majority_class_report",
    "random_ranking_scores",
    "frequency_prior_targets",
]


def _int_labels(y: Any, name: str) -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of leaf indices, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integer leaf indices, got dtype {a.dtype}")
    if a.min() < 0:
        raise ValueError(f"{name} holds negative leaf indices; pass indices 0 .. C-1")
    return a.astype(np.int64)


def imbalance_metrics(y_true: Any, y_pred: Any) -> dict[str, float]:
    """Balanced accuracy and macro-F1 of leaf predictions (scikit-learn).

    ``bal_acc`` is :func:`sklearn.metrics.balanced_accuracy_score`, the mean per-class recall
    over the classes present in ``y_true``; ``macro_f1`` is
    :func:`sklearn.metrics.f1_score` with ``average="macro"`` and ``zero_division=0``, over
    the classes present in ``y_true`` or ``y_pred``. A constant predictor scores
    ``bal_acc = 1 / C`` whatever the class shares, where top-1 rewards the majority class.

    Parameters
    ----------
    y_true, y_pred : array-like of int, shape (n,)
        Leaf indices.

    Returns
    -------
    dict
        ``{"bal_acc": float, "macro_f1": float}``, both in [0, 1].

    Raises
    ------
    ValueError
        Empty, non-integer, negative or differently sized inputs.

    Examples
    --------
    >>> imbalance_metrics([0, 0, 0, 1], [0, 0, 0, 0])
    {'bal_acc': 0.5, 'macro_f1': 0.42857142857142855}
    """
    t, p = _int_labels(y_true, "y_true"), _int_labels(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {t.size} and {p.size}")
    with warnings.catch_warnings():  # "y_pred contains classes not in y_true": intended here
        warnings.simplefilter("ignore")
        return {
            "bal_acc": float(balanced_accuracy_score(t, p)),
            "macro_f1": float(f1_score(t, p, average="macro", zero_division=0)),
        }


def majority_class(y_train: Any) -> int:
    """The most frequent leaf of the training labels (the smallest index on a tie).

    Examples
    --------
    >>> majority_class([2, 1, 2, 1, 0])
    1
    """
    return int(np.argmax(np.bincount(_int_labels(y_train, "y_train"))))


def majority_class_report(y_train: Any, y_test: Any, tree: Any) -> dict[str, float]:
    """The Majority-class row: the train split's most frequent leaf predicted for every test sample.

    Scored by the metrics that need only predictions: ``top1``, ``hf1``, ``h_acc``
    (:func:`hierviz.metrics.hf1`, :func:`hierviz.metrics.h_acc`) and
    :func:`imbalance_metrics`. Violations and PC-Order rank *embeddings* against parent
    prototypes; a constant predictor has no embedding, so they are NaN (the tables show
    "–" with a footnote).

    Parameters
    ----------
    y_train, y_test : array-like of int, shape (n,)
        Leaf indices ``0 .. tree.num_leaves - 1``.
    tree : LabelTree

    Returns
    -------
    dict
        ``top1, hf1, h_acc, violations (nan), pc_order (nan), bal_acc, macro_f1`` and
        ``majority_leaf`` (the leaf's index, a float like the other cells).

    Raises
    ------
    ValueError
        Bad labels (see :func:`imbalance_metrics`) or leaves outside the tree.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> rep = majority_class_report([0, 0, 2], [0, 1, 2, 2], tree)  # always a1: right, sibling, 2 x other branch
    >>> [round(rep[k], 4) for k in ("top1", "hf1", "h_acc", "bal_acc")]  # HF1 = H-Acc = (1 + 1/2 + 0 + 0) / 4
    [0.25, 0.375, 0.375, 0.3333]
    """
    y_tr, y_te = _int_labels(y_train, "y_train"), _int_labels(y_test, "y_test")
    C = int(tree.num_leaves)
    if max(y_tr.max(), y_te.max()) >= C:
        raise ValueError(f"labels must be leaf indices below tree.num_leaves={C}")
    leaf = majority_class(y_tr)
    pred = np.full_like(y_te, leaf)
    out = {
        "top1": float((pred == y_te).mean()),
        "hf1": float(hf1(y_te, pred, tree)),
        "h_acc": float(h_acc(y_te, pred, tree)),
        "violations": float("nan"),
        "pc_order": float("nan"),
    }
    out.update(imbalance_metrics(y_te, pred))
    out["majority_leaf"] = float(leaf)
    return out


def random_ranking_scores(
    query_labels: Any, gallery_labels: Any, ks: tuple[int, ...] = (1, 5, 10, 20), *, denominator: str = "min_k_r"
) -> dict[str, float]:
    r"""Expected MAP@k, P@1 and R-precision of a uniformly random ranking of the gallery.

    For a query with :math:`R` relevant items among :math:`G` references, a uniformly
    random permutation makes the relevance :math:`r_j` of rank :math:`j` exchangeable:
    :math:`E[r_j] = R/G` and, for :math:`i \ne j`, :math:`E[r_i r_j] = R(R-1)/(G(G-1))`.
    With :math:`P@j = \frac1j \sum_{i \le j} r_i`,

    .. math::

        E[r_j\, P@j] = \frac1j \Big(\frac{R}{G} + (j-1)\frac{R(R-1)}{G(G-1)}\Big),
        \qquad
        E[AP@k] = \frac{1}{n} \sum_{j=1}^{k} E[r_j\, P@j],

    because the normaliser :math:`n` of ``"min_k_r"`` (:math:`\min(k, R)`), ``"r"``
    (:math:`R`) and ``"k"`` (:math:`k`) does not depend on the ranking (the ``"hits"``
    normaliser does, and is refused). :math:`E[P@1] = E[\text{R-precision}] = R/G`.
    MAP is the mean over queries, so only the class counts of queries and gallery matter.
    ``tests/test_baselines.py`` checks the formula against a Monte-Carlo of random rankings
    scored by :func:`hierviz.metrics.map_at_k`.

    Parameters
    ----------
    query_labels, gallery_labels : array-like of int, shapes (Q,) and (G,)
        Every query's class must occur in the gallery (as :func:`hierviz.metrics.map_at_k`).
    ks : tuple of int, default (1, 5, 10, 20)
        Cut-offs, each in [1, G].
    denominator : {"min_k_r", "r", "k"}, default "min_k_r"
        The AP@k normaliser (:func:`hierviz.metrics.map_at_k`).

    Returns
    -------
    dict
        ``{"map@1": …, …, "p@1": …, "r_precision": …}``, floats in [0, 1] (the keys of
        :func:`hierviz.retrieval.retrieval_metrics`, without the tree NDCG).

    Raises
    ------
    ValueError
        A query class absent from the gallery, a cut-off outside [1, G], an unknown or
        ranking-dependent ``denominator``.

    Examples
    --------
    Two classes, 2 and 1 references; a query of class 0 finds a relevant item first with
    probability 2/3:

    >>> s = random_ranking_scores([0], [0, 0, 1], ks=(1, 3))
    >>> round(s["map@1"], 4), round(s["map@3"], 4), round(s["r_precision"], 4)
    (0.6667, 0.8056, 0.6667)
    """
    yq, yg = _int_labels(query_labels, "query_labels"), _int_labels(gallery_labels, "gallery_labels")
    if denominator not in ("min_k_r", "r", "k"):
        raise ValueError(
            f"denominator must be 'min_k_r', 'r' or 'k' (the 'hits' normaliser depends on the ranking), "
            f"got {denominator!r}"
        )
    G = yg.size
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= G:
            raise ValueError(f"ks: each cut-off must be an integer in [1, {G}] (the gallery size), got {k!r}")
    counts = np.bincount(yg, minlength=int(max(yq.max(), yg.max())) + 1).astype(np.float64)
    R = counts[yq]
    if (R == 0).any():
        missing = sorted(set(yq[R == 0].tolist()))
        raise ValueError(f"query_labels: classes {missing[:5]} have no reference in gallery_labels")
    p1 = R / G
    pair = R * (R - 1) / (G * (G - 1)) if G > 1 else np.zeros_like(R)
    out: dict[str, float] = {}
    for k in ks:
        j = np.arange(1, k + 1, dtype=np.float64)
        # sum_j (1/j) (p1 + (j-1) pair) = p1 H_k + pair (k - H_k)
        Hk = float((1.0 / j).sum())
        total = p1 * Hk + pair * (k - Hk)
        n = {"min_k_r": np.minimum(k, R), "r": R, "k": np.full_like(R, k)}[denominator]
        out[f"map@{k}"] = float(np.mean(total / n))
    out["p@1"] = float(p1.mean())
    out["r_precision"] = float(p1.mean())
    return out


def frequency_prior_targets(Y_train: Any, n: int) -> np.ndarray:
    """The multi-label frequency prior: the train split's most frequent label set, for ``n`` documents.

    The multi-label analogue of the majority class: every test document is given the label
    set (a row of ``Y_train``) that occurs most often in training (the first such row on a
    tie). On a tree-closed target set it is hierarchy-consistent.

    Parameters
    ----------
    Y_train : array-like of bool or 0/1, shape (N, L)
        Training targets (e.g. ``HTCData.targets`` of the train split).
    n : int
        Number of test documents.

    Returns
    -------
    numpy.ndarray, shape (n, L), bool

    Raises
    ------
    ValueError
        ``Y_train`` not a non-empty 2-D 0/1 array, or ``n`` < 1.

    Examples
    --------
    >>> frequency_prior_targets([[1, 0, 1], [1, 1, 0], [1, 0, 1]], 2).astype(int).tolist()
    [[1, 0, 1], [1, 0, 1]]
    """
    Y = np.asarray(Y_train)
    if Y.ndim != 2 or Y.shape[0] == 0:
        raise ValueError(f"Y_train must be a non-empty (N, L) 0/1 array, got shape {Y.shape}")
    if not np.isin(Y, (0, 1)).all():
        raise ValueError("Y_train must hold only 0/1 (or bool) values")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (the number of test documents), got {n!r}")
    rows, first, counts = np.unique(Y.astype(bool), axis=0, return_index=True, return_counts=True)
    best = np.flatnonzero(counts == counts.max())
    pick = best[np.argmin(first[best])]
    return np.repeat(rows[pick][None, :], int(n), axis=0)
