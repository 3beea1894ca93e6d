"""Training Paper 03 (Hyper-DINO)'s mapper for ``hierviz retrieval``: a thin call of the one loop.

:func:`train_mapper` keeps the 0.2 signature and calls
:func:`hierviz.evaluation.retrieval.fit_mapper`, which trains
:class:`~hierviz.evaluation.retrieval.MapperModel` with HCL through
:func:`hierviz.training.fit` (the loop ``hierviz compare`` uses).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hierviz.evaluation.retrieval import CosineMapper, MapperModel, fit_mapper

__all__ = ["CosineMapper", "MapperModel", "train_mapper"]


def train_mapper(
    x: np.ndarray,
    y: np.ndarray,
    *,
    dim_out: int = 32,
    epochs: int = 100,
    batch_size: int = 128,
    lr: float = 1e-3,
    weight_decay: float = 1e-5,
    m0: float = 0.5,
    alpha: float = 0.1,
    lam: float = 1e-3,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = False,
    geometry: Any = "poincare",
) -> tuple[MapperModel, list[float]]:
    """Train Paper 03's mapper with HCL (§3.2) through :func:`hierviz.training.fit`.

    ``geometry="euclidean"`` (or the Euclidean geometry object) trains the cosine control:
    the same MLP onto the unit sphere (:class:`CosineMapper`), HCL on the chordal distance (a
    monotone function of the cosine distance). Any geometry object works; the head follows
    ``geometry.hyperbolic`` (:class:`~hierviz.models.HyperbolicHead`: data-initialised scale,
    smooth bound), never the name.

    Parameters
    ----------
    x : numpy.ndarray, shape (n, D), float
        Base features of the training rows.
    y : numpy.ndarray, shape (n,), int
        Their labels.
    dim_out : int, default 32
    epochs, batch_size, lr, weight_decay : int, int, float, float
        Adam with a constant learning rate (the paper: 100, 128, 1e-3, 1e-5); the last
        incomplete batch is dropped when there is more than one batch.
    m0, alpha, lam : float
        :class:`~hierviz.losses.HCLLoss` hyperparameters.
    seed : int, default 0
        Initialisation and batch order.
    device : str or torch.device, default "cpu"
    progress : bool, default False
        A ``tqdm.auto`` bar over the steps.
    geometry : Geometry or str, default "poincare"
        The ball (the paper), the Euclidean geometry (the cosine control), or another one.

    Returns
    -------
    mapper : MapperModel or CosineMapper
        In eval mode, on ``device``; ``mapper.clip_fraction`` describes its last call.
    history : list of float
        Mean training loss per epoch (the paper's Fig. 2).

    Raises
    ------
    ValueError
        Fewer than 2 rows, or an unknown geometry name.
    hierviz.training.NonFiniteLossError
        A non-finite loss (a RuntimeError naming the epoch and step).
    """
    return fit_mapper(
        x, y, geometry=geometry, dim_out=dim_out, epochs=epochs, batch_size=batch_size, lr=lr,
        weight_decay=weight_decay, m0=m0, alpha=alpha, lam=lam, seed=seed, device=device, progress=progress,
    )  # fmt: skip
