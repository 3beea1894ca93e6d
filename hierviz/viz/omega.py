"""Heat maps of the hierarchy coefficients of HWC (paper 01 §3.2) and its per-pair forces.

* ρ(y_i, y_j) = depth(lca(y_i, y_j)) / L                      (paper 01 Eq. 4)
* a_ij = 1 + α ρ(y_i, y_j) for positives j ∈ P(i)               (Eq. 5)
* b_ik = 1 + γ (1 − ρ(y_i, y_k)) for negatives k ∈ N(i)         (Eq. 6)
* ∂L_i/∂s_iq = (1/|P(i)|) Σ_{j∈P(i)} (−a_ij 1[q = j] + ω_iq π_iq)  (Eq. 8)

**Leaf-pair simplification.** ω is defined per pair of *samples*: a_ij for positives,
b_ik for negatives. With leaf labels, positives are the same-leaf pairs (plus the other
view), so on the C × C matrix of *leaf* pairs we show a_ij = 1 + α ρ(y, y) on the
diagonal (same leaf) and b_ik = 1 + γ (1 − ρ) off the diagonal (different leaves).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch

from hierviz.losses import (
    DEFAULT_TAU,
    hwc_omega,  # the one definition of ω (Eqs. 5–6 and the §3.4 clamp)
)
from hierviz.viz.tree import _TEMPLATE, _check_positive, _leaf_labels, _to_numpy

__all__ = ["omega_matrix", "plot_omega", "plot_rho", "hwc_forces", "plot_forces"]


def _rho(tree) -> np.ndarray:
    return _to_numpy(tree.rho_matrix).astype(np.float64)


def omega_matrix(tree, alpha: float, gamma: float, alpha_max: float | None = None) -> np.ndarray:
    """HWC logit multipliers ω for every pair of leaves (paper 01 Eqs. 5–6).

    Same-leaf pairs (the positives of a labelled batch) get a = 1 + α ρ, different-leaf
    pairs (the negatives) get b = 1 + γ (1 − ρ); with ``alpha_max`` every entry is
    clamped to [1, 1 + alpha_max] (paper 01 §3.4, "clamp logit multipliers").

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    alpha : float ≥ 0
        Positive-pair strength α (Eq. 5).
    gamma : float ≥ 0
        Negative-pair strength γ (Eq. 6).
    alpha_max : float ≥ 0, optional
        Upper clamp of ω − 1.

    Returns
    -------
    numpy.ndarray, float64, shape (C, C)
        Rows/columns in ``tree.leaves`` order; values in [1, 1 + max(α, γ)].
        Diagonal: 1 + α ρ(y, y) (= 1 + α for leaves at depth L; a shallower leaf of an
        unbalanced tree has ρ(y, y) = depth(y)/L < 1). Off-diagonal: 1 + γ (1 − ρ).

    Raises
    ------
    ValueError
        If α, γ or alpha_max is negative or non-finite.
    """
    rho = torch.as_tensor(_rho(tree))
    same_leaf = torch.eye(rho.shape[0], dtype=torch.bool)
    return hwc_omega(rho, same_leaf, alpha, gamma, alpha_max).numpy()


def _heatmap(
    mat: np.ndarray,
    names: Sequence[str],
    zmin: float,
    zmax: float,
    colorscale: str,
    custom: np.ndarray,
    hover: str,
    title: str,
    cbar: str,
) -> go.Figure:
    fig = go.Figure(
        go.Heatmap(
            z=mat,
            x=list(names),
            y=list(names),
            zmin=zmin,
            zmax=zmax,
            colorscale=colorscale,
            texttemplate="%{z:.2f}",
            textfont=dict(size=11),
            customdata=custom,
            hovertemplate=hover,
            colorbar=dict(title=dict(text=cbar)),
            xgap=1,
            ygap=1,
        )
    )
    n = len(names)
    size = int(min(900, max(420, 60 * n + 200)))
    fig.update_layout(
        template=_TEMPLATE,
        title=dict(text=title),
        width=size + 80,
        height=size,
        xaxis=dict(tickangle=-40, side="bottom", constrain="domain"),
        yaxis=dict(autorange="reversed", scaleanchor="x", scaleratio=1, constrain="domain"),
        margin=dict(l=40, r=40, t=90, b=40),
    )
    return fig


def plot_rho(tree, title: str | None = None) -> go.Figure:
    """Heat map of ρ(y_i, y_j) = depth(lca)/L for every leaf pair (paper 01 Eq. 4).

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One ``go.Heatmap`` named ``"rho"`` (C × C, ``tree.leaves`` order, values in
        [0, 1], annotated), hover shows both leaves and the LCA.
    """
    rho = _rho(tree)
    names = list(tree.leaves)
    anc = {n: tree.ancestors(n, inclusive=True) for n in names}

    def lca(a: str, b: str) -> str:
        common = [x for x, y in zip(anc[a], anc[b]) if x == y]
        return common[-1] if common else ""

    lca_names = [[lca(a, b) for b in names] for a in names]
    fig = _heatmap(
        rho,
        names,
        0.0,
        1.0,
        "Blues",
        np.array(lca_names, dtype=object),
        "row: %{y}<br>col: %{x}<br>lca: %{customdata}<br>ρ = %{z:.3f}<extra></extra>",
        title or f"ρ = depth(lca)/L, L = {tree.height} (paper 01 Eq. 4)",
        "ρ",
    )
    fig.data[0].name = "rho"
    return fig


def plot_omega(tree, alpha: float, gamma: float, alpha_max: float | None = None, title: str | None = None) -> go.Figure:
    """Heat map of the HWC multipliers ω for every leaf pair (paper 01 Eqs. 5–6).

    Diagonal (same leaf ≙ positive pair): a = 1 + α ρ; off-diagonal (different leaves ≙
    negative pair): b = 1 + γ (1 − ρ). See :func:`omega_matrix` for the leaf-pair
    simplification. The colour range is fixed to [1, 1 + max(α, γ)] so a slider change
    shows up as a colour change. Read a row as "anchor of this leaf": hotter cells are
    pushed (negatives) or pulled (positives) harder; ω also acts as a per-pair inverse
    temperature τ/ω.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    alpha, gamma : float ≥ 0
    alpha_max : float ≥ 0, optional
        Clamp ω ≤ 1 + alpha_max.
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One ``go.Heatmap`` named ``"omega"`` (C × C, ``tree.leaves`` order); hover shows
        ρ and whether the entry is a_ij or b_ik.

    Raises
    ------
    ValueError
        Negative or non-finite α, γ, alpha_max.
    """
    w = omega_matrix(tree, alpha, gamma, alpha_max)
    rho = _rho(tree)
    names = list(tree.leaves)
    C = len(names)
    custom = np.empty((C, C, 2), dtype=object)
    custom[..., 0] = np.round(rho, 3)
    custom[..., 1] = "b = 1 + γ(1−ρ), different leaves (Eq. 6)"
    for i in range(C):
        custom[i, i, 1] = "a = 1 + αρ, same leaf (Eq. 5)"
    a, g = float(alpha), float(gamma)
    zmax = 1.0 + max(a, g, 1e-6)
    if alpha_max is not None:
        zmax = min(zmax, 1.0 + max(float(alpha_max), 1e-6))
    extra = "" if alpha_max is None else f", α_max = {float(alpha_max):g}"
    fig = _heatmap(
        w,
        names,
        1.0,
        zmax,
        "YlOrRd",
        custom,
        "anchor: %{y}<br>other: %{x}<br>ρ = %{customdata[0]}<br>%{customdata[1]}<br>ω = %{z:.3f}<extra></extra>",
        title
        or f"HWC multipliers ω (α = {a:g}, γ = {g:g}{extra})"
        "<br><sup>diagonal a = 1+αρ (Eq. 5), off-diagonal b = 1+γ(1−ρ) (Eq. 6)</sup>",
        "ω",
    )
    fig.data[0].name = "omega"
    return fig


def hwc_forces(similarities: Any, omega: Any, positive: Any, tau: float = DEFAULT_TAU) -> dict[str, np.ndarray]:
    """Per-candidate gradient of the HWC loss of one anchor w.r.t. its logits (paper 01 Eq. 8).

    With logits s_q = sim_q / τ (Eq. 1) and π = softmax(ω ⊙ s) over all candidates q ≠ i,

        ∂L_i/∂s_q = ω_q π_q − a_q 1[q ∈ P] / |P|

    (the sum over j ∈ P in Eq. 8 of the ω_q π_q term gives |P| copies, cancelling the
    1/|P|). ``push`` = ω π ≥ 0 is the repulsion every candidate feels (gradient descent
    lowers s_q by it); ``pull`` = −a/|P| ≤ 0 is the attraction of a positive.

    Parameters
    ----------
    similarities : array-like, float, shape (K,)
        sim(z_i, z_q) before dividing by τ (cosine, or −distance for hyperbolic).
    omega : array-like, float ≥ 0, shape (K,)
        ω_iq: a_iq for positives, b_iq for negatives.
    positive : array-like of bool, shape (K,)
        Which candidates are in P(i); at least one.
    tau : float > 0, default 0.1

    Returns
    -------
    dict of str to numpy.ndarray (K,), float64
        ``"pi"`` softmax mass, ``"push"`` ω π, ``"pull"`` −a/|P| on positives (0
        elsewhere), ``"grad"`` = push + pull (sums to 0 when every ω is 1).

    Raises
    ------
    ValueError
        Shape mismatch, non-finite values, negative ω, τ ≤ 0, or no positive.
    """
    tau = _check_positive(tau, "tau")
    s = np.asarray(_to_numpy(similarities), dtype=np.float64)
    w = np.asarray(_to_numpy(omega), dtype=np.float64)
    pos = np.asarray(_to_numpy(positive))
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"similarities must be 1-D and non-empty, got shape {s.shape}")
    if w.shape != s.shape or pos.shape != s.shape:
        raise ValueError(
            f"similarities, omega and positive must have the same shape, got {s.shape}, {w.shape}, {pos.shape}"
        )
    if pos.dtype != bool:
        raise TypeError(f"positive must be a boolean mask, got dtype {pos.dtype}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(w))):
        raise ValueError("similarities and omega must be finite")
    if np.any(w < 0):
        raise ValueError("omega must be >= 0")
    if not pos.any():
        raise ValueError("positive must mark at least one candidate: Eq. 8 needs |P(i)| >= 1")
    logits = w * s / tau
    e = np.exp(logits - logits.max())
    pi = e / e.sum()
    push = w * pi
    pull = np.where(pos, -w / pos.sum(), 0.0)
    return {"pi": pi, "push": push, "pull": pull, "grad": push + pull}


def _leaf_id(x: Any, tree, name: str) -> int:
    if isinstance(x, str):
        if x not in tree.leaf_index:
            raise ValueError(f"{name} {x!r} is not a leaf of the tree")
        return int(tree.leaf_index[x])
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        if not 0 <= int(x) < tree.num_leaves:
            raise ValueError(f"{name} index {x} out of range [0, {tree.num_leaves - 1}]")
        return int(x)
    raise TypeError(f"{name} must be a leaf name or leaf index, got {type(x).__name__}")


def plot_forces(
    tree,
    anchor: str | int,
    candidates: Sequence[str | int],
    similarities: Any,
    alpha: float = 0.5,
    gamma: float = 0.5,
    tau: float = DEFAULT_TAU,
    alpha_max: float | None = None,
    compare_supcon: bool = True,
    title: str | None = None,
) -> go.Figure:
    """Bar chart of the HWC forces on one anchor's candidates (paper 01 Eq. 8).

    Candidates with the anchor's leaf are positives (ω = a = 1 + αρ); the others are
    negatives (ω = b = 1 + γ(1 − ρ)); see :func:`hwc_forces`. Holding the similarity
    fixed, a candidate farther away in the tree gets a larger ω and so a larger push —
    the paper's argument that HWC is not a global temperature change.

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
    anchor : str or int
        Anchor leaf (name or leaf index).
    candidates : sequence of str or int, length K
        Leaf of each candidate; at least one equal to ``anchor``.
    similarities : array-like, float, shape (K,)
        sim(anchor, candidate) before dividing by τ.
    alpha, gamma : float ≥ 0, default 0.5
    tau : float > 0, default 0.1
    alpha_max : float ≥ 0, optional
    compare_supcon : bool, default True
        Add the SupCon gradient (ω ≡ 1) as a second marker trace.
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``"push ω·π"`` (bars), ``"pull −a/|P|"`` (bars, stacked),
        ``"HWC ∂L/∂s"`` (markers) and, with ``compare_supcon``, ``"SupCon ∂L/∂s (ω≡1)"``.

    Raises
    ------
    ValueError
        Unknown leaves, length mismatch, no positive candidate, bad α/γ/τ.
    """
    ai = _leaf_id(anchor, tree, "anchor")
    if isinstance(candidates, str):
        raise TypeError("candidates must be a sequence of leaf names or indices, not a single string")
    cand = _leaf_labels(
        np.asarray(list(candidates), dtype=object if any(isinstance(c, str) for c in candidates) else np.int64),
        tree,
        name="candidates",
    )
    s = np.asarray(_to_numpy(similarities), dtype=np.float64)
    if s.shape != cand.shape:
        raise ValueError(f"similarities has shape {s.shape} but there are {len(cand)} candidates; they must match")
    W = omega_matrix(tree, alpha, gamma, alpha_max)
    rho = _rho(tree)
    w = W[ai, cand]
    pos = cand == ai
    if not pos.any():
        raise ValueError(f"candidates must include at least one positive (leaf {tree.leaves[ai]!r})")
    f = hwc_forces(s, w, pos, tau)
    names = [tree.leaves[int(k)] for k in cand]
    xs = [f"{k + 1}. {n}" + (" (+)" if p else "") for k, (n, p) in enumerate(zip(names, pos))]
    custom = np.column_stack([s, w, f["pi"], rho[ai, cand]])
    hover = (
        "%{x}<br>sim = %{customdata[0]:.3f}<br>ω = %{customdata[1]:.3f}<br>π = %{customdata[2]:.3f}"
        "<br>ρ = %{customdata[3]:.2f}<br>%{fullData.name}: %{y:.4f}<extra></extra>"
    )
    fig = go.Figure()
    fig.add_trace(
        go.Bar(x=xs, y=f["push"], name="push ω·π", marker_color="#d62728", customdata=custom, hovertemplate=hover)
    )
    fig.add_trace(
        go.Bar(x=xs, y=f["pull"], name="pull −a/|P|", marker_color="#1f77b4", customdata=custom, hovertemplate=hover)
    )

    def grad_markers(grad: Any, name: str, **marker: Any) -> go.Scatter:
        return go.Scatter(
            x=xs,
            y=grad,
            mode="markers",
            name=name,
            marker=dict(size=12, **marker),
            customdata=custom,
            hovertemplate=hover,
        )

    fig.add_trace(grad_markers(f["grad"], "HWC ∂L/∂s", symbol="diamond", color="black"))
    if compare_supcon:
        f0 = hwc_forces(s, np.ones_like(w), pos, tau)
        fig.add_trace(
            grad_markers(f0["grad"], "SupCon ∂L/∂s (ω≡1)", symbol="circle-open", color="#555555", line=dict(width=2))
        )
    fig.update_layout(
        template=_TEMPLATE,
        barmode="relative",
        height=480,
        title=dict(
            text=title
            or f"HWC forces on an anchor of {tree.leaves[ai]!r} "
            f"(α = {float(alpha):g}, γ = {float(gamma):g}, τ = {float(tau):g})"
            "<br><sup>∂L/∂s = ω·π − a/|P| (paper 01 Eq. 8); positive ⇒ pushed away, negative ⇒ pulled in</sup>"
        ),
        xaxis=dict(title=dict(text="candidate (+ = positive)")),
        yaxis=dict(title=dict(text="∂L/∂s"), zeroline=True, zerolinecolor="#888888"),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
