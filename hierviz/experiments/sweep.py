"""``sweep``: one comparison per variant × grid point, gathered into one table of rows.

Paper 01 Fig. 2 sweeps τ for SupCon, a constant ω̄, the outside-softmax baseline and HWC;
that is ``sweep(base, variants={...}, grid={"loss.tau": [...]})``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hierviz.experiments.compare import CompareResult, compare
from hierviz.experiments.config import ExperimentConfig, apply_overrides, validate

__all__ = ["sweep", "sweep_curve", "best_grid_value"]


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
        E.g. ``{"SupCon": ["methods=supcon"], "constant ω̄": ["methods=hwc", "loss.hwc.omega=constant"]}``;
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


def sweep_curve(
    rows: Sequence[Mapping[str, Any]], variant: str, metric: str, key: str = "loss.tau"
) -> tuple[list[Any], list[float], list[float]]:
    """One variant's metric along one grid key: mean and spread over seeds, per grid value.

    Parameters
    ----------
    rows : sequence of dict
        The rows returned by :func:`sweep` (each has ``variant``, the grid keys, ``seed`` and the metrics).
    variant : str
        The variant label (a key of ``variants`` in :func:`sweep`).
    metric : str
        A metric column, e.g. ``"hf1"`` or ``"violations"``.
    key : str, default "loss.tau"
        The grid key along which the curve runs.

    Returns
    -------
    values : list
        The grid values of this variant, in the order the sweep ran them.
    mean : list of float
        Mean of ``metric`` over the rows (seeds) at each value.
    std : list of float
        Sample standard deviation (ddof = 1) at each value; 0.0 where there is one seed.

    Raises
    ------
    ValueError
        No row has this variant, or a row lacks ``key`` or ``metric``.

    Examples
    --------
    >>> rows = [{"variant": "HWC", "loss.tau": t, "seed": s, "hf1": h}
    ...         for t, s, h in [(0.1, 0, 0.5), (0.1, 1, 0.7), (0.2, 0, 0.4), (0.2, 1, 0.4)]]
    >>> values, mean, std = sweep_curve(rows, "HWC", "hf1")
    >>> values, [round(m, 3) for m in mean], [round(s, 3) for s in std]
    ([0.1, 0.2], [0.6, 0.4], [0.141, 0.0])
    """
    mine = [r for r in rows if r.get("variant") == variant]
    if not mine:
        known = sorted({str(r.get("variant")) for r in rows})
        raise ValueError(f"variant {variant!r} is not in the sweep rows; variants are {known}")
    groups: dict[Any, list[float]] = {}
    for r in mine:
        if key not in r or metric not in r:
            missing = key if key not in r else metric
            raise ValueError(f"rows: {missing!r} is missing in a row of variant {variant!r}")
        groups.setdefault(r[key], []).append(float(r[metric]))
    mean, std = [], []
    for vals in groups.values():
        m = sum(vals) / len(vals)
        mean.append(m)
        std.append(math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0)
    return list(groups), mean, std


def best_grid_value(
    rows: Sequence[Mapping[str, Any]], variant: str, metric: str, key: str = "loss.tau", *, higher: bool = True
) -> Any:
    """The grid value where a variant's mean metric is best (paper 01 Fig. 2's τ*: best SupCon HF1).

    Parameters
    ----------
    rows, variant, metric, key
        As in :func:`sweep_curve`.
    higher : bool, default True
        ``True`` when larger is better (HF1), ``False`` for violations.

    Returns
    -------
    Any
        The grid value; the first one in sweep order on a tie.

    Examples
    --------
    >>> rows = [{"variant": "SupCon", "loss.tau": t, "seed": 0, "hf1": h} for t, h in [(0.05, 0.5), (0.1, 0.6), (0.2, 0.6)]]
    >>> best_grid_value(rows, "SupCon", "hf1")
    0.1
    """
    values, mean, _ = sweep_curve(rows, variant, metric, key)
    pick = max if higher else min
    best = pick(mean)
    return values[mean.index(best)]
