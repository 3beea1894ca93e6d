r"""A reference index in the Poincaré ball with compact storage, searched in batches (CPU or GPU).

Paper 03 (Hyper-DINO) §2.4 ranks the reference (training) images by Poincaré distance to
each query; its §4 stresses the size: 32 float16 numbers, 64 bytes per image. Storing
*ball coordinates* in float16 loses the points near the boundary (float16 keeps ~3
digits, and :math:`1 - \|x\|` is what the distance depends on), so :class:`ReferenceIndex`
stores :math:`\log_0` *tangent vectors* in float16 and maps them back with
:math:`\exp_0` in float32 when searching (``DESIGN.md``, "fp16 storage of hyperbolic
points"; :func:`storage_distance_error` measures both).

Storage modes (``storage=``):

* ``"fp32"``: ball coordinates, float32 (4·d bytes per image);
* ``"fp16"``: :math:`\log_0` tangents, float16 (2·d bytes: 64 bytes at d = 32);
* ``"fp16-ball"``: ball coordinates, float16 (2·d bytes; the naive choice, for comparison);
* ``"fp64"``: ball coordinates, float64 (8·d bytes): float64 points searched exactly.

Search decodes and ranks in float64 and re-ranks the final candidates exactly
(:meth:`ReferenceIndex.search`), so CPU and GPU return the same top-k whatever the
device's matmul mode (issue 25; hierviz 0.2 searched in float32, TF32 on a GPU). A Lorentz geometry is refused at build (map the
points to the ball first); float16 storage refuses points whose tangent is too short for it.

Search walks the references in chunks (``ref_chunk``) and the queries in batches
(``query_batch``), decoding one chunk at a time, so the memory beyond the stored index is
``query_batch × ref_chunk`` distances.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hierviz.geometry import PoincareBall

__all__ = [
    "STORAGES",
    "ReferenceIndex",
    "encode_points",
    "decode_points",
    "storage_distance_error",
    "storage_error_curve",
]

#: Storage modes of :class:`ReferenceIndex`.
STORAGES = ("fp32", "fp16", "fp16-ball", "fp64")


def _geometry(geometry: Any):
    if geometry is None:
        return PoincareBall(1.0)
    if not isinstance(geometry, PoincareBall):
        raise ValueError(
            f"the reference index works in the Poincaré ball only, got geometry={type(geometry).__name__}; "
            "map Lorentz points to the ball first (hierviz.geometry.lorentz.math.to_ball) and pass a PoincareBall"
        )
    return geometry


#: Candidates kept per query before the exact re-rank: ``k + max(k, RERANK_MARGIN)``.
RERANK_MARGIN = 16
#: Smallest non-zero tangent norm float16 storage keeps (relative error <= 1e-2 beyond it).
FP16_MIN_NORM = 1e-3


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


def encode_points(x: torch.Tensor, storage: str, geometry: Any = None) -> torch.Tensor:
    """Ball points → the stored tensor of a storage mode (see the module docstring).

    Parameters
    ----------
    x : torch.Tensor, shape (n, d)
        Points inside the ball.
    storage : {"fp32", "fp16", "fp16-ball"}
    geometry : PoincareBall, optional
        Default ``PoincareBall(1.0)``.

    Returns
    -------
    torch.Tensor, shape (n, d)
        float32 coordinates, float16 tangents or float16 coordinates.

    Raises
    ------
    ValueError
        Unknown ``storage``; points outside the ball.
    """
    g = _geometry(geometry)
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {list(STORAGES)}, got {storage!r}")
    if storage == "fp32":
        return x.detach().to(torch.float32)
    if storage == "fp64":
        return x.detach().to(torch.float64)
    if storage == "fp16":
        return g.logmap0(x.detach().to(torch.float64)).to(torch.float16)
    return x.detach().to(torch.float16)


def decode_points(
    stored: torch.Tensor, storage: str, geometry: Any = None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The stored tensor → ball points (``exp_0`` of fp16 tangents; a cast otherwise).

    Parameters
    ----------
    stored : torch.Tensor, shape (n, d)
    storage : {"fp32", "fp16", "fp16-ball"}
    geometry : PoincareBall, optional
    dtype : torch.dtype, default torch.float32
        Arithmetic of ``exp_0``. In float32 geoopt keeps points at radius
        ``<= (1 - 4e-3)/sqrt(c)``; points stored beyond that (e.g. r = 0.9999) need float64.

    Raises
    ------
    ValueError
        Unknown ``storage``.
    """
    g = _geometry(geometry)
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {list(STORAGES)}, got {storage!r}")
    if storage == "fp16":
        return g.expmap0(stored.to(dtype))
    x = stored.to(dtype)
    if storage == "fp64":
        return x
    if storage == "fp16-ball":  # rounding may land a point on or beyond the boundary
        x = g.proj(x)
    return x


def storage_distance_error(x: torch.Tensor, y: torch.Tensor, storage: str, geometry: Any = None) -> np.ndarray:
    """Relative error of the distances ``d(x_i, y_i)`` after a round trip through a storage mode.

    Parameters
    ----------
    x, y : torch.Tensor, shape (n, d)
        Pairs of points inside the ball (``y`` is stored, ``x`` is the float32 query).
    storage : {"fp32", "fp16", "fp16-ball"}
    geometry : PoincareBall, optional

    Returns
    -------
    numpy.ndarray, shape (n,), float64
        ``|d(x, decode(encode(y))) − d(x, y)| / d(x, y)``, everything but the storage in
        float64: the error is the storage's alone.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> g = torch.Generator().manual_seed(0)
    >>> u = torch.nn.functional.normalize(torch.randn(200, 32, generator=g, dtype=torch.float64), dim=-1)
    >>> x, y = 0.5 * u[:100], 0.999 * u[100:]
    >>> tangent, ball = (storage_distance_error(x, y, s) for s in ("fp16", "fp16-ball"))
    >>> bool(tangent.max() < ball.max())
    True
    """
    g = _geometry(geometry)
    x64, y64 = x.to(torch.float64), y.to(torch.float64)
    ref = g.dist(x64, y64)
    back = decode_points(encode_points(y64, storage, g), storage, g, dtype=torch.float64)
    got = g.dist(x64, g.proj(back))
    return ((got - ref).abs() / ref.clamp_min(1e-12)).numpy()


class ReferenceIndex:
    """Reference embeddings in the Poincaré ball, searched by exact hyperbolic distance.

    Parameters
    ----------
    points : torch.Tensor or array-like, shape (G, d)
        Reference points inside the ball.
    labels : array-like of int, shape (G,), optional
        Kept for the caller (``index.labels``).
    geometry : PoincareBall, optional
        Default ``PoincareBall(1.0)``.
    storage : {"fp32", "fp16", "fp16-ball"}, default "fp16"
        See the module docstring; ``"fp16"`` stores float16 ``log_0`` tangents.
    device : str or torch.device, default "cpu"
        Where the index lives and distances are computed (``"cuda"`` for a GPU).
    query_batch : int, default 256
        Queries per batch.
    ref_chunk : int, default 65536
        References decoded at once.

    Attributes
    ----------
    nbytes : int
        Bytes of the stored embeddings.
    bytes_per_item : int
        ``nbytes / G``.

    Raises
    ------
    ValueError
        Bad shapes, points outside the ball, unknown ``storage``, non-positive batch sizes, a
        geometry other than the Poincaré ball, or (``"fp16"``) non-zero points with a tangent
        norm below float16's reach (~1e-3: use ``"fp32"``).

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ref = PoincareBall(1.0).expmap0(torch.randn(100, 32, generator=torch.Generator().manual_seed(0)))
    >>> index = ReferenceIndex(ref, storage="fp16")
    >>> index.bytes_per_item
    64
    >>> d, i = index.search(ref[:3], k=1)
    >>> i.flatten().tolist()
    [0, 1, 2]
    """

    def __init__(
        self,
        points: Any,
        labels: Any = None,
        *,
        geometry: Any = None,
        storage: str = "fp16",
        device: str | torch.device = "cpu",
        query_batch: int = 256,
        ref_chunk: int = 65536,
    ) -> None:
        self.geometry = _geometry(geometry)
        x = points if isinstance(points, torch.Tensor) else torch.as_tensor(np.asarray(points))
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"points must be a non-empty (G, d) array, got shape {tuple(x.shape)}")
        for name, v in (("query_batch", query_batch), ("ref_chunk", ref_chunk)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.geometry.check_point(x, name="points")
        self.storage = storage
        self.device = torch.device(device)
        self.stored = encode_points(x, storage, self.geometry).to(self.device)
        if storage == "fp16":
            self._check_fp16(x)
        self.labels = None if labels is None else np.asarray(labels)
        self.query_batch, self.ref_chunk = query_batch, ref_chunk

    def _check_fp16(self, x: torch.Tensor) -> None:
        """Refuse points whose float16 tangent loses their direction or norm (tiny norms, issue 27 #9)."""
        t = self.geometry.logmap0(x.detach().to(torch.float64))
        n = t.norm(dim=-1)
        back = self.stored.to("cpu", torch.float64)
        err = (back - t).norm(dim=-1) / n.clamp_min(1e-300)
        bad = (n > 0) & (err > 1e-2)
        if bool(bad.any()):
            raise ValueError(
                f"points: {int(bad.sum())} point(s) have a tangent norm as small as {float(n[bad].min()):.3g}, "
                f"below what float16 storage keeps (~{FP16_MIN_NORM:g}): their ranking would be arbitrary; "
                "use storage='fp32' (or 'fp64') for such points"
            )

    def __len__(self) -> int:
        return int(self.stored.shape[0])

    @property
    def dim(self) -> int:
        """Embedding dimension d."""
        return int(self.stored.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored embeddings."""
        return int(self.stored.element_size() * self.stored.numel())

    @property
    def bytes_per_item(self) -> int:
        """Bytes per reference (64 for d = 32 in float16)."""
        return int(self.stored.element_size() * self.dim)

    def _queries(self, queries: Any) -> torch.Tensor:
        q = queries if isinstance(queries, torch.Tensor) else torch.as_tensor(np.asarray(queries))
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ValueError(f"queries must have shape (Q, {self.dim}), got {tuple(q.shape)}")
        self.geometry.check_point(q, name="queries")
        return q.detach().to(self.device, torch.float64)

    def _out_dtype(self, queries: Any) -> torch.dtype:
        """float64 for float64 queries or fp64 storage, else float32."""
        dt = getattr(queries, "dtype", None)
        return torch.float64 if dt in (torch.float64, np.float64) or self.storage == "fp64" else torch.float32

    def _c(self) -> float:
        c = self.geometry.c
        return float(c.detach()) if isinstance(c, torch.Tensor) else float(c)

    def distances(self, queries: Any) -> torch.Tensor:
        """All query-reference distances, shape (Q, G), on the index's device.

        Computed in float64 from the decoded references (the values :meth:`search` returns)
        and returned in float32 (float64 for float64 queries or ``"fp64"`` storage).

        Raises
        ------
        ValueError
            Queries of the wrong dimension or outside the ball.
        """
        q = self._queries(queries)
        cols = []
        for s in range(0, len(self), self.ref_chunk):  # float64: the values search() returns, on any device
            ref = decode_points(self.stored[s : s + self.ref_chunk], self.storage, self.geometry, dtype=torch.float64)
            cols.append(torch.cat([self.geometry.pairwise_dist(qb, ref) for qb in q.split(self.query_batch)]))
        return torch.cat(cols, dim=1).to(self._out_dtype(queries))

    @torch.no_grad()
    def search(self, queries: Any, k: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
        """The k nearest references of each query by Poincaré distance.

        Parameters
        ----------
        queries : torch.Tensor or array-like, shape (Q, d)
            Points inside the ball (float32 is enough: only the references are compressed).
        k : int, default 20
            In ``[1, G]``.

        Returns
        -------
        distances : torch.Tensor, shape (Q, k), float32 (float64 for float64 queries or ``"fp64"`` storage)
            Ascending per row. Search runs in float64: the candidates (``k + max(k, 16)`` per
            query) from the references decoded in float64, then an exact re-rank with the
            distances computed from differences, so the top-k and its distances are the same
            on a CPU and a GPU whatever the matmul mode (TF32, bfloat16) and float64 points
            are searched exactly.
        indices : torch.Tensor, shape (Q, k), int64
            Reference rows (equal distances in no promised order).

        Raises
        ------
        ValueError
            ``k`` out of range, queries of the wrong dimension or outside the ball.
        """
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(self):
            raise ValueError(f"k must be an integer in [1, {len(self)}], got {k!r}")
        q = self._queries(queries)
        kc = min(len(self), k + max(k, RERANK_MARGIN))  # candidates per query before the exact re-rank
        c = self._c()
        out_d, out_i = [], []
        for qb in q.split(self.query_batch):
            best_d = torch.full((len(qb), 0), float("inf"), device=self.device, dtype=torch.float64)
            best_i = torch.zeros((len(qb), 0), dtype=torch.long, device=self.device)
            for s in range(0, len(self), self.ref_chunk):
                ref = decode_points(self.stored[s : s + self.ref_chunk], self.storage, self.geometry, dtype=q.dtype)
                d = self.geometry.pairwise_dist(qb, ref)  # float64 Gram form: not affected by TF32
                dv, di = torch.topk(d, min(kc, d.shape[1]), dim=1, largest=False, sorted=True)
                cand_d = torch.cat([best_d, dv], dim=1)
                cand_i = torch.cat([best_i, di + s], dim=1)
                order = torch.argsort(cand_d, dim=1, stable=True)[:, :kc]
                best_d, best_i = cand_d.gather(1, order), cand_i.gather(1, order)
            # exact re-rank of the candidates: distances from differences (no matmul, no cancellation)
            refs = decode_points(self.stored[best_i.flatten()], self.storage, self.geometry, dtype=torch.float64)
            d64 = _exact_dist(qb.repeat_interleave(best_i.shape[1], 0), refs, c).view_as(best_d)
            order = torch.argsort(d64, dim=1, stable=True)[:, :k]
            out_d.append(d64.gather(1, order))
            out_i.append(best_i.gather(1, order))
        out = self._out_dtype(queries)
        return torch.cat(out_d).to(out), torch.cat(out_i)


def storage_error_curve(
    radii: Any = (0.5, 0.9, 0.99, 0.999, 0.9999),
    *,
    dim: int = 32,
    n: int = 2000,
    query_radius: float = 0.5,
    quantile: float = 0.99,
    seed: int = 0,
) -> dict[str, list[float]]:
    """The ``quantile`` of the relative distance error of each storage mode, for stored points at each radius.

    Stored points lie at norm ``r`` in random directions, queries at ``query_radius``
    (c = 1); see :func:`storage_distance_error`.

    Parameters
    ----------
    radii : sequence of float in (0, 1)
        Norms of the stored points.
    dim : int, default 32
    n : int, default 2000
        Pairs per radius.
    query_radius : float, default 0.5
    quantile : float, default 0.99
    seed : int, default 0

    Returns
    -------
    dict
        ``{"radius": [...], "fp32": [...], "fp16": [...], "fp16-ball": [...]}``.

    Raises
    ------
    ValueError
        A radius outside (0, 1).

    Examples
    --------
    >>> curve = storage_error_curve((0.9999,), n=500)
    >>> curve["fp16"][0] < 1e-3 < curve["fp16-ball"][0]
    True
    """
    radii = [float(r) for r in radii]
    if any(not 0.0 < r < 1.0 for r in radii):
        raise ValueError(f"radii must lie in (0, 1), got {radii}")
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {"radius": radii, **{s: [] for s in STORAGES}}
    for r in radii:
        u = torch.nn.functional.normalize(torch.randn(2 * n, dim, generator=g, dtype=torch.float64), dim=-1)
        x, y = query_radius * u[:n], r * u[n:]
        for s in STORAGES:
            out[s].append(float(np.quantile(storage_distance_error(x, y, s), quantile)))
    return out
