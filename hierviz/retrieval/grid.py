"""Paper 03 (Hyper-DINO)'s retrieval grid as ``compare`` methods: PCA(N)/NCA(N)/scaled, the mapper, the control.

``hierviz retrieval`` is an alias of ``hierviz compare``: :func:`register_grid`
registers one method per variant of the grid, each one building its own model from the fold's
training rows (declared as :attr:`Method.model`, read by :func:`hierviz.experiments.run_one`):

* ``pca16``, ``nca16``, ``scaled`` (display ``PCA(16)``, ``NCA(16)``, ``scaled``): the base
  features alone, :class:`BaseFeatures` (standard scaling, then PCA/NCA fitted by scikit-learn
  on the fold's training rows, rounded through float16, §2.1), ranked by Euclidean distance.
  No parameter is trained (``compare`` runs no epoch for them).
* ``hyper-dino-pca16-32`` (``Hyper-DINO(PCA(16), 32)``): :class:`MapperRun`, the same frozen
  reduction followed by :class:`~hierviz.evaluation.retrieval.MapperModel` trained with HCL by
  :func:`hierviz.training.fit` (Adam, constant learning rate, batches of the plain rows: the
  method's ``train`` and ``feature_dropout = 0``), ranked through a
  :class:`~hierviz.retrieval.ReferenceIndex` (float16 ``log_0`` tangents: the Table 2 numbers;
  the other storages as ``fp32_map@k`` ...).
* ``cosine-mapper-pca16`` (``Cosine-mapper(PCA(16), 32)``): the cosine control, the
  mapper onto the unit sphere, HCL on the chordal distance, ranked by cosine distance.

Every fold is a run (the ``retrieval-folds`` protocol: run seed ``s`` is fold ``s``), so the
records of ``compare`` hold the grid, and :mod:`.tables` writes Table 2 from them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch import nn

from hierviz.evaluation.retrieval import CosineMapper, MapperModel, cosine_distances, retrieval_metrics
from hierviz.features.reduce import make_reducer
from hierviz.geometry import get_geometry
from hierviz.losses import HCLLoss, Objective
from hierviz.methods import METHODS, Needs, register_method
from hierviz.methods.paper03 import HCL_HPARAMS
from hierviz.retrieval.config import cosine_name, variant_name
from hierviz.retrieval.index import ReferenceIndex

__all__ = [
    "GridOptions",
    "BaseFeatures",
    "MapperRun",
    "FrozenReducer",
    "MAPPER_TRAIN",
    "grid_methods",
    "register_grid",
    "unregister_grid",
]


@dataclass(frozen=True)
class GridOptions:
    """What every variant of one grid shares (:class:`hierviz.retrieval.RetrievalConfig` fills it).

    Attributes
    ----------
    float16_base : bool
        Round the reduced features through float16 (§2.1).
    nca_fit_rows : int
        NCA is fitted on at most this many stratified training rows.
    seed : int
        ``random_state`` of PCA/NCA and of the NCA subset (the mapper's seed is the run's).
    ks : tuple of int
    denominator : str
    storages : tuple of str
        Reference storages of the mapper (:data:`hierviz.retrieval.STORAGES`); the first of
        ``"fp16"`` / the first given gives the plain ``map@k`` keys.
    """

    float16_base: bool = True
    nca_fit_rows: int = 2000
    seed: int = 0
    ks: tuple[int, ...] = (1, 5, 10, 20)
    denominator: str = "min_k_r"
    storages: tuple[str, ...] = ("fp32", "fp16")

    @property
    def main_storage(self) -> str:
        """The storage whose metrics are the plain ``map@k`` keys (fp16 when run: Table 2's 64 bytes)."""
        return "fp16" if "fp16" in self.storages else self.storages[0]


def _stratified_subset(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Sorted indices of a stratified subset of ``n`` rows (all rows when ``n >= len(y)``)."""
    if n >= len(y):
        return np.arange(len(y))
    idx, _ = train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=seed)
    return np.sort(idx)


def _rows(x: torch.Tensor) -> torch.Tensor:
    """``(B, V, D, 1, 1)`` training views or ``(B, D)`` rows -> ``(..., D)``."""
    while x.ndim > 2 and x.shape[-1] == 1:
        x = x[..., 0]
    return x


class FrozenReducer(nn.Module):
    """Standard scaling + PCA/NCA (a fitted scikit-learn pipeline) as a frozen module, float64 inside.

    Parameters
    ----------
    base : {"pca", "nca", "scaled"}
    n : int
        Components (cut to the rows and features as :func:`hierviz.features.reduce_features` does).
    x, y : numpy.ndarray, shapes (n, D) and (n,)
        The rows it is fitted on (the fold's training rows, or NCA's subset of them).
    options : GridOptions

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(30, 5))
    >>> r = FrozenReducer("pca", 3, x, np.arange(30) % 2, GridOptions(float16_base=False))
    >>> r(torch.as_tensor(x[:4], dtype=torch.float32)).shape, r.dim_out
    (torch.Size([4, 3]), 3)
    """

    def __init__(self, base: str, n: int, x: np.ndarray, y: np.ndarray, options: GridOptions) -> None:
        super().__init__()
        x = np.asarray(x, dtype=np.float64)
        n = min(int(n), *x.shape) if base == "pca" else min(int(n), x.shape[1])
        self.pipe = make_reducer(base, None if base == "scaled" else n, seed=options.seed)
        self.pipe.fit(x, np.asarray(y))
        self.dim_out = x.shape[1] if base == "scaled" else n
        self.float16 = bool(options.float16_base)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _rows(x)
        flat = x.detach().reshape(-1, x.shape[-1]).cpu().numpy().astype(np.float64)
        out = self.pipe.transform(flat).astype(np.float16 if self.float16 else np.float32).astype(np.float32)
        return torch.as_tensor(out, device=x.device).reshape(*x.shape[:-1], self.dim_out)


def _fit_reducer(base: str, n: int, train_ds: Any, options: GridOptions, cache: dict | None = None) -> FrozenReducer:
    """The reduction fitted on a fold's training rows; ``cache`` shares it between the variants of one grid.

    The key is the rows' content (a SHA-1 of features and labels), so the mapper and the base of
    one fold reuse one fit (NCA's is the slow one) and no other rows can hit it.
    """
    x, y = np.asarray(train_ds.images, dtype=np.float32), np.asarray(train_ds.labels)
    key = (base, int(n), hashlib.sha1(x.tobytes() + np.asarray(y, np.int64).tobytes()).hexdigest())
    if cache is not None and key in cache:
        return cache[key]
    if base == "nca":  # NCA's cost is quadratic in the rows: fit it on a stratified subset
        keep = _stratified_subset(y, options.nca_fit_rows, options.seed)
        x, y = x[keep], y[keep]
    reducer = FrozenReducer(base, n, x, y, options)
    if cache is not None:
        cache[key] = reducer
    return reducer


class BaseFeatures(nn.Module):
    """PCA(N)/NCA(N)/scaled alone: ``{"z": reducer(x)}``, ranked by Euclidean distance (Paper 03's baseline)."""

    def __init__(self, reducer: FrozenReducer, options: GridOptions) -> None:
        super().__init__()
        self.reducer, self.ks, self.denominator = reducer, options.ks, options.denominator
        self.storage = "fp16" if options.float16_base else "fp32"
        self.retrieval_extra: dict[str, float] = {}

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.reducer(x)}

    def ranking(self, q: torch.Tensor, g: torch.Tensor, yq: Any, yg: Any) -> tuple[torch.Tensor, dict[str, float]]:
        """Euclidean distances ``(Q, G)`` in float64, N and the stored bytes per reference."""
        D = torch.cdist(q.double().cpu(), g.double().cpu())
        n = int(q.shape[-1])
        return D, {"n": n, "bytes": n * (2 if self.storage == "fp16" else 4)}


class MapperRun(nn.Module):
    """The frozen reduction followed by Paper 03's mapper: ``{"z": mapper(reducer(x))}``.

    On a hyperbolic geometry the references are stored in a :class:`ReferenceIndex` (each of
    ``options.storages``); on the unit sphere (:class:`CosineMapper`, the cosine control) they
    are ranked by cosine distance.
    """

    def __init__(self, reducer: FrozenReducer, mapper: nn.Module, options: GridOptions, n: int) -> None:
        super().__init__()
        self.reducer, self.mapper, self.options, self.n = reducer, mapper, options, int(n)
        self.ks, self.denominator = options.ks, options.denominator

    @property
    def to_manifold(self) -> nn.Module:
        """The mapper's head (``compare`` reads its ``center``)."""
        return self.mapper.to_manifold

    @property
    def retrieval_extra(self) -> dict[str, float]:
        """The clip fraction of the last eval-mode call (the references')."""
        return {"clip_fraction": float(self.mapper.clip_fraction)} if self.mapper.geometry.hyperbolic else {}

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.mapper(self.reducer(x))}

    def ranking(self, q: torch.Tensor, g: torch.Tensor, yq: Any, yg: Any) -> tuple[torch.Tensor, dict[str, float]]:
        """Distances ``(Q, G)`` of the main storage, N and its bytes; every storage's metrics as ``fp32_map@1`` ..."""
        if not self.mapper.geometry.hyperbolic:  # the cosine control: directions on the unit sphere
            D = cosine_distances(q, g).cpu()
            return D, {"n": self.n, "bytes": int(q.shape[-1]) * 4}
        main = self.options.main_storage
        extra: dict[str, float] = {"n": self.n}
        D_main = None
        for storage in self.options.storages:  # every storage under its prefix; the main one also plain
            index = ReferenceIndex(g, yg, geometry=self.mapper.geometry, storage=storage, device=g.device)
            D = index.distances(q).cpu()
            extra[f"{storage}_bytes"] = index.bytes_per_item
            m = retrieval_metrics(D, yq, yg, ks=self.ks, denominator=self.denominator)
            extra.update({f"{storage}_{k}": v for k, v in m.items()})
            if storage == main:
                D_main, extra["bytes"] = D, index.bytes_per_item
        return D_main, extra


def grid_methods(
    reducers: Sequence[str], n_grid: Sequence[int], dim_out: Sequence[Any], *, cosine: bool, dim: int
) -> list[tuple[str, str, str, int, Any]]:
    """The variants of a grid: ``(method name, display name, base, N, d_out | None | "cos")``, in table order.

    ``N`` is cut to the feature size ``dim`` (each N once); ``scaled`` takes no N (it is ``dim``).

    Examples
    --------
    >>> [m[0] for m in grid_methods(["pca"], [8, 64], [32], cosine=True, dim=16)]
    ['pca8', 'hyper-dino-pca8-32', 'cosine-mapper-pca8', 'pca16', 'hyper-dino-pca16-32', 'cosine-mapper-pca16']
    >>> grid_methods(["scaled"], [8, 64], ["in"], cosine=False, dim=16)
    [('scaled', 'scaled', 'scaled', 16, None), ('hyper-dino-scaled-16', 'Hyper-DINO(scaled, 16)', 'scaled', 16, 16)]
    """
    out = []
    for base in reducers:
        ns = [int(dim)] if base == "scaled" else sorted({min(int(n), int(dim)) for n in n_grid})
        for n in ns:
            tag = "scaled" if base == "scaled" else f"{base}{n}"
            out.append((tag, variant_name(base, n, None), base, n, None))
            for d in dict.fromkeys(n if d == "in" else int(d) for d in dim_out):
                out.append((f"hyper-dino-{tag}-{d}", variant_name(base, n, d), base, n, d))
            if cosine:
                out.append((f"cosine-mapper-{tag}", cosine_name(base, n), base, n, "cos"))
    return out


#: Paper 03 §3.2's optimiser for the mapper (the run's other settings come from the config).
MAPPER_TRAIN = {"optimizer": "adam", "schedule": "constant"}

#: Names of the methods :func:`register_grid` registered (it may re-register them, nothing else).
_GRID_VARIANTS: set[str] = set()


def register_grid(variants: Sequence[tuple[str, str, str, int, Any]], options: GridOptions) -> list[str]:
    """Register one ``compare`` method per variant of :func:`grid_methods` (replacing earlier ones).

    Parameters
    ----------
    variants : sequence of tuple
        :func:`grid_methods` output.
    options : GridOptions

    Returns
    -------
    list of str
        The registered method names; :func:`unregister_grid` removes them when done.

    Raises
    ------
    ValueError
        A variant's name is taken by a method that is not a grid variant.
    """
    names, cache = [], {}  # one fitted reduction per (base, N, fold) for all the variants that read it
    for name, display, base, n, d in variants:
        if name in METHODS and name not in _GRID_VARIANTS:
            raise ValueError(
                f"method {name!r} is already registered by another module; the retrieval grid names its variants "
                "pca16, hyper-dino-pca16-32, ...: rename that method"
            )
        names.append(_register_variant(name, display, base, n, d, options, cache))
    return names


def _register_variant(name: str, display: str, base: str, n: int, d: Any, options: GridOptions, cache: dict) -> str:
    paper = "Paper 03 (Hyper-DINO)"
    if d is None:

        def build_base(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
            return Objective(name, {})  # nothing to train

        def base_model(train_ds: Any, geometry: Any, seed: int) -> nn.Module:
            return BaseFeatures(_fit_reducer(base, n, train_ds, options, cache), options)

        register_method(
            name, display_name=display, protocol="retrieval-folds", paper=paper, model=base_model, replace=True
        )(build_base)
        _GRID_VARIANTS.add(name)
        return name

    cos = d == "cos"
    d_out = 32 if cos else int(d)

    def build_mapper(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
        geo = get_geometry("euclidean") if cos else geometry
        return Objective("hcl", {"hcl": HCLLoss(geo, m0=hp["m0"], alpha=hp["alpha"], lam=hp["lambda"])})

    def mapper_model(train_ds: Any, geometry: Any, seed: int) -> nn.Module:
        reducer = _fit_reducer(base, n, train_ds, options, cache)
        mapper = CosineMapper(reducer.dim_out, d_out) if cos else MapperModel(reducer.dim_out, d_out, geometry)
        return MapperRun(reducer, mapper, options, reducer.dim_out)

    register_method(
        name, display_name=display, hparams=HCL_HPARAMS, needs=Needs(views=1), protocol="retrieval-folds", paper=paper,
        model=mapper_model, train=MAPPER_TRAIN, feature_dropout=0.0, replace=True,
    )(build_mapper)  # fmt: skip
    _GRID_VARIANTS.add(name)
    return name


def unregister_grid(names: Sequence[str]) -> None:
    """Remove the methods of :func:`register_grid`."""
    for name in names:
        METHODS.unregister(name)
        _GRID_VARIANTS.discard(name)
