"""The header of a comparison's report: dataset, tree, split, model, training, evaluation, timings.

Split from :mod:`hierviz.experiments.compare` (no module over 700 lines).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from hierviz import __version__
from hierviz.experiments.config import ExperimentConfig
from hierviz.experiments.records import recorded_argv


def _px(stored: int, trained: int | None) -> str:
    """The image size of the header: the size the runs trained at, and the stored size when it differs.

    Examples
    --------
    >>> _px(64, 32), _px(32, 32)
    ('trained at 32 px (stored at 64 px)', '32 px')
    """
    if trained is None or int(trained) == int(stored):
        return f"{int(stored)} px"
    return f"trained at {int(trained)} px (stored at {int(stored)} px)"


_PROBE = {"features": "encoder features", "z": "the projection head's output z"}


def _probe(fixed: str | None, records) -> str:
    """What the probe read: ``eval.embedding`` for every method, else each method's own."""
    if fixed:
        return f"{_PROBE[fixed]} (every method)"
    by: dict[str, list[str]] = {}
    for r in records:
        names = by.setdefault(r.get("eval_embedding") or "z", [])
        if r.get("method_display", r["method"]) not in names:
            names.append(r.get("method_display", r["method"]))
    return "each method's own embedding: " + "; ".join(f"{_PROBE[k]} ({', '.join(v)})" for k, v in by.items())


_OPTIMIZER_NAMES = {"adamw": "AdamW", "adam": "Adam"}


def _overrides(records) -> str:
    """The training overrides the runs' methods declare (``method.train`` of their configs), by method.

    Examples
    --------
    >>> recs = [{"method": "hyilr", "method_display": "HyILR",
    ...          "config": {"method": {"train": {"optimizer": "adam", "schedule": "constant", "weight_decay": 0.0}}}},
    ...         {"method": "supcon", "config": {}}]
    >>> _overrides(recs)
    "; the methods' own optimiser: HyILR: Adam, constant learning rate, weight decay 0"
    >>> _overrides(recs[1:])
    ''
    """
    by: dict[str, list[str]] = {}
    for r in records:
        train = ((r.get("config") or {}).get("method") or {}).get("train") or {}
        if not train:
            continue
        parts = []
        if "optimizer" in train:
            parts.append(_OPTIMIZER_NAMES.get(train["optimizer"], str(train["optimizer"])))
        if "schedule" in train:
            parts.append("constant learning rate" if train["schedule"] == "constant" else "warmup + cosine")
        if "weight_decay" in train:
            parts.append(f"weight decay {train['weight_decay']:g}")
        names = by.setdefault(", ".join(parts), [])
        name = r.get("method_display") or r["method"]
        if name not in names:
            names.append(name)
    if not by:
        return ""
    return "; the methods' own optimiser: " + "; ".join(f"{', '.join(v)}: {k}" for k, v in by.items())


_DEPTH_NAMES = {
    "cone": "entailment cone",
    "center": "centring",
    "order": "radial order",
    "cpcc": "CPCC",
    "depth": "radial depth",
}


def _depth(records) -> str:
    """The depth regularisers added to the methods' losses (``RunRecord.depth_terms``), by run.

    Examples
    --------
    >>> recs = [{"method": "supcon", "method_display": "SupCon", "geometry": "poincare", "geometry_display": "Poincaré",
    ...          "depth_terms": {"cone": 0.2, "center": 1.0}},
    ...         {"method": "supcon", "method_display": "SupCon", "geometry": "euclidean"}]
    >>> _depth(recs)
    'entailment cone × 0.2, centring × 1 added to: SupCon (Poincaré); none on the other runs'
    >>> _depth(recs[1:])
    "none: every run trains its method's own loss"
    """
    by: dict[str, list[str]] = {}
    bare = 0
    for r in records:
        terms = r.get("depth_terms") or {}
        if not terms:
            bare += 1
            continue
        key = ", ".join(f"{_DEPTH_NAMES.get(k, k)} × {float(w):g}" for k, w in terms.items())
        name = f"{r.get('method_display') or r['method']} ({r.get('geometry_display') or r['geometry']})"
        if name not in by.setdefault(key, []):
            by[key].append(name)
    if not by:
        return "none: every run trains its method's own loss"
    text = "; ".join(f"{k} added to: {', '.join(v)}" for k, v in by.items())
    return text + ("; none on the other runs" if bare else "")


def _header(
    cfg: ExperimentConfig, argv: Sequence[str] | None, ds, tree, n_all: int, split, records, total: float
) -> dict[str, str]:
    train_s = sum(float(r.get("train_seconds", 0.0)) for r in records)
    eval_s = sum(float(r.get("eval_seconds", 0.0)) for r in records)
    d, m, t = cfg.data, cfg.model, cfg.train
    name = d.dataset if d.path is None else str(d.path)
    shown = recorded_argv(argv, cfg.out)  # --out as compare.json records it: relative below the current folder
    command = "hierviz " + shlex.join(shown) if shown is not None else "hierviz.experiments.compare(config)"
    lr_head = t.lr_head if t.lr_head is not None else 10.0 * t.lr_backbone
    warm = t.warmup_epochs if t.warmup_epochs is not None else 0.1 * t.epochs
    text = bool(getattr(ds, "is_text", False))  # token sequences (a text dataset)
    vector = bool(getattr(ds, "is_vector", False)) or text
    unit = "texts" if text else "samples" if vector else "images"
    return {
        "Command": command,
        "Dataset": f"{getattr(ds, 'name', name) or name}: {len(ds.labels)} {unit}"
        + (f" (subset of {n_all})" if len(ds.labels) != n_all else "")
        + f", {len(ds.classes)} classes, "
        + (
            f"{ds.images.shape[1]} {'tokens' if text else 'features'}"
            if vector
            else _px(ds.images.shape[1], d.image_size)
        ),
        "Licence / citation": f"{getattr(ds, 'licence', '') or 'n/a'} — {getattr(ds, 'citation', '') or 'n/a'}",
        "Tree": f"{d.tree} (C = {tree.num_leaves} leaves, height L = {tree.height})\n{tree}",
        "Split": (
            "the dataset's official train/test, 10 % of train as val"
            if d.split == "official"
            else f"grouped by {'lesion/group id' if ds.groups is not None else unit[:-1]}"
        )
        + f", seed {d.split_seed}: "
        f"train {len(split['train'])}, val {len(split['val'])} ({'early stopping' if t.patience else 'unused'}), "
        f"test {len(split['test'])}"
        + (
            f"; unseen leaves {len(split['unseen_leaves'])} (fold {cfg.eval.fold}), prediction set "
            f"{len(split['predict'])} (in val and test)"
            if "unseen_leaves" in split
            else ""
        ),
        "Model": f"{m.encoder}"
        + (f" (width {m.width})" if m.encoder == "small_cnn" else "")
        + f", d = {m.embed_dim}, "
        + (f"{ds.images.shape[1]} input {'tokens' if text else 'features'}" if vector else f"image {d.image_size} px")
        + f", pretrained: {m.pretrained or 'none'}",
        "Training": f"{t.epochs} epochs, batch {t.batch_size}, AdamW lr {t.lr_backbone:g}/{lr_head:g}"
        f" (backbone/head), warmup {warm:g} epochs + cosine, weight decay {t.weight_decay:g}, "
        f"EMA {t.ema_decay or 'off'}, tau {cfg.loss.get('tau')}, c {m.curvature:g}" + _overrides(records),
        "Depth terms": _depth(records),
        "Evaluation": "linear probe on " + _probe(cfg.eval.embedding, records),
        "Device": ", ".join(sorted({str(r.get("device", "?")) for r in records})),
        "Timings": f"{total:.1f} s in all; training {train_s:.1f} s, evaluation {eval_s:.1f} s "
        f"over {len(records)} runs",
        "hierviz": __version__,
    }
