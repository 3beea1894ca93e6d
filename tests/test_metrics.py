"""Tests for hierviz.metrics: hand-computed cases, peers (scikit-learn, pytorch-metric-learning,
geoopt), properties (hypothesis) and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.metrics import (
    REPORT_KEYS,
    default_parent_level,
    h_acc,
    hf1,
    hierarchy_report,
    linear_probe,
    map_at_k,
    mean_normalised_rank,
    ndcg,
    parent_prototypes,
    parent_violations,
    pc_order,
    precision_at_k,
    recall_at_k,
    tree_relevance,
)


def _geo(name, **kw):
    from hierviz.geometry import get_geometry

    return get_geometry(name, **kw)


def _flat_tree():
    from hierviz.hierarchy import LabelTree

    return LabelTree.from_nested({"root": ["a", "b", "c"]})


def _chain_tree():
    """root -> A -> {a1, a2}: level L-1 = 1 holds the single node A."""
    from hierviz.hierarchy import LabelTree

    return LabelTree.from_nested({"root": {"A": ["a1", "a2"]}})


# =============================================================================== HF1 / H-Acc
def test_hf1_hacc_breakhis_hand(breakhis_tree):
    t = breakhis_tree
    ad, fi, du = t.encode(["adenosis", "fibroadenoma", "ductal_carcinoma"]).tolist()
    # correct, sibling, other branch
    y_true = [ad, ad, ad]
    y_pred = [ad, fi, du]
    per_hf1 = hf1(y_true, y_pred, t, reduction="none")
    per_hacc = h_acc(y_true, y_pred, t, reduction="none")
    # sibling shares only "benign" (root excluded): 2*1/(2+2) = 1/2; d_T = 2 -> 1 - 2/4
    assert per_hf1.tolist() == pytest.approx([1.0, 0.5, 0.0])
    assert per_hacc.tolist() == pytest.approx([1.0, 1 - 2 / 4, 1 - 4 / 4])
    assert hf1(y_true, y_pred, t) == pytest.approx(0.5)
    assert h_acc(y_true, y_pred, t) == pytest.approx(0.5)
    assert isinstance(hf1(y_true, y_pred, t), float)


def test_hf1_excludes_root(breakhis_tree):
    # With the root kept, a cross-branch error would score 2*1/(3+3) = 1/3; without it 0.
    t = breakhis_tree
    y = t.encode(["adenosis"])
    yp = t.encode(["papillary_carcinoma"])
    assert hf1(y, yp, t) == 0.0


def test_hf1_hacc_unbalanced_hand(unbalanced_tree):
    t = unbalanced_tree  # root -> a -> a1 -> {x, y}; a -> a2 -> z; root -> b -> {u, v}; root -> c ; L = 3
    e = lambda *names: t.encode(list(names))  # noqa: E731
    y_true = e("x", "x", "x", "u", "c", "y")
    y_pred = e("z", "c", "u", "v", "c", "x")
    # x vs z: {a,a1,x} & {a,a2,z} = {a}: 2/6; d_T = 4 -> 1 - 4/6
    # x vs c: disjoint: 0; d_T = 3 + 1 = 4 -> 1 - 4/6
    # x vs u: 0; d_T = 5 -> 1 - 5/6
    # u vs v: {b,u} & {b,v}: 2/4; d_T = 2 -> 1 - 2/6
    # c vs c: 1; 1
    # y vs x: {a,a1}: 4/6; d_T = 2 -> 1 - 2/6
    exp_hf1 = [1 / 3, 0.0, 0.0, 0.5, 1.0, 2 / 3]
    exp_hacc = [1 / 3, 1 / 3, 1 / 6, 2 / 3, 1.0, 2 / 3]
    assert hf1(y_true, y_pred, t, reduction="none").tolist() == pytest.approx(exp_hf1)
    assert h_acc(y_true, y_pred, t, reduction="none").tolist() == pytest.approx(exp_hacc)
    assert hf1(y_true, y_pred, t) == pytest.approx(np.mean(exp_hf1))
    # numpy and torch inputs agree
    assert hf1(y_true.numpy(), y_pred.numpy(), t) == hf1(y_true, y_pred, t)


def _brute_hf1_hacc(tree, a, b):
    """Independent per-sample implementation from node names (loops are fine in a test)."""
    out_f, out_h = [], []
    for i, j in zip(a, b):
        A = set(tree.ancestors(tree.leaves[i], inclusive=True)) - {tree.root}
        B = set(tree.ancestors(tree.leaves[j], inclusive=True)) - {tree.root}
        inter = len(A & B)
        P, R = inter / len(B), inter / len(A)
        out_f.append(0.0 if inter == 0 else 2 * P * R / (P + R))
        d = len(A ^ B)  # path length between leaves = symmetric difference of ancestor sets
        out_h.append(1 - d / (2 * tree.height))
    return np.mean(out_f), np.mean(out_h)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), which=st.sampled_from(["breakhis", "unbalanced"]))
def test_hf1_hacc_match_bruteforce(data, which):
    import conftest

    from hierviz.hierarchy import LabelTree

    t = LabelTree.from_nested(conftest.BREAKHIS if which == "breakhis" else conftest.UNBALANCED)
    C = t.num_leaves
    n = data.draw(st.integers(1, 12))
    a = data.draw(st.lists(st.integers(0, C - 1), min_size=n, max_size=n))
    b = data.draw(st.lists(st.integers(0, C - 1), min_size=n, max_size=n))
    f_ref, h_ref = _brute_hf1_hacc(t, a, b)
    f, h = hf1(a, b, t), h_acc(a, b, t)
    assert f == pytest.approx(f_ref, abs=1e-12)
    assert h == pytest.approx(h_ref, abs=1e-12)
    assert 0.0 <= f <= 1.0 and 0.0 <= h <= 1.0
    assert hf1(b, a, t) == pytest.approx(f)  # symmetric
    assert (f == 1.0) == (a == b) and (h == 1.0) == (a == b)


@pytest.mark.parametrize("fn", [hf1, h_acc])
def test_hf1_hacc_bad_input(fn, breakhis_tree):
    t = breakhis_tree
    with pytest.raises(ValueError, match="same length"):
        fn([0, 1], [0], t)
    with pytest.raises(ValueError, match=r"y_pred .*outside \[0, 8\)"):
        fn([0, 1], [0, 8], t)
    with pytest.raises(ValueError, match="y_true .*outside"):
        fn([-1], [0], t)
    with pytest.raises(ValueError, match="y_true is empty"):
        fn([], [], t)
    with pytest.raises(TypeError, match="y_true must hold integer"):
        fn([0.0, 1.0], [0, 1], t)
    with pytest.raises(ValueError, match="1-D"):
        fn([[0, 1]], [[0, 1]], t)
    with pytest.raises(ValueError, match="reduction"):
        fn([0], [0], t, reduction="sum")


# =============================================================================== levels
def test_default_parent_level(breakhis_tree, unbalanced_tree):
    assert default_parent_level(breakhis_tree) == 1
    assert default_parent_level(unbalanced_tree) == 2
    assert default_parent_level(_flat_tree()) == 1  # L - 1 = 0 is the root -> leaves (nearest class mean)
    assert default_parent_level(_chain_tree()) == 2  # level 1 = {A} only -> leaves


# =============================================================================== violations / PC-order
def _breakhis_protos_2d(t):
    """Hand-placed unit prototypes: benign -> (1, 0), malignant -> (0, 1)."""
    ids = torch.tensor([t.node_index["benign"], t.node_index["malignant"]])
    return torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64), ids


def test_violations_pc_order_euclidean_hand(breakhis_tree):
    t = breakhis_tree
    geo = _geo("euclidean")
    protos, ids = _breakhis_protos_2d(t)
    ang = torch.tensor([10.0, 80.0, 170.0]) * math.pi / 180
    s = math.sqrt(0.5)
    z = torch.cat([torch.stack([ang.cos(), ang.sin()], 1).double(), torch.tensor([[s, s]], dtype=torch.float64)])
    y = t.encode(["adenosis", "fibroadenoma", "lobular_carcinoma", "tubular_adenoma"])
    # point 0: benign near (1,0) -> fine; point 1: benign near (0,1) -> violation;
    # point 2 at 170 deg, malignant: nearer (0,1) than (1,0) -> fine; point 3: exact tie -> violation,
    # and argmin picks the first prototype (benign) = its true parent -> PC-order counts it correct.
    viol = parent_violations(z, y, protos, ids, t, geo, reduction="none")
    pco = pc_order(z, y, protos, ids, t, geo, reduction="none")
    assert viol.tolist() == [False, True, False, True]
    assert pco.tolist() == [True, False, True, True]
    assert parent_violations(z, y, protos, ids, t, geo) == pytest.approx(0.5)
    assert pc_order(z, y, protos, ids, t, geo) == pytest.approx(0.75)
    # without the tie they are complements
    v3 = parent_violations(z[:3], y[:3], protos, ids, t, geo)
    assert v3 + pc_order(z[:3], y[:3], protos, ids, t, geo) == pytest.approx(1.0)
    # a large margin turns every point into a violation
    assert parent_violations(z, y, protos, ids, t, geo, margin=10.0) == 1.0
    with pytest.raises(ValueError, match="margin"):
        parent_violations(z, y, protos, ids, t, geo, margin=-0.1)


def _artanh(x):
    return 0.5 * math.log((1 + x) / (1 - x))


def test_violations_poincare_differs_from_euclidean_intuition(breakhis_tree):
    """On the ball a point at 0.6 is nearer the origin than a prototype at 0.9 (Euclidean: the reverse)."""
    t = breakhis_tree
    geo = _geo("poincare", c=1.0)
    ids = torch.tensor([t.node_index["benign"], t.node_index["malignant"]])
    protos = torch.tensor([[0.9, 0.0], [0.0, 0.0]], dtype=torch.float64)  # benign far out, malignant at origin
    z = torch.tensor([[0.6, 0.0], [0.8, 0.0], [-0.3, 0.0]], dtype=torch.float64)
    y = t.encode(["adenosis", "adenosis", "ductal_carcinoma"])
    # d(0.6, 0.9) = 2 artanh 0.9 - 2 artanh 0.6 = 1.558 > d(0.6, 0) = 2 artanh 0.6 = 1.386 -> violation
    assert 2 * _artanh(0.9) - 2 * _artanh(0.6) > 2 * _artanh(0.6)
    # d(0.8, 0.9) = 0.747 < d(0.8, 0) = 2.197 -> fine ; -0.3 malignant: nearer the origin -> fine
    assert parent_violations(z, y, protos, ids, t, geo, reduction="none").tolist() == [True, False, False]
    assert pc_order(z, y, protos, ids, t, geo, reduction="none").tolist() == [False, True, True]


def test_violations_lorentz_matches_poincare(breakhis_tree):
    t = breakhis_tree
    pb = _geo("poincare", c=1.0)
    lo = _geo("lorentz", c=1.0)
    ids = torch.tensor([t.node_index["benign"], t.node_index["malignant"]])
    protos = torch.tensor([[0.9, 0.0], [0.0, 0.0]], dtype=torch.float64)
    z = torch.tensor([[0.6, 0.0], [0.8, 0.0], [-0.3, 0.0], [0.5, 0.5]], dtype=torch.float64)
    y = t.encode(["adenosis", "adenosis", "ductal_carcinoma", "mucinous_carcinoma"])
    v_pb = parent_violations(z, y, protos, ids, t, pb, reduction="none")
    v_lo = parent_violations(lo.from_ball(z), y, lo.from_ball(protos), ids, t, lo, reduction="none")
    assert v_pb.tolist() == v_lo.tolist() == [True, False, False, False]


def test_parent_prototypes_euclidean(breakhis_tree):
    t = breakhis_tree
    geo = _geo("euclidean")
    ang = torch.tensor([-20.0, 20.0, 0.0, 70.0, 110.0]) * math.pi / 180
    z = torch.stack([ang.cos(), ang.sin()], 1).double()
    y = t.encode(["adenosis", "fibroadenoma", "tubular_adenoma", "ductal_carcinoma", "papillary_carcinoma"])
    protos, ids = parent_prototypes(z, y, t, geo)
    assert ids.tolist() == sorted([t.node_index["benign"], t.node_index["malignant"]])
    assert protos.shape == (2, 2)
    # arithmetic mean (possibly re-projected onto the sphere): direction of the mean
    for row, node in zip(protos, ids.tolist()):
        members = z[[t.parent(t.leaves[i]) == t.nodes[node] for i in y.tolist()]]
        m = members.mean(0)
        cos = float(row @ m / (row.norm() * m.norm()))
        assert cos == pytest.approx(1.0, abs=1e-6)
    # the benign mean points along +x, the malignant one along +y
    b = protos[ids.tolist().index(t.node_index["benign"])]
    assert float(b[1]) == pytest.approx(0.0, abs=1e-9)
    assert parent_violations(z, y, protos, ids, t, geo) == 0.0
    assert pc_order(z, y, protos, ids, t, geo) == 1.0


def test_parent_prototypes_poincare_karcher_vs_geoopt(breakhis_tree):
    """Karcher mean of two points = their geodesic midpoint (geoopt), on the x-axis by symmetry."""
    t = breakhis_tree
    geo = _geo("poincare", c=1.0)
    z = torch.tensor([[0.5, 0.3], [0.5, -0.3], [-0.4, 0.1], [-0.4, 0.1]], dtype=torch.float64)
    y = t.encode(["adenosis", "fibroadenoma", "ductal_carcinoma", "lobular_carcinoma"])
    protos, ids = parent_prototypes(z, y, t, geo, steps=20)
    ben = protos[ids.tolist().index(t.node_index["benign"])]
    mal = protos[ids.tolist().index(t.node_index["malignant"])]
    mid = geo.manifold.geodesic(torch.tensor(0.5, dtype=torch.float64), z[0], z[1])
    assert torch.allclose(ben, mid, atol=1e-6)
    assert float(ben[1]) == pytest.approx(0.0, abs=1e-9)
    assert float(ben[0]) < 0.5  # geodesics bow towards the origin
    assert torch.allclose(mal, z[2], atol=1e-9)  # mean of identical points
    # the default 3 Karcher steps already land close
    p3, _ = parent_prototypes(z, y, t, geo)
    assert torch.allclose(p3, protos, atol=1e-3)


def test_prototype_level_errors(breakhis_tree, unbalanced_tree):
    t = breakhis_tree
    geo = _geo("euclidean")
    gen = torch.Generator().manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(8, 3, dtype=torch.float64, generator=gen), dim=1)
    y = torch.arange(8)
    with pytest.raises(ValueError, match="level 0 has a single node"):
        parent_prototypes(z, y, t, geo, level=0)
    with pytest.raises(ValueError, match=r"level must be in \[0, 2\]"):
        parent_prototypes(z, y, t, geo, level=3)
    with pytest.raises(TypeError, match="level must be an int"):
        parent_prototypes(z, y, t, geo, level=1.0)
    with pytest.raises(ValueError, match="level 1 has a single node"):
        parent_prototypes(z[:2], torch.tensor([0, 1]), _chain_tree(), geo, level=1)
    # training labels covering one parent only
    with pytest.raises(ValueError, match="only one node at level 1"):
        parent_prototypes(z[:4], y[:4], t, geo)
    # prototypes at level 1 used with level 2
    protos, ids = parent_prototypes(z, y, t, geo, level=1)
    with pytest.raises(ValueError, match="no prototype for the level-2 node"):
        parent_violations(z, y, protos, ids, t, geo, level=2)
    # length / shape mismatches and empty input
    with pytest.raises(ValueError, match="z and y must have the same length"):
        parent_violations(z, y[:3], protos, ids, t, geo)
    with pytest.raises(ValueError, match="node_ids has 1 entries"):
        parent_violations(z, y, protos, ids[:1], t, geo)
    with pytest.raises(ValueError, match=r"protos has shape \(2, 2\) and z has shape \(8, 3\)"):
        pc_order(z, y, protos[:, :2], ids, t, geo)
    with pytest.raises(ValueError, match="z is empty"):
        parent_prototypes(z[:0], y[:0], t, geo)
    with pytest.raises(ValueError, match="y .*outside"):
        parent_prototypes(z, y + 1, t, geo)
    with pytest.raises(ValueError, match="non-finite"):
        pc_order(torch.full_like(z, float("nan")), y, protos, ids, t, geo)
    with pytest.raises(TypeError, match="z must be a floating-point"):
        parent_prototypes(torch.ones(8, 3, dtype=torch.long), y, t, geo)
    # unbalanced tree: level 2 groups are a1, a2 and the padded shallow leaves u, v, c
    u = unbalanced_tree
    zu = torch.nn.functional.normalize(torch.randn(6, 3, dtype=torch.float64, generator=gen), dim=1)
    _, idu = parent_prototypes(zu, torch.arange(6), u, geo)
    assert sorted(u.nodes[i] for i in idu.tolist()) == ["a1", "a2", "c", "u", "v"]


def test_parent_prototypes_poincare_rejects_outside_ball(breakhis_tree):
    geo = _geo("poincare", c=1.0)
    z = torch.tensor([[1.5, 0.0], [0.1, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError):
        parent_prototypes(z, torch.tensor([0, 4]), breakhis_tree, geo)


# =============================================================================== probe and report
def _blobs(tree, n_per, noise=0.03, seed=0):
    """Unit-norm blobs in d = P + C dims: leaf i of parent p points along 3 e_p + e_{P+i}."""
    g = torch.Generator().manual_seed(seed)
    C = tree.num_leaves
    parents = sorted({tree.parent(leaf) for leaf in tree.leaves})
    d = len(parents) + C
    centers = torch.zeros(C, d, dtype=torch.float64)
    for i, leaf in enumerate(tree.leaves):
        centers[i, parents.index(tree.parent(leaf))] = 3.0
        centers[i, len(parents) + i] = 1.0
    y = torch.arange(C).repeat_interleave(n_per)
    z = centers[y] + noise * torch.randn(len(y), d, dtype=torch.float64, generator=g)
    return torch.nn.functional.normalize(z, dim=1), y


def test_linear_probe_separable_blobs(breakhis_tree):
    geo = _geo("euclidean")
    ztr, ytr = _blobs(breakhis_tree, 15, seed=0)
    zte, yte = _blobs(breakhis_tree, 5, seed=1)
    pred = linear_probe(ztr, ytr, zte, geo, seed=0)
    assert isinstance(pred, np.ndarray) and pred.dtype == np.int64 and pred.shape == (len(yte),)
    assert (pred == yte.numpy()).mean() == 1.0
    # reproducible
    assert np.array_equal(pred, linear_probe(ztr, ytr, zte, geo, seed=0))


def test_linear_probe_bad_input(breakhis_tree):
    geo = _geo("euclidean")
    ztr, ytr = _blobs(breakhis_tree, 3)
    with pytest.raises(ValueError, match="single class"):
        linear_probe(ztr, torch.zeros_like(ytr), ztr, geo)
    with pytest.raises(ValueError, match="same length"):
        linear_probe(ztr, ytr[:-1], ztr, geo)
    with pytest.raises(ValueError, match=r"z_train has shape .* and z_test has shape"):
        linear_probe(ztr, ytr, ztr[:, :5], geo)
    with pytest.raises(ValueError, match="z_test is empty"):
        linear_probe(ztr, ytr, ztr[:0], geo)
    with pytest.raises(TypeError, match="y_train must hold integer"):
        linear_probe(ztr, ytr.double(), ztr, geo)
    with pytest.raises(ValueError, match="seed"):
        linear_probe(ztr, ytr, ztr, geo, seed=-1)


@pytest.mark.parametrize("geom", ["euclidean", "poincare", "lorentz"])
def test_hierarchy_report_blobs(breakhis_tree, geom):
    t = breakhis_tree
    ztr, ytr = _blobs(t, 12, seed=0)
    zte, yte = _blobs(t, 4, seed=1)
    geo = _geo(geom)
    if geom != "euclidean":  # push the blobs into the ball / onto the hyperboloid
        ztr, zte = geo.expmap0(1.5 * ztr), geo.expmap0(1.5 * zte)
    rep = hierarchy_report(ztr, ytr, zte, yte, t, geo, seed=0)
    assert tuple(rep) == REPORT_KEYS
    assert set(rep) == {"top1", "hf1", "h_acc", "violations", "pc_order"}
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in rep.values())
    assert rep == pytest.approx({"top1": 1.0, "hf1": 1.0, "h_acc": 1.0, "violations": 0.0, "pc_order": 1.0})


def test_hierarchy_report_values_consistent(unbalanced_tree):
    """Noisy case: report entries equal the individual metrics (no silent NaN, valid ranges)."""
    t = unbalanced_tree
    geo = _geo("poincare", c=1.0)
    g = torch.Generator().manual_seed(3)
    ztr = geo.expmap0(0.7 * torch.randn(60, 4, dtype=torch.float64, generator=g))
    ytr = torch.arange(t.num_leaves).repeat(10)
    zte = geo.expmap0(0.7 * torch.randn(30, 4, dtype=torch.float64, generator=g))
    yte = torch.arange(t.num_leaves).repeat(5)
    rep = hierarchy_report(ztr, ytr, zte, yte, t, geo, seed=0)
    pred = linear_probe(ztr, ytr, zte, geo, seed=0)
    protos, ids = parent_prototypes(ztr, ytr, t, geo)  # default level 2 (padded shallow leaves)
    assert rep["top1"] == pytest.approx(float((pred == yte.numpy()).mean()))
    assert rep["hf1"] == pytest.approx(hf1(yte, pred, t))
    assert rep["h_acc"] == pytest.approx(h_acc(yte, pred, t))
    assert rep["violations"] == pytest.approx(parent_violations(zte, yte, protos, ids, t, geo))
    assert rep["pc_order"] == pytest.approx(pc_order(zte, yte, protos, ids, t, geo))
    assert all(np.isfinite(v) and 0 <= v <= 1 for v in rep.values())


def test_hierarchy_report_falls_back_to_leaf_level():
    """root -> A -> {a1, a2}: level L-1 has one node, so the report uses the leaves (no NaN)."""
    t = _chain_tree()
    geo = _geo("euclidean")
    ztr = torch.tensor([[1.0, 0.0], [0.98, 0.2], [0.0, 1.0], [0.2, 0.98]], dtype=torch.float64)
    ztr = torch.nn.functional.normalize(ztr, dim=1)
    ytr = torch.tensor([0, 0, 1, 1])
    rep = hierarchy_report(ztr, ytr, ztr, ytr, t, geo)
    assert rep == pytest.approx({"top1": 1.0, "hf1": 1.0, "h_acc": 1.0, "violations": 0.0, "pc_order": 1.0})
    with pytest.raises(ValueError, match="level 1 has a single node"):
        hierarchy_report(ztr, ytr, ztr, ytr, t, geo, level=1)


def test_hierarchy_report_bad_input(breakhis_tree):
    geo = _geo("euclidean")
    z, y = _blobs(breakhis_tree, 2)
    with pytest.raises(ValueError, match="z_test and y_test must have the same length"):
        hierarchy_report(z, y, z, y[:-1], breakhis_tree, geo)
    with pytest.raises(ValueError, match="y_test .*outside"):
        hierarchy_report(z, y, z, y + 3, breakhis_tree, geo)
    with pytest.raises(ValueError, match="y_train is empty"):
        hierarchy_report(z[:0], y[:0], z, y, breakhis_tree, geo)


# =============================================================================== retrieval
@pytest.fixture
def hand_retrieval(breakhis_tree):
    """One adenosis query; gallery ranked adenosis, fibroadenoma, ductal, adenosis."""
    t = breakhis_tree
    yq = t.encode(["adenosis"])
    yg = t.encode(["adenosis", "fibroadenoma", "ductal_carcinoma", "adenosis"])
    dist = torch.tensor([[0.1, 0.2, 0.3, 0.4]])
    return t, dist, yq, yg


def test_retrieval_hand(hand_retrieval):
    t, dist, yq, yg = hand_retrieval
    assert precision_at_k(dist, yq, yg, t, k=1) == 1.0
    assert precision_at_k(dist, yq, yg, t, k=2) == 0.5
    assert precision_at_k(dist, yq, yg, t, k=4) == 0.5
    assert precision_at_k(dist, yq, yg, t, k=2, level=1) == 1.0  # fibroadenoma shares "benign"
    assert precision_at_k(dist, yq, yg, t, k=4, level=1) == 0.75
    assert recall_at_k(dist, yq, yg, t, k=1) == 1.0
    # AP@4: hits at ranks 1 and 4 -> (1 + 2/4) / min(4, 2)
    assert map_at_k(dist, yq, yg, t, k=4) == pytest.approx(0.75)
    assert map_at_k(dist, yq, yg, t, k=2) == pytest.approx(0.5)
    assert map_at_k(dist, yq, yg, t, k=None) == pytest.approx(0.5)  # MAP@R, R = 2
    # NDCG with rel_sum = 1 - d_T / D_T, D_T = 4: rel = [1, 1/2, 0, 1]
    dcg = 1 + 0.5 / math.log2(3) + 0 + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 0.5 / math.log2(4)
    assert ndcg(dist, yq, yg, t) == pytest.approx(dcg / idcg)
    assert ndcg(dist, yq, yg, t, k=2) == pytest.approx((1 + 0.5 / math.log2(3)) / (1 + 1 / math.log2(3)))
    # MNR: ranks 0..3, N = 4; level 1 (benign): ranks {0, 1, 3}; level 2 (adenosis): {0, 3}
    assert mean_normalised_rank(dist, yq, yg, t) == pytest.approx(((4 / 3) / 4 + (3 / 2) / 4) / 2)
    # scores instead of distances: same ranking, same values
    for fn, kw in [(precision_at_k, {"k": 2}), (map_at_k, {"k": 4}), (ndcg, {}), (mean_normalised_rank, {})]:
        assert fn(-dist, yq, yg, t, kind="score", **kw) == pytest.approx(fn(dist, yq, yg, t, **kw))


def test_retrieval_second_query_and_reduction(breakhis_tree):
    t = breakhis_tree
    yq = t.encode(["adenosis", "ductal_carcinoma"])
    yg = t.encode(["adenosis", "ductal_carcinoma", "fibroadenoma"])
    dist = torch.tensor([[0.1, 0.2, 0.3], [0.1, 0.5, 0.2]])  # query 2 ranks adenosis, fibro, ductal
    assert recall_at_k(dist, yq, yg, t, k=1, reduction="none").tolist() == [1.0, 0.0]
    assert recall_at_k(dist, yq, yg, t, k=3) == 1.0
    assert precision_at_k(dist, yq, yg, t, k=1) == 0.5
    assert map_at_k(dist, yq, yg, t, k=3, reduction="none").tolist() == pytest.approx([1.0, 1 / 3])


def test_retrieval_perfect_ranking(unbalanced_tree):
    t = unbalanced_tree
    yg = torch.arange(t.num_leaves).repeat_interleave(3)
    yq = torch.arange(t.num_leaves)
    # distance = tree distance + tiny gallery-order jitter: a perfect hierarchical ranking
    dist = t.tree_distance_matrix[yq][:, yg].double() + 1e-3 * torch.arange(len(yg)) / len(yg)
    assert map_at_k(dist, yq, yg, t, k=3) == 1.0
    assert precision_at_k(dist, yq, yg, t, k=3) == 1.0
    assert ndcg(dist, yq, yg, t) == pytest.approx(1.0)
    assert ndcg(dist, yq, yg, t, relevance="max") == pytest.approx(1.0)
    # random ranking scores worse on NDCG and MNR
    g = torch.Generator().manual_seed(0)
    rnd = torch.rand(dist.shape, dtype=torch.float64, generator=g)
    assert ndcg(rnd, yq, yg, t) < ndcg(dist, yq, yg, t)
    assert mean_normalised_rank(rnd, yq, yg, t) > mean_normalised_rank(dist, yq, yg, t)


def test_mnr_bruteforce_and_exclude_self(unbalanced_tree):
    """MNR vs a per-query loop implementation of paper 04's formula, with and without the diagonal."""
    t = unbalanced_tree
    g = torch.Generator().manual_seed(1)
    y = torch.arange(t.num_leaves).repeat(3)[torch.randperm(18, generator=g)]
    S = torch.rand(18, 18, dtype=torch.float64, generator=g)
    levels = [lv for lv in range(1, t.height + 1) if len(set(t.leaf_paths[:, lv].tolist())) > 1]

    def brute(i, gal):
        order = sorted(gal, key=lambda j: -float(S[i, j]))
        N = len(order)
        tot = 0.0
        for lv in levels:
            node = t.leaf_paths[y[i], lv]
            rr = [r for r, j in enumerate(order) if t.leaf_paths[y[j], lv] == node]
            tot += np.mean(rr) / N
        return tot / len(levels)

    ref_all = np.mean([brute(i, list(range(18))) for i in range(18)])
    ref_loo = np.mean([brute(i, [j for j in range(18) if j != i]) for i in range(18)])
    assert mean_normalised_rank(S, y, y, t, kind="score") == pytest.approx(ref_all)
    assert mean_normalised_rank(S, y, y, t, kind="score", exclude_self=True) == pytest.approx(ref_loo)
    # exclude_self for precision: same as deleting the diagonal by hand
    ref_p = np.mean(
        [
            np.mean([y[j] == y[i] for j in sorted((j for j in range(18) if j != i), key=lambda j: -float(S[i, j]))[:2]])
            for i in range(18)
        ]
    )
    assert precision_at_k(S, y, y, t, k=2, kind="score", exclude_self=True) == pytest.approx(ref_p)


@pytest.mark.parametrize("relevance", ["sum", "max", "rho"])
@pytest.mark.parametrize("k", [None, 5])
def test_ndcg_matches_sklearn(unbalanced_tree, relevance, k):
    from sklearn.metrics import ndcg_score

    t = unbalanced_tree
    g = torch.Generator().manual_seed(2)
    yq = torch.randint(0, t.num_leaves, (9,), generator=g)
    yg = torch.cat([torch.arange(t.num_leaves), torch.randint(0, t.num_leaves, (24,), generator=g)])
    S = torch.rand(9, len(yg), dtype=torch.float64, generator=g)  # continuous: no ties
    rel = tree_relevance(t, relevance)[yq][:, yg].numpy()
    ref = ndcg_score(rel, S.numpy(), k=k)
    assert ndcg(S, yq, yg, t, k=k, kind="score", relevance=relevance) == pytest.approx(ref, abs=1e-12)


def test_tree_relevance_values(breakhis_tree, unbalanced_tree):
    t = breakhis_tree
    r = tree_relevance(t, "sum")
    ad, fi, du = t.encode(["adenosis", "fibroadenoma", "ductal_carcinoma"]).tolist()
    assert (float(r[ad, ad]), float(r[ad, fi]), float(r[ad, du])) == (1.0, 0.5, 0.0)
    u = unbalanced_tree
    x, c, uu = u.encode(["x", "c", "u"]).tolist()
    rm = tree_relevance(u, "max")  # H_T = 3
    assert float(rm[x, c]) == pytest.approx(0.0) and float(rm[uu, c]) == pytest.approx(1 / 3)
    rs = tree_relevance(u, "sum")  # D_T = 5 (x to u)
    assert float(rs[x, c]) == pytest.approx(1 - 4 / 5)
    with pytest.raises(ValueError, match="relevance must be one of"):
        tree_relevance(t, "cosine")


def test_map_at_r_and_p1_match_pytorch_metric_learning(breakhis_tree):
    from pytorch_metric_learning.distances import LpDistance
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator
    from pytorch_metric_learning.utils.inference import CustomKNN

    g = torch.Generator().manual_seed(4)
    q = torch.randn(10, 3, generator=g)
    gal = torch.randn(40, 3, generator=g)
    yq = torch.randint(0, 4, (10,), generator=g)
    yg = torch.randint(0, 4, (40,), generator=g)
    ac = AccuracyCalculator(
        include=("mean_average_precision_at_r", "precision_at_1"),
        knn_func=CustomKNN(LpDistance(normalize_embeddings=False)),
        k=None,
    )
    ref = ac.get_accuracy(q, yq, gal, yg, ref_includes_query=False)
    D = torch.cdist(q.double(), gal.double())
    assert map_at_k(D, yq, yg, breakhis_tree, k=None) == pytest.approx(ref["mean_average_precision_at_r"], abs=1e-6)
    assert precision_at_k(D, yq, yg, breakhis_tree, k=1) == pytest.approx(ref["precision_at_1"], abs=1e-6)
    assert recall_at_k(D, yq, yg, k=1) == pytest.approx(ref["precision_at_1"], abs=1e-6)  # hit@1 = P@1


def test_retrieval_bad_input(hand_retrieval):
    t, dist, yq, yg = hand_retrieval
    with pytest.raises(ValueError, match="gallery_labels has 3 entries but scores has 4 columns"):
        precision_at_k(dist, yq, yg[:3], t)
    with pytest.raises(ValueError, match="query_labels has 2 entries"):
        ndcg(dist, torch.tensor([0, 1]), yg, t)
    with pytest.raises(ValueError, match="gallery_labels .*outside"):
        map_at_k(dist, yq, yg + 5, t)
    with pytest.raises(ValueError, match="scores is empty"):
        mean_normalised_rank(dist[:0], yq[:0], yg, t)
    with pytest.raises(ValueError, match="NaN"):
        ndcg(torch.full_like(dist, float("nan")), yq, yg, t)
    with pytest.raises(ValueError, match="2-D"):
        ndcg(dist[0], yq, yg, t)
    with pytest.raises(ValueError, match=r"k must be in \[1, 4\]"):
        precision_at_k(dist, yq, yg, t, k=5)
    with pytest.raises(ValueError, match=r"k must be in"):
        recall_at_k(dist, yq, yg, t, k=0)
    with pytest.raises(ValueError, match="kind must be"):
        ndcg(dist, yq, yg, t, kind="similarity")
    with pytest.raises(ValueError, match="exclude_self=True needs a square"):
        precision_at_k(dist, yq, yg, t, k=1, exclude_self=True)
    with pytest.raises(ValueError, match="level needs a tree"):
        precision_at_k(dist, yq, yg, None, k=1, level=1)
    # a query whose leaf is absent from the gallery
    lonely = t.encode(["papillary_carcinoma"])
    with pytest.raises(ValueError, match="no relevant gallery item"):
        map_at_k(dist, lonely, yg, t, k=2)
    with pytest.raises(ValueError, match="no relevant gallery item"):
        recall_at_k(dist, lonely, yg, t, k=2)
    with pytest.raises(ValueError, match="level-2 node"):
        mean_normalised_rank(dist, lonely, yg, t)
    # ... precision is still defined (0) for it
    assert precision_at_k(dist, lonely, yg, t, k=2) == 0.0
    # NDCG undefined when every gallery item is at the tree diameter from the query
    with pytest.raises(ValueError, match="ideal DCG = 0"):
        ndcg(dist[:, 2:3], yq, yg[2:3], t)


def test_linear_probe_on_few_samples_of_many_leaves_warns_nothing():
    """Leaf indices are classes: scikit-learn's "could represent a regression problem" guess is not shown."""
    import warnings

    from hierviz.geometry import get_geometry
    from hierviz.metrics import linear_probe

    g = torch.Generator().manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(24, 6, generator=g), dim=-1)
    y = torch.arange(24) % 13  # 13 classes among 24 samples (scikit-learn warns above 20 samples, > 50 % classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pred = linear_probe(z, y, z, get_geometry("euclidean"))
    assert pred.shape == (24,) and set(pred.tolist()) <= set(range(13))
