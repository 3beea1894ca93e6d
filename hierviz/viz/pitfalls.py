"""Figures and the live panel of notebook 11 (evaluation and its pitfalls).

Every number drawn here comes from the library's metrics (:mod:`hierviz.metrics`) or from
scikit-learn; nothing is re-implemented.

* :func:`imbalanced_labels` / :func:`simulated_predictions` -- labels with a chosen majority
  share on a label tree, and a classifier of known per-class recall whose mistakes go to a
  sibling leaf first;
* :func:`imbalance_metrics` / :func:`imbalance_figure` / :func:`imbalance_panel` -- accuracy,
  balanced accuracy, macro-F1, HF1 and H-Acc of that classifier, of the majority-class
  predictor and of chance, as the majority share moves (slider);
* :func:`hf1_hacc_figure` -- HF1 against H-Acc for every (true, predicted) leaf pair of a tree;
* :func:`map_chance_figure` -- MAP@k of random rankings for each denominator;
* :func:`paired_runs_figure` -- two methods' per-pair values joined by lines, with the paired
  and unpaired confidence intervals of their difference (:func:`hierviz.course.paired_ci`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from hierviz.course import paired_ci
from hierviz.data import load_tree
from hierviz.metrics import h_acc, hf1, map_at_k
from hierviz.metrics.retrieval import MAP_DENOMINATORS

__all__ = [
    "imbalanced_labels",
    "simulated_predictions",
    "imbalance_metrics",
    "imbalance_figure",
    "imbalance_panel",
    "hf1_hacc_figure",
    "map_chance_figure",
    "paired_runs_figure",
]

_COLOURS = {"classifier": "#1f77b4", "majority class": "#d62728", "chance (stratified)": "#7f7f7f"}
IMBALANCE_METRICS = ("accuracy", "balanced accuracy", "macro-F1", "HF1", "H-Acc")


def _tree(tree: Any):
    if tree is None:
        return load_tree("two-step")
    return tree


def imbalanced_labels(tree: Any, majority: float, n: int = 2000, seed: int = 0) -> np.ndarray:
    """Leaf labels where leaf 0 has share ``majority`` and the other leaves split the rest evenly.

    Parameters
    ----------
    tree : LabelTree
    majority : float in [1/C, 1)
        Share of leaf 0 (C = ``tree.num_leaves``).
    n : int, default 2000
    seed : int, default 0

    Returns
    -------
    numpy.ndarray, shape (n,), int64
        Exactly ``round(majority * n)`` zeros; the rest spread as evenly as possible, shuffled.

    Raises
    ------
    ValueError
        ``majority`` outside [1/C, 1) or ``n < C``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> np.bincount(imbalanced_labels(t, 0.6, 10)).tolist()
    [6, 2, 2]
    """
    C = tree.num_leaves
    if not 1.0 / C - 1e-9 <= float(majority) < 1.0:
        raise ValueError(f"majority must be in [1/{C}, 1) for a tree of {C} leaves, got {majority!r}")
    if n < C:
        raise ValueError(f"n must be at least the number of leaves ({C}), got {n}")
    n0 = int(round(majority * n))
    rest = n - n0
    counts = [n0] + [rest // (C - 1) + (1 if i < rest % (C - 1) else 0) for i in range(C - 1)]
    y = np.repeat(np.arange(C), counts)
    return np.random.default_rng(seed).permutation(y).astype(np.int64)


def simulated_predictions(
    y: Any, tree: Any, recall: float = 0.7, sibling_share: float = 0.5, seed: int = 0
) -> np.ndarray:
    """A classifier with the same recall on every class; a mistake goes to a sibling leaf first.

    Each sample is predicted right with probability ``recall``; a wrong prediction is, with
    probability ``sibling_share``, a leaf with the same parent (when there is one), else a
    uniformly drawn other leaf.

    Parameters
    ----------
    y : array-like of int, shape (n,)
    tree : LabelTree
    recall : float in [0, 1], default 0.7
    sibling_share : float in [0, 1], default 0.5
    seed : int, default 0

    Returns
    -------
    numpy.ndarray, shape (n,), int64

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> simulated_predictions([0, 1, 2], t, recall=1.0).tolist()
    [0, 1, 2]
    """
    for name, v in (("recall", recall), ("sibling_share", sibling_share)):
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {v!r}")
    y = np.asarray(y, dtype=np.int64)
    C = tree.num_leaves
    parent = [tree.parent(leaf) for leaf in tree.leaves]
    rng = np.random.default_rng(seed)
    right = rng.random(len(y)) < recall
    to_sibling = rng.random(len(y)) < sibling_share
    u = rng.random(len(y))
    pred = y.copy()
    for c in range(C):
        others = np.array([j for j in range(C) if j != c])
        sibs = np.array([j for j in others if parent[j] == parent[c]])
        rows = np.flatnonzero((y == c) & ~right)
        pick_sib = to_sibling[rows] & (len(sibs) > 0)
        if len(sibs):
            pred[rows[pick_sib]] = sibs[(u[rows[pick_sib]] * len(sibs)).astype(int)]
        rest = rows[~pick_sib]
        pred[rest] = others[(u[rest] * len(others)).astype(int)]
    return pred


def imbalance_metrics(
    majority: float = 0.6, recall: float = 0.7, *, tree: Any = None, n: int = 2000, seed: int = 0
) -> dict[str, dict[str, float]]:
    """Five metrics of three predictors on labels with leaf 0's share ``majority``.

    Predictors: ``"classifier"`` (:func:`simulated_predictions` with ``recall``),
    ``"majority class"`` (always leaf 0) and ``"chance (stratified)"`` (a random leaf drawn
    from the label distribution). Metrics: accuracy, balanced accuracy and macro-F1
    (scikit-learn), HF1 and H-Acc (:func:`hierviz.metrics.hf1`, :func:`hierviz.metrics.h_acc`).

    Parameters
    ----------
    majority : float, default 0.6
        Share of leaf 0 (nv on the default tree: 0.60 on the bundled HAM10000 sample).
    recall : float, default 0.7
    tree : LabelTree, optional
        Default the HAM10000 two-step tree (7 leaves, 3 levels).
    n : int, default 2000
    seed : int, default 0

    Returns
    -------
    dict
        ``{predictor: {metric: value}}``, values in [0, 1].

    Examples
    --------
    >>> m = imbalance_metrics(0.9, 0.7)
    >>> round(m["majority class"]["accuracy"], 2), round(m["majority class"]["balanced accuracy"], 3)
    (0.9, 0.143)
    """
    tree = _tree(tree)
    y = imbalanced_labels(tree, majority, n, seed)
    preds = {
        "classifier": simulated_predictions(y, tree, recall, seed=seed + 1),
        "majority class": np.zeros_like(y),
        "chance (stratified)": np.random.default_rng(seed + 2).permutation(y),
    }
    # Every metric here is a function of the confusion counts: score the C² (true, predicted)
    # pairs once, weighted by their counts (same values as on the n samples, a panel move stays fast).
    C = tree.num_leaves
    yt, yp, pair_hf1, pair_hacc = _pair_scores(tree)
    labels = np.arange(C)
    out = {}
    for name, p in preds.items():
        w = np.bincount(y * C + p, minlength=C * C).astype(float)
        keep = w > 0
        a, b, ww = yt[keep], yp[keep], w[keep]
        out[name] = {
            "accuracy": float(accuracy_score(a, b, sample_weight=ww)),
            "balanced accuracy": float(balanced_accuracy_score(a, b, sample_weight=ww)),
            "macro-F1": float(f1_score(a, b, labels=labels, average="macro", sample_weight=ww, zero_division=0)),
            "HF1": float(np.average(pair_hf1[keep], weights=ww)),
            "H-Acc": float(np.average(pair_hacc[keep], weights=ww)),
        }
    return out


_PAIR_CACHE: dict[int, tuple[Any, tuple[np.ndarray, ...]]] = {}


def _pair_scores(tree: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All C² (true, predicted) leaf pairs and their HF1 / H-Acc (:mod:`hierviz.metrics`), cached per tree."""
    hit = _PAIR_CACHE.get(id(tree))
    if hit is None or hit[0] is not tree:
        C = tree.num_leaves
        yt, yp = torch.arange(C).repeat_interleave(C), torch.arange(C).repeat(C)
        scores = (
            yt.numpy(),
            yp.numpy(),
            hf1(yt, yp, tree, reduction="none").numpy(),
            h_acc(yt, yp, tree, reduction="none").numpy(),
        )
        hit = _PAIR_CACHE[id(tree)] = (tree, scores)
    return hit[1]


def imbalance_figure(majority: float = 0.6, recall: float = 0.7, *, tree: Any = None, n: int = 2000) -> go.Figure:
    """Grouped bars of :func:`imbalance_metrics`: one group per metric, one bar per predictor.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig.layout.meta`` = the :func:`imbalance_metrics` dict.
    """
    m = imbalance_metrics(majority, recall, tree=tree, n=n)
    data = [
        dict(
            type="bar",
            name=name,
            x=list(IMBALANCE_METRICS),
            y=[vals[k] for k in IMBALANCE_METRICS],
            marker=dict(color=_COLOURS[name]),
            text=[f"{vals[k]:.2f}" for k in IMBALANCE_METRICS],
            textposition="outside",
        )
        for name, vals in m.items()
    ]
    return go.Figure(
        data=data,
        layout=dict(
            barmode="group",
            yaxis=dict(range=[0, 1.1], title=dict(text="score")),
            title=dict(
                text=f"majority class {100 * majority:.0f} % of {n} samples · classifier recall {recall:.2f} on every class"
            ),
            height=420,
            meta=m,
        ),
    )


def imbalance_panel(majority: float = 0.6, recall: float = 0.7, *, tree: Any = None, n: int = 2000):
    """Sliders for the majority share (0.15–0.95) and the classifier's recall over :func:`imbalance_figure`.

    Returns
    -------
    hierviz.viz.widgets.Panel
        Controls ``"majority"`` and ``"recall"``.
    """
    from hierviz.viz.widgets import Panel, slider  # heavy: ipywidgets (viz.widgets imports it)

    tree = _tree(tree)
    lo = round(max(0.15, 1.0 / tree.num_leaves), 2)
    controls = {
        "majority": slider("majority-class share", majority, lo, 0.95, 0.05),
        "recall": slider("classifier recall (every class)", recall, 0.3, 0.95, 0.05),
    }
    return Panel(
        controls,
        lambda majority, recall: imbalance_figure(majority, recall, tree=tree, n=n),
        "Class imbalance: which metric notices that a classifier beats the majority class?",
    )


def hf1_hacc_figure(tree: Any, title: str | None = None) -> go.Figure:
    """HF1 against H-Acc for every ordered (true, predicted) pair of leaves of ``tree``.

    On a tree whose leaves all sit at one depth the two agree exactly (both are
    :math:`|A_y\\cap A_{\\hat y}|/L`); where depths differ they part.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig.layout.meta``: ``{"max_abs_diff": float}``.
    """
    C = tree.num_leaves
    yt = torch.arange(C).repeat_interleave(C)
    yp = torch.arange(C).repeat(C)
    a = hf1(yt, yp, tree, reduction="none").numpy()
    b = h_acc(yt, yp, tree, reduction="none").numpy()
    names = tree.leaves
    hover = [f"{names[i]} → {names[j]}" for i, j in zip(yt.tolist(), yp.tolist())]
    fig = go.Figure(
        data=[
            dict(
                type="scatter",
                x=[0, 1],
                y=[0, 1],
                mode="lines",
                line=dict(color="grey", dash="dot"),
                name="HF1 = H-Acc",
            ),
            dict(type="scatter", x=b, y=a, mode="markers", text=hover, name="(true, predicted) leaf pair", opacity=0.6),
        ],
        layout=dict(
            xaxis=dict(title=dict(text="H-Acc = 1 − d_T / 2L"), range=[-0.02, 1.02]),
            yaxis=dict(title=dict(text="HF1"), range=[-0.02, 1.02]),
            title=dict(text=title or f"HF1 vs H-Acc over all {C * C} leaf pairs"),
            height=420,
            meta={"max_abs_diff": float(np.abs(a - b).max())},
        ),
    )
    return fig


def map_chance_figure(y_query: Any, y_gallery: Any, ks: Any = (1, 5, 10, 20, 50), seeds: int = 3) -> go.Figure:
    """MAP@k of random rankings (uniform random distances) for each denominator of :func:`map_at_k`.

    Parameters
    ----------
    y_query, y_gallery : array-like of int
    ks : sequence of int
    seeds : int, default 3
        Random rankings averaged.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig.layout.meta``: ``{denominator: [MAP@k per k]}`` and ``"prior"``, the chance that a
        random reference is relevant (:math:`\\sum_c p^q_c\\,p^g_c`).
    """
    yq = torch.as_tensor(np.asarray(y_query))
    yg = torch.as_tensor(np.asarray(y_gallery))
    g = torch.Generator().manual_seed(0)
    runs = [torch.rand(len(yq), len(yg), generator=g, dtype=torch.float64) for _ in range(seeds)]
    res = {
        den: [float(np.mean([map_at_k(D, yq, yg, k=int(k), denominator=den) for D in runs])) for k in ks]
        for den in MAP_DENOMINATORS
    }
    pq = np.bincount(yq.numpy(), minlength=int(max(yq.max(), yg.max())) + 1) / len(yq)
    pg = np.bincount(yg.numpy(), minlength=len(pq)) / len(yg)
    prior = float((pq * pg).sum())
    data = [
        dict(type="scatter", x=list(ks), y=[100 * v for v in vals], mode="lines+markers", name=f"denominator={den!r}")
        for den, vals in res.items()
    ]
    data.append(
        dict(
            type="scatter",
            x=[min(ks), max(ks)],
            y=[100 * prior] * 2,
            mode="lines",
            line=dict(color="black", dash="dot"),
            name="Σ p_c² (share of relevant references)",
        )
    )
    return go.Figure(
        data=data,
        layout=dict(
            xaxis=dict(title=dict(text="k"), type="log"),
            yaxis=dict(title=dict(text="MAP@k of a random ranking (%)")),
            title=dict(text="Chance level of MAP@k depends on the denominator"),
            height=420,
            meta={**res, "prior": prior},
        ),
    )


def paired_runs_figure(a: Any, b: Any, names: tuple[str, str] = ("A", "B"), confidence: float = 0.95) -> go.Figure:
    """Left: each pair's two values joined by a line; right: the paired and unpaired CIs of ``a - b``.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig.layout.meta`` = :func:`hierviz.course.paired_ci` ``(a, b, confidence)``.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    ci = paired_ci(a, b, confidence)
    data = [
        dict(
            type="scatter",
            x=list(names),
            y=[x, y],
            mode="lines+markers",
            line=dict(color="#1f77b4"),
            showlegend=i == 0,
            name="one pair (seed / fold)",
        )
        for i, (x, y) in enumerate(zip(a, b))
    ]
    m = ci["mean_diff"]
    data.append(
        dict(
            type="scatter",
            x=["paired t", "unpaired (Welch)"],
            y=[m, m],
            mode="markers",
            marker=dict(size=10, color="#d62728"),
            error_y=dict(
                type="data",
                symmetric=False,
                array=[ci["high"] - m, ci["unpaired_high"] - m],
                arrayminus=[m - ci["low"], m - ci["unpaired_low"]],
            ),
            xaxis="x2",
            yaxis="y2",
            name=f"mean of {names[0]} − {names[1]}, {100 * confidence:.0f} % CI",
        )
    )
    data.append(
        dict(
            type="scatter",
            x=["paired t", "unpaired (Welch)"],
            y=[0, 0],
            mode="lines",
            line=dict(color="grey", dash="dot"),
            xaxis="x2",
            yaxis="y2",
            showlegend=False,
        )
    )
    return go.Figure(
        data=data,
        layout=dict(
            xaxis=dict(domain=[0, 0.4]),
            xaxis2=dict(domain=[0.55, 1.0], anchor="y2"),
            yaxis=dict(title=dict(text="metric")),
            yaxis2=dict(anchor="x2", title=dict(text="difference")),
            title=dict(
                text=f"{len(a)} pairs: paired CI [{ci['low']:.4f}, {ci['high']:.4f}], "
                f"unpaired [{ci['unpaired_low']:.4f}, {ci['unpaired_high']:.4f}]"
            ),
            height=420,
            meta=ci,
        ),
    )
