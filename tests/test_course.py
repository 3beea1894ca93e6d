"""hierviz.course: the notebooks' SMOKE / SIZE convention."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from hierviz.course import SIZES, by_size, resolve_size


@pytest.mark.parametrize("size", SIZES)
def test_smoke_wins_over_any_size(size):
    assert resolve_size(True, size) == "smoke"
    assert resolve_size(True, "auto", cuda=True) == "smoke"


@pytest.mark.parametrize("size", SIZES)
def test_explicit_size_is_kept_case_insensitive(size):
    assert resolve_size(False, size) == size
    assert resolve_size(False, size.upper(), cuda=True) == size


def test_auto_is_full_on_cuda_medium_on_cpu():
    assert resolve_size(False, "auto", cuda=True) == "full"
    assert resolve_size(False, "auto", cuda=False) == "medium"
    with mock.patch("torch.cuda.is_available", return_value=False):
        assert resolve_size() == "medium"
    with mock.patch("torch.cuda.is_available", return_value=True):
        assert resolve_size() == "full"


@pytest.mark.parametrize("bad", ["large", "", None, 3])
def test_bad_size_names_the_argument(bad):
    with pytest.raises(ValueError, match="SIZE must be one of"):
        resolve_size(False, bad)


def test_bad_smoke_names_the_argument():
    with pytest.raises(ValueError, match="SMOKE must be True or False"):
        resolve_size("yes", "auto")


def test_by_size_picks_the_named_value():
    assert [by_size(s, 1, 2, 3) for s in SIZES] == [1, 2, 3]
    with pytest.raises(ValueError, match="resolve 'auto'"):
        by_size("auto", 1, 2, 3)


# ------------------------------------------------------------------------ statements the course makes
def test_hi_f1_is_not_a_lower_bound_of_f1():
    """Notebook 09's summary and solution 09-4: dropping an orphan label can raise F1, or lower it."""
    import numpy as np

    from hierviz.hierarchy import LabelTree
    from hierviz.metrics import hierarchical_f1

    tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    col = {n: i for i, n in enumerate(tree.nodes)}

    def rows(*names):
        r = np.zeros((1, tree.num_nodes), bool)
        r[0, [col[n] for n in names]] = True
        return r

    up = hierarchical_f1(rows("a", "a1"), rows("a", "a1", "b1"), tree)  # b1 is a wrong orphan: dropped
    assert up["micro_f1"] == pytest.approx(0.8) and up["hi_micro_f1"] == pytest.approx(1.0)
    down = hierarchical_f1(rows("b", "b1"), rows("b1"), tree)  # b1 is a right orphan: dropped too
    assert down["micro_f1"] == pytest.approx(2 / 3) and down["hi_micro_f1"] == 0.0


def test_hcl_figure_m0_and_lambda_behave_as_notebook_07_says():
    """Notebook 07 §3 and solution 07-1, on hcl_figure (60 steps, the toy blobs, α = 0)."""
    from hierviz.retrieval import hcl_grid, hcl_train
    from hierviz.viz.retrieval import hcl_figure

    meta = {
        (lam, m0): hcl_figure(m0, 0.0, lam, result=hcl_train(m0, 0.0, lam, steps=60)).layout.meta
        for lam, m0 in ((0.0, 3.0), (0.0, 6.0), (1.0, 6.0), (10.0, 6.0))
    }
    m3 = meta[(0.0, 3.0)]  # m0 = 3: spread out, nowhere near the cap 0.99
    assert m3["clip_fraction"] == 0.0 and m3["max_norm"] < 0.95 and 0.65 < m3["mean_norm"] < 0.85
    m6 = meta[(0.0, 6.0)]  # m0 = 6: the cap clips a large share
    assert m6["clip_fraction"] > 0.3 and m6["mean_norm"] > 0.88
    assert meta[(1.0, 6.0)]["clip_fraction"] > 0.3 and meta[(1.0, 6.0)]["mean_norm"] > 0.85  # λ = 1: no change
    m6_10 = meta[(10.0, 6.0)]  # λ = 10: every class collapses to the centre, the margin is lost
    assert m6_10["clip_fraction"] == 0.0 and m6_10["mean_norm"] < 0.1 and m6_10["neg"] > 5.0
    # the panel draws the precomputed grid: the same runs (to float noise across machines)
    grid = hcl_grid()
    for (lam, m0), fresh in meta.items():
        cached = hcl_figure(m0, 0.0, lam, result=grid[(m0, 0.0, lam)]).layout.meta
        assert cached["clip_fraction"] == pytest.approx(fresh["clip_fraction"], abs=0.05)
        assert cached["mean_norm"] == pytest.approx(fresh["mean_norm"], abs=0.02)


def test_paired_ci_matches_scipy_and_is_narrower_than_unpaired():
    import numpy as np
    from scipy import stats

    from hierviz.course import paired_ci

    rng = np.random.default_rng(0)
    seed_effect = rng.normal(0, 0.1, size=6)  # shared by both methods of a seed
    a = 0.60 + seed_effect + rng.normal(0, 0.005, 6)
    b = 0.58 + seed_effect + rng.normal(0, 0.005, 6)
    r = paired_ci(a, b, confidence=0.9)
    ci = stats.ttest_rel(a, b).confidence_interval(confidence_level=0.9)
    assert (r["low"], r["high"]) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert r["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue) and r["n"] == 6
    welch = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence_level=0.9)
    assert (r["unpaired_low"], r["unpaired_high"]) == pytest.approx((welch.low, welch.high), rel=1e-10)
    assert r["unpaired_low"] < 0 < r["low"]  # the seed effect hides the gain unless the runs are paired


@pytest.mark.parametrize(
    "a, b, kw, match",
    [
        ([1.0, 2.0], [1.0], {}, "same length"),
        ([1.0], [2.0], {}, "at least 2"),
        ([1.0, float("nan")], [1.0, 2.0], {}, "finite"),
        ([1.0, 2.0], [1.5, 2.5], {"confidence": 95}, "confidence"),
    ],
)
def test_paired_ci_bad_input_names_the_argument(a, b, kw, match):
    from hierviz.course import paired_ci

    with pytest.raises(ValueError, match=match):
        paired_ci(a, b, **kw)


# ----------------------------------------------------------------- notebook 11's figures (hierviz.viz.pitfalls)
def test_imbalance_metrics_match_the_closed_forms():
    from hierviz.data import load_tree
    from hierviz.viz.pitfalls import imbalance_metrics, imbalanced_labels, simulated_predictions

    tree = load_tree("two-step")
    for share in (0.6, 0.9):
        m = imbalance_metrics(share, 0.7, tree=tree, n=2000)["majority class"]
        assert m["accuracy"] == pytest.approx(share) and m["balanced accuracy"] == pytest.approx(1 / 7)
        assert m["macro-F1"] == pytest.approx(2 * share / (1 + share) / 7)
        assert m["HF1"] == pytest.approx(m["H-Acc"])  # all leaves at depth 3: the same number
    # the confusion-count shortcut gives the per-sample values of scikit-learn and hierviz.metrics
    import numpy as np
    import torch
    from sklearn.metrics import balanced_accuracy_score, f1_score

    from hierviz.metrics import hf1

    yy = imbalanced_labels(tree, 0.7, 700)
    pp = simulated_predictions(yy, tree, 0.6, seed=1)
    c = imbalance_metrics(0.7, 0.6, tree=tree, n=700)["classifier"]
    assert c["balanced accuracy"] == pytest.approx(balanced_accuracy_score(yy, pp))
    assert c["macro-F1"] == pytest.approx(f1_score(yy, pp, labels=np.arange(7), average="macro", zero_division=0))
    assert c["HF1"] == pytest.approx(hf1(torch.as_tensor(yy), torch.as_tensor(pp), tree))
    y = imbalanced_labels(tree, 0.6, 20000)
    assert (y == 0).sum() == 12000 and sorted(set(y.tolist())) == list(range(7))
    p = simulated_predictions(y, tree, recall=0.7, sibling_share=1.0, seed=1)
    recalls = [float((p[y == c] == c).mean()) for c in range(7)]
    assert all(abs(r - 0.7) < 0.04 for r in recalls)  # >= 1,333 samples a class: 3.5 standard errors
    wrong = p != y  # sibling_share 1: every mistake stays under the true parent when the leaf has a sibling
    parent = [tree.parent(leaf) for leaf in tree.leaves]
    has_sib = [sum(q == parent[c] for q in parent) > 1 for c in range(7)]
    assert all(parent[a] == parent[b] for a, b in zip(y[wrong], p[wrong]) if has_sib[a])
    with pytest.raises(ValueError, match="majority"):
        imbalanced_labels(tree, 0.05, 100)


def test_imbalance_panel_redraws_and_the_majority_overtakes_on_hf1():
    from hierviz.viz.pitfalls import imbalance_panel

    panel = imbalance_panel(majority=0.6, recall=0.7)
    m = panel.figure.layout.meta
    assert m["classifier"]["HF1"] > m["majority class"]["HF1"]
    panel.controls["majority"].value = 0.9
    m = panel.figure.layout.meta
    assert m["majority class"]["HF1"] > m["classifier"]["HF1"]  # notebook 11 §7
    assert m["classifier"]["balanced accuracy"] > 4 * m["majority class"]["balanced accuracy"]


def test_hf1_hacc_figure_and_map_chance_figure():
    import numpy as np

    from hierviz.data import load_tree
    from hierviz.viz.pitfalls import hf1_hacc_figure, map_chance_figure, paired_runs_figure

    assert hf1_hacc_figure(load_tree("two-step")).layout.meta["max_abs_diff"] < 1e-12
    assert hf1_hacc_figure(load_tree("20news")).layout.meta["max_abs_diff"] == pytest.approx(1 / 3)
    rng = np.random.default_rng(0)
    yq, yg = rng.integers(0, 2, 200), rng.integers(0, 2, 400)  # two balanced classes: π ≈ 0.5
    meta = map_chance_figure(yq, yg, ks=(1, 20), seeds=2).layout.meta
    assert meta["prior"] == pytest.approx(0.5, abs=0.05)
    assert meta["min_k_r"][0] == pytest.approx(0.5, abs=0.08) and meta["min_k_r"][1] < meta["hits"][1]
    assert meta["r"][1] < 0.15  # R ≈ 200 references per class, k = 20
    fig = paired_runs_figure([0.61, 0.63, 0.60, 0.62], [0.58, 0.61, 0.57, 0.60])
    assert fig.layout.meta["low"] > 0 > fig.layout.meta["unpaired_low"]


def test_site_refuses_a_smoke_copy_and_builds_at_medium(tmp_path, monkeypatch):
    """The site publishes medium or GPU outputs; an executed copy at SMOKE size stops the build."""
    import importlib.util

    import nbformat
    from mkdocs.exceptions import PluginError

    from hierviz.course import published_size

    def load(name):
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).parents[1] / "docs" / "scripts" / f"{name}.py"
        )
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    build, hooks = load("build_site"), load("mkdocs_hooks")
    # the build's parameter injection: medium unless asked otherwise, and medium is not smoke
    assert build.SIZES["medium"] == {"SMOKE": False, "SIZE": "medium"}
    assert published_size({"metadata": {"papermill": {"parameters": build.SIZES["medium"]}}}) == "medium"
    assert published_size({"metadata": {"papermill": {"parameters": build.SIZES["smoke"]}}}) == "smoke"
    assert published_size({"metadata": {"papermill": {"parameters": {"SMOKE": False, "SIZE": "SMOKE"}}}}) == "smoke"

    def copy(params):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
        nb.metadata["papermill"] = {"parameters": params}
        path = tmp_path / "03_hwc.ipynb"
        nbformat.write(nb, path)
        return path

    monkeypatch.delenv("HIERVIZ_SITE_ALLOW_SMOKE", raising=False)
    assert hooks.check_published(copy({"SMOKE": False, "SIZE": "medium"})) == "medium"
    with pytest.raises(PluginError, match="SMOKE size.*--notebooks 03"):
        hooks.check_published(copy({"SMOKE": True}))
    monkeypatch.setenv("HIERVIZ_SITE_ALLOW_SMOKE", "1")  # build_site.py --size smoke: a test build
    assert hooks.check_published(copy({"SMOKE": True})) == "smoke"
    with pytest.raises(ValueError, match="SIZE must be one of"):
        published_size({"metadata": {"papermill": {"parameters": {"SIZE": "huge"}}}})


# ----------------------------------------------------------------- notebook 10 (hierviz.viz.capstone)
class _FakeResult:
    """What capstone_rows reads of a CompareResult: records, arrays(...), tree."""

    def __init__(self, tree, metrics_by_run, y_train, y_test):
        self.tree = tree
        self.records = [
            {"method": m, "geometry": g, "seed": s, "metrics": v, "radius": {"radius_depth_spearman": 0.1 * s}}
            for (m, g, s), v in metrics_by_run.items()
        ]
        self._arrays = {"y_train": np.asarray(y_train), "y_test": np.asarray(y_test)}

    def arrays(self, method, geometry, seed):
        return self._arrays


def test_capstone_chance_is_the_exact_expectation_and_solution_10_1():
    from hierviz.data import load_tree
    from hierviz.hierarchy import LabelTree
    from hierviz.metrics import hf1
    from hierviz.viz.capstone import chance_report

    two_step = load_tree("two-step")
    assert chance_report(range(7), two_step)["hf1"] == pytest.approx(17 / 49, abs=1e-12)  # solution 10-1
    assert chance_report(range(7), two_step)["h_acc"] == pytest.approx(17 / 49, abs=1e-12)
    tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    y = np.array([0, 0, 2, 1])
    rng = np.random.default_rng(0)  # a Monte-Carlo peer: uniform random leaves, many draws
    draws = rng.integers(0, 3, size=(4000, 4))
    mc = np.mean([hf1(y, d, tree) for d in draws])
    r = chance_report(y, tree)
    assert r["hf1"] == pytest.approx(mc, abs=0.01) and r["top1"] == pytest.approx(1 / 3)
    assert np.isnan(r["violations"])
    with pytest.raises(ValueError, match="y_test has labels outside 0..2"):
        chance_report([0, 3], tree)


def test_capstone_rows_paired_ci_majority_and_guide():
    from scipy import stats

    from hierviz.hierarchy import LabelTree
    from hierviz.metrics.baselines import majority_class_report
    from hierviz.viz.capstone import capstone_figure, capstone_markdown, capstone_rows, method_guide

    tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    sup, hcl = [0.50, 0.55, 0.52], [0.56, 0.60, 0.59]
    runs = {}
    for s in range(3):
        runs[("supcon", "poincare", s)] = {"hf1": sup[s], "h_acc": sup[s], "top1": 0.4, "violations": 0.5}
        runs[("hcl", "poincare", s)] = {"hf1": hcl[s], "h_acc": hcl[s], "top1": 0.45, "violations": 0.3 + s / 100}
    res = _FakeResult(tree, runs, y_train=[0, 0, 1, 2], y_test=[0, 1, 2, 2])
    rows = capstone_rows(res)
    by = {r["method"]: r for r in rows}
    d = np.subtract(hcl, sup)
    ci = stats.ttest_rel(hcl, sup).confidence_interval(0.95)  # scipy's paired interval, the reference
    assert by["hcl"]["delta"] == pytest.approx(d.mean()) and (by["hcl"]["low"], by["hcl"]["high"]) == pytest.approx(
        (ci.low, ci.high)
    )
    assert np.isnan(by["supcon"]["delta"]) and by["hcl"]["hf1_std"] == pytest.approx(np.std(hcl, ddof=1))
    assert by["hcl"]["radius_depth_spearman"] == pytest.approx(0.1)
    maj = majority_class_report([0, 0, 1, 2], [0, 1, 2, 2], tree)
    assert by["majority"]["hf1"] == pytest.approx(maj["hf1"]) and by["chance"]["top1"] == pytest.approx(1 / 3)
    table = capstone_markdown(rows)
    assert f"{d.mean():+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]*" in table and "*Chance (uniform leaf)*" in table
    guide = method_guide({"toy": rows})
    assert "**Best HF1: HCL (Poincaré) 0.583**" in guide and "excludes 0" in guide
    assert "Fewest violations: HCL (Poincaré) 0.310" in guide and "Below SupCon" not in guide
    flipped = capstone_rows(_FakeResult(tree, {(m, g, s): dict(v, hf1=1 - v["hf1"]) for (m, g, s), v in runs.items()},
                                        [0, 0, 1, 2], [0, 1, 2, 2]))  # fmt: skip
    assert "**Below SupCon** (interval entirely under 0): HCL (Poincaré) -0.060" in method_guide({"toy": flipped})
    # two seeds: no interval (hierviz compare's MIN_SEEDS rule), and the guide says the ranking is no evidence
    two = _FakeResult(tree, {k: v for k, v in runs.items() if k[2] < 2}, [0, 0, 1, 2], [0, 1, 2, 2])
    rows2 = capstone_rows(two)
    assert np.isnan(next(r for r in rows2 if r["method"] == "hcl")["delta"])
    assert "too few for an interval" in method_guide({"toy": rows2})
    names = [t.name for t in capstone_figure(rows).data]
    assert names[0] == "Poincaré" and names[1].startswith("Majority class") and names[2].startswith("Chance")
    with pytest.raises(ValueError, match="key 'map' is not a metric"):
        capstone_rows(res, key="map")
