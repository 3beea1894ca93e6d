"""What one capstone table is: its metrics and protocol, the ``compare`` settings, the checks, the radius reading, the Chance row.

* :data:`CAPSTONE_METRICS`, :data:`CAPSTONE_PROTOCOL`; :func:`capstone_overrides` -- the ``compare``
  settings of both tables (one protocol, one split); :func:`table_setting` -- refuses a table whose
  runs mix protocols or splits;
* :func:`radius_reading` (:data:`SATURATED_CLIP`, :data:`FLAT_RADIUS`) -- the one reading of the radius;
* :func:`chance_report` -- the exact expected score of a uniformly random leaf;
* the display names of methods and geometries that the tables, the guide and the figures print.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hierviz.metrics import h_acc, hf1

#: The table's columns (record ``metrics`` keys) and their labels; Violations is lower-is-better.
CAPSTONE_METRICS = {"hf1": "HF1", "h_acc": "H-Acc", "top1": "Top-1", "violations": "Violations ↓"}
_LOWER_IS_BETTER = {"violations"}

#: The one protocol of every capstone table: every method trains on all leaves of one split and is
#: scored on the same test samples (``t+pl``'s own ``"unseen"`` protocol would hold two leaves out and
#: score it on a different test problem; notebook 08 shows that protocol beside L and PL).
CAPSTONE_PROTOCOL = "classification"

#: Radius readings (:func:`radius_reading`): a clip fraction above this is a saturated sphere ...
SATURATED_CLIP = 0.5
#: ... and a mean geodesic radius below this is the flat origin: there the conformal factor
#: λ = 2 cosh²(r/2) is under 4, twice its value at the origin (r = 2 arcosh √2 = 1.763).
FLAT_RADIUS = 2.0 * math.acosh(math.sqrt(2.0))


def capstone_overrides(
    data: str,
    size: str,
    methods: Sequence[str],
    geometries: Sequence[str],
    seeds: int,
    dataset: str | None = None,
) -> list[str]:
    """The ``compare`` overrides of one capstone table (``--set`` strings, for ``resolve_config("quick", ...)``).

    Both tables share the method list, geometries, seeds, the linear-evaluation projection, the
    encoder's learning rate and :data:`CAPSTONE_PROTOCOL` (``eval.protocol``), so every row of a table
    is trained on one split and scored on the same test samples. Every setting a table depends on
    (encoder, sizes, batch, depth-term weights) is named here, so the tables do not change with the
    ``quick`` preset they are resolved against. The images are HAM10000's bundled
    sample (grouped split by lesion, the two-step tree); the text is 20 Newsgroups' official
    by-date split with an MLP encoder (width 16, d = 32, batch 64, 8 epochs, the quick preset's
    cone and centring weights, three Karcher steps per prototype as paper 01's T_mean = 3). At medium size the text table is the committed converged run's
    recipe (``docs/results/capstone-20news``: 2,000 messages, a stratified subset) at fewer seeds;
    at full size it trains on every message.

    Parameters
    ----------
    data : {"images", "text"}
    size : {"smoke", "medium", "full"}
        :func:`hierviz.course.resolve_size`'s size: smoke runs a few hundred samples for one epoch.
    methods, geometries : sequence of str
    seeds : int, ≥ 1
    dataset : str, optional
        The dataset name (default ``ham10000-sample`` / ``20news``).

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        An unknown ``data`` or ``size``.

    Examples
    --------
    >>> o = capstone_overrides("text", "medium", ["supcon", "t+pl"], ["euclidean", "poincare"], 5)
    >>> [x for x in o if x.startswith(("eval.protocol", "data.split", "seeds"))]
    ['seeds=5', 'eval.protocol=classification', 'data.split=official']
    """
    sizes = ("smoke", "medium", "full")
    if size not in sizes:
        raise ValueError(f"size must be one of {sizes} (hierviz.course.resolve_size), got {size!r}")
    pick = dict(zip(sizes, range(3)))[size]
    common = [
        f"methods={','.join(methods)}",
        f"geometries={','.join(geometries)}",
        f"seeds={int(seeds)}",
        "eval.projection=pca",
        "train.lr_backbone=1e-3",
        f"eval.protocol={CAPSTONE_PROTOCOL}",
    ]
    if data == "images":
        by = (
            ["data.limit=120", "train.epochs=1", "model.width=8"],
            ["data.limit=1000", "train.epochs=3", "model.width=16"],
            ["train.epochs=10", "model.width=32"],
        )
        image = [
            f"data.dataset={dataset or 'ham10000-sample'}",
            "data.tree=two-step",
            "data.image_size=32",
            "model.encoder=small_cnn",
            "model.embed_dim=32",
            "train.batch_size=128",
            "loss.cone_weight=0.2",
            "loss.center_weight=1.0",
        ]
        return common + image + by[pick]
    if data == "text":
        by = (
            ["data.limit=400", "train.epochs=1"],
            ["data.limit=2000", "train.epochs=8"],
            ["train.epochs=8"],
        )
        return (
            common
            + [
                "data.split=official",
                f"data.dataset={dataset or '20news'}",
                "data.tree=20news",
                "model.encoder=mlp",
                "model.width=16",
                "model.embed_dim=32",
                "train.batch_size=64",
                "data.workers=0",
                "eval.mean_steps=3",
                "loss.cone_weight=0.2",
                "loss.center_weight=1.0",
            ]
            + by[pick]
        )
    raise ValueError(f"data must be 'images' or 'text', got {data!r}")


def _split_key(rec: Mapping[str, Any]) -> tuple:
    cfg = rec.get("config") or {}
    d, e = cfg.get("data") or {}, cfg.get("eval") or {}
    keys = ("dataset", "path", "limit", "split", "split_seed")
    return tuple(d.get(k) for k in keys) + (e.get("split"), e.get("fold") if rec.get("protocol") == "unseen" else None)


def table_setting(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The protocol and split that every run of one table shares; refuses a table that mixes them.

    Parameters
    ----------
    records : sequence of dict
        Run records (``result.json``) of one table: ``protocol`` and ``config`` (the run's
        ``config.json``: ``data.dataset``, ``data.limit``, ``data.split``, ``data.split_seed``,
        ``eval.split``, ``eval.fold``).

    Returns
    -------
    dict
        ``{"protocol": str, "split": tuple}``.

    Raises
    ------
    ValueError
        No records, or runs under more than one protocol or split (the message lists them and
        names ``eval.protocol`` as the fix).

    Examples
    --------
    >>> cfg = {"data": {"dataset": "20news", "split": "official"}, "eval": {"split": "val"}}
    >>> table_setting([{"method": "supcon", "protocol": "classification", "config": cfg}])["protocol"]
    'classification'
    """
    if not records:
        raise ValueError("records is empty: one table needs at least one run")
    protocols: dict[str, list[str]] = {}
    splits: dict[tuple, list[str]] = {}
    for r in records:
        protocols.setdefault(str(r.get("protocol")), []).append(str(r.get("method")))
        splits.setdefault(_split_key(r), []).append(str(r.get("method")))
    if len(protocols) > 1:
        parts = "; ".join(f"{p}: {', '.join(dict.fromkeys(m))}" for p, m in protocols.items())
        raise ValueError(
            f"one table mixes evaluation protocols ({parts}): its rows score different test problems; "
            f"run compare with eval.protocol={CAPSTONE_PROTOCOL} (capstone_overrides does)"
        )
    if len(splits) > 1:
        raise ValueError(
            f"one table mixes {len(splits)} data splits (data.dataset/limit/split/split_seed, eval.split); "
            "make the table from one compare call"
        )
    return {"protocol": next(iter(protocols)), "split": next(iter(splits))}


def radius_reading(radius_mean: float, radius_std: float, clip_fraction: float) -> str:
    """The course's one reading of a hyperbolic run's radius, from the sample radius and the clip fraction.

    Prototype radii rising with depth mean a tree in the radius only when the samples are neither
    on a sphere nor at the flat origin (notebook 12): Fréchet means of points on a sphere rise with
    depth by themselves (the wider the group, the deeper inside the sphere its mean lies), and below
    radius :data:`FLAT_RADIUS` = 1.763 the conformal factor :math:`\\lambda = 2\\cosh^2(r/2)` stays under 4,
    within a factor 2 of its value at the origin, so distances are the Euclidean ones up to that
    factor. So the prototype radii are read only beside the clip fraction and the spread of the
    test radii.

    Parameters
    ----------
    radius_mean, radius_std : float
        Mean and std of the test samples' geodesic radius d(0, z).
    clip_fraction : float in [0, 1]
        Share of test samples at the head's bound.

    Returns
    -------
    str
        ``"saturated sphere"`` (clip fraction > 0.5 or a spread under 2 % of the mean),
        ``"flat origin"`` (mean radius < :data:`FLAT_RADIUS`), ``"in the curved region"`` otherwise;
        ``"–"`` for NaN.

    Examples
    --------
    >>> radius_reading(6.0, 0.0, 1.0), radius_reading(0.44, 0.08, 0.0), radius_reading(2.5, 0.3, 0.0)
    ('saturated sphere', 'flat origin', 'in the curved region')
    """
    vals = (radius_mean, radius_std, clip_fraction)
    if any(v is None or not math.isfinite(float(v)) for v in vals):
        return "–"
    if clip_fraction > SATURATED_CLIP or radius_std < 0.02 * radius_mean:
        return "saturated sphere"
    if radius_mean < FLAT_RADIUS:
        return "flat origin"
    return "in the curved region"


def chance_report(y_test: Any, tree: Any) -> dict[str, float]:
    """The exact expected HF1, H-Acc and Top-1 of predicting a uniformly random leaf for every test sample.

    E[m] = (1/C) Σ_p m(y_test, p) over the C leaves p (no sampling): Top-1 is 1/C whatever the
    labels, HF1 and H-Acc depend on how the test leaves sit in the tree. Violations and PC-Order
    need embeddings and are NaN, as in the Majority row.

    Parameters
    ----------
    y_test : array-like of int, shape (n,)
        Leaf indices ``0 .. tree.num_leaves - 1``.
    tree : LabelTree

    Returns
    -------
    dict
        ``top1, hf1, h_acc`` (floats in [0, 1]) and ``violations``, ``pc_order`` (NaN).

    Raises
    ------
    ValueError
        Empty ``y_test`` or a label outside ``0 .. C-1``.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> r = chance_report([0, 2], tree)  # a1: 1, 1/2, 0 over (a1, a2, b1); b1: 0, 0, 1
    >>> round(r["top1"], 4), round(r["hf1"], 4)
    (0.3333, 0.4167)
    """
    y = np.asarray(y_test).reshape(-1)
    C = int(tree.num_leaves)
    if y.size == 0:
        raise ValueError("y_test is empty; pass the test labels of the run")
    if y.min() < 0 or y.max() >= C:
        raise ValueError(f"y_test has labels outside 0..{C - 1} (the tree's leaves)")
    out = {"top1": float(np.mean([np.mean(y == p) for p in range(C)]))}
    for name, fn in (("hf1", hf1), ("h_acc", h_acc)):
        out[name] = float(np.mean([float(fn(y, np.full_like(y, p), tree)) for p in range(C)]))
    return out | {"violations": math.nan, "pc_order": math.nan}


# viz sits below report (lint-imports), so the display names are kept here
_METHOD = {"supcon": "SupCon", "simclr": "SimCLR", "hwc+lam": "HWC+LAM", "g-hmlc": "G-HMLC", "a-hmlc": "A-HMLC",
           "hcl": "HCL", "t+pl": "T+PL", "hyilr": "HyILR", "hmce": "HMCE", "ce": "CE"}  # fmt: skip
_GEOMETRY = {"euclidean": "Euclidean", "poincare": "Poincaré", "lorentz": "Lorentz"}


def _label(method: str) -> str:
    return _METHOD.get(method, method.upper())
