"""Figures and panels of notebook 08 (Paper 04 (Generalised triplets)): tree triplets, the margin,
unseen leaves and the ranking metrics.

Every panel wraps a module-level plain function that builds the figure (tests and papermill
call those directly), as :mod:`hierviz.viz.widgets`:

* :func:`triplet_step_figure` / :func:`triplet_panel` -- the k-th tree triplet of an epoch
  drawn on the tree (anchor, positive, negative leaves, their LCA), with a step slider;
* :func:`triplet_margin_figure` / :func:`triplet_margin_panel` -- the hinge
  ``max(0, d_ap - d_an + α)`` of every triplet of a toy embedding, with a margin slider;
* :func:`unseen_figure` -- 2-D PCA of test embeddings with the unseen leaves' samples marked
  and their lowest seen ancestors named;
* :func:`ranking_figure` -- one query's ranked candidates with their tree-graded relevance,
  RP@k, MNR and NDCG (computed by :mod:`hierviz.metrics.ranking`).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch

from hierviz.data.toys import toy_tangent_points
from hierviz.losses import TripletLoss
from hierviz.losses.triplet import triplet_distances
from hierviz.metrics.ranking import mnr, ndcg_tree, rp_at_k
from hierviz.metrics.retrieval import tree_relevance
from hierviz.samplers import TreeTripletSampler
from hierviz.viz.tree import leaf_colors, plot_tree, tree_layout
from hierviz.viz.widgets import Panel, slider

__all__ = [
    "triplet_step_figure",
    "triplet_panel",
    "toy_triplet_embedding",
    "triplet_margin_figure",
    "triplet_margin_panel",
    "unseen_figure",
    "ranking_figure",
]

_ROLE_COLORS = {"anchor": "#2ca02c", "positive": "#1f77b4", "negative": "#d62728"}


def triplet_step_figure(tree: Any, labels: Any, step: int = 0, seed: int = 0) -> go.Figure:
    """The ``step``-th triplet of epoch 0 of :class:`~hierviz.samplers.TreeTripletSampler` on the tree.

    Parameters
    ----------
    tree : LabelTree
    labels : array-like of int, shape (N,)
        Leaf index of every sample.
    step : int, default 0
        Triplet index, taken modulo the epoch length.
    seed : int, default 0

    Returns
    -------
    plotly.graph_objects.Figure
        The tree (:func:`hierviz.viz.plot_tree`) plus traces ``"anchor"``, ``"positive"``,
        ``"negative"`` (rings on their leaves) and ``"LCA"`` (a star on the anchor's and
        positive's lowest common ancestor); the title names all four.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> fig = triplet_step_figure(t, [0, 0, 1, 1, 2, 2], step=0)
    >>> [tr.name for tr in fig.data][-4:]
    ['anchor', 'positive', 'negative', 'LCA']
    """
    y = np.asarray(labels, dtype=np.int64)
    s = TreeTripletSampler(y, tree, seed=seed)
    trip = s.epoch_triplets()
    k = int(step) % len(trip)
    a, p, n = (int(i) for i in trip[k])
    leaves = {
        role: tree.leaves[int(y[i])] for role, i in zip(("anchor", "positive", "negative"), (a, p, n), strict=True)
    }
    lca = tree.nodes[int(tree.lca(torch.tensor([y[a]]), torch.tensor([y[p]]))[0])]
    fig = plot_tree(tree, layout="rows")
    pos = tree_layout(tree, "rows")
    sizes = {"anchor": 30, "positive": 24, "negative": 30}
    for role, leaf in leaves.items():
        x0, y0 = pos[leaf]
        fig.add_trace(
            go.Scatter(
                x=[x0],
                y=[y0],
                mode="markers",
                name=role,
                marker=dict(size=sizes[role], color="rgba(0,0,0,0)", line=dict(width=4, color=_ROLE_COLORS[role])),
                hovertext=[f"{role}: sample {dict(anchor=a, positive=p, negative=n)[role]} of leaf {leaf}"],
                hoverinfo="text",
            )
        )
    x0, y0 = pos[lca]
    fig.add_trace(
        go.Scatter(x=[x0], y=[y0], mode="markers", name="LCA", marker=dict(symbol="star", size=20, color="#ff7f0e"))
    )
    fig.update_layout(
        title=f"triplet {k + 1}/{len(trip)}: anchor {leaves['anchor']}, positive {leaves['positive']} "
        f"(LCA {lca}), negative {leaves['negative']} (outside {lca})",
        showlegend=True,
    )
    return fig


def triplet_panel(tree: Any, labels: Any, seed: int = 0) -> Panel:
    """A step slider over :func:`triplet_step_figure` (one epoch of tree triplets).

    Returns
    -------
    Panel
        Control ``"step"`` (an ``IntSlider`` over the epoch's triplets).
    """
    n = len(TreeTripletSampler(np.asarray(labels, dtype=np.int64), tree, seed=seed))
    step = widgets.IntSlider(value=0, min=0, max=n - 1, step=1, description="triplet", continuous_update=False)
    return Panel({"step": step}, lambda step: triplet_step_figure(tree, labels, step, seed), "Tree triplets, §II-B")


def toy_triplet_embedding(tree: Any, n_per_leaf: int = 6, spread: float = 0.35, seed: int = 0):
    """Toy unit-circle embeddings that follow the tree, and one epoch of tree triplets on them.

    Parameters
    ----------
    tree : LabelTree
    n_per_leaf : int, default 6
    spread : float, default 0.35
        Noise of :func:`hierviz.data.toys.toy_tangent_points`.
    seed : int, default 0

    Returns
    -------
    z : numpy.ndarray, shape (3T, 1, 2), float32
        The triplets' points on the unit circle, in ``(anchor, positive, negative)`` order.
    labels : numpy.ndarray, shape (3T,), int64
    """
    pts, y = toy_tangent_points(tree, n_per_leaf=n_per_leaf, spread=spread, seed=seed)
    pts = pts / np.linalg.norm(pts, axis=1, keepdims=True)
    trip = TreeTripletSampler(y, tree, seed=seed).epoch_triplets().reshape(-1)
    return pts[trip][:, None, :].astype(np.float32), np.asarray(y)[trip].astype(np.int64)


def triplet_margin_figure(z: Any, margin: float) -> go.Figure:
    """The triplet hinge of Paper 04 (Generalised triplets) Eq. 1 for every triplet of ``z``.

    x: :math:`\\Delta = d_{an} - d_{ap}` (how much closer the positive is), y: the loss
    :math:`\\max(0, \\alpha - \\Delta)`; the title gives the mean loss (= ``TripletLoss``) and
    the share of active triplets (loss > 0), which rises with the margin α.

    Parameters
    ----------
    z : array-like, shape (3B, V, d)
        Triplet-ordered embeddings (:func:`toy_triplet_embedding`).
    margin : float >= 0

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``"hinge"`` (the curve) and ``"triplets"`` (points).
    """
    zt = torch.as_tensor(np.asarray(z), dtype=torch.float64)
    loss = TripletLoss(margin=margin)
    d_ap, d_an = triplet_distances(zt)
    delta = (d_an - d_ap).flatten().numpy()
    val = np.maximum(0.0, margin - delta)
    grid = np.linspace(min(-2.0, delta.min()), max(2.0, delta.max()), 200)
    fig = go.Figure(
        [
            go.Scatter(x=grid, y=np.maximum(0.0, margin - grid), mode="lines", name="hinge"),
            go.Scatter(x=delta, y=val, mode="markers", name="triplets", marker=dict(size=7, opacity=0.7)),
        ]
    )
    fig.update_layout(
        title=f"margin α = {margin:.2f}: mean loss {float(loss(zt)):.3f}, active triplets {np.mean(val > 0):.0%}",
        xaxis_title="d_an − d_ap (distance = −cos)",
        yaxis_title="max(0, d_ap − d_an + α)",
    )
    return fig


def triplet_margin_panel(z: Any, margin: float = 0.3) -> Panel:
    """A margin slider α ∈ [0, 1] over :func:`triplet_margin_figure`."""
    return Panel(
        {"margin": slider("margin α", margin, 0.0, 1.0, 0.05)},
        lambda margin: triplet_margin_figure(z, margin),
        "Triplet margin (Paper 04 Eq. 1)",
    )


def unseen_figure(z: Any, labels: Any, unseen_leaves: Any, tree: Any, seen_leaves: Any = None) -> go.Figure:
    """2-D PCA of embeddings; samples of unseen leaves drawn as crosses, named with their LSA.

    Parameters
    ----------
    z : array-like, shape (n, D)
    labels : array-like of int, shape (n,)
    unseen_leaves : array-like of int
    tree : LabelTree
    seen_leaves : array-like of int, optional
        Default: the leaves in ``labels`` that are not unseen.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per leaf, named ``"<leaf>"`` (seen) or ``"<leaf> (unseen, LSA <node>)"``.
    """
    from sklearn.decomposition import PCA  # heavy: scikit-learn's decomposition module, imported on first use

    Z = np.asarray(z, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    un = {int(u) for u in np.asarray(unseen_leaves).tolist()}
    seen = sorted(set(y.tolist()) - un) if seen_leaves is None else [int(s) for s in np.asarray(seen_leaves)]
    xy = PCA(2, random_state=0).fit_transform(Z) if Z.shape[1] > 2 else Z
    colors = leaf_colors(tree)
    fig = go.Figure()
    for c in np.unique(y):
        leaf = tree.leaves[int(c)]
        rows = y == c
        if int(c) in un:
            name = f"{leaf} (unseen, LSA {tree.lowest_seen_ancestor(leaf, seen)})"
            marker = dict(symbol="x", size=9, color=colors[leaf], line=dict(width=1, color="black"))
        else:
            name, marker = leaf, dict(size=5, color=colors[leaf], opacity=0.6)
        fig.add_trace(go.Scatter(x=xy[rows, 0], y=xy[rows, 1], mode="markers", name=name, marker=marker))
    fig.update_layout(title="Test embeddings (PCA): crosses are leaves never seen in training", xaxis_title="PC 1")
    return fig


def ranking_figure(scores: Any, query_label: int, gallery_labels: Any, tree: Any, k: int = 5) -> go.Figure:
    """One query's ranking: candidates by decreasing similarity, bars = tree relevance (rel_sum).

    The title gives that query's RP@k, MNR and NDCG_sum/max from :mod:`hierviz.metrics.ranking`.

    Parameters
    ----------
    scores : array-like, shape (G,)
        Similarities of the query to the G candidates.
    query_label : int
    gallery_labels : array-like of int, shape (G,)
    tree : LabelTree
    k : int, default 5

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace ``"relevance"`` in rank order.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> fig = ranking_figure([0.9, 0.1, 0.5], 0, [0, 2, 1], t, k=1)
    >>> list(fig.data[0].x)
    ['1: x', '2: y', '3: z']
    """
    s = np.asarray(scores, dtype=np.float64)[None, :]
    yg = np.asarray(gallery_labels, dtype=np.int64)
    yq = np.array([int(query_label)])
    order = np.argsort(-s[0], kind="stable")
    rel = tree_relevance(tree, "sum").numpy()[int(query_label), yg]
    m = {
        f"RP@{k}": rp_at_k(s, yq, yg, tree, k),
        "MNR": mnr(s, yq, yg, tree),
        "NDCG_sum": ndcg_tree(s, yq, yg, tree, "sum"),
        "NDCG_max": ndcg_tree(s, yq, yg, tree, "max"),
    }
    colors = leaf_colors(tree)
    fig = go.Figure(
        go.Bar(
            x=[f"{r + 1}: {tree.leaves[yg[i]]}" for r, i in enumerate(order)],
            y=rel[order],
            name="relevance",
            marker_color=[colors[tree.leaves[yg[i]]] for i in order],
        )
    )
    fig.update_layout(
        title=f"query leaf {tree.leaves[int(query_label)]}: " + ", ".join(f"{key} {v:.3f}" for key, v in m.items()),
        xaxis_title="rank: candidate leaf",
        yaxis_title="rel_sum = 1 − d_T / D_T",
    )
    return fig
