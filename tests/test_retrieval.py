"""Retrieval (Paper 03 (Hyper-DINO) §2.4, §3.1): MAP@k variants, R-precision, the reference index,
fp16 tangent storage, the retrieval protocol and its CLI."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pytorch_metric_learning.utils.accuracy_calculator import mean_average_precision

from hierviz.metrics import MAP_DENOMINATORS, map_at_k, precision_at_k, r_precision


# --------------------------------------------------------------------------- brute-force references
def _ap_brute(dist_row, yq, yg, k, denominator):
    """AP@k of one query by plain Python: sort, walk the list, divide."""
    ranked = [yg[j] for j in sorted(range(len(yg)), key=lambda j: (dist_row[j], j))]
    R = sum(1 for y in yg if y == yq)
    kk = R if k is None else k
    hits, total = 0, 0.0
    for j in range(kk):
        if ranked[j] == yq:
            hits += 1
            total += hits / (j + 1)
    n = {"min_k_r": min(kk, R), "r": R, "k": kk, "hits": hits}[denominator]
    return 0.0 if n == 0 else total / n


def _r_precision_brute(dist_row, yq, yg):
    ranked = [yg[j] for j in sorted(range(len(yg)), key=lambda j: (dist_row[j], j))]
    R = sum(1 for y in yg if y == yq)
    return sum(1 for y in ranked[:R] if y == yq) / R


@st.composite
def _retrieval_case(draw):
    G = draw(st.integers(2, 14))
    Q = draw(st.integers(1, 6))
    C = draw(st.integers(1, 3))
    yg = draw(st.lists(st.integers(0, C - 1), min_size=G, max_size=G))
    present = sorted(set(yg))
    yq = draw(st.lists(st.sampled_from(present), min_size=Q, max_size=Q))
    # integer-valued distances make ties common: the stable (gallery-order) tie rule is tested too
    dist = draw(st.lists(st.lists(st.integers(0, 5), min_size=G, max_size=G), min_size=Q, max_size=Q))
    k = draw(st.one_of(st.none(), st.integers(1, G)))
    return np.array(dist, dtype=float), yq, yg, k


@settings(max_examples=150, deadline=None)
@given(case=_retrieval_case(), denominator=st.sampled_from(MAP_DENOMINATORS))
def test_map_at_k_every_denominator_equals_brute_force(case, denominator):
    dist, yq, yg, k = case
    got = map_at_k(dist, yq, yg, k=k, denominator=denominator, reduction="none")
    ref = [_ap_brute(dist[i], yq[i], yg, k, denominator) for i in range(len(yq))]
    assert got.tolist() == pytest.approx(ref, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(case=_retrieval_case())
def test_r_precision_equals_brute_force(case):
    dist, yq, yg, _ = case
    got = r_precision(dist, yq, yg, reduction="none")
    assert got.tolist() == pytest.approx([_r_precision_brute(dist[i], yq[i], yg) for i in range(len(yq))])


def test_map_hand_values_and_aliases():
    d = torch.arange(5.0)[None]
    yq, yg = [0], [0, 1, 0, 1, 0]  # R = 3, relevant at ranks 1, 3, 5
    assert map_at_k(d, yq, yg, k=2) == pytest.approx(1 / 2)
    assert map_at_k(d, yq, yg, k=2, denominator="r") == pytest.approx(1 / 3)
    assert map_at_k(d, yq, yg, k=2, denominator="pytorch-metric-learning") == pytest.approx(1 / 3)
    assert map_at_k(d, yq, yg, k=2, denominator="torchmetrics") == pytest.approx(1.0)
    assert map_at_k(d, yq, yg, k=5) == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert map_at_k(d, yq, yg, k=5, denominator="k") == pytest.approx((1 + 2 / 3 + 3 / 5) / 5)
    assert precision_at_k(d, yq, yg, k=1) == 1.0
    assert r_precision(d, yq, yg) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match=r"denominator must be one of \['min_k_r', 'r', 'k', 'hits'\]"):
        map_at_k(d, yq, yg, k=2, denominator="R")


def test_denominator_r_equals_pytorch_metric_learning():
    g = np.random.default_rng(0)
    Q, G, k = 30, 50, 10
    yg = g.integers(0, 4, G)
    yq = g.integers(0, 4, Q)
    dist = g.random((Q, G))
    order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    labels, counts = np.unique(yg, return_counts=True)
    pml = mean_average_precision(  # as AccuracyCalculator calls it with k neighbours
        torch.as_tensor(yg[order]),
        torch.as_tensor(yq)[:, None],
        False,
        (torch.as_tensor(labels), torch.as_tensor(counts)),
        False,
        False,
        torch.eq,
    )
    assert map_at_k(dist, yq, yg, k=k, denominator="r") == pytest.approx(float(pml), abs=1e-12)
