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
    rows = [{"variant": "", "loss.hwc.alpha": a, "seed": 0, "hf1": h} for a, h in [(0.2, 0.3), (0.5, 0.9), (1.0, 0.1)]]
    assert sweep_curve(rows, "", "hf1", key="loss.hwc.alpha") == ([0.2, 0.5, 1.0], [0.3, 0.9, 0.1], [0.0, 0.0, 0.0])
    assert best_grid_value(rows, "", "hf1", key="loss.hwc.alpha") == 0.5
    assert best_grid_value(rows, "", "hf1", key="loss.hwc.alpha", higher=False) == 1.0


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
    with pytest.raises(ValueError, match="'loss.hwc.gamma' is missing"):
        sweep_curve(rows, "HWC", "hf1", key="loss.hwc.gamma")


# ----------------------------------------------------------------------------- notebook 01 §6: Eq. (3) with a fixed step
def test_karcher_path_is_eq3_and_line_search_mean_is_no_worse():
    import torch

    from hierviz.geometry import PoincareBall
    from hierviz.geometry.frechet import karcher_path

    ball = PoincareBall(1.0)
    rng = np.random.default_rng(0)
    z = ball.expmap0(torch.tensor(rng.normal((1.6, 0.4), (0.5, 0.9), size=(60, 2))))
    init = ball.expmap0(ball.logmap0(z).mean(0))
    m, costs = karcher_path(ball, z, 1.0, 2, init)
    # by hand: two steps of Eq. (3)
    ref = init
    for _ in range(2):
        ref = ball.expmap(ref, ball.logmap(ref, z).mean(0))
    torch.testing.assert_close(m, ref)
    assert costs[0] == pytest.approx(float((ball.dist(init, z) ** 2).sum()))
    # beta = 1/2 converges; its limit is the minimiser that the library mean (with line search) approaches
    best, cb = karcher_path(ball, z, 0.5, 40, init)
    assert cb[-1] <= min(cb) + 1e-9
    lib = ball.mean(z, steps=50)
    assert float((ball.dist(lib, z) ** 2).sum()) == pytest.approx(cb[-1], rel=1e-6)
    with pytest.raises(ValueError, match="beta must be"):
        karcher_path(ball, z, 0.0, 3, init)
    with pytest.raises(ValueError, match="steps must be"):
        karcher_path(ball, z, 1.0, -1, init)


# ----------------------------------------------------------------------------- notebook 04 §1: level groups
def test_level_groups_matches_a_loop():
    from hierviz.data import load_tree
    from hierviz.hierarchy import level_groups

    tree = load_tree("two-step")
    labels = np.random.default_rng(1).integers(0, tree.num_leaves, 50)
    for level in range(tree.height + 1):
        g, names = level_groups(tree, labels, level)
        for i, y in enumerate(labels):
            anc = tree.ancestors(tree.leaves[y])
            want = anc[level] if level < len(anc) else tree.leaves[y]
            assert names[int(g[i])] == want
        assert len(names) == len(set(names)) == int(g.max()) + 1
    with pytest.raises(ValueError):
        level_groups(tree, labels, tree.height + 1)


# ----------------------------------------------------------------------------- notebook 02 §3: SupContrast before PR #142
def test_supcon_reference_nan_only_without_positives_and_equals_supcon_elsewhere():
    import torch
    import torch.nn.functional as F

    from hierviz.data import load_tree
    from hierviz.losses import SupConLoss
    from hierviz.losses.reference import supcon_reference_per_anchor

    tree = load_tree("two-step")
    g = torch.Generator().manual_seed(0)
    z = F.normalize(torch.randn(6, 1, 5, generator=g, dtype=torch.float64), dim=-1)
    y = torch.tensor([0, 1, 1, 3, 3, 5])
    ref = supcon_reference_per_anchor(z, y, 0.1)
    assert ref.isnan().tolist() == [True, False, False, False, False, True]
    ours = SupConLoss(tree, "euclidean", tau=0.1, reduction="anchor")(z, y)
    assert float(ours) == pytest.approx(float(ref[~ref.isnan()].mean()))
    # two views: every anchor has a positive, no NaN, and the mean over anchors is SupCon's
    z2 = F.normalize(torch.randn(6, 2, 5, generator=g, dtype=torch.float64), dim=-1)
    ref2 = supcon_reference_per_anchor(z2, y, 0.1)
    assert not ref2.isnan().any()
    assert float(SupConLoss(tree, "euclidean", tau=0.1, reduction="anchor")(z2, y)) == pytest.approx(float(ref2.mean()))
    with pytest.raises(ValueError, match="shape"):
        supcon_reference_per_anchor(z[:, 0], y, 0.1)
    with pytest.raises(ValueError, match="tau"):
        supcon_reference_per_anchor(z, y, 0.0)


# ----------------------------------------------------------------------------- notebooks 00-01: figures
def test_tree_matrices_and_curvature_figures_show_the_library_values():
    from hierviz.data import load_tree
    from hierviz.hierarchy.synthetic import b_ary_tree, node_tree_distance
    from hierviz.viz.tree_embedding import curvature_figure, tree_embedding_stats, tree_matrices_figure

    tree = load_tree("bloodmnist")
    fig = tree_matrices_figure(tree)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), tree.rho_matrix.numpy())
    np.testing.assert_array_equal(np.asarray(fig.data[1].z), tree.tree_distance_matrix.numpy())
    assert fig.layout.title.text.endswith("L = 4")

    t = b_ary_tree(3, 3)
    s = tree_embedding_stats(t, 1.0)
    np.testing.assert_array_equal(s["D_tree"], node_tree_distance(t))
    fig = curvature_figure(t, 1.0, name="3-ary", D_tree=s["D_tree"])
    assert f"distortion (G4) = {s['distortion']:.3f}" in fig.layout.title.text
    pairs = [tr for tr in fig.data if tr.name == "node pairs"][0]
    n = t.num_nodes
    assert len(pairs.y) == n * (n - 1) // 2
    np.testing.assert_allclose(np.sort(pairs.y), np.sort(s["D"][np.triu_indices(n, 1)]))
