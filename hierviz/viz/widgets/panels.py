"""The course's slider panels over :mod:`hierviz.viz.widgets.figures`: curvature, ω, LAM margins and weights, τ."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hierviz.data.toys import toy_tangent_points
from hierviz.geometry import DEFAULT_CURVATURE
from hierviz.losses import DEFAULT_TAU, LAMLoss, default_margins
from hierviz.viz.disk import _poincare_disk_spec, check_in_ball
from hierviz.viz.tree import _as_points, _check_nonneg, _check_positive, _leaf_labels
from hierviz.viz.widgets.figures import (
    _ball,
    _lam_figure,
    _lam_terms_again,
    _levels,
    _margin_map,
    curvature_figure,
    margin_figure,
    omega_figure,
    tau_figure,
)
from hierviz.viz.widgets.panel import Panel, slider

__all__ = ["curvature_panel", "omega_panel", "margin_panel", "lam_panel", "tau_panel"]


def curvature_panel(
    tree,
    points: Any = None,
    labels: Any = None,
    c: float = DEFAULT_CURVATURE,
    c_range: tuple[float, float] = (0.1, 4.0),
) -> Panel:
    """Slider for the curvature c over :func:`curvature_figure`.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    points : array-like (N, 2), optional
        Tangent vectors at the origin; default :func:`hierviz.data.toys.toy_tangent_points`.
    labels : array-like of int (N,), optional
        Required with ``points``.
    c : float > 0, default 1.0
        Initial value.
    c_range : (float, float)
        Slider range, 0 < lo < hi.

    Returns
    -------
    Panel
        An ``ipywidgets.VBox``; ``panel.controls["c"]`` is the slider, ``panel.figure``
        the current figure.

    Raises
    ------
    ValueError
        ``points`` without ``labels``, bad ``c`` / ``c_range``.
    """
    lo, hi = (_check_positive(v, "c_range") for v in c_range)
    if lo >= hi:
        raise ValueError(f"c_range must be (lo, hi) with lo < hi, got {c_range}")
    c = _check_positive(c, "c")
    if points is None:
        points, labels = toy_tangent_points(tree)
    elif labels is None:
        raise ValueError("labels must be given with points")
    V = _as_points(points, "points", dim=2)
    y = _leaf_labels(labels, tree, V.shape[0])
    return Panel(
        {"c": slider("curvature c", c, lo, hi, 0.05)},
        lambda c: curvature_figure(c, V, y, tree),
        "Curvature −c of the Poincaré ball",
    )


def omega_panel(tree, alpha: float = 0.5, gamma: float = 0.5, alpha_max: float | None = None) -> Panel:
    """Sliders α, γ ∈ [0, 2] over :func:`omega_figure` (paper 01 Eqs. 5–6).

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    alpha, gamma : float ≥ 0, default 0.5
        Initial values.
    alpha_max : float ≥ 0, optional

    Returns
    -------
    Panel
        Controls ``"alpha"``, ``"gamma"``.
    """
    _check_nonneg(alpha, "alpha"), _check_nonneg(gamma, "gamma")
    return Panel(
        {
            "alpha": slider("α (positives)", alpha, 0.0, 2.0, 0.05),
            "gamma": slider("γ (negatives)", gamma, 0.0, 2.0, 0.05),
        },
        lambda alpha, gamma: omega_figure(tree, alpha, gamma, alpha_max),
        "HWC multipliers ω",
    )


def _panel_points(tree, points: Any, labels: Any, c: float) -> tuple[np.ndarray, np.ndarray]:
    """The panel's points in the ball and their labels (default: the toy points through expmap₀)."""
    if points is None:
        v, labels = toy_tangent_points(tree)
        geo = _ball(c)
        points = geo.proj(geo.expmap0(torch.from_numpy(v))).numpy()
    elif labels is None:
        raise ValueError("labels must be given with points")
    Z = check_in_ball(points, c, "points")
    return Z, _leaf_labels(labels, tree, Z.shape[0])


def _lam_panel_points(tree, points: Any, labels: Any, c: float) -> tuple[list[int], np.ndarray, np.ndarray]:
    """A LAM panel's levels 1..L−1 (ValueError below height 2), points and labels (:func:`_panel_points`)."""
    levels = _levels(tree)
    if not levels:
        raise ValueError(f"LAM needs a tree of height >= 2, got L = {tree.height}")
    return (levels, *_panel_points(tree, points, labels, c))


def margin_panel(
    tree, points: Any = None, labels: Any = None, c: float = DEFAULT_CURVATURE, margins: Any = None
) -> Panel:
    """One slider m_ℓ ∈ [0, 2] per level ℓ = 1..L−1 over :func:`margin_figure` (paper 01 Eq. 11).

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
        Height ≥ 2.
    points : array-like (N, 2), optional
        Points in the ball of radius 1/√c; default: :func:`hierviz.data.toys.toy_tangent_points` mapped
        with expmap₀.
    labels : array-like of int (N,), optional
        Required with ``points``.
    c : float > 0, default 1.0
    margins : sequence of L−1 floats, optional
        Initial margins; default 0.2 each.

    Returns
    -------
    Panel
        Controls ``"m1"``, ``"m2"``, ...

    Raises
    ------
    ValueError
        Tree height < 2, ``points`` without ``labels``, wrong number of margins.
    """
    c = _check_positive(c, "c")
    levels, Z, y = _lam_panel_points(tree, points, labels, c)
    init = [0.2] * len(levels) if margins is None else list(np.asarray(margins, dtype=float).reshape(-1))
    if len(init) != len(levels):
        raise ValueError(f"margins must have {len(levels)} value(s), got {len(init)}")
    controls = {f"m{lv}": slider(f"margin m{lv}", float(m), 0.0, 2.0, 0.05) for lv, m in zip(levels, init)}

    def update(**ms):
        return margin_figure(Z, y, tree, {lv: ms[f"m{lv}"] for lv in levels}, c)

    return Panel(controls, update, "LAM level-aware margins")


def lam_panel(
    tree,
    points: Any = None,
    labels: Any = None,
    c: float = DEFAULT_CURVATURE,
    margins: Any = None,
    level_weights: Any = None,
) -> Panel:
    """Sliders m_ℓ ∈ [0, 2] and λ_ℓ ∈ [0, 3] per level over :func:`lam_figure` (paper 01 Eq. 11).

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
        Height ≥ 2.
    points : array-like (N, 2), optional
        Points in the ball of radius 1/√c; default: :func:`hierviz.data.toys.toy_tangent_points` mapped
        with expmap₀.
    labels : array-like of int (N,), optional
        Required with ``points``.
    c : float > 0, default 1.0
    margins : sequence of L−1 floats ≥ 0, optional
        Initial margins; default :func:`hierviz.losses.default_margins` (LAMLoss's own).
    level_weights : sequence of L−1 floats ≥ 0, optional
        Initial λ_ℓ; default 1 each.

    Returns
    -------
    Panel
        Controls ``"m1"``, ..., ``"lam1"``, ...

    Raises
    ------
    ValueError
        Tree height < 2, ``points`` without ``labels``, wrong number of margins or weights.
    """
    c = _check_positive(c, "c")
    levels, Z, y = _lam_panel_points(tree, points, labels, c)
    m0 = _margin_map(tree, default_margins(len(levels)) if margins is None else margins)
    w0 = _margin_map(tree, [1.0] * len(levels) if level_weights is None else level_weights, "level_weights")
    controls = {f"m{lv}": slider(f"margin m{lv}", m0[lv], 0.0, 2.0, 0.05) for lv in levels}
    controls.update({f"lam{lv}": slider(f"weight λ{lv}", w0[lv], 0.0, 3.0, 0.05) for lv in levels})

    # The points never move: draw them once, and set LAM's prototypes (their Karcher means) once;
    # a move re-reads the hinges with the new m_ℓ, λ_ℓ (_lam_terms_again).
    disk = _poincare_disk_spec(Z, y, tree, c=c)
    loss = LAMLoss(tree, _ball(c))
    zt, yt = torch.from_numpy(Z).unsqueeze(1), torch.as_tensor(y, dtype=torch.long)
    with torch.no_grad():
        loss.train()(zt, yt)  # the first training call sets every prototype to the mean of its points
    loss.eval()

    def update(**v):
        m, w = (
            _margin_map(tree, [v[f"m{lv}"] for lv in levels]),
            _margin_map(tree, [v[f"lam{lv}"] for lv in levels], "level_weights"),
        )
        return _lam_figure(_lam_terms_again(loss, zt, yt, m, w), Z, y, tree, m, w, c, disk)

    return Panel(controls, update, "LAM: margins m_ℓ and level weights λ_ℓ (Eq. 11)")


def tau_panel(
    tree,
    tau: float = DEFAULT_TAU,
    alpha: float = 0.5,
    gamma: float = 0.5,
    anchor: str | int | None = None,
    candidates: Any = None,
    similarities: Any = None,
) -> Panel:
    """Sliders τ ∈ [0.02, 1], α, γ ∈ [0, 2] over :func:`tau_figure` (paper 01 Eq. 8).

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    tau : float > 0, default 0.1
    alpha, gamma : float ≥ 0, default 0.5
    anchor, candidates, similarities
        Passed to :func:`tau_figure`.

    Returns
    -------
    Panel
        Controls ``"tau"``, ``"alpha"``, ``"gamma"``.
    """
    _check_positive(tau, "tau")
    return Panel(
        {
            "tau": slider("τ", tau, 0.02, 1.0, 0.01),
            "alpha": slider("α", alpha, 0.0, 2.0, 0.05),
            "gamma": slider("γ", gamma, 0.0, 2.0, 0.05),
        },
        lambda tau, alpha, gamma: tau_figure(tree, tau, alpha, gamma, anchor, candidates, similarities),
        "Temperature τ and the HWC forces",
    )
