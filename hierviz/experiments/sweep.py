"""``sweep``: one comparison per variant × grid point, gathered into one table of rows.

Paper 01 Fig. 2 sweeps τ for SupCon, a constant ω̄, the outside-softmax baseline and HWC;
that is ``sweep(base, variants={...}, grid={"loss.tau": [...]})``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hierviz.experiments.compare import CompareResult, compare
from hierviz.experiments.config import ExperimentConfig, apply_overrides, validate

__all__ = ["sweep"]


def sweep(
    config: ExperimentConfig,
    grid: Mapping[str, Sequence[Any]],
    variants: Mapping[str, Sequence[str] | Mapping[str, Any]] | None = None,
    **compare_kwargs: Any,
) -> tuple[list[dict], dict[tuple, CompareResult]]:
    """Run :func:`compare` for every variant × combination of ``grid`` values.

    Parameters
    ----------
    config : ExperimentConfig
        The base config; each run's folder is ``<config.out>/<variant>/<key>=<value>…``.
    grid : mapping of config key to values
        E.g. ``{"loss.tau": [0.05, 0.1, 0.2]}``.
    variants : mapping of label to overrides, optional
        E.g. ``{"SupCon": ["methods=supcon"], "constant ω̄": ["methods=hwc", "loss.omega=constant"]}``;
        default one variant, ``""``, with no overrides.
    **compare_kwargs
        Passed to :func:`compare` (``progress``, ``verbose``, ``resume`` …).

    Returns
    -------
    rows : list of dict
        One per run: ``variant``, the grid keys, ``method``, ``geometry``, ``seed`` and every metric.
    results : dict
        ``(variant, *grid values) -> CompareResult``.

    Raises
    ------
    ConfigError
        A bad key or value in ``grid`` or ``variants``.
    """
    variants = dict(variants or {"": []})
    keys = list(grid)
    rows: list[dict] = []
    results: dict[tuple, CompareResult] = {}
    for label, overrides in variants.items():
        for values in itertools.product(*(grid[k] for k in keys)):
            cfg = apply_overrides(config.copy(), overrides)
            apply_overrides(cfg, dict(zip(keys, values)))
            sub = "-".join(f"{k.split('.')[-1]}={v}" for k, v in zip(keys, values)) or "run"
            safe = "".join(ch if ch.isalnum() or ch in "-_.=" else "_" for ch in (label or "base"))
            cfg.out = str(Path(config.out) / safe / sub)
            res = compare(validate(cfg), **compare_kwargs)
            results[(label, *values)] = res
            for r in res.rows:
                rows.append({"variant": label, **dict(zip(keys, values)), **r})
    return rows, results
