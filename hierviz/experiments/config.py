"""The typed experiment config: presets, ``key=value`` overrides and validation (run fingerprints: :mod:`hierviz.experiments.records`).

An :class:`ExperimentConfig` has one section per concern, and every setting has a dotted key:

===========  ==================================================================================
key          what
===========  ==================================================================================
``methods``  registered method names (:data:`hierviz.methods.METHODS`)
``geometries``  registered geometry names (:data:`hierviz.geometry.GEOMETRIES`)
``seeds``    number of seeds per method × geometry (seeds 0 … n-1)
``out``      output folder
``data.*``   :class:`DataConfig`: dataset or file, tree, subset, split seed, image size, workers
``model.*``  :class:`ModelConfig`: encoder, widths, curvature c, clip radius, pretrained file
``loss.*``   every method hyperparameter, from :data:`hierviz.methods.LOSS_HPARAMS`: shared
             keys (``loss.tau``, ``loss.similarity``, the depth terms ``loss.cone_weight`` …)
             and each method's own (``loss.hwc.alpha``, ``loss.lam.lambda``, ``loss.hcl.m0`` …);
             the flat names of hierviz 0.3 (``loss.alpha``) are read with a DeprecationWarning
``train.*``  :class:`TrainSection`: epochs, batch, learning rates, warmup, EMA, device, AMP
``eval.*``   :class:`EvalConfig`: projection of the report, Karcher steps, batch size
``report.*`` :class:`ReportConfig`: the baseline of the paired-difference table
===========  ==================================================================================

Presets are small TOML files in ``hierviz/experiments/presets/`` (``quick``, ``medium``,
``full``, ``gpu``) holding only what differs from the defaults; a preset may also be a path
to your own ``.toml``. ``--set key=value`` then overrides any key; values are read as JSON
where they parse (``3``, ``0.2``, ``true``, ``null``, ``[0.5, 0.3]``) and as strings
otherwise, and lists of names may be comma-separated (``methods=supcon,hwc``).

Examples
--------
>>> cfg = resolve_config("quick", ["loss.tau=0.2", "train.epochs=1"])
>>> cfg.loss["tau"], cfg.train.epochs, cfg.data.dataset
(0.2, 1, '20news')
>>> resolve_config("quick", ["train.epoch=1"])
Traceback (most recent call last):
...
hierviz.experiments.config.ConfigError: --set train.epoch=1: unknown key 'train.epoch'; did you mean 'train.epochs'?
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hierviz._registry import nearest
from hierviz.data import DATASETS

# split out (to keep each module short) and re-exported here, the public import path
from hierviz.experiments._validate import (
    MAX_IMAGE_SIZE,  # noqa: F401
    _check,  # noqa: F401
    _check_counts,  # noqa: F401
    _check_data,  # noqa: F401
    _check_eval,  # noqa: F401
    _check_model,  # noqa: F401
    _check_names,  # noqa: F401
    _check_train,  # noqa: F401
    validate,
)
from hierviz.experiments.parsing import ConfigError, _coerce, _coerce_loss, _parse_value, flatten
from hierviz.experiments.preset_files import PRESETS, load_preset, preset_names
from hierviz.experiments.run_names import check_run_names  # noqa: F401
from hierviz.geometry import DEFAULT_CURVATURE
from hierviz.methods import LOSS_HPARAMS, METHODS, legacy_keys, loss_keys
from hierviz.models import ENCODERS, encoder_inputs

__all__ = [
    "ConfigError",
    "DataConfig",
    "ModelConfig",
    "TrainSection",
    "EvalConfig",
    "ReportConfig",
    "ExperimentConfig",
    "PRESETS",
    "RENAMED_KEYS",
    "preset_names",
    "load_preset",
    "resolve_config",
    "apply_overrides",
    "config_keys",
    "default_encoder",
    "flatten",
]


@dataclass
class DataConfig:
    """``data.*``: what to train and test on.

    Attributes
    ----------
    dataset : str or None, default "ham10000"
        A registered dataset (:data:`hierviz.data.DATASETS`); ignored when ``path`` is set.
    path : str or None
        Your own ``.npz`` (images (N,H,W[,3]) uint8, labels (N,), classes, optional groups)
        or image folder, instead of ``dataset``.
    tree : str or None
        A registered tree name or a tree JSON file; None = the dataset's default tree.
    limit : int or None
        A seeded stratified subset of this many images (≥ 3 × number of classes).
    split_seed : int, default 0
        Seed of the grouped 70/15/15 train/val/test split (fixed across method seeds).
    split : {"grouped", "official"}, default "grouped"
        ``"official"``: the dataset's own train/test split (``ArrayDataset.official_split``;
        e.g. 20news bydate), 10 % of train held out as val with ``split_seed``
        (:func:`hierviz.data.splits.official_split`, ``hierviz htc``'s split).
    image_size : int or None
        Training/evaluation image side; None = the data's own.
    workers : int, default 0
        DataLoader worker processes (changes the augmentation stream, so it is part of a
        run's fingerprint).
    augment_seeds : {"auto", "sample", "stream"}, default "auto"
        Where the random views come from. ``"stream"``: torch's RNG stream of the process
        (hierviz 0.1; the views depend on the rank/worker that draws them). ``"sample"``:
        each view seeded by (seed, epoch, index, view) (:class:`hierviz.data.ContrastiveDataset`),
        the same on any number of ranks and workers. ``"auto"``: ``"sample"`` under
        ``torchrun`` with several ranks, ``"stream"`` in one process (the presets' numbers).
    persistent_workers : bool, default False
        Keep the DataLoader workers alive across epochs (CPU augmentation path, ``workers``
        > 0). They keep their RNG across epochs, so pair it with ``augment_seeds = "sample"``
        for reproducible, resumable views.
    prefetch_factor : int or None, default None
        Batches each worker prepares ahead (torch's default 2 when None).
    """

    dataset: str | None = "ham10000"
    path: str | None = None
    tree: str | None = None
    limit: int | None = None
    split_seed: int = 0
    split: str = "grouped"
    image_size: int | None = None
    workers: int = 0
    augment_seeds: str = "auto"
    persistent_workers: bool = False
    prefetch_factor: int | None = None


@dataclass
class ModelConfig:
    """``model.*``: encoder, head and the map onto the manifold.

    Attributes
    ----------
    encoder : str, default "resnet18"
        A registered encoder (:data:`hierviz.models.ENCODERS`).
    width : int, default 32
        ``small_cnn`` first-block channels.
    embed_dim : int, default 128
        Embedding dimension d.
    hidden_dim : int or None
        Projection-head hidden width; None = the encoder's feature size.
    pretrained : str or None
        A local ``state_dict`` file for the encoder (never downloaded).
    curvature : float, default 1.0
        c > 0 of the hyperbolic geometries (sectional curvature −c).
    clip_r : float or None, default 3.0
        Radius bound ρ of the hyperbolic head (:class:`hierviz.models.HyperbolicHead`), on
        ``√c‖u‖`` after the feature scale (None = no bound): geodesic radius < 2ρ/√c on the
        ball.
    head_bound : {"tanh", "clip"}, default "tanh"
        ``tanh``: the smooth bound ρ·tanh(‖v‖/ρ), a radial gradient everywhere; ``clip``: the
        hard clip of hierviz 0.2 (``head_bound=clip scale_init=1 clip_r=3`` is that head).
    scale_init : float or "auto", default "auto"
        Initial feature scale of the hyperbolic head; ``"auto"``: the first training
        batch's median raw norm is mapped to ``init_radius`` (docs/hyperbolic-fidelity.md).
    init_radius : float, default 1.0
        Geodesic radius d(0, z) of the median sample after ``scale_init="auto"`` (1 starts
        SupCon's −d/τ logits at the unit sphere's range 2/τ).
    learn_scale : bool, default True
        Learn that scale (log-parameterised); false with ``scale_init=1, clip_r=2,
        head_bound=clip`` is the hierviz 0.1 head.
    learn_curvature : bool, default False
        Train the curvature c of the hyperbolic geometries (geoopt's ``learnable=True``;
        ``model.curvature`` is its initial value); the learned c is in each run's record.
    curvature_range : list of two floats, default [0.1, 10.0]
        Clamp of a learned c (MERU's range).
    head_center : {null, "batch"}, default null
        ``batch``: the hyperbolic head subtracts the batch mean of its raw outputs (a running
        mean in eval mode), so the root sits at the origin (docs/hyperbolic-fidelity.md).
    """

    encoder: str = "resnet18"
    width: int = 32
    embed_dim: int = 128
    hidden_dim: int | None = None
    pretrained: str | None = None
    curvature: float = DEFAULT_CURVATURE
    clip_r: float | None = 3.0
    head_bound: str = "tanh"
    scale_init: str | float = "auto"
    init_radius: float = 1.0
    learn_scale: bool = True
    learn_curvature: bool = False
    curvature_range: list[float] = field(default_factory=lambda: [0.1, 10.0])
    head_center: str | None = None


@dataclass
class TrainSection:
    """``train.*``: the optimisation recipe of paper 01 §4.2 (see :class:`hierviz.training.TrainConfig`).

    ``lr_head`` None = 10 × ``lr_backbone``; ``warmup_epochs`` None = 10 % of the epochs;
    ``ema_decay`` 0 = off; ``threads`` None = torch's default; ``sync_bn``: batch norm over
    all ranks' batch under ``torchrun`` (no effect in one process).

    Speed (none changes a CPU run at its defaults):

    ``augment_on`` ``"auto"`` | ``"cpu"`` | ``"device"``: where the training views are drawn.
    ``"cpu"``: :class:`hierviz.data.TwoViewTransform` per image in the DataLoader (the
    presets' numbers); ``"device"``: :class:`hierviz.data.gpu_augment.BatchTwoViewAugment` on
    uint8 batches on the training device; ``"auto"``: ``"device"`` on CUDA, else ``"cpu"``.
    ``channels_last`` None = on for CUDA; ``compile``: ``torch.compile`` the model
    (``nn.Module.compile``) and the fused Poincaré kernels
    (:func:`hierviz.geometry._kernels.compile_kernels`); off by default (slow to start on a
    CPU, never required). ``compile_loss``: the objective through ``torch.compile(fullgraph=True)``
    (:class:`hierviz.losses.CompiledLoss`; on in the ``gpu`` preset).

    ``patience`` None = off; an integer: early stopping for methods with a multi-label
    classifier (HyILR): after each epoch the classifier's micro + macro F1 on the
    validation split is scored, the best epoch's weights are kept and evaluated, and training
    stops after ``patience`` epochs without gain (``hierviz htc``'s rule).
    """

    epochs: int = 100
    batch_size: int = 256
    lr_backbone: float = 1e-4
    lr_head: float | None = None
    warmup_epochs: float | None = None
    weight_decay: float = 1e-4
    ema_decay: float = 0.99
    grad_clip: float | None = None
    device: str = "auto"
    amp: bool = True
    threads: int | None = None
    sync_bn: bool = True
    augment_on: str = "auto"
    channels_last: bool | None = None
    compile: bool = False
    compile_loss: bool = False
    patience: int | None = None


@dataclass
class EvalConfig:
    """``eval.*``: evaluation settings.

    Attributes
    ----------
    projection : str, default "tsne"
        2-D map of the report (a registered projection: tsne, umap, pca).
    mean_steps : int, default 10
        Karcher steps of the hyperbolic parent prototypes at evaluation (paper 01 §4.2 uses
        T_mean = 3; 10 reach the Fréchet mean to 1e-6 on spread sets, measured).
    batch_size : int, default 256
        Inference batch size.
    split : {"test", "val"}, default "test"
        The held-out split that is scored (paper 01 Fig. 2 tunes τ on "val").
    protocol : str or None, default None
        Evaluate every method with this protocol (:data:`hierviz.evaluation.PROTOCOLS`, e.g.
        ``"unseen"``, paper 04 §III) instead of the one each method declares.
    fold : int, default 0
        Fold of the ``unseen`` protocol's 5-fold rotation of unseen leaves, in [0, 4].
    folds : int or None, default None
        Folds of a protocol that makes its own split per run seed (``retrieval-folds``): run
        seed ``s`` is fold ``s mod folds``, so ``seeds = folds × r`` trains every fold's models
        with ``r`` seeds (Paper 03's grid: mapper seeds per fold). None: one fold per seed
        (``folds = seeds``). An integer >= 2 that divides ``seeds``.
    embedding : {"features", "z"} or None, default None
        What the linear probe reads for *every* method: ``"features"``, the encoder's
        (penultimate) features mapped into the geometry (SimCLR's linear evaluation, paper 02
        §4), or ``"z"``, the projection head's output. None: each method's own choice (``z``;
        encoder features for CE, HXE and paper 02's methods). The report header names it.
    index : {"exact", "faiss-flat", "faiss-ivf", "faiss-hnsw"}, default "exact"
        How the ``retrieval`` protocol finds each query's top-20 on a Poincaré or Lorentz run
        (:data:`hierviz.evaluation.retrieval.RETRIEVAL_INDEXES`): the exact distance matrix or
        a FAISS index of :class:`hierviz.retrieval.ReferenceIndex` (``pip install
        'hierviz[faiss]'``); the FAISS ones add ``index_recall@20`` to the run's metrics.
    """

    projection: str = "tsne"
    mean_steps: int = 10
    batch_size: int = 256
    split: str = "test"
    protocol: str | None = None
    fold: int = 0
    folds: int | None = None
    embedding: str | None = None
    index: str = "exact"


@dataclass
class ReportConfig:
    """``report.*``: how the tables are written (never changes a run's results).

    Attributes
    ----------
    baseline : str or None, default None
        The method every other method is compared with in ``results.md``'s paired-difference
        table (mean and 95 % CI of the same-seed difference; shown with ≥ 3 seeds,
        :mod:`hierviz.report.stats`). None: SupCon when it was run, else the first method; a
        registered method that was not run leaves the table out (``results.md`` says so).
    """

    baseline: str | None = None


def _default_loss() -> dict[str, Any]:
    return {k: h.default for k, h in LOSS_HPARAMS.items()}


@dataclass
class ExperimentConfig:
    """A whole comparison: methods × geometries × seeds, and every setting of each run.

    The defaults are paper 01's full-size recipe (the ``full`` preset); see the module
    docstring for the keys. ``to_dict()`` is the resolved config written to every run
    folder's ``config.json``; ``from_dict`` reads it back.
    """

    methods: list[str] = field(
        default_factory=lambda: ["simclr", "supcon", "hc-outside", "hxe", "hwc", "lam", "hwc+lam"]
    )
    geometries: list[str] = field(default_factory=lambda: ["euclidean", "poincare"])
    seeds: int = 3
    out: str = "hierviz-out"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: dict[str, Any] = field(default_factory=_default_loss)
    train: TrainSection = field(default_factory=TrainSection)
    eval: EvalConfig = field(default_factory=EvalConfig)
    report: ReportConfig = field(default_factory=ReportConfig)

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON-able dict (sections as nested dicts)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "config") -> ExperimentConfig:
        """Rebuild a config from :meth:`to_dict` output (unknown keys refused).

        Raises
        ------
        ConfigError
            Unknown keys or bad values, naming ``where``.
        """
        cfg = cls()
        pairs = [(k, v) for k, v in flatten(d).items()]
        for key, value in pairs:
            _set_key(cfg, key, value, where=f"{where}: {key}")
        validate(cfg)
        return cfg

    def copy(self) -> ExperimentConfig:
        """A deep copy."""
        return ExperimentConfig.from_dict(self.to_dict())

    def run_config(self, method: str, geometry: str, seed: int) -> dict[str, Any]:
        """The resolved config of one run: this config plus ``run = {method, geometry, seed}``.

        Its ``loss`` section holds only the keys that run reads (:func:`hierviz.methods.loss_keys`:
        the method's ``hparams``, plus the depth-regulariser keys on a hyperbolic geometry), so
        its fingerprint ignores every other method's keys and any key a user module adds.
        Keys declared after this config was made take their defaults. A method that
        declares training overrides, its own model builder, views or hooks
        (:meth:`hierviz.methods.Method.declared`) adds a ``method`` section holding them, so the
        run's ``config.json`` states the optimiser it trained with and its fingerprint covers it.

        Examples
        --------
        >>> cfg = ExperimentConfig()
        >>> cfg.run_config("hyilr", "lorentz", 0)["method"]["train"]
        {'optimizer': 'adam', 'schedule': 'constant', 'weight_decay': 0.0}
        >>> "method" in cfg.run_config("supcon", "poincare", 0)
        False
        """
        d = self.to_dict()
        d["loss"] = {k: d["loss"].get(k, LOSS_HPARAMS[k].default) for k in loss_keys(method, geometry)}
        declared = METHODS.get(method).declared()
        if declared:  # what the method fixes beyond its loss (hierviz.methods.Method.declared): recorded, fingerprinted
            d["method"] = declared
        d["run"] = {"method": method, "geometry": geometry, "seed": int(seed)}
        return d


_SECTIONS = {
    "data": DataConfig,
    "model": ModelConfig,
    "train": TrainSection,
    "eval": EvalConfig,
    "report": ReportConfig,
}
_TOP = {"methods": list, "geometries": list, "seeds": int, "out": str}


def config_keys(cfg: ExperimentConfig | None = None) -> list[str]:
    """Every valid dotted key, in display order.

    Examples
    --------
    >>> "loss.tau" in config_keys() and "train.epochs" in config_keys()
    True
    """
    cfg = cfg or ExperimentConfig()
    return list(flatten({k: v for k, v in cfg.to_dict().items()}).keys())


def _unknown_key(key: str, where: str) -> ConfigError:
    valid = config_keys()
    close = nearest(key, valid, n=2, cutoff=0.75)
    if close:
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?"
    else:
        section = key.split(".")[0]
        same = [k for k in valid if k.startswith(section + ".")]
        hint = f"valid keys: {', '.join(same or valid)}"
    return ConfigError(f"{where}: unknown key {key!r}; {hint}")


#: Keys renamed since they were written to run folders: old key -> new key. The old key is read
#: (``--set``, presets, a run's config.json) with a DeprecationWarning; fingerprints use the new one.
#: The flat ``loss.*`` names of hierviz 0.3 are read the same way (:func:`hierviz.methods.legacy_keys`).
RENAMED_KEYS = {"loss.base_temperature": "loss.hmlc.base_tau"}  # τ is ``tau`` in every method


def _set_key(cfg: ExperimentConfig, key: str, value: Any, where: str) -> None:
    if key.strip() in RENAMED_KEYS:
        new = RENAMED_KEYS[key.strip()]
        warnings.warn(
            f"{where}: {key.strip()} is now {new}; the old name goes in 0.3", DeprecationWarning, stacklevel=3
        )
        key = new
    parts = key.strip().split(".")
    if len(parts) == 1 and parts[0] in _TOP:
        f = {f.name: f for f in dataclasses.fields(ExperimentConfig)}[parts[0]]
        setattr(cfg, parts[0], _coerce(value, None, f.type, where))
        return
    if len(parts) >= 2 and parts[0] == "loss":
        name = ".".join(parts[1:])
        keys = (name,) if name in LOSS_HPARAMS else legacy_keys(name) if len(parts) == 2 else ()
        if not keys:
            raise _unknown_key(key, where)
        if keys != (name,):  # a flat name of hierviz 0.3
            new = " and ".join(f"loss.{k}" for k in keys)
            also = "; this one flat name sets them all (each method reads its own)" if len(keys) > 1 else ""
            warnings.warn(f"{where}: loss.{name} is now {new}{also}", DeprecationWarning, stacklevel=3)
        for k in keys:
            cfg.loss[k] = _coerce_loss(k, value, where)
        return
    if len(parts) == 2 and parts[0] in _SECTIONS:
        section = getattr(cfg, parts[0])
        fields = {f.name: f for f in dataclasses.fields(section)}
        if parts[1] in fields:
            setattr(section, parts[1], _coerce(value, None, fields[parts[1]].type, where))
            return
    raise _unknown_key(key, where)


def apply_overrides(cfg: ExperimentConfig, overrides: Sequence[str] | Mapping[str, Any]) -> ExperimentConfig:
    """Apply ``key=value`` strings (or a ``{key: value}`` mapping) in place and return ``cfg``.

    Changing ``data.dataset`` or ``data.path`` without setting ``data.tree`` resets the tree
    to ``None``: the new dataset's default tree (a tree JSON is required with ``data.path``).
    Changing ``data.dataset`` without setting ``model.encoder`` picks an encoder that reads the
    new dataset's inputs (:func:`default_encoder`: ``mlp`` for a vector dataset such as 20news,
    ``small_cnn`` for images after a vector preset). Changing ``data.dataset`` without setting
    ``data.split`` resets the split to ``"grouped"``: a preset's split belongs to its dataset.

    Raises
    ------
    ConfigError
        A string without ``=``, an unknown key (nearest valid keys named) or a bad value.
    """
    if isinstance(overrides, Mapping):
        items = [(str(k), v, f"{k}") for k, v in overrides.items()]
    else:
        items = []
        for text in overrides:
            if "=" not in str(text):
                raise ConfigError(f"--set {text}: expected key=value, e.g. --set train.epochs=5")
            k, v = str(text).split("=", 1)
            items.append((k.strip(), _parse_value(v), f"--set {text}"))
    before = (cfg.data.dataset, cfg.data.path)
    for key, value, where in items:
        _set_key(cfg, key, value, where)
    keys = {k for k, _, _ in items}
    if (cfg.data.dataset, cfg.data.path) != before and "data.tree" not in keys:
        # another dataset without a tree: its own default tree, not the preset's (a preset's tree
        # belongs to the preset's dataset; e.g. --preset quick --dataset hier-mnist)
        cfg.data.tree = None
    if cfg.data.dataset != before[0] and "model.encoder" not in keys:
        # another dataset without an encoder: one that reads its inputs (e.g. --preset quick --dataset 20news)
        cfg.model.encoder = default_encoder(cfg.data.dataset, cfg.model.encoder)
    if cfg.data.dataset != before[0] and "data.split" not in keys:
        # a preset's split, like its tree, belongs to its dataset (20news' official bydate split);
        # another dataset gets the grouped split unless data.split is set
        cfg.data.split = DataConfig.split
    return cfg


def default_encoder(dataset: str | None, encoder: str) -> str:
    """The encoder a run of ``dataset`` uses when none is set explicitly (``encoder``: the current one).

    A dataset declares what one sample is (``register_dataset(..., inputs=...)``): ``"vectors"``
    → ``"mlp"`` (or ``encoder`` if it reads vectors), ``"text"`` → the first encoder registered
    with ``inputs="text"`` (else ``encoder``), ``"images"`` or an unregistered name →
    ``encoder``, the preset's CNN, or ``"small_cnn"`` when ``encoder`` reads vectors or text only
    (``--preset quick --dataset ham10000``: the quick preset's MLP cannot read images). Returns an
    encoder name.

    Examples
    --------
    >>> default_encoder("20news", "small_cnn"), default_encoder("ham10000-sample", "small_cnn")
    ('mlp', 'small_cnn')
    >>> default_encoder("ham10000", "mlp")
    'small_cnn'
    """
    inputs = DATASETS.get(dataset).inputs if isinstance(dataset, str) and dataset in DATASETS else "images"
    reads = encoder_inputs(encoder) if encoder in ENCODERS else None
    if inputs == "vectors" and reads != "vectors":
        return "mlp"
    if inputs == "text" and reads != "text":
        return next((name for name in ENCODERS if encoder_inputs(name) == "text"), encoder)
    if inputs == "images" and reads in ("vectors", "text"):
        return "small_cnn"
    return encoder


def resolve_config(
    preset: str | Path | None = None,
    overrides: Sequence[str] | Mapping[str, Any] = (),
    base: ExperimentConfig | None = None,
) -> ExperimentConfig:
    """Defaults ← preset ← overrides, validated.

    Parameters
    ----------
    preset : str or Path, optional
        A bundled preset name (:func:`preset_names`) or a ``.toml`` file.
    overrides : sequence of "key=value" or mapping
    base : ExperimentConfig, optional
        Start from this config instead of the defaults.

    Returns
    -------
    ExperimentConfig

    Raises
    ------
    ConfigError
    """
    cfg = base.copy() if base is not None else ExperimentConfig()
    if preset is not None:
        for key, value in load_preset(preset).items():
            _set_key(cfg, key, value, where=f"preset {preset}: {key}")
    apply_overrides(cfg, overrides)
    return validate(cfg)
