"""LabelTree: hand-computed values, constructors, JSON, DAG projection, LSA, bad input, properties."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.hierarchy import LabelTree, ProjectionChoice
from tests.conftest import BREAKHIS, UNBALANCED

BENIGN = BREAKHIS["root"]["benign"]
MALIGNANT = BREAKHIS["root"]["malignant"]


def names(tree, idx):
    return [tree.nodes[i] for i in torch.as_tensor(idx).reshape(-1).tolist()]


# --------------------------------------------------------------------------- BreakHis (balanced, L = 2)
def test_breakhis_structure(breakhis_tree):
    t = breakhis_tree
    assert t.root == "root" and t.height == 2
    assert t.num_leaves == 8 and t.num_nodes == 11 and len(t) == 11
    assert t.leaves == BENIGN + MALIGNANT
    assert t.nodes == ["root", "benign", "malignant"] + BENIGN + MALIGNANT
    assert t.leaf_index["ductal_carcinoma"] == 4 and t.node_index["malignant"] == 2
    assert t.parent_index.tolist() == [-1, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert t.node_depth.tolist() == [0, 1, 1] + [2] * 8
    assert t.leaf_node.tolist() == list(range(3, 11))
    assert t.leaf_depth.tolist() == [2] * 8
    assert t.levels() == [["root"], ["benign", "malignant"], BENIGN + MALIGNANT]
    assert t.level_nodes(1) == ["benign", "malignant"]
    assert t.parent("adenosis") == "benign" and t.parent("root") is None
    assert t.children("malignant") == MALIGNANT and t.children("adenosis") == []
    assert t.depth("root") == 0 and t.depth("benign") == 1 and t.depth("adenosis") == 2
    assert t.is_leaf("adenosis") and not t.is_leaf("benign")
    assert t.ancestors("lobular_carcinoma") == ["root", "malignant", "lobular_carcinoma"]
    assert t.ancestors("lobular_carcinoma", inclusive=False) == ["root", "malignant"]
    assert t.ancestors("root", inclusive=False) == []
    assert t.siblings("adenosis") == BENIGN[1:]
    assert t.siblings("benign") == ["malignant"] and t.siblings("root") == []
    assert t.descendants("benign") == BENIGN and t.descendants("adenosis") == []
    assert t.descendants("root") == ["benign", "malignant"] + BENIGN + MALIGNANT
    assert t.leaves_under("malignant") == MALIGNANT and t.leaves_under("adenosis") == ["adenosis"]


def test_breakhis_rho_distance_lca(breakhis_tree):
    t = breakhis_tree
    group = torch.tensor([0] * 4 + [1] * 4)
    same_group = group[:, None] == group[None, :]
    eye = torch.eye(8, dtype=torch.bool)
    # ρ: same leaf 1 (depth 2 / L 2), siblings 1/2 (lca at depth 1), across the root 0.
    want_rho = torch.where(eye, 1.0, torch.where(same_group, 0.5, 0.0))
    assert t.rho_matrix.dtype == torch.float32
    assert torch.equal(t.rho_matrix, want_rho)
    want_d = torch.where(eye, 0, torch.where(same_group, 2, 4))
    assert t.tree_distance_matrix.dtype == torch.long
    assert torch.equal(t.tree_distance_matrix, want_d)
    a = torch.tensor([0, 0, 0, 5])
    b = torch.tensor([0, 3, 4, 6])
    assert t.rho(a, b).tolist() == [1.0, 0.5, 0.0, 0.5]
    assert t.tree_distance(a, b).tolist() == [0, 2, 4, 2]
    assert names(t, t.lca(a, b)) == ["adenosis", "benign", "root", "malignant"]
    # B x B sub-matrix by broadcasting, numpy and list inputs accepted.
    y = np.array([7, 1, 1])
    assert t.rho(y[:, None], y[None, :]).tolist() == [[1, 0, 0], [0, 1, 1], [0, 1, 1]]
    assert t.tree_distance([2], [6]).tolist() == [4]
    assert t.rho(torch.tensor(3), torch.tensor(2)).shape == ()


def test_outer_fast_path_matches_broadcast_indexing(unbalanced_tree):
    t = unbalanced_tree
    g = torch.Generator().manual_seed(0)
    a, b = torch.randint(0, 6, (7,), generator=g), torch.randint(0, 6, (5,), generator=g)
    for fn, table in ((t.rho, t.rho_matrix), (t.lca, t.lca_matrix), (t.tree_distance, t.tree_distance_matrix)):
        outer = fn(a[:, None], b[None, :])  # index_select path
        assert outer.shape == (7, 5) and torch.equal(outer, table[a][:, b])
        assert torch.equal(fn(a[:5], b), table[a[:5], b])  # elementwise path
        assert torch.equal(fn(a[:, None, None], b[None, None, :]), table[a][:, b][:, None, :])  # 3-D broadcast


def test_breakhis_levels_and_masks(breakhis_tree):
    t = breakhis_tree
    labels = torch.tensor([[0, 4], [7, 2]])
    assert t.ancestor_at_level(labels, 0).tolist() == [[0, 0], [0, 0]]
    assert t.ancestor_at_level(labels, 1).tolist() == [[1, 2], [2, 1]]
    assert torch.equal(t.ancestor_at_level(labels, 2), t.leaf_node[labels])
    m = t.ancestor_mask(torch.tensor([5]))
    assert m.shape == (1, 11) and m.dtype == torch.bool
    assert [t.nodes[i] for i in m[0].nonzero().flatten().tolist()] == ["root", "malignant", "lobular_carcinoma"]
    assert t.ancestor_mask(labels).shape == (2, 2, 11)
    assert t.leaf_paths.tolist()[4] == [0, 2, 7]


def test_str_and_repr(breakhis_tree, unbalanced_tree):
    s = str(breakhis_tree).splitlines()
    assert s[0] == "root" and s[1] == "├── benign" and s[2] == "│   ├── adenosis  [0]"
    assert s[-1] == "    └── papillary_carcinoma  [7]" and len(s) == 11
    assert str(unbalanced_tree).splitlines()[-1] == "└── c  [5]"
    assert repr(breakhis_tree) == "LabelTree(root='root', N=11, C=8, L=2)"


def test_encode(breakhis_tree):
    assert breakhis_tree.encode(["tubular_adenoma", "adenosis"]).tolist() == [3, 0]
    assert breakhis_tree.encode("papillary_carcinoma").item() == 7
    assert breakhis_tree.encode("papillary_carcinoma").dtype == torch.long
    with pytest.raises(ValueError, match=r"unknown leaf names 'nope', 'zzz'.*internal \(non-leaf\) nodes 'benign'"):
        breakhis_tree.encode(["adenosis", "nope", "benign", "zzz"])
    with pytest.raises(TypeError, match="names must hold str"):
        breakhis_tree.encode([1, 2])


# --------------------------------------------------------------------------- unbalanced (c at depth 1, L = 3)
#   root ── a ── a1 ── x, y ;  a ── a2 ── z ;  root ── b ── u, v ;  root ── c
# nodes (BFS): root0 a1 b2 c3 a1:4 a2:5 u6 v7 x8 y9 z10 ; leaves x0 y1 z2 u3 v4 c5
def test_unbalanced_structure(unbalanced_tree):
    t = unbalanced_tree
    assert t.height == 3 and t.num_leaves == 6 and t.num_nodes == 11
    assert t.leaves == ["x", "y", "z", "u", "v", "c"]
    assert t.nodes == ["root", "a", "b", "c", "a1", "a2", "u", "v", "x", "y", "z"]
    assert t.leaf_depth.tolist() == [3, 3, 3, 2, 2, 1]
    assert t.parent_index.tolist() == [-1, 0, 0, 0, 1, 1, 2, 2, 4, 4, 5]
    assert t.levels() == [["root"], ["a", "b", "c"], ["a1", "a2", "u", "v"], ["x", "y", "z"]]
    assert t.level_nodes(3) == ["x", "y", "z"]
    assert t.siblings("c") == ["a", "b"] and t.siblings("z") == []
    assert t.descendants("a") == ["a1", "a2", "x", "y", "z"]
    assert t.leaves_under("a") == ["x", "y", "z"] and t.leaves_under("root") == t.leaves
    assert t.ancestors("z") == ["root", "a", "a2", "z"] and t.ancestors("c") == ["root", "c"]


def test_unbalanced_leaf_paths_padding(unbalanced_tree):
    t = unbalanced_tree
    # A leaf shallower than level l repeats itself: u (depth 2) -> 6 at level 3, c (depth 1) -> 3 at 2 and 3.
    assert t.leaf_paths.tolist() == [
        [0, 1, 4, 8],
        [0, 1, 4, 9],
        [0, 1, 5, 10],
        [0, 2, 6, 6],
        [0, 2, 7, 7],
        [0, 3, 3, 3],
    ]
    y = torch.arange(6)
    assert names(t, t.ancestor_at_level(y, 1)) == ["a", "a", "a", "b", "b", "c"]
    assert names(t, t.ancestor_at_level(y, 2)) == ["a1", "a1", "a2", "u", "v", "c"]
    assert names(t, t.ancestor_at_level(y, 3)) == ["x", "y", "z", "u", "v", "c"]
    m = t.ancestor_mask(torch.tensor([5, 3]))
    assert m.sum(1).tolist() == [2, 3]  # c: {root, c}; u: {root, b, u}


def test_unbalanced_rho_distance_lca(unbalanced_tree):
    t = unbalanced_tree
    third = 1.0 / 3.0
    # Eq. 4 with L = 3 (max leaf depth): depth(lca) / 3; a shallow leaf's diagonal is its depth / 3.
    want_rho = (
        torch.tensor(
            [
                [3, 2, 1, 0, 0, 0],
                [2, 3, 1, 0, 0, 0],
                [1, 1, 3, 0, 0, 0],
                [0, 0, 0, 2, 1, 0],
                [0, 0, 0, 1, 2, 0],
                [0, 0, 0, 0, 0, 1],
            ],
            dtype=torch.float32,
        )
        * third
    )
    assert torch.allclose(t.rho_matrix, want_rho, atol=0, rtol=1e-7)
    assert t.rho(5, 5).item() == pytest.approx(third) and t.rho(3, 3).item() == pytest.approx(2 * third)
    want_d = torch.tensor(
        [
            [0, 2, 4, 5, 5, 4],
            [2, 0, 4, 5, 5, 4],
            [4, 4, 0, 5, 5, 4],
            [5, 5, 5, 0, 2, 3],
            [5, 5, 5, 2, 0, 3],
            [4, 4, 4, 3, 3, 0],
        ]
    )
    assert torch.equal(t.tree_distance_matrix, want_d)
    lca_names = [[t.nodes[j] for j in row] for row in t.lca_matrix.tolist()]
    assert lca_names[0] == ["x", "a1", "a", "root", "root", "root"]
    assert lca_names[3] == ["root", "root", "root", "u", "b", "root"]
    assert lca_names[5] == ["root"] * 5 + ["c"]
    assert torch.equal(t.lca_matrix, t.lca_matrix.T)


# --------------------------------------------------------------------------- constructors and JSON
BREAKHIS_PARENTS = {
    **{n: "benign" for n in BENIGN},
    **{n: "malignant" for n in MALIGNANT},
    "benign": "root",
    "malignant": "root",
}


def test_constructors_give_equal_trees(breakhis_tree, tmp_path):
    t = breakhis_tree
    from_parents = LabelTree.from_parents(BREAKHIS_PARENTS)  # root only implied as a parent value
    from_parents_explicit = LabelTree.from_parents({"root": None, **BREAKHIS_PARENTS})
    from_paths = LabelTree.from_paths([["root", LabelTree.parent(t, n), n] for n in t.leaves])
    from_dict = LabelTree.from_dict({"name": "b", "source": "s", "tree": BREAKHIS})
    from_dict_parents = LabelTree.from_dict({"parents": BREAKHIS_PARENTS})
    from_dict_paths = LabelTree.from_dict({"paths": [t.ancestors(n) for n in t.leaves]})
    p = tmp_path / "breakhis.json"
    p.write_text(json.dumps({"source": "paper 01 Fig. 1", "tree": BREAKHIS}))
    from_json = LabelTree.from_json(p)
    from_init = LabelTree(BREAKHIS_PARENTS)
    for other in (
        from_parents,
        from_parents_explicit,
        from_paths,
        from_dict,
        from_dict_parents,
        from_dict_paths,
        from_json,
        from_init,
    ):
        assert other == t
        assert hash(other) == hash(t)
        assert torch.equal(other.rho_matrix, t.rho_matrix) and other.nodes == t.nodes
    assert from_json.name == "breakhis" and from_json.source == "paper 01 Fig. 1"
    # Lists may hold sub-dicts; {} and [] are leaves too.
    mixed = LabelTree.from_nested({"root": [{"benign": BENIGN}, {"malignant": {n: {} for n in MALIGNANT}}]})
    assert mixed == t
    assert LabelTree.from_nested({"r": {"p": [], "q": ["s"]}}).leaves == ["p", "s"]
    assert t != LabelTree.from_nested({"root": {"benign": BENIGN, "malignant": MALIGNANT[:3]}})
    assert t != t.with_leaf_order(t.leaves[::-1])
    assert t != "root"


def test_json_round_trip(unbalanced_tree, tmp_path):
    t = unbalanced_tree.with_leaf_order(["c", "v", "z", "x", "u", "y"])
    t.name, t.source = "unbalanced", "tests/conftest.py"
    p = tmp_path / "t.json"
    t.to_json(p)
    obj = json.loads(p.read_text())
    assert obj["leaf_order"] == ["c", "v", "z", "x", "u", "y"] and obj["name"] == "unbalanced"
    back = LabelTree.from_json(p)
    assert back == t and back.leaves == t.leaves and back.name == "unbalanced"
    assert torch.equal(back.rho_matrix, t.rho_matrix)
    assert LabelTree.from_dict(t.to_dict()) == t
    assert LabelTree.from_dict(unbalanced_tree.to_dict()) == unbalanced_tree
    assert unbalanced_tree.to_dict()["tree"] == UNBALANCED  # lists for all-leaf children, None for a leaf


def test_with_leaf_order(breakhis_tree):
    t = breakhis_tree
    order = [
        "mucinous_carcinoma",
        "adenosis",
        "papillary_carcinoma",
        "fibroadenoma",
        "tubular_adenoma",
        "ductal_carcinoma",
        "phyllodes_tumor",
        "lobular_carcinoma",
    ]
    r = t.with_leaf_order(order)
    assert r.leaves == order and r.leaf_index["adenosis"] == 1
    perm = torch.tensor([t.leaf_index[n] for n in order])
    assert torch.equal(r.rho_matrix, t.rho_matrix[perm][:, perm])
    assert torch.equal(r.tree_distance_matrix, t.tree_distance_matrix[perm][:, perm])
    # Node order follows the new leaf order: malignant holds leaf 0 now.
    assert r.nodes[:3] == ["root", "malignant", "benign"]
    assert names(r, r.ancestor_at_level(torch.arange(8), 1)) == [t.parent(n) for n in order]
    assert t.leaves == BENIGN + MALIGNANT  # original untouched
    with pytest.raises(ValueError, match=r"missing leaves 'lobular_carcinoma'"):
        t.with_leaf_order(order[:-1])
    with pytest.raises(ValueError, match=r"not leaves of the tree 'benign'"):
        t.with_leaf_order(order + ["benign"])
    with pytest.raises(ValueError, match=r"repeated names 'adenosis'"):
        t.with_leaf_order(order + ["adenosis"])
    with pytest.raises(TypeError, match="classes"):
        t.with_leaf_order("adenosis")


# --------------------------------------------------------------------------- DAG -> tree (paper 01 §4.1)
def test_dag_refused_without_flag():
    dag = {"root": None, "a": "root", "b": "root", "x": ["a", "b"]}
    with pytest.raises(ValueError, match=r"DAG: node 'x' has 2 parents 'a', 'b'.*dag_to_tree=True"):
        LabelTree.from_parents(dag)
    with pytest.raises(ValueError, match="DAG"):
        LabelTree.from_dict({"parents": dag})


def test_dag_rule_shallowest_parent():
    # x has parents a2 (depth 2) and b (depth 1): b wins although 'a2' < 'b' and a2's subtree is more frequent.
    dag = {"root": None, "a": "root", "b": "root", "a2": "a", "x": ["a2", "b"], "p": "a2", "q": "b"}
    t = LabelTree.from_parents(dag, dag_to_tree=True, train_counts={"p": 100, "q": 1})
    assert t.parent("x") == "b"
    assert t.dag_projection == [ProjectionChoice("x", "b", ("a2",), "depth")]
    assert t.depth("x") == 2


def test_dag_rule_train_counts():
    # Both parents at depth 1; b's subtree (q: 10) outweighs a's (p: 5, x shared): b wins over 'a'.
    dag = {"root": None, "a": "root", "b": "root", "p": "a", "q": "b", "x": ["a", "b"]}
    counts = {"p": 5, "q": 10, "x": 7}
    t = LabelTree.from_parents(dag, dag_to_tree=True, train_counts=counts)
    assert t.parent("x") == "b"
    assert t.dag_projection == [ProjectionChoice("x", "b", ("a",), "train_counts")]
    assert t.leaves == ["p", "q", "x"] and t.leaves_under("b") == ["q", "x"]
    # Counts on internal nodes count too (multi-label samples labelled only up to 'a').
    t2 = LabelTree.from_parents(dag, dag_to_tree=True, train_counts={"a": 11, "q": 10})
    assert t2.parent("x") == "a" and t2.dag_projection[0].rule == "train_counts"


def test_dag_rule_lexicographic():
    # Same depth, equal (or absent) counts: the smaller name wins, whatever the input order.
    dag = {"root": None, "m": "root", "k": "root", "p": "m", "q": "k", "x": ["m", "k"]}
    for counts in (None, {"p": 3, "q": 3}):
        t = LabelTree.from_parents(dag, dag_to_tree=True, train_counts=counts)
        assert t.parent("x") == "k"
        assert t.dag_projection == [ProjectionChoice("x", "k", ("m",), "lexicographic")]
    # Three parents, two tied at the top: depth removes 'z1', lexicographic picks 'a' over 'b'.
    dag3 = {"r": None, "a": "r", "b": "r", "z": "r", "z1": "z", "y": ["z1", "b", "a"], "l1": "a", "l2": "b", "l3": "z1"}
    t3 = LabelTree.from_parents(dag3, dag_to_tree=True)
    assert t3.parent("y") == "a" and t3.dag_projection[0] == ProjectionChoice("y", "a", ("b", "z1"), "lexicographic")


def test_dag_projection_warns_on_orphaned_parent():
    dag = {"root": None, "a": "root", "b": "root", "p": "a", "x": ["a", "b"]}
    with pytest.warns(UserWarning, match=r"left 'b' without children"):
        t = LabelTree.from_parents(dag, dag_to_tree=True)
    assert t.is_leaf("b") and t.leaves == ["b", "p", "x"]  # leaves keep order of first appearance


def test_dag_projection_deep_and_json():
    # Deeper node with two parents whose chosen parent itself was re-parented.
    dag = {"r": None, "a": "r", "b": "r", "c": ["a", "b"], "d": ["c", "a"], "l1": "a", "l2": "b", "l3": "c"}
    t = LabelTree.from_dict({"parents": dag, "dag_to_tree": True, "train_counts": {"l2": 4}})
    assert t.parent("c") == "b"  # depth tie (a, b at 1), b's subtree has count 4
    assert t.parent("d") == "a"  # a at depth 1 beats c at depth 2
    assert [c.rule for c in t.dag_projection] == ["train_counts", "depth"]


def test_dag_bad_counts():
    dag = {"root": None, "a": "root", "b": "root", "x": ["a", "b"]}
    with pytest.raises(ValueError, match=r"train_counts names unknown nodes: 'nope'"):
        LabelTree.from_parents(dag, dag_to_tree=True, train_counts={"nope": 1})
    with pytest.raises(ValueError, match=r"train_counts\['a'\] = -1 is negative"):
        LabelTree.from_parents(dag, dag_to_tree=True, train_counts={"a": -1})
    with pytest.raises(TypeError, match=r"train_counts\['a'\] must be an int"):
        LabelTree.from_parents(dag, dag_to_tree=True, train_counts={"a": 1.5})


# --------------------------------------------------------------------------- Lowest Seen Ancestor (paper 04)
def test_lowest_seen_ancestor(unbalanced_tree, breakhis_tree):
    t = unbalanced_tree
    assert t.lowest_seen_ancestor("y", ["x", "u"]) == "a1"  # sibling seen
    assert t.lowest_seen_ancestor("z", ["x", "u"]) == "a"  # a2 has no seen leaf, a has x
    assert t.lowest_seen_ancestor("z", ["u", "c"]) == "root"  # nothing under a seen
    assert t.lowest_seen_ancestor("c", ["x", "y", "z", "u", "v"]) == "root"
    assert t.lowest_seen_ancestor("v", [3]) == "b"  # leaf index 3 = u
    assert t.lowest_seen_ancestor("x", ["x"]) == "x"  # a seen leaf is its own LSA
    b = breakhis_tree
    assert b.lowest_seen_ancestor("adenosis", MALIGNANT + ["fibroadenoma"]) == "benign"
    assert b.lowest_seen_ancestor("adenosis", MALIGNANT) == "root"
    with pytest.raises(ValueError, match="seen_leaves is empty"):
        t.lowest_seen_ancestor("x", [])
    with pytest.raises(ValueError, match="'a1' is an internal node"):
        t.lowest_seen_ancestor("x", ["a1"])
    with pytest.raises(ValueError, match=r"leaf: 'a' is an internal node"):
        t.lowest_seen_ancestor("a", ["x"])
    with pytest.raises(ValueError, match=r"leaf index 6 outside \[0, 5\]"):
        t.lowest_seen_ancestor("x", [6])
    with pytest.raises(ValueError, match="unknown node 'w'"):
        t.lowest_seen_ancestor("x", ["w"])


# --------------------------------------------------------------------------- bad input
def test_hierarchy_imports_no_plotting():
    import subprocess
    import sys

    code = "import sys, hierviz.hierarchy; print(sorted(m for m in ('plotly', 'hierviz.viz') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "parents, match",
    [
        ({"a": "b", "b": "a"}, r"^cycle: a -> b -> a \(each name is the parent of the next\); every node has a parent"),
        ({"a": "a"}, r"^cycle: a -> a"),
        (
            {"root": None, "a": "root", "b": "c", "c": "b"},
            r"^unreachable from root 'root': 'b', 'c'; cycle: b -> c -> b",
        ),
        ({"x": None, "y": None, "p": "x", "q": "y"}, r"^two roots: 'x', 'y'"),
        ({"r1": None, "r2": None, "r3": None}, r"^three roots: 'r1', 'r2', 'r3'"),
        ({}, r"^empty tree"),
        ({"root": None}, r"tree has only the root 'root'"),
        ({"root": None, "a": "root", "x": ["a", "a"]}, r"parents\['x'\] lists parent 'a' more than once"),
    ],
)
def test_bad_parent_maps(parents, match):
    with pytest.raises(ValueError, match=match):
        LabelTree.from_parents(parents)


def test_cycle_reachable_in_dag_mode():
    # a -> b -> c -> b is reachable from the root through a: refused even with dag_to_tree.
    with pytest.raises(ValueError, match=r"^cycle: b -> c -> b"):
        LabelTree.from_parents({"root": None, "a": "root", "b": ["a", "c"], "c": "b"}, dag_to_tree=True)


def test_bad_nested_and_paths():
    with pytest.raises(ValueError, match=r"duplicate node name 'x' \(under 'a' and under 'b'\)"):
        LabelTree.from_nested({"root": {"a": ["x"], "b": ["x"]}})
    with pytest.raises(ValueError, match=r"duplicate node name 'x' \(under 'a' and under 'a'\)"):
        LabelTree.from_nested({"root": {"a": ["x", "x"]}})
    with pytest.raises(ValueError, match=r"duplicate node name 'root'"):
        LabelTree.from_nested({"root": {"root": None}})
    with pytest.raises(ValueError, match=r"two roots: 'x', 'y'"):
        LabelTree.from_nested({"x": ["p"], "y": ["q"]})
    with pytest.raises(ValueError, match="empty tree"):
        LabelTree.from_nested({})
    with pytest.raises(TypeError, match=r"must be a dict, a list of children or None, got int"):
        LabelTree.from_nested({"root": {"a": 3}})
    with pytest.raises(TypeError, match="must be a str node name, got int"):
        LabelTree.from_nested({"root": [1, 2]})
    with pytest.raises(ValueError, match="empty string"):
        LabelTree.from_nested({"root": [""]})
    with pytest.raises(ValueError, match=r"duplicate node name 'x': paths\[1\] puts it under 'b'"):
        LabelTree.from_paths([["r", "a", "x"], ["r", "b", "x"]])
    with pytest.raises(ValueError, match=r"paths\[0\] repeats 'r': cycle: r -> a -> r"):
        LabelTree.from_paths([["r", "a", "r"]])
    with pytest.raises(ValueError, match=r"two roots: 'r', 's'"):
        LabelTree.from_paths([["r", "a"], ["s", "b"]])
    with pytest.raises(ValueError, match="empty tree"):
        LabelTree.from_paths([])
    with pytest.raises(ValueError, match=r"paths\[1\] is empty"):
        LabelTree.from_paths([["r", "a"], []])
    with pytest.raises(TypeError, match=r"paths\[0\] must be a sequence"):
        LabelTree.from_paths(["r/a"])


def test_bad_dicts_and_json(tmp_path):
    with pytest.raises(ValueError, match=r"unknown keys 'leaf_oder'"):
        LabelTree.from_dict({"tree": BREAKHIS, "leaf_oder": []})
    with pytest.raises(ValueError, match="exactly one of 'tree', 'parents', 'paths'"):
        LabelTree.from_dict({"tree": BREAKHIS, "paths": [["root", "a"]]})
    with pytest.raises(ValueError, match="exactly one of"):
        LabelTree.from_dict({"name": "x"})
    with pytest.raises(ValueError, match=r"missing leaves 'papillary_carcinoma'"):
        LabelTree.from_dict({"tree": BREAKHIS, "leaf_order": BENIGN + MALIGNANT[:3]})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        LabelTree.from_json(bad)
    with pytest.raises(FileNotFoundError):
        LabelTree.from_json(tmp_path / "missing.json")
    with pytest.raises(TypeError, match=r"obj must be parsed tree JSON \(a Mapping or a list\), got int"):
        LabelTree.from_dict(3)
    with pytest.raises(TypeError, match=r"paths\[0\] must be a sequence of names, got int 1"):
        LabelTree.from_dict([1])  # a list is the paths form
    with pytest.raises(
        TypeError, match=r"paths\[0\] must be a sequence of names, got str 'r/a' \(write each path as a list of names"
    ):
        LabelTree.from_paths(["r/a"])


def test_unknown_names_and_indices(breakhis_tree):
    t = breakhis_tree
    for fn in (t.depth, t.parent, t.children, t.ancestors, t.descendants, t.siblings, t.leaves_under, t.is_leaf):
        with pytest.raises(ValueError, match="unknown node 'carcinoma'"):
            fn("carcinoma")
    with pytest.raises(TypeError, match="must be a str node name"):
        t.depth(3)
    with pytest.raises(ValueError, match=r"labels has leaf indices outside \[0, 7\].*min -1"):
        t.ancestor_mask(torch.tensor([0, -1]))
    with pytest.raises(ValueError, match=r"b has leaf indices outside \[0, 7\].*max 8"):
        t.rho(torch.tensor([0]), torch.tensor([8]))
    with pytest.raises(ValueError, match=r"a has leaf indices outside"):
        t.lca(np.array([9]), np.array([0]))
    with pytest.raises(ValueError, match="outside"):
        t.tree_distance(8, 0)
    with pytest.raises(TypeError, match="integer leaf indices, got dtype torch.float32"):
        t.rho(torch.tensor([0.0]), torch.tensor([1]))
    with pytest.raises(TypeError, match="torch.bool"):
        t.ancestor_at_level(torch.tensor([True]), 1)
    with pytest.raises(TypeError, match="use tree.encode"):
        t.ancestor_mask("adenosis")
    with pytest.raises(ValueError, match=r"level must be in \[0, L=2\], got 3"):
        t.ancestor_at_level(torch.tensor([0]), 3)
    with pytest.raises(ValueError, match="level must be in"):
        t.level_nodes(-1)
    with pytest.raises(ValueError, match="do not broadcast"):
        t.rho(torch.tensor([0, 1]), torch.tensor([0, 1, 2]))
    # Empty batches are fine; int32 / uint8 indices are accepted.
    assert t.rho(torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long)).shape == (0,)
    assert t.rho(torch.tensor([0], dtype=torch.int32), torch.tensor([1], dtype=torch.uint8)).tolist() == [0.5]


def test_larger_tree_values():
    # 10 groups x 3 subgroups x 40 leaves = 1,200 leaves, L = 3.
    nested = {"r": {f"g{i}": {f"g{i}s{j}": [f"g{i}s{j}l{k}" for k in range(40)] for j in range(3)} for i in range(10)}}
    t = LabelTree.from_nested(nested)
    assert t.num_leaves == 1200
    y = torch.tensor([0, 39, 40, 79, 120, 1199])
    want = [
        [0, 2, 4, 4, 6, 6],
        [2, 0, 4, 4, 6, 6],
        [4, 4, 0, 2, 6, 6],
        [4, 4, 2, 0, 6, 6],
        [6, 6, 6, 6, 0, 6],
        [6, 6, 6, 6, 6, 0],
    ]
    assert t.tree_distance(y[:, None], y[None, :]).tolist() == want
    assert t.nodes[t.lca(0, 79)] == "g0" and t.nodes[t.lca(40, 79)] == "g0s1" and t.lca(0, 1199) == 0
    assert t.rho(y, y).tolist() == [1.0] * 6


# --------------------------------------------------------------------------- properties (hypothesis)
@st.composite
def random_trees(draw):
    n = draw(st.integers(2, 24))
    parents = {"n0": None}
    for i in range(1, n):
        parents[f"n{i}"] = f"n{draw(st.integers(0, i - 1))}"
    return LabelTree.from_parents(parents)


@st.composite
def balanced_trees(draw):
    branching = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    parents, frontier, k = {"r": None}, ["r"], 0
    for b in branching:
        nxt = []
        for p in frontier:
            for _ in range(b):
                k += 1
                parents[f"v{k}"] = p
                nxt.append(f"v{k}")
        frontier = nxt
    t = LabelTree.from_parents(parents)
    order = draw(st.permutations(t.leaves))
    return t.with_leaf_order(order)


@settings(max_examples=60, deadline=None)
@given(random_trees())
def test_tree_distance_is_a_metric_and_matches_naive(t):
    d = t.tree_distance_matrix
    C = t.num_leaves
    assert torch.equal(d, d.T) and torch.all(d.diagonal() == 0)
    off = ~torch.eye(C, dtype=torch.bool)
    assert torch.all(d[off] > 0)
    assert torch.all(d[:, None, :] <= d[:, :, None] + d[None, :, :])  # d(i,k) <= d(i,j) + d(j,k)
    L = t.height
    for i, j in itertools.product(range(C), repeat=2):
        ai, aj = t.ancestors(t.leaves[i]), t.ancestors(t.leaves[j])
        common = [a for a, b in zip(ai, aj) if a == b][-1]
        assert t.nodes[t.lca_matrix[i, j]] == common
        assert d[i, j] == (len(ai) - 1) + (len(aj) - 1) - 2 * t.depth(common)
        assert t.rho_matrix[i, j].item() == pytest.approx(t.depth(common) / L)
    assert torch.all((t.rho_matrix >= 0) & (t.rho_matrix <= 1))
    assert t.leaf_depth.max().item() == L


@settings(max_examples=40, deadline=None)
@given(balanced_trees())
def test_rho_equals_one_minus_distance_over_2L_on_balanced_trees(t):
    L = t.height
    expected = 1.0 - t.tree_distance_matrix.double() / (2 * L)
    assert torch.allclose(t.rho_matrix.double(), expected, atol=1e-7)
    assert torch.all(t.rho_matrix.diagonal() == 1.0)
    assert torch.all(t.leaf_depth == L)


# --------------------------------------------------------------------------- any depth (iterative traversals)
@pytest.mark.parametrize("depth", [500, 5000])
def test_any_depth_builds_queries_and_renders(depth):
    parents = {"n0": None, **{f"n{i}": f"n{i - 1}" for i in range(1, depth)}, "leaf2": f"n{depth - 2}"}
    t = LabelTree.from_parents(parents)
    assert t.height == depth - 1 and t.depth("leaf2") == depth - 1
    assert len(t.ancestors(f"n{depth - 1}")) == depth
    assert str(t).count("\n") == depth
    back = LabelTree.from_dict(t.to_dict())
    assert back.leaves == t.leaves and back.height == t.height
    assert float(t.rho(torch.tensor([0]), torch.tensor([1]))) == pytest.approx((depth - 2) / (depth - 1))
    assert int(t.tree_distance(torch.tensor([0]), torch.tensor([1]))) == 2
    assert t.nodes[int(t.lca(torch.tensor([0]), torch.tensor([1])))] == f"n{depth - 2}"
    assert t.nodes[int(t.ancestor_at_level(torch.tensor([1]), depth - 1))] == "leaf2"
    assert t.leaves_under("n0") == [f"n{depth - 1}", "leaf2"] and len(t.descendants("n0")) == depth
    assert t.lowest_seen_ancestor(f"n{depth - 1}", ["leaf2"]) == f"n{depth - 2}"
    assert t.levels()[-1] == [f"n{depth - 1}", "leaf2"]


@pytest.mark.parametrize("depth", [500, 5000])
def test_dag_projection_at_any_depth(depth):
    # A chain with a shortcut: the deep node z has parents at depth 1 and depth - 2; the shallow one wins.
    parents = {"n0": None, **{f"n{i}": f"n{i - 1}" for i in range(1, depth)}, "z": [f"n{depth - 2}", "n1"]}
    t = LabelTree.from_parents(parents, dag_to_tree=True)
    assert t.parent("z") == "n1" and t.height == depth - 1
    assert t.dag_projection == [ProjectionChoice("z", "n1", (f"n{depth - 2}",), "depth")]


def test_nested_dict_of_depth_500_from_nested():
    d = None
    for i in reversed(range(500)):
        d = {f"k{i}": d if d is not None else ["a", "b"]}
    t = LabelTree.from_nested(d)
    assert t.height == 500 and t.leaves == ["a", "b"]
