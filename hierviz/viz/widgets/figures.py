"""The plain figure functions behind the course's panels: curvature, ω (α, γ), LAM margins and weights, τ.

Tests and papermill runs call these directly; :mod:`hierviz.viz.widgets.panels` wires sliders to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch

from hierviz.geometry import DEFAULT_CURVATURE, PoincareBall
from hierviz.losses import LAMLoss
from hierviz.viz._fast import fast_figure, merge, subplots_layout
from hierviz.viz.disk import _poincare_disk_spec, check_in_ball, plot_poincare_disk
from hierviz.viz.omega import plot_forces, plot_omega
from hierviz.viz.tree import _as_points, _check_nonneg, _check_positive, _leaf_labels, dfs_leaves

__all__ = [
    "curvature_figure",
    "omega_figure",
    "lam_terms",
    "lam_hinges",
    "margin_figure",
    "lam_figure",
    "tau_figure",
]


# --------------------------------------------------------------------------- figures
def _ball(c: float):
    return PoincareBall(c=c)


def curvature_figure(c: float, points: Any, labels: Any, tree, show_tree: bool = True) -> go.Figure:
    """Tangent vectors mapped into the Poincaré disk of curvature −c.

    The same Euclidean vectors v (e.g. an encoder's output before the hyperbolic head)
    are sent to the ball with ``x = proj(expmap0_c(v))`` and drawn with
    :func:`hierviz.viz.disk.plot_poincare_disk`. Larger c shrinks the ball (radius 1/√c)
    and pushes points towards its boundary, where distances grow fastest.

    Parameters
    ----------
    c : float > 0
        Curvature magnitude.
    points : array-like, shape (N, 2)
        Tangent vectors at the origin.
    labels : array-like of int, shape (N,)
        Leaf indices.
    tree : hierviz.hierarchy.LabelTree
    show_tree : bool, default True

    Returns
    -------
    plotly.graph_objects.Figure
        As :func:`plot_poincare_disk`.

    Raises
    ------
    ValueError
        ``c <= 0``, ``points`` not (N, 2) / non-finite, ``labels`` mismatch.
    """
    c = _check_positive(c, "c")
    V = _as_points(points, "points", dim=2)
    geo = _ball(c)
    x = geo.proj(geo.expmap0(torch.from_numpy(V))).detach().cpu().numpy()
    xt = torch.from_numpy(x)
    mean_d = float(geo.dist(xt, torch.zeros_like(xt)).mean())  # Eq. 2 from the geometry
    title = (
        f"expmap₀ into the Poincaré disk, curvature −{c:g} (radius {1 / np.sqrt(c):.3g})"
        f"<br><sup>mean distance to the origin {mean_d:.3f}</sup>"
    )
    return plot_poincare_disk(x, labels, tree, c=c, title=title, show_tree=show_tree)


def omega_figure(tree, alpha: float, gamma: float, alpha_max: float | None = None) -> go.Figure:
    """The ω heat map for given α, γ: :func:`hierviz.viz.omega.plot_omega` (paper 01 Eqs. 5–6).

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    alpha, gamma : float ≥ 0
    alpha_max : float ≥ 0, optional

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    ValueError
        Negative or non-finite α, γ, alpha_max.
    """
    return plot_omega(tree, alpha, gamma, alpha_max)


def _levels(tree) -> list[int]:
    return list(range(1, int(tree.height)))


def _margin_map(tree, margins: Mapping[int, float] | Any, what: str = "margins") -> dict[int, float]:
    """``{level: value}`` for levels 1..L−1 from a mapping or a sequence of L−1 values ≥ 0."""
    levels = _levels(tree)
    if not levels:
        raise ValueError(f"LAM needs a tree of height >= 2 (a level between root and leaves), got L = {tree.height}")
    if isinstance(margins, Mapping):
        m = {int(k): _check_nonneg(v, f"{what}[{k}]") for k, v in margins.items()}
        missing = [lv for lv in levels if lv not in m]
        if missing:
            raise ValueError(f"{what} lacks level(s) {missing}; levels are {levels}")
        return {lv: m[lv] for lv in levels}
    seq = list(np.asarray(margins, dtype=np.float64).reshape(-1))
    if len(seq) != len(levels):
        raise ValueError(f"{what} must have {len(levels)} value(s) (levels {levels}), got {len(seq)}")
    return {lv: _check_nonneg(v, f"{what}[{i}]") for i, (lv, v) in enumerate(zip(levels, seq))}


def lam_terms(
    points: Any,
    labels: Any,
    tree,
    margins: Mapping[int, float] | Any,
    level_weights: Mapping[int, float] | Any | None = None,
    c: float = DEFAULT_CURVATURE,
) -> dict[str, Any]:
    """Every number of the LAM panels, read off one :class:`hierviz.losses.LAMLoss` (paper 01 Eqs. 3, 11).

    A fresh ``LAMLoss(tree, PoincareBall(c), margins, level_weights)`` in training mode is
    called once on the points: that first call sets each prototype c_{ℓ,a} to the mean of
    the points under node a at depth ℓ (``mean_steps`` Karcher steps of Eq. 3; on
    unbalanced trees a shallow leaf is its own group at deeper levels, as in the loss),
    then evaluates the hinge of Eq. 11 with them. So the panel's numbers *are* the loss's.

    Parameters
    ----------
    points : array-like, shape (N, d)
        Points in the ball of radius 1/√c.
    labels : array-like of int, shape (N,)
        Leaf indices.
    tree : hierviz.hierarchy.LabelTree
        Height L ≥ 2 (LAM needs a level between root and leaves).
    margins : mapping level → m_ℓ, or sequence of L−1 floats (m_1, ..., m_{L−1}), m_ℓ ≥ 0
    level_weights : mapping level → λ_ℓ, or sequence of L−1 floats ≥ 0, optional
        Default 1 for every level.
    c : float > 0, default 1.0

    Returns
    -------
    dict
        ``"hinges"``: level ℓ → numpy.ndarray float64 (N,) of [d⁺ − d⁻ + m_ℓ]₊ ≥ 0
        (``LAMLoss.sample_hinges``); ``"level_losses"``: level ℓ → float L^(ℓ), the mean
        hinge (``LAMLoss.last_level_losses``); ``"loss"``: float Σ_ℓ λ_ℓ L^(ℓ), the loss
        value; ``"prototypes"``: numpy.ndarray (P, d) and ``"proto_names"``: list of
        (level, node name), LAM's prototype rows.

    Raises
    ------
    ValueError
        Tree height < 2, wrong number of margins or weights, a negative one, points
        outside the ball, ``labels`` mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"A": ["a1", "a2"], "B": ["b1"]}})
    >>> z = np.array([[0.5, 0.0], [0.4, 0.1], [-0.5, 0.0]])
    >>> t = lam_terms(z, [0, 1, 2], tree, margins=[0.2])
    >>> t["hinges"][1], round(t["loss"], 6)
    (array([0., 0., 0.]), 0.0)
    >>> round(lam_terms(z, [0, 1, 2], tree, margins=[3.0], level_weights=[2.0])["loss"], 4)
    2.0826
    """
    c = _check_positive(c, "c")
    m = _margin_map(tree, margins, "margins")
    w = _margin_map(tree, [1.0] * len(m) if level_weights is None else level_weights, "level_weights")
    Z = check_in_ball(points, c, "points")
    y = _leaf_labels(labels, tree, Z.shape[0])
    levels = list(m)
    loss = LAMLoss(tree, _ball(c), margins=[m[lv] for lv in levels], level_weights=[w[lv] for lv in levels])
    zt, yt = torch.from_numpy(Z).unsqueeze(1), torch.as_tensor(y, dtype=torch.long)
    loss.train()
    with torch.no_grad():
        value = loss(zt, yt)  # the first training call sets every prototype to the (Karcher) mean of its points
    H = loss.sample_hinges(zt, yt).double().numpy()
    per_level = loss.last_level_losses.double().numpy()
    return _lam_read(loss, H, per_level, float(value), levels)


def _lam_read(loss, H: np.ndarray, per_level: np.ndarray, value: float, levels: list[int]) -> dict[str, Any]:
    return {
        "hinges": {lv: H[:, i].copy() for i, lv in enumerate(levels)},
        "level_losses": {lv: float(per_level[i]) for i, lv in enumerate(levels)},
        "loss": value,
        "prototypes": loss.prototypes.double().numpy().copy(),
        "proto_names": loss.proto_names,
    }


def _lam_terms_again(loss, zt: torch.Tensor, yt: torch.Tensor, m: dict, w: dict) -> dict[str, Any]:
    """:func:`lam_terms` for new margins and weights on a ``LAMLoss`` whose prototypes its first call set.

    The prototypes depend on the points only, so the LAM panel keeps the loss of its first draw and
    re-reads the hinges: ``sample_hinges`` (the hinge of ``forward``, no update), their per-level
    mean L^(ℓ) and Σ_ℓ λ_ℓ L^(ℓ), the loss's own formula (``LAMLoss.forward``).
    """
    levels = list(m)
    loss.margins = [m[lv] for lv in levels]
    loss.level_weights = [w[lv] for lv in levels]
    H = loss.sample_hinges(zt, yt).double().numpy()
    per_level = H.mean(axis=0)
    value = float((loss.level_weights.numpy() * per_level).sum())
    return _lam_read(loss, H, per_level, value, levels)


def lam_hinges(
    points: Any, labels: Any, tree, margins: Mapping[int, float] | Any, c: float = DEFAULT_CURVATURE
) -> dict[int, np.ndarray]:
    """Per-sample LAM hinge [d⁺ − d⁻ + m_ℓ]₊ at every level ℓ = 1..L−1 (paper 01 Eq. 11).

    Computed by :class:`hierviz.losses.LAMLoss` itself (``lam_terms(...)["hinges"]``), so
    the panel's numbers are the loss's: prototypes c_{ℓ,a} are LAM's first-call means of the
    points under each node a at depth ℓ (``mean_steps`` Karcher steps of Eq. 3), d⁺ the
    Poincaré distance (Eq. 2) to the sample's own level-ℓ prototype and d⁻ to the nearest
    other level-ℓ prototype; a level with a single prototype contributes 0. On unbalanced
    trees a shallow leaf's slot at a deeper level is LAM's (see :class:`~hierviz.losses.LAMLoss`).

    Parameters
    ----------
    points : array-like, shape (N, d)
        Points in the ball of radius 1/√c.
    labels : array-like of int, shape (N,)
        Leaf indices.
    tree : hierviz.hierarchy.LabelTree
        Height L ≥ 2 (LAM needs a level between root and leaves).
    margins : mapping level → m_ℓ, or sequence of L−1 floats (m_1, ..., m_{L−1}), m_ℓ ≥ 0
    c : float > 0, default 1.0

    Returns
    -------
    dict of int to numpy.ndarray, float64, shape (N,)
        level ℓ → hinge values ≥ 0.

    Raises
    ------
    ValueError
        Tree height < 2, wrong number of margins, negative margin, points outside the
        ball, ``labels`` mismatch.
    """
    return lam_terms(points, labels, tree, margins, None, c)["hinges"]


def margin_figure(
    points: Any, labels: Any, tree, margins: Mapping[int, float] | Any, c: float = DEFAULT_CURVATURE
) -> go.Figure:
    """Poincaré disk with the samples that violate the LAM margins circled (paper 01 Eq. 11).

    Parameters
    ----------
    points : array-like, shape (N, 2)
        Points in the ball of radius 1/√c.
    labels : array-like of int, shape (N,)
    tree : hierviz.hierarchy.LabelTree
        Height ≥ 2.
    margins : mapping level → m_ℓ, or sequence (m_1, ..., m_{L−1})
    c : float > 0, default 1.0

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`plot_poincare_disk` plus a trace ``"margin violations"`` (open red
        circles at samples with a positive hinge at any level); the title lists
        L_LAM^(ℓ) (``LAMLoss.last_level_losses``) and the share of violating samples per level.

    Raises
    ------
    ValueError
        As :func:`lam_terms`; points not 2-D.
    """
    return _margin_disk(lam_terms(points, labels, tree, margins, None, c), points, labels, tree, margins, c)


def _margin_disk(terms: dict, points: Any, labels: Any, tree, margins: Any, c: float) -> go.Figure:
    return fast_figure(*_margin_disk_spec(terms, points, labels, tree, margins, c))


def _margin_disk_spec(
    terms: dict, points: Any, labels: Any, tree, margins: Any, c: float, disk: tuple | None = None
) -> tuple[list[dict], dict]:
    # ``disk``: the points' (data, layout) from _poincare_disk_spec, when the caller keeps it (the LAM panel:
    # the points never move, only the violators do).
    Z = check_in_ball(points, c, "points")
    if Z.shape[1] != 2:
        raise ValueError(f"margin_figure draws 2-D points only, got dimension {Z.shape[1]}")
    hinges = terms["hinges"]
    data, layout = disk if disk is not None else _poincare_disk_spec(Z, labels, tree, c=c)
    data, layout = [dict(t) for t in data], dict(layout)
    total = sum(hinges.values())
    v = np.flatnonzero(total > 0)
    data.append(
        dict(
            type="scatter",
            x=Z[v, 0],
            y=Z[v, 1],
            mode="markers",
            name="margin violations",
            customdata=np.column_stack([v, total[v]]),
            marker=dict(symbol="circle-open", size=11, color="#e41a1c", line=dict(width=1.5)),
            hovertemplate="point #%{customdata[0]}<br>Σ hinge = %{customdata[1]:.3f}<extra></extra>",
        )
    )
    mvals = _margin_map(tree, margins)
    parts = [
        f"ℓ={lv}: m={mvals[lv]:.2f}, L={terms['level_losses'][lv]:.3f}, {100 * np.mean(h > 0):.0f}% violate"
        for lv, h in hinges.items()
    ]
    layout["title"] = dict(text="LAM level-aware margins (paper 01 Eq. 11)<br><sup>" + "; ".join(parts) + "</sup>")
    return data, layout


def lam_figure(
    points: Any,
    labels: Any,
    tree,
    margins: Mapping[int, float] | Any,
    level_weights: Mapping[int, float] | Any | None = None,
    c: float = DEFAULT_CURVATURE,
) -> go.Figure:
    """The LAM hinge with margins m_ℓ and level weights λ_ℓ: violators on the disk, per-level bars (Eq. 11).

    Left, :func:`margin_figure` (open red circles: a positive hinge at some level); right,
    per level the share of violating samples and 100 · λ_ℓ L^(ℓ). The title gives
    L_LAM = Σ_ℓ λ_ℓ L^(ℓ). Every number comes from :func:`lam_terms`, i.e. from
    :class:`hierviz.losses.LAMLoss`. m_ℓ changes who violates; λ_ℓ only how loudly a level counts.

    Parameters
    ----------
    points : array-like, shape (N, 2)
        Points in the ball of radius 1/√c.
    labels : array-like of int, shape (N,)
    tree : hierviz.hierarchy.LabelTree
        Height ≥ 2.
    margins : mapping level → m_ℓ, or sequence (m_1, ..., m_{L−1}), ≥ 0
    level_weights : mapping level → λ_ℓ, or sequence, ≥ 0, optional
        Default 1 for every level.
    c : float > 0, default 1.0

    Returns
    -------
    plotly.graph_objects.Figure
        The disk's traces (first subplot, ending with ``"margin violations"``), then the bar
        traces ``"% violating"`` and ``"100 · λ_ℓ · L_LAM^(ℓ)"``.

    Raises
    ------
    ValueError
        As :func:`lam_terms`; points not 2-D.
    """
    return _lam_figure(lam_terms(points, labels, tree, margins, level_weights, c), points, labels, tree, margins,
                       level_weights, c)  # fmt: skip


def _lam_figure(
    terms: dict, points: Any, labels: Any, tree, margins: Any, level_weights: Any, c: float, disk: tuple | None = None
) -> go.Figure:
    data, disk_layout = _margin_disk_spec(terms, points, labels, tree, margins, c, disk)
    m = _margin_map(tree, margins)
    w = _margin_map(tree, [1.0] * len(m) if level_weights is None else level_weights, "level_weights")
    levels = list(m)
    # Plain dicts, one unvalidated figure (hierviz.viz._fast): this is the LAM panel's redraw.
    layout = subplots_layout(
        1,
        2,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.12,
        subplot_titles=("violators (open red circles)", "per level"),
    )
    names = [f"level {lv}" for lv in levels]
    data.append(
        dict(type="bar", x=names, y=[100 * float(np.mean(terms["hinges"][lv] > 0)) for lv in levels],
             name="% violating", xaxis="x2", yaxis="y2")
    )  # fmt: skip
    data.append(
        dict(type="bar", x=names, y=[100 * w[lv] * terms["level_losses"][lv] for lv in levels],
             name="100 · λ_ℓ · L_LAM^(ℓ)", xaxis="x2", yaxis="y2")
    )  # fmt: skip
    merge(layout["xaxis"], disk_layout["xaxis"])
    merge(layout["yaxis"], disk_layout["yaxis"])
    merge(layout["yaxis"], dict(scaleanchor="x", scaleratio=1))
    merge(
        layout,
        dict(
            height=480,
            template=disk_layout["template"],
            title=dict(
                text=f"LAM hinge, Eq. 11: L_LAM = {terms['loss']:.4f}  (margins {', '.join(f'{m[lv]:.2f}' for lv in levels)}; "
                f"weights {', '.join(f'{w[lv]:.2f}' for lv in levels)})"
            ),
        ),
    )
    return fast_figure(data, layout)


def tau_figure(
    tree,
    tau: float,
    alpha: float = 0.5,
    gamma: float = 0.5,
    anchor: str | int | None = None,
    candidates: Any = None,
    similarities: Any = None,
) -> go.Figure:
    """HWC forces on one anchor at temperature τ (paper 01 Eq. 8): :func:`plot_forces`.

    Defaults isolate the effect of ω: the anchor is the first leaf, the candidates are
    every leaf once (the anchor's own leaf is the positive), all at the same
    similarity 0.5 — so any difference between bars comes from the tree alone.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    tau : float > 0
    alpha, gamma : float ≥ 0, default 0.5
    anchor : str or int, optional
    candidates : sequence of str or int, optional
    similarities : array-like (K,), optional

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    ValueError
        As :func:`plot_forces`.
    """
    anchor = tree.leaves[0] if anchor is None else anchor
    if candidates is None:
        a_name = anchor if isinstance(anchor, str) else tree.leaves[int(anchor)]
        candidates = [a_name] + [leaf for leaf in dfs_leaves(tree) if leaf != a_name]
    if similarities is None:
        similarities = np.full(len(candidates), 0.5)
    return plot_forces(tree, anchor, candidates, similarities, alpha=alpha, gamma=gamma, tau=tau)
