"""Figures of notebooks 00–01: a tree's ρ and d_T matrices, and a tree embedded in the disk at curvature −c.

* :func:`tree_matrices_figure` -- ρ = depth(lca)/L (Paper 01 (HWC + LAM), Eq. 4) beside the tree distance d_T;
* :func:`tree_embedding_stats` -- Sarkar's embedding at curvature −c, its pairwise distances, distortion and
  best scale (:func:`hierviz.geometry.tree_embedding.sarkar_embedding`,
  :func:`hierviz.metrics.embedding_distortion`);
* :func:`curvature_figure` -- the embedded tree in the disk beside ``d_c`` against ``d_T`` for every node pair;
* :func:`add_disk_outline` -- the boundary circle of the disk on any (sub)plot.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hierviz.geometry import DEFAULT_CURVATURE, get_geometry
from hierviz.geometry.tree_embedding import sarkar_embedding
from hierviz.hierarchy.synthetic import node_tree_distance
from hierviz.metrics.tree_likeness import embedding_distortion
from hierviz.viz._fast import fast_figure, merge, subplots_layout
from hierviz.viz.disk import _poincare_disk_spec

__all__ = ["add_disk_outline", "curvature_figure", "tree_embedding_stats", "tree_matrices_figure"]


def add_disk_outline(fig: go.Figure, r: float = 1.0, **where: Any) -> go.Figure:
    """Draw the circle of radius ``r`` (the disk's boundary, ``1/sqrt(c)``) on ``fig``.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
    r : float, > 0, default 1.0
    **where
        ``row=``, ``col=`` for a subplot.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig``, with one more trace (no legend entry, no hover).

    Examples
    --------
    >>> len(add_disk_outline(go.Figure(), 0.5).data)
    1
    """
    if not r > 0:
        raise ValueError(f"r must be a positive radius, got {r!r}")
    t = np.linspace(0, 2 * np.pi, 361)
    fig.add_trace(
        go.Scatter(x=r * np.cos(t), y=r * np.sin(t), mode="lines", name="boundary",
                   line=dict(color="black", width=1), hoverinfo="skip", showlegend=False),
        **where,
    )  # fmt: skip
    return fig


def tree_matrices_figure(tree: Any, title: str | None = None) -> go.Figure:
    """Heat maps of ρ = depth(lca)/L (Paper 01 (HWC + LAM), Eq. 4) and of the tree distance d_T over the leaves.

    Parameters
    ----------
    tree : LabelTree
    title : str, optional
        Default: ``"<tree name>: L = <height>"``.

    Returns
    -------
    plotly.graph_objects.Figure
        Two heat maps (sequential, colour-blind-safe scales: Blues for ρ in [0, 1], Reds for d_T in [0, 2L]),
        every cell labelled with its value.

    Examples
    --------
    >>> from hierviz.data import load_tree
    >>> fig = tree_matrices_figure(load_tree("two-step"))
    >>> [tr.type for tr in fig.data], float(fig.data[1].zmax)
    (['heatmap', 'heatmap'], 6.0)
    """
    fig = make_subplots(1, 2, subplot_titles=("ρ = depth(lca)/L  (Eq. 4)", "tree distance d_T (edges)"),
                        horizontal_spacing=0.18)  # fmt: skip
    kw = dict(x=tree.leaves, y=tree.leaves, texttemplate="%{z:.2g}")
    fig.add_trace(go.Heatmap(z=tree.rho_matrix.numpy(), colorscale="Blues", zmin=0, zmax=1, colorbar=dict(x=0.41),
                             hovertemplate="%{y} – %{x}<br>ρ = %{z:.3f}<extra></extra>", **kw), 1, 1)  # fmt: skip
    fig.add_trace(go.Heatmap(z=tree.tree_distance_matrix.numpy(), colorscale="Reds", zmin=0, zmax=2 * tree.height,
                             hovertemplate="%{y} – %{x}<br>d_T = %{z} edges<extra></extra>", **kw), 1, 2)  # fmt: skip
    fig.update_yaxes(autorange="reversed")
    name = getattr(tree, "name", "") or "tree"
    return fig.update_layout(title=title or f"{name}: L = {tree.height}", height=430, width=980)


def tree_embedding_stats(tree: Any, c: float, D_tree: Any = None, edge: float = 1.0) -> dict[str, Any]:
    """Embed every node of ``tree`` at curvature −c (Sarkar) and score it against the tree distances.

    Parameters
    ----------
    tree : LabelTree
    c : float, > 0
    D_tree : array_like, shape (N, N), optional
        Node tree distances; default :func:`hierviz.hierarchy.synthetic.node_tree_distance` (pass it when
        calling repeatedly).
    edge : float, default 1.0
        Hyperbolic edge length.

    Returns
    -------
    dict
        ``x`` (N, 2) float64 tensor of points; ``D`` (N, N) numpy pairwise Poincaré distances; ``D_tree``;
        ``distortion`` and ``scale`` from :func:`hierviz.metrics.embedding_distortion` (notebook 01, (G4)).

    Examples
    --------
    >>> from hierviz.hierarchy.synthetic import b_ary_tree
    >>> s = tree_embedding_stats(b_ary_tree(2, 2), 1.0)
    >>> s["x"].shape, round(float(s["D"][0, 1]), 6)
    (torch.Size([7, 2]), 1.0)
    """
    x = sarkar_embedding(tree, c, edge=edge)
    D = get_geometry("poincare", c=c).pairwise_dist(x).numpy()
    T = node_tree_distance(tree) if D_tree is None else np.asarray(D_tree)
    distortion, scale = embedding_distortion(D, T)
    return {"x": x, "D": D, "D_tree": T, "distortion": distortion, "scale": scale}


def curvature_figure(
    tree: Any, c: float = DEFAULT_CURVATURE, name: str = "", D_tree: Any = None, seed: int = 0
) -> go.Figure:
    """The tree embedded at curvature −c (left) and its distances ``d_c`` against ``d_T`` (right).

    Left: :func:`hierviz.viz.plot_poincare_disk` of the leaves, the internal nodes as prototypes and the
    edges as geodesics, in the disk of radius ``1/sqrt(c)``. Right: one marker per node pair (``d_T``
    jittered by ±0.15 so that the pairs of one tree distance spread out) and the line ``λ·d_T`` of the
    best scale; the title gives the distortion (G4).

    Parameters
    ----------
    tree : LabelTree
    c : float, > 0, default 1.0
    name : str, optional
        Shown in the title (default: the tree's name).
    D_tree : array_like, optional
        Node tree distances, to skip recomputing them.
    seed : int, default 0
        Seed of the jitter.

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> from hierviz.hierarchy.synthetic import b_ary_tree
    >>> fig = curvature_figure(b_ary_tree(2, 2), 2.0, name="binary")
    >>> fig.layout.title.text.startswith("binary, c = 2: distortion (G4) = ")
    True
    """
    s = tree_embedding_stats(tree, c, D_tree)
    x, D, T = s["x"], s["D"], s["D_tree"]
    inner = [i for i, n in enumerate(tree.nodes) if not tree.is_leaf(n) and n != tree.root]
    disk, _ = _poincare_disk_spec(x[tree.leaf_node], np.arange(tree.num_leaves), tree,
                                  prototypes=x[inner] if inner else None, proto_nodes=inner or None, c=c)  # fmt: skip
    # Plain dicts and one unvalidated figure (hierviz.viz._fast): this is the curvature panel's redraw.
    layout = subplots_layout(
        1,
        2,
        horizontal_spacing=0.1,
        subplot_titles=(
            f"tree in the disk of radius 1/√c = {1 / math.sqrt(c):.2f}",
            "hyperbolic vs tree distance, all node pairs",
        ),
    )
    data = [dict(tr, showlegend=False) for tr in disk]
    iu = np.triu_indices(len(D), 1)
    jitter = np.random.default_rng(seed).uniform(-0.15, 0.15, size=len(iu[0]))
    data.append(dict(type="scatter", x=T[iu] + jitter, y=D[iu], mode="markers", opacity=0.35, marker=dict(size=4),
                     name="node pairs", xaxis="x2", yaxis="y2"))  # fmt: skip
    top = int(T.max())
    data.append(dict(type="scatter", x=[0, top], y=[0, s["scale"] * top], mode="lines", line=dict(dash="dash"),
                     name=f"λ·d_T, λ = {s['scale']:.2f}", xaxis="x2", yaxis="y2"))  # fmt: skip
    label = name or getattr(tree, "name", "") or "tree"
    merge(layout, dict(xaxis=dict(scaleanchor="y", visible=False), yaxis=dict(visible=False),
                       xaxis2=dict(title=dict(text="tree distance d_T (edges)")),
                       yaxis2=dict(title=dict(text="hyperbolic distance d_c(x_i, x_j)")),
                       title=dict(text=f"{label}, c = {c:.3g}: distortion (G4) = {s['distortion']:.3f}"),
                       height=470, width=1000))  # fmt: skip
    return fast_figure(data, layout)
