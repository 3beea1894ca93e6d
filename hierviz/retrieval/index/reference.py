"""The reference index: :class:`ReferenceIndex`, its stored codes, its sizes, and save/load.

The class checks its inputs (ball or hyperboloid points, a storage mode, a backend), encodes
the references (:mod:`.codes`), keeps the per-reference scalars of the score, builds the
optional FAISS engine (:mod:`hierviz.retrieval.faiss_backend`), and inherits its search from
:class:`~hierviz.retrieval.index.search.ExactSearch`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierviz.geometry import Lorentz, PoincareBall
from hierviz.geometry.lorentz import math as lorentz_math
from hierviz.retrieval.index.codes import _geometry, _pack_fp16, _scalar_c, _unpack_fp16, decode_points, encode_points
from hierviz.retrieval.index.search import ExactSearch

#: Search engines of :class:`ReferenceIndex`.
BACKENDS = ("torch", "faiss")
#: FAISS index kinds (``backend="faiss"``).
FAISS_KINDS = ("flat", "ivf", "hnsw")


def _device(device: Any, name: str = "device") -> torch.device:
    """``device`` as a torch.device, or one ValueError line naming the argument and the valid choices."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"{name} must be 'cpu', 'cuda', 'cuda:N' or a torch.device (another torch device type such as 'mps' "
            f"where torch has it), got {device!r}"
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={device!r}: CUDA is not available here; use device='cpu'")
    return dev


class ReferenceIndex(ExactSearch):
    """Reference embeddings in the Poincaré ball, searched by exact hyperbolic distance.

    Parameters
    ----------
    points : torch.Tensor or array-like, shape (G, d)
        Reference points inside the ball.
    labels : array-like of int, shape (G,), optional
        Kept for the caller (``index.labels``).
    geometry : PoincareBall or Lorentz, optional
        Default ``PoincareBall(1.0)``. With ``Lorentz(c)`` the points, queries and ``refine``
        rows are hyperboloid points (d + 1 coordinates, time first), searched through their
        float64 images in ``PoincareBall(c)`` (:attr:`geometry`); distances are Lorentz distances.
    storage : {"fp32", "fp16", "fp16-ball", "fp64"}, default "fp16"
        See the module docstring; ``"fp16"`` stores ``log_0`` tangents as a 16-bit direction
        and a float32 norm (2·d + 4 bytes).
    device : str or torch.device, default "cpu"
        Where the index lives and distances are computed (``"cuda"`` for a GPU; the torch backend).
    query_batch : int, default 256
        Queries per batch.
    ref_chunk : int, default 65536
        References scored at once.
    backend : {"torch", "faiss"}, default "torch"
        The engine that finds the candidates (the exact re-rank is the same).
    kind : {"flat", "ivf", "hnsw"}, default "flat"
        The FAISS index (``backend="faiss"``): ``"flat"`` exact (``IndexFlatIP`` on
        :func:`mips_references`), ``"ivf"`` (cells of the hyperbolic nearest centroid),
        ``"hnsw"`` (a graph on the ball coordinates); see
        :mod:`hierviz.retrieval.faiss_backend`.
    faiss_options : dict, optional
        ``nlist``, ``nprobe`` (IVF), ``hnsw_m``, ``ef_construction``, ``ef_search`` (HNSW),
        ``seed``.
    keep_full : bool, default False
        Keep a float64 copy of the points (8·d bytes a reference more, on ``device``) and
        re-rank the candidates against it, as :meth:`search`'s ``refine`` does: the returned
        distances are then the float64 distances of the points given, not of their codes.
        Without it a compressed storage returns the exact distances *of the stored codes*,
        whose own rounding moves each point by a hyperbolic distance that grows like
        1/(1 − √c‖x‖) (99th percentile at d = 32: 1e-2 for fp16 and 1e-5 for fp32 at radius
        0.997, 0.3 and 3.5e-4 at 0.9999): harmless for the ranking and for the distances to
        queries elsewhere (:func:`storage_error_curve`), but the distance from a query right
        next to its reference comes out at that size, not at the tiny true one.

    Attributes
    ----------
    geometry : PoincareBall
        The ball the index searches in (that of ``Lorentz(c)`` for hyperboloid points).
    input_geometry : PoincareBall or Lorentz
        The geometry given.
    lorentz : bool
        Whether the points are hyperboloid points.
    full : torch.Tensor or None, shape (G, d), float64
        The float64 ball points (``keep_full=True``).
    stored : torch.Tensor, shape (G, d), or (G, d + 2) int16 for ``"fp16"``
        The codes (:func:`encode_points`: float32/float64 coordinates, the tangents' int16
        directions and float32 norms, or float16 coordinates).
    nbytes : int
        Bytes of the stored codes.
    bytes_per_item : int
        Code bytes per reference (68 for fp16 at d = 32: Paper 03's 64 and a 4-byte norm).
    bytes_per_reference : int
        Code, scalars and FAISS index bytes per reference (68 for fp16 at d = 32 with the torch
        backend, 136 for fp32).

    Raises
    ------
    ValueError
        Bad shapes, points outside the ball, unknown ``storage``/``backend``/``kind``,
        non-positive batch sizes, a geometry other than the Poincaré ball or the Lorentz model,
        Lorentz points off the hyperboloid or beyond ~37.4/√c from the origin, or a ``device``
        torch does not know (``"cuda"`` where CUDA is absent).
    ImportError
        ``backend="faiss"`` without ``faiss-cpu`` (``pip install 'hierviz[faiss]'``).

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ref = PoincareBall(1.0).expmap0(torch.randn(100, 32, generator=torch.Generator().manual_seed(0)))
    >>> index = ReferenceIndex(ref, storage="fp16")
    >>> index.bytes_per_item, index.bytes_per_reference
    (68, 68)
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
        backend: str = "torch",
        kind: str = "flat",
        faiss_options: dict[str, Any] | None = None,
        keep_full: bool = False,
    ) -> None:
        self.lorentz = isinstance(geometry, Lorentz)
        self.input_geometry = geometry if self.lorentz else _geometry(geometry, index=True)
        self.geometry = PoincareBall(_scalar_c(geometry.c)) if self.lorentz else self.input_geometry
        x = points if isinstance(points, torch.Tensor) else torch.as_tensor(np.asarray(points))
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"points must be a non-empty (G, d) array, got shape {tuple(x.shape)}")
        if not isinstance(keep_full, bool):
            raise ValueError(f"keep_full must be True or False, got {keep_full!r}")
        for name, v in (("query_batch", query_batch), ("ref_chunk", ref_chunk)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
        if kind not in FAISS_KINDS:
            raise ValueError(f"kind must be one of {list(FAISS_KINDS)}, got {kind!r}")
        if backend == "torch" and kind != "flat":
            raise ValueError(f"kind={kind!r} needs backend='faiss' (the torch backend is exact: kind='flat')")
        x = self._as_ball(x, "points")
        self.geometry.check_point(x, name="points")
        self.storage = storage
        self.device = _device(device)
        self.stored = encode_points(x, storage, self.geometry).to(self.device)
        self.full = x.detach().to(self.device, torch.float64) if keep_full else None
        self.labels = None if labels is None else np.asarray(labels)
        self.query_batch, self.ref_chunk = query_batch, ref_chunk
        self.backend, self.kind = backend, kind
        self.faiss_options = dict(faiss_options or {})
        self._scalars()
        self.faiss = None
        if backend == "faiss":
            from hierviz.retrieval.faiss_backend import FaissEngine  # optional: faiss-cpu, through the FAISS backend

            self.faiss = FaissEngine.build(self, kind, **self.faiss_options)
            self.faiss_options = dict(self.faiss.options)  # with the defaults it chose (saved by save())

    def _as_ball(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """Lorentz points → their float64 images in the ball (``x_s/(1 + √c x_0)``); ball points unchanged."""
        if not self.lorentz:
            return x
        if x.ndim != 2:
            raise ValueError(f"{name} must have shape (n, d + 1) (Lorentz points, time first), got {tuple(x.shape)}")
        x64 = x.detach().to(torch.float64)
        self.input_geometry.check_point(x64, name=name)
        c = self._c()
        p = lorentz_math.to_ball(x64, c)
        far = c * p.pow(2).sum(-1) >= 1.0
        if bool(far.any()):
            rad = torch.acosh((c**0.5 * x64[:, 0]).clamp_min(1.0)) / c**0.5
            raise ValueError(
                f"{name}: {int(far.sum())} Lorentz point(s) lie as far as {float(rad[far].max()):.4g} from the origin; "
                f"the index searches their images in the Poincaré ball in float64, which reach "
                f"~{37.4 / c**0.5:.3g} (ball radius 1/sqrt(c) less float64 rounding); rescale the embeddings closer to the origin"
            )
        return p

    def _decode64(self, rows: torch.Tensor | slice) -> torch.Tensor:
        """The stored points of ``rows`` in float64 (the points the index searches exactly)."""
        return decode_points(self.stored[rows], self.storage, self.geometry, dtype=torch.float64)

    def _scalars(self) -> None:
        """Per-reference scalars of the score in the compute dtype, ``a`` and ``a‖x‖²`` (none for ``"fp16"``:
        its chunks compute them from the stored norm), and the largest radius."""
        c = self._c()
        self._cdt = torch.float64 if self.storage == "fp64" else torch.float32
        a, an2, rmax = [], [], 0.0
        for s in range(0, len(self), self.ref_chunk):
            x = self._decode64(slice(s, s + self.ref_chunk))
            n2 = x.pow(2).sum(-1)
            rmax = max(rmax, float(n2.max().sqrt()))
            if self.storage != "fp16":
                ax = 1.0 / (1.0 - c * n2)
                a.append(ax.to(self._cdt))
                an2.append((ax * n2).to(self._cdt))
        self._a = torch.cat(a) if a else None
        self._an2 = torch.cat(an2) if an2 else None
        self._rmax = rmax

    def __len__(self) -> int:
        return int(self.stored.shape[0])

    @property
    def dim(self) -> int:
        """Embedding dimension d."""
        return int(self.stored.shape[1]) - (2 if self.storage == "fp16" else 0)

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored codes."""
        return int(self.stored.element_size() * self.stored.numel())

    @property
    def bytes_per_item(self) -> int:
        """Code bytes per reference (``"fp16"``: 2·d + 4, 68 at d = 32: the 16-bit direction and the float32 norm)."""
        return int(self.stored.element_size() * self.stored.shape[1])

    @property
    def scalar_bytes_per_item(self) -> int:
        """Bytes of the per-reference scalars of the score (fp16: 0, fp32 and fp16-ball: 8, fp64: 16)."""
        return 0 if self._a is None else int(2 * self._a.element_size())

    @property
    def bytes_per_reference(self) -> int:
        """Codes + scalars + the float64 copy (``keep_full=True``: 8·d) + the FAISS index, per reference."""
        extra = 0 if self.faiss is None else self.faiss.nbytes / len(self)
        full = 0 if self.full is None else 8 * self.dim
        return int(round(self.bytes_per_item + self.scalar_bytes_per_item + full + extra))

    @property
    def point_dim(self) -> int:
        """Coordinates of an input point: d in the ball, d + 1 on the hyperboloid (time first)."""
        return self.dim + (1 if self.lorentz else 0)

    def _queries(self, queries: Any) -> torch.Tensor:
        q = queries if isinstance(queries, torch.Tensor) else torch.as_tensor(np.asarray(queries))
        if q.ndim != 2 or q.shape[1] != self.point_dim:
            raise ValueError(f"queries must have shape (Q, {self.point_dim}), got {tuple(q.shape)}")
        q = self._as_ball(q, "queries")
        self.geometry.check_point(q, name="queries")
        return q.detach().to(self.device, torch.float64)

    def _out_dtype(self, queries: Any) -> torch.dtype:
        """float64 for float64 queries or fp64 storage, else float32."""
        dt = getattr(queries, "dtype", None)
        return torch.float64 if dt in (torch.float64, np.float64) or self.storage == "fp64" else torch.float32

    def _c(self) -> float:
        return _scalar_c(self.geometry.c)

    def distances(self, queries: Any) -> torch.Tensor:
        """All query-reference distances, shape (Q, G), on the index's device.

        Computed in float64 by the geometry's ``pairwise_dist`` from the stored points, or
        from the float64 copy with ``keep_full=True``, and returned in float32 (float64 for
        float64 queries or ``"fp64"`` storage). ``pairwise_dist`` works from a Gram matrix,
        whose cancellation scatters the distance of two equal points around 0 by ~1e-8;
        every pair closer than ``1e-3 / √c`` is therefore computed again by the geometry's
        ``dist`` from the differences (:meth:`Geometry.refine_near`), as :meth:`search` does: equal
        points are exactly 0 apart, so a collapsed embedding ties exactly and the metrics'
        expectation over tied orders applies (:mod:`hierviz.metrics.retrieval`).

        Raises
        ------
        ValueError
            Queries of the wrong dimension or outside the ball.
        """
        q = self._queries(queries)
        cols = []
        for s in range(0, len(self), self.ref_chunk):
            rows = slice(s, s + self.ref_chunk)
            ref = self._decode64(rows) if self.full is None else self.full[rows]
            parts = []
            for qb in q.split(self.query_batch):
                parts.append(self.geometry.refine_near(self.geometry.pairwise_dist(qb, ref), qb, ref))
            cols.append(torch.cat(parts))
        return torch.cat(cols, dim=1).to(self._out_dtype(queries))

    def augmented_chunk(self, start: int, stop: int, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The reference side ``[a, −2a·x, a‖x‖²]`` of rows ``start:stop`` from the codes and scalars.

        Parameters
        ----------
        start, stop : int
        dtype : torch.dtype, optional
            Default: float64 for ``"fp64"`` storage, else float32.

        Returns
        -------
        torch.Tensor, shape (stop − start, d + 2)
        """
        cdt = dtype or self._cdt
        if self.storage == "fp16":  # x = r·w/‖w‖, r = tanh(√c ν)/√c: a = cosh²(√c ν), a‖x‖² = sinh²(√c ν)/c
            code = self.stored[start:stop]
            _, wn, nu = _unpack_fp16(code)
            c = self._c()
            t = c**0.5 * nu
            a64 = torch.cosh(t).pow(2)
            beta = torch.where(wn > 0, -2.0 * a64 * (torch.tanh(t) / c**0.5) / wn.clamp_min(1.0), torch.zeros_like(t))
            a, an2 = a64.to(cdt), (torch.sinh(t).pow(2) / c).to(cdt)
            return torch.cat([a[:, None], code[:, :-2].to(cdt) * beta.to(cdt)[:, None], an2[:, None]], dim=1)
        a, an2 = self._a[start:stop].to(cdt), self._an2[start:stop].to(cdt)
        if self.storage in ("fp32", "fp64"):
            mid = self.stored[start:stop].to(cdt) * (-2.0 * a)[:, None]
        else:  # fp16-ball: the projected float16 coordinates
            mid = self._decode64(slice(start, stop)).to(cdt) * (-2.0 * a)[:, None]
        return torch.cat([a[:, None], mid, an2[:, None]], dim=1)

    def save(self, path: Any) -> None:
        """Write the index to the folder ``path``: ``index.npz`` (codes, labels, settings) and ``faiss.index``.

        Raises
        ------
        ValueError
            A folder that cannot be written.
        """

        folder = _make_folder(path, "path", "choose another folder")
        meta = {
            "storage": self.storage, "c": self._c(), "query_batch": self.query_batch, "ref_chunk": self.ref_chunk,
            "backend": self.backend, "kind": self.kind, "faiss_options": self.faiss_options,
            "model": "lorentz" if self.lorentz else "poincare",
        }  # fmt: skip

        arrays = {"stored": self.stored.cpu().numpy(), "meta": np.array(json.dumps(meta))}
        if self.labels is not None:
            arrays["labels"] = self.labels
        if self.full is not None:
            arrays["full"] = self.full.cpu().numpy()
        np.savez(folder / "index.npz", **arrays)
        if self.faiss is not None:
            self.faiss.save(folder / "faiss.index")

    @classmethod
    def load(cls, path: Any, *, device: str | torch.device = "cpu") -> ReferenceIndex:
        """An index written by :meth:`save` (the FAISS index is read, not rebuilt).

        Raises
        ------
        ValueError
            No ``index.npz`` in ``path``.
        """

        folder = Path(path)
        if not (folder / "index.npz").is_file():
            raise ValueError(f"path {folder}: no index.npz there; pass a folder written by ReferenceIndex.save")
        with np.load(folder / "index.npz") as f:
            stored = torch.from_numpy(f["stored"])
            labels = f["labels"] if "labels" in f.files else None
            full = torch.from_numpy(f["full"]) if "full" in f.files else None
            meta = json.loads(str(f["meta"]))
        self = cls.__new__(cls)
        self.geometry = PoincareBall(meta["c"])
        self.lorentz = meta.get("model") == "lorentz"
        self.input_geometry = Lorentz(meta["c"]) if self.lorentz else self.geometry
        self.storage, self.device = meta["storage"], _device(device)
        if meta["storage"] == "fp16" and stored.dtype == torch.float16:  # hierviz <= 0.3: float16 log0 tangents
            stored = _pack_fp16(stored.to(torch.float64))
        self.stored = stored.to(self.device)
        self.full = None if full is None else full.to(self.device)
        self.labels = labels
        self.query_batch, self.ref_chunk = int(meta["query_batch"]), int(meta["ref_chunk"])
        self.backend, self.kind, self.faiss_options = meta["backend"], meta["kind"], dict(meta["faiss_options"])
        self._scalars()
        self.faiss = None
        if self.backend == "faiss":
            from hierviz.retrieval.faiss_backend import FaissEngine  # optional: faiss-cpu, through the FAISS backend

            self.faiss = FaissEngine.load(self, folder / "faiss.index")
        return self


def _make_folder(path: Any, name: str, fix: str) -> Path:
    """Create the folder ``path`` (with its parents; an existing one is kept) and return it.

    Parameters
    ----------
    path : str or PathLike
    name : str
        What the folder is to the user, first in the message (``"--out"``, ``"path"``).
    fix : str
        What to do instead, last in the message.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        ``"<name> <path>: cannot write there (<reason>); <fix>"`` where the folder cannot be made
        (a file in the way, no permission), instead of the ``OSError``.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _make_folder(root / "a" / "b", "--out", "choose another") == root / "a" / "b"
    True
    >>> _ = (root / "file").write_text("x")
    >>> _make_folder(root / "file" / "c", "--out", "choose another")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --out .../file/c: cannot write there (Not a directory); choose another
    """
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{name} {folder}: cannot write there ({exc.strerror or exc}); {fix}") from None
    return folder
