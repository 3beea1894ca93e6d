"""HTC metrics (Paper 05 §5.3/§5.5): hierarchical_f1 hand cases, per level, long-tail buckets."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from hierviz.hierarchy import LabelTree
from hierviz.metrics import frequency_bucket_f1, hierarchical_f1, hierarchy_consistent, per_level_f1

TREE = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})  # root, a, b, a1, a2, b1


def rows(*names_per_row):
    y = np.zeros((len(names_per_row), TREE.num_nodes), dtype=bool)
    for i, names in enumerate(names_per_row):
        for n in names:
            y[i, TREE.node_index[n]] = True
    return y


def test_perfect_and_empty():
    t = rows(["a", "a1"], ["b", "b1"])
    r = hierarchical_f1(t, t, TREE)
    assert r == {"micro_f1": 1.0, "macro_f1": 1.0, "hi_micro_f1": 1.0, "hi_macro_f1": 1.0}
    # a2 is in neither y_true nor y_pred: left out of the macro average (0.2 gave 4/5)


def test_hand_case_hi_drops_orphans():
    t = rows(["a", "a1"], ["b", "b1"], ["a", "a2"])
    p = rows(["a", "a1"], ["b1"], ["a2", "b"])
    # plain: TP = a,a1,b1,a2 (4); FP = b (row 3) (1); FN = b (row 2), a (row 3) (2)
    r = hierarchical_f1(t, p, TREE)
    assert r["micro_f1"] == pytest.approx(2 * 4 / (2 * 4 + 1 + 2))
    # Hi: b1 in row 2 lacks b -> dropped; a2 in row 3 lacks a -> dropped
    # TP = a, a1 (2); FP = b (row 3) (1); FN = b, b1, a, a2 (4)
    assert r["hi_micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 1 + 4))
    # Hi macro by hand: a: tp1 fn1 -> 2/3; b: tp0 fp1 fn1 -> 0; a1: 1; a2: tp0 fn1 -> 0; b1: tp0 fn1 -> 0
    assert r["hi_macro_f1"] == pytest.approx((2 / 3 + 0 + 1 + 0 + 0) / 5)
    cols = [1, 2, 3, 4, 5]
    assert r["macro_f1"] == pytest.approx(f1_score(t[:, cols], p[:, cols], average="macro", zero_division=0))


def test_root_column_ignored_and_consistent_predictions_equal():
    t = rows(["a", "a1"], ["b", "b1"])
    p = rows(["a", "a2"], ["b", "b1"])
    p2 = p.copy()
    p2[:, 0] = True
    assert hierarchical_f1(t, p, TREE) == hierarchical_f1(t, p2, TREE)
    r = hierarchical_f1(t, p, TREE)
    assert r["micro_f1"] == r["hi_micro_f1"] and r["macro_f1"] == r["hi_macro_f1"]


def test_deeper_chain_needs_every_ancestor():
    tree = LabelTree.from_nested({"root": {"x": {"y": ["z"]}, "w": ["v"]}})
    y = np.zeros((1, tree.num_nodes), bool)
    for n in ("x", "z"):
        y[0, tree.node_index[n]] = True
    hi = hierarchy_consistent(y, tree)
    assert hi[0, tree.node_index["x"]] and not hi[0, tree.node_index["z"]]  # z needs y as well as x


def test_bad_input():
    with pytest.raises(ValueError, match="tree.num_nodes"):
        hierarchical_f1(np.zeros((2, 3), bool), np.zeros((2, 3), bool), TREE)
    with pytest.raises(ValueError, match="boolean"):
        hierarchical_f1(np.full((1, 6), 2), np.zeros((1, 6), bool), TREE)


def test_per_level_and_buckets():
    t = rows(["a", "a1"], ["b", "b1"], ["a", "a2"])
    p = rows(["a", "a1"], ["b", "a2"], ["a", "a2"])
    lv = per_level_f1(t, p, TREE)
    assert [r["level"] for r in lv] == [1, 2] and [r["labels"] for r in lv] == [2, 3]
    assert lv[0]["micro_f1"] == 1.0
    # level 2: TP a1, a2 (row 3); FP a2 (row 2); FN b1 -> 2·2/(4+1+1)
    assert lv[1]["micro_f1"] == pytest.approx(4 / 6)
    counts = t.sum(0)  # a 2, b 1, a1 1, a2 1, b1 1
    b = frequency_bucket_f1(t, p, TREE, counts, buckets=2)
    assert [r["labels"] for r in b] == [3, 2] and b[0]["max_count"] == 2
    # C1 = a, b, a1 (stable order among ties): all right; C2 = a2, b1
    assert b[0]["micro_f1"] == 1.0
    assert b[1]["micro_f1"] == pytest.approx(2 * 1 / (2 + 1 + 1))
    named = frequency_bucket_f1(t, p, TREE, {"a": 2, "b": 1, "a1": 1, "a2": 1, "b1": 1}, buckets=2)
    assert named == b
    with pytest.raises(ValueError, match="buckets"):
        frequency_bucket_f1(t, p, TREE, counts, buckets=9)
