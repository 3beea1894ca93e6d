"""Paper 03 (Hyper-DINO) in the run core: the mapper trained by :func:`~hierviz.training.fit`, and retrieval.

* :class:`MapperModel`: Paper 03 §2.2's mapper, the MLP ``D → 256 → d`` followed by the
  run geometry's map (:func:`hierviz.models.manifold_head`): on a hyperbolic geometry the
  :class:`~hierviz.models.HyperbolicHead` (data-initialised scale, smooth tanh bound: no hard cap
  that traps whole folds), on the Euclidean geometry the unit sphere
  (:class:`CosineMapper`, the cosine control). Chosen by ``geometry.hyperbolic``, never by name.
* :func:`fit_mapper`: trains one with :class:`~hierviz.losses.HCLLoss` through the one
  optimiser loop, :func:`hierviz.training.fit` (Adam, constant learning rate, §3.2).
  ``hierviz.retrieval.train_mapper`` and the figure helpers of ``hierviz.viz.retrieval`` call it.
* The ``retrieval`` evaluation protocol (:data:`~hierviz.evaluation.PROTOCOLS`): every test
  row is a query ranked against the training rows by the run geometry's distance, MAP@k for
  k ∈ {1, 5, 10, 20}, P@1 and R-precision (§3.1); ``retrieval-cosine`` ranks by the cosine
  distance of the directions ``log_0(z)/‖log_0(z)‖`` (the cosine control's ranking).
  ``hierviz compare --protocol retrieval`` puts any method in the table; the report adds the
  expected scores of a random ranking as a *chance* row (:func:`chance_scores`).
  ``eval.index`` (:data:`RETRIEVAL_INDEXES`) chooses how a Poincaré or Lorentz run's top-20 is found:
  ``"exact"`` (the full distance matrix) or a FAISS index of :class:`hierviz.retrieval.ReferenceIndex`
  (``"faiss-flat"``, ``"faiss-ivf"``, ``"faiss-hnsw"``; registered in :data:`INDEXES` by
  :mod:`hierviz.retrieval`); the run's metrics then add ``index_recall@20`` against the exact top-20.
* The ``retrieval-folds`` protocol (``hierviz retrieval`` is an alias of ``compare``):
  Paper 03's grouped cross-validation, run seed ``s`` of a plan with ``seeds = K`` is fold ``s``
  (fold ``s mod eval.folds`` when ``eval.folds`` is set: several seeds per fold) of
  :func:`grouped_folds` (``make_split``, ``per_seed``); a model may rank the rows itself
  (``model.ranking``: the base features by Euclidean distance, the mapper through its
  float16 reference index), else the run geometry's distance ranks them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import TensorDataset

from hierviz._registry import Registry
from hierviz.evaluation.classification import _EmbeddingsRecord, embed_dataset
from hierviz.evaluation.protocols import EvalContext, register_protocol
from hierviz.geometry import get_geometry
from hierviz.losses import HCLLoss, Objective
from hierviz.metrics import parent_prototypes
from hierviz.metrics.baselines import random_ranking_scores
from hierviz.metrics.radius import clip_fraction, origin_distance
from hierviz.metrics.retrieval import flat_retrieval_report, ndcg
from hierviz.models import manifold_head
from hierviz.training import TrainConfig, fit, seed_everything

__all__ = [
    "INDEXES",
    "RETRIEVAL_INDEXES",
    "MAPPER_HIDDEN",
    "RETRIEVAL_KS",
    "MapperModel",
    "CosineMapper",
    "fit_mapper",
    "MapperOutput",
    "retrieval_metrics",
    "cosine_distances",
    "chance_scores",
    "RetrievalRecord",
    "retrieval_protocol",
    "cosine_retrieval_protocol",
    "grouped_folds",
    "grouped_fold_split",
    "FoldRetrievalRecord",
    "fold_retrieval_protocol",
]

#: Hidden width of Paper 03's mapper (§2.2: 256).
MAPPER_HIDDEN = 256
#: MAP@k cut-offs of Paper 03 §3.1.
RETRIEVAL_KS = (1, 5, 10, 20)
#: Values of ``eval.index``: how the ``retrieval`` protocol finds each query's top-20 on the Poincaré ball.
RETRIEVAL_INDEXES = ("exact", "faiss-flat", "faiss-ivf", "faiss-hnsw")
#: ``eval.index`` name → ``factory(points (G, d) float tensor, geometry)`` returning an object with
#: ``search(queries, k) -> (distances, indices)``; :mod:`hierviz.retrieval` registers the FAISS ones.
INDEXES: Registry = Registry("retrieval index")


def _geometry(geometry: Any) -> Any:
    if isinstance(geometry, str):
        return get_geometry(geometry)
    if not callable(getattr(geometry, "expmap0", None)):
        raise ValueError(f"geometry: expected a hierviz Geometry or a registered name, got {type(geometry).__name__}")
    return geometry


class MapperModel(nn.Module):
    r"""Paper 03 (Hyper-DINO) §2.2's mapper: ``z = head(W_2 ReLU(W_1 x + b_1) + b_2)``.

    ``head`` is :func:`hierviz.models.manifold_head` of ``geometry``: on a hyperbolic
    geometry the :class:`~hierviz.models.HyperbolicHead` (a learned scale set from the first
    training batch so that the median row lands at geodesic radius ``init_radius``, then the
    smooth bound :math:`\tfrac{\rho}{\sqrt c}\tanh(\sqrt c\|v\|/\rho)` and ``expmap0``), on the
    Euclidean geometry the unit sphere. The paper's hard cap :math:`\|h\| \le (1-\delta)/\sqrt c`
    (:class:`hierviz.models.HyperbolicMapper`) has no radial gradient past it: in whole folds
    every point ended there. The smooth bound always has one.

    Parameters
    ----------
    dim_in : int, >= 1
        Input feature size D (e.g. N of PCA(N)).
    dim_out : int, >= 1, default 32
        Embedding dimension d (Lorentz: points have d + 1 coordinates).
    geometry : Geometry or str, default "poincare"
    hidden : int, default 256
    clip_r : float, default 3.0
        The head's bound ρ (:class:`~hierviz.models.HyperbolicHead`).
    init_radius : float, default 1.0
        Geodesic radius of the median training row after the scale's initialisation.

    Attributes
    ----------
    clip_fraction : float
        Share of the rows of the last eval-mode call whose geodesic radius lies within
        1e-3 of the head's largest radius (:func:`hierviz.metrics.clip_fraction`); 0 on
        the sphere.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> m = MapperModel(6, 4).train()
    >>> z = m(torch.randn(32, 6))
    >>> z.shape, round(float(origin_distance(z, m.geometry).median()), 3)  # median row at radius 1
    (torch.Size([32, 4]), 1.0)
    """

    def __init__(
        self,
        dim_in: int,
        dim_out: int = 32,
        geometry: Any = "poincare",
        *,
        hidden: int = MAPPER_HIDDEN,
        clip_r: float = 3.0,
        init_radius: float = 1.0,
    ) -> None:
        super().__init__()
        for name, v in (("dim_in", dim_in), ("dim_out", dim_out), ("hidden", hidden)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.geometry = _geometry(geometry)
        self.dim_in, self.dim_out = int(dim_in), int(dim_out)
        self.net = nn.Sequential(nn.Linear(self.dim_in, hidden), nn.ReLU(), nn.Linear(hidden, self.dim_out))
        self.to_manifold = manifold_head(self.geometry, clip_r=clip_r, scale_init="auto", init_radius=init_radius)
        self.clip_fraction = 0.0

    @property
    def max_radius(self) -> float | None:
        """The head's largest geodesic radius (None on the sphere)."""
        return getattr(self.to_manifold, "max_radius", None)

    @property
    def radius(self) -> float | None:
        """On the Poincaré ball, the largest Euclidean norm ``‖h‖ = tanh(√c·bound)/√c`` the head reaches.

        The 0.2 mapper's cap ``1 − δ`` had this role; the smooth bound approaches it, never
        clips at it. None where the geometry has no ball radius (the sphere, the hyperboloid).
        """
        bound = getattr(self.to_manifold, "tangent_bound", None)
        if bound is None or not hasattr(self.geometry, "radius"):
            return None
        sqrt_c = 1.0 / float(self.geometry.radius)
        return math.tanh(sqrt_c * bound) / sqrt_c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map features onto the manifold.

        Parameters
        ----------
        x : torch.Tensor, shape (B, D) or (B, V, D), float

        Returns
        -------
        torch.Tensor, shape (B, d) or (B, V, d) (Lorentz: d + 1)

        Raises
        ------
        ValueError
            The last dimension is not ``dim_in``, or NaN/inf in ``x``.
        """
        if x.shape[-1] != self.dim_in or x.ndim not in (2, 3):
            raise ValueError(f"x must have shape (B, {self.dim_in}) or (B, V, {self.dim_in}), got {tuple(x.shape)}")
        if not self.training and not bool(torch.isfinite(x).all()):
            raise ValueError("x holds NaN or inf; check the features file")
        z = self.to_manifold(self.net(x))
        if not self.training:
            top = self.max_radius
            flat = z.detach().reshape(-1, z.shape[-1])
            self.clip_fraction = 0.0 if top is None or not len(flat) else clip_fraction(
                origin_distance(flat, self.geometry).cpu().numpy(), top
            )  # fmt: skip
        return z


class CosineMapper(MapperModel):
    """The cosine control: :class:`MapperModel` on the Euclidean geometry (the unit sphere).

    HCL then scores the chordal distance :math:`\\sqrt{2 - 2\\cos}`, a monotone function of the
    cosine distance: supervised metric learning on the same labels, without the ball.

    Examples
    --------
    >>> h = CosineMapper(6, 4)(torch.randn(3, 6))
    >>> h.shape, bool(torch.allclose(h.norm(dim=-1), torch.ones(3)))
    (torch.Size([3, 4]), True)
    """

    def __init__(
        self, dim_in: int, dim_out: int = 32, geometry: Any = "euclidean", *, hidden: int = MAPPER_HIDDEN
    ) -> None:
        super().__init__(dim_in, dim_out, geometry, hidden=hidden)
        if self.geometry.hyperbolic:
            raise ValueError(f"geometry: the cosine control maps onto the unit sphere, got {self.geometry!r}")


class MapperOutput(nn.Module):
    """``{"z": mapper(x)}``: the output dict :func:`hierviz.training.fit` reads."""

    def __init__(self, mapper: nn.Module) -> None:
        super().__init__()
        self.mapper = mapper

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.mapper(x)}


def fit_mapper(
    x: Any,
    y: Any,
    *,
    geometry: Any = "poincare",
    dim_out: int = 32,
    hidden: int = MAPPER_HIDDEN,
    epochs: int = 100,
    batch_size: int = 128,
    lr: float = 1e-3,
    weight_decay: float = 1e-5,
    m0: float = 0.5,
    alpha: float = 0.1,
    lam: float = 1e-3,
    seed: int = 0,
    device: Any = "cpu",
    progress: bool = False,
) -> tuple[MapperModel, list[float]]:
    """Train a :class:`MapperModel` with HCL through :func:`hierviz.training.fit` (Paper 03 §3.2).

    Adam (L2 weight decay), constant learning rate, shuffled batches of ``batch_size`` (the
    last incomplete batch is dropped when there is more than one batch), no EMA, no
    checkpoint.

    Parameters
    ----------
    x : array-like, shape (n, D), float
        Base features of the training rows.
    y : array-like, shape (n,), int
        Their labels.
    geometry : Geometry or str, default "poincare"
        The ball (the paper), ``"euclidean"`` (the cosine control), or any registered geometry.
    dim_out, hidden : int
    epochs, batch_size, lr, weight_decay : int, int, float, float
        The paper: 100, 128, 1e-3, 1e-5.
    m0, alpha, lam : float
        :class:`~hierviz.losses.HCLLoss` hyperparameters (the paper: 0.5, 0.1, 1e-3).
    seed : int, default 0
        Initialisation and batch order.
    device : str or torch.device, default "cpu"
    progress : bool, default False

    Returns
    -------
    mapper : MapperModel
        In eval mode, on ``device``.
    history : list of float
        Mean training loss per epoch (the paper's Fig. 2).

    Raises
    ------
    ValueError
        Fewer than 2 rows, or shapes that disagree.
    hierviz.training.NonFiniteLossError
        A non-finite loss (names the epoch and step).
    """

    X = torch.as_tensor(np.asarray(x, dtype=np.float32))
    Y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    if X.ndim != 2 or len(X) < 2:
        raise ValueError(f"x: the mapper needs at least 2 training rows of shape (n, D), got {tuple(X.shape)}")
    if Y.shape != (len(X),):
        raise ValueError(f"y must have shape ({len(X)},) to match x, got {tuple(Y.shape)}")
    geometry = _geometry(geometry)
    seed_everything(int(seed))
    mapper = (MapperModel if geometry.hyperbolic else CosineMapper)(X.shape[1], int(dim_out), geometry, hidden=hidden)
    objective = Objective("hcl", {"hcl": HCLLoss(geometry, m0=m0, alpha=alpha, lam=lam)})
    config = TrainConfig(
        epochs=int(epochs),
        batch_size=int(batch_size),
        lr_backbone=float(lr),
        lr_head=float(lr),
        weight_decay=float(weight_decay),
        warmup_epochs=0,
        ema_decay=None,
        seed=int(seed),
        device=str(device),
        amp=False,
        progress=progress,
        optimizer="adam",
        schedule="constant",
    )
    result = fit(config, MapperOutput(mapper), objective, TensorDataset(X, Y))
    mapper.eval()
    return mapper, list(result.history["loss"])


def cosine_distances(qd: torch.Tensor, gd: torch.Tensor, near: float = 1e-6) -> torch.Tensor:
    """``1 − cos`` of unit rows ``qd`` (Q, d) and ``gd`` (G, d), (Q, G); entries below ``near`` as ``‖q − g‖² / 2``.

    The product form leaves two equal directions ``1 − (1 ± ulp)`` apart; for unit vectors
    ``1 − cos = ‖q − g‖² / 2`` exactly, which is 0 for equal rows, so a collapsed block ties exactly.

    Examples
    --------
    >>> u = torch.nn.functional.normalize(torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], dtype=torch.float64), dim=-1)
    >>> cosine_distances(u[:1], u).tolist()
    [[0.0, 0.0]]
    """
    D = (1.0 - qd @ gd.T).clamp_min(0.0)
    i, j = torch.nonzero(D < near, as_tuple=True)
    D[i, j] = 0.5 * (qd[i] - gd[j]).pow(2).sum(-1).to(D.dtype)
    return D


def retrieval_metrics(
    D: Any, yq: Any, yg: Any, *, ks: Sequence[int] = RETRIEVAL_KS, denominator: str = "min_k_r", tree: Any = None
) -> dict[str, float]:
    """MAP@k for each k, P@1, R-precision (and tree NDCG@20 with a tree) of a distance matrix.

    Parameters
    ----------
    D : torch.Tensor or array-like, shape (Q, G)
        Query-reference distances.
    yq, yg : array-like of int, shapes (Q,) and (G,)
        Labels.
    ks : sequence of int
        MAP@k cut-offs (each at most G).
    denominator : str
        AP@k normaliser (:func:`hierviz.metrics.map_at_k`).
    tree : LabelTree, optional
        Adds ``"ndcg@20"`` (:func:`hierviz.metrics.ndcg`, tree-graded relevance).

    Returns
    -------
    dict
        ``{"map@1": ..., "map@5": ..., "p@1": ..., "r_precision": ...}``, values in [0, 1].

    Examples
    --------
    >>> D = [[0.0, 1.0, 2.0], [2.0, 0.0, 1.0]]
    >>> retrieval_metrics(D, [0, 1], [0, 1, 0], ks=(1, 2))
    {'map@1': 1.0, 'map@2': 0.75, 'p@1': 1.0, 'r_precision': 0.75}
    """
    out = flat_retrieval_report(D, yq, yg, tuple(ks), denominator=denominator)  # one sort for all of them
    if tree is not None:
        out["ndcg@20"] = ndcg(D, yq, yg, tree, k=min(20, len(np.asarray(yg))))
    return {k: float(v) for k, v in out.items()}


def chance_scores(
    yq: Any, yg: Any, ks: Sequence[int] = RETRIEVAL_KS, *, denominator: str = "min_k_r"
) -> dict[str, float] | None:
    """Expected MAP@k, P@1 and R-precision of a uniformly random ranking (the *chance* row).

    :func:`hierviz.metrics.baselines.random_ranking_scores` of the queries' and references'
    labels, the cut-offs limited to the number of references; None where undefined (a query
    class without references, or the ``"hits"`` normaliser).

    Examples
    --------
    >>> chance_scores([0, 1], [0, 0, 1, 1], ks=(1,))
    {'map@1': 0.5, 'p@1': 0.5, 'r_precision': 0.5}
    """
    G = len(np.asarray(yg))
    try:
        return random_ranking_scores(yq, yg, tuple(k for k in ks if k <= G), denominator=denominator)
    except ValueError:
        return None


@dataclass
class RetrievalRecord(_EmbeddingsRecord):
    """The typed record of the retrieval protocols.

    Attributes
    ----------
    metrics : dict[str, float]
        ``map@k`` for k in :data:`RETRIEVAL_KS` (those <= the references), ``p@1``,
        ``r_precision``, in [0, 1].
    z_train, z_test : numpy.ndarray, shape (n, D), float32
        References (training rows) and queries (test rows) on the manifold.
    y_train, y_test : numpy.ndarray, shape (n,), int64
    prototypes : numpy.ndarray, shape (P, D), float32
        Parent prototypes of the training rows (:func:`hierviz.metrics.parent_prototypes`),
        for the report's figures.
    proto_nodes : numpy.ndarray, shape (P,), int64
    distance : str
        ``"geometry"`` (the run geometry's distance) or ``"cosine"``.
    seconds : float
    """

    prototypes: np.ndarray
    proto_nodes: np.ndarray
    distance: str
    seconds: float


def _index_metrics(index, D, q, g, geometry, y_te, y_tr, ks) -> dict[str, float]:
    """MAP@k and P@1 from the top-20 an ``eval.index`` finds, and its recall@20 against the exact top-20."""
    if index not in INDEXES:
        import importlib  # noqa: PLC0415  # cycle: hierviz.retrieval, a higher layer, registers the FAISS indexes

        importlib.import_module("hierviz.retrieval")
    t0 = time.perf_counter()
    k = min(20, D.shape[1])
    _, top = INDEXES.get(index)(g, geometry).search(q, k=k)
    seconds = time.perf_counter() - t0
    exact = torch.argsort(D, dim=1, stable=True)[:, :k]
    hits = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(top.cpu(), exact.cpu()))
    far = (
        float(D.max()) * 2.0 + 1.0
    )  # what the index did not return ranks after its top-k (finite: the metrics refuse inf)
    D_index = torch.full_like(D, far).scatter_(1, top.to(D.device), D.gather(1, top.to(D.device)))
    found = retrieval_metrics(D_index, y_te, y_tr, ks=tuple(x for x in ks if x <= k))
    out = {m: v for m, v in found.items() if m.startswith("map@") or m == "p@1"}
    out.update({f"index_recall@{k}": hits / exact.numel(), "index_seconds": seconds})
    return out


def _retrieve(
    model, train_data, test_data, tree, geometry, *, distance, embedding, image_size, device, batch_size, num_workers,
    mean_steps, index="exact",
):  # fmt: skip
    t0 = time.perf_counter()
    kw = {"use": embedding, "batch_size": batch_size, "device": device, "num_workers": num_workers}
    z_tr, y_tr = embed_dataset(model, train_data, image_size, **kw)
    z_te, y_te = embed_dataset(model, test_data, image_size, **kw)
    q, g = torch.as_tensor(z_te, dtype=torch.float64), torch.as_tensor(z_tr, dtype=torch.float64)
    with torch.no_grad():
        if distance == "cosine":  # directions of the tangent vectors at the origin
            qd = torch.nn.functional.normalize(geometry.logmap0(q), dim=-1)
            gd = torch.nn.functional.normalize(geometry.logmap0(g), dim=-1)
            D = cosine_distances(qd, gd)
        else:
            D = torch.cat([geometry.refine_near(geometry.pairwise_dist(qb, g), qb, g) for qb in q.split(1024)])
    ks = tuple(k for k in RETRIEVAL_KS if k <= len(y_tr))
    metrics = retrieval_metrics(D, y_te, y_tr, ks=ks)
    if index != "exact" and distance == "geometry" and type(geometry).__name__ in ("PoincareBall", "Lorentz"):
        metrics.update(_index_metrics(index, D, q, g, geometry, y_te, y_tr, ks))
    with torch.jit.optimized_execution(False):  # the classification protocol's prototypes (report figures)
        protos, nodes = parent_prototypes(
            torch.as_tensor(z_tr), torch.as_tensor(y_tr), tree, geometry, steps=mean_steps
        )
    protos = torch.as_tensor(protos).detach().float().cpu().numpy()
    nodes = torch.as_tensor(nodes).long().cpu().numpy()
    return RetrievalRecord(metrics, z_tr, y_tr, z_te, y_te, protos, nodes, distance, time.perf_counter() - t0)


@register_protocol("retrieval", takes_index=True)
def retrieval_protocol(ctx: EvalContext) -> RetrievalRecord:
    """Paper 03 §3.1: test rows query the training rows, ranked by the run geometry's distance.

    MAP@k (k ∈ {1, 5, 10, 20}, AP@k normalised by ``min(k, R)``), P@1 and R-precision of
    the frozen embeddings (``embedding``: ``"z"`` or ``"features"``).

    ``index`` (``eval.index``, :data:`RETRIEVAL_INDEXES`): on a Poincaré or Lorentz run other than
    ``"exact"``, MAP@k and P@1 come from the top-20 that index finds (its candidates
    re-ranked by the exact distance), R-precision from the exact ranking (it reads past the
    20), and the metrics add ``index_recall@20`` (the fraction of the exact top-20 found) and
    ``index_seconds`` (build and search). Other geometries rank exactly.
    """
    return _retrieve(
        ctx.model, ctx.train_data, ctx.test_data, ctx.tree, ctx.geometry, distance="geometry",
        embedding=ctx.embedding, image_size=ctx.image_size, device=ctx.device, batch_size=ctx.batch_size,
        num_workers=ctx.num_workers, mean_steps=ctx.mean_steps, index=ctx.index,
    )  # fmt: skip


#: ``hierviz compare --protocol retrieval`` keeps this ranking for the methods that name it (``cosine-mapper``).
@register_protocol("retrieval-cosine", refines="retrieval")
def cosine_retrieval_protocol(ctx: EvalContext) -> RetrievalRecord:
    """As :func:`retrieval_protocol`, ranked by the cosine distance of ``log_0(z)`` (the cosine control)."""
    return _retrieve(
        ctx.model, ctx.train_data, ctx.test_data, ctx.tree, ctx.geometry, distance="cosine",
        embedding=ctx.embedding, image_size=ctx.image_size, device=ctx.device, batch_size=ctx.batch_size,
        num_workers=ctx.num_workers, mean_steps=ctx.mean_steps,
    )  # fmt: skip


def grouped_folds(labels: Any, groups: Any, folds: int, seed: int = 0) -> list[np.ndarray]:
    """Test-row indices of each fold: stratified by label, grouped (no group in two folds).

    scikit-learn's ``StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)``,
    the folds of Paper 03 (Hyper-DINO) §3 on HAM10000 (groups: lesions).

    Parameters
    ----------
    labels : array-like, shape (n,), int
    groups : array-like, shape (n,), optional
        Group ids (HAM10000 lesions); ``None``: every row its own group.
    folds : int, >= 2
    seed : int, default 0

    Returns
    -------
    list of numpy.ndarray
        ``folds`` disjoint index arrays covering ``0 .. n-1``.

    Raises
    ------
    ValueError
        ``folds < 2`` or more folds than groups.

    Examples
    --------
    >>> f = grouped_folds(np.array([0, 0, 1, 1, 0, 1]), np.array([1, 1, 2, 2, 3, 4]), 2)
    >>> sorted(np.concatenate(f).tolist()), [sorted(set(np.array([1, 1, 2, 2, 3, 4])[i].tolist())) for i in f]
    ([0, 1, 2, 3, 4, 5], [[2, 3], [1, 4]])
    """
    from sklearn.model_selection import StratifiedGroupKFold  # heavy: scikit-learn's model selection, on first use

    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, got {folds!r}")
    y = np.asarray(labels)
    g = np.arange(len(y)) if groups is None else np.unique(np.asarray(groups).astype(str), return_inverse=True)[1]
    if len(np.unique(g)) < folds:
        raise ValueError(f"folds={folds} exceeds the number of groups ({len(np.unique(g))}); use fewer folds")
    cv = StratifiedGroupKFold(n_splits=int(folds), shuffle=True, random_state=seed)
    return [test for _, test in cv.split(np.zeros(len(y)), y, g)]


def grouped_fold_split(
    labels: Any, groups: Any = None, *, num_leaves: int = 0, seed: int = 0, fold: int = 0, folds: int = 5
) -> dict[str, np.ndarray]:
    """``{"train", "val", "test"}`` row indices of fold ``fold`` of :func:`grouped_folds` (``val`` is empty).

    The ``make_split`` of the ``retrieval-folds`` protocol: ``compare`` passes the run seed as
    ``fold`` and its ``seeds`` as ``folds`` (``per_seed``), so every fold is a run; with
    ``eval.folds`` set, ``fold = seed mod eval.folds`` and ``folds = eval.folds``.

    Examples
    --------
    >>> s = grouped_fold_split(np.array([0, 0, 1, 1, 0, 1]), np.array([1, 1, 2, 2, 3, 4]), fold=1, folds=2)
    >>> s["train"].tolist(), s["test"].tolist(), len(s["val"])
    ([2, 3, 4], [0, 1, 5], 0)
    """
    if isinstance(fold, bool) or not 0 <= int(fold) < int(folds):
        raise ValueError(f"fold must be in [0, {int(folds) - 1}] (one run seed per fold), got {fold!r}")
    test = np.sort(grouped_folds(labels, groups, int(folds), int(seed))[int(fold)])
    train = np.setdiff1d(np.arange(len(np.asarray(labels))), test)
    return {"train": train, "val": np.array([], dtype=np.int64), "test": test}


@dataclass
class FoldRetrievalRecord:
    """The typed record of ``retrieval-folds``: the fold's metrics and labels (no embeddings are kept).

    Attributes
    ----------
    metrics : dict[str, float]
        ``map@k``, ``p@1``, ``r_precision`` in [0, 1], plus what the model's ranking reports
        (``bytes`` per stored reference, ``clip_fraction`` of the mapper).
    y_train, y_test : numpy.ndarray, shape (n,), int64
        References and queries of the fold (the report's chance row reads them).
    seconds : float
    """

    metrics: dict[str, float]
    y_train: np.ndarray
    y_test: np.ndarray
    seconds: float

    def arrays(self) -> dict[str, np.ndarray]:
        """What ``embeddings.npz`` keeps: the labels of the fold."""
        return {"y_train": self.y_train, "y_test": self.y_test}


def _embed_rows(model: nn.Module, x: np.ndarray, device: Any) -> torch.Tensor:
    """``model(x)["z"]`` of all rows at once (eval mode, no gradient), float32 on ``device``.

    The rows go in as ``(n, D, 1, 1)``, the shape of a vector dataset's items (:class:`hierviz.data.FeatureViews`).
    """
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(torch.as_tensor(np.asarray(x, dtype=np.float32), device=device)[:, :, None, None])["z"]
    finally:
        model.train(was)


#: compare makes fold s of ``seeds`` folds for run seed s (``per_seed``): every fold is a run (with
#: ``eval.folds``: fold s mod eval.folds, several run seeds per fold).
@register_protocol("retrieval-folds", make_split=grouped_fold_split, per_seed=True)
def fold_retrieval_protocol(ctx: EvalContext) -> FoldRetrievalRecord:
    """Paper 03 §3.1 on one grouped fold: the fold's rows query the other folds' rows.

    The rows of a vector dataset (``train_data.images``, (n, D) float) are embedded by
    ``model(x)["z"]``. ``model.ranking(z_query, z_ref, y_query, y_ref)``, when the model has it, returns the
    distances ``(Q, G)`` and extra metrics (the grid's models: Euclidean distance of the base
    features, the mapper's float16 reference index, the cosine control's cosine distance);
    otherwise the run geometry's distance ranks them. ``model.ks`` and ``model.denominator``
    (default :data:`RETRIEVAL_KS`, ``"min_k_r"``) choose the MAP@k cut-offs and normaliser.

    Raises
    ------
    ValueError
        A dataset that does not hold (n, D) float rows.
    """
    t0 = time.perf_counter()
    model, train_data, test_data, geometry, device = ctx.model, ctx.train_data, ctx.test_data, ctx.geometry, ctx.device
    x_tr, x_te = (np.asarray(d.images) for d in (train_data, test_data))
    if x_tr.ndim != 2 or x_tr.dtype.kind != "f":
        raise ValueError(
            f"the retrieval-folds protocol ranks feature vectors (n, D); got {x_tr.dtype} {x_tr.shape}: pass a "
            "features file (--data F.npz)"
        )
    y_tr, y_te = np.asarray(train_data.labels, np.int64), np.asarray(test_data.labels, np.int64)
    z_tr = _embed_rows(model, x_tr, device)
    extra = dict(getattr(model, "retrieval_extra", {}) or {})  # e.g. the clip fraction of the references' call
    z_te = _embed_rows(model, x_te, device)
    ranking = getattr(model, "ranking", None)
    if ranking is not None:
        D, more = ranking(z_te, z_tr, y_te, y_tr)
        extra.update(more)
    else:
        with torch.no_grad():
            q, g = z_te.double(), z_tr.double()
            D = torch.cat([geometry.refine_near(geometry.pairwise_dist(qb, g), qb, g) for qb in q.split(1024)])
    ks = tuple(getattr(model, "ks", RETRIEVAL_KS))
    metrics = retrieval_metrics(D.cpu(), y_te, y_tr, ks=ks, denominator=getattr(model, "denominator", "min_k_r"))
    metrics.update({k: float(v) for k, v in extra.items()})
    return FoldRetrievalRecord(metrics, y_tr, y_te, time.perf_counter() - t0)
