"""Settings of Paper 03 (Hyper-DINO)'s retrieval grid: :class:`RetrievalConfig`, :data:`RETRIEVAL_PRESETS`, names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RETRIEVAL_PRESETS", "RANDOM_RANKING", "RetrievalConfig", "cosine_name", "variant_name"]


@dataclass
class RetrievalConfig:
    """Settings of :func:`run_retrieval` (the presets in :data:`RETRIEVAL_PRESETS` fill them).

    Attributes
    ----------
    reducers : tuple of str
        Base features: ``"pca"``, ``"nca"`` (and ``"scaled"``: standard scaling only).
    n_grid : tuple of int
        The N of PCA(N)/NCA(N) (a subset of Paper 03's grid, cut to the feature size).
    dim_out : tuple of int or "in"
        Ball dimensions of the mapper: 32 for Hyper-DINO(·, 32), ``"in"`` for Hyper-DINO(·, N).
    folds : int
        Grouped cross-validation folds (the paper: 5).
    mapper_seeds : int
        Seeds of every mapper per fold (>= 1): a fold's mappers train ``mapper_seeds`` times
        (run seed ``s`` is fold ``s mod folds``, ``eval.folds``); the tables average them within
        the fold, so their spread and paired intervals stay over folds, with less mapper noise.
    epochs, batch_size, lr, weight_decay : int, int, float, float
        Mapper training (the paper: 100, 128, 1e-3, 1e-5).
    m0, alpha, lam : float
        HCL (the paper: 0.5, 0.1, 1e-3).
    ks : tuple of int
        MAP@k cut-offs (the paper: 1, 5, 10, 20).
    denominator : str
        AP@k normaliser (:func:`hierviz.metrics.map_at_k`).
    storages : tuple of str
        How the reference embeddings are stored (:data:`hierviz.retrieval.STORAGES`).
    cosine_control : bool
        Also train the same mapper onto the unit sphere with HCL on the Euclidean (chordal,
        i.e. cosine) distance at d = 32 and rank by cosine distance: it separates
        "hyperbolic" from "supervised metric learning on the reference labels".
    float16_base : bool
        Round the base features through float16 (§2.1).
    nca_fit_rows : int
        NCA is fitted on at most this many (stratified) training rows: its cost grows
        with the square of the rows.
    limit : int or None
        Use a stratified subset of this many rows (quick runs).
    seed : int
    device : str
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    threads : int or None
        ``torch.set_num_threads`` during the run (restored after). The mapper's batches are
        tiny: one thread was 13× faster than two on the 2-core test machine under load.
    """

    reducers: tuple[str, ...] = ("pca", "nca")
    n_grid: tuple[int, ...] = (10, 20, 40, 80)
    dim_out: tuple[Any, ...] = (32,)
    folds: int = 5
    mapper_seeds: int = 1
    epochs: int = 100
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-5
    m0: float = 0.5
    alpha: float = 0.1
    lam: float = 1e-3
    ks: tuple[int, ...] = (1, 5, 10, 20)
    denominator: str = "min_k_r"
    storages: tuple[str, ...] = ("fp32", "fp16")
    cosine_control: bool = True
    float16_base: bool = True
    nca_fit_rows: int = 2000
    limit: int | None = None
    seed: int = 0
    device: str = "auto"
    threads: int | None = 1


#: Named settings: ``smoke`` (tests, notebook), ``quick`` (README, minutes on 2 CPU cores),
#: ``paper`` (Paper 03's 100 epochs over a wider N grid and both output sizes), ``paper03-gpu``
#: (100 epochs, N in {20, 40, 80}, both output sizes, on CUDA).
RETRIEVAL_PRESETS: dict[str, RetrievalConfig] = {
    "smoke": RetrievalConfig(reducers=("pca",), n_grid=(8,), folds=2, epochs=2, limit=300, nca_fit_rows=300),
    "quick": RetrievalConfig(n_grid=(16, 32, 64), epochs=10),
    "paper": RetrievalConfig(n_grid=(5, 10, 20, 40, 60, 80, 100, 120), dim_out=(32, "in"), epochs=100),
    # Paper 03's 100 mapper epochs on one GPU over the N that Table 2 reports (estimated, not
    # measured: <= 10 min on one H100 for HAM10000's 10,015 feature rows)
    "paper03-gpu": RetrievalConfig(n_grid=(20, 40, 80), dim_out=(32, "in"), epochs=100, batch_size=128, device="cuda"),
}


def cosine_name(base: str, n: int) -> str:
    """The cosine control's variant name: ``Cosine-mapper(PCA(40), 32)``.

    Examples
    --------
    >>> cosine_name("pca", 40)
    'Cosine-mapper(PCA(40), 32)'
    """
    return f"Cosine-mapper({variant_name(base, n, None)}, 32)"


def variant_name(base: str, n: int, dim_out: int | None) -> str:
    """Paper 03's notation: ``Hyper-DINO(PCA(40), 32)`` or the base alone, ``PCA(40)``.

    Examples
    --------
    >>> variant_name("pca", 40, 32), variant_name("nca", 20, None)
    ('Hyper-DINO(PCA(40), 32)', 'NCA(20)')
    """
    b = "scaled" if base == "scaled" else f"{base.upper()}({n})"
    return b if dim_out is None else f"Hyper-DINO({b}, {dim_out})"


#: ``variant`` of the chance row (:func:`hierviz.metrics.baselines.random_ranking_scores`).
RANDOM_RANKING = "Random ranking (chance)"
