"""How tree-like is a finite metric space? Gromov's four-point δ and embedding distortion.

* :func:`gromov_delta` -- Gromov's δ (0 for a tree metric, at most ``log 2 / sqrt(c)`` in the
  hyperbolic plane of curvature ``−c``, unbounded in the Euclidean plane), and its scale-free
  form ``δ_rel = 2δ / diam`` (Khrulkov et al. 2020);
* :func:`embedding_distortion` -- how closely embedded distances follow tree distances after the
  best global scale (notebook 01, (G4)).

Both are pure functions of distance matrices (numpy, float64); notebook 01 §7–8 uses them on
:func:`hierviz.geometry.tree_embedding.sarkar_embedding` and
:func:`hierviz.hierarchy.synthetic.node_tree_distance`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["gromov_delta", "embedding_distortion", "GROMOV_EXACT_MAX"]

GROMOV_EXACT_MAX = 300
"""Largest ``n`` for the exact (all base points) δ: O(n⁴) time, O(n³) memory per base point."""


def _square(D: Any, name: str = "D") -> np.ndarray:
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square (n, n) distance matrix, got shape {D.shape}")
    if not np.isfinite(D).all():
        raise ValueError(f"{name} has non-finite entries; pass a finite distance matrix")
    return D


#: Relative tolerance (to the largest entry) of the symmetry and zero-diagonal checks of :func:`gromov_delta`:
#: float32 distances rounded on the way keep well inside it.
METRIC_RTOL = 1e-4


def _check_metric(D: np.ndarray, name: str = "D") -> None:
    """Raise ValueError unless ``D`` is a distance matrix: non-negative, symmetric, zero diagonal (to METRIC_RTOL)."""
    tol = METRIC_RTOL * max(float(np.abs(D).max()), 1e-300)
    if (D < -tol).any():
        raise ValueError(f"{name} has negative entries (min {D.min():.3g}); pass distances")
    asym = float(np.abs(D - D.T).max())
    if asym > tol:
        i, j = np.unravel_index(int(np.abs(D - D.T).argmax()), D.shape)
        raise ValueError(
            f"{name} is not symmetric: D[{i},{j}] = {D[i, j]:.6g} but D[{j},{i}] = {D[j, i]:.6g}; "
            "pass a distance matrix (e.g. (D + D.T) / 2 if it is one up to rounding)"
        )
    diag = float(np.abs(np.diag(D)).max())
    if diag > tol:
        raise ValueError(
            f"{name} has a non-zero diagonal (largest |D[i,i]| = {diag:.3g}); a point's distance to itself is 0"
        )


def gromov_delta(D: Any, base: int | None = None, *, relative: bool = False) -> float:
    """Gromov's four-point δ of a finite metric space.

    With the Gromov product ``(x|y)_w = (d(x,w) + d(y,w) − d(x,y)) / 2`` at a base point ``w``,

    ``δ = max_w max_{x,y} [ max_z min((x|z)_w, (z|y)_w) − (x|y)_w ]``,

    a (max, min) matrix product per base point. It equals the four-point form
    ``max_{x,y,z,w} (S₁ − S₂)/2`` over the sorted pair sums ``S₁ ≥ S₂ ≥ S₃`` of
    ``d(x,y)+d(z,w)``, ``d(x,z)+d(y,w)``, ``d(x,w)+d(y,z)`` (notebook 01, (G5)).

    Parameters
    ----------
    D : array_like, shape (n, n)
        Symmetric distance matrix (any float dtype; computed in float64).
    base : int, optional
        ``None`` (default): the exact δ, the maximum over every base point, O(n⁴) time; meant
        for ``n <= GROMOV_EXACT_MAX``. An index ``w``: the value at that base point only
        (O(n³)), a lower bound on δ within a factor 2 of it.
    relative : bool, default False
        Return ``2δ / diam(D)`` (Khrulkov et al. 2020) instead of δ; 0 for a one-point space.

    Returns
    -------
    float
        δ >= 0 (or δ_rel in [0, 1]).

    Raises
    ------
    ValueError
        ``D`` not a finite non-empty square matrix, not a distance matrix (negative entries,
        asymmetric or a non-zero diagonal, beyond :data:`METRIC_RTOL` of its largest entry),
        ``base`` out of range, or ``n > GROMOV_EXACT_MAX`` with ``base=None`` (pass ``base=``
        for large spaces).

    Examples
    --------
    A tree metric has δ = 0: the star with three leaves at distance 2 from each other.

    >>> gromov_delta([[0, 2, 2], [2, 0, 2], [2, 2, 0]])
    0.0

    The four corners of a unit square (Euclidean): pair sums 2, 2, 2√2, so δ = (2√2 − 2)/2.

    >>> round(gromov_delta([[0, 1, 2 ** .5, 1], [1, 0, 1, 2 ** .5], [2 ** .5, 1, 0, 1], [1, 2 ** .5, 1, 0]]), 6)
    0.414214
    """
    D = _square(D)
    n = len(D)
    _check_metric(D)
    if base is None:
        if n > GROMOV_EXACT_MAX:
            raise ValueError(
                f"D has {n} points; the exact O(n^4) delta is meant for n <= {GROMOV_EXACT_MAX} (pass base=0 for a bound)"
            )
        bases: range | list[int] = range(n)
    else:
        if isinstance(base, bool) or not isinstance(base, (int, np.integer)) or not 0 <= base < n:
            raise ValueError(f"base must be a point index in [0, {n - 1}] or None, got {base!r}")
        bases = [int(base)]
    delta = 0.0
    for w in bases:
        G = 0.5 * (D[:, [w]] + D[[w], :] - D)  # Gromov products (x|y)_w
        maxmin = np.minimum(G[:, :, None], G[None, :, :]).max(axis=1)  # max_z min(G_xz, G_zy)
        delta = max(delta, float((maxmin - G).max()))
    if relative:
        diam = float(D.max())
        return 2.0 * delta / diam if diam > 0 else 0.0
    return delta


def embedding_distortion(D: Any, D_tree: Any) -> tuple[float, float]:
    """Mean relative distortion of embedded distances against tree distances, at the best scale.

    ``dist = mean_{i<j} | D_ij / (λ T_ij) − 1 |`` with ``λ = Σ D T / Σ T²`` the least-squares
    scale (notebook 01, (G4)): 0 when ``D`` is an exact multiple of ``T``.

    Parameters
    ----------
    D : array_like, shape (n, n)
        Distances between the embedded points.
    D_tree : array_like, shape (n, n)
        Tree distances between the same nodes (e.g. :func:`hierviz.hierarchy.synthetic.node_tree_distance`);
        positive off the diagonal.

    Returns
    -------
    distortion : float
        >= 0.
    scale : float
        λ, the best factor from tree distance to embedded distance.

    Raises
    ------
    ValueError
        Shapes differ, fewer than two points, or a zero tree distance off the diagonal.

    Examples
    --------
    >>> T = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> embedding_distortion([[0, 3, 6], [3, 0, 3], [6, 3, 0]], T)
    (0.0, 3.0)
    """
    D, T = _square(D, "D"), _square(D_tree, "D_tree")
    if D.shape != T.shape or len(D) < 2:
        raise ValueError(f"D {D.shape} and D_tree {T.shape} must be the same (n, n) with n >= 2")
    iu = np.triu_indices(len(D), 1)
    d, t = D[iu], T[iu]
    if (t <= 0).any():
        raise ValueError("D_tree has a zero or negative distance off the diagonal; two points are the same node")
    lam = float((d * t).sum() / (t**2).sum())
    if lam <= 0:
        return float("inf"), lam
    return float(np.mean(np.abs(d / (lam * t) - 1))), lam
