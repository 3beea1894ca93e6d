"""Tree embedding (Sarkar), node tree distances, Gromov δ and distortion (moved out of notebook 01)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.data import load_tree
from hierviz.geometry import get_geometry
from hierviz.geometry.tree_embedding import sarkar_embedding
from hierviz.hierarchy import LabelTree
from hierviz.hierarchy.synthetic import b_ary_tree, node_tree_distance
from hierviz.metrics import GROMOV_EXACT_MAX, embedding_distortion, gromov_delta


def delta_brute(D) -> float:
    """The four-point form of Gromov δ: max over all quadruples of (S1 - S2) / 2."""
    D = np.asarray(D, dtype=np.float64)
    out = 0.0
    for x, y, z, w in itertools.product(range(len(D)), repeat=4):
        s = sorted([D[x, y] + D[z, w], D[x, z] + D[y, w], D[x, w] + D[y, z]])
        out = max(out, (s[2] - s[1]) / 2)
    return out


def random_tree(seed: int, n: int) -> LabelTree:
    """Node i hangs under the root or under a random earlier node."""
    rng = np.random.default_rng(seed)
    parents = {}
    for i in range(n):
        j = int(rng.integers(-1, i))
        parents[f"n{i}"] = "root" if j < 0 else f"n{j}"
    return LabelTree.from_parents(parents)


# ----------------------------------------------------------------------------- synthetic trees
@pytest.mark.parametrize("b, depth", [(1, 3), (2, 4), (3, 2)])
def test_b_ary_tree_counts(b, depth):
    t = b_ary_tree(b, depth)
    assert t.num_leaves == b**depth and t.height == depth
    assert t.num_nodes == sum(b**k for k in range(depth + 1))
    assert (t.leaf_depth == depth).all()


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "3"])
def test_b_ary_tree_rejects_bad_arguments(bad):
    with pytest.raises(ValueError, match="b must be a positive int"):
        b_ary_tree(bad, 2)
    with pytest.raises(ValueError, match="depth must be a positive int"):
        b_ary_tree(2, bad)
    with pytest.raises(ValueError, match="100,000"):
        b_ary_tree(10, 6)


@pytest.mark.parametrize("name", ["two-step", "bloodmnist", "cifar100"])
def test_node_tree_distance_matches_leaf_matrix(name):
    t = load_tree(name)
    D = node_tree_distance(t)
    leaf = t.leaf_node.numpy()
    np.testing.assert_array_equal(D[np.ix_(leaf, leaf)], t.tree_distance_matrix.numpy())
    assert (D == D.T).all() and (np.diag(D) == 0).all()
    # every parent-child pair is one edge; the root is at distance depth from every node
    par = t.parent_index.numpy()
    kids = np.nonzero(par >= 0)[0]
    assert (D[kids, par[kids]] == 1).all()
    np.testing.assert_array_equal(D[t.node_index[t.root]], t.node_depth.numpy())


def test_node_tree_distance_by_hand():
    t = LabelTree.from_parents({"a": "root", "b": "root", "x": "a", "y": "a"})
    D, ix = node_tree_distance(t), t.node_index
    by_hand = {("x", "y"): 2, ("x", "b"): 3, ("a", "b"): 2, ("root", "y"): 2, ("a", "x"): 1}
    for (u, v), d in by_hand.items():
        assert D[ix[u], ix[v]] == d == D[ix[v], ix[u]]


# ----------------------------------------------------------------------------- Gromov δ
@settings(max_examples=25, deadline=None)
@given(n=st.integers(4, 7), dim=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_gromov_delta_equals_brute_force_on_euclidean_points(n, dim, seed):
    P = np.random.default_rng(seed).normal(size=(n, dim))
    D = np.linalg.norm(P[:, None] - P[None], axis=-1)
    assert gromov_delta(D) == pytest.approx(delta_brute(D), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_tree_metric_has_delta_zero(seed):
    t = random_tree(seed, 12)
    D = node_tree_distance(t)
    assert delta_brute(D) == 0.0
    assert gromov_delta(D) == 0.0


def test_fixed_base_point_is_a_lower_bound_within_factor_two():
    P = np.random.default_rng(3).normal(size=(9, 2))
    D = np.linalg.norm(P[:, None] - P[None], axis=-1)
    exact = gromov_delta(D)
    for w in range(9):
        at_w = gromov_delta(D, base=w)
        assert at_w <= exact + 1e-12 and exact <= 2 * at_w + 1e-12


def test_square_hand_value_and_relative():
    s = math.sqrt(2)
    D = np.array([[0, 1, s, 1], [1, 0, 1, s], [s, 1, 0, 1], [1, s, 1, 0]])
    assert gromov_delta(D) == pytest.approx((2 * s - 2) / 2)
    assert gromov_delta(D, relative=True) == pytest.approx(2 * (2 * s - 2) / 2 / s)
    assert gromov_delta([[0.0]]) == 0.0 and gromov_delta([[0.0]], relative=True) == 0.0


def test_hyperbolic_plane_delta_is_bounded_by_log2():
    # four points on a square of radius R around the origin of the disk (c = 1): δ <= log 2 for every R,
    # while the same square in the plane (side √2 R, diagonal 2R) has δ = (2 - √2) R, unbounded
    ball = get_geometry("poincare", c=1.0)
    dirs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    for R in (0.5, 2.0, 5.0, 8.0):
        D = ball.pairwise_dist(ball.expmap0(dirs * R / 2)).numpy()  # d(0, x) = R
        assert gromov_delta(D) <= math.log(2) + 1e-9
    assert gromov_delta(D) > 0.6  # close to the bound far out
    E = np.linalg.norm(8 * dirs.numpy()[:, None] - 8 * dirs.numpy()[None], axis=-1)
    assert gromov_delta(E) == pytest.approx((2 - math.sqrt(2)) * 8)


@pytest.mark.parametrize(
    "D, kwargs, match",
    [
        (np.zeros((2, 3)), {}, "square"),
        (np.zeros((0, 0)), {}, "square"),
        (np.array([[0, np.nan], [np.nan, 0]]), {}, "non-finite"),
        (np.zeros((3, 3)), {"base": 3}, "base must be"),
        (np.zeros((GROMOV_EXACT_MAX + 1,) * 2), {}, "pass base="),
    ],
)
def test_gromov_delta_errors(D, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gromov_delta(D, **kwargs)


# ----------------------------------------------------------------------------- Sarkar embedding + distortion
@pytest.mark.parametrize("c, edge", [(1.0, 1.0), (0.25, 1.0), (2.0, 0.5)])
def test_sarkar_embedding_edges_have_the_given_length(c, edge):
    t = b_ary_tree(3, 3)
    x = sarkar_embedding(t, c=c, edge=edge)
    assert x.dtype == torch.float64 and x.shape == (t.num_nodes, 2)
    assert x[t.node_index[t.root]].abs().max() == 0
    ball = get_geometry("poincare", c=c)
    par = t.parent_index.numpy()
    kids = np.nonzero(par >= 0)[0]
    d = ball.dist(x[kids], x[par[kids]])
    torch.testing.assert_close(d, torch.full_like(d, edge), rtol=0, atol=1e-9)
    assert (x.norm(dim=1) < 1 / math.sqrt(c)).all()
    assert len({tuple(np.round(p, 9)) for p in x.numpy()}) == t.num_nodes  # no two nodes on one spot


def test_sarkar_distortion_falls_with_curvature():
    # notebook 01 §7: more room per node (larger c at fixed edge length) -> distances follow the tree
    t = b_ary_tree(3, 4)
    T = node_tree_distance(t)
    dist = {}
    for c in (0.01, 1.0, 4.0):
        D = get_geometry("poincare", c=c).pairwise_dist(sarkar_embedding(t, c)).numpy()
        dist[c] = embedding_distortion(D, T)[0]
    assert dist[0.01] > dist[1.0] > dist[4.0]
    assert dist[4.0] < 0.1


def test_sarkar_embedding_errors():
    t = b_ary_tree(2, 2)
    with pytest.raises(ValueError, match="edge must be"):
        sarkar_embedding(t, 1.0, edge=0)
    with pytest.raises(ValueError):
        sarkar_embedding(t, c=-1.0)


def test_embedding_distortion_hand_cases():
    T = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float)
    assert embedding_distortion(2.5 * T, T) == (pytest.approx(0.0), pytest.approx(2.5))
    D = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], dtype=float)  # upper pairs: D (1, 1, 1), T (1, 2, 1)
    lam = (1 * 1 + 1 * 2 + 1 * 1) / (1 + 4 + 1)
    by_hand = np.mean([abs(1 / lam - 1), abs(1 / (2 * lam) - 1), abs(1 / lam - 1)])
    assert embedding_distortion(D, T) == (pytest.approx(by_hand), pytest.approx(lam))
    with pytest.raises(ValueError, match="zero or negative"):
        embedding_distortion(D, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="must be the same"):
        embedding_distortion(D, T[:2, :2])
