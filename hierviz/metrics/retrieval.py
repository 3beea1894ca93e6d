"""Retrieval metrics, flat and hierarchy-aware: MAP@k, precision@k (RP@k), Recall@k, NDCG, MNR.

Every function takes a (Q, G) matrix comparing Q queries with G gallery items -- either
**distances** (``kind="distance"``, the default: smaller = more similar, e.g.
``geometry.pairwise_dist(zq, zg)``) or **scores** (``kind="score"``: larger = more
similar, e.g. ``geometry.similarity`` or cosine) -- plus the leaf indices of the queries
and of the gallery. Each query ranks the whole gallery by that matrix. With
``exclude_self=True`` (Q == G, the query set *is* the gallery, leave-one-out) the diagonal
is removed from each query's candidates.

**Ties.** Gallery items at the same distance from a query have no order between them, so a
metric must not depend on the order in which the gallery happens to be stored. Two scores tie
when they differ by at most 4 units in the last place of the precision they were given in
(exactly, for integer scores): one point's distances, computed through different matrix-product
tiles and rounded to float32, differ in the last place.
The MAP@k family, precision@k, Recall@k, R-precision and NDCG are the *expected* value over
every order of each tied group, each equally likely (McSherry & Najork 2008, *Computing
information retrieval performance measures efficiently in the presence of tied scores*;
:func:`sklearn.metrics.ndcg_score` averages tied gains the same way): an item of a tied group
of ``n`` items, ``r`` of them relevant, is relevant with probability ``r / n``. Without ties
this is the ordinary value. :func:`mean_normalised_rank` breaks ties by gallery order (a
stable sort). A collapsed embedding (many points on one spot) makes whole blocks of the
gallery tie; before hierviz 0.4 the stable sort then gave the gallery's storage order a say
in the score.

Flat metrics (:func:`precision_at_k`, :func:`recall_at_k`, :func:`map_at_k`) call a
gallery item relevant when it has the query's leaf -- or, with ``level=ℓ`` and a tree, the
query's ancestor at level ℓ (a leaf shallower than ℓ being its own ancestor, as in
:attr:`LabelTree.leaf_paths`). :func:`ndcg` grades relevance by tree distance and
:func:`mean_normalised_rank` averages ranks over all levels (paper 04, §II.D).
All computations are vectorised over queries (one (Q, G) sort); there is no loop over
samples. Inputs on any device are copied to the CPU and evaluated in float64 (a (Q, G)
matrix must fit in host memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from hierviz.metrics.hierarchy import _as_labels
from hierviz.metrics.ranking import _dcg, _mnr_per_level, mnr_levels, tree_relevance
from hierviz.metrics.ties import Ties, eps_of, expected_hits, hit_rate, tie_groups

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.hierarchy import LabelTree

__all__ = [
    "precision_at_k",
    "recall_at_k",
    "map_at_k",
    "MAP_DENOMINATORS",
    "r_precision",
    "flat_retrieval_report",
    "ndcg",
    "tree_relevance",
    "mean_normalised_rank",
]


# --------------------------------------------------------------------------- input handling
def _labels_no_tree(x: Any, name: str) -> torch.Tensor:
    """1-D non-negative integer labels without a tree (flat metrics)."""
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty")
    if t.dtype == torch.bool or t.dtype.is_floating_point or t.dtype.is_complex:
        raise TypeError(f"{name} must hold integer leaf indices, got dtype {t.dtype}")
    t = t.detach().to("cpu", torch.long)
    if int(t.min()) < 0:
        raise ValueError(f"{name} holds negative leaf indices")
    return t


def _prepare(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: LabelTree | None,
    kind: str,
    exclude_self: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate inputs and rank the gallery.

    Returns
    -------
    order : (Q, G) long, gallery indices best first (excluded items last)
    valid_sorted : (Q, G) bool, whether the item at each rank is a candidate
    yq : (Q,) long, yg : (G,) long (CPU)
    n_valid : (Q,) long, number of candidates per query
    """
    if kind not in ("distance", "score"):
        raise ValueError(f"kind must be 'distance' (smaller = closer) or 'score' (larger = closer), got {kind!r}")
    S = scores if isinstance(scores, torch.Tensor) else torch.as_tensor(np.asarray(scores))
    if not S.dtype.is_floating_point:
        if S.dtype == torch.bool or S.dtype.is_complex:
            raise TypeError(f"scores must be a real (Q, G) matrix, got dtype {S.dtype}")
        S = S.double()
    if S.ndim != 2:
        raise ValueError(f"scores must be a 2-D (Q, G) matrix, got shape {tuple(S.shape)}")
    Q, G = S.shape
    if Q == 0 or G == 0:
        raise ValueError(f"scores is empty (shape {(Q, G)}); need at least one query and one gallery item")
    S = S.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(S).all()):
        raise ValueError("scores holds NaN or inf")
    if tree is not None:
        yq = _as_labels(query_labels, "query_labels", tree)
        yg = _as_labels(gallery_labels, "gallery_labels", tree)
    else:
        yq = _labels_no_tree(query_labels, "query_labels")
        yg = _labels_no_tree(gallery_labels, "gallery_labels")
    if yq.numel() != Q:
        raise ValueError(f"query_labels has {yq.numel()} entries but scores has {Q} rows")
    if yg.numel() != G:
        raise ValueError(f"gallery_labels has {yg.numel()} entries but scores has {G} columns")
    s = -S if kind == "distance" else S.clone()
    valid = torch.ones(Q, G, dtype=torch.bool)
    if exclude_self:
        if Q != G:
            raise ValueError(f"exclude_self=True needs a square scores matrix (queries = gallery), got {(Q, G)}")
        valid.fill_diagonal_(False)
        s.fill_diagonal_(-float("inf"))
        if G < 2:
            raise ValueError("exclude_self=True with a single item leaves no candidates")
    order = torch.argsort(s, dim=1, descending=True, stable=True)
    valid_sorted = valid.gather(1, order)
    return order, valid_sorted, yq, yg, valid.sum(1), tie_groups(s.gather(1, order), eps_of(scores))


def _relevant(yq: torch.Tensor, yg: torch.Tensor, tree: LabelTree | None, level: int | None) -> torch.Tensor:
    """(Q, G) bool: gallery item shares the query's leaf (or its ancestor at ``level``)."""
    if level is None:
        return yq[:, None] == yg[None, :]
    if tree is None:
        raise ValueError("level needs a tree (pass tree=...)")
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
        raise TypeError(f"level must be an int or None, got {type(level).__name__}")
    if not 0 <= int(level) <= tree.height:
        raise ValueError(f"level must be in [0, {tree.height}], got {level}")
    col = tree.leaf_paths[:, int(level)]
    return col[yq][:, None] == col[yg][None, :]


#: The normalisers of AP@k that :func:`map_at_k` offers by name (see its docstring).
MAP_DENOMINATORS = ("min_k_r", "r", "k", "hits")
_MAP_ALIASES = {"pytorch-metric-learning": "r", "torchmetrics": "hits"}


def _check_k(k: Any, limit: int, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(k).__name__}")
    if not 1 <= int(k) <= limit:
        raise ValueError(f"{name} must be in [1, {limit}] (number of gallery candidates), got {k}")
    return int(k)


def _mean_or_none(per_query: torch.Tensor, reduction: str) -> float | torch.Tensor:
    if reduction == "mean":
        return float(per_query.double().mean())
    if reduction == "none":
        return per_query.double()
    raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")


def _require_relevant(R: torch.Tensor, what: str) -> None:
    n_rel = R.sum(1)
    if bool((n_rel == 0).any()):
        bad = torch.nonzero(n_rel == 0).flatten()
        raise ValueError(
            f"{int(bad.numel())} queries (e.g. {bad[:5].tolist()}) have no relevant gallery item, so {what} is "
            "undefined for them; drop those queries or use a coarser level"
        )


# --------------------------------------------------------------------------- flat metrics
def precision_at_k(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: LabelTree | None = None,
    k: int = 5,
    *,
    kind: str = "distance",
    level: int | None = None,
    exclude_self: bool = False,
    reduction: str = "mean",
) -> float | torch.Tensor:
    """Retrieval precision at k (RP@k): share of the k nearest gallery items that are relevant.

    Parameters
    ----------
    scores : torch.Tensor or array-like, shape (Q, G), float
        Query-gallery distances (``kind="distance"``) or similarities (``kind="score"``);
        finite.
    query_labels : array-like or torch.Tensor of int, shape (Q,)
        Leaf indices of the queries.
    gallery_labels : array-like or torch.Tensor of int, shape (G,)
        Leaf indices of the gallery items.
    tree : LabelTree or None, default None
        Needed for ``level`` and to range-check labels; ``None`` compares labels directly.
    k : int, default 5
        Cut-off, 1 <= k <= number of candidates per query.
    kind : {"distance", "score"}, default "distance"
        Whether smaller (distance) or larger (score) entries mean closer.
    level : int or None, default None
        ``None``: relevant = same leaf ("leaf RP@k"); ``ℓ``: same ancestor at level ℓ.
    exclude_self : bool, default False
        Leave-one-out on a square matrix: the diagonal is not a candidate.
    reduction : {"mean", "none"}, default "mean"
        Mean over queries (float) or per-query float64 tensor (Q,).

    Returns
    -------
    float or torch.Tensor
        In [0, 1].

    Raises
    ------
    TypeError
        Non-integer labels, non-real scores, non-int ``k`` / ``level``.
    ValueError
        Empty or non-finite scores, length mismatches, labels out of range, ``k`` out of
        range, bad ``kind`` / ``reduction`` / ``level``.

    Notes
    -----
    Paper 04 §II.D.2 ("leaf RP@5"); the usual information-retrieval precision@k.
    """
    order, valid, yq, yg, n_valid, ties = _prepare(scores, query_labels, gallery_labels, tree, kind, exclude_self)
    k = _check_k(k, int(n_valid.min()))
    R = _relevant(yq, yg, tree, level).gather(1, order) & valid
    return _mean_or_none(expected_hits(R, ties)[1][:, k - 1] / k, reduction)


def recall_at_k(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: LabelTree | None = None,
    k: int = 5,
    *,
    kind: str = "distance",
    level: int | None = None,
    exclude_self: bool = False,
    reduction: str = "mean",
) -> float | torch.Tensor:
    """Recall@k in the metric-learning sense: share of queries with a relevant item in the top k.

    This is the Recall@k of deep metric learning benchmarks (Song et al., 2016; the In-Shop
    R@5 of paper 01 Tab. 3), i.e. a hit rate -- not the information-retrieval ratio
    "relevant retrieved / all relevant".

    Parameters
    ----------
    scores : torch.Tensor or array-like, shape (Q, G), float
        Query-gallery distances (``kind="distance"``) or similarities (``kind="score"``);
        finite.
    query_labels : array-like or torch.Tensor of int, shape (Q,)
        Leaf indices of the queries.
    gallery_labels : array-like or torch.Tensor of int, shape (G,)
        Leaf indices of the gallery items.
    tree : LabelTree or None, default None
        Needed for ``level`` and to range-check labels.
    k : int, default 5
        Cut-off, 1 <= k <= number of candidates per query.
    kind : {"distance", "score"}, default "distance"
        Whether smaller (distance) or larger (score) entries mean closer.
    level : int or None, default None
        Relevance at the leaf (``None``) or at tree level ℓ.
    exclude_self : bool, default False
        Leave-one-out on a square matrix: the diagonal is not a candidate.
    reduction : {"mean", "none"}, default "mean"
        Mean over queries (float) or per-query float64 tensor (Q,).

    Returns
    -------
    float or torch.Tensor
        In [0, 1].

    Raises
    ------
    TypeError, ValueError
        As :func:`precision_at_k`; also ``ValueError`` if a query has no relevant gallery
        item at all (its recall is undefined).

    Notes
    -----
    Paper 01 §4.1 / Tab. 3 (InShop R@5); Song et al. (2016), *Deep metric learning via
    lifted structured feature embedding*.
    """
    order, valid, yq, yg, n_valid, ties = _prepare(scores, query_labels, gallery_labels, tree, kind, exclude_self)
    k = _check_k(k, int(n_valid.min()))
    R = _relevant(yq, yg, tree, level).gather(1, order) & valid
    _require_relevant(R, "Recall@k")
    return _mean_or_none(hit_rate(R, ties, k), reduction)


def map_at_k(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: LabelTree | None = None,
    k: int | None = 10,
    *,
    kind: str = "distance",
    level: int | None = None,
    exclude_self: bool = False,
    reduction: str = "mean",
    denominator: str = "min_k_r",
) -> float | torch.Tensor:
    r"""Mean average precision at k, with the denominators in use named.

    For query :math:`i` with :math:`R_i` relevant gallery items, relevance indicators
    :math:`r_{ij}` of its ranked list and :math:`H_i = \sum_{j \le k} r_{ij}` hits in the
    top k,

    .. math:: AP@k_i = \frac{1}{n_i} \sum_{j=1}^{k} r_{ij}\, P@j_i,

    where the normaliser :math:`n_i` is what the definitions in use disagree on
    (``denominator``):

    * ``"min_k_r"`` (default): :math:`n_i = \min(k, R_i)`, so a ranking that puts all (or
      the first k) relevant items on top scores 1 (the usual AP@k of information
      retrieval, Manning et al. 2008; the definition this package uses for Paper 03
      (Hyper-DINO) §3.1, whose MAP@k cites Łażewski & Cyganek 2025 without a formula);
    * ``"r"`` (alias ``"pytorch-metric-learning"``): :math:`n_i = R_i`, as
      ``pytorch_metric_learning``'s ``mean_average_precision`` with ``k`` neighbours
      (below 1 whenever :math:`R_i > k`);
    * ``"k"``: :math:`n_i = k`;
    * ``"hits"`` (alias ``"torchmetrics"``): :math:`n_i = H_i`, the mean precision at the
      hits, 0 without a hit, as ``torchmetrics.functional.retrieval_average_precision``
      with ``top_k=k``.

    With ``k=None`` each query uses :math:`k = R_i`, which is MAP@R (Musgrave et al.,
    2020) for every denominator but ``"hits"``.

    Parameters
    ----------
    scores : torch.Tensor or array-like, shape (Q, G), float
        Query-gallery distances (``kind="distance"``) or similarities (``kind="score"``);
        finite.
    query_labels : array-like or torch.Tensor of int, shape (Q,)
        Leaf indices of the queries.
    gallery_labels : array-like or torch.Tensor of int, shape (G,)
        Leaf indices of the gallery items.
    tree : LabelTree or None, default None
        Needed for ``level`` and to range-check labels.
    k : int or None, default 10
        Cut-off in [1, candidates]; ``None`` for MAP@R.
    kind : {"distance", "score"}, default "distance"
        Whether smaller (distance) or larger (score) entries mean closer.
    level : int or None, default None
        Relevance at the leaf (``None``) or at tree level ℓ.
    exclude_self : bool, default False
        Leave-one-out on a square matrix: the diagonal is not a candidate.
    reduction : {"mean", "none"}, default "mean"
        Mean over queries (float) or per-query float64 tensor (Q,).
    denominator : {"min_k_r", "r", "k", "hits"}, default "min_k_r"
        The normaliser :math:`n_i` above; ``"pytorch-metric-learning"`` and
        ``"torchmetrics"`` are accepted as aliases of ``"r"`` and ``"hits"``.

    Returns
    -------
    float or torch.Tensor
        In [0, 1].

    Raises
    ------
    TypeError, ValueError
        As :func:`precision_at_k`; also ``ValueError`` if a query has no relevant gallery
        item (its AP is undefined) or ``denominator`` is unknown.

    Examples
    --------
    One query with R = 3 relevant items, at ranks 1, 3 and 5; within k = 2 there is one
    hit, at rank 1 (precision 1), so the sum is 1 and the four normalisers are 2, 3, 2, 1:

    >>> import torch
    >>> d = torch.arange(5.0)[None]  # distances: gallery order is the ranking
    >>> y_q, y_g = [0], [0, 1, 0, 1, 0]
    >>> [round(map_at_k(d, y_q, y_g, k=2, denominator=n), 4) for n in ("min_k_r", "r", "k", "hits")]
    [0.5, 0.3333, 0.5, 1.0]

    Notes
    -----
    Standard AP@k (e.g. Manning et al., *Introduction to Information Retrieval*, §8.4);
    MAP@R: Musgrave, Belongie & Lim (2020), *A metric learning reality check*.
    """
    denominator = _check_denominator(denominator)
    order, valid, yq, yg, n_valid, ties = _prepare(scores, query_labels, gallery_labels, tree, kind, exclude_self)
    R = _relevant(yq, yg, tree, level).gather(1, order) & valid
    _require_relevant(R, "MAP")
    return _mean_or_none(_average_precision(R, n_valid, k, denominator, ties), reduction)


def _check_denominator(denominator: str) -> str:
    denominator = _MAP_ALIASES.get(denominator, denominator)
    if denominator not in MAP_DENOMINATORS:
        raise ValueError(
            f"denominator must be one of {list(MAP_DENOMINATORS)} (or 'pytorch-metric-learning', 'torchmetrics'), "
            f"got {denominator!r}"
        )
    return denominator


def _average_precision(
    R: torch.Tensor, n_valid: torch.Tensor, k: int | None, denominator: str, ties: Ties | None = None
) -> torch.Tensor:
    """Per-query AP@k (Q,) float64 from the ranked relevance ``R`` (Q, G) bool (see :func:`map_at_k`).

    With ``ties``, the expectation over the orders of each tied group (:func:`hierviz.metrics.ties.expected_hits`);
    the ``"hits"`` normaliser is then the expected number of hits (a ratio of expectations).
    """
    n_rel = R.sum(1)  # (Q,)
    G = R.shape[1]
    ranks = torch.arange(1, G + 1, dtype=torch.float64)
    _, hits, rel_hits = expected_hits(R, ties)
    if k is None:
        cut = n_rel
    else:
        k = _check_k(k, int(n_valid.min()))
        cut = torch.full_like(n_rel, k)
    within = torch.arange(G)[None, :] < cut[:, None]
    summed = (rel_hits / ranks * within).sum(1)  # sum over the top cut of r_j P@j
    if denominator == "min_k_r":
        denom = torch.minimum(cut, n_rel).double()
    elif denominator == "r":
        denom = n_rel.double()
    elif denominator == "k":
        denom = cut.double()
    else:  # "hits": 0 / 0 -> 0 for a query without a hit in its top k
        at_cut = hits.gather(1, (cut - 1).clamp_min(0)[:, None]).squeeze(1)
        denom = torch.where(at_cut > 0, at_cut, 1.0)
    return summed / denom


def flat_retrieval_report(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    ks: tuple[int, ...] = (1, 5, 10, 20),
    *,
    kind: str = "distance",
    denominator: str = "min_k_r",
) -> dict[str, float]:
    """MAP@k for every k in ``ks``, P@1 and R-precision from one ranking (one sort).

    The same numbers as :func:`map_at_k`, :func:`precision_at_k` (k = 1) and
    :func:`r_precision`, without sorting the (Q, G) matrix once per metric.

    Parameters
    ----------
    scores, query_labels, gallery_labels, kind
        As :func:`map_at_k` (no tree, leaf relevance).
    ks : tuple of int, default (1, 5, 10, 20)
        MAP@k cut-offs (Paper 03 (Hyper-DINO) §3.1).
    denominator : str, default "min_k_r"
        As :func:`map_at_k`.

    Returns
    -------
    dict
        ``{"map@1": ..., ..., "p@1": ..., "r_precision": ...}``, floats in [0, 1].

    Raises
    ------
    TypeError, ValueError
        As :func:`map_at_k`.

    Examples
    --------
    >>> flat_retrieval_report([[0.0, 1.0, 2.0], [2.0, 0.0, 1.0]], [0, 1], [0, 1, 0], ks=(1, 2))
    {'map@1': 1.0, 'map@2': 0.75, 'p@1': 1.0, 'r_precision': 0.75}
    """
    denominator = _check_denominator(denominator)
    order, valid, yq, yg, n_valid, ties = _prepare(scores, query_labels, gallery_labels, None, kind, False)
    R = _relevant(yq, yg, None, None).gather(1, order) & valid
    _require_relevant(R, "MAP")
    n_rel = R.sum(1)
    rel, hits, rel_hits = expected_hits(R, ties)  # hits within the top j (expected over tied orders)
    ap_sum = (rel_hits / torch.arange(1, R.shape[1] + 1, dtype=torch.float64)).cumsum(1)  # Σ_{j' <= j} r P@j'
    del rel_hits
    out = {}
    for k in ks:
        k = _check_k(k, int(n_valid.min()))
        denom = {
            "min_k_r": n_rel.clamp(max=k).double(),
            "r": n_rel.double(),
            "k": torch.full_like(n_rel, k).double(),
            "hits": torch.where(hits[:, k - 1] > 0, hits[:, k - 1], 1.0),
        }[denominator]
        out[f"map@{k}"] = float((ap_sum[:, k - 1] / denom).mean())
    out["p@1"] = float(rel[:, 0].mean())
    at_r = hits.gather(1, (n_rel - 1).clamp_min(0)[:, None]).squeeze(1)  # hits within the top R
    out["r_precision"] = float((at_r / n_rel.double()).mean())
    return out


def r_precision(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: LabelTree | None = None,
    *,
    kind: str = "distance",
    level: int | None = None,
    exclude_self: bool = False,
    reduction: str = "mean",
) -> float | torch.Tensor:
    r"""R-precision: precision at :math:`R_i`, the number of relevant gallery items of each query.

    Parameters
    ----------
    scores : torch.Tensor or array-like, shape (Q, G), float
        Query-gallery distances (``kind="distance"``) or similarities (``kind="score"``).
    query_labels, gallery_labels : array-like of int, shapes (Q,) and (G,)
        Leaf (class) indices.
    tree : LabelTree or None, default None
        Needed for ``level`` and to range-check labels.
    kind : {"distance", "score"}, default "distance"
    level : int or None, default None
        Relevance at the leaf (``None``) or at tree level ℓ.
    exclude_self : bool, default False
        Leave-one-out on a square matrix.
    reduction : {"mean", "none"}, default "mean"

    Returns
    -------
    float or torch.Tensor
        In [0, 1].

    Raises
    ------
    TypeError, ValueError
        As :func:`map_at_k` (a query without a relevant item has no R-precision).

    Examples
    --------
    >>> round(r_precision([[0.0, 1.0, 2.0, 3.0]], [0], [0, 1, 0, 1]), 4)  # R = 2, one hit in the top 2
    0.5

    Notes
    -----
    Manning, Raghavan & Schütze, *Introduction to Information Retrieval* (2008), §8.4;
    Musgrave, Belongie & Lim (2020), *A metric learning reality check*.
    """
    order, valid, yq, yg, _, ties = _prepare(scores, query_labels, gallery_labels, tree, kind, exclude_self)
    R = _relevant(yq, yg, tree, level).gather(1, order) & valid
    _require_relevant(R, "R-precision")
    n_rel = R.sum(1)
    at_r = expected_hits(R, ties)[1].gather(1, (n_rel - 1)[:, None]).squeeze(1)  # hits within the top R
    return _mean_or_none(at_r / n_rel.double(), reduction)


# --------------------------------------------------------------------------- tree-graded metrics
def ndcg(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: LabelTree,
    k: int | None = None,
    *,
    kind: str = "distance",
    relevance: str = "sum",
    exclude_self: bool = False,
    reduction: str = "mean",
) -> float | torch.Tensor:
    r"""Normalised discounted cumulative gain with tree-distance graded relevance.

    Relevance of gallery item :math:`g` for query :math:`q` is
    ``tree_relevance(tree, relevance)[y_q, y_g]`` (default ``"sum"``:
    :math:`1 - d_T/D_T`). With the gallery ranked by the scores,
    :math:`DCG@k = \sum_{j=1}^{k} rel_j / \log_2(j + 1)`, and NDCG@k = DCG@k / IDCG@k,
    IDCG being the DCG of the relevance sorted in decreasing order. Tied gallery items
    share their group's mean gain (the expected DCG over the tied orders), as scikit-learn's
    ``ndcg_score`` computes it.

    Parameters
    ----------
    scores : torch.Tensor or array-like, shape (Q, G), float
        Query-gallery distances (``kind="distance"``) or similarities (``kind="score"``);
        finite.
    query_labels : array-like or torch.Tensor of int, shape (Q,)
        Leaf indices of the queries.
    gallery_labels : array-like or torch.Tensor of int, shape (G,)
        Leaf indices of the gallery items.
    tree : LabelTree
        The label tree (at least two leaves).
    k : int or None, default None
        Cut-off; ``None`` ranks the whole gallery (paper 04).
    kind : {"distance", "score"}, default "distance"
        Whether smaller (distance) or larger (score) entries mean closer.
    relevance : {"sum", "max", "rho"}, default "sum"
        Grading, see :func:`tree_relevance` (paper 04: NDCG_sum, NDCG_max).
    exclude_self : bool, default False
        Leave-one-out on a square matrix: the diagonal is not a candidate.
    reduction : {"mean", "none"}, default "mean"
        Mean over queries (float) or per-query float64 tensor (Q,).

    Returns
    -------
    float or torch.Tensor
        In [0, 1]; 1 iff every query's ranking is ideal (up to ties in relevance).

    Raises
    ------
    TypeError, ValueError
        As :func:`precision_at_k`; also ``ValueError`` when a query's gallery has zero
        total relevance (IDCG = 0, NDCG undefined).

    Notes
    -----
    Paper 04 §II.D.2 (NDCG_sum / NDCG_max); Järvelin & Kekäläinen (2002), *Cumulated
    gain-based evaluation of IR techniques*. Checked against
    :func:`sklearn.metrics.ndcg_score` in the tests.
    """
    order, valid, yq, yg, n_valid, ties = _prepare(scores, query_labels, gallery_labels, tree, kind, exclude_self)
    rel_cc = tree_relevance(tree, relevance)
    kk = None if k is None else _check_k(k, int(n_valid.min()))
    rel = rel_cc[yq][:, yg]  # (Q, G) in gallery order
    if exclude_self:
        rel.fill_diagonal_(0.0)
    dcg, idcg = _dcg(rel, order, kk, ties=ties)  # tied items share their mean gain
    if bool((idcg <= 0).any()):
        bad = torch.nonzero(idcg <= 0).flatten()
        raise ValueError(
            f"{int(bad.numel())} queries (e.g. {bad[:5].tolist()}) have zero relevance to every gallery item "
            "(ideal DCG = 0), so NDCG is undefined for them"
        )
    return _mean_or_none(dcg / idcg, reduction)


def mean_normalised_rank(
    scores: Any,
    query_labels: Any,
    gallery_labels: Any,
    tree: LabelTree,
    *,
    kind: str = "distance",
    exclude_self: bool = False,
    reduction: str = "mean",
) -> float | torch.Tensor:
    r"""Hierarchical mean normalised rank, MNR (paper 04; lower is better).

    .. math:: MNR = \frac{1}{Q} \sum_{i=1}^{Q} \frac{1}{L'} \sum_{j=1}^{L'}
              \frac{1}{M_{ij}} \sum_{k=1}^{M_{ij}} \frac{r_{ijk}}{N}

    For query :math:`i` and each tree level :math:`j` that has more than one node
    (:math:`L'` such levels, the same for every query; the root level is always skipped),
    the "correct answers" are the :math:`M_{ij}` gallery items whose ancestor at level j
    equals the query's; :math:`r_{ijk}` is the 0-based rank (1-based rank shifted by 1) of
    the k-th of them among the :math:`N` candidates, so :math:`r/N \in [0, 1)`. Items in
    the query's leaf count at every level, so deeper agreement weighs more.

    Unbalanced trees: a leaf shallower than level j is its own node at level j
    (:attr:`LabelTree.leaf_paths` padding), so its same-leaf items are the correct
    answers there too. Note that even a perfect ranking does not reach 0: the best a
    query can do at level j is :math:`(M_{ij} - 1) / (2N)`.

    Parameters
    ----------
    scores : torch.Tensor or array-like, shape (Q, G), float
        Query-gallery distances (``kind="distance"``) or similarities (``kind="score"``);
        finite.
    query_labels : array-like or torch.Tensor of int, shape (Q,)
        Leaf indices of the queries.
    gallery_labels : array-like or torch.Tensor of int, shape (G,)
        Leaf indices of the gallery items.
    tree : LabelTree
        The label tree (at least two leaves).
    kind : {"distance", "score"}, default "distance"
        Whether smaller (distance) or larger (score) entries mean closer.
    exclude_self : bool, default False
        Leave-one-out on a square matrix (then N = G - 1).
    reduction : {"mean", "none"}, default "mean"
        Mean over queries (float) or per-query float64 tensor (Q,).

    Returns
    -------
    float or torch.Tensor
        In [0, 1).

    Raises
    ------
    TypeError, ValueError
        As :func:`precision_at_k`; also ``ValueError`` when a query has no correct answer
        at some level (:math:`M_{ij} = 0`, e.g. its leaf is absent from the gallery) or
        the tree has a single leaf.

    Notes
    -----
    Paper 04 §II.D.2 "MNR", adapting the mean normalised rank of its refs. [25], [26].
    """
    order, valid, yq, yg, n_valid, _ = _prepare(scores, query_labels, gallery_labels, tree, kind, exclude_self)
    Q, G = order.shape
    # rank of each gallery item (0-based), in gallery order
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(G).expand(Q, G).contiguous())
    levels = mnr_levels(tree)
    if not levels:
        raise ValueError("tree has no level with more than one node (a single leaf); MNR is undefined")
    vmask = torch.ones(Q, G, dtype=torch.bool)
    if exclude_self:
        vmask.fill_diagonal_(False)
    per_level, M = _mnr_per_level(rank, vmask, yq, yg, n_valid, tree, levels)
    for j, lv in enumerate(levels):
        if bool((M[:, j] == 0).any()):
            bad = torch.nonzero(M[:, j] == 0).flatten()
            raise ValueError(
                f"{int(bad.numel())} queries (e.g. {bad[:5].tolist()}) have no gallery item sharing their "
                f"level-{lv} node, so MNR is undefined; drop them or add such items to the gallery"
            )
    return _mean_or_none(per_level.mean(1), reduction)
