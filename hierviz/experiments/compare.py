"""``compare(config)``: train every method × geometry × seed, evaluate, tabulate, report.

The one run loop of hierviz: the CLI (``hierviz compare``) and every notebook call it. It
names no method and no geometry: what a run needs (views, a classifier, the evaluation
protocol and which representation it embeds) comes from the method registry, and geometry
behaviour from the :class:`~hierviz.geometry.Geometry` object.

Paper 01 §4.3: "only the objective and the ambient geometry differ" — every run shares the
encoder, data, augmentations and schedule; each frozen encoder is evaluated on the
group-wise test split (paper 01 §4.4).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.experiments.config import ConfigError, ExperimentConfig, validate
from hierviz.experiments.records import (
    PLAN_KEYS,
    RECORD_KEYS,
    RESULT_FREE_KEYS,
    atomic_write_text,
    check_mergeable,
    diff_keys,
    fingerprint,
    json_default,
    load_records,
    read_run_file,
    run_name,
    write_tree_json,
)

__all__ = ["CompareResult", "compare", "report", "limit_indices", "load_data"]


# What --resume may change and still reuse a finished run: keys that do not change results, and the
# plan (more seeds, methods or geometries).
_RESUME_FREE_KEYS = RESULT_FREE_KEYS | PLAN_KEYS


@dataclass
class CompareResult:
    """What :func:`compare` returns.

    Attributes
    ----------
    rows : list of dict
        One per run: ``method, geometry, seed`` and every metric (``results.csv``).
    records : list of dict
        The full run records (``result.json`` of each run).
    markdown : str
        The results table (``results.md``; paper 01 Table 1 shape, mean ± std over seeds).
    paths : dict of str to Path
        ``csv``, ``markdown``, ``html``.
    out : Path
    config : ExperimentConfig
    """

    rows: list[dict]
    records: list[dict]
    markdown: str
    paths: dict[str, Path]
    out: Path
    config: ExperimentConfig
    tree: Any = field(default=None, repr=False)

    def record(self, method: str, geometry: str, seed: int = 0) -> dict:
        """The run record (``result.json``) of one method × geometry × seed.

        Raises
        ------
        KeyError
            No such run in this comparison.
        """
        for r in self.records:
            if (r["method"], r["geometry"], int(r["seed"])) == (method, geometry, int(seed)):
                return r
        raise KeyError(f"no run {method!r} · {geometry!r} · seed {seed} in this comparison")

    def arrays(self, method: str, geometry: str, seed: int = 0) -> dict[str, np.ndarray]:
        """The saved evaluation arrays of one run (``embeddings.npz``: ``z_test``, ``y_test``, …)."""
        return read_run_file(self.record(method, geometry, seed)["embeddings"], what="saved embeddings")

    def _repr_markdown_(self) -> str:  # Jupyter shows the table
        return self.markdown

    def __str__(self) -> str:
        return self.markdown


def limit_indices(labels: np.ndarray, n: int, seed: int) -> np.ndarray:
    """A seeded random subset of ``n`` indices that keeps every class (a few of each first).

    Parameters
    ----------
    labels : numpy.ndarray, shape (N,), int
    n : int
    seed : int

    Returns
    -------
    numpy.ndarray, shape (min(n, N),), int64, sorted
    """
    N = labels.shape[0]
    if n >= N:
        return np.arange(N)
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    k = max(2, n // (4 * len(classes)))
    chosen: list[np.ndarray] = []
    for c in classes:
        idx = np.flatnonzero(labels == c)
        chosen.append(rng.choice(idx, size=min(k, idx.size), replace=False))
    first = np.concatenate(chosen)[:n]
    rest = np.setdiff1d(np.arange(N), first)
    extra = rng.choice(rest, size=max(0, n - first.size), replace=False)
    return np.sort(np.concatenate([first, extra]))


@contextlib.contextmanager
def _option_named(key: str, param: str = "name_or_path", value: Any = None):
    """Re-raise a library error "<param>: …" (naming a Python parameter) as "<key>: …", same class.

    The CLI then names the option too: "--tree (data.tree): unknown tree 'x'; …". An error
    that names neither the parameter nor ``value`` (e.g. a tree/data mismatch) is prefixed
    with "<key>: <value>: ", so it names the file or name the user gave.
    """
    try:
        yield
    except (ValueError, FileNotFoundError) as exc:
        text = str(exc)
        if text.startswith(f"{param}: "):
            text = f"{key}: {text[len(param) + 2 :]}"
        elif value is not None and str(value) not in text:
            text = f"{key}: {value}: {text}"
        else:
            raise
        try:
            renamed = type(exc)(text)  # the same class, so callers' except clauses still match
        except Exception:  # pragma: no cover - an exception class with another signature
            renamed = ConfigError(text)
        raise renamed from None


def load_data(config: ExperimentConfig):
    """The dataset (bound to its tree, ``data.limit`` applied) and the tree of a config.

    Returns
    -------
    dataset, tree, n_all
        ``n_all`` is the size before ``data.limit``.

    Raises
    ------
    ConfigError
        No tree for a file given by ``data.path``, ``data.limit`` below 3 × classes, or an
        unknown dataset or tree name (the message starts with the key, e.g. ``data.tree:``).
    """
    from hierviz.data import DATASETS, DEFAULT_TREE, bind_tree, load_dataset

    d = config.data
    spec = DATASETS.get(d.dataset) if d.path is None and d.dataset in DATASETS else None
    # a loader that takes image_size reads a file made at that size (ham10000_32.npz), else resizes once
    size = d.image_size if spec is not None and spec.takes_image_size else None
    with _option_named("data.path" if d.path is not None else "data.dataset"):
        ds = load_dataset(d.path if d.path is not None else d.dataset, image_size=size)
    tree_arg = d.tree
    if tree_arg is None:
        if d.path is None and d.dataset in DEFAULT_TREE:
            tree_arg = DEFAULT_TREE[d.dataset]
        else:
            raise ConfigError(
                "data.tree is required with data.path (--tree: a tree name or a tree JSON file whose leaves are "
                f"the data's classes: {list(ds.classes)})"
            )
    with _option_named("data.tree", value=tree_arg):
        ds, tree = bind_tree(ds, tree_arg)
    n_all = len(ds.labels)
    if d.limit is not None:
        need = 3 * tree.num_leaves
        if d.limit < need:
            raise ConfigError(
                f"data.limit={d.limit} is below classes × splits ({tree.num_leaves} × 3 = {need}): every class "
                f"needs images in train, val and test; use --limit {need} or more"
            )
        ds = ds.subset(limit_indices(np.asarray(ds.labels), d.limit, d.split_seed))
    return ds, tree, n_all


def _check_writable(out: Path) -> None:
    try:
        (out / "runs").mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"--out {out}: cannot write there ({exc.strerror or exc}); choose a folder you can write to"
        ) from None


def _speed_options(cfg: ExperimentConfig, train_ds) -> dict[str, Any]:
    """Resolve ``train.augment_on`` / ``train.channels_last`` and the loader options for this machine.

    ``augment_on="auto"`` draws the views on the device on CUDA when the training images are a
    uint8 array, else in the DataLoader (the CPU path: every preset's CPU numbers).
    """
    from hierviz.training import resolve_device

    t = cfg.train
    on_cuda = resolve_device(t.device).type == "cuda"
    imgs = getattr(train_ds, "images", None)
    uint8_images = isinstance(imgs, np.ndarray) and imgs.dtype == np.uint8 and imgs.ndim in (3, 4)
    augment_on = t.augment_on
    if augment_on == "auto":
        augment_on = "device" if on_cuda and uint8_images else "cpu"
    loader_options: dict[str, Any] = {}
    if cfg.data.persistent_workers:
        loader_options["persistent_workers"] = True
    if cfg.data.prefetch_factor is not None:
        loader_options["prefetch_factor"] = int(cfg.data.prefetch_factor)
    return {
        "augment_on": augment_on,
        "channels_last": on_cuda if t.channels_last is None else bool(t.channels_last),
        "loader_options": loader_options or None,
        "device_augment": None,
    }


def _launch(cfg: ExperimentConfig, train_ds, world_size: int) -> dict[str, int]:
    """``world_size`` (1, or the torchrun ranks) and ``global_batch_size`` (``train.batch_size``, capped
    at the training set; split between the ranks) of a run: each run's config.json and result.json."""
    return {"world_size": int(world_size), "global_batch_size": min(cfg.train.batch_size, len(train_ds))}


def _run_one(
    cfg: ExperimentConfig,
    method_name: str,
    geometry_name: str,
    seed: int,
    tree,
    train_ds,
    test_ds,
    run_dir: Path,
    *,
    resume: bool,
    progress: bool,
    callbacks: Sequence = (),
) -> dict[str, Any] | None:
    """Train + evaluate one method × geometry × seed; write config.json, result.json, embeddings.npz.

    Under torchrun every rank trains (DDP, :mod:`hierviz.training.distributed`); ranks other
    than 0 return None after training.
    """
    import torch

    from hierviz import __version__
    from hierviz.data import ContrastiveDataset, TwoViewTransform
    from hierviz.evaluation import PROTOCOLS
    from hierviz.geometry import get_geometry
    from hierviz.methods import build_objective, get_method
    from hierviz.models import build_model
    from hierviz.training import TrainConfig, fit, seed_everything

    method = get_method(method_name)
    geometry = get_geometry(geometry_name, c=cfg.model.curvature, learnable=cfg.model.learn_curvature)
    objective = build_objective(method_name, tree, geometry, **cfg.loss)
    seed_everything(seed)
    with _option_named("model.pretrained", "pretrained"):
        model = build_model(
            cfg.model.encoder,
            geometry,
            embed_dim=cfg.model.embed_dim,
            width=cfg.model.width,
            hidden_dim=cfg.model.hidden_dim,
            num_classes=tree.num_leaves if method.needs.logits else None,
            pretrained=cfg.model.pretrained,
            clip_r=cfg.model.clip_r,
            scale_init=cfg.model.scale_init,
            learn_scale=cfg.model.learn_scale,
            head_bound=cfg.model.head_bound,
            init_radius=cfg.model.init_radius,
            curvature_range=tuple(cfg.model.curvature_range),
            head_center=cfg.model.head_center,
        )
    from hierviz.training.distributed import get_world_size

    t = cfg.train
    per_sample = cfg.data.augment_seeds == "sample" or (cfg.data.augment_seeds == "auto" and get_world_size() > 1)
    view_seed = seed if per_sample else None  # views a function of (seed, epoch, index, view): rank-independent
    train_config = TrainConfig(
        epochs=t.epochs,
        batch_size=t.batch_size,
        lr_backbone=t.lr_backbone,
        lr_head=t.lr_head if t.lr_head is not None else 10.0 * t.lr_backbone,
        warmup_epochs=t.warmup_epochs if t.warmup_epochs is not None else 0.1 * t.epochs,
        weight_decay=t.weight_decay,
        ema_decay=t.ema_decay or None,
        grad_clip=t.grad_clip,
        seed=seed,
        device=t.device,
        amp=t.amp,
        num_workers=cfg.data.workers,
        checkpoint_dir=run_dir,
        resume=resume,
        progress=progress,
        sync_bn=t.sync_bn,
        compile_loss=t.compile_loss,
    )
    views = method.needs.views
    image_size = int(cfg.data.image_size)
    speed = _speed_options(cfg, train_ds)  # issue 11: where views are drawn, memory layout, compile
    if t.compile:
        from hierviz.geometry._kernels import compile_kernels

        model.compile()
        compile_kernels(True)
    if speed["augment_on"] == "device":
        from hierviz.data.gpu_augment import BatchTwoViewAugment, UInt8Images

        train_views = UInt8Images(train_ds)
        speed["device_augment"] = BatchTwoViewAugment(image_size, views=views, channels_last=speed["channels_last"])
    elif getattr(train_ds, "is_vector", False):  # float (N, D) features: dropout views, lazy encoder input size
        from hierviz.data import FeatureViews

        train_views = ContrastiveDataset(train_ds, FeatureViews(), views=views, seed=view_seed)
        with torch.no_grad():  # the dry run that fixes the encoder's input size D (hierviz.models.MLPEncoder)
            model.encoder(torch.zeros(1, train_ds.images.shape[1], 1, 1))
    else:
        train_views = ContrastiveDataset(
            train_ds, TwoViewTransform(image_size, views=views), views=views, seed=view_seed
        )
    batch_sampler = None
    if method.needs.sampler is not None:
        from hierviz.samplers import SAMPLERS

        batch_sampler = SAMPLERS.get(method.needs.sampler)(
            labels=np.asarray(train_ds.labels), tree=tree, batch_size=t.batch_size, seed=seed
        )
    result = fit(
        train_config,
        model,
        objective,
        train_views,
        callbacks=callbacks,
        batch_sampler=batch_sampler,
        device_augment=speed["device_augment"],
        channels_last=speed["channels_last"],
        loader_options=speed["loader_options"],
    )
    from hierviz.training.distributed import is_main_process

    if not is_main_process():
        return None  # under torchrun rank 0 alone evaluates and writes
    head = getattr(result.model, "to_manifold", None)
    if getattr(head, "center", None) == "batch":  # issue 22: the head's centre from eval-mode outputs
        from hierviz.evaluation import embed_dataset

        with head.recentring():
            embed_dataset(result.model, train_ds, image_size, batch_size=cfg.eval.batch_size, device=result.device)
    protocol_name = cfg.eval.protocol or method.protocol
    protocol = PROTOCOLS.get(protocol_name)
    embedding = cfg.eval.embedding or method.embedding  # issue 24: one probe input for every method
    ev = protocol(
        result.model,
        train_ds,
        test_ds,
        tree,
        geometry,
        embedding=embedding,
        seed=seed,
        image_size=image_size,
        device=result.device,
        num_workers=cfg.data.workers,
        batch_size=cfg.eval.batch_size,
        mean_steps=cfg.eval.mean_steps,
    )
    arrays = ev.arrays()
    np.savez_compressed(run_dir / "embeddings.npz", **arrays)
    from hierviz.evaluation import run_radius

    radius = run_radius(model, arrays, tree, geometry, embedding, seed=seed, steps=cfg.eval.mean_steps)
    geo_cfg = geometry.config() if hasattr(geometry, "config") else {"name": geometry_name}
    record = {
        "name": run_dir.name,
        "method": method.name,
        "method_display": method.display_name,
        "geometry": geometry_name,
        "geometry_display": getattr(geometry, "display_name", geometry_name),
        "geometry_config": geo_cfg,
        "curvature": 0.0 - float(getattr(geometry, "curvature", 0.0)),  # c (learned with model.learn_curvature)
        "seed": seed,
        "metrics": ev.metrics,
        "radius": radius,
        "epochs": t.epochs,
        "train_seconds": result.train_seconds,
        "eval_seconds": ev.seconds,
        "augment_on": speed["augment_on"],
        **_launch(cfg, train_ds, get_world_size()),
        "eval_embedding": embedding,
        "protocol": protocol_name,
        "device": str(result.device),
        "history": result.history,
        "step_history": result.step_history,
        "embeddings": "embeddings.npz",
        "fingerprint": fingerprint(cfg.run_config(method_name, geometry_name, seed)),
        "hierviz": __version__,
    }
    atomic_write_text(run_dir / "result.json", json.dumps(record, default=json_default, indent=1))
    return record


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


def _header(
    cfg: ExperimentConfig, argv: Sequence[str] | None, ds, tree, n_all: int, split, records, total: float
) -> dict[str, str]:
    from hierviz import __version__

    train_s = sum(float(r.get("train_seconds", 0.0)) for r in records)
    eval_s = sum(float(r.get("eval_seconds", 0.0)) for r in records)
    d, m, t = cfg.data, cfg.model, cfg.train
    name = d.dataset if d.path is None else str(d.path)
    command = "hierviz " + shlex.join(list(argv)) if argv is not None else "hierviz.experiments.compare(config)"
    lr_head = t.lr_head if t.lr_head is not None else 10.0 * t.lr_backbone
    warm = t.warmup_epochs if t.warmup_epochs is not None else 0.1 * t.epochs
    vector = bool(getattr(ds, "is_vector", False))
    unit = "samples" if vector else "images"
    return {
        "Command": command,
        "Dataset": f"{getattr(ds, 'name', name) or name}: {len(ds.labels)} {unit}"
        + (f" (subset of {n_all})" if len(ds.labels) != n_all else "")
        + f", {len(ds.classes)} classes, "
        + (f"{ds.images.shape[1]} features" if vector else _px(ds.images.shape[1], d.image_size)),
        "Licence / citation": f"{getattr(ds, 'licence', '') or 'n/a'} — {getattr(ds, 'citation', '') or 'n/a'}",
        "Tree": f"{d.tree} (C = {tree.num_leaves} leaves, height L = {tree.height})\n{tree}",
        "Split": f"grouped by {'lesion/group id' if ds.groups is not None else unit[:-1]}, seed {d.split_seed}: "
        f"train {len(split['train'])}, val {len(split['val'])} (unused), test {len(split['test'])}"
        + (
            f"; unseen leaves {len(split['unseen_leaves'])} (fold {cfg.eval.fold}), prediction set "
            f"{len(split['predict'])} (in val and test)"
            if "unseen_leaves" in split
            else ""
        ),
        "Model": f"{m.encoder}"
        + (f" (width {m.width})" if m.encoder == "small_cnn" else "")
        + f", d = {m.embed_dim}, "
        + (f"{ds.images.shape[1]} input features" if vector else f"image {d.image_size} px")
        + f", pretrained: {m.pretrained or 'none'}",
        "Training": f"{t.epochs} epochs, batch {t.batch_size}, AdamW lr {t.lr_backbone:g}/{lr_head:g}"
        f" (backbone/head), warmup {warm:g} epochs + cosine, EMA {t.ema_decay or 'off'}, "
        f"tau {cfg.loss.get('tau')}, c {m.curvature:g}",
        "Evaluation": "linear probe on "
        + (
            {"features": "encoder features (every method)", "z": "the projection head's output z (every method)"}[
                cfg.eval.embedding
            ]
            if cfg.eval.embedding
            else "each method's own embedding (z; encoder features for CE and HXE)"
        ),
        "Device": ", ".join(sorted({str(r.get("device", "?")) for r in records})),
        "Timings": f"{total:.1f} s in all; training {train_s:.1f} s, evaluation {eval_s:.1f} s "
        f"over {len(records)} runs",
        "hierviz": __version__,
    }


def compare(
    config: ExperimentConfig,
    *,
    resume: bool = False,
    progress: bool = True,
    verbose: bool = True,
    callbacks: Mapping[str, Sequence[Callable]] | None = None,
    argv: Sequence[str] | None = None,
) -> CompareResult:
    """Train and evaluate every method × geometry × seed of ``config``; write the tables and report.

    Parameters
    ----------
    config : ExperimentConfig
        From :func:`hierviz.experiments.resolve_config` (a preset plus overrides).
    resume : bool, default False
        Reuse finished runs whose fingerprint matches (a mismatch is refused, naming the
        keys) and continue interrupted ones from their last checkpoint.
    progress : bool, default True
        tqdm progress bars.
    verbose : bool, default True
        One line per run and the final table on stdout.
    callbacks : mapping of run name to callables, optional
        ``cb(epoch, info)`` after each epoch of that run (tests interrupt runs this way).
    argv : sequence of str, optional
        The command line, recorded in the report header.

    Returns
    -------
    CompareResult

    Raises
    ------
    ConfigError
        Bad settings, an unwritable ``out``, a ``resume`` onto runs made with other settings.
    ValueError, FileNotFoundError
        Missing or malformed data or tree files (the message names the file).
    hierviz.training.NonFiniteLossError
        A run diverged (its last good checkpoint is kept).

    Examples
    --------
    A few minutes on a laptop CPU (``tests/test_experiments.py`` runs smaller ones)::

        from hierviz.experiments import compare, resolve_config
        cfg = resolve_config("quick", ["train.epochs=1", "methods=supcon", "seeds=1"])
        result = compare(cfg)
        print(result.markdown)
    """
    import torch

    from hierviz.training.distributed import init_distributed

    init_distributed()  # under torchrun: join the process group (nothing in one process)
    cfg = validate(config.copy())
    saved_threads = torch.get_num_threads()
    if cfg.train.threads is not None:
        torch.set_num_threads(cfg.train.threads)
    try:
        return _compare(cfg, resume, progress, verbose, callbacks or {}, argv)
    finally:
        torch.set_num_threads(saved_threads)  # compare() may run in a notebook's process


def _compare(
    cfg: ExperimentConfig,
    resume: bool,
    progress: bool,
    verbose: bool,
    callbacks: Mapping[str, Sequence[Callable]],
    argv: Sequence[str] | None,
) -> CompareResult:
    from hierviz.data import grouped_split
    from hierviz.report import build_report
    from hierviz.training import distributed as hd

    main = hd.is_main_process()  # under torchrun rank 0 alone evaluates, prints and writes
    say = print if verbose and main else (lambda *a, **k: None)
    progress = progress and main
    t_start = time.perf_counter()
    out = Path(cfg.out)
    _check_writable(out)
    ds, tree, n_all = load_data(cfg)
    from hierviz.models import ENCODERS

    if getattr(ds, "is_vector", False) and not getattr(ENCODERS.get(cfg.model.encoder), "vectors", False):
        raise ConfigError(
            f"model.encoder: {cfg.model.encoder!r} encodes images, but the dataset holds feature vectors "
            f"(N, D) = {ds.images.shape}; use --encoder mlp (or an encoder registered with a 'vectors = True' "
            "attribute)"
        )
    if cfg.data.image_size is None:
        cfg.data.image_size = int(ds.images.shape[1])
    if cfg.data.tree is None:
        from hierviz.data import DEFAULT_TREE

        cfg.data.tree = DEFAULT_TREE.get(cfg.data.dataset)
    split = grouped_split(
        np.asarray(ds.labels), None if ds.groups is None else np.asarray(ds.groups), seed=cfg.data.split_seed
    )
    empty = [k for k in ("train", "test") if len(split[k]) == 0]
    if empty:  # issue 27 #22: say why here, not "dataset is empty: nothing to embed" after training
        counts = np.bincount(np.asarray(ds.labels))
        raise ConfigError(
            f"the {' and '.join(empty)} split is empty: {len(ds)} {'samples' if ds.is_vector else 'images'} over "
            f"{len(counts)} classes (at most {int(counts.max())} per class) give train/val/test = "
            f"{len(split['train'])}/{len(split['val'])}/{len(split['test'])}; the grouped split needs about 3 or more "
            "per class (more images, fewer classes, or a larger data.limit)"
        )
    from hierviz.evaluation import PROTOCOLS
    from hierviz.methods import get_method

    splits: dict[str, tuple] = {}

    def data_for(protocol_name: str) -> tuple:
        """(split, train, test) of a protocol: its own ``make_split`` (e.g. unseen leaves) or the default split."""
        if protocol_name not in splits:
            maker = getattr(PROTOCOLS.get(protocol_name), "make_split", None)
            sp = split
            if maker is not None:
                with _option_named("eval.fold", "fold", value=cfg.eval.fold):
                    sp = maker(
                        np.asarray(ds.labels),
                        None if ds.groups is None else np.asarray(ds.groups),
                        num_leaves=tree.num_leaves,
                        seed=cfg.data.split_seed,
                        fold=cfg.eval.fold,
                    )
            splits[protocol_name] = (sp, ds.subset(sp["train"]), ds.subset(sp[cfg.eval.split]))
        return splits[protocol_name]

    if main:
        atomic_write_text(out / "config.json", json.dumps(cfg.to_dict(), indent=1, default=json_default))
        write_tree_json(out / "tree.json", tree)

    plan = [(m, g, s) for m in cfg.methods for g in cfg.geometries for s in range(cfg.seeds)]
    records, header_split = [], split
    for i, (method, geo, seed) in enumerate(plan, 1):
        run_split, train_ds, test_ds = data_for(cfg.eval.protocol or get_method(method).protocol)
        if i == 1:
            header_split = run_split  # the header describes the first run's split
        run_dir = out / "runs" / run_name(method, geo, seed)
        run_cfg = cfg.run_config(method, geo, seed)
        run_cfg["run"].update(_launch(cfg, train_ds, hd.get_world_size()))  # recorded, not fingerprinted
        fp = fingerprint(run_cfg)
        tag = f"[{i}/{len(plan)}] {method} · {geo} · seed {seed}"
        hd.barrier()  # rank 0's files of the previous run are on disk: every rank decides alike
        res_file, cfg_file = run_dir / "result.json", run_dir / "config.json"
        if resume and cfg_file.is_file():
            saved = read_run_file(cfg_file)
            saved.pop("fingerprint", None)
            if fingerprint(saved, _RESUME_FREE_KEYS) != fingerprint(run_cfg, _RESUME_FREE_KEYS):
                keys = diff_keys(saved, run_cfg, _RESUME_FREE_KEYS)
                raise ConfigError(
                    f"--resume: {cfg_file} was made with different settings ({', '.join(keys)}); "
                    "use the same preset and --set values, or another --out"
                )
        if resume and res_file.is_file():
            rec = read_run_file(res_file, required=RECORD_KEYS)
            say(f"{tag}: finished earlier, reusing {res_file}", flush=True)
        else:
            if main:
                if not resume and run_dir.exists():
                    shutil.rmtree(run_dir)
                run_dir.mkdir(parents=True, exist_ok=True)
                atomic_write_text(cfg_file, json.dumps({**run_cfg, "fingerprint": fp}, indent=1, default=json_default))
            hd.barrier()
            rec = _run_one(
                cfg,
                method,
                geo,
                seed,
                tree,
                train_ds,
                test_ds,
                run_dir,
                resume=resume,
                progress=progress,
                callbacks=callbacks.get(run_dir.name, ()),
            )
            if rec is None:  # a rank other than 0: it trained, rank 0 evaluates and writes
                continue
            m = rec["metrics"]
            say(
                f"{tag}: train {rec['train_seconds']:.1f} s, eval {rec['eval_seconds']:.1f} s | "
                + ", ".join(f"{k} {v:.3f}" for k, v in m.items()),
                flush=True,
            )
        rec["embeddings"] = str(run_dir / "embeddings.npz")
        rec["config"], rec["folder"] = run_cfg, str(run_dir)
        records.append(rec)

    if not main:
        hd.barrier()  # rank 0 writes the tables and the report
        from hierviz.report import read_results_csv

        paths = {"csv": out / "results.csv", "markdown": out / "results.md", "html": out / "report.html"}
        return CompareResult(
            rows=read_results_csv(paths["csv"]),
            records=load_records(out),
            markdown=paths["markdown"].read_text(encoding="utf-8"),
            paths=paths,
            out=out,
            config=cfg,
            tree=tree,
        )
    total = time.perf_counter() - t_start
    header = _header(cfg, argv, ds, tree, n_all, header_split, records, total)
    atomic_write_text(
        out / "compare.json",
        json.dumps(
            {
                "argv": None if argv is None else list(argv),
                "config": cfg.to_dict(),
                "runs": [r["name"] for r in records],
                "header": header,
            },
            default=json_default,
            indent=1,
        ),
    )
    paths = build_report(
        out,
        records,
        tree,
        header=header,
        methods=cfg.methods,
        geometries=cfg.geometries,
        projection=cfg.eval.projection,
        title="hierviz compare",
        baseline=cfg.report.baseline,
    )
    markdown = paths["markdown"].read_text(encoding="utf-8")
    say(markdown)
    say(
        f"wrote {paths['csv']}, {paths['markdown']}, {paths['html']} ({time.perf_counter() - t_start:.1f} s in all)",
        flush=True,
    )
    from hierviz.report import read_results_csv

    hd.barrier()  # the other ranks read the tables now
    return CompareResult(
        rows=read_results_csv(paths["csv"]),
        records=records,
        markdown=markdown,
        paths=paths,
        out=out,
        config=cfg,
        tree=tree,
    )


def report(out: str | os.PathLike, *, projection: str | None = None, verbose: bool = True) -> CompareResult:
    """Rebuild ``results.csv``/``.md`` and ``report.html`` from the finished runs in ``out``.

    Parameters
    ----------
    out : str or Path
        A folder written by :func:`compare`.
    projection : str, optional
        Override the config's ``eval.projection``.
    verbose : bool, default True

    Returns
    -------
    CompareResult

    Raises
    ------
    ConfigError
        No finished runs, or runs trained with different settings (the keys are named).
    """
    from hierviz.hierarchy import LabelTree
    from hierviz.report import build_report, read_results_csv

    out = Path(out)
    records = load_records(out)
    if not records:
        raise ConfigError(f"--out: no finished runs under {out / 'runs'} (run 'hierviz compare --out {out}' first)")
    check_mergeable(records)
    meta_file = out / "compare.json"
    meta = read_run_file(meta_file) if meta_file.is_file() else {}
    order = {name: i for i, name in enumerate(meta.get("runs", []))}
    records.sort(key=lambda r: (order.get(r.get("name"), len(order)), r.get("name", "")))
    cfg_dict = {k: v for k, v in records[0]["config"].items() if k not in ("run", "fingerprint")}
    cfg = ExperimentConfig.from_dict(cfg_dict, where=str(Path(records[0]["folder"]) / "config.json"))
    tree_file = out / "tree.json"
    if tree_file.is_file():
        try:  # LabelTree.from_json reads iteratively (any depth) and names the file
            tree = LabelTree.from_json(tree_file)
        except (ValueError, TypeError, KeyError, OSError) as exc:  # a readable JSON object that is no tree
            text = str(exc) if str(exc).startswith(str(tree_file)) else f"{tree_file}: not a label tree ({exc})"
            raise ConfigError(f"{text}; delete it and rerun compare") from None
    else:
        _, tree, _ = load_data(cfg)
    methods = list(dict.fromkeys(r["method"] for r in records))
    geos = list(dict.fromkeys(r["geometry"] for r in records))
    header = dict(
        meta.get("header") or {"Dataset": str(cfg.data.path or cfg.data.dataset), "Tree": f"{cfg.data.tree}\n{tree}"}
    )
    header["Report"] = f"rebuilt by 'hierviz report --out {shlex.quote(str(out))}' from {len(records)} finished runs"
    paths = build_report(
        out,
        records,
        tree,
        header=header,
        methods=methods,
        geometries=geos,
        projection=projection or cfg.eval.projection,
        baseline=cfg.report.baseline,
    )
    markdown = paths["markdown"].read_text(encoding="utf-8")
    if verbose:
        print(f"wrote {paths['csv']}, {paths['markdown']}, {paths['html']}")
    return CompareResult(
        rows=read_results_csv(paths["csv"]),
        records=records,
        markdown=markdown,
        paths=paths,
        out=out,
        config=cfg,
        tree=tree,
    )
