"""One run of a comparison: train one method × geometry × seed, evaluate it, write its record.

Split from :mod:`hierviz.experiments.compare` (no module over 700 lines).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierviz import __version__, methods
from hierviz.data.text import TokenViews
from hierviz.evaluation import PROTOCOLS, EvalContext, embed_dataset, run_radius
from hierviz.evaluation.multilabel import EarlyStopping, evaluate_classifier
from hierviz.experiments.config import ExperimentConfig
from hierviz.experiments.inputs import _option_named
from hierviz.experiments.records import (
    atomic_write_text,
    fingerprint,
    json_default,
)
from hierviz.geometry import get_geometry
from hierviz.geometry._kernels import compile_kernels
from hierviz.methods import Method, get_method
from hierviz.metrics.registry import METRIC_INFO, compute_metrics
from hierviz.models import build_model
from hierviz.report.run_record import RunRecord
from hierviz.samplers import SAMPLERS
from hierviz.training import TrainConfig, fit, resolve_device, seed_everything, seed_run
from hierviz.training.distributed import get_world_size, is_main_process
from hierviz.training.loop import FitResult


def _speed_options(cfg: ExperimentConfig, train_ds) -> dict[str, Any]:
    """Resolve ``train.augment_on`` / ``train.channels_last`` and the loader options for this machine.

    ``augment_on="auto"`` draws the views on the device on CUDA when the training images are a
    uint8 array, else in the DataLoader (the CPU path: every preset's CPU numbers).
    """
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


def untrained(model: torch.nn.Module, device: torch.device) -> FitResult:
    """The :class:`~hierviz.training.loop.FitResult` of a model with no trainable parameter (no epoch is run)."""
    return FitResult(model.to(device).eval(), None, {}, {}, 0, 0, 0.0, None, device)


def _build_model(cfg: ExperimentConfig, method: Method, objective, geometry, tree, train_ds, seed: int):
    """The run's model: the method's own builder (:attr:`Method.model`), else ``build_model`` from ``model.*``.

    Either is built right after the run seed is set; ``build_model`` calls the method's
    :attr:`Method.attach_encoder` hook with the objective and the new encoder.
    """
    seed_everything(seed)
    if method.model is not None:  # a method that builds its own model (Paper 03's grid)
        return method.model(train_ds, geometry, seed)
    hook = method.attach_encoder
    with _option_named("model.pretrained", "pretrained"):
        return build_model(
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
            on_encoder=None if hook is None else (lambda encoder: hook(objective, encoder)),
        )


def train_config_for(cfg: ExperimentConfig, method: Method, seed: int, run_dir: Path, *, resume: bool,
                     progress: bool) -> TrainConfig:  # fmt: skip
    """The :class:`~hierviz.training.TrainConfig` of one run: ``train.*`` with the method's :attr:`Method.train` applied.

    Examples
    --------
    >>> from hierviz.experiments.config import resolve_config
    >>> from hierviz.methods import get_method
    >>> cfg = resolve_config("quick", [])
    >>> tc = train_config_for(cfg, get_method("hyilr"), 0, Path("."), resume=False, progress=False)
    >>> tc.optimizer, tc.schedule, tc.weight_decay
    ('adam', 'constant', 0.0)
    >>> tc = train_config_for(cfg, get_method("supcon"), 0, Path("."), resume=False, progress=False)
    >>> tc.optimizer, tc.schedule, tc.weight_decay == cfg.train.weight_decay
    ('adamw', 'warmup_cosine', True)
    """
    t = cfg.train
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
    return replace(train_config, **method.train.to_dict())


def optimizer_record(tc: TrainConfig) -> dict[str, Any]:
    """What a run's record says about its optimiser: the settings ``fit`` built it from.

    Examples
    --------
    >>> optimizer_record(TrainConfig(optimizer="adam", schedule="constant", weight_decay=0.0, lr_head=0.01))
    {'optimizer': 'adam', 'schedule': 'constant', 'weight_decay': 0.0, 'lr_backbone': 0.0001, 'lr_head': 0.01, 'warmup_epochs': 0.0}
    """
    warm = 0.0 if tc.schedule == "constant" else float(tc.warmup_epochs)
    return {
        "optimizer": tc.optimizer,
        "schedule": tc.schedule,
        "weight_decay": float(tc.weight_decay),
        "lr_backbone": float(tc.lr_backbone),
        "lr_head": float(tc.lr_head),
        "warmup_epochs": warm,
    }


def _train_views(cfg: ExperimentConfig, method: Method, model, train_ds, speed: dict[str, Any], view_seed):
    """The training dataset of views: on the device (uint8 images), of feature vectors, of token sequences, or images."""
    from hierviz.data import ContrastiveDataset, FeatureViews, TwoViewTransform  # heavy: torchvision
    from hierviz.data.gpu_augment import BatchTwoViewAugment, UInt8Images  # heavy: torchvision

    views, image_size = method.needs.views, int(cfg.data.image_size)
    if speed["augment_on"] == "device":
        speed["device_augment"] = BatchTwoViewAugment(image_size, views=views, channels_last=speed["channels_last"])
        return UInt8Images(train_ds)
    if getattr(train_ds, "is_vector", False):  # float (N, D) features: dropout views, lazy encoder input size
        train_views = ContrastiveDataset(train_ds, FeatureViews(method.feature_dropout), views=views, seed=view_seed)
        if method.model is None:
            with torch.no_grad():  # the dry run that fixes the encoder's input size D (hierviz.models.MLPEncoder)
                model.encoder(torch.zeros(1, train_ds.images.shape[1], 1, 1))
        return train_views
    if getattr(train_ds, "is_text", False):  # int64 (N, s, 2) token ids and mask: the sequences as they are
        # a multi-label classifier trains on every label path of a document (hierviz.data.text.LabelSetDataset)
        return ContrastiveDataset(train_ds, TokenViews(), views=views, seed=view_seed, label_sets=method.classifier)
    return ContrastiveDataset(train_ds, TwoViewTransform(image_size, views=views), views=views, seed=view_seed)


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
    val_ds=None,
) -> dict[str, Any] | None:
    """Train + evaluate one method × geometry × seed; write config.json, result.json, embeddings.npz.

    Under torchrun every rank trains (DDP, :mod:`hierviz.training.distributed`); ranks other
    than 0 return None after training. With ``train.patience`` and a ``val_ds``, a method with a
    multi-label classifier stops early on it and is evaluated at its best epoch
    (:class:`hierviz.evaluation.multilabel.EarlyStopping`). Everything method-specific is read
    from the :class:`~hierviz.methods.Method`'s fields.
    """
    method = get_method(method_name)
    geometry = get_geometry(geometry_name, c=cfg.model.curvature, learnable=cfg.model.learn_curvature)
    seed_run(seed)  # every RNG and process switch from the seed: a run does not depend on the runs before it
    # read on the module when called (a test, or a user, may wrap hierviz.methods.build_objective)
    objective = methods.build_objective(method_name, tree, geometry, **cfg.loss)
    model = _build_model(cfg, method, objective, geometry, tree, train_ds, seed)
    train_config = train_config_for(cfg, method, seed, run_dir, resume=resume, progress=progress)
    t = cfg.train
    per_sample = cfg.data.augment_seeds == "sample" or (cfg.data.augment_seeds == "auto" and get_world_size() > 1)
    view_seed = seed if per_sample else None  # views a function of (seed, epoch, index, view): rank-independent
    image_size = int(cfg.data.image_size)
    speed = _speed_options(cfg, train_ds)  # where views are drawn, memory layout, compile
    if t.compile:
        model.compile()
        compile_kernels(True)
    train_views = _train_views(cfg, method, model, train_ds, speed, view_seed)
    batch_sampler = None
    if method.needs.sampler is not None:
        batch_sampler = SAMPLERS.get(method.needs.sampler)(
            labels=np.asarray(train_ds.labels), tree=tree, batch_size=t.batch_size, seed=seed
        )
    trains = any(p.requires_grad for p in model.parameters())  # PCA(N)/NCA(N) alone have nothing to train
    if method.label_prior is not None:  # e.g. HyILR's classifier bias on tokens
        sets = getattr(train_ds, "leaf_sets", None)  # several label paths per document, else one leaf
        method.label_prior(objective, np.asarray(train_ds.labels if sets is None else sets))
    stopper = None
    if t.patience and val_ds is not None and method.classifier:
        stopper = EarlyStopping(objective, val_ds, tree, t.patience, image_size=image_size,
                                batch_size=cfg.eval.batch_size, num_workers=cfg.data.workers,
                                state_path=run_dir / "early_stopping.pt", resume=resume)  # fmt: skip
    result = fit(
        train_config,
        model,
        objective,
        train_views,
        callbacks=[stopper, *callbacks] if stopper is not None else callbacks,  # scored (and saved) first
        batch_sampler=batch_sampler,
        device_augment=speed["device_augment"],
        channels_last=speed["channels_last"],
        loader_options=speed["loader_options"],
    ) if trains else untrained(model, resolve_device(t.device))  # fmt: skip

    if stopper is not None:  # the best epoch on the validation split
        stopper.restore(result.model)
    if not is_main_process():
        return None  # under torchrun rank 0 alone evaluates and writes
    ev, clf, arrays, protocol_name, embedding = _evaluate(cfg, method, objective, result, train_ds, test_ds, tree,
                                                          geometry, seed)  # fmt: skip
    np.savez_compressed(run_dir / "embeddings.npz", **arrays)
    # the registered metric functions of the protocol's arrays (a user module's too), beside the protocol's own
    computed = compute_metrics(arrays, tree, skip={*ev.metrics, *(clf.metrics if clf is not None else ())})
    radius = run_radius(model, arrays, tree, geometry, embedding, seed=seed, steps=cfg.eval.mean_steps)
    geo_cfg = geometry.config() if hasattr(geometry, "config") else {"name": geometry_name}
    run_cfg = cfg.run_config(method_name, geometry_name, seed)
    record = {
        "name": run_dir.name,
        "method": method.name,
        "method_display": method.display_name,
        "geometry": geometry_name,
        "geometry_display": getattr(geometry, "display_name", geometry_name),
        "geometry_config": geo_cfg,
        "curvature": 0.0 - float(getattr(geometry, "curvature", 0.0)),  # c (learned with model.learn_curvature)
        "seed": seed,
        "metrics": {**ev.metrics, **computed},
        "metric_info": {k: _metric_info(k) for k in computed} or None,
        "classifier_metrics": None if clf is None else clf.metrics,
        "early_stopping": None if stopper is None else stopper.record(),
        "learned": None if method.learned is None else method.learned(objective),
        # the depth regularisers build_objective added to the method's loss (none on flat geometries)
        "depth_terms": methods.depth_terms(method, geometry, cfg.loss) or None,
        "radius": radius,
        "epochs": t.epochs,
        "optimizer": optimizer_record(train_config) if trains else None,
        "train_seconds": result.train_seconds,
        "eval_seconds": ev.seconds + (0.0 if clf is None else clf.seconds),
        "augment_on": speed["augment_on"],
        **_launch(cfg, train_ds, get_world_size()),
        "eval_embedding": embedding,
        "protocol": protocol_name,
        "device": str(result.device),
        "history": result.history,
        "step_history": result.step_history,
        "embeddings": "embeddings.npz",
        "hparams": run_cfg["loss"],  # the loss.* keys this run read, and only those
        "fingerprint": fingerprint(run_cfg),
        "hierviz": __version__,
    }
    record = RunRecord.from_dict(record, where=str(run_dir / "result.json")).to_dict()  # the typed record, written once
    atomic_write_text(run_dir / "result.json", json.dumps(record, default=json_default, indent=1))
    return record


def _metric_info(name: str) -> dict[str, Any]:
    """A computed metric's title and direction for the record: a report without the registering module shows them."""
    info = METRIC_INFO.get(name)
    return {"label": info.label, "higher_is_better": info.higher_is_better}


def eval_context(cfg: ExperimentConfig, result: FitResult, train_ds, test_ds, tree, geometry, *, seed: int,
                 embedding: str) -> EvalContext:  # fmt: skip
    """The :class:`~hierviz.evaluation.EvalContext` of one run: its trained model, splits and ``eval.*`` settings.

    ``model`` and ``device`` come from ``result``; ``image_size`` and ``num_workers`` from ``data.*``;
    ``batch_size``, ``mean_steps`` and ``index`` from ``eval.*``; ``embedding`` is ``eval.embedding``
    or the method's own.
    """
    return EvalContext(
        model=result.model,
        train_data=train_ds,
        test_data=test_ds,
        tree=tree,
        geometry=geometry,
        image_size=int(cfg.data.image_size),
        embedding=embedding,
        seed=int(seed),
        device=result.device,
        num_workers=int(cfg.data.workers),
        batch_size=int(cfg.eval.batch_size),
        mean_steps=int(cfg.eval.mean_steps),
        index=cfg.eval.index,
    )


def _evaluate(cfg: ExperimentConfig, method: Method, objective, result: FitResult, train_ds, test_ds, tree, geometry,
              seed: int):  # fmt: skip
    """Run the evaluation protocol, and score the method's classifier head when it declares one.

    Returns ``(protocol record, classifier record or None, arrays of embeddings.npz, protocol name,
    embedding)``.
    """
    image_size = int(cfg.data.image_size)
    head = getattr(result.model, "to_manifold", None)
    if getattr(head, "center", None) == "batch":  # centre from eval-mode outputs, not a training batch
        with head.recentring():
            embed_dataset(result.model, train_ds, image_size, batch_size=cfg.eval.batch_size, device=result.device)
    protocol_name = cfg.eval.protocol or method.protocol
    if PROTOCOLS.get(method.protocol).refines == protocol_name:  # e.g. retrieval-cosine
        protocol_name = method.protocol
    embedding = cfg.eval.embedding or method.embedding  # one probe input for every method
    ctx = eval_context(cfg, result, train_ds, test_ds, tree, geometry, seed=seed, embedding=embedding)
    ev = PROTOCOLS.get(protocol_name).evaluate(ctx)
    arrays = ev.arrays()
    clf = None
    if method.classifier:  # the method's own multi-label classifier (HyILR's F1 columns)
        clf = evaluate_classifier(
            result.model,
            objective,
            test_ds,
            tree,
            image_size=image_size,
            batch_size=cfg.eval.batch_size,
            device=result.device,
            num_workers=cfg.data.workers,
        )
        arrays.update(clf.arrays())
    return ev, clf, arrays, protocol_name, embedding
