"""``seeds_needed``: the pairs a paired two-sided t-test needs (the results pages' power rule)."""

import math

import numpy as np
import pytest

from hierviz.report.stats import seeds_needed

scipy_stats = pytest.importorskip("scipy.stats")


def _exact_power(n: int, ratio: float, alpha: float = 0.05) -> float:
    """Power of the paired two-sided t-test at n pairs, effect / σ_Δ = 1 / ratio (noncentral t)."""
    df, nc = n - 1, math.sqrt(n) / ratio
    t = scipy_stats.t.ppf(1 - alpha / 2, df)
    return float(scipy_stats.nct.sf(t, df, nc) + scipy_stats.nct.cdf(-t, df, nc))


def test_hand_values():
    # δ = σ: normal formula (1.959964 + 0.841621)^2 = 7.85; t refinement: n = 9 needs
    # (2.306 + 0.889)^2 = 10.21 > 9, n = 10 needs (2.262 + 0.883)^2 = 9.89 <= 10.
    assert seeds_needed(1.0, 1.0) == 10
    assert seeds_needed(-1.0, 1.0) == 10  # the sign of the effect does not matter
    assert seeds_needed(1.0, 0.0) == 2
    # the normal formula is the lower bound the t refinement starts from
    for ratio in (0.7, 1.3, 2.5):
        z = ((1.959963984540054 + 0.8416212335729143) * ratio) ** 2
        assert seeds_needed(1.0, ratio) >= math.ceil(z)


@pytest.mark.parametrize("ratio", [0.5, 1.0, 1.7, 2.0, 3.0, 5.0])
def test_smallest_n_with_exact_power_80(ratio):
    """The returned n reaches power 0.8 by the noncentral t; n - 1 does not."""
    n = seeds_needed(1.0, ratio)
    assert _exact_power(n, ratio) >= 0.8
    assert _exact_power(n - 1, ratio) < 0.8


def test_power_and_alpha_move_n_the_right_way():
    assert seeds_needed(1.0, 2.0, power=0.9) > seeds_needed(1.0, 2.0)
    assert seeds_needed(1.0, 2.0, alpha=0.01) > seeds_needed(1.0, 2.0)
    assert seeds_needed(2.0, 2.0) < seeds_needed(1.0, 2.0)


def test_n_max_caps_the_search():
    assert seeds_needed(1e-6, 1.0, n_max=50) == 50


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(effect=0.0, sigma=1.0), "effect"),
        (dict(effect=np.nan, sigma=1.0), "effect"),
        (dict(effect=1.0, sigma=-1.0), "sigma"),
        (dict(effect=1.0, sigma=1.0, alpha=1.5), "alpha"),
        (dict(effect=1.0, sigma=1.0, power=0.4), "power"),
    ],
)
def test_errors_name_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=word):
        seeds_needed(**kwargs)
