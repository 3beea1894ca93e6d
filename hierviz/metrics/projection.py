"""2-D projections of embeddings (t-SNE, UMAP, PCA): the registry and :func:`project_2d`.

Pure functions of arrays, used by the figures (:mod:`hierviz.viz.projection` re-exports every
name) and by the config check of ``eval.projection``, which therefore imports no plotting module.
Hyperbolic embeddings are first mapped to the tangent space at the origin
(``geometry.to_tangent0`` = logmap₀), where Euclidean neighbourhoods are meaningful for
t-SNE / UMAP / PCA; Euclidean (unit-sphere) embeddings are used as they are.

Examples
--------
>>> import numpy as np
>>> project_2d(np.eye(5), "pca").shape
(5, 2)
>>> PROJECTIONS.names()
['tsne', 'umap', 'pca']
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from hierviz._registry import Registry
from hierviz.geometry import get_geometry

__all__ = ["PROJECTIONS", "PROJECTION_LABELS", "register_projection", "project_2d"]


def _to_numpy(x: Any) -> np.ndarray:
    """Tensor / array / nested list → numpy array (detached, on CPU)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _as_points(x: Any, name: str = "z", dim: int | None = None) -> np.ndarray:
    """Validate a point cloud: 2-D, finite, real → float64 array of shape (N, d)."""
    try:
        arr = _to_numpy(x)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be array-like (numpy array or torch tensor), got {type(x).__name__}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real-valued, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (N, d), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty (0 points)")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.all(np.isfinite(arr), axis=1)))
        raise ValueError(f"{name} contains non-finite values (NaN/inf) in {bad} row(s)")
    return arr


#: 2-D projections: name -> ``f(X (n, D) float64, seed, options) -> (n, 2)``.
PROJECTIONS: Registry = Registry("projection")
#: name -> display label ("t-SNE", ...).
PROJECTION_LABELS: dict[str, str] = {}


def register_projection(name: str, label: str | None = None):
    """Decorator registering a 2-D projection ``f(X, seed, options) -> (n, 2)`` under ``name``."""
    PROJECTION_LABELS[name] = label or name

    return PROJECTIONS.register(name)


def __getattr__(name: str):
    if name == "METHODS":  # hierviz 0.1 name
        return tuple(PROJECTIONS.names())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _features(z: Any, geometry) -> np.ndarray:
    """Validated (N, d) float64 features: logmap₀ for hyperbolic geometries."""
    if geometry is None:
        return _as_points(z, "z")
    if isinstance(geometry, str):
        geometry = get_geometry(geometry)
    if not hasattr(geometry, "to_tangent0"):
        raise TypeError(f"geometry must be None, a geometry name or a hierviz Geometry, got {type(geometry).__name__}")
    Z = _as_points(z, "z")
    zt = torch.from_numpy(Z)
    if hasattr(geometry, "check_point"):
        geometry.check_point(zt, name="z")
    return _as_points(geometry.to_tangent0(zt).detach().cpu().numpy(), "to_tangent0(z)")


def project_2d(
    z: Any, method: str = "tsne", geometry=None, seed: int = 0, options: dict[str, Any] | None = None
) -> np.ndarray:
    """Reduce embeddings to 2-D with t-SNE, UMAP or PCA.

    Parameters
    ----------
    z : array-like or torch.Tensor, shape (N, d), N ≥ 4
        Embeddings (points of ``geometry``'s manifold if one is given).
    method : {"tsne", "umap", "pca"}
        ``sklearn.manifold.TSNE`` (perplexity min(30, (N−1)/3), PCA init; single
        OpenMP thread for N ≤ 2000, where thread overhead dominates),
        ``umap.UMAP`` (n_neighbors min(15, N−1)) or ``sklearn.decomposition.PCA``.
    geometry : None, str or hierviz.geometry.Geometry, optional
        If hyperbolic ("poincare", "lorentz" or an instance), the points are checked to
        be on the manifold and mapped with ``geometry.to_tangent0`` (logmap₀) first;
        a name uses curvature 1 — pass an instance for another curvature. ``None`` or
        Euclidean uses ``z`` as is.
    seed : int
        ``random_state`` of t-SNE / UMAP (UMAP then runs single-threaded but reproducibly).
    options : dict, optional
        Extra keyword arguments for the estimator, overriding the defaults above
        (e.g. ``{"perplexity": 50}``, ``{"max_iter": 250}`` for a quick t-SNE,
        ``{"n_neighbors": 30, "min_dist": 0.3}`` for UMAP).

    Returns
    -------
    numpy.ndarray, float64, shape (N, 2)
        Finite coordinates, row i ↔ ``z[i]``.

    Raises
    ------
    ValueError
        Unknown ``method``; fewer than 4 points; non-finite input; points off the manifold.
    """
    if method not in PROJECTIONS:
        raise ValueError(f"method must be one of {PROJECTIONS.names()}, got {method!r}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict of estimator keyword arguments, got {type(options).__name__}")
    opts = dict(options or {})
    X = _features(z, geometry)
    n = X.shape[0]
    if n < 4:
        raise ValueError(f"z needs at least 4 points for a 2-D projection, got {n}")
    if np.unique(np.round(X / 1e-6), axis=0).shape[0] < 3:
        raise ValueError(
            f"z is collapsed: its {n} points lie on fewer than 3 distinct positions, so there is nothing to "
            f"lay out with {method} (the encoder learned a constant map)"
        )
    out = PROJECTIONS.get(method)(X, seed, opts)
    out = np.asarray(out, dtype=np.float64)
    if not np.all(np.isfinite(out)):  # pragma: no cover - library failure
        raise ValueError(f"{method} produced non-finite coordinates; check z for duplicates/scale")
    return out


@register_projection("tsne", label="t-SNE")
def _tsne(X: np.ndarray, seed: int, opts: dict) -> np.ndarray:
    # heavy: scikit-learn's manifold module (and numba-backed UMAP below) cost seconds; only the chosen one loads
    from sklearn.manifold import TSNE

    n = X.shape[0]
    perp = float(min(30.0, max(1.0, (n - 1) / 3.0)))
    kw = {"n_components": 2, "perplexity": perp, "init": "pca", "random_state": seed, **opts}
    # OpenMP start-up/spinning dominates the Barnes-Hut gradient for small N (measured
    # on a busy 2-core CPU: N=40 8.5 s → 0.3 s, N=1000 92 s → 15 s single-threaded)
    with threadpool_limits(limits=1 if n <= 2000 else None, user_api="openmp"):
        return TSNE(**kw).fit_transform(X)


@register_projection("umap", label="UMAP")
def _umap(X: np.ndarray, seed: int, opts: dict) -> np.ndarray:
    import umap  # heavy: UMAP (numba), imported only when UMAP is asked for

    n = X.shape[0]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*n_jobs value.*")
        warnings.filterwarnings("ignore", category=UserWarning, module="umap")
        kw = {
            "n_components": 2,
            "n_neighbors": int(min(15, n - 1)),
            "random_state": seed,
            "init": "spectral" if n > 10 else "random",
            **opts,
        }
        return umap.UMAP(**kw).fit_transform(X)


@register_projection("pca", label="PCA")
def _pca(X: np.ndarray, seed: int, opts: dict) -> np.ndarray:
    from sklearn.decomposition import PCA  # heavy: scikit-learn's decomposition module, imported on first use

    n = X.shape[0]
    if X.shape[1] == 1:
        return np.column_stack([X[:, 0] - X[:, 0].mean(), np.zeros(n)])
    return PCA(**{"n_components": 2, "random_state": seed, **opts}).fit_transform(X)
