"""Ties in a ranking: the groups of equal scores and the expected counts over their orders.

Gallery items at the same distance from a query have no order between them, so a ranking
metric is taken as its expectation over every order of each tied group, each equally likely
(McSherry & Najork 2008, *Computing information retrieval performance measures efficiently in
the presence of tied scores*). :mod:`hierviz.metrics.retrieval` and :mod:`hierviz.metrics.ranking`
build their metrics on :func:`tie_groups` and :func:`expected_hits`; without ties both return
the plain values (and :func:`tie_groups` returns None, the fast path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["TIE_ULPS", "Ties", "eps_of", "tie_groups", "expected_hits", "hit_rate"]


class Ties:
    """The groups of equal scores along each ranked row: the first rank, the index and the size of each rank's group."""

    def __init__(self, new: torch.Tensor) -> None:
        Q, G = new.shape
        ranks = torch.arange(G).expand(Q, G)
        self.start = torch.where(new, ranks, 0).cummax(1).values  # (Q, G) first rank of the group
        self.gid = new.long().cumsum(1) - 1  # (Q, G) the group's index along the row
        self.size = self.group_sum(torch.ones(Q, G, dtype=torch.float64))  # (Q, G) items in the group

    def group_sum(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (Q, G) float64 in rank order summed over each rank's group, (Q, G)."""
        return torch.zeros_like(x).scatter_add_(1, self.gid, x).gather(1, self.gid)

    def before(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (Q, G) float64 in rank order summed over the ranks before each rank's group, (Q, G)."""
        return (x.cumsum(1) - x).gather(1, self.start)


#: Ranked scores closer than this many units in the last place of the input's precision are tied.
TIE_ULPS = 4


def eps_of(scores: Any) -> float:
    """Machine epsilon of the scores as given (float16/32/64 tensor or array); 0 for integers."""
    dtype = getattr(scores, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
    arr = np.asarray(scores)
    return float(np.finfo(arr.dtype).eps) if arr.dtype.kind == "f" else 0.0


def tie_groups(s_sorted: torch.Tensor, eps: float = 0.0) -> Ties | None:
    """The tie groups of the sorted scores (Q, G); None when no two neighbours are tied (the common case).

    Neighbours tie when they differ by at most ``TIE_ULPS · eps · |score|``, ``eps`` being the
    machine epsilon of the scores as given (0 for integers: exact equality): two distances of one
    point, computed through different GEMM tiles and rounded to float32, can differ in the last
    place, and that rounding is not an order.
    """
    gap = (s_sorted[:, :-1] - s_sorted[:, 1:]).abs()
    scale = torch.maximum(s_sorted[:, :-1].abs(), s_sorted[:, 1:].abs())
    same = (gap <= TIE_ULPS * eps * scale) & torch.isfinite(gap)  # an excluded item (-inf) ties with nothing
    if not bool(same.any()):
        return None
    new = torch.ones_like(s_sorted, dtype=torch.bool)
    new[:, 1:] = ~same
    return Ties(new)


def expected_hits(R: torch.Tensor, ties: Ties | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Expected relevance, hits and relevance × hits at every rank, over the orders of the tied groups.

    ``R`` (Q, G) bool: relevance in rank order. Returns float64 (Q, G) tensors ``rel`` (E[r_j]),
    ``hits`` (E[number relevant in the top j]) and ``rel_hits`` (E[r_j · hits_j]). In a group of
    ``n`` items, ``r`` relevant, starting after ``b`` relevant items, at its ``t``-th rank:
    E[r_j] = r/n, E[hits_j] = b + t·r/n and E[r_j hits_j] = (r/n)(b + 1 + (t − 1)(r − 1)/(n − 1))
    (McSherry & Najork 2008). Without ties these are ``R``, its running sum and their product.
    """
    Rf = R.double()
    if ties is None:
        hits = Rf.cumsum(1)
        return Rf, hits, Rf * hits
    n = ties.size
    p = ties.group_sum(Rf) / n
    before = ties.before(Rf)  # relevant items ranked before the group
    t = (torch.arange(1, R.shape[1] + 1) - ties.start).double()  # the rank's place in its group, 1..n
    hits = before + t * p
    rel_hits = p * (before + 1.0 + (t - 1.0) * (p * n - 1.0) / (n - 1.0).clamp_min(1.0))
    return p, hits, rel_hits


def hit_rate(R: torch.Tensor, ties: Ties | None, k: int) -> torch.Tensor:
    """Per-query probability (Q,) float64 that the top ``k`` holds a relevant item, over the orders of tied groups.

    The group that straddles rank ``k`` contributes ``t`` of its ``n`` items (``r`` relevant):
    none of them is relevant with the hypergeometric probability C(n − r, t) / C(n, t).
    """
    if ties is None:
        return R[:, :k].any(1).double()
    j, Rf = k - 1, R.double()
    before, n, r = ties.before(Rf)[:, j], ties.size[:, j], ties.group_sum(Rf)[:, j]
    t = (j + 1 - ties.start[:, j]).double()
    lg = torch.lgamma
    none = torch.where(n - r >= t, torch.exp(lg(n - r + 1) - lg(n - r - t + 1) - lg(n + 1) + lg(n - t + 1)), 0.0)
    return torch.where(before >= 1, 1.0, 1.0 - none)
