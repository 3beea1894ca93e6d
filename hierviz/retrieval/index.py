r"""A reference index in the Poincaré ball: exact k-NN as one GEMM, compact storage, optional FAISS.

Paper 03 (Hyper-DINO) §2.4 ranks the reference (training) images by Poincaré distance to
each query; its §4 stresses the size: 32 float16 numbers, 64 bytes per image. Storing
*ball coordinates* in float16 loses the points near the boundary (float16 keeps ~3
digits, and :math:`1 - \|x\|` is what the distance depends on), so :class:`ReferenceIndex`
stores :math:`\log_0` *tangent vectors* (``DESIGN.md``, "fp16 storage of hyperbolic
points"; :func:`storage_distance_error` measures both): the direction in 16 bits a
coordinate and the norm as one float32, 2·d + 4 bytes (68 at d = 32).

**Ranking as a maximum-inner-product search.** On the ball of curvature :math:`-c`

.. math::

    d_c(q, x) = \tfrac{2}{\sqrt c}\,\operatorname{arsinh}\sqrt{\frac{c\,\|q - x\|^2}
    {(1 - c\|q\|^2)(1 - c\|x\|^2)}}

is increasing in the fraction under the root, and for a fixed query the factor
:math:`1/(1 - c\|q\|^2)` is a positive constant, so the k nearest references are the k
smallest *scores*

.. math::

    s(q, x) = \frac{\|q - x\|^2}{1 - c\|x\|^2}
    = a_x\|q\|^2 - 2a_x\,q\cdot x + a_x\|x\|^2
    = \langle [\|q\|^2,\ q,\ 1],\ [a_x,\ -2a_x x,\ a_x\|x\|^2] \rangle,
    \qquad a_x = \frac{1}{1 - c\|x\|^2}

(:func:`augment_queries`, :func:`augment_references`): one GEMM in :math:`d + 2`
dimensions plus a top-k, the work of a Euclidean search. Negating the reference side
(:func:`mips_references`) turns it into the *largest* inner product, the form of a
maximum-inner-product engine (FAISS's ``METRIC_INNER_PRODUCT``). The Lorentz model has the
same form with no augmentation: :math:`\cosh(\sqrt c\,d) = -c\langle q, x\rangle_L`, so
the nearest points maximise :math:`\langle [-q_0, \vec q], [x_0, \vec x]\rangle`.
:class:`ReferenceIndex` takes hyperboloid points too (``geometry=Lorentz(c)``, points and
queries of shape (·, d + 1), time first): it maps them with the isometry
:math:`p = \vec x/(1 + \sqrt c\,x_0)` to the ball of the same curvature in float64 and searches
there, so the returned distances are the Lorentz distances (equal by the isometry, to float64
rounding). The float64 ball reaches about :math:`37.4/\sqrt c` from the origin; Lorentz points
beyond it are refused with that figure.

``"fp16"`` storage keeps :math:`v = \log_0 x` as its norm :math:`\nu = \|v\|` (float32) and its
direction :math:`w = \operatorname{round}(32767\,v/\max_i|v_i|)` (int16: 16-bit fixed point
scaled by the largest coordinate, an absolute error below :math:`2^{-16}` of that
coordinate, where float16 has :math:`2^{-11}` of each coordinate: on the benchmark's clustered
data at d = 32 and G = 10^6 the top-20 of the codes holds 0.9996 of the true top-20, against
0.9984 for float16 tangents). The stored point is :math:`x = r\,w/\|w\|` with :math:`r = \tanh(\sqrt c\,\nu)/\sqrt c`,
so :math:`a_x = \cosh^2(\sqrt c\,\nu)`, :math:`a_x\|x\|^2 = \sinh^2(\sqrt c\,\nu)/c` and the
reference side is :math:`[a_x, (-2a_x r/\|w\|)\,w, a_x\|x\|^2]`: a GEMM on the upcast codes,
with the three scalars computed per chunk from :math:`\nu` (no stored scalars: 2·d + 4
bytes, 68 at d = 32). Tiny tangent norms lose nothing (:math:`\nu = 10^{-9}` is a float32
like any other; float16 tangents flushed them to zero), and the origin is the zero code.
fp32 storage keeps :math:`a_x` and :math:`a_x\|x\|^2` beside the coordinates (8 bytes: 136
at d = 32). No chunk is decoded through :math:`\exp_0` at search time.

**Exactness.** The scores are computed in float32, and near the boundary the three terms
of :math:`s` cancel. A float32 dot product of :math:`n = d + 2` terms is off by at most
:math:`\gamma\sum_i|t_i| \le \gamma\,a_x(\|q\| + \|x\|)^2` (:math:`\gamma \approx n u`, u the
unit roundoff of the matmul mode, TF32 and bfloat16 modes included). Search keeps
``k + max(k, RERANK_MARGIN)`` candidates per query (a margin of 16, or k, whichever is
larger: room for the float32 order to differ from the exact one), re-ranks them with the
exact distance in float64 computed from differences, then *certifies* the result: with
:math:`S_k` the exact k-th score, a reference can only belong to the top-k if
:math:`a_x(\|x\| - \|q\|)^2 \le S_k`, i.e. if its norm lies below
:math:`r_{hi} = (\|q\| + \sqrt{S_k(1 - c\|q\|^2 + cS_k)})/(1 + cS_k)`; if the smallest
float32 score left out exceeds :math:`S_k + \gamma\,a(r_{hi})(\|q\| + r_{hi})^2`, nothing
left out can beat the k-th. A query that fails the test (queries near the boundary whose
neighbours are within float32's reach of each other) is searched again with the augmented
vectors of the float64 points and a float64 GEMM, under the same test with float64's
roundoff, and by a float64 brute force from differences if even that is too close. The top-k is therefore the exact top-k of the stored points on any device and
in any matmul mode, and the returned distances are the exact float64 distances of the
stored points, computed for the returned top-k only.

Storage modes (``storage=``; bytes at d = 32, codes + scalars):

* ``"fp32"``: ball coordinates, float32 (4·d + 8 bytes: 136);
* ``"fp16"``: :math:`\log_0` tangents, a 16-bit direction and a float32 norm (2·d + 4 bytes: 68;
  Paper 03's 64-byte code plus the norm);
* ``"fp16-ball"``: ball coordinates, float16 (2·d + 8 bytes; the naive choice, for comparison);
* ``"fp64"``: ball coordinates, float64 (8·d + 16 bytes), searched in float64.

Backends (``backend=``): ``"torch"`` (the GEMM above, chunked, CPU or GPU) or ``"faiss"``
(:mod:`hierviz.retrieval.faiss_backend`: ``kind="flat"`` exact, ``"ivf"`` and ``"hnsw"``
approximate; ``pip install 'hierviz[faiss]'``). Search walks the references in chunks
(``ref_chunk``) and the queries in batches (``query_batch``), so the memory beyond the
stored index is ``query_batch × ref_chunk`` float32 scores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierviz.geometry import DEFAULT_CURVATURE, Lorentz, PoincareBall
from hierviz.geometry.lorentz import math as lorentz_math

__all__ = [
    "STORAGES",
    "BACKENDS",
    "FAISS_KINDS",
    "ReferenceIndex",
    "augment_queries",
    "augment_references",
    "mips_references",
    "poincare_scores",
    "merge_results",
    "encode_points",
    "decode_points",
    "storage_distance_error",
    "storage_error_curve",
]

#: Storage modes of :class:`ReferenceIndex`.
STORAGES = ("fp32", "fp16", "fp16-ball", "fp64")


def _geometry(geometry: Any, index: bool = False):
    if geometry is None:
        return PoincareBall(1.0)
    if not isinstance(geometry, PoincareBall):
        if index:
            raise ValueError(
                "the reference index works in the Poincaré ball or the Lorentz model, got "
                f"geometry={type(geometry).__name__}"
            )
        raise ValueError(
            f"this function works in the Poincaré ball only, got geometry={type(geometry).__name__}; "
            "map Lorentz points to the ball first (Lorentz.to_ball) and pass a PoincareBall "
            "(ReferenceIndex takes Lorentz points itself)"
        )
    return geometry


def _scalar_c(c: Any) -> float:
    """A geometry's curvature magnitude as a float (a learnable one is a 0-d tensor)."""
    return float(c.detach()) if isinstance(c, torch.Tensor) else float(c)


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


#: Candidates kept per query before the exact re-rank: ``k + max(k, RERANK_MARGIN)``.
RERANK_MARGIN = 16
#: Search engines of :class:`ReferenceIndex`.
BACKENDS = ("torch", "faiss")
#: FAISS index kinds (``backend="faiss"``).
FAISS_KINDS = ("flat", "ivf", "hnsw")
#: Largest magnitude of the 16-bit direction codes of ``"fp16"`` storage (the largest coordinate of each).
CODE_SCALE = 32767


def _pack_fp16(v: torch.Tensor) -> torch.Tensor:
    """float64 tangents (n, d) → (n, d + 2) int16: the direction in 16-bit fixed point, then the float32 norm's bits."""
    nu = v.norm(dim=-1, keepdim=True)
    m = v.abs().amax(dim=-1, keepdim=True) if v.shape[-1] else nu
    w = torch.where(m > 0, torch.round(v / m.clamp_min(torch.finfo(torch.float64).tiny) * CODE_SCALE), 0.0)
    bits = nu.to(torch.float32).contiguous().view(torch.int16)  # (n, 2): the float32 norm, bit for bit
    return torch.cat([w.to(torch.int16), bits], dim=1)


def _unpack_fp16(code: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(n, d + 2) int16 codes → directions ``w`` (n, d) float64, their norms ``‖w‖`` (n,) and tangent norms ``ν`` (n,)."""
    w = code[:, :-2].to(torch.float64)
    nu = code[:, -2:].contiguous().view(torch.float32).to(torch.float64).squeeze(-1)
    return w, w.norm(dim=-1), nu


def _fp16_points(code: torch.Tensor, c: float) -> torch.Tensor:
    """The ball points of ``"fp16"`` codes, float64: ``tanh(√c ν)/√c · w/‖w‖`` (the origin where ν or w is 0)."""
    w, wn, nu = _unpack_fp16(code)
    r = torch.tanh(c**0.5 * nu) / c**0.5
    scale = torch.where(wn > 0, r / wn.clamp_min(1.0), torch.zeros_like(r))
    return w * scale[:, None]


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
    r"""Ball points → the stored tensor of a storage mode (see the module docstring).

    Parameters
    ----------
    x : torch.Tensor, shape (n, d)
        Points inside the ball.
    storage : {"fp32", "fp16", "fp16-ball", "fp64"}
    geometry : PoincareBall, optional
        Default ``PoincareBall(1.0)``.

    Returns
    -------
    torch.Tensor
        ``"fp32"``/``"fp64"``: the coordinates, shape (n, d), float32/float64; ``"fp16-ball"``:
        float16 coordinates, (n, d); ``"fp16"``: int16 codes, shape (n, d + 2): the direction
        of :math:`v = \log_0 x` in 16-bit fixed point (``round(v / max_i |v_i| · 32767)``), then
        the two int16 halves of the float32 norm :math:`\|v\|` (2·d + 4 bytes a point).

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
        return _pack_fp16(g.logmap0(x.detach().to(torch.float64)))
    return x.detach().to(torch.float16)


def decode_points(
    stored: torch.Tensor, storage: str, geometry: Any = None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    r"""The stored tensor → ball points, shape (n, d) (``exp_0`` of the fp16 tangent codes; a cast otherwise).

    Parameters
    ----------
    stored : torch.Tensor, shape (n, d), or (n, d + 2) int16 for ``"fp16"``
        What :func:`encode_points` returned.
    storage : {"fp32", "fp16", "fp16-ball", "fp64"}
    geometry : PoincareBall, optional
    dtype : torch.dtype, default torch.float32
        Dtype of the points. ``"fp16"`` codes decode in float64
        (:math:`\tanh(\sqrt c\,\|v\|)/\sqrt c` times the unit direction) and are then
        cast; in float32 geoopt keeps points at radius ``<= (1 - 4e-3)/sqrt(c)``, so points
        stored beyond that (e.g. r = 0.9999) need float64.

    Raises
    ------
    ValueError
        Unknown ``storage``.
    """
    g = _geometry(geometry)
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {list(STORAGES)}, got {storage!r}")
    if storage == "fp16":
        c = g.c
        x = _fp16_points(stored, float(c.detach()) if isinstance(c, torch.Tensor) else float(c))
        return x if dtype == torch.float64 else g.proj(x.to(dtype))
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


class ReferenceIndex:
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
        float64 queries or ``"fp64"`` storage). ``pairwise_dist`` works from a Gram matrix:
        for near-duplicate points next to the boundary (a distance of 1e-5 at radius
        0.9999) it is off by up to ~2 % relative, where :meth:`search` computes its top-k
        from differences, exactly.

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
            cols.append(torch.cat([self.geometry.pairwise_dist(qb, ref) for qb in q.split(self.query_batch)]))
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
        if self.faiss is None:
            scores, cand = self._torch_candidates(q, kc)
            u = _unit_roundoff(self._cdt, self.device)
        else:
            scores, cand = self.faiss.candidates(q, kc, k)
            u = 2.0**-24
        exact = self.faiss is None or self.kind == "flat"
        dist, idx = self._rerank(q, cand, k)
        if exact and kc < len(self):
            ok = self._certified(q, poincare_scores(q, self._decode64(idx[:, -1]), c), scores[:, -1], u)
            if not bool(ok.all()):  # again in float64 (one GEMM), then by brute force where even that is too close
                bad = torch.nonzero(~ok).flatten()
                s64, c64 = self._torch_candidates(q[bad], kc, exact64=True)
                bd, bi = self._rerank(q[bad], c64, k)
                ok64 = self._certified(
                    q[bad], poincare_scores(q[bad], self._decode64(bi[:, -1]), c), s64[:, -1], 2.0**-53
                )
                if not bool(ok64.all()):
                    worst = torch.nonzero(~ok64).flatten()
                    bd[worst], bi[worst] = self._brute_force(q[bad[worst]], k)
                dist, idx = dist.clone(), idx.clone()
                dist[bad], idx[bad] = bd, bi
                cand = cand.clone()
                cand[bad, :k] = bi  # the refine step below sees the exact top-k of those queries
        if ref_full is not None:
            pool = torch.cat([idx, cand], dim=1)
            full = ref_full.detach().to(self.device, torch.float64)
            self.geometry.check_point(full[pool.clamp_min(0).flatten()], name="refine")
            d_full = _exact_dist(q[:, None, :], full[pool.clamp_min(0)], c).masked_fill(pool < 0, float("inf"))
            dist, idx = _select(d_full, pool, k)
        return dist.to(self._out_dtype(queries)), idx

    def save(self, path: Any) -> None:
        """Write the index to the folder ``path``: ``index.npz`` (codes, labels, settings) and ``faiss.index``.

        Raises
        ------
        ValueError
            A folder that cannot be written.
        """

        folder = Path(path)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"path {folder}: cannot write there ({exc.strerror or exc}); choose another folder"
            ) from None
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
