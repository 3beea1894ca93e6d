"""Helpers moved out of the course notebooks 03-05: sweep curves and τ*."""

from __future__ import annotations

import numpy as np
import pytest

from hierviz.experiments import best_grid_value, sweep_curve


def _rows():
    rng = np.random.default_rng(0)
    rows = []
    for variant in ("SupCon", "HWC"):
        for tau in (0.05, 0.1, 0.2):
            for seed in range(3):
                rows.append(
                    {
                        "variant": variant,
                        "loss.tau": tau,
                        "seed": seed,
                        "method": "x",
                        "hf1": float(rng.random()),
                        "violations": float(rng.random()),
                    }
                )
    return rows


def test_sweep_curve_matches_a_loop_over_seeds():
    rows = _rows()
    for variant in ("SupCon", "HWC"):
        for metric in ("hf1", "violations"):
            values, mean, std = sweep_curve(rows, variant, metric)
            assert values == [0.05, 0.1, 0.2]
            for t, m, s in zip(values, mean, std):
                v = np.array([r[metric] for r in rows if r["variant"] == variant and r["loss.tau"] == t])
                assert m == pytest.approx(v.mean()) and s == pytest.approx(v.std(ddof=1))


def test_sweep_curve_one_seed_has_zero_spread_and_other_keys_work():
    rows = [{"variant": "", "loss.alpha": a, "seed": 0, "hf1": h} for a, h in [(0.2, 0.3), (0.5, 0.9), (1.0, 0.1)]]
    assert sweep_curve(rows, "", "hf1", key="loss.alpha") == ([0.2, 0.5, 1.0], [0.3, 0.9, 0.1], [0.0, 0.0, 0.0])
    assert best_grid_value(rows, "", "hf1", key="loss.alpha") == 0.5
    assert best_grid_value(rows, "", "hf1", key="loss.alpha", higher=False) == 1.0


def test_best_grid_value_is_the_argmax_of_the_mean():
    rows = _rows()
    values, mean, _ = sweep_curve(rows, "SupCon", "hf1")
    assert best_grid_value(rows, "SupCon", "hf1") == values[int(np.argmax(mean))]
    assert (
        best_grid_value(rows, "SupCon", "violations", higher=False)
        == values[int(np.argmin(sweep_curve(rows, "SupCon", "violations")[1]))]
    )


def test_sweep_curve_errors_name_the_problem():
    rows = _rows()
    with pytest.raises(ValueError, match="variant 'LAM' is not in the sweep rows; variants are"):
        sweep_curve(rows, "LAM", "hf1")
    with pytest.raises(ValueError, match="'top5' is missing"):
        sweep_curve(rows, "HWC", "top5")
    with pytest.raises(ValueError, match="'loss.gamma' is missing"):
        sweep_curve(rows, "HWC", "hf1", key="loss.gamma")
