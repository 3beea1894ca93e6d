r"""Figures for HyILR (Paper 05 (HyILR)): label embeddings on the disk, the hyperboloid, attention, negatives.

* :func:`label_disk_figure` — projected label embeddings on the Poincaré disk (Lorentz points
  through the isometry :func:`hierviz.geometry.lorentz.math.to_ball`, then
  :func:`hierviz.viz.disk.reduce_to_disk`, which keeps each point's distance to the origin),
  coloured by depth, tree edges as geodesics.
* :func:`hyperboloid_figure` — the sheet ``⟨u, u⟩_L = −1/c`` for a curvature ``c`` (the paper's
  ``k``) with a few points ``φ(e)`` (Eq. 11, :meth:`hierviz.geometry.Lorentz.expmap0`) and their
  geodesic distances (Eq. 4, its ``pairwise_dist``): the notebook's slider.
* :func:`attention_heatmap` — ``softmax(Aᵀ)`` of Eq. 8 for one document (labels × tokens).
* :func:`negatives_figure` — the tree with a sample's positives and the negatives Eqs. 13–14 pick.
* :func:`level_bucket_figure` and :func:`history_figure` (``hierviz htc``'s report,
  :func:`hierviz.report.htc.write_report`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from hierviz.geometry import DEFAULT_CURVATURE, Lorentz, get_geometry
from hierviz.geometry._checks import scalar
from hierviz.losses.hyilr import label_relations, negative_sets
from hierviz.viz.disk import geodesic, reduce_to_disk
from hierviz.viz.tree import tree_layout

__all__ = [
    "DEPTH_COLORS",
    "label_disk_figure",
    "hyperboloid_figure",
    "attention_heatmap",
    "negatives_figure",
    "level_bucket_figure",
    "history_figure",
]

DEPTH_COLORS = ("#444444", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _deprecated_k(c: float, k: float | None, where: str) -> float:
    """``k=`` (hierviz 0.2's name of the curvature magnitude here) → ``c``, with a DeprecationWarning."""
    if k is None:
        return c
    warnings.warn(f"{where}: k= is now c= (the curvature magnitude is c everywhere)", DeprecationWarning, stacklevel=3)
    return k


def _on(geometry: Any, P: torch.Tensor) -> bool:
    """Whether every row of ``P`` is already a point of ``geometry`` (its own check)."""
    try:
        geometry.check_point(P)
    except ValueError:
        return False
    return True


def _to_ball_2d(points: np.ndarray, geometry: Any) -> tuple[np.ndarray, float, str]:
    """Label points of ``geometry`` → 2-D disk coordinates, the disk's curvature and a caption.

    Chosen by the geometry's capabilities, never its name: a non-hyperbolic geometry is squashed
    into the unit disk for display; points with one coordinate fewer than the geometry's points
    (``point_dim``: Lorentz space parts) that are not points of ``geometry`` already get their
    time coordinate from ``geometry.proj``; a geometry with ``to_ball`` (an isometry onto the Poincaré ball) is mapped
    there; other hyperbolic points are taken as ball coordinates.
    """
    P = torch.as_tensor(np.asarray(points, dtype=np.float64))
    if not getattr(geometry, "hyperbolic", False):  # squash into the unit disk only for display
        r = np.linalg.norm(P.numpy(), axis=-1, keepdims=True)
        ball, c = P.numpy() / (1.0 + r), 1.0
        note = f"{geometry.display_name}, shown as x/(1+‖x‖)"
    else:
        c = float(scalar(geometry.c))
        if geometry.point_dim(P.shape[-1]) > P.shape[-1] and not _on(geometry, P):  # space parts: time from proj
            P = geometry.proj(torch.cat([torch.zeros_like(P[..., :1]), P], -1))
        to_ball = getattr(geometry, "to_ball", None)
        if to_ball is not None:
            ball, note = to_ball(P).detach().numpy(), f"{geometry.display_name} → Poincaré ball (isometry)"
        else:
            ball, note = P.detach().numpy(), geometry.display_name
    if ball.shape[1] > 2:
        ball, _ = reduce_to_disk(ball, c=c)
        note += ", PCA of log₀ to 2-D keeping radii"
    return np.asarray(ball), c, note


def label_disk_figure(
    points: Any,
    names: Sequence[str],
    tree: Any,
    c: float = DEFAULT_CURVATURE,
    geometry: Any = "lorentz",
    title: str = "",
    *,
    k: float | None = None,
) -> go.Figure:
    """Label embeddings ``L_H`` on the Poincaré disk, coloured by depth, tree edges as geodesics.

    Parameters
    ----------
    points : array_like, shape (c, h)
        Projected labels (:meth:`hierviz.losses.hyilr.HyperbolicScales.project_labels`): Lorentz
        space parts, Poincaré-ball points or Euclidean vectors, as ``geometry`` says.
    names : sequence of str
        The label (node) name of each row.
    tree : LabelTree
    c : float, default 1.0
        Curvature magnitude (the learned one of a run); used to build ``geometry`` from a name.
    geometry : Geometry or str, default "lorentz"
        A :class:`hierviz.geometry.Geometry` (its own ``c`` is used) or a registered name.
    title : str
    k : float, optional
        Deprecated name of ``c`` (a DeprecationWarning).

    Returns
    -------
    plotly.graph_objects.Figure
        One marker trace per depth (``"depth 1"`` …), an ``"edges"`` trace and the boundary circle.

    Raises
    ------
    ValueError
        ``names`` and ``points`` differ in length.
    """
    c = _deprecated_k(c, k, "label_disk_figure")
    geometry = get_geometry(geometry, c=float(c))
    P = np.asarray(points, dtype=np.float64)
    if len(names) != len(P):
        raise ValueError(f"names ({len(names)}) and points ({len(P)}) must have the same length")
    xy, c, note = _to_ball_2d(P, geometry)
    pos = {n: xy[i] for i, n in enumerate(names)}
    pos.setdefault(tree.root, np.zeros(2))
    fig = go.Figure()
    R = 1.0 / np.sqrt(c)
    th = np.linspace(0, 2 * np.pi, 361)
    fig.add_trace(go.Scatter(x=R * np.cos(th), y=R * np.sin(th), mode="lines", name="boundary",
                             line=dict(color="#999", width=1), hoverinfo="skip"))  # fmt: skip
    ex, ey = [], []
    for n in names:
        p = tree.parent(n)
        if p is not None and p in pos:
            g = geodesic(pos[p], pos[n], c=c, n=24)
            ex += [*g[:, 0], None]
            ey += [*g[:, 1], None]
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", name="edges", line=dict(color="#bbb", width=1),
                             hoverinfo="skip"))  # fmt: skip
    depth = np.array([tree.depth(n) for n in names])
    for d in sorted(set(depth.tolist())):
        m = depth == d
        fig.add_trace(
            go.Scatter(
                x=xy[m, 0], y=xy[m, 1], mode="markers", name=f"depth {d}",
                marker=dict(size=9, color=DEPTH_COLORS[d % len(DEPTH_COLORS)]),
                text=[n for n, mm in zip(names, m, strict=True) if mm], hovertemplate="%{text}<extra></extra>",
            )
        )  # fmt: skip
    fig.update_layout(
        title=title or f"Label embeddings ({note}; c = {c:.3g})",
        xaxis=dict(scaleanchor="y", visible=False),
        yaxis=dict(visible=False),
        width=620,
        height=560,
    )
    return fig


def hyperboloid_figure(
    c: float = DEFAULT_CURVATURE, tangent: Any = None, extent: float = 1.6, *, k: float | None = None
) -> go.Figure:
    """The Lorentz sheet of curvature ``−c`` with points ``φ(e)`` (Eq. 11) and their distances (Eq. 4).

    Parameters
    ----------
    c : float, default 1.0
        Curvature magnitude (> 0); Paper 05 (HyILR) calls it k.
    tangent : array_like, shape (n, 2), optional
        Euclidean features ``e`` (tangent vectors at the origin); default: three fixed points.
    extent : float, default 1.6
        Half-width of the drawn patch in the space coordinates.
    k : float, optional
        Deprecated name of ``c`` (a DeprecationWarning).

    Returns
    -------
    plotly.graph_objects.Figure
        ``"hyperboloid"`` surface, ``"points"``, ``"origin"``; the title lists the pairwise
        geodesic distances.

    Raises
    ------
    ValueError
        ``c <= 0``.
    """
    c = _deprecated_k(c, k, "hyperboloid_figure")
    if not c > 0:
        raise ValueError(f"c must be > 0, got {c!r}")
    sheet = Lorentz(c=float(c))  # Eq. 11 is its expmap0, Eq. 4 its distance
    E = torch.as_tensor(
        np.asarray([[0.8, 0.0], [0.6, 0.5], [-0.9, -0.4]] if tangent is None else tangent, dtype=np.float64)
    )
    P = sheet.expmap0(E)  # (n, 3), time first
    U, t = P[:, 1:], P[:, 0]
    g = np.linspace(-extent, extent, 41)
    X, Y = np.meshgrid(g, g)
    Z = np.sqrt(1.0 / c + X**2 + Y**2)
    fig = go.Figure(go.Surface(x=X, y=Y, z=Z, opacity=0.45, showscale=False, name="hyperboloid",
                               colorscale="Blues"))  # fmt: skip
    fig.add_trace(go.Scatter3d(x=[0], y=[0], z=[1 / np.sqrt(c)], mode="markers+text", text=["O"], name="origin",
                               marker=dict(size=5, color="black")))  # fmt: skip
    names = [f"u{i}" for i in range(len(U))]
    fig.add_trace(go.Scatter3d(x=U[:, 0].numpy(), y=U[:, 1].numpy(), z=t.numpy(), mode="markers+text", text=names,
                               name="points", marker=dict(size=5, color="#d62728")))  # fmt: skip
    D = sheet.pairwise_dist(P).numpy()
    pairs = ", ".join(f"d({names[i]},{names[j]}) = {D[i, j]:.2f}" for i in range(len(U)) for j in range(i + 1, len(U)))
    fig.update_layout(title=f"c = {c:.2f}: {pairs}", height=480,
                      scene=dict(xaxis_title="u_s1", yaxis_title="u_s2", zaxis_title="u_t"))  # fmt: skip
    return fig


def attention_heatmap(att: Any, tokens: Sequence[str], labels: Sequence[str], title: str = "") -> go.Figure:
    """Heat-map of ``softmax(Aᵀ)`` (Eq. 8) for one document: rows labels, columns tokens.

    Parameters
    ----------
    att : array_like, shape (c, s)
        Attention of each label over the tokens (rows sum to 1 over real tokens).
    tokens : sequence of str, length s
        Token strings (``[CLS]`` first); padding columns may be cut off beforehand.
    labels : sequence of str, length c
    title : str

    Returns
    -------
    plotly.graph_objects.Figure
    """
    A = np.asarray(att, dtype=float)
    if A.shape != (len(labels), len(tokens)):
        raise ValueError(
            f"att must have shape (len(labels), len(tokens)) = {(len(labels), len(tokens))}, got {A.shape}"
        )
    cols = [f"{i}:{t}" for i, t in enumerate(tokens)]
    fig = go.Figure(go.Heatmap(z=A, x=cols, y=list(labels), colorscale="Viridis", colorbar=dict(title="weight")))
    fig.update_layout(title=title or "label–text attention softmax(Aᵀ)", height=max(300, 18 * len(labels)),
                      xaxis=dict(tickangle=-60))  # fmt: skip
    return fig


def negatives_figure(tree: Any, positives: Sequence[str], neg_desc: Sequence[str], neg_level: Sequence[str],
                     title: str = "") -> go.Figure:  # fmt: skip
    """The tree with one sample's positives, its descendant negatives (Eq. 13) and level negatives (Eq. 14).

    Parameters
    ----------
    tree : LabelTree
    positives, neg_desc, neg_level : sequence of str
        Node names.
    title : str

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``"edges"``, ``"other"``, ``"positive"``, ``"negative (descendant, Eq. 13)"``,
        ``"negative (same level, Eq. 14)"``.
    """
    pos = tree_layout(tree, "rows")
    ex, ey = [], []
    for n in tree.nodes:
        p = tree.parent(n)
        if p is not None:
            ex += [pos[p][0], pos[n][0], None]
            ey += [pos[p][1], pos[n][1], None]
    fig = go.Figure(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#ccc"), name="edges", hoverinfo="skip"))
    groups = [
        ("positive", set(positives), "#2ca02c", "circle"),
        ("negative (descendant, Eq. 13)", set(neg_desc), "#d62728", "diamond"),
        ("negative (same level, Eq. 14)", set(neg_level), "#ff7f0e", "square"),
    ]
    used = set().union(*(g[1] for g in groups))
    other = [n for n in tree.nodes if n not in used]
    for name, ns, color, sym in [("other", set(other), "#bbbbbb", "circle"), *groups]:
        ns_l = [n for n in tree.nodes if n in ns]
        fig.add_trace(
            go.Scatter(
                x=[pos[n][0] for n in ns_l], y=[pos[n][1] for n in ns_l], mode="markers+text", name=name,
                text=ns_l, textposition="bottom center", textfont=dict(size=9),
                marker=dict(size=12, color=color, symbol=sym),
            )
        )  # fmt: skip
    fig.update_layout(title=title or "hierarchy-aware negatives", xaxis=dict(visible=False),
                      yaxis=dict(visible=False), height=420)  # fmt: skip
    return fig


def level_bucket_figure(records: Sequence[dict[str, Any]], metric: str = "macro_f1") -> go.Figure:
    """Per-level F1 and F1 by label-frequency bucket (C1 frequent … C4 sparse), mean over seeds per method.

    Parameters
    ----------
    records : sequence of dict
        Run records with ``method``, ``levels`` and ``buckets`` (:func:`hierviz.experiments.htc.train_htc`).
    metric : {"micro_f1", "macro_f1"}

    Returns
    -------
    plotly.graph_objects.Figure
        Two panels of grouped bars, one bar group per method.
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"{metric} by level", f"{metric} by label frequency"))
    methods = list(dict.fromkeys(r["method"] for r in records))
    for i, m in enumerate(methods):
        rs = [r for r in records if r["method"] == m]
        color = DEPTH_COLORS[(i + 1) % len(DEPTH_COLORS)]
        for col, key, xkey in ((1, "levels", "level"), (2, "buckets", "bucket")):
            xs = [str(x[xkey]) for x in rs[0][key]]
            ys = np.mean([[x[metric] for x in r[key]] for r in rs], axis=0)
            fig.add_trace(go.Bar(x=xs, y=ys, name=m, marker_color=color, showlegend=col == 1, legendgroup=m),
                          row=1, col=col)  # fmt: skip
    fig.update_layout(barmode="group", height=420)
    return fig


def history_figure(records: Sequence[dict[str, Any]]) -> go.Figure:
    """Training loss and validation micro-F1 per epoch, one line per run."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss", "val micro-F1"))
    for r in records:
        h = r["history"]
        ep = [x["epoch"] for x in h]
        name = f"{r['method']} λ={r.get('lam', '')} s{r['seed']}"
        fig.add_trace(go.Scatter(x=ep, y=[x["loss"] for x in h], name=name, legendgroup=name), row=1, col=1)
        fig.add_trace(go.Scatter(x=ep, y=[x["val_micro_f1"] for x in h], name=name, legendgroup=name,
                                 showlegend=False), row=1, col=2)  # fmt: skip
    fig.update_layout(height=420)
    return fig


# ------------------------------------------------------------------ notebook 09 helpers and panels
def text_attention(model: Any, tokenizer: Any, text: str, max_len: int) -> tuple[np.ndarray, list[str]]:
    """``softmax(Aᵀ)`` of one document (Eq. 8) and its tokens, padding cut off.

    Parameters
    ----------
    model : HyILRModel
        With ``attention=True``.
    tokenizer : WordVocab
    text : str
    max_len : int

    Returns
    -------
    att : numpy.ndarray, shape (c, n)
        Rows sum to 1 over the ``n`` real tokens.
    tokens : list of str
        ``["[CLS]", w1, …]`` (words outside the vocabulary keep their text).

    Raises
    ------
    ValueError
        The model has no label–text attention.
    """
    if not getattr(model, "attention", False):
        raise ValueError("this model has no label-text attention (attention=False, the w/o-att ablation)")
    ids, mask = tokenizer.encode([text], max_len)
    model.eval()
    with torch.no_grad():
        att = model(ids, mask)["attention"][0].numpy()
    n = int(mask.sum())
    words = tokenizer.tokens(text)[: n - 1] if hasattr(tokenizer, "tokens") else [str(i) for i in ids[0, 1:n].tolist()]
    return att[:, :n], ["[CLS]", *words]


def hyperboloid_panel(c: float = DEFAULT_CURVATURE, *, k: float | None = None) -> Any:
    """A :class:`~hierviz.viz.widgets.Panel`: slider ``c`` redrawing :func:`hyperboloid_figure`.

    Parameters
    ----------
    c : float, default 1.0
        Initial curvature magnitude, in [0.1, 5].
    k : float, optional
        Deprecated name of ``c`` (a DeprecationWarning).

    Returns
    -------
    Panel
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported only when a panel is built

    from hierviz.viz.widgets import Panel  # heavy: ipywidgets (viz.widgets imports it)

    c = _deprecated_k(c, k, "hyperboloid_panel")
    s = widgets.FloatSlider(value=c, min=0.1, max=5.0, step=0.1, description="c (paper 05: k)", continuous_update=False)
    return Panel({"c": s}, lambda c: hyperboloid_figure(c), title="Lorentz model: curvature −c (paper 05 writes k)")


def negatives_panel(tree: Any, distances: Any, targets: Any, names: Sequence[str]) -> Any:
    """A :class:`~hierviz.viz.widgets.Panel`: pick a sample, see its positives and the negatives of Eqs. 13–14.

    Parameters
    ----------
    tree : LabelTree
    distances : array_like, shape (B, c)
        Text–label distances of B samples (the model's ``d(T_H, L_H)``).
    targets : array_like, shape (B, c), bool
        Positive labels, columns in the order of ``names``.
    names : sequence of str
        The c label names (tree nodes without the root).

    Returns
    -------
    Panel
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported only when a panel is built

    from hierviz.viz.widgets import Panel  # heavy: ipywidgets (viz.widgets imports it)

    d = torch.as_tensor(np.asarray(distances, dtype=np.float64))
    y = torch.as_tensor(np.asarray(targets, dtype=bool))
    n1, n2 = negative_sets(d, y, *label_relations(tree))

    def update(sample: int) -> go.Figure:
        pick = lambda m: [names[j] for j in np.flatnonzero(m[sample].numpy())]  # noqa: E731
        return negatives_figure(tree, pick(y), pick(n1), pick(n2),
                                title=f"sample {sample}: positives and the negatives HyILR contrasts them with")  # fmt: skip

    s = widgets.IntSlider(value=0, min=0, max=len(d) - 1, description="sample", continuous_update=False)
    return Panel({"sample": s}, update, title="Hierarchy-aware negatives")
