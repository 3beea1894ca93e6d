"""Tree-triplet sampler (Paper 04 §II-B): the LCA rule, reachability, seeds, shards, batches."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierviz.hierarchy import LabelTree
from hierviz.samplers import SAMPLERS, TreeTripletBatchSampler, TreeTripletSampler, triplet_templates


@st.composite
def trees_and_labels(draw):
    """A random tree (2..14 nodes, any depth) and 0..3 samples per leaf."""
    n = draw(st.integers(3, 14))
    parents = {"n0": None}
    for i in range(1, n):
        parents[f"n{i}"] = f"n{draw(st.integers(0, i - 1))}"
    tree = LabelTree.from_parents(parents)
    counts = draw(st.lists(st.integers(0, 3), min_size=tree.num_leaves, max_size=tree.num_leaves))
    labels = np.repeat(np.arange(tree.num_leaves), counts)
    perm = draw(st.permutations(list(range(len(labels))))) if len(labels) else []
    return tree, labels[np.asarray(perm, dtype=np.int64)] if len(labels) else labels


def reference_templates(tree: LabelTree, present: np.ndarray) -> set[tuple[str, str, str]]:
    """§II-B read literally, with plain recursion over node names."""

    def has_samples(n: str) -> bool:
        return any(present[tree.leaf_index[leaf]] for leaf in tree.leaves_under(n))

    out: set[tuple[str, str, str]] = set()

    def visit(n: str) -> None:
        ch = [c for c in tree.children(n) if has_samples(c)]
        if len(ch) > 1:  # "iterating over parent nodes with more than one child"
            for na in ch:
                for nn in ch:
                    if na == nn:
                        continue
                    sub = [c for c in tree.children(na) if has_samples(c)]
                    if len(sub) < 2:  # "if n_a only has one child": anchor and positive from it
                        out.add((na, na, nn))
                    else:  # "choose all possible children pairs under it" (unordered, as the authors' code)
                        for i, a in enumerate(sub):
                            for p in sub[i + 1 :]:
                                out.add((a, p, nn))
        for c in tree.children(n):
            visit(c)

    visit(tree.root)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees_and_labels(), st.integers(0, 3))
def test_every_triplet_obeys_the_lca_rule(data, seed):
    tree, labels = data
    try:
        s = TreeTripletSampler(labels, tree, seed=seed, repeats=2)
    except ValueError as exc:
        assert "no tree triplet is possible" in str(exc)
        return
    trip = np.asarray(list(s))
    assert trip.shape == (len(s), 3)
    la, lp, ln = (labels[trip[:, k]] for k in range(3))
    lca = tree.lca(la, lp).numpy()
    anc = tree.ancestor_matrix.numpy()
    assert not anc[ln, lca].any(), "a negative lies inside the anchor/positive LCA subtree"
    assert (trip[:, 0] != trip[:, 1]).all(), "anchor and positive must be different samples"


@settings(max_examples=60, deadline=None)
@given(trees_and_labels())
def test_templates_match_the_paper_rule_and_reach_every_node(data):
    tree, labels = data
    present = np.bincount(labels, minlength=tree.num_leaves) > 0
    got = {tuple(tree.nodes[i] for i in row) for row in triplet_templates(tree, present)}
    assert got == reference_templates(tree, present)
    if not got:
        return
    # every node with samples below a branching ancestor is a negative side, and every present
    # leaf can be drawn in each role (anchor/positive/negative nodes cover it)
    for col in range(3):
        covered = set().union(*(set(tree.leaves_under(t[col])) for t in got))
        assert {tree.leaves[i] for i in np.flatnonzero(present)} <= covered


def test_sampling_inside_a_node_reaches_every_sample():
    tree = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z", "w"]}})
    labels = np.array([0, 0, 0, 1, 1, 2, 2, 3, 3])  # two or more samples per leaf
    s = TreeTripletSampler(labels, tree, seed=0)
    seen = [set(), set(), set()]
    for e in range(40):
        s.set_epoch(e)
        for t in s:
            for k in range(3):
                seen[k].add(t[k])
    assert seen[0] == seen[1] == seen[2] == set(range(9))


def test_hand_case_small_tree():
    tree = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    labels = np.array([0, 1, 2, 2])  # x: 1 sample, y: 1, z: 2
    s = TreeTripletSampler(labels, tree, seed=0)
    names = {tuple(tree.nodes[i] for i in row) for row in s.templates}
    # (x, x, y) and (y, y, x) need two samples of one leaf: dropped
    assert names == {("x", "y", "b"), ("b", "b", "a")}
    assert len(s) == 2
    for a, p, n in s:  # x/y pairs take a negative from b = {2, 3}; b's pair {2, 3} one from a = {0, 1}
        assert ({a, p} == {0, 1} and n in (2, 3)) or ({a, p} == {2, 3} and n in (0, 1))


@settings(max_examples=30, deadline=None)
@given(trees_and_labels(), st.integers(0, 5))
def test_reproducible_by_seed_and_epoch(data, seed):
    tree, labels = data
    try:
        s1 = TreeTripletSampler(labels, tree, seed=seed)
    except ValueError:
        return
    s2 = TreeTripletSampler(labels, tree, seed=seed)
    s1.set_epoch(3)
    s2.set_epoch(3)
    assert list(s1) == list(s2)


def test_epochs_and_seeds_differ():
    tree = LabelTree.from_nested({"r": {"a": ["x", "y", "v"], "b": ["z", "w"]}})
    labels = np.repeat(np.arange(5), 10)
    s = TreeTripletSampler(labels, tree, seed=0)
    e0 = s.epoch_triplets().copy()
    s.set_epoch(1)
    assert not np.array_equal(e0, s.epoch_triplets())
    assert not np.array_equal(e0, TreeTripletSampler(labels, tree, seed=1).epoch_triplets())


@settings(max_examples=40, deadline=None)
@given(trees_and_labels(), st.integers(1, 4), st.integers(1, 3))
def test_shards_are_disjoint_and_cover_the_epoch(data, replicas, repeats):
    tree, labels = data
    try:
        full = TreeTripletSampler(labels, tree, seed=7, repeats=repeats)
    except ValueError:
        return
    shards = [
        TreeTripletSampler(labels, tree, seed=7, repeats=repeats, num_replicas=replicas, rank=r).epoch_triplets()
        for r in range(replicas)
    ]
    assert {len(x) for x in shards} == {-(-full.num_triplets // replicas)}
    # interleaving the shards gives the single-process epoch (padded by wrapping): positions are disjoint
    inter = np.stack(shards, axis=1).reshape(-1, 3)
    epoch = full.epoch_triplets()
    assert np.array_equal(inter[: len(epoch)], epoch)
    assert np.array_equal(inter[len(epoch) :], np.resize(epoch, (len(inter), 3))[len(epoch) :])


def test_batch_sampler_layout_and_registry_hook():
    tree = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z", "w"]}})
    labels = np.repeat(np.arange(4), 6)
    bs = SAMPLERS.get("tree-triplet")(labels=labels, tree=tree, batch_size=9, seed=0)
    assert isinstance(bs, TreeTripletBatchSampler) and bs.triplets_per_batch == 3
    batches = list(bs)
    assert len(batches) == len(bs) and all(len(b) == 9 for b in batches)
    flat = np.asarray(batches[0]).reshape(-1, 3)
    assert np.array_equal(flat, bs.sampler.epoch_triplets()[:3])
    # the epoch is about N samples: repeats = round(N / (3 T))
    assert bs.sampler.repeats == max(1, round(24 / (3 * len(bs.sampler.templates))))
    bs.set_epoch(2)
    assert bs.sampler.epoch == 2


def test_errors():
    tree = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    with pytest.raises(ValueError, match="leaf indices in"):
        TreeTripletSampler([0, 5], tree)
    with pytest.raises(ValueError, match="1-D array of leaf indices"):
        TreeTripletSampler([[0, 1]], tree)
    with pytest.raises(ValueError, match="rank must be in"):
        TreeTripletSampler([0, 1, 2], tree, num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        TreeTripletSampler([0, 1, 2], tree, repeats=0)
    with pytest.raises(ValueError, match="no tree triplet is possible"):
        TreeTripletSampler([0, 0, 0], LabelTree.from_nested({"r": ["x", "y"]}))
    with pytest.raises(ValueError, match="triplets_per_batch"):
        TreeTripletBatchSampler(TreeTripletSampler([0, 1, 2], tree), 0)
