"""Paired comparisons over seeds: each method's difference to a named baseline, with a 95 % CI.

Every run of a comparison with the same seed shares its split, initialisation seed and batch
order, so method A and baseline B at seed s are a *pair*. The paired difference
:math:`d_s = A_s - B_s` removes the seed-to-seed variation the two share; its mean and the
Student-t interval

.. math:: \\bar d \\pm t_{0.975,\\,n-1}\\, s_d / \\sqrt{n}

(:math:`s_d` the sample standard deviation, ddof = 1) is the paired t-test's confidence
interval (scipy ``ttest_rel``): an interval that excludes 0 is a difference at the 5 % level.
With fewer than 3 seeds the interval is not shown (at n = 2 it spans ±12.7 s_d).

``hierviz compare`` writes this table under the main one in ``results.md`` when every method
has at least 3 seeds; ``--set report.baseline=supcon`` names the baseline (default: SupCon
when it was run, else the first method).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

try:
    from scipy.stats import nct as _noncentral_t
    from scipy.stats import t as _student_t
except ImportError:  # pragma: no cover - scipy comes with scikit-learn
    _student_t = _noncentral_t = None
from hierviz.report.tables import _ordered, geometry_label, method_label, metric_label

__all__ = [
    "t_quantile",
    "paired_ci",
    "paired_power",
    "seeds_needed",
    "paired_differences",
    "paired_markdown",
    "default_baseline",
    "MIN_SEEDS",
]

#: Fewest common seeds for which the paired table is shown.
MIN_SEEDS = 3

# t_{0.975, df} for df = 1 .. 30 (used when scipy is missing; scipy ships with scikit-learn)
_T975 = (
    12.7062047, 4.30265273, 3.18244631, 2.77644511, 2.57058184, 2.44691185, 2.36462425, 2.30600414,
    2.26215716, 2.22813885, 2.20098516, 2.17881283, 2.16036866, 2.14478669, 2.13144955, 2.11990530,
    2.10981558, 2.10092204, 2.09302405, 2.08596345, 2.07961384, 2.07387307, 2.06865761, 2.06389856,
    2.05953855, 2.05552944, 2.05183052, 2.04840714, 2.04522964, 2.04227246,
)  # fmt: skip


def t_quantile(df: int, confidence: float = 0.95) -> float:
    """Two-sided Student-t quantile :math:`t_{(1+\\text{confidence})/2,\\,df}`.

    scipy's ``scipy.stats.t.ppf`` when scipy is importable; else, for ``confidence=0.95``,
    a table for df ≤ 30 and the normal quantile 1.95996 beyond.

    Examples
    --------
    >>> round(t_quantile(4), 4)
    2.7764
    """
    if isinstance(df, bool) or not isinstance(df, (int, np.integer)) or df < 1:
        raise ValueError(f"df must be a positive integer (seeds - 1), got {df!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if _student_t is None:  # pragma: no cover - scipy comes with scikit-learn
        if confidence != 0.95:
            raise ValueError("confidence other than 0.95 needs scipy")
        return _T975[df - 1] if df <= len(_T975) else 1.959963984540054
    return float(_student_t.ppf(0.5 + confidence / 2.0, df))


def paired_ci(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float, int]:
    """Mean paired difference ``a - b`` and its Student-t confidence interval.

    Parameters
    ----------
    a, b : sequence of float, same length n ≥ 2
        The two methods' values, paired by position (seed).
    confidence : float, default 0.95

    Returns
    -------
    (mean, low, high, n)
        ``low = high = mean`` when every difference is equal.

    Raises
    ------
    ValueError
        Different lengths, fewer than two pairs, or non-finite values.

    Examples
    --------
    Differences 1, 2, 3: mean 2, s_d = 1, half-width t_{0.975,2} / sqrt(3) = 2.4841:

    >>> [round(v, 4) for v in paired_ci([2, 4, 6], [1, 2, 3])[:3]]
    [2.0, -0.4841, 4.4841]
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-D and of the same length, got shapes {x.shape} and {y.shape}")
    if x.size < 2:
        raise ValueError(f"a paired interval needs at least 2 pairs (seeds), got {x.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("a and b must be finite")
    d = x - y
    n = int(d.size)
    mean = float(d.mean())
    half = t_quantile(n - 1, confidence) * float(d.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half, n


def _check_power_args(sigma_delta: float, effect: float, alpha: float) -> tuple[float, float]:
    sd, eff = float(sigma_delta), float(effect)
    if not (math.isfinite(sd) and sd > 0):
        raise ValueError(
            f"sigma_delta must be a positive finite number (the SD of the paired differences), got {sigma_delta!r}"
        )
    if not math.isfinite(eff) or eff == 0:
        raise ValueError(f"effect must be a non-zero finite gap (same unit as sigma_delta), got {effect!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be in (0, 1), e.g. 0.05, got {alpha!r}")
    return sd, abs(eff)


def paired_power(n: int, sigma_delta: float, effect: float, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test with ``n`` seeds to detect a true mean gap ``effect``.

    With paired differences :math:`d_s \\sim N(\\delta, \\sigma_\\Delta^2)` the statistic
    :math:`T = \\bar d / (s_d/\\sqrt n)` follows a noncentral t with :math:`n-1` degrees of
    freedom and noncentrality :math:`\\delta\\sqrt n/\\sigma_\\Delta`; the power is
    :math:`P(|T| > t_{1-\\alpha/2,\\,n-1})` (Cohen 1988, ch. 2; statsmodels ``TTestPower``).

    Parameters
    ----------
    n : int, ≥ 2
        Number of seeds (pairs).
    sigma_delta : float, > 0
        Standard deviation of the per-seed difference method − baseline (ddof = 1 over seeds),
        in the metric's unit (e.g. 0.015 HF1, or 5.9 micro-F1 points).
    effect : float, non-zero
        The true gap to detect, same unit; its sign does not matter.
    alpha : float in (0, 1), default 0.05
        Two-sided level.

    Returns
    -------
    float in (alpha/2, 1)

    Raises
    ------
    ValueError
        ``n < 2``, ``sigma_delta ≤ 0``, ``effect == 0`` or ``alpha`` outside (0, 1).

    Examples
    --------
    Cohen's d = effect / sigma_delta = 1 with 10 seeds:

    >>> round(paired_power(10, sigma_delta=1.0, effect=1.0), 4)
    0.8031
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer number of seeds ≥ 2, got {n!r}")
    sd, eff = _check_power_args(sigma_delta, effect, alpha)
    if _student_t is None:  # pragma: no cover - scipy comes with scikit-learn
        raise ImportError("paired_power needs scipy (pip install scipy)")
    df = int(n) - 1
    crit = float(_student_t.ppf(1.0 - alpha / 2.0, df))
    nc = eff * math.sqrt(n) / sd
    return float(_noncentral_t.sf(crit, df, nc) + _noncentral_t.cdf(-crit, df, nc))


def seeds_needed(effect: float, sigma: float, alpha: float = 0.05, power: float = 0.8, n_max: int = 100_000) -> int:
    """Pairs (seeds or folds) a paired two-sided t-test needs to detect a mean difference ``effect``.

    The normal approximation

    .. math:: n_z = \\left(\\frac{(z_{1-\\alpha/2} + z_{\\text{power}})\\,\\sigma_\\Delta}{\\delta}\\right)^2

    is refined with the t distribution: the smallest integer n ≥ 2 with
    :math:`n \\ge ((t_{1-\\alpha/2,\\,n-1} + t_{\\text{power},\\,n-1})\\,\\sigma_\\Delta/\\delta)^2`
    (the usual iteration for a paired design; at δ = σ_Δ it gives 10, where the exact noncentral-t
    power of the paired t-test is 0.80). Cohen (1988), *Statistical Power Analysis*, §2.4;
    the pages of ``docs/results`` state this n for each paper's reported effect.

    Parameters
    ----------
    effect : float
        δ, the paired mean difference to detect (e.g. the paper's reported gap), any nonzero
        value; its sign is ignored. Same unit as ``sigma``.
    sigma : float
        σ_Δ ≥ 0, the sample standard deviation (ddof = 1) of the paired differences measured here.
    alpha : float, default 0.05
        Two-sided significance level, in (0, 1).
    power : float, default 0.8
        Probability of an interval that excludes 0 when the true difference is ``effect``, in (0.5, 1).
    n_max : int, default 100000
        Upper bound of the search; a larger need returns ``n_max``.

    Returns
    -------
    int
        n ≥ 2 (2 when σ_Δ = 0).

    Raises
    ------
    ValueError
        ``effect`` zero or non-finite, ``sigma`` negative or non-finite, ``alpha`` or ``power``
        out of range.

    Examples
    --------
    δ = σ_Δ: the normal formula gives 7.85, the t refinement 10:

    >>> seeds_needed(1.0, 1.0)
    10
    >>> seeds_needed(0.059, 0.015)      # paper 01's HF1 gap against HWC − SupCon's σ_Δ on the H200
    3
    """
    if not (math.isfinite(effect) and effect != 0):
        raise ValueError(f"effect must be a finite nonzero difference (the paper's gap), got {effect!r}")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a finite standard deviation >= 0 of the paired differences, got {sigma!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), e.g. 0.05, got {alpha!r}")
    if not 0.5 < power < 1.0:
        raise ValueError(f"power must be in (0.5, 1), e.g. 0.8, got {power!r}")
    ratio = sigma / abs(effect)
    if ratio == 0:
        return 2
    z = NormalDist().inv_cdf
    n = max(2, math.ceil(((z(1 - alpha / 2) + z(power)) * ratio) ** 2))
    while n < n_max:
        need = ((t_quantile(n - 1, 1 - alpha) + t_quantile(n - 1, 2 * power - 1)) * ratio) ** 2
        if n >= need:
            return n
        n += 1
    return n_max


def default_baseline(methods: Sequence[str]) -> str | None:
    """SupCon when it was run, else the first method (None without methods).

    Examples
    --------
    >>> default_baseline(["hwc", "supcon"]), default_baseline(["hwc", "lam"])
    ('supcon', 'hwc')
    """
    methods = list(methods)
    if not methods:
        return None
    return "supcon" if "supcon" in methods else methods[0]


def paired_differences(
    rows: Sequence[Mapping[str, Any]], baseline: str, metrics: Sequence[str], confidence: float = 0.95
) -> dict[tuple[str, str], dict[str, tuple[float, float, float, int]]]:
    """Per (method, geometry): :func:`paired_ci` of each metric against ``baseline`` in the same geometry.

    Runs are paired by ``seed``; seeds that only one of the two has are left out. Rows with a
    ``fold`` column (runs of a protocol that splits per seed under ``eval.folds``, where several
    seeds share a fold) are paired by fold instead: the seeds of a fold are averaged first, so the
    interval is over the folds, the unit that shares the test queries. A pair with fewer than
    :data:`MIN_SEEDS` common seeds (folds) is left out.

    Parameters
    ----------
    rows : sequence of dict
        ``results.csv`` rows (``method``, ``geometry``, ``seed``, optionally ``fold``, and the metrics).
    baseline : str
        A method name present in ``rows``.
    metrics : sequence of str
    confidence : float, default 0.95

    Returns
    -------
    dict
        ``{(method, geometry): {metric: (mean, low, high, n)}}``, first-seen order,
        the baseline itself excluded.

    Raises
    ------
    ValueError
        ``baseline`` not among the rows' methods (the message lists them).
    """
    methods = list(dict.fromkeys(str(r["method"]) for r in rows))
    if baseline not in methods:
        raise ValueError(f"report.baseline: {baseline!r} was not run here; choose one of {methods}")
    table: dict[tuple[str, str], dict[int, list[Mapping[str, Any]]]] = {}
    for r in rows:
        unit = int(r["seed"]) if r.get("fold") in (None, "") else int(r["fold"])
        table.setdefault((str(r["method"]), str(r["geometry"])), {}).setdefault(unit, []).append(r)

    def value(runs: list[Mapping[str, Any]], metric: str) -> float:
        return float(np.mean([float(r.get(metric, math.nan)) for r in runs]))

    out: dict[tuple[str, str], dict[str, tuple[float, float, float, int]]] = {}
    for (meth, geo), by_unit in table.items():
        base = table.get((baseline, geo))
        if meth == baseline or base is None:
            continue
        units = sorted(set(by_unit) & set(base))
        if len(units) < MIN_SEEDS:
            continue
        out[(meth, geo)] = {}
        for m in metrics:
            a = [value(by_unit[u], m) for u in units]
            b = [value(base[u], m) for u in units]
            if np.isfinite(a).all() and np.isfinite(b).all():
                out[(meth, geo)][m] = paired_ci(a, b, confidence)
    return out


def paired_markdown(
    rows: Sequence[Mapping[str, Any]],
    baseline: str | None,
    metrics: Sequence[str],
    methods: Sequence[str] | None = None,
    geometries: Sequence[str] | None = None,
) -> str:
    """The paired-difference table of ``results.md`` (empty string with fewer than 3 common seeds).

    Each cell is "Δ [low, high]" (mean paired difference to ``baseline`` and its 95 % CI,
    :func:`paired_ci`); a cell whose interval excludes 0 is marked with ``*``.

    Parameters
    ----------
    rows : sequence of dict
    baseline : str or None
        None: :func:`default_baseline` of the rows' methods.
    metrics : sequence of str
    methods, geometries : sequence of str, optional
        Row and column order.

    Returns
    -------
    str
    """
    found = list(dict.fromkeys(str(r["method"]) for r in rows))
    baseline = baseline or default_baseline(found)
    if baseline not in found:
        return (
            f"Paired differences: report.baseline={baseline!r} was not run in this comparison "
            f"(methods: {', '.join(found)}); no paired table.\n"
        )
    diffs = paired_differences(rows, baseline, metrics)
    if not diffs:
        return ""
    meths = _ordered((k[0] for k in diffs), methods)
    geos = _ordered((k[1] for k in diffs), geometries)
    cols = [(g, m) for g in geos for m in metrics]
    head = [f"Δ {metric_label(m, rows)} ({geometry_label(g, rows)})" for g, m in cols]
    lines = [
        f"**Paired difference to {method_label(baseline, rows)}** (same seed; mean and 95 % CI over seeds, paired t)",
        "",
        "| Method | " + " | ".join(head) + " |",
        "|---|" + "|".join("---:" for _ in head) + "|",
    ]
    by_fold = any(r.get("fold") not in (None, "") for r in rows)
    if by_fold:
        lines[0] = lines[0].replace("(same seed; mean and 95 % CI over seeds, paired t)",
                                    "(same fold, its seeds averaged; mean and 95 % CI over folds, paired t)")  # fmt: skip
    ns: set[int] = set()
    for meth in meths:
        cells = []
        for g, m in cols:
            v = diffs.get((meth, g), {}).get(m)
            if v is None:
                cells.append("–")
                continue
            mean, lo, hi, n = v
            ns.add(n)
            star = "*" if lo > 0 or hi < 0 else ""
            cells.append(f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]{star}")
        lines.append(f"| {method_label(meth, rows)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Δ = method − {method_label(baseline, rows)} at the same {'fold' if by_fold else 'seed'}, over "
        f"{'/'.join(map(str, sorted(ns)))} {'folds' if by_fold else 'seeds'}; "
        "[low, high]: 95 % Student-t interval of the mean difference (scipy ttest_rel's); * the interval "
        "excludes 0. For Violations a negative Δ is the better one.",
    ]
    return "\n".join(lines) + "\n"
