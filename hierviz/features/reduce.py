"""Standard scaling, then PCA or NCA to N components (Paper 03 (Hyper-DINO) §2.1), via scikit-learn.

Paper 03 builds its base features as ``PCA-DINO(N)`` / ``NCA-DINO(N)``: the [CLS] token after
standard scaling, reduced by PCA (Pearson 1901) or NCA (Goldberger et al. 2004) to N
components, N in :data:`PAPER_N_GRID`, optionally stored as float16. :func:`make_reducer`
builds that as a scikit-learn pipeline, fitted on the training rows only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

__all__ = ["PAPER_N_GRID", "REDUCERS", "make_reducer", "reduce_features"]

#: The component counts of Paper 03 (Hyper-DINO) §2.1.
PAPER_N_GRID = (5, 10, 20, 30, 40, 50, 60, 80, 100, 120, 160, 200, 230, 270, 310, 350, 384)
#: Reducer names: ``"pca"``, ``"nca"`` and ``"scaled"`` (standard scaling only, the paper's [CLS] input).
REDUCERS = ("pca", "nca", "scaled")


def make_reducer(method: str, n_components: int | None = None, *, seed: int = 0, nca_max_iter: int = 50) -> Pipeline:
    """``StandardScaler`` followed by PCA or NCA (scikit-learn), unfitted.

    Parameters
    ----------
    method : {"pca", "nca", "scaled"}
        The reduction; ``"scaled"`` keeps all dimensions (standard scaling only).
    n_components : int, optional
        N, the output dimension (required for ``"pca"`` and ``"nca"``, >= 1).
    seed : int, default 0
        ``random_state`` of PCA/NCA.
    nca_max_iter : int, default 50
        L-BFGS iterations of NCA (scikit-learn's own default is 50).

    Returns
    -------
    sklearn.pipeline.Pipeline
        Steps ``scale`` and (unless ``"scaled"``) ``reduce``.

    Raises
    ------
    ValueError
        Unknown ``method`` or a missing / non-positive ``n_components``.

    Examples
    --------
    >>> make_reducer("pca", 8).named_steps["reduce"].n_components
    8
    """
    if method not in REDUCERS:
        raise ValueError(f"method must be one of {list(REDUCERS)}, got {method!r}")
    steps: list[tuple[str, Any]] = [("scale", StandardScaler())]
    if method != "scaled":
        if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)) or n_components < 1:
            raise ValueError(f"n_components must be a positive integer for {method!r}, got {n_components!r}")
        if method == "pca":
            from sklearn.decomposition import PCA  # heavy: scikit-learn's decomposition, imported on first use

            steps.append(("reduce", PCA(n_components=int(n_components), random_state=seed)))
        else:
            from sklearn.neighbors import NeighborhoodComponentsAnalysis  # heavy: scikit-learn, on first use

            steps.append(
                (
                    "reduce",
                    NeighborhoodComponentsAnalysis(
                        n_components=int(n_components), random_state=seed, max_iter=nca_max_iter
                    ),
                )
            )
    return Pipeline(steps)


def reduce_features(
    x_train: np.ndarray,
    y_train: np.ndarray,
    others: list[np.ndarray] | tuple[np.ndarray, ...] = (),
    *,
    method: str = "pca",
    n_components: int | None = None,
    float16: bool = False,
    seed: int = 0,
) -> list[np.ndarray]:
    """Fit scaling + PCA/NCA on the training rows and transform them and the others.

    Parameters
    ----------
    x_train : numpy.ndarray, shape (n, D)
        Training features (the only rows the reducer sees when fitting).
    y_train : numpy.ndarray, shape (n,), int
        Their labels (NCA is supervised; PCA ignores them).
    others : sequence of numpy.ndarray, each (m, D)
        Further rows to transform (e.g. the test queries).
    method, n_components, seed
        As :func:`make_reducer`. ``n_components`` larger than ``min(n, D)`` is cut to it
        for PCA, to ``D`` for NCA.
    float16 : bool, default False
        Round the outputs through float16 (Paper 03 (Hyper-DINO) §2.1) and return float32.

    Returns
    -------
    list of numpy.ndarray
        ``[train, *others]`` transformed, float32.

    Raises
    ------
    ValueError
        As :func:`make_reducer`, or mismatched feature dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(20, 6))
    >>> tr, te = reduce_features(x[:15], np.arange(15) % 2, [x[15:]], method="pca", n_components=3)
    >>> tr.shape, te.shape, tr.dtype
    ((15, 3), (5, 3), dtype('float32'))
    """
    x_train = np.asarray(x_train, dtype=np.float64)
    D = x_train.shape[1]
    for i, o in enumerate(others):
        if np.asarray(o).shape[1:] != (D,):
            raise ValueError(f"others[{i}] has shape {np.asarray(o).shape}; expected (m, {D}) like x_train")
    if method == "pca" and n_components is not None:
        n_components = min(int(n_components), *x_train.shape)
    elif method == "nca" and n_components is not None:
        n_components = min(int(n_components), D)
    pipe = make_reducer(method, n_components, seed=seed)
    outs = [pipe.fit_transform(x_train, np.asarray(y_train))]
    outs += [pipe.transform(np.asarray(o, dtype=np.float64)) for o in others]
    dtype = np.float16 if float16 else np.float32
    return [o.astype(dtype).astype(np.float32) for o in outs]
