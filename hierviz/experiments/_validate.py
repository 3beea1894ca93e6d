"""The checks of :func:`validate`: names against the registries, then the ranges of every value, section by section.

Each ``_check_*`` function raises a :class:`~hierviz.experiments.config.ConfigError` naming the
key, the value and what is valid. Re-exported by :mod:`hierviz.experiments.config` (the public
import path of :func:`validate` and :data:`MAX_IMAGE_SIZE`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz._registry import nearest
from hierviz.evaluation import PROTOCOLS
from hierviz.evaluation.retrieval import RETRIEVAL_INDEXES
from hierviz.experiments.parsing import ConfigError
from hierviz.experiments.run_names import check_run_names
from hierviz.geometry import GEOMETRIES
from hierviz.geometry._checks import C_MAX, C_MIN
from hierviz.methods import METHODS
from hierviz.metrics.projection import PROJECTIONS
from hierviz.models import ENCODERS

if TYPE_CHECKING:
    from hierviz.experiments.config import ExperimentConfig

__all__ = ["MAX_IMAGE_SIZE", "validate"]

#: Largest image side accepted (checked before any worker starts: 20000 px crashed inside one).
MAX_IMAGE_SIZE = 4096


def _check(cond: bool, key: str, what: str, value: Any) -> None:
    if not cond:
        raise ConfigError(f"{key}: must be {what}, got {value!r}")


def _check_names(cfg: ExperimentConfig) -> None:
    """Names against the registries, run names, ``out``, and the choices of ``eval.embedding`` and ``data.split``.

    Registries: methods, geometries, ``report.baseline``, ``model.encoder``, ``eval.projection``. Repeated
    methods and geometries are dropped (the first kept).
    """
    for key, reg in (("methods", METHODS), ("geometries", GEOMETRIES)):
        names = getattr(cfg, key)
        _check(len(names) > 0, key, "a non-empty list", names)
        for n in names:
            if n not in reg:
                close = nearest(n, list(reg))
                hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
                raise ConfigError(f"{key}: unknown name {n!r}; {hint}valid names: {', '.join(list(reg))}")
        setattr(cfg, key, list(dict.fromkeys(names)))
    try:
        check_run_names(cfg.methods, cfg.geometries)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    _check(
        isinstance(cfg.out, (str, Path)) and str(cfg.out).strip() != "",
        "out",
        "a folder path (empty would write the report and runs/ into the current folder)",
        cfg.out,
    )
    _check(
        cfg.eval.embedding in (None, "features", "z"), "eval.embedding", "'features', 'z' or null", cfg.eval.embedding
    )
    _check(cfg.data.split in ("grouped", "official"), "data.split", "'grouped' or 'official'", cfg.data.split)
    b = cfg.report.baseline
    if b is not None and b not in METHODS:  # a method not run here only leaves the paired table out
        close = nearest(b, list(METHODS))
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise ConfigError(f"report.baseline: unknown method {b!r}; {hint}valid names: {', '.join(list(METHODS))}")
    if cfg.model.encoder not in ENCODERS:
        raise ConfigError(f"model.encoder: unknown encoder {cfg.model.encoder!r}; valid: {', '.join(ENCODERS)}")
    if cfg.eval.projection not in PROJECTIONS:
        raise ConfigError(
            f"eval.projection: unknown projection {cfg.eval.projection!r}; valid: {', '.join(PROJECTIONS)}"
        )


def _check_counts(cfg: ExperimentConfig) -> None:
    """The integers that must be >= 1 (or null where a default applies), across sections."""
    for key, v in (
        ("seeds", cfg.seeds),
        ("model.width", cfg.model.width),
        ("model.embed_dim", cfg.model.embed_dim),
        ("train.epochs", cfg.train.epochs),
        ("train.batch_size", cfg.train.batch_size),
        ("eval.batch_size", cfg.eval.batch_size),
        ("eval.mean_steps", cfg.eval.mean_steps),
    ):
        _check(v >= 1, key, "an integer >= 1", v)
    for key, v in (
        ("data.image_size", cfg.data.image_size),
        ("model.hidden_dim", cfg.model.hidden_dim),
        ("train.threads", cfg.train.threads),
        ("train.patience", cfg.train.patience),
    ):
        _check(v is None or v >= 1, key, "an integer >= 1 (or null)", v)


def _check_data(cfg: ExperimentConfig) -> None:
    """The data pipeline: image size, limit, workers, split seed, augmentation seeds and device, prefetching."""
    _check(
        cfg.data.image_size is None or cfg.data.image_size <= MAX_IMAGE_SIZE,
        "data.image_size",
        f"<= {MAX_IMAGE_SIZE} px (a batch of larger images does not fit in memory; the papers use 32-224)",
        cfg.data.image_size,
    )
    _check(cfg.data.limit is None or cfg.data.limit >= 2, "data.limit", "an integer >= 2 (or null)", cfg.data.limit)
    _check(cfg.data.workers >= 0, "data.workers", "an integer >= 0", cfg.data.workers)
    _check(cfg.data.split_seed >= 0, "data.split_seed", "an integer >= 0", cfg.data.split_seed)
    _check(
        cfg.data.augment_seeds in ("auto", "sample", "stream"),
        "data.augment_seeds",
        "'auto', 'sample' or 'stream'",
        cfg.data.augment_seeds,
    )
    _check(
        cfg.train.augment_on in ("auto", "cpu", "device"),
        "train.augment_on",
        "'auto', 'cpu' or 'device'",
        cfg.train.augment_on,
    )
    _check(
        cfg.data.prefetch_factor is None or cfg.data.prefetch_factor >= 1,
        "data.prefetch_factor",
        "an integer >= 1 (or null)",
        cfg.data.prefetch_factor,
    )


def _check_model(cfg: ExperimentConfig) -> None:
    """The model head: curvature and its range, clipping, scale, bound, centring and initial radius."""
    _check(
        C_MIN <= cfg.model.curvature <= C_MAX,
        "model.curvature",
        f"in [{C_MIN:g}, {C_MAX:g}] (c of curvature -c; outside it the maps are wrong)",
        cfg.model.curvature,
    )
    _check(cfg.model.clip_r is None or cfg.model.clip_r > 0, "model.clip_r", "> 0 (or null)", cfg.model.clip_r)
    _check(
        cfg.model.scale_init in ("auto", "batch")
        or (not isinstance(cfg.model.scale_init, str) and cfg.model.scale_init > 0),
        "model.scale_init",
        "a number > 0, 'auto' or 'batch'",
        cfg.model.scale_init,
    )
    _check(cfg.model.head_bound in ("tanh", "clip"), "model.head_bound", "'tanh' or 'clip'", cfg.model.head_bound)
    _check(
        cfg.model.head_center in (None, "batch"), "model.head_center", "null (off) or 'batch'", cfg.model.head_center
    )
    _check(cfg.model.init_radius > 0, "model.init_radius", "> 0", cfg.model.init_radius)
    cr = cfg.model.curvature_range
    _check(len(cr) == 2 and 0 < cr[0] <= cr[1], "model.curvature_range", "[lo, hi] with 0 < lo <= hi", cr)
    if cfg.model.clip_r is not None:
        top = 2.0 * cfg.model.clip_r  # the ball's geodesic bound 2ρ at c = 1 (the head checks its own geometry)
        _check(
            cfg.model.init_radius < top,
            "model.init_radius",
            f"< 2 * model.clip_r = {top:g} (the bound's geodesic radius)",
            cfg.model.init_radius,
        )


def _check_train(cfg: ExperimentConfig) -> None:
    """The optimiser: learning rates, warm-up, EMA decay and weight decay."""
    _check(cfg.train.lr_backbone > 0, "train.lr_backbone", "> 0", cfg.train.lr_backbone)
    _check(cfg.train.lr_head is None or cfg.train.lr_head > 0, "train.lr_head", "> 0 (or null)", cfg.train.lr_head)
    _check(
        cfg.train.lr_head is not None or math.isfinite(10.0 * cfg.train.lr_backbone),
        "train.lr_backbone",
        "<= 1.7e307 while train.lr_head is null (lr_head = 10 × lr_backbone would overflow)",
        cfg.train.lr_backbone,
    )
    _check(
        cfg.train.warmup_epochs is None or cfg.train.warmup_epochs >= 0,
        "train.warmup_epochs",
        ">= 0",
        cfg.train.warmup_epochs,
    )
    _check(0 <= cfg.train.ema_decay < 1, "train.ema_decay", "in [0, 1) (0 = off)", cfg.train.ema_decay)
    _check(cfg.train.weight_decay >= 0, "train.weight_decay", ">= 0", cfg.train.weight_decay)


def _check_eval(cfg: ExperimentConfig) -> None:
    """The evaluation: split, protocol (:data:`hierviz.evaluation.PROTOCOLS`), retrieval index and fold."""
    _check(cfg.eval.split in ("test", "val"), "eval.split", '"test" or "val"', cfg.eval.split)
    if cfg.eval.protocol is not None and cfg.eval.protocol not in PROTOCOLS:
        raise ConfigError(
            f"eval.protocol: unknown protocol {cfg.eval.protocol!r}; valid: {', '.join(PROTOCOLS)} (or null = "
            "each method's own)"
        )
    _check(
        cfg.eval.index in RETRIEVAL_INDEXES,
        "eval.index",
        " | ".join(repr(x) for x in RETRIEVAL_INDEXES),
        cfg.eval.index,
    )
    _check(0 <= cfg.eval.fold <= 4, "eval.fold", "an integer in [0, 4] (the unseen protocol's 5 folds)", cfg.eval.fold)
    folds = cfg.eval.folds
    _check(
        folds is None
        or (isinstance(folds, int) and not isinstance(folds, bool) and folds >= 2 and cfg.seeds % folds == 0),
        "eval.folds",
        f"None or an integer >= 2 that divides seeds ({cfg.seeds})",
        folds,
    )


def validate(cfg: ExperimentConfig) -> ExperimentConfig:
    """Check names against the registries and ranges of every value.

    The checks run in this order: names, counts, data, model, train, the dataset, eval, loss.

    Raises
    ------
    ConfigError
        Naming the key, the value and what is valid (the first failing check).
    """
    _check_names(cfg)
    _check_counts(cfg)
    _check_data(cfg)
    _check_model(cfg)
    _check_train(cfg)
    _check(
        cfg.data.dataset is not None or cfg.data.path is not None,
        "data.dataset",
        "a dataset name when data.path is not set",
        cfg.data.dataset,
    )
    _check_eval(cfg)
    tau = cfg.loss.get("tau")
    _check(tau is None or tau > 0, "loss.tau", "> 0", tau)
    return cfg
