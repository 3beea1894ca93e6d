"""``hierviz retrieval``: Paper 03 (Hyper-DINO)'s grid over grouped folds, as one ``compare`` plan.

Paper 03 (Hyper-DINO) §2.4 and §3: base features (standard scaling, then PCA(N) or NCA(N),
float16, §2.1) are mapped into the Poincaré ball by the mapper
(:class:`~hierviz.evaluation.retrieval.MapperModel`, trained with
:class:`~hierviz.losses.HCLLoss`, Adam, lr 1e-3, weight decay 1e-5, batch 128, §3.2). Queries
come from the held-out fold, references from the training folds, ranked by Poincaré distance;
MAP@k for k ∈ {1, 5, 10, 20} (§3.1), plus P@1 and R-precision. The base features alone
(ranked by Euclidean distance) are the baseline.

:func:`run_retrieval` is an alias of :func:`hierviz.experiments.compare`. It registers
one ``compare`` method per variant of the grid (:mod:`.grid`), and runs them on the features
file with ``seeds = folds`` and the ``retrieval-folds`` protocol (run seed ``s`` is grouped fold
``s``): the one loop (:func:`hierviz.training.fit`) trains the mappers, every fold of every variant
is a typed run record, and :mod:`.tables` writes Table 2 and the paired differences from those
records (``folds.csv``, ``table2.csv``, ``table2.md``) beside compare's own ``results.csv``,
``results.md`` and ``report.html``. ``hierviz retrieval --features F.npz --preset quick --out DIR``
is the same from the shell.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import fields, replace
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.evaluation.retrieval import grouped_folds, retrieval_metrics
from hierviz.experiments import apply_overrides, compare, resolve_config
from hierviz.experiments.config import ConfigError
from hierviz.experiments.records import load_records
from hierviz.features.io import FeaturesData, load_features, save_features
from hierviz.retrieval.config import RANDOM_RANKING, RETRIEVAL_PRESETS, RetrievalConfig, cosine_name, variant_name
from hierviz.retrieval.grid import GridOptions, _stratified_subset, grid_methods, register_grid, unregister_grid
from hierviz.retrieval.index.reference import _make_folder
from hierviz.retrieval.tables import fold_rows, paired_markdown, summarise, table2_markdown, write_tables
from hierviz.retrieval.train import CosineMapper, MapperModel, train_mapper

__all__ = [
    "RETRIEVAL_PRESETS",
    "RetrievalConfig",
    "retrieval_metrics",
    "train_mapper",
    "grouped_folds",
    "run_retrieval",
    "rebuild_tables",
    "retrieval_plan",
    "summarise",
    "table2_markdown",
    "variant_name",
    "cosine_name",
    "CosineMapper",
    "MapperModel",
    "RANDOM_RANKING",
]


def run_retrieval(
    data: FeaturesData,
    config: RetrievalConfig | str = "quick",
    *,
    out: str | PathLike | None = None,
    tree: Any = None,
    progress: bool = True,
    verbose: bool = True,
    overrides: Sequence[str] = (),
    resume: bool = False,
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
        Folder of the ``compare`` run (``runs/``, ``results.csv``, ``results.md``,
        ``report.html``, the ``features.npz`` it read) and of Table 2: ``folds.csv`` (every fold),
        ``table2.csv`` (mean ± std over folds per variant and storage), ``table2.md``,
        ``retrieval.json`` (the settings). None: a temporary folder, removed after.
    tree : None
        Must stay None (0.2's tree NDCG@20 is no longer computed).
    progress, verbose : bool
        ``tqdm.auto`` bars; compare's line per run (variant × fold) and tables.
    overrides : sequence of str, default ()
        ``KEY=VALUE`` settings of the ``compare`` config the grid runs (:func:`retrieval_plan`),
        applied last, as ``hierviz compare --set`` (e.g. ``train.batch_size=64``,
        ``eval.index=faiss-flat``).
    resume : bool, default False
        Reuse the finished runs in ``out`` (``compare``'s ``--resume``); a run made with other
        settings is refused.

    Returns
    -------
    dict
        ``"rows"`` (per-fold dicts), ``"summary"`` (per-variant mean ± std dicts),
        ``"markdown"`` (the Table-2-shaped table), ``"history"`` (loss curves by variant)
        and ``"paths"``.

    Raises
    ------
    ValueError
        Unknown preset, more folds than groups, too few rows, or a setting ``compare``
        refuses. (An N beyond the feature dimension is cut to it.)
    """

    if isinstance(config, str):
        if config not in RETRIEVAL_PRESETS:
            raise ValueError(
                f"--preset {config!r}: unknown retrieval preset; choose one of {sorted(RETRIEVAL_PRESETS)}"
            )
        config = RETRIEVAL_PRESETS[config]
    return _run_retrieval(data, replace(config), out, tree, progress, verbose, tuple(overrides), resume)


def limit_error(labels: Any, cfg: RetrievalConfig, name: str = "limit") -> str | None:
    """The one-line message when ``cfg.limit`` keeps too few rows for ``cfg``'s folds and ks, else None.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
        The features file's labels (their classes count towards the minimum).
    cfg : RetrievalConfig
    name : str, default "limit"
        How the message names the setting (the command line passes ``"--limit"``).

    Returns
    -------
    str or None

    Examples
    --------
    >>> from hierviz.retrieval import RETRIEVAL_PRESETS
    >>> from dataclasses import replace
    >>> cfg = replace(RETRIEVAL_PRESETS["smoke"], limit=1)
    >>> limit_error([0, 1, 2, 3, 4] * 20, cfg, "--limit").split(":")[0]
    '--limit 1 is too few rows for retrieval'
    """
    if cfg.limit is None:
        return None
    k_max = max(cfg.ks) if cfg.ks else 1
    n_classes = len(np.unique(np.asarray(labels)))
    need = max(n_classes, math.ceil(k_max * cfg.folds / (cfg.folds - 1)), cfg.folds)
    if int(cfg.limit) >= need:
        return None
    sep = " " if name.startswith("-") else "="
    return (
        f"{name}{sep}{cfg.limit} is too few rows for retrieval: {cfg.folds} folds with MAP@{k_max} need at least "
        f"{need} (every held-out query ranks >= {k_max} references; {n_classes} classes); raise {name} or lower "
        f"{'--folds' if name.startswith('-') else 'folds / ks'}"
    )


def _checked(data: FeaturesData, cfg: RetrievalConfig) -> FeaturesData:
    """The rows to run (``cfg.limit``: a stratified subset), or one error line when they are too few."""
    y = data.labels
    # too little data is one message with the minimum, not scikit-learn's / a k-range error
    k_max = max(cfg.ks) if cfg.ks else 1
    need = max(len(np.unique(y)), math.ceil(k_max * cfg.folds / (cfg.folds - 1)), cfg.folds)
    message = limit_error(y, cfg)
    if message is not None:
        raise ValueError(message)
    if cfg.limit is not None:
        keep = _stratified_subset(y, int(cfg.limit), cfg.seed)
        data = FeaturesData(
            data.features[keep], y[keep], data.classes, None if data.groups is None else np.asarray(data.groups)[keep],
            None, source=data.source,
        )  # fmt: skip
    folds = grouped_folds(data.labels, data.groups, cfg.folds, cfg.seed)
    small = min(len(data.labels) - len(f) for f in folds)
    if small < k_max:
        raise ValueError(
            f"{len(data.labels)} rows are too few for retrieval: a fold keeps only {small} references but MAP@{k_max} "
            f"ranks {k_max}; need at least {need} rows ({cfg.folds} folds), or lower folds / ks"
        )
    return data


def retrieval_plan(cfg: RetrievalConfig, features: str | PathLike, out: str | PathLike, methods: list[str]) -> Any:
    """The ``compare`` config of a grid: its methods on the features file, one run seed per grouped fold.

    Parameters
    ----------
    cfg : RetrievalConfig
    features : str or PathLike
        The features ``.npz`` (``data.path``).
    out : str or PathLike
    methods : list of str
        The grid's registered methods (:func:`hierviz.retrieval.grid.register_grid`).

    Returns
    -------
    hierviz.experiments.ExperimentConfig
        Geometry ``poincare`` (c = 1), ``seeds = cfg.folds × cfg.mapper_seeds`` (with
        ``eval.folds = cfg.folds`` when there are several mapper seeds), the mapper's training
        (Adam and the constant rate come from the methods), HCL's m0, α, λ, no depth regularisers.
    """
    flat_tree = Path(out) / "flat-tree.json"
    repeats = int(cfg.mapper_seeds)
    if isinstance(cfg.mapper_seeds, bool) or repeats < 1:
        raise ValueError(f"mapper_seeds must be an integer >= 1, got {cfg.mapper_seeds!r}")
    return resolve_config(
        None,
        {
            "methods": methods,
            "geometries": ["poincare"],
            "seeds": int(cfg.folds) * repeats,
            **({"eval.folds": int(cfg.folds)} if repeats > 1 else {}),
            "out": str(out),
            "data.path": str(features),
            "data.tree": str(flat_tree),
            "data.split_seed": int(cfg.seed),
            "model.encoder": "mapper",
            "train.epochs": int(cfg.epochs),
            "train.batch_size": int(cfg.batch_size),
            "train.lr_backbone": float(cfg.lr),
            "train.lr_head": float(cfg.lr),
            "train.warmup_epochs": 0,
            "train.weight_decay": float(cfg.weight_decay),
            "train.ema_decay": 0.0,
            "train.amp": False,
            "train.device": cfg.device,
            "train.threads": cfg.threads,
            "eval.projection": "pca",
            "loss.hcl.m0": float(cfg.m0),
            "loss.hcl.alpha": float(cfg.alpha),
            "loss.hcl.lambda": float(cfg.lam),
            "loss.cone_weight": 0.0,
            "loss.center_weight": 0.0,
        },
    )


def _write_flat_tree(path: Path, classes: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"root": list(classes)}), encoding="utf-8")


def _table2(records: Sequence[dict[str, Any]], cfg: RetrievalConfig) -> tuple[list[dict], list[dict], str]:
    """Table 2 of a grid's run records: the per-fold rows, their summary and the Markdown (paired rows included)."""
    folds = int(cfg.folds) if cfg.mapper_seeds > 1 else None
    rows = fold_rows(records, ks=cfg.ks, denominator=cfg.denominator, float16_base=cfg.float16_base, folds=folds)
    summary = summarise(rows, cfg.ks)
    md = table2_markdown(summary, cfg.ks)
    paired = [paired_markdown(rows, against=a) for a in ("base", "cosine")]
    return rows, summary, md + "".join("\n" + p for p in paired if p)


def _run_retrieval(data, cfg, out, tree, progress, verbose, overrides=(), resume=False):
    if tree is not None:
        raise ValueError("tree: hierviz retrieval no longer adds tree NDCG@20 (since 0.3); leave tree unset")
    data = _checked(data, cfg)
    with tempfile.TemporaryDirectory() as tmp:
        folder = _make_folder(tmp if out is None else out, "--out", "choose a folder you can write to")
        features = save_features(folder / "features.npz", FeaturesData(
            data.features.astype(np.float32), data.labels, data.classes, data.groups, None, source=data.source
        ))  # fmt: skip
        _write_flat_tree(folder / "flat-tree.json", list(data.classes))
        options = GridOptions(
            float16_base=cfg.float16_base, nca_fit_rows=cfg.nca_fit_rows, seed=cfg.seed, ks=tuple(cfg.ks),
            denominator=cfg.denominator, storages=tuple(cfg.storages),
        )  # fmt: skip
        variants = grid_methods(cfg.reducers, cfg.n_grid, cfg.dim_out, cosine=cfg.cosine_control, dim=data.dim)
        names = register_grid(variants, options)
        try:
            plan = apply_overrides(retrieval_plan(cfg, features, folder, names), list(overrides))
            result = compare(plan, resume=resume, progress=progress, verbose=verbose)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        finally:
            unregister_grid(names)
        rows, summary, md = _table2(result.records, cfg)
        history = {
            r["method_display"]: list((r.get("history") or {}).get("loss", []))
            for r in result.records
            if int(r["seed"]) == 0 and (r.get("history") or {}).get("loss")
        }
        res: dict[str, Any] = {"rows": rows, "summary": summary, "markdown": md, "history": history, "paths": {}}
        if out is not None:
            res["paths"] = {**write_tables(folder, rows, summary, md, cfg, data), **result.paths}
        return res


def rebuild_tables(out: str | PathLike) -> dict[str, Path]:
    """Rewrite Table 2 (``folds.csv``, ``table2.csv``, ``table2.md``) of a ``hierviz retrieval`` folder.

    What ``hierviz report --out OUT`` does for a retrieval folder, beside ``compare``'s own tables:
    the rows are read back from the runs' records (``runs/*/result.json``), the grid's settings
    from ``retrieval.json`` and the features' source and shape from the ``features.npz`` the
    grid ran on, in the run order of its ``compare.json``, so the rebuilt tables equal the ones the
    run wrote.

    Parameters
    ----------
    out : str or PathLike
        The folder of a finished ``hierviz retrieval`` (or :func:`run_retrieval` with ``out``).

    Returns
    -------
    dict of str to Path
        The paths written (``folds``, ``table2``, ``table2_markdown``, ``config``).

    Raises
    ------
    FileNotFoundError
        No ``retrieval.json`` or ``features.npz`` in ``out`` (not a retrieval folder).
    """
    folder = Path(out)
    for name in ("retrieval.json", "features.npz"):
        if not (folder / name).is_file():
            raise FileNotFoundError(
                f"--out {folder}: no {name}; 'hierviz report' rebuilds Table 2 only in a 'hierviz retrieval' folder"
            )
    saved = json.loads((folder / "retrieval.json").read_text(encoding="utf-8"))
    known = {f.name for f in fields(RetrievalConfig)}
    cfg = RetrievalConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in known})
    data = load_features(folder / "features.npz")
    records = load_records(folder)
    plan = folder / "compare.json"  # the runs in the order the grid ran them, the order of the tables
    if plan.is_file():
        order = {name: i for i, name in enumerate(json.loads(plan.read_text(encoding="utf-8")).get("runs", []))}
        records.sort(key=lambda r: order.get(r.get("name"), len(order)))
    return write_tables(folder, *_table2(records, cfg), cfg, data)
