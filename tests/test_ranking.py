"""Paper 04 ranking metrics (RP@k, MNR, NDCG_sum/max): loops from the paper text, sklearn, the authors' MNR."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score

from hierviz.hierarchy import LabelTree
from hierviz.metrics import mean_normalised_rank, ndcg, tree_relevance
from hierviz.metrics.ranking import mnr, mnr_levels, ndcg_tree, ranking_report, rp_at_k

TREE = LabelTree.from_nested({"r": {"a": {"a1": ["x", "y"], "a2": ["w"]}, "b": ["z", "v"]}})


# ----------------------------------------------------------------------------- loops from the paper
def ranked(row_scores, candidates):
    """Candidates sorted by decreasing similarity, ties in candidate order."""
    return sorted(candidates, key=lambda g: -row_scores[g])


def candidates_of(i, G, exclude_self):
    return [g for g in range(G) if not (exclude_self and g == i)]


def tied_groups(row_scores, candidates):
    """The candidates in groups of equal score, best group first (the order inside a group is not a ranking)."""
    values = sorted({row_scores[g] for g in candidates}, reverse=True)
    return [[g for g in candidates if row_scores[g] == v] for v in values]


def loop_rp(S, yq, yg, k, exclude_self):
    """RP@k expected over the orders of tied candidates: the group that straddles k counts in proportion."""
    out = []
    for i in range(len(yq)):
        hits, left = 0.0, k
        for group in tied_groups(S[i], candidates_of(i, len(yg), exclude_self)):
            take = min(left, len(group))
            hits += take * sum(yg[g] == yq[i] for g in group) / len(group)
            left -= take
        out.append(hits / k)
    return float(np.mean(out))


def loop_mnr(S, yq, yg, tree, exclude_self):
    """§III-D.2: 'on the path from q_i's leaf node to the root, samples from the j-th node are
    considered similar'; levels with one node skipped; r = rank shifted by 1, divided by N."""
    levels = []
    for lv in range(1, tree.height + 1):
        if len({int(tree.leaf_paths[c, lv]) for c in range(tree.num_leaves)}) > 1:
            levels.append(lv)
    per_query = []
    for i in range(len(yq)):
        cand = ranked(S[i], candidates_of(i, len(yg), exclude_self))
        N = len(cand)
        terms = []
        for lv in levels:
            node = int(tree.leaf_paths[yq[i], lv])
            ranks = [r for r, g in enumerate(cand) if int(tree.leaf_paths[yg[g], lv]) == node]
            if ranks:
                terms.append(sum(r / N for r in ranks) / len(ranks))
        if terms:
            per_query.append(sum(terms) / len(terms))
    return float(np.mean(per_query))


def edges_up(tree, leaf, anc):
    return tree.depth(leaf) - tree.depth(anc)


def loop_rel(tree, a, b, relevance):
    la, lb = tree.leaves[a], tree.leaves[b]
    lca = tree.nodes[int(tree.lca(torch.tensor([a]), torch.tensor([b]))[0])]
    da, db = edges_up(tree, la, lca), edges_up(tree, lb, lca)
    if relevance == "sum":
        diam = max(
            edges_up(tree, tree.leaves[i], tree.nodes[int(tree.lca_matrix[i, j])])
            + edges_up(tree, tree.leaves[j], tree.nodes[int(tree.lca_matrix[i, j])])
            for i in range(tree.num_leaves)
            for j in range(tree.num_leaves)
        )
        return 1 - (da + db) / diam
    return 1 - max(da, db) / tree.height


def loop_ndcg(S, yq, yg, tree, relevance, exclude_self):
    out = []
    for i in range(len(yq)):
        cand = candidates_of(i, len(yg), exclude_self)
        rel = {g: loop_rel(tree, yq[i], yg[g], relevance) for g in cand}
        gains = [sum(rel[g] for g in group) / len(group) for group in tied_groups(S[i], cand) for _ in group]
        dcg = sum(gain / math.log2(j + 2) for j, gain in enumerate(gains))  # tied items share their mean gain
        idcg = sum(r / math.log2(j + 2) for j, r in enumerate(sorted(rel.values(), reverse=True)))
        if idcg > 0:
            out.append(dcg / idcg)
    return float(np.mean(out))


def authors_mnr(sim, per_level_labels, fixed=True):
    """A port of frdysf/label-metric lightning_modules._compute_mnr (leave-one-out, nanmean over
    levels); ``fixed=False`` is the precedence slip the issue reports, ``r / n - 1``."""
    n, levels = per_level_labels.shape
    per_query = []
    for i in range(n):
        s = torch.cat([sim[i, :i], sim[i, i + 1 :]])
        _, idx = torch.sort(s, descending=True, stable=True)
        vals = []
        for j in range(levels):
            lab = torch.cat([per_level_labels[:i, j], per_level_labels[i + 1 :, j]])
            same = (lab == per_level_labels[i, j]).nonzero(as_tuple=True)[0]
            r = (idx.unsqueeze(1) == same).nonzero(as_tuple=True)[0].double()
            vals.append(torch.mean(r / (n - 1)) if fixed else torch.mean(r / n - 1))
        per_query.append(torch.nanmean(torch.stack(vals)))
    return float(torch.mean(torch.stack(per_query)))


@st.composite
def ranking_case(draw):
    n = draw(st.integers(3, 12))
    parents = {"n0": None}
    for i in range(1, n):
        parents[f"n{i}"] = f"n{draw(st.integers(0, i - 1))}"
    tree = LabelTree.from_parents(parents)
    if tree.num_leaves < 2:
        parents["extra"] = "n0"
        tree = LabelTree.from_parents(parents)
    G = draw(st.integers(3, 14))
    y = np.asarray(draw(st.lists(st.integers(0, tree.num_leaves - 1), min_size=G, max_size=G)))
    seed = draw(st.integers(0, 2**16))
    S = np.random.default_rng(seed).normal(size=(G, G))
    if draw(st.booleans()):  # ties
        S = np.round(S)
    return tree, y, S


@settings(max_examples=80, deadline=None)
@given(ranking_case(), st.booleans())
def test_vectorised_equals_the_paper_loops(case, exclude_self):
    tree, y, S = case
    if not mnr_levels(tree):
        return
    k = min(3, len(y) - int(exclude_self))
    assert rp_at_k(S, y, y, tree, k, exclude_self=exclude_self) == pytest.approx(loop_rp(S, y, y, k, exclude_self))
    try:
        want = loop_mnr(S, y, y, tree, exclude_self)
    except Exception:  # every query without any correct answer
        want = None
    if want is not None and not math.isnan(want):
        assert mnr(S, y, y, tree, exclude_self=exclude_self) == pytest.approx(want, abs=1e-12)
    for rel in ("sum", "max"):
        cand = [loop_ndcg(S, y, y, tree, rel, exclude_self)]
        if not math.isnan(cand[0]):
            got = ndcg_tree(S, y, y, tree, rel, exclude_self=exclude_self)
            assert got == pytest.approx(cand[0], abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(ranking_case())
def test_mnr_equals_the_authors_code_and_explains_their_negative_ranks(case):
    tree, y, S = case
    levels = mnr_levels(tree)
    if not levels:
        return
    n = len(y)
    labels = tree.leaf_paths[torch.as_tensor(y)][:, levels]
    theirs = authors_mnr(torch.as_tensor(S), labels)
    if math.isnan(theirs):
        return
    # their mean over queries includes a query only through its defined levels: same as ours
    ours = mnr(S, y, y, tree, exclude_self=True)
    assert ours == pytest.approx(theirs, abs=1e-12)
    # the reported precedence slip: r / n - 1 = (n - 1) / n * ours - 1, always negative
    slip = authors_mnr(torch.as_tensor(S), labels, fixed=False)
    assert slip == pytest.approx((n - 1) / n * ours - 1, abs=1e-12) and slip < 0


def test_equal_to_the_retrieval_module_where_defined():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(TREE.num_leaves), 3)
    S = rng.normal(size=(len(y), len(y)))
    assert mnr(S, y, y, TREE, exclude_self=True) == pytest.approx(
        mean_normalised_rank(S, y, y, TREE, kind="score", exclude_self=True)
    )
    for rel in ("sum", "max"):
        assert ndcg_tree(S, y, y, TREE, rel, exclude_self=True) == pytest.approx(
            ndcg(S, y, y, TREE, kind="score", relevance=rel, exclude_self=True)
        )


def test_ndcg_equals_sklearn_without_ties():
    rng = np.random.default_rng(1)
    y = rng.integers(0, TREE.num_leaves, size=20)
    S = rng.normal(size=(20, 20))
    for rel in ("sum", "max"):
        R = tree_relevance(TREE, rel).numpy()[y][:, y]
        off = ~np.eye(20, dtype=bool)
        true, score = R[off].reshape(20, 19), S[off].reshape(20, 19)
        keep = true.sum(1) > 0
        want = ndcg_score(true[keep], score[keep])
        assert ndcg_tree(S, y, y, TREE, rel, exclude_self=True) == pytest.approx(want, abs=1e-12)


def test_hand_cases_and_limits():
    # a perfect ranking: NDCG 1, RP@1 1; MNR reaches its floor (M - 1) / (2N) per level, not 0
    y = np.array([0, 0, 1, 1])  # leaves x, y under a1
    z = torch.tensor([[1.0, 0.0], [0.99, 0.01], [0.0, 1.0], [0.01, 0.99]])
    S = z @ z.T
    r = ranking_report(z, y, TREE, k=1)
    assert r["rp5"] == 1.0 and r["ndcg_sum"] == pytest.approx(1.0) and r["ndcg_max"] == pytest.approx(1.0)
    # levels of TREE with > 1 node: 1 (a, b), 2 (a1, a2, z, v), 3 (leaves); query 0, N = 3
    # level 1: all 3 candidates correct -> (0 + 1 + 2) / 3 / 3 = 1/3; level 2 (a1): same, 1/3;
    # level 3 (x): only item 1 at rank 0 -> 0
    assert mnr(S, y, y, TREE, exclude_self=True) == pytest.approx((1 / 3 + 1 / 3 + 0) / 3)
    # reversing the ranking makes every metric worse
    assert mnr(-S, y, y, TREE, exclude_self=True) > mnr(S, y, y, TREE, exclude_self=True)
    assert ndcg_tree(-S, y, y, TREE, exclude_self=True) < 1.0
    assert rp_at_k(-S, y, y, TREE, 1, exclude_self=True) == 0.0


def test_undefined_terms_omit_or_raise():
    y = np.array([0, 1, 2])  # every leaf once: no correct answer at the leaf level under leave-one-out
    S = np.eye(3)
    assert 0 <= mnr(S, y, y, TREE, exclude_self=True) < 1
    with pytest.raises(ValueError, match="undefined for 3 queries"):
        mnr(S, y, y, TREE, exclude_self=True, undefined="raise")
    flat = LabelTree.from_nested({"r": ["p", "q"]})
    with pytest.raises(ValueError, match="undefined for every query"):
        ndcg_tree(np.eye(2), [0, 1], [0, 1], flat, "max", exclude_self=True)
    assert math.isnan(ranking_report(np.eye(2), [0, 1], flat)["ndcg_max"])


def test_errors():
    S = np.zeros((2, 3))
    with pytest.raises(ValueError, match="square scores matrix"):
        mnr(S, [0, 1], [0, 1, 2], TREE, exclude_self=True)
    with pytest.raises(ValueError, match="k must be in \\[1, 3\\]"):
        rp_at_k(S, [0, 1], [0, 1, 2], TREE, k=4)
    with pytest.raises(ValueError, match="query_labels must have shape \\(2,\\)"):
        rp_at_k(S, [0], [0, 1, 2], TREE)
    with pytest.raises(ValueError, match="gallery_labels must be leaf indices"):
        rp_at_k(S, [0, 1], [0, 1, 9], TREE)
    with pytest.raises(TypeError, match="integer leaf indices"):
        rp_at_k(S, [0.5, 1.0], [0, 1, 2], TREE)
    with pytest.raises(ValueError, match="NaN or inf"):
        mnr(np.full((2, 3), np.nan), [0, 1], [0, 1, 2], TREE)
    with pytest.raises(ValueError, match="relevance must be 'sum' or 'max'"):
        ndcg_tree(S, [0, 1], [0, 1, 2], TREE, "rho")
    with pytest.raises(ValueError, match="undefined must be 'omit' or 'raise'"):
        ndcg_tree(S, [0, 1], [0, 1, 2], TREE, undefined="skip")
