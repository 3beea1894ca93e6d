"""The Hyper-DINO retrieval protocol: train the mapper with HCL, rank references, MAP@k over grouped folds.

Paper 03 (Hyper-DINO) §2.4 and §3: base features (standard scaling, then PCA(N) or NCA(N),
float16, §2.1) are mapped into the Poincaré ball by a :class:`~hierviz.models.HyperbolicMapper`
trained with :class:`~hierviz.losses.HCLLoss` (§2.2–2.3; Adam, lr 1e-3, weight decay 1e-5,
batch 128, §3.2). Queries come from the held-out fold, references from the training folds,
ranked by Poincaré distance; MAP@k for k ∈ {1, 5, 10, 20} (§3.1), plus P@1 and R-precision.
The base features alone (PCA(N)/NCA(N), ranked by Euclidean distance) are the baseline.

:func:`run_retrieval` runs the whole grid over 5-fold cross-validation grouped by patient
/ lesion (scikit-learn ``StratifiedGroupKFold``) and writes ``results.csv`` (mean ± std
over folds per variant), ``folds.csv`` (every fold) and ``results.md`` (a table shaped like
the paper's Table 2). ``hierviz retrieval --features F.npz --preset quick --out DIR`` is
the same from the shell.
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import asdict, dataclass, replace
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierviz.features.io import FeaturesData
from hierviz.features.reduce import reduce_features
from hierviz.metrics.retrieval import flat_retrieval_report
from hierviz.retrieval.index import ReferenceIndex

__all__ = [
    "RETRIEVAL_PRESETS",
    "RetrievalConfig",
    "retrieval_metrics",
    "train_mapper",
    "grouped_folds",
    "run_retrieval",
    "summarise",
    "table2_markdown",
    "variant_name",
    "cosine_name",
    "CosineMapper",
]


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
        i.e. cosine) distance at d = 32 and rank by cosine distance (issue 24): it separates
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
    # issue 24: Paper 03's 100 mapper epochs on one GPU over the N that Table 2 reports (estimated, not
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


def retrieval_metrics(
    D: Any, yq: Any, yg: Any, *, ks: tuple[int, ...] = (1, 5, 10, 20), denominator: str = "min_k_r", tree: Any = None
) -> dict[str, float]:
    """MAP@k for each k, P@1, R-precision (and tree NDCG@20 with a tree) of a distance matrix.

    Parameters
    ----------
    D : torch.Tensor or array-like, shape (Q, G)
        Query-reference distances.
    yq, yg : array-like of int, shapes (Q,) and (G,)
        Labels.
    ks : tuple of int
        MAP@k cut-offs (each at most G).
    denominator : str
        AP@k normaliser (:func:`hierviz.metrics.map_at_k`).
    tree : LabelTree, optional
        Adds ``"ndcg@20"`` (:func:`hierviz.metrics.ndcg`, tree-graded relevance).

    Returns
    -------
    dict
        ``{"map@1": ..., "map@5": ..., "p@1": ..., "r_precision": ...}``, values in [0, 1].

    Examples
    --------
    >>> D = [[0.0, 1.0, 2.0], [2.0, 0.0, 1.0]]
    >>> retrieval_metrics(D, [0, 1], [0, 1, 0], ks=(1, 2))
    {'map@1': 1.0, 'map@2': 0.75, 'p@1': 1.0, 'r_precision': 0.75}
    """
    out = flat_retrieval_report(D, yq, yg, ks, denominator=denominator)  # one sort for all of them
    if tree is not None:
        from hierviz.metrics.retrieval import ndcg

        out["ndcg@20"] = ndcg(D, yq, yg, tree, k=min(20, len(np.asarray(yg))))
    return {k: float(v) for k, v in out.items()}


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class CosineMapper(torch.nn.Module):
    r"""The cosine control of Paper 03's mapper: the same MLP (D → 256 → d), output on the unit sphere.

    ``forward(x) = W_2 ReLU(W_1 x + b_1) + b_2`` divided by its norm; ``geometry`` is
    :class:`~hierviz.geometry.Euclidean` (unit sphere), so :class:`~hierviz.losses.HCLLoss` and the
    ranking use the chordal distance :math:`\sqrt{2 - 2\cos}`. ``clip_fraction`` is 0 (no cap).

    Examples
    --------
    >>> m = CosineMapper(6, 4)
    >>> h = m(torch.randn(3, 6))
    >>> h.shape, bool(torch.allclose(h.norm(dim=-1), torch.ones(3)))
    (torch.Size([3, 4]), True)
    """

    def __init__(self, dim_in: int, dim_out: int = 32, hidden: int = 256) -> None:
        super().__init__()
        from hierviz.geometry import get_geometry

        self.geometry = get_geometry("euclidean")
        self.dim_in, self.dim_out = int(dim_in), int(dim_out)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(dim_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, dim_out)
        )
        self.clip_fraction = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(self.net(x), dim=-1)


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
    geometry: str = "poincare",
):
    """Train a :class:`~hierviz.models.HyperbolicMapper` with HCL (Paper 03 (Hyper-DINO) §3.2).

    ``geometry="euclidean"`` trains the cosine control instead: the same two-layer MLP, its
    output L2-normalised onto the unit sphere (:class:`CosineMapper`), HCL on the Euclidean
    geometry's chordal distance (a monotone function of the cosine distance).

    Parameters
    ----------
    x : numpy.ndarray, shape (n, D), float
        Base features of the training rows.
    y : numpy.ndarray, shape (n,), int
        Their labels.
    dim_out : int, default 32
    epochs, batch_size, lr, weight_decay : int, int, float, float
        Adam and the loop (the paper: 100, 128, 1e-3, 1e-5); the last partial batch is kept
        when it holds at least 2 rows.
    m0, alpha, lam : float
        :class:`~hierviz.losses.HCLLoss` hyperparameters.
    seed : int, default 0
        Initialisation and batch order.
    device : str or torch.device, default "cpu"
    progress : bool, default False
        A ``tqdm.auto`` bar over epochs.
    geometry : {"poincare", "euclidean"}, default "poincare"
        The ball (the paper) or the cosine control.

    Returns
    -------
    mapper : HyperbolicMapper or CosineMapper
        In eval mode, on ``device``.
    history : list of float
        Mean training loss per epoch (the paper's Fig. 2).

    Raises
    ------
    ValueError
        Fewer than 2 rows, or a non-finite loss (the message names the epoch).
    """
    from tqdm.auto import tqdm

    from hierviz.losses import HCLLoss
    from hierviz.models import HyperbolicMapper

    X = torch.as_tensor(np.asarray(x, dtype=np.float32))
    Y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    if len(X) < 2:
        raise ValueError(f"train_mapper needs at least 2 training rows, got {len(X)}")
    device = torch.device(device)
    torch.manual_seed(seed)
    if geometry not in ("poincare", "euclidean"):
        raise ValueError(f"geometry must be 'poincare' or 'euclidean' (the cosine control), got {geometry!r}")
    mapper = (HyperbolicMapper if geometry == "poincare" else CosineMapper)(X.shape[1], int(dim_out)).to(device)
    loss_fn = HCLLoss(mapper.geometry, m0=m0, alpha=alpha, lam=lam)
    opt = torch.optim.Adam(mapper.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    X, Y = X.to(device), Y.to(device)
    history: list[float] = []
    for epoch in tqdm(range(epochs), desc="mapper", disable=not progress, leave=False):
        perm = torch.randperm(len(X), generator=gen).to(device)
        total, seen = 0.0, 0
        for s in range(0, len(X), batch_size):
            idx = perm[s : s + batch_size]
            if len(idx) < 2:
                continue
            loss = loss_fn(mapper(X[idx]), Y[idx])
            if not torch.isfinite(loss):
                raise ValueError(
                    f"train_mapper: non-finite HCL loss at epoch {epoch + 1}; lower lr or check the features"
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            seen += len(idx)
        history.append(total / max(seen, 1))
    mapper.eval()
    return mapper, history


def grouped_folds(labels: np.ndarray, groups: np.ndarray | None, folds: int, seed: int = 0) -> list[np.ndarray]:
    """Test-row indices of each fold: stratified by label, grouped (no group in two folds).

    Parameters
    ----------
    labels : numpy.ndarray, shape (n,), int
    groups : numpy.ndarray, shape (n,), optional
        Group ids (HAM10000 lesions); ``None``: every row its own group.
    folds : int, >= 2
    seed : int, default 0

    Returns
    -------
    list of numpy.ndarray
        ``folds`` disjoint index arrays covering ``0 .. n-1``.

    Raises
    ------
    ValueError
        ``folds < 2`` or more folds than groups.

    Examples
    --------
    >>> import numpy as np
    >>> f = grouped_folds(np.array([0, 0, 1, 1, 0, 1]), np.array([1, 1, 2, 2, 3, 4]), 2)
    >>> sorted(np.concatenate(f).tolist()), {frozenset(np.array([1, 1, 2, 2, 3, 4])[i]) for i in f} != set()
    ([0, 1, 2, 3, 4, 5], True)
    """
    from sklearn.model_selection import StratifiedGroupKFold

    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, got {folds!r}")
    y = np.asarray(labels)
    g = np.arange(len(y)) if groups is None else np.unique(np.asarray(groups).astype(str), return_inverse=True)[1]
    if len(np.unique(g)) < folds:
        raise ValueError(f"folds={folds} exceeds the number of groups ({len(np.unique(g))}); use fewer folds")
    cv = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    return [test for _, test in cv.split(np.zeros(len(y)), y, g)]


def _stratified_subset(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    if n >= len(y):
        return np.arange(len(y))
    from sklearn.model_selection import train_test_split

    idx, _ = train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=seed)
    return np.sort(idx)


def _euclidean(q: np.ndarray, g: np.ndarray) -> torch.Tensor:
    return torch.cdist(torch.as_tensor(q, dtype=torch.float64), torch.as_tensor(g, dtype=torch.float64))


def run_retrieval(
    data: FeaturesData,
    config: RetrievalConfig | str = "quick",
    *,
    out: str | PathLike | None = None,
    tree: Any = None,
    progress: bool = True,
    verbose: bool = True,
) -> dict[str, Any]:
    """The grid of Paper 03 (Hyper-DINO) §3 over grouped folds; writes the tables when ``out`` is given.

    Parameters
    ----------
    data : FeaturesData
        Features, labels and (for grouped folds) groups; the ``split`` column is not used:
        every row is a query once, in its fold.
    config : RetrievalConfig or str, default "quick"
        A config or a preset name (:data:`RETRIEVAL_PRESETS`).
    out : str or PathLike, optional
        Folder for ``results.csv``, ``folds.csv``, ``results.md``, ``config.json`` and
        ``examples.npz`` (distances and neighbours of a few queries, for the gallery).
    tree : LabelTree, optional
        Adds NDCG@20 with tree-graded relevance.
    progress, verbose : bool
        ``tqdm.auto`` bars; one printed line per variant and fold.

    Returns
    -------
    dict
        ``"rows"`` (per-fold dicts), ``"summary"`` (per-variant mean ± std dicts),
        ``"markdown"`` (the Table-2-shaped table), ``"history"`` (loss curves by variant)
        and ``"paths"``.

    Raises
    ------
    ValueError
        Unknown preset, or more folds than groups. (An N beyond the feature dimension is
        cut to it.)
    """

    if isinstance(config, str):
        if config not in RETRIEVAL_PRESETS:
            raise ValueError(
                f"--preset {config!r}: unknown retrieval preset; choose one of {sorted(RETRIEVAL_PRESETS)}"
            )
        config = RETRIEVAL_PRESETS[config]
    cfg = replace(config)
    saved_threads = torch.get_num_threads()
    if cfg.threads is not None:
        torch.set_num_threads(int(cfg.threads))
    try:
        return _run_retrieval(data, cfg, out, tree, progress, verbose)
    finally:
        torch.set_num_threads(saved_threads)


def _run_retrieval(data, cfg, out, tree, progress, verbose):
    from tqdm.auto import tqdm

    device = _device(cfg.device)
    X, y = data.features.astype(np.float32), data.labels
    groups = data.groups
    # issue 27 #14: too little data is one message with the minimum, not scikit-learn's / a k-range error
    k_max = max(cfg.ks) if cfg.ks else 1
    n_classes = len(np.unique(y))
    need = max(n_classes, math.ceil(k_max * cfg.folds / (cfg.folds - 1)), cfg.folds)
    if cfg.limit is not None and int(cfg.limit) < need:
        raise ValueError(
            f"limit={cfg.limit} is too few rows for retrieval: {cfg.folds} folds with MAP@{k_max} need at least "
            f"{need} (every held-out query ranks >= {k_max} references; {n_classes} classes); raise limit or lower "
            "folds / ks"
        )
    if cfg.limit is not None:
        keep = _stratified_subset(y, int(cfg.limit), cfg.seed)
        X, y = X[keep], y[keep]
        groups = None if groups is None else np.asarray(groups)[keep]
    n_grid = sorted({min(int(n), X.shape[1]) for n in cfg.n_grid})
    folds = grouped_folds(y, groups, cfg.folds, cfg.seed)
    small = min(len(y) - len(f) for f in folds)
    if small < k_max:
        raise ValueError(
            f"{len(y)} rows are too few for retrieval: a fold keeps only {small} references but MAP@{k_max} ranks "
            f"{k_max}; need at least {need} rows ({cfg.folds} folds), or lower folds / ks"
        )
    rows: list[dict[str, Any]] = []
    histories: dict[str, list[float]] = {}
    examples: dict[str, np.ndarray] = {}
    say = print if verbose else (lambda *a, **k: None)
    plan = [(f, r, n) for f in range(len(folds)) for r in cfg.reducers for n in n_grid]
    for f, red, n in tqdm(plan, desc="retrieval", disable=not progress):
        test = folds[f]
        train = np.setdiff1d(np.arange(len(y)), test)
        if red == cfg.reducers[0] and n == n_grid[0]:  # issue 24: the chance line, once per fold
            chance = _chance_row(f, y[test], y[train], cfg)
            if chance is not None:
                rows.append(chance)
        t0 = time.perf_counter()
        if red == "nca":  # fit NCA on a stratified subset (its cost is quadratic in the rows)
            sub = train[_stratified_subset(y[train], cfg.nca_fit_rows, cfg.seed)]
            xs, xtr, xte = reduce_features(
                X[sub], y[sub], [X[train], X[test]], method=red, n_components=n, float16=cfg.float16_base, seed=cfg.seed
            )
        else:
            xtr, xte = reduce_features(
                X[train], y[train], [X[test]], method=red, n_components=n, float16=cfg.float16_base, seed=cfg.seed
            )
        base_bytes = xtr.shape[1] * (2 if cfg.float16_base else 4)
        D = _euclidean(xte, xtr)
        row = {
            "fold": f,
            "variant": variant_name(red, n, None),
            "base": red,
            "n": n,
            "dim_out": "",
            "storage": "fp16" if cfg.float16_base else "fp32",
            "bytes": base_bytes,
            "clip_fraction": "",
            "seconds": time.perf_counter() - t0,
        }
        row.update(retrieval_metrics(D, y[test], y[train], ks=cfg.ks, denominator=cfg.denominator, tree=tree))
        rows.append(row)
        for dim in cfg.dim_out:
            d_out = n if dim == "in" else int(dim)
            name = variant_name(red, n, d_out)
            t0 = time.perf_counter()
            mapper, hist = train_mapper(
                xtr,
                y[train],
                dim_out=d_out,
                epochs=cfg.epochs,
                batch_size=cfg.batch_size,
                lr=cfg.lr,
                weight_decay=cfg.weight_decay,
                m0=cfg.m0,
                alpha=cfg.alpha,
                lam=cfg.lam,
                seed=cfg.seed + f,
                device=device,
            )
            histories.setdefault(name, hist)
            with torch.no_grad():
                h_tr = mapper(torch.as_tensor(xtr, device=device))
                clip_tr = mapper.clip_fraction
                h_te = mapper(torch.as_tensor(xte, device=device))
            train_s = time.perf_counter() - t0
            for storage in cfg.storages:
                index = ReferenceIndex(h_tr, y[train], geometry=mapper.geometry, storage=storage, device=device)
                Dh = index.distances(h_te).cpu()
                row = {
                    "fold": f,
                    "variant": name,
                    "base": red,
                    "n": n,
                    "dim_out": d_out,
                    "storage": storage,
                    "bytes": index.bytes_per_item,
                    "clip_fraction": clip_tr,
                    "seconds": train_s,
                }
                row.update(retrieval_metrics(Dh, y[test], y[train], ks=cfg.ks, denominator=cfg.denominator, tree=tree))
                rows.append(row)
                if f == 0 and storage == cfg.storages[0] and not examples:
                    k = min(20, Dh.shape[1])
                    dq, iq = torch.topk(Dh[:8], k, dim=1, largest=False)
                    examples = {
                        "variant": np.asarray(name),
                        "query_rows": test[:8],
                        "query_labels": y[test][:8],
                        "neighbour_rows": train[iq.numpy()],
                        "neighbour_labels": y[train][iq.numpy()],
                        "neighbour_dist": dq.numpy(),
                    }
            say(
                f"fold {f + 1}/{len(folds)} {name}: MAP@20 {rows[-1].get('map@20', float('nan')):.4f} "
                f"(clip {clip_tr:.3f})",
                flush=True,
            )
        if cfg.cosine_control:  # issue 24: the same mapper, cosine loss and ranking, d = 32
            t0 = time.perf_counter()
            cos, _ = train_mapper(
                xtr, y[train], dim_out=32, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr,
                weight_decay=cfg.weight_decay, m0=cfg.m0, alpha=cfg.alpha, lam=cfg.lam, seed=cfg.seed + f,
                device=device, geometry="euclidean",
            )  # fmt: skip
            with torch.no_grad():
                c_tr, c_te = cos(torch.as_tensor(xtr, device=device)), cos(torch.as_tensor(xte, device=device))
                Dc = (1.0 - c_te @ c_tr.T).clamp_min(0.0).cpu()
            row = {
                "fold": f,
                "variant": cosine_name(red, n),
                "base": red,
                "n": n,
                "dim_out": 32,
                "storage": "cosine",
                "bytes": 32 * 4,
                "clip_fraction": "",
                "seconds": time.perf_counter() - t0,
            }
            row.update(retrieval_metrics(Dc, y[test], y[train], ks=cfg.ks, denominator=cfg.denominator, tree=tree))
            rows.append(row)
    summary = summarise(rows, cfg.ks)
    md = table2_markdown(summary, cfg.ks)
    result: dict[str, Any] = {"rows": rows, "summary": summary, "markdown": md, "history": histories, "paths": {}}
    if out is not None:
        result["paths"] = _write(Path(out), rows, summary, md, cfg, examples, data)
    return result


#: ``variant`` of the chance row (:func:`hierviz.metrics.baselines.random_ranking_scores`).
RANDOM_RANKING = "Random ranking (chance)"


def _chance_row(fold: int, yq: np.ndarray, yg: np.ndarray, cfg: RetrievalConfig) -> dict[str, Any] | None:
    """The expected scores of a uniformly random ranking of the fold's references (None if undefined)."""
    from hierviz.metrics.baselines import random_ranking_scores

    try:
        scores = random_ranking_scores(yq, yg, tuple(cfg.ks), denominator=cfg.denominator)
    except ValueError:  # the "hits" normaliser, or a query class without references
        return None
    row: dict[str, Any] = {
        "fold": fold,
        "variant": RANDOM_RANKING,
        "base": "chance",
        "n": "",
        "dim_out": "",
        "storage": "",
        "bytes": 0,
        "clip_fraction": "",
        "seconds": 0.0,
    }
    return {**row, **scores}


def summarise(rows: list[dict[str, Any]], ks: tuple[int, ...]) -> list[dict[str, Any]]:
    """Mean and standard deviation over folds of each (variant, storage).

    Parameters
    ----------
    rows : list of dict
        ``run_retrieval(...)["rows"]``: one dict per fold, variant and storage.
    ks : tuple of int
        The MAP@k cut-offs of the rows (kept for the signature; every metric column is summarised).

    Returns
    -------
    list of dict
        Keys ``variant``, ``base``, ``n``, ``dim_out``, ``storage``, ``bytes``, ``folds``
        and ``<metric>_mean`` / ``<metric>_std`` for every metric of the rows.
    """
    metrics = list(dict.fromkeys(k for r in rows for k in r if k.startswith(("map@", "p@", "r_precision", "ndcg"))))
    keyed: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        keyed.setdefault((r["variant"], r["storage"]), []).append(r)
    out = []
    for rs in keyed.values():
        s = {k: rs[0][k] for k in ("variant", "base", "n", "dim_out", "storage", "bytes")}
        s["folds"] = len(rs)
        for m in metrics:
            if any(m not in r for r in rs):  # the chance row has no tree NDCG
                continue
            v = np.array([r[m] for r in rs], dtype=float)
            s[f"{m}_mean"], s[f"{m}_std"] = float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0
        clips = [r["clip_fraction"] for r in rs if r["clip_fraction"] != ""]
        s["clip_fraction"] = float(np.mean(clips)) if clips else ""
        out.append(s)
    return out


def table2_markdown(summary: list[dict[str, Any]], ks: tuple[int, ...] = (1, 5, 10, 20), storage: str = "fp16") -> str:
    """A table shaped like Paper 03's Table 2: rows ``base × N``, for each k the base alone, ·→32 and ·→N.

    A last row, *Random ranking (chance)*, gives the expected MAP@k of a random ordering of
    the references (the ``chance`` rows of :func:`run_retrieval`) when the summary has one.

    MAP@k in percent, mean ± std over folds; the Hyper-DINO columns use ``storage``
    references (fp16 tangents by default: the 64-byte claim).

    Parameters
    ----------
    summary : list of dict
        :func:`summarise` output.
    ks : tuple of int, default (1, 5, 10, 20)
    storage : str, default "fp16"

    Returns
    -------
    str
        A Markdown table; ``–`` where a variant was not run.
    """

    def cell(s: dict[str, Any] | None, k: int) -> str:
        if s is None:
            return "–"
        return f"{100 * s[f'map@{k}_mean']:.2f} ± {100 * s[f'map@{k}_std']:.2f}"

    by: dict[tuple, dict[str, Any]] = {}
    chance = next((s for s in summary if s["base"] == "chance"), None)
    cos = {(s["base"], s["n"]): s for s in summary if s["storage"] == "cosine"}
    for s in summary:
        if s["base"] == "chance" or s["storage"] == "cosine":
            continue
        kind = "base" if s["dim_out"] == "" else ("in" if s["dim_out"] == s["n"] and s["dim_out"] != 32 else "32")
        if kind != "base" and s["storage"] != storage:
            continue
        by[(s["base"], s["n"], kind)] = s
    per = 4 if cos else 3
    extra = " | k={k}: cos·→32" if cos else ""
    head = (
        "| base | N | " + " | ".join(f"k={k}: base | k={k}: ·→32 | k={k}: ·→N" + extra.format(k=k) for k in ks) + " |"
    )
    sep = "|" + "---|" * (2 + per * len(ks))
    lines = [head, sep]
    for base, n in sorted({(b, n) for b, n, _ in by}, key=lambda t: (t[0], -t[1])):
        cells = []
        for k in ks:
            cells += [
                cell(by.get((base, n, "base")), k),
                cell(by.get((base, n, "32")), k),
                cell(by.get((base, n, "in")), k),
            ] + ([cell(cos.get((base, n)), k)] if cos else [])
        lines.append(f"| {base.upper()} | {n} | " + " | ".join(cells) + " |")
    if chance is not None:  # issue 24: what a random ranking of the references scores
        cells = []
        for k in ks:
            cells += [cell(chance, k)] + ["–"] * (per - 1)
        lines.append("| *Random ranking (chance)* | – | " + " | ".join(cells) + " |")
        lines += [
            "",
            "*Random ranking*: the expected MAP@k of a uniformly random ordering of each fold's references, "
            "computed from the class shares (hierviz.metrics.baselines.random_ranking_scores); ± over folds.",
        ]
    if cos:
        lines += [
            "",
            "*cos·→32*: the cosine control, the same mapper onto the unit sphere trained with HCL on the "
            "cosine (chordal) distance and ranked by cosine distance: supervised metric learning without the ball.",
        ]
    return "\n".join(lines) + "\n"


def _write(out: Path, rows, summary, md, cfg, examples, data) -> dict[str, Path]:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"--out {out}: cannot write there ({exc.strerror or exc}); choose a folder you can write to"
        ) from None
    paths = {
        "folds": out / "folds.csv",
        "results": out / "results.csv",
        "markdown": out / "results.md",
        "config": out / "config.json",
    }
    for path, table in ((paths["folds"], rows), (paths["results"], summary)):
        keys = list(dict.fromkeys(k for r in table for k in r))
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(table)
    paths["markdown"].write_text(
        f"MAP@k (%), mean ± std over {cfg.folds} grouped folds; features: {data.source} "
        f"({data.n} × {data.dim}); AP@k normaliser: {cfg.denominator}.\n\n" + md,
        encoding="utf-8",
    )
    cfg_d = asdict(cfg)
    paths["config"].write_text(json.dumps(cfg_d, indent=1, default=str), encoding="utf-8")
    if examples:
        paths["examples"] = out / "examples.npz"
        np.savez_compressed(paths["examples"], **examples)
    return paths
