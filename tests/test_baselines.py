"""Trivial baselines, imbalance-aware metrics and paired comparisons over seeds."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

import hierviz.methods  # noqa: F401  (registers the display names the report shows: "SupCon", not "supcon")
from hierviz.hierarchy import LabelTree
from hierviz.metrics import map_at_k
from hierviz.metrics.baselines import (
    frequency_prior_targets,
    imbalance_metrics,
    majority_class,
    majority_class_report,
    random_ranking_scores,
)
from hierviz.report.stats import default_baseline, paired_ci, paired_differences, paired_markdown, t_quantile
from hierviz.report.tables import results_html_table, results_markdown

TREE = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})  # leaves 0..3


# ----------------------------------------------------------------------------- classification baselines


def test_imbalance_metrics_hand_computed():
    # classes 0,0,0,1,2; predictions 0,0,1,1,0: recall 2/3, 1, 0 -> bal_acc 5/9
    y, p = [0, 0, 0, 1, 2], [0, 0, 1, 1, 0]
    out = imbalance_metrics(y, p)
    assert out["bal_acc"] == pytest.approx(5 / 9)
    # F1: class 0: P 2/3 R 2/3 -> 2/3; class 1: P 1/2 R 1 -> 2/3; class 2: 0 -> macro 4/9
    assert out["macro_f1"] == pytest.approx(4 / 9)
    with pytest.raises(ValueError, match="same length"):
        imbalance_metrics([0, 1], [0])
    with pytest.raises(ValueError, match="integer"):
        imbalance_metrics([0.5], [0])


def test_majority_class_report_on_a_skewed_split():
    y_train = np.array([1, 1, 1, 0, 2])  # majority leaf a2
    y_test = np.array([1, 1, 0, 3])  # a2, a2, a1 (sibling), b2 (other branch)
    assert majority_class(y_train) == 1
    rep = majority_class_report(y_train, y_test, TREE)
    assert rep["top1"] == pytest.approx(0.5)
    # HF1 per sample: 1, 1, 1/2, 0; H-Acc = 1 - d/(2L), L = 2: 1, 1, 1/2, 0
    assert rep["hf1"] == pytest.approx(2.5 / 4) and rep["h_acc"] == pytest.approx(2.5 / 4)
    # only class 1 is recalled among 3 classes in y_test; F1 of class 1: P 2/4, R 1 -> 2/3, over classes {0,1,3}
    assert rep["bal_acc"] == pytest.approx(1 / 3) and rep["macro_f1"] == pytest.approx((2 / 3) / 3)
    assert np.isnan(rep["violations"]) and np.isnan(rep["pc_order"]) and rep["majority_leaf"] == 1.0
    with pytest.raises(ValueError, match="below tree.num_leaves"):
        majority_class_report([0, 7], [0], TREE)


# ----------------------------------------------------------------------------- random ranking (paper 03)


def _monte_carlo(yq, yg, ks, denominator, trials=3000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    Q, G = len(yq), len(yg)
    acc = {k: 0.0 for k in ks}
    r1 = 0.0
    for _ in range(trials // 100):
        for _ in range(100):
            D = torch.rand(Q, G, generator=gen, dtype=torch.float64)  # i.i.d. scores: a uniform random ranking
            for k in ks:
                acc[k] += float(map_at_k(D, yq, yg, k=k, denominator=denominator))
            order = D.argmin(1)
            r1 += float((torch.as_tensor(yg)[order] == torch.as_tensor(yq)).double().mean())
    return {k: v / trials for k, v in acc.items()}, r1 / trials


@pytest.mark.parametrize("denominator", ["min_k_r", "r", "k"])
def test_random_ranking_expectation_matches_a_monte_carlo(denominator):
    yg = np.array([0] * 7 + [1] * 3 + [2] * 2)  # skewed class shares, G = 12
    yq = np.array([0, 0, 0, 1, 2, 2])
    ks = (1, 3, 5, 12)
    want = random_ranking_scores(yq, yg, ks, denominator=denominator)
    mc, p1 = _monte_carlo(yq, yg, ks, denominator)
    for k in ks:  # 3000 trials x 6 queries: the MC standard error is below 0.005
        assert want[f"map@{k}"] == pytest.approx(mc[k], abs=0.012), k
    assert want["p@1"] == pytest.approx(p1, abs=0.012)
    assert want["p@1"] == pytest.approx((3 * 7 / 12 + 3 / 12 + 2 * 2 / 12) / 6)


def test_random_ranking_hand_case_and_errors():
    # G = 3, R = 2 for the query. Ranks with a relevant item: MAP@3 (min_k_r: n = 2).
    # E[r1 P@1] = 2/3; E[r2 P@2] = (2/3 + 1/3)/2 = 1/2; E[r3 P@3] = (2/3 + 2/3)/3 = 4/9 -> (2/3 + 1/2 + 4/9)/2
    s = random_ranking_scores([0], [0, 0, 1], ks=(3,))
    assert s["map@3"] == pytest.approx((2 / 3 + 1 / 2 + 4 / 9) / 2)
    with pytest.raises(ValueError, match="no reference"):
        random_ranking_scores([2], [0, 1], ks=(1,))
    with pytest.raises(ValueError, match="hits"):
        random_ranking_scores([0], [0, 1], ks=(1,), denominator="hits")
    with pytest.raises(ValueError, match=r"\[1, 2\]"):
        random_ranking_scores([0], [0, 1], ks=(3,))


# ----------------------------------------------------------------------------- multi-label prior (paper 05)


def test_frequency_prior_picks_the_most_frequent_label_set():
    Y = np.array([[0, 1, 0, 1], [0, 1, 1, 0], [0, 1, 1, 0], [0, 1, 0, 1], [0, 1, 1, 0]], bool)
    P = frequency_prior_targets(Y, 3)
    assert P.dtype == bool and P.tolist() == [[False, True, True, False]] * 3
    with pytest.raises(ValueError, match="0/1"):
        frequency_prior_targets([[2, 0]], 1)
    with pytest.raises(ValueError, match="positive integer"):
        frequency_prior_targets(Y, 0)


# ----------------------------------------------------------------------------- paired comparisons


def test_paired_ci_matches_scipy_ttest_rel():
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(3)
    a, b = rng.normal(0.7, 0.02, 5), rng.normal(0.68, 0.02, 5)
    mean, lo, hi, n = paired_ci(a, b)
    ci = ttest_rel(a, b).confidence_interval(0.95)
    assert n == 5 and mean == pytest.approx(float(np.mean(a - b)))
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
    # hand: d = (1, 2, 3): mean 2, s_d 1, t_{0.975,2} = 4.302653 -> 2 -+ 4.302653/sqrt(3)
    assert paired_ci([2, 4, 6], [1, 2, 3])[1:3] == pytest.approx((2 - 4.302653 / 3**0.5, 2 + 4.302653 / 3**0.5))
    with pytest.raises(ValueError, match="at least 2"):
        paired_ci([1.0], [0.0])


def test_t_quantile_table_agrees_with_scipy(monkeypatch):
    from hierviz.report import stats

    want = [t_quantile(df) for df in (1, 2, 4, 9, 30)]
    monkeypatch.setitem(__import__("sys").modules, "scipy.stats", None)  # the fallback table
    got = [stats.t_quantile(df) for df in (1, 2, 4, 9, 30)]
    assert got == pytest.approx(want, rel=1e-6)


def _rows(seeds=3):
    rows = []
    for s in range(seeds):
        rows.append({"method": "supcon", "geometry": "euclidean", "seed": s, "top1": 0.60 + 0.01 * s})
        rows.append({"method": "hwc", "geometry": "euclidean", "seed": s, "top1": 0.62 + 0.01 * s + 0.001 * s * s})
    return rows


def test_paired_differences_pair_by_seed_and_need_three_seeds():
    d = paired_differences(_rows(), "supcon", ["top1"])
    mean, lo, hi, n = d[("hwc", "euclidean")]["top1"]
    diffs = np.array([0.02, 0.021, 0.024])
    assert n == 3 and mean == pytest.approx(diffs.mean())
    assert hi - mean == pytest.approx(t_quantile(2) * diffs.std(ddof=1) / 3**0.5)
    assert paired_markdown(_rows(2), "supcon", ["top1"]) == ""  # two seeds: no table
    md = paired_markdown(_rows(), None, ["top1"])
    assert "Paired difference to SupCon" in md and "| HWC | +0.022 [" in md and "]*" in md
    assert "was not run" in paired_markdown(_rows(), "lam", ["top1"])
    assert default_baseline(["hwc", "lam"]) == "hwc"


def test_paired_differences_pair_by_fold_when_seeds_share_a_fold():
    # 3 folds x 2 seeds (seed s is fold s % 3): the seeds of a fold are averaged, then paired by fold
    rows = []
    for s in range(6):
        fold = s % 3
        rows.append({"method": "supcon", "geometry": "poincare", "seed": s, "fold": fold, "top1": 0.5 + 0.1 * fold})
        rows.append({"method": "hwc", "geometry": "poincare", "seed": s, "fold": fold,
                     "top1": 0.5 + 0.1 * fold + (0.01 if s < 3 else 0.03) + 0.002 * fold})  # fmt: skip
    mean, lo, hi, n = paired_differences(rows, "supcon", ["top1"])[("hwc", "poincare")]["top1"]
    diffs = np.array([0.020, 0.022, 0.024])  # per fold: mean of 0.01 and 0.03, plus 0.002 * fold
    assert n == 3 and mean == pytest.approx(diffs.mean())
    assert hi - mean == pytest.approx(t_quantile(2) * diffs.std(ddof=1) / 3**0.5)
    md = paired_markdown(rows, "supcon", ["top1"])
    assert "same fold, its seeds averaged" in md and "over 3 folds" in md
    # without the fold column the same rows pair by seed: 6 pairs
    by_seed = paired_differences([{k: v for k, v in r.items() if k != "fold"} for r in rows], "supcon", ["top1"])
    assert by_seed[("hwc", "poincare")]["top1"][3] == 6


def test_results_table_shows_the_majority_row_and_imbalance_columns():
    rows = [
        {
            "method": "supcon",
            "geometry": g,
            "seed": 0,
            **dict.fromkeys(("hf1", "h_acc", "pc_order", "violations", "top1"), 0.5),
        }
        for g in ("euclidean", "poincare")
    ]
    for r in rows:
        r.update(bal_acc=0.4, macro_f1=0.3)
    base = {"majority": majority_class_report([1, 1, 0], [1, 0], TREE)}
    md = results_markdown(rows, baselines=base)
    assert "Bal-Acc (Euclidean)" in md and "Macro-F1 (Poincaré)" in md
    line = next(ln for ln in md.splitlines() if ln.startswith("| *Majority class*"))
    # HF1 = H-Acc = (1 + 1/2)/2, violations/PC-order "–", top1 1/2, bal_acc 1/2, macro_f1 (2/3 + 0)/2; twice
    assert line.split(" | ")[1:8] == ["0.750", "0.750", "–", "–", "0.500", "0.500", "0.333"]
    assert line.count("–") == 4 and "undefined for a predictor without embeddings" in md
    assert "<td>Majority class</td>" in results_html_table(rows, baselines=base)


def test_report_baseline_key_is_validated():
    from hierviz.experiments import resolve_config
    from hierviz.experiments.config import ConfigError

    assert resolve_config("quick-ham10000", ["report.baseline=hwc"]).report.baseline == "hwc"
    assert (
        resolve_config("quick-ham10000", ["report.baseline=lam"]).report.baseline == "lam"
    )  # not run: no paired table
    with pytest.raises(ConfigError, match="report.baseline: unknown method 'supcn'; did you mean 'supcon'"):
        resolve_config("quick-ham10000", ["report.baseline=supcn"])
    with pytest.raises(ConfigError, match="eval.embedding: must be 'features', 'z' or null, got 'encoder'"):
        resolve_config("quick-ham10000", ["eval.embedding=encoder"])


def test_compare_writes_imbalance_columns_majority_row_and_paired_cis(tmp_path):
    from hierviz.experiments import compare, resolve_config

    tiny = ["data.limit=60", "model.width=4", "model.embed_dim=8", "data.image_size=16", "eval.projection=pca"]
    tiny += ["train.batch_size=32", "train.epochs=1", "seeds=3", "methods=supcon,hwc", "geometries=euclidean"]
    result = compare(resolve_config("quick-ham10000", [*tiny, f"out={tmp_path}"]), progress=False, verbose=False)
    assert {"bal_acc", "macro_f1"} <= set(result.rows[0])
    md = result.markdown
    assert "| *Majority class* |" in md and "Paired difference to SupCon" in md and "| HWC | " in md
    assert "trained at 16 px (stored at 32 px)" in md  # the header names the training size
    with open(tmp_path / "baselines.csv", newline="") as fh:
        maj = next(csv.DictReader(fh))
    arr = result.arrays("supcon", "euclidean", 0)
    want = majority_class_report(arr["y_train"], arr["y_test"], result.tree)
    assert float(maj["top1"]) == pytest.approx(want["top1"], abs=1e-6) and maj["violations"] == ""
    html = result.paths["html"].read_text(encoding="utf-8")
    assert "Majority class" in html and "Paired difference to the baseline" in html


def test_results_pages_regenerate_from_the_committed_csvs():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "results" / "make_tables.py"
    spec = importlib.util.spec_from_file_location("make_tables", path)
    make_tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_tables)
    assert make_tables.main(["--check"]) == 0  # every results page (paper01.md … paper05.md) matches its CSVs
    # the full-HAM10000 Majority row: nv is 66.98 % of the lesion-grouped test split (docs/results/ham10000-cpu: 0.669)
    maj = make_tables.read_baselines(path.parent / "ham10000-cpu")["majority"]
    assert maj["top1"] == pytest.approx(0.669774, abs=1e-6) and np.isnan(maj["violations"])
