r"""FAISS engines for :class:`~hierviz.retrieval.ReferenceIndex` (``backend="faiss"``; ``pip install 'hierviz[faiss]'``).

FAISS is imported on first use, so ``import hierviz`` never needs it. Every kind finds
candidates; :meth:`ReferenceIndex.search` re-ranks them with the exact float64 distance of
the stored points, so the returned distances are exact whatever the kind.

* ``"flat"``: ``IndexFlatIP`` on the MIPS vectors :math:`-[a_x, -2a_x x, a_x\|x\|^2]`
  (:func:`~hierviz.retrieval.index.mips_references`), searched with
  :math:`[\|q\|^2, q, 1]`: the largest inner products are the smallest Poincaré scores.
  Exact: the same float32 scores as the torch backend, the same certificate and fallback,
  so the same ids and distances.
* ``"ivf"``: ``IndexIVFFlat`` (``METRIC_INNER_PRODUCT``) on the same vectors. The cells are
  k-means cells of the :math:`\log_0` tangents (``faiss.Kmeans`` on a sample of ``40·nlist``
  references, 10 iterations; balanced lists); the quantizer holds the centroids ``C``
  mapped into the ball as :math:`[a_C\|C\|^2, a_C C, a_C]`, whose inner product with
  :math:`[-1, 2q, -\|q\|^2]` is :math:`-a_C\|q - C\|^2`: a query probes the ``nprobe``
  centroids nearest to it *by Poincaré distance* and scans their lists with its query
  vector (``search_preassigned``). Measured on 2·10⁵ clustered 32-d references (radii
  0.85–0.9999, measured while building this module): recall@20 0.97 at nprobe = 16 of 1,789 and
  0.9998 at 64; probing by tangent distance instead gave 0.83 and 0.96. Two designs that
  fail: an IVF that clusters the MIPS vectors themselves (recall@20 0.26 at nprobe = 128 of
  1,024: their norms :math:`a_x`, from 12 to 5·10⁴, and not their positions decide the
  cells), and cells of the hyperbolically nearest centroid (lists 40× unbalanced: centroids
  near the origin are near everything).
* ``"hnsw"``: ``IndexHNSWFlat`` (L2) on the ball coordinates. A graph needs a symmetric
  similarity and the score is not one (the query and reference sides differ); HNSW on the
  MIPS vectors found none of the true neighbours (recall 0.0). The set
  :math:`\{x : s(q, x) \le S\}` is the Euclidean ball of centre :math:`q/(1 + cS)` and radius
  :math:`\sqrt{S(1 + cS - c\|q\|^2)}/(1 + cS)` (expand :math:`\|q - x\|^2 \le S(1 - c\|x\|^2)`),
  so the exact hyperbolic k-NN of q are the Euclidean k-NN of :math:`q/(1 + cS_k)`. The
  search starts at :math:`S = 0` (the Euclidean neighbours of q), sets :math:`S` to the k-th
  exact score found and searches again from the moved centre (``passes`` times). The
  centre lies away from the data for references near the boundary, where graph search is
  weak: report its recall (``benchmarks/bench_retrieval.py``) before relying on it.

Sharding a large reference set across machines uses FAISS's own tools: train one IVF
quantizer (here: the centroids), give every machine an empty copy
(``faiss.write_index``), add each machine's shard there, search every shard with the same
queries, and merge the shards' exact distances (:func:`~hierviz.retrieval.index.merge_results`);
FAISS's ``IndexShards`` (in one process) and ``faiss.contrib.ondisk.merge_ondisk`` (one
IVF whose lists live on disk) do the same for the candidate step (docs/retrieval.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["FaissEngine", "import_faiss"]


def import_faiss():
    """The ``faiss`` module, or one ImportError line that names the extra to install."""
    try:
        import faiss  # noqa: PLC0415  # optional: faiss-cpu (hierviz[faiss]), imported on first use
    except ImportError:
        raise ImportError(
            "backend='faiss' needs faiss-cpu: pip install 'hierviz[faiss]' (or pip install faiss-cpu)"
        ) from None
    return faiss


def _query_vectors(q: torch.Tensor) -> torch.Tensor:
    """``[‖q‖², q, 1]`` (:func:`hierviz.retrieval.index.augment_queries`; not imported: index imports this module)."""
    return torch.cat([q.pow(2).sum(-1, keepdim=True), q, torch.ones_like(q[:, :1])], dim=1)


def _np32(t: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().to("cpu", torch.float32).numpy())


class FaissEngine:
    """A FAISS index over the references of a :class:`ReferenceIndex` that returns candidates.

    Built by :meth:`build` (not directly). ``options``: ``nlist`` (IVF cells, default
    ``4·√G``, at most ``G // 39``: FAISS's k-means wants 39 points per centroid), ``nprobe`` (cells scanned, default ``max(1, nlist // 64)``), ``hnsw_m`` (graph
    degree, default 32), ``ef_construction`` (default 80), ``ef_search`` (default
    ``max(64, candidates)``), ``passes`` (HNSW searches per query, default 3), ``seed``.
    """

    def __init__(self, owner: Any, kind: str, index: Any, options: dict[str, Any]) -> None:
        self.owner, self.kind, self.index, self.options = owner, kind, index, options

    @classmethod
    def build(cls, owner: Any, kind: str, **options: Any) -> FaissEngine:
        """Build the FAISS index of ``kind`` over ``owner``'s stored references.

        Raises
        ------
        ValueError
            An unknown option or a non-positive ``nlist``/``nprobe``/``hnsw_m``/``ef_*``/``passes``.
        ImportError
            faiss-cpu missing.
        """
        known = {"nlist", "nprobe", "hnsw_m", "ef_construction", "ef_search", "passes", "seed"}
        bad = sorted(set(options) - known)
        if bad:
            raise ValueError(f"faiss_options: unknown option(s) {bad}; valid: {sorted(known)}")
        for name, v in options.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or (v < 1 and name != "seed")):
                raise ValueError(f"faiss_options[{name!r}] must be a positive integer, got {v!r}")
        faiss = import_faiss()
        G, d = len(owner), owner.dim
        opts = dict(options)
        if kind == "flat":
            index = faiss.IndexFlatIP(d + 2)
            cls._add_mips(owner, index)
        elif kind == "ivf":
            nlist = min(G, int(opts.get("nlist") or max(1, min(round(4 * G**0.5), G // 39))))
            opts["nlist"] = nlist
            opts.setdefault("nprobe", max(1, nlist // 64))
            index = cls._build_ivf(owner, faiss, nlist, int(opts.get("seed") or 0))
        else:  # hnsw
            index = faiss.IndexHNSWFlat(d, int(opts.get("hnsw_m") or 32))
            index.hnsw.efConstruction = int(opts.get("ef_construction") or 80)
            for s in range(0, G, owner.ref_chunk):
                index.add(_np32(owner._decode64(slice(s, s + owner.ref_chunk))))
        return cls(owner, kind, index, opts)

    @staticmethod
    def _build_ivf(owner: Any, faiss: Any, nlist: int, seed: int) -> Any:
        """k-means cells of the log_0 tangents, hyperbolic centroid vectors in the quantizer, MIPS vectors in the lists."""
        G, d, c = len(owner), owner.dim, owner._c()
        g = torch.Generator().manual_seed(seed)
        sample = torch.randperm(G, generator=g)[: min(G, 40 * nlist)].sort().values.to(owner.device)
        km = faiss.Kmeans(d, nlist, niter=10, seed=seed + 1, spherical=False)
        km.train(_np32(owner.geometry.logmap0(owner._decode64(sample))))
        C = owner.geometry.expmap0(torch.as_tensor(km.centroids, dtype=torch.float64))
        cn2 = C.pow(2).sum(-1, keepdim=True)
        ca = 1.0 / (1.0 - c * cn2)
        quantizer = faiss.IndexFlatIP(d + 2)
        quantizer.add(_np32(torch.cat([ca * cn2, ca * C, ca], dim=1)))
        index = faiss.IndexIVFFlat(quantizer, d + 2, nlist, faiss.METRIC_INNER_PRODUCT)
        from faiss.contrib.ivf_tools import add_preassigned  # noqa: PLC0415  # optional: faiss-cpu (hierviz[faiss])

        for s in range(0, G, owner.ref_chunk):
            x = owner._decode64(slice(s, s + owner.ref_chunk))
            _, cell = km.index.search(_np32(owner.geometry.logmap0(x)), 1)
            add_preassigned(index, _np32(-owner.augmented_chunk(s, s + owner.ref_chunk, torch.float32)), cell.ravel())
        return index

    @staticmethod
    def _add_mips(owner: Any, index: Any) -> None:
        for s in range(0, len(owner), owner.ref_chunk):  # the torch backend's float32 vectors, negated
            index.add(_np32(-owner.augmented_chunk(s, s + owner.ref_chunk, torch.float32)))

    @property
    def nbytes(self) -> int:
        """Bytes of the FAISS index: its vectors plus ids (IVF) or graph links (HNSW, level 0 estimate)."""
        n, d = self.index.ntotal, self.owner.dim
        if self.kind == "flat":
            return int(n * (d + 2) * 4)
        if self.kind == "ivf":
            return int(n * ((d + 2) * 4 + 8) + self.options["nlist"] * (d + 2) * 4)
        return int(n * (d * 4 + 2 * int(self.options.get("hnsw_m") or 32) * 4 * 1.07))

    @torch.no_grad()
    def candidates(self, q: torch.Tensor, kc: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores, rows)`` of shape (Q, ≥ kc): computed Poincaré scores ascending (flat), rows (−1: none)."""
        qa = _np32(_query_vectors(q))
        if self.kind == "flat":
            D, I = self.index.search(qa, kc)
            return -torch.from_numpy(D).to(q.device, torch.float64), torch.from_numpy(I).long().to(q.device)
        if self.kind == "ivf":
            nprobe = min(int(self.options["nprobe"]), int(self.options["nlist"]))
            self.index.nprobe = nprobe
            probe = torch.cat([-torch.ones_like(q[:, :1]), 2.0 * q, -q.pow(2).sum(-1, keepdim=True)], dim=1)
            quantizer = self.index.quantizer
            Dq, Iq = quantizer.search(_np32(probe), nprobe)
            D, I = self.index.search_preassigned(qa, kc, Iq, Dq)
            return -torch.from_numpy(D).to(q.device, torch.float64), torch.from_numpy(I).long().to(q.device)
        c = self.owner._c()
        self.index.hnsw.efSearch = int(self.options.get("ef_search") or max(64, kc))
        S = torch.zeros(len(q), dtype=torch.float64, device=q.device)
        found = torch.zeros((len(q), 0), dtype=torch.long, device=q.device)
        for _ in range(int(self.options.get("passes") or 3)):
            _, I = self.index.search(_np32(q / (1.0 + c * S[:, None])), kc)
            found = torch.cat([found, torch.from_numpy(I).long().to(q.device)], dim=1)
            x = self.owner._decode64(found.clamp_min(0).flatten()).view(*found.shape, -1)
            s = (q[:, None, :] - x).pow(2).sum(-1) / (1.0 - c * x.pow(2).sum(-1))  # the exact Poincaré score
            s = s.masked_fill(found < 0, float("inf"))
            S = torch.kthvalue(s, min(k, s.shape[1]), dim=1).values
            S = torch.where(torch.isfinite(S), S, torch.zeros_like(S))
        return torch.full(found.shape, float("nan"), dtype=torch.float64, device=q.device), found

    def save(self, path: Path) -> None:
        """``faiss.write_index`` to ``path``."""
        import_faiss().write_index(self.index, str(path))

    @classmethod
    def load(cls, owner: Any, path: Path) -> FaissEngine:
        """The engine of a saved index (``faiss.read_index``).

        Raises
        ------
        ValueError
            No ``faiss.index`` file at ``path``.
        """
        if not Path(path).is_file():
            raise ValueError(f"{path}: no FAISS index there; save the index with ReferenceIndex.save")
        return cls(owner, owner.kind, import_faiss().read_index(str(path)), dict(owner.faiss_options))
