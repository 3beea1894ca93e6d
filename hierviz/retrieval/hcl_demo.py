"""Notebook 07's HCL demo: a 2-D Hyperbolic Mapper trained with HCL on toy blobs, and its precomputed grid.

* :func:`hcl_toy_features` -- Gaussian blobs standing in for frozen features;
* :func:`hcl_train` -- a 2-D :class:`~hierviz.models.HyperbolicMapper` trained with
  :class:`~hierviz.losses.HCLLoss` (m0, α, λ) for a few full-batch steps through
  :func:`hierviz.training.fit`: the points, the loss terms per step and the final terms;
* :data:`HCL_GRID`, :func:`write_hcl_grid`, :func:`hcl_grid` -- every slider setting of the
  panel trained once ahead of time and shipped with the package
  (``hierviz/retrieval/data/hcl_grid.npz``).

The figures live in :mod:`hierviz.viz.retrieval` and only draw: :func:`~hierviz.viz.retrieval.hcl_figure`
draws one :func:`hcl_train` result, :func:`~hierviz.viz.retrieval.hcl_panel` the :func:`hcl_grid`
it is given (a figure module imports no training code).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import TensorDataset

from hierviz.losses import HCLLoss, Objective
from hierviz.models import HyperbolicMapper
from hierviz.training import TrainConfig, fit

__all__ = ["hcl_toy_features", "hcl_train", "HCL_GRID", "write_hcl_grid", "hcl_grid"]


def hcl_toy_features(
    n_per_class: int = 40, classes: int = 4, dim: int = 8, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs standing in for frozen features (one blob per class).

    Returns
    -------
    x : numpy.ndarray, shape (classes·n_per_class, dim), float32
    y : numpy.ndarray, shape (classes·n_per_class,), int64

    Examples
    --------
    >>> x, y = hcl_toy_features(5, 3, 4)
    >>> x.shape, sorted(set(y.tolist()))
    ((15, 4), [0, 1, 2])
    """
    g = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), n_per_class)
    centres = 2.0 * g.normal(size=(classes, dim))
    x = centres[y] + g.normal(size=(len(y), dim))
    return x.astype(np.float32), y.astype(np.int64)


#: The slider grid of :func:`hierviz.viz.retrieval.hcl_panel`: every setting is trained once, ahead of time
#: (:func:`write_hcl_grid`, stored in ``hierviz/retrieval/data/hcl_grid.npz``), so a slider move
#: only draws. λ is a selection slider: its effect shows only from about 1 upwards.
HCL_GRID = {
    "m0": tuple(round(0.5 * i, 2) for i in range(13)),  # 0, 0.5, ..., 6
    "alpha": (0.0, 0.25, 0.5, 0.75, 1.0),
    "lam": (0.0, 0.1, 0.3, 1.0, 3.0, 10.0),
}
_GRID_FILE = "hcl_grid.npz"
_TERMS = ("pos", "neg", "norm", "margin", "d_bar")
_GRID_STEPS, _GRID_LR, _GRID_SEED = 60, 1e-2, 0


class _ZOutput(torch.nn.Module):
    """``{"z": mapper(x)}``, the output dict :func:`hierviz.training.fit` reads."""

    def __init__(self, mapper: torch.nn.Module) -> None:
        super().__init__()
        self.mapper = mapper

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.mapper(x)}


def hcl_train(
    m0: float = 0.5,
    alpha: float = 0.1,
    lam: float = 1e-3,
    *,
    x: Any = None,
    y: Any = None,
    steps: int = 60,
    lr: float = 1e-2,
    seed: int = 0,
) -> dict[str, Any]:
    """Train a 2-D Hyperbolic Mapper with HCL(m0, α, λ) for ``steps`` full-batch Adam steps (:func:`hierviz.training.fit`).

    Parameters
    ----------
    m0, alpha, lam : float
        HCL hyperparameters (Paper 03 (Hyper-DINO) §2.3).
    x, y : array-like, optional
        Features (n, D) and labels (n,); default :func:`hcl_toy_features` ``(seed=seed)``.
    steps : int, default 60
    lr : float, default 1e-2
    seed : int, default 0

    Returns
    -------
    dict
        ``h`` (n, 2) float32 ball points after training, ``y`` (n,) int64, ``trace`` (3, steps)
        float32 (the terms pos, neg, norm per step), ``terms`` (dict: the final
        :class:`~hierviz.losses.HCLLoss` terms on ``h``: pos, neg, norm, margin, d_bar), ``clip_fraction`` (float, the share of
        points the radius cap moved) and ``radius`` (the cap ``1 - δ``).

    Examples
    --------
    >>> r = hcl_train(0.5, 0.1, 1e-3, steps=3)
    >>> r["h"].shape, r["trace"].shape
    ((160, 2), (3, 3))
    """
    if x is None:
        x, y = hcl_toy_features(seed=seed)
    X = torch.as_tensor(np.asarray(x, dtype=np.float32))
    Y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    torch.manual_seed(seed)
    mapper = HyperbolicMapper(X.shape[1], 2, hidden=64)  # the paper's hard cap: the figure shows what it clips
    loss_fn = HCLLoss(mapper.geometry, m0=m0, alpha=alpha, lam=lam)
    trace = np.zeros((3, int(steps)), np.float32)

    def record(epoch: int, info: dict) -> None:  # one full-batch step per epoch: the terms of that step
        trace[:, epoch] = [loss_fn.last_terms[k] for k in ("pos", "neg", "norm")]

    config = TrainConfig(  # full-batch Adam at a constant lr, through the one training loop
        epochs=int(steps), batch_size=len(X), lr_backbone=lr, lr_head=lr, weight_decay=0.0, warmup_epochs=0,
        ema_decay=None, seed=seed, device="cpu", amp=False, progress=False, optimizer="adam", schedule="constant",
    )  # fmt: skip
    fit(config, _ZOutput(mapper), Objective("hcl", {"hcl": loss_fn}), TensorDataset(X, Y), callbacks=[record])
    with torch.no_grad():
        h = mapper(X).numpy().astype(np.float32)
        loss_fn(torch.as_tensor(h), Y)
    return {
        "h": h,
        "y": Y.numpy(),
        "trace": trace,
        "terms": {k: float(loss_fn.last_terms[k]) for k in _TERMS},
        "clip_fraction": float(mapper.clip_fraction),
        "radius": float(mapper.radius),
    }


def _grid_key(m0: float, alpha: float, lam: float) -> tuple[float, float, float]:
    return (round(float(m0), 4), round(float(alpha), 4), round(float(lam), 4))


def write_hcl_grid(path: Any = None) -> Any:
    """Train :func:`hcl_train` once per :data:`HCL_GRID` setting (toy features, 60 steps) and save it.

    About 80 s on one CPU core; the file ships with the package, so
    :func:`hierviz.viz.retrieval.hcl_panel` only draws. Rebuild it after changing
    :func:`hcl_train`, :class:`hierviz.losses.HCLLoss` or the mapper:
    ``python3 -c "from hierviz.retrieval import write_hcl_grid; write_hcl_grid()"``.

    Parameters
    ----------
    path : str or Path, optional
        Default ``hierviz/retrieval/data/hcl_grid.npz``.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path) if path is not None else Path(__file__).parent / "data" / _GRID_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    keys, hs, traces, clips, terms = [], [], [], [], []
    y = radius = None
    for m0 in HCL_GRID["m0"]:
        for alpha in HCL_GRID["alpha"]:
            for lam in HCL_GRID["lam"]:
                r = hcl_train(m0, alpha, lam, steps=_GRID_STEPS, lr=_GRID_LR, seed=_GRID_SEED)
                keys.append(_grid_key(m0, alpha, lam))
                hs.append(r["h"])
                traces.append(r["trace"])
                clips.append(r["clip_fraction"])
                terms.append([r["terms"][k] for k in _TERMS])
                y, radius = r["y"], r["radius"]
    np.savez_compressed(
        path,
        keys=np.asarray(keys, np.float64),
        h=np.stack(hs),
        trace=np.stack(traces),
        clip_fraction=np.asarray(clips, np.float64),
        terms=np.asarray(terms, np.float64),
        y=y,
        radius=np.float64(radius),
    )
    return path


_GRID_CACHE: dict[tuple[float, float, float], dict[str, Any]] = {}


def hcl_grid() -> dict[tuple[float, float, float], dict[str, Any]]:
    """The precomputed :data:`HCL_GRID` runs, ``(m0, α, λ) -> hcl_train(...)`` output (empty if missing).

    Examples
    --------
    >>> grid = hcl_grid()
    >>> len(grid), sorted(grid[(3.0, 0.0, 0.0)])
    (390, ['clip_fraction', 'h', 'radius', 'terms', 'trace', 'y'])
    """
    if not _GRID_CACHE:
        path = Path(__file__).parent / "data" / _GRID_FILE
        if not path.is_file():
            return {}
        with np.load(path) as z:
            y, radius = z["y"], float(z["radius"])
            for key, h, trace, clip, t in zip(z["keys"], z["h"], z["trace"], z["clip_fraction"], z["terms"]):
                _GRID_CACHE[_grid_key(*key)] = {
                    "h": h,
                    "y": y,
                    "trace": trace,
                    "terms": dict(zip(_TERMS, map(float, t))),
                    "clip_fraction": float(clip),
                    "radius": radius,
                }
    return _GRID_CACHE
