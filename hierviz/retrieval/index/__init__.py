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
neighbours are within float32's reach of each other) is searched again with ``WIDEN`` = 4 times
as many candidates, then, if it still fails, with the augmented vectors of the float64 points
and a float64 GEMM under the same test with float64's roundoff, and by a float64 brute force
from differences if even that is too close. The top-k is therefore the exact top-k of the stored points on any device and
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

The package, one idea a module: :mod:`.codes` (the storage modes, :func:`encode_points`,
:func:`decode_points`, their errors), :mod:`.scores` (the augmented vectors, the exact float64
scores and distances, :func:`merge_results`), :mod:`.search` (candidates, re-rank, certificate and
fallbacks), :mod:`.reference` (:class:`ReferenceIndex`: inputs, codes, sizes, save and load).
"""

from hierviz.retrieval.index.codes import (
    CODE_SCALE,
    STORAGES,
    decode_points,
    encode_points,
    storage_distance_error,
    storage_error_curve,
)
from hierviz.retrieval.index.reference import BACKENDS, FAISS_KINDS, ReferenceIndex
from hierviz.retrieval.index.scores import (
    augment_queries,
    augment_references,
    merge_results,
    mips_references,
    poincare_scores,
)
from hierviz.retrieval.index.search import RERANK_MARGIN

__all__ = [
    "STORAGES",
    "BACKENDS",
    "FAISS_KINDS",
    "RERANK_MARGIN",
    "CODE_SCALE",
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
