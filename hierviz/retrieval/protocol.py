"""The Hyper-DINO retrieval protocol: train the mapper with HCL, rank references, MAP@k over grouped folds.

Paper 03 (Hyper-DINO) §2.4 and §3: base features (standard scaling, then PCA(N) or NCA(N),
float16, §2.1) are mapped into the Poincaré ball by the mapper (:class:`MapperModel`: the
paper's MLP, then :class:`~hierviz.models.HyperbolicHead`'s data-initialised scale and smooth
bound instead of the hard cap, issue 24) trained with :class:`~hierviz.losses.HCLLoss`
(§2.2–2.3; Adam, lr 1e-3, weight decay 1e-5, batch 128, §3.2) by :func:`train_mapper`, a thin
call of the one loop :func:`hierviz.training.fit`. Queries come from the held-out fold, references from the training folds,
ranked by Poincaré distance; MAP@k for k ∈ {1, 5, 10, 20} (§3.1), plus P@1 and R-precision.
The base features alone (PCA(N)/NCA(N), ranked by Euclidean distance) are the baseline.

:func:`run_retrieval` runs the whole grid over 5-fold cross-validation grouped by patient
/ lesion (scikit-learn ``StratifiedGroupKFold``) and writes ``results.csv`` (mean ± std
over folds per variant), ``folds.csv`` (every fold) and ``results.md`` (a table shaped like
the paper's Table 2). ``hierviz retrieval --features F.npz --preset quick --out DIR`` is
the same from the shell. Settings live in :mod:`.config`, training in :mod:`.train`, the
tables in :mod:`.tables`; ``hierviz compare --protocol retrieval`` runs the mapper of one
split as a method of the run core (:mod:`hierviz.evaluation.retrieval`).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.model_selection import StratifiedGroupKFold, train_test_split
from tqdm.auto import tqdm

from hierviz.evaluation.retrieval import retrieval_metrics
from hierviz.features.io import FeaturesData
from hierviz.features.reduce import reduce_features
from hierviz.metrics.baselines import random_ranking_scores
from hierviz.retrieval.config import RANDOM_RANKING, RETRIEVAL_PRESETS, RetrievalConfig, cosine_name, variant_name
from hierviz.retrieval.index import ReferenceIndex
from hierviz.retrieval.tables import summarise, table2_markdown, write_tables
from hierviz.retrieval.train import CosineMapper, MapperModel, train_mapper
from hierviz.training import resolve_device

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
    "MapperModel",
    "RANDOM_RANKING",
]


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
    device = resolve_device(cfg.device)
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
        result["paths"] = write_tables(Path(out), rows, summary, md, cfg, examples, data)
    return result


def _chance_row(fold: int, yq: np.ndarray, yg: np.ndarray, cfg: RetrievalConfig) -> dict[str, Any] | None:
    """The expected scores of a uniformly random ranking of the fold's references (None if undefined)."""
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
