r"""The ranking metrics of Paper 04 (Generalised triplets) §III-D.2: leaf RP@k, MNR, NDCG_sum/max.

Each query ranks the candidates by similarity (the paper: cosine similarity of the
embeddings, "in descending order"). Tied candidates have no order between them: RP@k and NDCG
are the expected values over the orders of each tied group (:func:`hierviz.metrics.ties.expected_hits`; McSherry &
Najork 2008), MNR keeps candidate order (a stable sort). The usual
setting is leave-one-out on one set (``exclude_self=True``: the test set queried against
itself, as the authors' evaluation). Everything is vectorised over queries, candidates and
tree levels (one (Q, G) sort, no Python loop), evaluated in float64 on the CPU.

* :func:`rp_at_k` -- leaf retrieval precision at k: the share of the k nearest candidates
  that have the query's leaf.
* :func:`mnr` -- the hierarchical mean normalised rank (lower is better), Paper 04 (Generalised triplets), the equation of
  §III-D.2: for each level with more than one node, the mean of the correct answers' ranks
  shifted by 1 and divided by the number of candidates N, so each term lies in [0, 1).
* :func:`ndcg_tree` -- NDCG over the whole ranking with graded relevance
  :math:`1 - d_{sum}/D_T` (NDCG_sum) or :math:`1 - d_{max}/H_T` (NDCG_max)
  (:func:`hierviz.metrics.tree_relevance`).
* :func:`ranking_report` -- all four from embeddings, the numbers of Table I.

Undefined terms (a query whose leaf has no other sample, so no correct answer at the leaf
level; a query with zero relevance to every candidate) are NaN and left out of the means by
default (``undefined="omit"``, as the authors' ``nanmean``); ``undefined="raise"`` refuses them.

**MNR and the authors' code.** tiianhk/label-metric computed
``same_label_ranks / num_samples - 1``, which by operator precedence is
:math:`r/N_s - 1 \in [-1, 0)`: every "rank" is negative. A later version of that code (the
fork frdysf/label-metric, ``lightning_modules.py``, ``_compute_mnr``) divides by
``(num_samples - 1)``, the number of leave-one-out candidates; that is this module's
:func:`mnr` with ``exclude_self=True`` (checked in ``tests/test_ranking.py``), and its values
lie in [0, 1) as the paper states.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hierviz.metrics._validate import as_embeddings, same_dim
from hierviz.metrics.ties import Ties, eps_of, expected_hits, tie_groups

__all__ = ["rp_at_k", "mnr", "ndcg_tree", "ranking_report", "mnr_levels", "tree_relevance", "RANKING_KEYS"]

#: Keys of :func:`ranking_report`.
RANKING_KEYS = ("rp5", "mnr", "ndcg_sum", "ndcg_max")


def _scores(scores: Any) -> torch.Tensor:
    S = scores if isinstance(scores, torch.Tensor) else torch.as_tensor(np.asarray(scores))
    if S.dtype == torch.bool or S.dtype.is_complex:
        raise TypeError(f"scores must be a real (Q, G) matrix, got dtype {S.dtype}")
    if S.ndim != 2 or S.shape[0] == 0 or S.shape[1] == 0:
        raise ValueError(f"scores must be a non-empty 2-D (Q, G) matrix of similarities, got shape {tuple(S.shape)}")
    S = S.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(S).all()):
        raise ValueError("scores holds NaN or inf")
    return S


def _labels(y: Any, n: int, name: str, tree: Any) -> torch.Tensor:
    t = y if isinstance(y, torch.Tensor) else torch.as_tensor(np.asarray(y))
    if t.ndim != 1 or t.numel() != n:
        raise ValueError(f"{name} must have shape ({n},) to match scores, got {tuple(t.shape)}")
    if t.dtype == torch.bool or t.dtype.is_floating_point or t.dtype.is_complex:
        raise TypeError(f"{name} must hold integer leaf indices, got dtype {t.dtype}")
    t = t.detach().to("cpu", torch.long)
    if int(t.min()) < 0 or int(t.max()) >= tree.num_leaves:
        raise ValueError(
            f"{name} must be leaf indices in [0, {tree.num_leaves - 1}], got {int(t.min())}..{int(t.max())}"
        )
    return t


def _ranked(scores: Any, yq: Any, yg: Any, tree: Any, exclude_self: bool):
    """Validated inputs; ``order`` (Q, G) best first, ``rank`` (Q, G) 0-based rank of each candidate
    (excluded items rank last), ``valid`` (Q, G) candidate mask, ``n`` (Q,) candidates per query,
    and the tie groups of the ranked scores (:func:`hierviz.metrics.ties.tie_groups`, None without ties)."""
    S = _scores(scores)
    Q, G = S.shape
    yq, yg = _labels(yq, Q, "query_labels", tree), _labels(yg, G, "gallery_labels", tree)
    valid = torch.ones(Q, G, dtype=torch.bool)
    if exclude_self:
        if Q != G:
            raise ValueError(f"exclude_self=True needs a square scores matrix (queries = candidates), got {(Q, G)}")
        if G < 2:
            raise ValueError("exclude_self=True with a single item leaves no candidate")
        valid.fill_diagonal_(False)
        S = S.clone()
        S.fill_diagonal_(-float("inf"))
    order = torch.argsort(S, dim=1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(G).expand(Q, G).contiguous())
    return order, rank, valid, yq, yg, valid.sum(1), tie_groups(S.gather(1, order), eps_of(scores))


def _reduce(per_query: torch.Tensor, undefined: str, what: str) -> float:
    if undefined not in ("omit", "raise"):
        raise ValueError(f"undefined must be 'omit' or 'raise', got {undefined!r}")
    bad = torch.isnan(per_query)
    if bool(bad.any()) and undefined == "raise":
        idx = torch.nonzero(bad).flatten()
        raise ValueError(
            f"{what} is undefined for {int(idx.numel())} queries (e.g. {idx[:5].tolist()}); "
            "pass undefined='omit' to leave them out"
        )
    if bool(bad.all()):
        raise ValueError(f"{what} is undefined for every query (no correct answer or no relevance anywhere)")
    return float(per_query[~bad].mean())


def rp_at_k(
    scores: Any, query_labels: Any, gallery_labels: Any, tree: Any, k: int = 5, *, exclude_self: bool = False
) -> float:
    """Leaf retrieval precision at k (leaf RP@k, Paper 04 (Generalised triplets) §III-D.2): mean share of same-leaf items in the top k.

    Parameters
    ----------
    scores : array-like or torch.Tensor, shape (Q, G), float
        Similarities (larger = closer), finite.
    query_labels : array-like of int, shape (Q,)
        Leaf indices (``tree.leaves`` order).
    gallery_labels : array-like of int, shape (G,)
    tree : LabelTree
    k : int, default 5
        In ``[1, number of candidates]``.
    exclude_self : bool, default False
        Leave-one-out on a square matrix.

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    ValueError
        Bad shapes, non-finite scores, labels outside the tree, ``k`` out of range.
    TypeError
        Non-integer labels or ``k``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> S = [[0.9, 0.8, 0.1]]  # one query of leaf x; candidates x, z, x
    >>> rp_at_k(S, [0], [0, 2, 0], t, k=2)
    0.5
    """
    order, rank, valid, yq, yg, n, ties = _ranked(scores, query_labels, gallery_labels, tree, exclude_self)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if not 1 <= int(k) <= int(n.min()):
        raise ValueError(f"k must be in [1, {int(n.min())}] (the number of candidates), got {k}")
    R = (yg[order] == yq[:, None]) & valid.gather(1, order)  # relevance in rank order
    return float(expected_hits(R, ties)[1][:, int(k) - 1].div(int(k)).mean())


def tree_relevance(tree: Any, relevance: str = "sum") -> torch.Tensor:
    r"""(C, C) graded relevance between leaves, from the tree (paper 04 §II.D.2).

    With :math:`d(n, m)` the number of edges from node :math:`n` up to its ancestor
    :math:`m`, :math:`a` = lca of the two leaves, :math:`D_T` the tree diameter (longest
    leaf-leaf path) and :math:`H_T` = ``tree.height``:

    * ``"sum"``: :math:`1 - (d(n_1, a) + d(n_2, a)) / D_T = 1 - d_T(n_1, n_2) / D_T`;
    * ``"max"``: :math:`1 - \max(d(n_1, a), d(n_2, a)) / H_T`;
    * ``"rho"``: :math:`\rho = \mathrm{depth}(a) / L` (paper 01 Eq. 4), 0 across the root.

    All are 1 on the diagonal for leaves at depth L ("sum"/"max": for every leaf), lie in
    [0, 1], and are 0 for the most distant pairs ("sum") / pairs meeting at the root
    from depth L ("max", "rho").

    Parameters
    ----------
    tree : hierviz.hierarchy.LabelTree
        Tree with at least two leaves.
    relevance : {"sum", "max", "rho"}, default "sum"
        Which grading.

    Returns
    -------
    torch.Tensor
        Shape (C, C), float64, symmetric, values in [0, 1].

    Raises
    ------
    ValueError
        Unknown ``relevance`` or a tree with a single leaf.

    Notes
    -----
    Paper 04 (*generalised triplets and per-level losses*), §II.D.2, rel_sum and rel_max;
    paper 01 Eq. 4 for ρ.
    """
    if tree.num_leaves < 2:
        raise ValueError("tree_relevance needs a tree with at least two leaves")
    dT = tree.tree_distance_matrix.double()
    if relevance == "sum":
        return 1.0 - dT / dT.max()
    if relevance == "max":
        depth = tree.leaf_depth.double()
        lca_depth = tree.node_depth[tree.lca_matrix].double()
        up = torch.maximum(depth[:, None] - lca_depth, depth[None, :] - lca_depth)
        return 1.0 - up / float(tree.height)
    if relevance == "rho":
        return tree.node_depth[tree.lca_matrix].double() / float(tree.height)
    raise ValueError(f"relevance must be one of 'sum', 'max', 'rho', got {relevance!r}")


def _mnr_per_level(
    rank: torch.Tensor, valid: torch.Tensor, yq: torch.Tensor, yg: torch.Tensor, n: torch.Tensor, tree: Any, levels
) -> tuple[torch.Tensor, torch.Tensor]:
    """MNR's per-level terms: (Q, L) mean normalised rank of the correct candidates (NaN where a
    query has none at a level) and (Q, L) their counts M. ``rank`` (Q, G) is 0-based in candidate
    order, ``valid`` (Q, G) the candidate mask, ``n`` (Q,) the number of candidates."""
    P = tree.leaf_paths[:, levels]  # (C, L)
    correct = (P[yq][:, None, :] == P[yg][None, :, :]) & valid[:, :, None]  # (Q, G, L)
    norm = rank.double() / n.double()[:, None]  # (Q, G) in [0, 1)
    M = correct.sum(1)  # (Q, L)
    return torch.einsum("qg,qgl->ql", norm, correct.double()) / M.double(), M


def _dcg(
    rel: torch.Tensor, order: torch.Tensor, k: int | None = None, *, ties: Ties | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """DCG of the ranking ``order`` (Q, G) and of the ideal order, over the first ``k`` ranks (all if None),
    for graded relevance ``rel`` (Q, G) in candidate order; both (Q,) float64. With ``ties`` the items of
    a tied group share its mean gain (the expected DCG over its orders, as ``sklearn.metrics.ndcg_score``)."""
    kk = rel.shape[1] if k is None else k
    disc = 1.0 / torch.log2(torch.arange(2, kk + 2, dtype=torch.float64))
    gain = rel.gather(1, order)
    if ties is not None:
        gain = ties.group_sum(gain) / ties.size
    dcg = (gain[:, :kk] * disc).sum(1)
    idcg = (rel.sort(1, descending=True).values[:, :kk] * disc).sum(1)
    return dcg, idcg


def mnr_levels(tree: Any) -> list[int]:
    """The levels MNR and PL use: depths 1..L with more than one node in ``tree.leaf_paths``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> mnr_levels(LabelTree.from_nested({"r": {"a": {"b": ["x", "y"]}}}))
    [3]
    """
    paths = tree.leaf_paths
    return [lv for lv in range(1, tree.height + 1) if torch.unique(paths[:, lv]).numel() > 1]


def mnr(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: Any,
    *,
    exclude_self: bool = False,
    undefined: str = "omit",
) -> float:
    r"""Hierarchical mean normalised rank (Paper 04 (Generalised triplets) §III-D.2; lower is better).

    .. math:: MNR = \frac{1}{Q}\sum_{i=1}^{Q} \frac{1}{L}\sum_{j=1}^{L} \frac{1}{M_{ij}}
              \sum_{k=1}^{M_{ij}} \frac{r_{ijk}}{N}

    :math:`L`: the levels with more than one node (:func:`mnr_levels`); :math:`M_{ij}`:
    candidates sharing the query's level-j node ("correct answers"); :math:`r_{ijk}`: their
    0-based ranks (1-based rank shifted by 1); :math:`N`: candidates per query. A leaf
    shallower than level j is its own level-j node (``tree.leaf_paths``).

    Parameters
    ----------
    scores : array-like or torch.Tensor, shape (Q, G), float
        Similarities (larger = closer), finite.
    query_labels, gallery_labels : array-like of int, shapes (Q,), (G,)
    tree : LabelTree
        At least one level with two nodes.
    exclude_self : bool, default False
        Leave-one-out on a square matrix (N = G - 1).
    undefined : {"omit", "raise"}, default "omit"
        A level without a correct answer (:math:`M_{ij} = 0`) is left out of that query's
        level mean, as the authors' ``nanmean``; a query without any is left out of the mean.

    Returns
    -------
    float
        In [0, 1).

    Raises
    ------
    ValueError
        Bad inputs, a tree with a single leaf, or undefined terms with ``undefined="raise"``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> # query of leaf x; ranked candidates: x (rank 0), y (1), z (2); N = 3
    >>> # level 1 (a/b): correct x, y -> (0 + 1)/3 / 2; level 2 (leaves): x -> 0
    >>> round(mnr([[3.0, 2.0, 1.0]], [0], [0, 1, 2], t), 4)
    0.0833
    """
    order, rank, valid, yq, yg, n, ties = _ranked(scores, query_labels, gallery_labels, tree, exclude_self)
    levels = mnr_levels(tree)
    if not levels:
        raise ValueError("tree has no level with more than one node (a single leaf); MNR is undefined")
    per_level, _ = _mnr_per_level(rank, valid, yq, yg, n, tree, levels)  # NaN where no correct answer
    if undefined == "raise" and bool(torch.isnan(per_level).any()):
        _reduce(per_level.mean(1), "raise", "MNR (a level without a correct answer)")
    per_query = torch.nanmean(per_level, dim=1)
    return _reduce(per_query, undefined, "MNR")


def ndcg_tree(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: Any,
    relevance: str = "sum",
    *,
    exclude_self: bool = False,
    undefined: str = "omit",
) -> float:
    r"""NDCG over the whole ranking with tree-graded relevance (Paper 04 (Generalised triplets) §III-D.2, NDCG_sum / NDCG_max).

    :math:`DCG = \sum_{j=1}^{N} rel_j / \log_2(j + 1)` over the ranked candidates, divided by
    the DCG of the ideal (relevance-sorted) order. ``relevance="sum"``:
    :math:`rel = 1 - (d(n_1, a) + d(n_2, a)) / D_T`; ``"max"``:
    :math:`1 - \max(d(n_1, a), d(n_2, a)) / H_T` (:func:`hierviz.metrics.tree_relevance`).

    Parameters
    ----------
    scores : array-like or torch.Tensor, shape (Q, G), float
        Similarities (larger = closer), finite.
    query_labels, gallery_labels : array-like of int, shapes (Q,), (G,)
    tree : LabelTree
        At least two leaves.
    relevance : {"sum", "max"}, default "sum"
    exclude_self : bool, default False
        Leave-one-out on a square matrix.
    undefined : {"omit", "raise"}, default "omit"
        A query with zero relevance to every candidate (ideal DCG 0) is left out / refused.

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    ValueError
        Bad inputs, unknown ``relevance``, or undefined queries with ``undefined="raise"``.

    Notes
    -----
    Tied candidates share their group's mean gain: the expected DCG over the tied orders, as
    ``sklearn.metrics.ndcg_score`` computes it (tested against it, ties included).

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> ndcg_tree([[3.0, 2.0, 1.0]], [0], [0, 1, 2], t)  # the ideal order x, y, z
    1.0
    """
    if relevance not in ("sum", "max"):
        raise ValueError(f"relevance must be 'sum' or 'max', got {relevance!r}")
    order, rank, valid, yq, yg, n, ties = _ranked(scores, query_labels, gallery_labels, tree, exclude_self)
    rel = tree_relevance(tree, relevance)[yq][:, yg] * valid  # (Q, G); excluded items weigh 0
    dcg, idcg = _dcg(rel, order, ties=ties)
    per_query = torch.where(idcg > 0, dcg / idcg.clamp_min(1e-300), torch.full_like(dcg, float("nan")))
    return _reduce(per_query, undefined, f"NDCG_{relevance}")


def _unit_rows(t: torch.Tensor, name: str) -> torch.Tensor:
    """Rows of ``t`` (float64) divided by their norms; zero rows refused (their cosine is 0/0)."""
    t = t.double()
    n = t.norm(dim=-1, keepdim=True)
    zero = int((n == 0).sum())
    if zero:
        raise ValueError(
            f"{name}: {zero} row(s) are zero vectors, whose cosine similarity is undefined (they would rank "
            "arbitrarily); drop them or pass geometry= for a distance ranking"
        )
    return t / n


def _cosine(z: Any, zg: Any | None = None) -> torch.Tensor:
    zt = as_embeddings(z, "z")
    a = _unit_rows(zt, "z")
    if zg is None:
        return a @ a.T
    zgt = as_embeddings(zg, "zg")
    same_dim(zt, "z", zgt, "zg")
    return a @ _unit_rows(zgt, "zg").T


def ranking_report(z: Any, labels: Any, tree: Any, *, geometry: Any = None, k: int = 5) -> dict[str, float]:
    """Leaf RP@k, MNR, NDCG_sum and NDCG_max of a set of embeddings, leave-one-out (Paper 04 (Generalised triplets) Table I).

    Parameters
    ----------
    z : array-like, shape (n, D), float
        Embeddings (n >= 2).
    labels : array-like of int, shape (n,)
        Leaf indices.
    tree : LabelTree
    geometry : Geometry, optional
        Rank by ``geometry.similarity`` (cosine for the Euclidean unit sphere, minus the
        geodesic distance for the hyperbolic ones); default cosine similarity, as the paper.
    k : int, default 5
        RP@k cut-off (lowered to n - 1 for a smaller set).

    Returns
    -------
    dict
        ``{"rp5", "mnr", "ndcg_sum", "ndcg_max"}`` (the key ``"rp5"`` holds RP@k), floats;
        a metric undefined for every query is NaN.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z"]}})
    >>> z = [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]]
    >>> r = ranking_report(z, [0, 0, 2, 2], t, k=1)
    >>> r["rp5"], r["ndcg_sum"]
    (1.0, 1.0)
    """
    y = np.asarray(labels)
    if geometry is None:
        S = _cosine(z)
    else:
        S = geometry.similarity(torch.as_tensor(np.asarray(z), dtype=torch.float32)).double()
    out: dict[str, float] = {}
    kk = min(int(k), max(1, len(y) - 1))
    for key, fn in (
        ("rp5", lambda: rp_at_k(S, y, y, tree, kk, exclude_self=True)),
        ("mnr", lambda: mnr(S, y, y, tree, exclude_self=True)),
        ("ndcg_sum", lambda: ndcg_tree(S, y, y, tree, "sum", exclude_self=True)),
        ("ndcg_max", lambda: ndcg_tree(S, y, y, tree, "max", exclude_self=True)),
    ):
        try:
            out[key] = fn()
        except ValueError as exc:
            if "undefined for every query" not in str(exc):
                raise
            out[key] = float("nan")
    return out
