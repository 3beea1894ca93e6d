r"""The exact k-nearest-neighbour search of :class:`~hierviz.retrieval.index.ReferenceIndex`.

:class:`ExactSearch` holds the search half of the index: candidates from one float32 GEMM
per chunk of references (or from the FAISS engine), the exact float64 re-rank, the certificate
that nothing left out beats the k-th neighbour, and its float64 fallbacks (the package
docstring of :mod:`hierviz.retrieval.index`, "Exactness"). It reads the stored codes and the
settings through the attributes and helpers that ``ReferenceIndex`` defines (``_decode64``,
``augmented_chunk``, ``_queries``, ``_c``, ``_cdt``, ``_rmax``, ``faiss``, ``full``, ...): it is
the base class of ``ReferenceIndex``, not a class to build alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hierviz.retrieval.index.scores import _exact_dist, _select, augment_queries, augment_references, poincare_scores

#: Candidates kept per query before the exact re-rank: ``k + max(k, RERANK_MARGIN)``.
RERANK_MARGIN = 16
#: A query whose candidates fail the certificate is searched again with ``WIDEN`` times as many.
WIDEN = 4


def _unit_roundoff(dtype: torch.dtype, device: torch.device) -> float:
    """Unit roundoff of a matmul in ``dtype`` on ``device`` under torch's current matmul mode."""
    if dtype == torch.float64:
        return 2.0**-53
    u = 2.0**-24
    mode = torch.get_float32_matmul_precision()
    if mode == "high":  # TF32 (10 mantissa bits) or bfloat16x3
        u = 2.0**-11
    elif mode == "medium":  # bfloat16
        u = 2.0**-8
    if device.type == "cuda" and torch.backends.cuda.matmul.allow_tf32:
        u = max(u, 2.0**-11)
    return u


def _gamma(n: int, u: float) -> float:
    """Bound on the relative error of an n-term dot product (plus the rounding of its inputs), as a fraction of Σ|t_i|."""
    m = n + 10  # the terms' own roundings: a, s, ‖x‖², the products that build the augmented vectors
    return 2.0 * m * u / max(1.0 - m * u, 1e-3)


class ExactSearch:
    """The search methods of :class:`~hierviz.retrieval.index.ReferenceIndex` (see the module docstring)."""

    def _torch_candidates(self, q: torch.Tensor, kc: int, exact64: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """The kc smallest computed scores per query (ascending) and their rows: one GEMM per chunk.

        ``exact64``: the augmented vectors from the stored points decoded in float64 and a float64 GEMM.
        """
        cdt = torch.float64 if exact64 else self._cdt
        qa = augment_queries(q).to(cdt)
        batches = list(qa.split(self.query_batch))
        vals: list[list[torch.Tensor]] = [[] for _ in batches]
        rows: list[list[torch.Tensor]] = [[] for _ in batches]
        c = self._c()
        for s in range(0, len(self), self.ref_chunk):
            if exact64:
                ref = augment_references(self._decode64(slice(s, s + self.ref_chunk)), c)
            else:
                ref = self.augmented_chunk(s, s + self.ref_chunk)
            for b, qb in enumerate(batches):
                scores = qb @ ref.T
                v, i = torch.topk(scores, min(kc, scores.shape[1]), dim=1, largest=False, sorted=False)
                vals[b].append(v)
                rows[b].append(i + s)
        out_v, out_i = [], []
        for v, i in zip(vals, rows):
            v, i = torch.cat(v, dim=1), torch.cat(i, dim=1)
            v, o = torch.topk(v, kc, dim=1, largest=False, sorted=True)
            out_v.append(v)
            out_i.append(i.gather(1, o))
        return torch.cat(out_v), torch.cat(out_i)

    def _certified(self, q: torch.Tensor, kth_score: torch.Tensor, left_out: torch.Tensor, u: float) -> torch.Tensor:
        """Which queries provably have their exact top-k among the candidates (module docstring, "Exactness")."""
        c = self._c()
        rq = q.norm(dim=-1)
        S = kth_score.clamp_min(0.0)
        r_hi = (rq + (S * (1.0 - c * rq.pow(2) + c * S)).clamp_min(0.0).sqrt()) / (1.0 + c * S)
        r_hi = torch.minimum(r_hi, torch.full_like(r_hi, self._rmax))
        err = _gamma(self.dim + 2, u) * (rq + r_hi).pow(2) / (1.0 - c * r_hi.pow(2))
        return left_out.to(torch.float64) - err > S * (1.0 + 1e-9) + 1e-300

    def _brute_force(self, q: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact top-k by float64 distances from differences over every reference (the fallback)."""
        c, d = self._c(), self.dim
        best_d = torch.full((len(q), 0), float("inf"), dtype=torch.float64, device=q.device)
        best_i = torch.zeros((len(q), 0), dtype=torch.long, device=q.device)
        qb_size = max(1, min(len(q), 64))
        rows = max(1, (1 << 22) // (qb_size * d))
        out_d, out_i = [], []
        for qb in q.split(qb_size):
            bd, bi = best_d[: len(qb)], best_i[: len(qb)]
            for s in range(0, len(self), rows):
                x = self._decode64(slice(s, s + rows))
                dist = _exact_dist(qb[:, None, :], x[None, :, :], c)
                idx = torch.arange(s, s + len(x), device=q.device).expand(len(qb), -1)
                bd, bi = _select(torch.cat([bd, dist], 1), torch.cat([bi, idx], 1), min(k, bd.shape[1] + len(x)))
            out_d.append(bd)
            out_i.append(bi)
        return torch.cat(out_d), torch.cat(out_i)

    def _settle(
        self,
        q: torch.Tensor,
        bad: torch.Tensor,
        dist: torch.Tensor,
        idx: torch.Tensor,
        cand: torch.Tensor,
        kc: int,
        k: int,
        u: float,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The exact top-k of the queries ``bad`` whose first candidate list was not certified.

        Tried in turn, each under the certificate, until every query passes: ``WIDEN`` × ``kc``
        candidates from the same engine (a near-tie at the kc-th score is usually settled there,
        at the cost of a search of those few queries), the augmented vectors of the float64
        points with a float64 GEMM, and a float64 brute force from differences.
        """
        c = self._c()
        dist, idx, cand = dist.clone(), idx.clone(), cand.clone()
        kw = WIDEN * kc
        tries = [] if kw >= len(self) else [(lambda qb: self._candidates(qb, kw, k), u)]
        tries.append((lambda qb: self._torch_candidates(qb, kc, exact64=True), 2.0**-53))
        for candidates_of, roundoff in tries:
            scores, rows = candidates_of(q[bad])
            bd, bi = self._rerank(q[bad], rows, k)
            dist[bad], idx[bad] = bd, bi
            cand[bad, :k] = bi  # the refine step sees the exact top-k of those queries
            ok = self._certified(q[bad], poincare_scores(q[bad], self._decode64(bi[:, -1]), c), scores[:, -1], roundoff)
            bad = bad[~ok]
            if not len(bad):
                return dist, idx, cand
        dist[bad], idx[bad] = self._brute_force(q[bad], k)
        cand[bad, :k] = idx[bad]
        return dist, idx, cand

    def _candidates(self, q: torch.Tensor, kc: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores, rows)``, (Q, kc) ascending: the torch GEMM's or the FAISS engine's candidates."""
        return self._torch_candidates(q, kc) if self.faiss is None else self.faiss.candidates(q, kc, k)

    def _rerank(self, q: torch.Tensor, cand: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The k nearest of the candidate rows by the exact float64 distance to the stored points (−1: none)."""
        refs = self._decode64(cand.clamp_min(0).flatten()).view(*cand.shape, self.dim)
        d64 = _exact_dist(q[:, None, :], refs, self._c()).masked_fill(cand < 0, float("inf"))
        return _select(d64, cand, k)

    @torch.no_grad()
    def search(
        self, queries: Any, k: int = 20, *, refine: Any = None, candidates: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The k nearest references of each query by Poincaré distance.

        Parameters
        ----------
        queries : torch.Tensor or array-like, shape (Q, d)
            Points inside the ball (float32 is enough: only the references are compressed).
        k : int, default 20
            In ``[1, G]``.
        refine : torch.Tensor or array-like, shape (G, d), optional
            Full-precision references kept outside the index (FAISS's refine step): the
            candidates are re-ranked against these rows instead of the stored codes, so an
            fp16 index returns the top-k of the full-precision points (recall 1.0 in the
            tests at ``‖x‖`` up to 1 − 1e-5) and their exact distances.
        candidates : int, optional
            Candidates per query before the exact re-rank (at least k). Default
            ``k + max(k, RERANK_MARGIN)``; raise it for IVF/HNSW or ``refine`` on hard data.

        Returns
        -------
        distances : torch.Tensor, shape (Q, k), float32 (float64 for float64 queries or ``"fp64"`` storage)
            Ascending per row: the exact float64 distances to the stored points (to the
            ``refine`` rows when given, else to the float64 copy with ``keep_full=True``),
            rounded to the output dtype. The stored points of a compressed storage are the
            codes' points, which next to the boundary sit a small hyperbolic distance from
            the points given (``keep_full`` says how far), so a query right next to its
            reference gets a distance of that size, not the tiny true one; pass ``refine``
            or build with ``keep_full=True`` where such distances matter.
        indices : torch.Tensor, shape (Q, k), int64
            Reference rows; equal distances by the smaller row.

        Exact backends (torch, FAISS ``flat``) return the exact top-k of the stored points
        on any device and matmul mode (the certificate of the module docstring, with a
        float64 brute force for the queries that fail it); ``ivf`` and ``hnsw`` return the
        exact top-k of the candidates they find.

        Raises
        ------
        ValueError
            ``k``/``candidates`` out of range, queries or ``refine`` of the wrong shape, or points outside the ball.
        """
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(self):
            raise ValueError(f"k must be an integer in [1, {len(self)}], got {k!r}")
        kc = min(len(self), k + max(k, RERANK_MARGIN)) if candidates is None else candidates
        if isinstance(kc, bool) or not isinstance(kc, int) or kc < k:
            raise ValueError(f"candidates must be an integer >= k = {k}, got {candidates!r}")
        kc = min(kc, len(self))
        q = self._queries(queries)
        ref_full = self.full
        if refine is not None:
            ref_full = refine if isinstance(refine, torch.Tensor) else torch.as_tensor(np.asarray(refine))
            if tuple(ref_full.shape) != (len(self), self.point_dim):
                raise ValueError(
                    f"refine must hold the {len(self)} references at full precision, shape ({len(self)}, "
                    f"{self.point_dim}); got {tuple(ref_full.shape)}"
                )
            ref_full = self._as_ball(ref_full, "refine")
        c = self._c()
        scores, cand = self._candidates(q, kc, k)
        u = _unit_roundoff(self._cdt, self.device) if self.faiss is None else 2.0**-24
        exact = self.faiss is None or self.kind == "flat"
        dist, idx = self._rerank(q, cand, k)
        if exact and kc < len(self):
            ok = self._certified(q, poincare_scores(q, self._decode64(idx[:, -1]), c), scores[:, -1], u)
            if not bool(ok.all()):
                dist, idx, cand = self._settle(q, torch.nonzero(~ok).flatten(), dist, idx, cand, kc, k, u)
        if ref_full is not None:
            pool = torch.cat([idx, cand], dim=1)
            full = ref_full.detach().to(self.device, torch.float64)
            self.geometry.check_point(full[pool.clamp_min(0).flatten()], name="refine")
            d_full = _exact_dist(q[:, None, :], full[pool.clamp_min(0)], c).masked_fill(pool < 0, float("inf"))
            dist, idx = _select(d_full, pool, k)
        return dist.to(self._out_dtype(queries)), idx
