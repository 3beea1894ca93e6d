"""Seeds a paired gap needs: :func:`hierviz.report.stats.seeds_needed` against the exact :func:`paired_power`.

Reference values are statsmodels' ``TTestPower().solve_power(effect_size=d, alpha=0.05,
power=0.8)`` (one-sample / paired t, two-sided), rounded up: d = 0.5 → 33.37, d = 0.8 → 14.30,
d = 1.0 → 9.94 (Cohen 1988, Table 2.4.1 gives the same to within a seed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hierviz.report.stats import paired_ci, paired_power, seeds_needed


@pytest.mark.parametrize(("d", "n"), [(0.5, 34), (0.8, 15), (1.0, 10), (2.0, 5)])
def test_seeds_needed_matches_statsmodels(d, n):
    assert seeds_needed(d, 1.0) == n
    # unit-free: only effect / sigma matters, and the sign of the gap does not
    assert seeds_needed(-0.015 * d, 0.015) == n


def test_power_brackets_the_answer():
    # seeds_needed's t-iteration lands on the exact noncentral-t answer at these gaps
    for d in (0.3, 0.5, 1.0, 1.5):
        n = seeds_needed(d, 1.0)
        assert paired_power(n, 1.0, d) >= 0.8
        if n > 2:
            assert paired_power(n - 1, 1.0, d) < 0.8


def test_power_hand_value_and_limits():
    # statsmodels TTestPower().power(effect_size=1, nobs=10, alpha=0.05) = 0.8031
    assert paired_power(10, 1.0, 1.0) == pytest.approx(0.80310, abs=1e-4)
    # a large n approaches the normal-theory power Φ(d√n − z_{0.975}) + Φ(−d√n − z_{0.975})
    from scipy.stats import norm

    d, n = 0.2, 400
    z = norm.ppf(0.975)
    normal = norm.cdf(d * math.sqrt(n) - z) + norm.cdf(-d * math.sqrt(n) - z)
    assert paired_power(n, 1.0, d) == pytest.approx(normal, abs=2e-3)
    assert seeds_needed(0.5, 1.0, power=0.9) > seeds_needed(0.5, 1.0) > seeds_needed(0.5, 1.0, alpha=0.1)


def test_power_is_the_coverage_of_paired_ci():
    """Simulation: the share of 10-seed paired intervals that exclude 0 is the power."""
    rng = np.random.default_rng(0)
    hits = 0
    trials = 4000
    for _ in range(trials):
        d = rng.normal(1.0, 1.0, size=10)
        _, lo, hi, _ = paired_ci(d, np.zeros(10))
        hits += lo > 0 or hi < 0
    assert hits / trials == pytest.approx(paired_power(10, 1.0, 1.0), abs=0.025)


@pytest.mark.parametrize(
    ("args", "word"),
    [
        ((3, 0.0, 1.0), "sigma_delta"),
        ((3, 1.0, 0.0), "effect"),
        ((3, 1.0, 1.0, 1.5), "alpha"),
        ((1, 1.0, 1.0), "n must be"),
    ],
)
def test_paired_power_errors_name_the_argument(args, word):
    with pytest.raises(ValueError, match=word):
        paired_power(*args)
