"""The seen/unseen protocol of Paper 04 (Generalised triplets) §III-B and §III-D.

**Split** (:func:`unseen_split`, used by :func:`hierviz.experiments.compare` before training
when the protocol is ``unseen``): leaves with fewer than ``min_samples`` (10) samples are
always unseen; the other leaves are shuffled with the split seed and dealt into ``n_folds``
(5) folds, and fold ``fold`` is unseen too (about 20 %; 5-fold rotation). The samples of each
seen leaf are split 8:1:1 into train, val and test (grouped and stratified,
:func:`hierviz.data.grouped_split`). The samples of unseen leaves, the *prediction set*, are
added to both val and test; training never sees an unseen leaf.

**Evaluation** (:func:`unseen_protocol`, registered as ``"unseen"``), with the frozen model:

* on the seen test samples: leaf F1 (macro) of a balanced linear probe on the training
  embeddings (the paper reads the L/PL heads; hierviz evaluates every method by frozen
  probes, as paper 01), leaf RP@5, MNR, NDCG_sum and NDCG_max (:mod:`hierviz.metrics.ranking`,
  leave-one-out, cosine similarity in a Euclidean run, minus the geodesic distance in a
  hyperbolic one);
* on the prediction set, with each unseen leaf's lowest seen ancestor (LSA,
  :meth:`LabelTree.lowest_seen_ancestor`): **Acc_blind**, the share of samples whose
  predicted (seen) leaf has the true LSA as its ancestor at the LSA's level, and
  **Acc_aware**, the accuracy of a probe trained at the LSA's level (targets: the training
  samples' ancestors at that level) that predicts the LSA directly; their ratio; NDCG_sum
  and NDCG_max among the prediction samples. Samples whose LSA is the root (no seen leaf
  below any lower ancestor) are left out of both accuracies (any prediction is "right").

The protocol finds the unseen leaves itself: a test leaf absent from the training data is
unseen, so it needs no argument beyond the usual ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from sklearn.metrics import f1_score

from hierviz.data.splits import grouped_split
from hierviz.evaluation.classification import _EmbeddingsRecord, embed_dataset
from hierviz.evaluation.protocols import EvalContext, register_protocol
from hierviz.geometry import Euclidean
from hierviz.metrics import h_acc, hf1, linear_probe, parent_prototypes, parent_violations, pc_order
from hierviz.metrics.ranking import ndcg_tree, ranking_report

__all__ = [
    "UnseenRecord",
    "unseen_split",
    "unseen_leaves",
    "unseen_protocol",
    "unseen_metrics",
    "unseen_baselines",
    "lsa_accuracies",
]


def unseen_leaves(
    labels: Any, num_leaves: int, *, seed: int = 0, fold: int = 0, n_folds: int = 5, min_samples: int = 10
) -> np.ndarray:
    """The unseen leaves of one fold (Paper 04 (Generalised triplets) §III-B).

    Parameters
    ----------
    labels : array-like of int, shape (N,)
        Leaf index per sample.
    num_leaves : int
        C.
    seed : int, default 0
        Shuffles the leaves before dealing them into folds.
    fold : int, default 0
        In ``[0, n_folds)``.
    n_folds : int, default 5
    min_samples : int, default 10
        Leaves with fewer samples (but at least one) are always unseen.

    Returns
    -------
    numpy.ndarray, int64, sorted
        Leaf indices that have samples and are unseen in this fold.

    Raises
    ------
    ValueError
        ``fold`` outside ``[0, n_folds)``, ``n_folds`` < 2 or ``min_samples`` < 0.

    Examples
    --------
    >>> y = np.repeat(np.arange(6), [12, 12, 12, 12, 12, 3])
    >>> [unseen_leaves(y, 6, fold=f).tolist() for f in range(5)]
    [[2, 5], [4, 5], [3, 5], [0, 5], [1, 5]]
    """
    if isinstance(n_folds, bool) or int(n_folds) < 2:
        raise ValueError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    if isinstance(fold, bool) or not 0 <= int(fold) < int(n_folds):
        raise ValueError(f"eval.fold (fold) must be in [0, {int(n_folds) - 1}], got {fold!r}")
    if int(min_samples) < 0:
        raise ValueError(f"min_samples must be >= 0, got {min_samples!r}")
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=int(num_leaves))
    rare = np.flatnonzero((counts > 0) & (counts < int(min_samples)))
    rest = np.flatnonzero(counts >= int(min_samples))
    rest = rest[np.random.default_rng(int(seed)).permutation(len(rest))]
    held = np.array_split(rest, int(n_folds))[int(fold)]
    return np.sort(np.concatenate([rare, held]).astype(np.int64))


def unseen_split(
    labels: Any,
    groups: Any = None,
    *,
    num_leaves: int,
    seed: int = 0,
    fold: int = 0,
    n_folds: int = 5,
    min_samples: int = 10,
    val: float = 0.1,
    test: float = 0.1,
) -> dict[str, np.ndarray]:
    """Train / val / test indices with unseen leaves held out of training (§III-B).

    Parameters
    ----------
    labels : array-like of int, shape (N,)
    groups : array-like, shape (N,), optional
        Group ids (no group crosses train/val/test among seen samples).
    num_leaves : int
    seed, fold, n_folds, min_samples
        See :func:`unseen_leaves`; ``seed`` also seeds the 8:1:1 split.
    val, test : float, default 0.1
        Fractions of each seen leaf's samples for val and test.

    Returns
    -------
    dict[str, numpy.ndarray]
        ``"train"``, ``"val"``, ``"test"`` (sorted int64 indices; val and test include the
        prediction set), ``"predict"`` (the unseen samples) and ``"unseen_leaves"``.

    Raises
    ------
    ValueError
        As :func:`unseen_leaves`, or fewer than two seen leaves.

    Examples
    --------
    >>> y = np.repeat(np.arange(6), [20, 20, 20, 20, 20, 3])
    >>> s = unseen_split(y, num_leaves=6, fold=0)
    >>> s["unseen_leaves"].tolist(), np.unique(y[s["train"]]).tolist(), len(s["predict"])
    ([2, 5], [0, 1, 3, 4], 23)
    """
    y = np.asarray(labels, dtype=np.int64)
    out_leaves = unseen_leaves(y, num_leaves, seed=seed, fold=fold, n_folds=n_folds, min_samples=min_samples)
    unseen = np.isin(y, out_leaves)
    seen_idx = np.flatnonzero(~unseen)
    if np.unique(y[seen_idx]).size < 2:
        raise ValueError(
            f"only {np.unique(y[seen_idx]).size} seen leaf is left in fold {fold}; the unseen protocol needs two "
            "or more (use more data or a larger tree)"
        )
    g = None if groups is None else np.asarray(groups)[seen_idx]
    parts = grouped_split(y[seen_idx], g, val=val, test=test, seed=seed)
    predict = np.flatnonzero(unseen).astype(np.int64)
    return {
        "train": np.sort(seen_idx[parts["train"]]),
        "val": np.sort(np.concatenate([seen_idx[parts["val"]], predict])),
        "test": np.sort(np.concatenate([seen_idx[parts["test"]], predict])),
        "predict": predict,
        "unseen_leaves": out_leaves,
    }


def _probe(z_tr: np.ndarray, y_tr: np.ndarray, z_te: np.ndarray, geometry: Any, seed: int) -> np.ndarray:
    """Balanced linear probe (hierviz.metrics.linear_probe); a single training class predicts itself."""
    if len(z_te) == 0:
        return np.zeros(0, dtype=np.int64)
    classes = np.unique(y_tr)
    if classes.size == 1:
        return np.full(len(z_te), classes[0], dtype=np.int64)
    return linear_probe(z_tr, y_tr, z_te, geometry, seed=seed)


def lsa_accuracies(
    pred_leaf: Any, true_leaf: Any, seen_leaves: Any, tree: Any, aware_pred: Any = None
) -> dict[str, Any]:
    """Acc_blind (and Acc_aware) on unseen leaves (Paper 04 (Generalised triplets) §III-D.1).

    Parameters
    ----------
    pred_leaf : array-like of int, shape (n,)
        Predicted (seen) leaf of each prediction sample.
    true_leaf : array-like of int, shape (n,)
        True (unseen) leaf.
    seen_leaves : array-like of int
        Leaves seen in training.
    tree : LabelTree
    aware_pred : array-like of int, shape (n,), optional
        Node index (``tree.nodes``) predicted at the LSA's level by a level classifier.

    Returns
    -------
    dict
        ``acc_blind``, ``acc_aware`` (NaN without ``aware_pred``), ``lsa`` (n,) node index of
        each sample's LSA, ``lsa_depth`` (n,), ``counted`` (n,) bool: LSA below the root.
        Accuracies are NaN when no sample counts.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z", "w"]}})
    >>> # y (1) is unseen: its LSA is a; predicting x (0) is right, z (2) wrong
    >>> lsa_accuracies([0, 2], [1, 1], [0, 2, 3], t)["acc_blind"]
    0.5
    """
    pred = np.asarray(pred_leaf, dtype=np.int64)
    true = np.asarray(true_leaf, dtype=np.int64)
    seen = [int(s) for s in np.asarray(seen_leaves).tolist()]
    ni = tree.node_index
    lsa_of = {int(c): ni[tree.lowest_seen_ancestor(tree.leaves[int(c)], seen)] for c in np.unique(true)}
    lsa = np.array([lsa_of[int(c)] for c in true], dtype=np.int64)
    depth = tree.node_depth.numpy()[lsa] if len(lsa) else np.zeros(0, dtype=np.int64)
    paths = tree.leaf_paths.numpy()
    blind_ok = paths[pred, depth] == lsa if len(pred) else np.zeros(0, dtype=bool)
    counted = depth > 0
    acc_blind = float(blind_ok[counted].mean()) if counted.any() else float("nan")
    acc_aware = float("nan")
    if aware_pred is not None and counted.any():
        acc_aware = float((np.asarray(aware_pred, dtype=np.int64) == lsa)[counted].mean())
    return {"acc_blind": acc_blind, "acc_aware": acc_aware, "lsa": lsa, "lsa_depth": depth, "counted": counted}


@dataclass
class UnseenRecord(_EmbeddingsRecord):
    """The typed record of the unseen protocol.

    Attributes
    ----------
    metrics : dict[str, float]
        ``top1, hf1, h_acc, violations, pc_order`` (:func:`hierviz.metrics.hierarchy_report`
        on the seen test samples), ``leaf_f1, rp5, mnr, ndcg_sum, ndcg_max`` (seen test set), ``acc_blind, acc_aware,
        blind_over_aware, pred_ndcg_sum, pred_ndcg_max`` (prediction set), ``n_unseen_leaves``,
        ``n_predict``; NaN where undefined (e.g. no prediction sample).
    z_train, z_test : numpy.ndarray, float32
        Frozen embeddings (test: the seen test samples then the prediction set).
    y_train, y_test : numpy.ndarray, int64
    unseen_leaves : numpy.ndarray, int64
    lsa : numpy.ndarray, int64
        LSA node of each prediction sample (in the order of ``z_test[~seen_test]``).
    prototypes, proto_nodes : numpy.ndarray
        Parent prototypes of the training embeddings and their nodes, as
        :class:`~hierviz.evaluation.ClassificationRecord` (for the report's figures).
    use : str
    seconds : float
    """

    unseen_leaves: np.ndarray
    lsa: np.ndarray
    prototypes: np.ndarray
    proto_nodes: np.ndarray
    use: str
    seconds: float

    #: What a run folder's ``embeddings.npz`` keeps (:meth:`arrays`).
    _npz_fields = ("z_test", "y_test", "z_train", "y_train", "unseen_leaves", "lsa", "prototypes", "proto_nodes")


def _pred_ndcg(z: np.ndarray, y: np.ndarray, tree: Any, geometry: Any) -> dict[str, float]:
    out = {"pred_ndcg_sum": float("nan"), "pred_ndcg_max": float("nan")}
    if len(y) < 2:
        return out
    S = geometry.similarity(torch.as_tensor(z, dtype=torch.float32)).double()
    for rel in ("sum", "max"):
        try:
            out[f"pred_ndcg_{rel}"] = ndcg_tree(S, y, y, tree, rel, exclude_self=True)
        except ValueError as exc:
            if "undefined for every query" not in str(exc):
                raise
    return out


def unseen_metrics(
    z_train: np.ndarray,
    y_train: np.ndarray,
    z_test: np.ndarray,
    y_test: np.ndarray,
    tree: Any,
    geometry: Any,
    *,
    seed: int = 0,
    mean_steps: int = 10,
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The unseen protocol's numbers from embeddings (what :func:`unseen_protocol` scores after embedding).

    Parameters
    ----------
    z_train : numpy.ndarray, float, shape (n_train, D)
        Training embeddings (seen leaves only), points of ``geometry``.
    y_train : numpy.ndarray, int, shape (n_train,)
    z_test : numpy.ndarray, float, shape (n_test, D)
        Seen test samples and the prediction set, in any order.
    y_test : numpy.ndarray, int, shape (n_test,)
        A leaf absent from ``y_train`` is unseen.
    tree : LabelTree
    geometry : Geometry
    seed : int
        Probe seed.
    mean_steps : int
        Karcher steps of the hyperbolic parent prototypes.

    Returns
    -------
    metrics : dict[str, float]
        As :attr:`UnseenRecord.metrics`.
    scored : dict[str, numpy.ndarray]
        ``z_test``, ``y_test`` reordered seen-first, ``lsa`` of the prediction samples,
        ``protos`` and ``nodes`` (the parent prototypes).

    Raises
    ------
    ValueError
        Fewer than two seen leaves in ``y_train``.
    """
    z_tr, y_tr, z_te, y_te = z_train, y_train, z_test, y_test
    seen = np.unique(y_tr)
    if seen.size < 2:
        raise ValueError("the unseen protocol needs two or more seen leaves in the training data")
    is_seen = np.isin(y_te, seen)
    order = np.concatenate([np.flatnonzero(is_seen), np.flatnonzero(~is_seen)])
    z_te, y_te, is_seen = z_te[order], y_te[order], is_seen[order]
    zs, ys, zp, yp = z_te[is_seen], y_te[is_seen], z_te[~is_seen], y_te[~is_seen]
    metrics: dict[str, float] = {}
    leaf_pred = _probe(z_tr, y_tr, np.concatenate([zs, zp]), geometry, seed)
    metrics["leaf_f1"] = float(f1_score(ys, leaf_pred[: len(ys)], average="macro")) if len(ys) else float("nan")
    if len(ys) >= 2:
        metrics.update(ranking_report(zs, ys, tree, geometry=geometry, k=5))
    else:
        metrics.update({k: float("nan") for k in ("rp5", "mnr", "ndcg_sum", "ndcg_max")})
    # paper 01's hierarchy report on the seen test samples too (hierviz.metrics.hierarchy_report, with the
    # leaf probe above instead of a second identical one), so the standard tables and report apply
    protos, nodes = parent_prototypes(torch.as_tensor(z_tr), torch.as_tensor(y_tr), tree, geometry, steps=mean_steps)
    if len(ys):
        yp_t, ys_t, zs_t = torch.as_tensor(leaf_pred[: len(ys)]), torch.as_tensor(ys), torch.as_tensor(zs)
        metrics.update(
            {
                "top1": float((yp_t == ys_t).double().mean()),
                "hf1": hf1(ys_t, yp_t, tree),
                "h_acc": h_acc(ys_t, yp_t, tree),
                "violations": parent_violations(zs_t, ys_t, protos, nodes, tree, geometry),
                "pc_order": pc_order(zs_t, ys_t, protos, nodes, tree, geometry),
            }
        )
    lsa = np.zeros(0, dtype=np.int64)
    metrics.update({"acc_blind": float("nan"), "acc_aware": float("nan"), "blind_over_aware": float("nan")})
    if len(yp):
        acc = lsa_accuracies(leaf_pred[len(ys) :], yp, seen, tree)
        lsa, depth = acc["lsa"], acc["lsa_depth"]
        aware = np.full(len(yp), -1, dtype=np.int64)
        paths = tree.leaf_paths.numpy()
        for lv in np.unique(depth[acc["counted"]]):  # one level probe per LSA level (<= L of them)
            rows = depth == lv
            aware[rows] = _probe(z_tr, paths[y_tr, lv], zp[rows], geometry, seed)
        acc = lsa_accuracies(leaf_pred[len(ys) :], yp, seen, tree, aware_pred=aware)
        metrics["acc_blind"], metrics["acc_aware"] = acc["acc_blind"], acc["acc_aware"]
        if acc["acc_aware"] > 0:
            metrics["blind_over_aware"] = acc["acc_blind"] / acc["acc_aware"]
    metrics.update(_pred_ndcg(zp, yp, tree, geometry))
    metrics["n_unseen_leaves"] = float(np.unique(yp).size)
    metrics["n_predict"] = float(len(yp))
    return metrics, {"z_test": z_te, "y_test": y_te, "lsa": lsa, "protos": protos, "nodes": nodes}


def unseen_baselines(
    y_train: Any, y_test: Any, tree: Any, *, draws: int = 10, dim: int = 64, seed: int = 0
) -> dict[str, dict[str, float]]:
    """The unseen protocol's trivial baselines on one split: Majority class and a random embedding.

    * ``majority``: every sample gets the most frequent training leaf (ties: the lowest
      index); Acc_aware's level classifier predicts the most frequent training ancestor at the
      LSA's level. Leaf F1, top-1, HF1, H-acc, Acc_blind and Acc_aware; the ranking metrics
      (RP@5, MNR, NDCG) are NaN, since a constant embedding ranks by ties alone.
    * ``chance``: :func:`unseen_metrics` on i.i.d. N(0, I) embeddings of ``dim`` dimensions
      (Euclidean, independent of the input), averaged over ``draws`` draws: every number of
      the protocol as an embedding that knows nothing scores it, probes included.

    Parameters
    ----------
    y_train : array-like of int, shape (n_train,)
        Training leaves (seen leaves only).
    y_test : array-like of int, shape (n_test,)
        Seen test samples and the prediction set.
    tree : LabelTree
    draws : int, default 10
        Random embeddings averaged for ``chance`` (>= 1).
    dim : int, default 64
        Their dimension.
    seed : int, default 0
        Seed of the draws and the probes.

    Returns
    -------
    dict
        ``{"majority": metrics, "chance": metrics}``, keys as :attr:`UnseenRecord.metrics` (NaN
        where undefined).

    Raises
    ------
    ValueError
        ``draws`` < 1, or fewer than two seen leaves.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["x", "y"], "b": ["z", "w"]}})
    >>> base = unseen_baselines([0, 0, 0, 2, 2, 3], [0, 2, 3, 1, 1], t, draws=2, dim=4)
    >>> base["majority"]["acc_blind"], base["majority"]["top1"]  # x predicted: y's LSA a is right
    (1.0, 0.3333333333333333)
    >>> 0.0 <= base["chance"]["acc_blind"] <= 1.0
    True
    """
    if int(draws) < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    y_tr, y_te = np.asarray(y_train, dtype=np.int64), np.asarray(y_test, dtype=np.int64)
    seen = np.unique(y_tr)
    if seen.size < 2:
        raise ValueError("the unseen protocol needs two or more seen leaves in the training data")
    is_seen = np.isin(y_te, seen)
    ys, yp = y_te[is_seen], y_te[~is_seen]
    top = int(np.bincount(y_tr).argmax())
    nan = float("nan")
    maj = dict.fromkeys(("rp5", "mnr", "ndcg_sum", "ndcg_max", "pred_ndcg_sum", "pred_ndcg_max"), nan)
    pred_s, ys_t = torch.full((len(ys),), top, dtype=torch.long), torch.as_tensor(ys)
    maj["leaf_f1"] = float(f1_score(ys, pred_s.numpy(), average="macro")) if len(ys) else nan
    maj["top1"] = float((pred_s == ys_t).double().mean()) if len(ys) else nan
    maj["hf1"] = hf1(ys_t, pred_s, tree) if len(ys) else nan
    maj["h_acc"] = h_acc(ys_t, pred_s, tree) if len(ys) else nan
    maj.update({"acc_blind": nan, "acc_aware": nan, "blind_over_aware": nan})
    if len(yp):
        paths = tree.leaf_paths.numpy()
        acc = lsa_accuracies(np.full(len(yp), top), yp, seen, tree)
        level_top = {lv: int(np.bincount(paths[y_tr, lv]).argmax()) for lv in np.unique(acc["lsa_depth"])}
        aware = np.array([level_top[int(d)] for d in acc["lsa_depth"]], dtype=np.int64)
        acc = lsa_accuracies(np.full(len(yp), top), yp, seen, tree, aware_pred=aware)
        maj["acc_blind"], maj["acc_aware"] = acc["acc_blind"], acc["acc_aware"]
        if acc["acc_aware"] > 0:
            maj["blind_over_aware"] = acc["acc_blind"] / acc["acc_aware"]
    gen = np.random.default_rng(seed)
    runs = []
    for i in range(int(draws)):
        z_tr = gen.standard_normal((len(y_tr), dim)).astype(np.float32)
        z_te = gen.standard_normal((len(y_te), dim)).astype(np.float32)
        runs.append(unseen_metrics(z_tr, y_tr, z_te, y_te, tree, Euclidean(), seed=seed + i)[0])
    keys = [k for k in runs[0] if k not in ("n_unseen_leaves", "n_predict")]
    chance = {k: float(np.nanmean([r[k] for r in runs])) if any(np.isfinite(r[k]) for r in runs) else nan for k in keys}
    return {"majority": maj, "chance": chance}


@register_protocol("unseen", make_split=unseen_split)
def unseen_protocol(ctx: EvalContext) -> UnseenRecord:
    """Paper 04 (Generalised triplets) §III-D on a frozen model (see the module docstring).

    Parameters
    ----------
    ctx : EvalContext
        ``train_data`` is the training split (seen leaves only); ``test_data`` the seen test
        samples plus the prediction set (leaves absent from ``train_data``); ``seed`` the probe
        seed; ``mean_steps`` the Karcher steps of the hyperbolic parent prototypes (the
        hierarchy report); ``image_size``, ``device``, ``num_workers``, ``batch_size``: see
        :func:`hierviz.evaluation.embed_dataset`.

    Returns
    -------
    UnseenRecord

    Raises
    ------
    ValueError
        Fewer than two seen leaves in ``train_data``, or errors of the embedding.
    """
    model, train_data, test_data, tree, geometry = ctx.model, ctx.train_data, ctx.test_data, ctx.tree, ctx.geometry
    embedding, image_size, device = ctx.embedding, ctx.image_size, ctx.device
    batch_size, num_workers, seed, mean_steps = ctx.batch_size, ctx.num_workers, ctx.seed, ctx.mean_steps
    t0 = time.perf_counter()
    with torch.jit.optimized_execution(False):
        z_tr, y_tr = embed_dataset(
            model, train_data, image_size, use=embedding, batch_size=batch_size, device=device, num_workers=num_workers
        )
        z_te, y_te = embed_dataset(
            model, test_data, image_size, use=embedding, batch_size=batch_size, device=device, num_workers=num_workers
        )
    metrics, scored = unseen_metrics(z_tr, y_tr, z_te, y_te, tree, geometry, seed=seed, mean_steps=mean_steps)
    z_te, y_te, lsa, protos, nodes = (
        scored["z_test"],
        scored["y_test"],
        scored["lsa"],
        scored["protos"],
        scored["nodes"],
    )
    yp = y_te[~np.isin(y_te, np.unique(y_tr))]
    return UnseenRecord(
        metrics=metrics,
        z_train=z_tr,
        y_train=y_tr,
        z_test=z_te,
        y_test=y_te,
        unseen_leaves=np.unique(yp).astype(np.int64),
        lsa=lsa,
        prototypes=torch.as_tensor(protos).detach().float().cpu().numpy(),
        proto_nodes=torch.as_tensor(nodes).long().cpu().numpy(),
        use=embedding,
        seconds=time.perf_counter() - t0,
    )
