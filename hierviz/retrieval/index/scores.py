r"""The Poincaré score as one inner product of augmented vectors, and the exact float64 distances.

:func:`augment_queries` and :func:`augment_references` split the score
:math:`s(q, x) = \|q - x\|^2 / (1 - c\|x\|^2)` into a query side and a reference side, so
that ranking is one GEMM; :func:`mips_references` negates the reference side for a
maximum-inner-product engine; :func:`poincare_scores` and ``_exact_dist`` compute the score and
the distance from differences in float64 (the re-rank); :func:`merge_results` merges the exact
top-k of several shards. The package docstring of :mod:`hierviz.retrieval.index` derives them.
"""

from __future__ import annotations

from typing import Any

import torch

from hierviz.geometry import DEFAULT_CURVATURE


def _exact_dist(x: torch.Tensor, y: torch.Tensor, c: float) -> torch.Tensor:
    """Poincaré distance of matching rows in float64 from the differences (no Gram matrix, no matmul).

    ``(2/√c) arsinh(√(c‖x − y‖² / ((1 − c‖x‖²)(1 − c‖y‖²))))``: exact to float64 rounding on any
    device and in any matmul mode (TF32, bfloat16), also next to the boundary, where
    ``artanh``-based formulas saturate.
    """
    x, y = x.to(torch.float64), y.to(torch.float64)
    num = c * (x - y).pow(2).sum(-1)
    den = (1.0 - c * x.pow(2).sum(-1)) * (1.0 - c * y.pow(2).sum(-1))
    return (2.0 / c**0.5) * torch.asinh((num / den.clamp_min(torch.finfo(torch.float64).tiny)).sqrt())


def augment_queries(q: torch.Tensor) -> torch.Tensor:
    r"""The query side of the Poincaré score: ``[‖q‖², q, 1]``.

    Parameters
    ----------
    q : torch.Tensor, shape (Q, d), float
        Queries inside the ball.

    Returns
    -------
    torch.Tensor, shape (Q, d + 2), same dtype
        ``augment_queries(q) @ augment_references(x, c).T`` is the score
        :math:`s(q, x) = \|q - x\|^2 / (1 - c\|x\|^2)` of the module docstring.
    """
    one = torch.ones_like(q[:, :1])
    return torch.cat([q.pow(2).sum(-1, keepdim=True), q, one], dim=1)


def augment_references(x: torch.Tensor, c: float = DEFAULT_CURVATURE) -> torch.Tensor:
    r"""The reference side of the Poincaré score: ``[a, −2a·x, a‖x‖²]`` with ``a = 1/(1 − c‖x‖²)``.

    Parameters
    ----------
    x : torch.Tensor, shape (G, d), float
        Reference points inside the ball of curvature ``-c``.
    c : float, default 1.0

    Returns
    -------
    torch.Tensor, shape (G, d + 2), same dtype

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall(0.5)
    >>> g = torch.Generator().manual_seed(0)
    >>> q, x = (ball.expmap0(torch.randn(n, 4, generator=g, dtype=torch.float64)) for n in (3, 5))
    >>> s = augment_queries(q) @ augment_references(x, 0.5).T  # (3, 5) scores
    >>> bool((s.argsort(1) == ball.dist(q[:, None], x[None]).argsort(1)).all())
    True
    """
    n2 = x.pow(2).sum(-1, keepdim=True)
    a = 1.0 / (1.0 - c * n2)
    return torch.cat([a, -2.0 * a * x, a * n2], dim=1)


def mips_references(x: torch.Tensor, c: float = DEFAULT_CURVATURE) -> torch.Tensor:
    """``−augment_references(x, c)``: the nearest references have the *largest* inner product with the queries.

    The vectors a maximum-inner-product engine (FAISS ``METRIC_INNER_PRODUCT``) stores.
    """
    return -augment_references(x, c)


def poincare_scores(q: torch.Tensor, x: torch.Tensor, c: float = DEFAULT_CURVATURE) -> torch.Tensor:
    r"""The exact score :math:`\|q - x\|^2 / (1 - c\|x\|^2)` of matching rows, float64, from differences.

    Parameters
    ----------
    q, x : torch.Tensor, shape (..., d)
        Broadcastable points inside the ball.
    c : float, default 1.0

    Returns
    -------
    torch.Tensor, shape (...), float64
    """
    q, x = q.to(torch.float64), x.to(torch.float64)
    return (q - x).pow(2).sum(-1) / (1.0 - c * x.pow(2).sum(-1))


def merge_results(results: Any, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k nearest of several searches of the same queries (shards), by their exact distances.

    Exact distances (what :meth:`ReferenceIndex.search` returns) compare across shards,
    unlike the approximate scores of an IVF or HNSW index; give each shard's indices in the
    global numbering (add the shard's offset).

    Parameters
    ----------
    results : sequence of (distances, indices)
        Each a pair of tensors of shape (Q, k_i); ``inf`` distances are empty slots.
    k : int
        At most the sum of the ``k_i``.

    Returns
    -------
    distances, indices : torch.Tensor, shape (Q, k)
        Ascending; ties by the smaller index.

    Examples
    --------
    >>> d1, i1 = torch.tensor([[0.1, 0.5]]), torch.tensor([[3, 7]])
    >>> d2, i2 = torch.tensor([[0.2, 0.3]]), torch.tensor([[10, 12]])
    >>> merge_results([(d1, i1), (d2, i2)], k=3)[1].tolist()
    [[3, 10, 12]]
    """
    results = list(results)
    if not results:
        raise ValueError("results must hold at least one (distances, indices) pair")
    d = torch.cat([torch.as_tensor(r[0]) for r in results], dim=1)
    i = torch.cat([torch.as_tensor(r[1]) for r in results], dim=1).long()
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d.shape[1]:
        raise ValueError(f"k must be an integer in [1, {d.shape[1]}] (the candidates of all shards), got {k!r}")
    return _select(d, i, k)


def _select(d: torch.Tensor, i: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k smallest ``d`` per row, ties by the smaller index; repeated indices count once."""
    i_sorted, o = torch.sort(i, dim=1, stable=True)
    d_sorted = d.gather(1, o)
    dup = torch.zeros_like(i_sorted, dtype=torch.bool)
    dup[:, 1:] = i_sorted[:, 1:] == i_sorted[:, :-1]
    d_sorted = d_sorted.masked_fill(dup | (i_sorted < 0), float("inf"))
    order = torch.argsort(d_sorted, dim=1, stable=True)[:, :k]
    return d_sorted.gather(1, order), i_sorted.gather(1, order)
