"""The method registry: name → :class:`Method` (its loss, what it needs, how it is evaluated).

A *method* is what ``hierviz compare --methods`` names: a factory that builds the training
objective from the label tree, the geometry and the ``loss.*`` hyperparameters, plus the
declarations the experiment needs to run it without naming it:

* ``needs`` (:class:`Needs`): views per image, a classifier (logits), per-level labels,
  a batch sampler, extra modules;
* ``protocol``: the evaluation protocol (see :mod:`hierviz.evaluation`), and ``embedding``,
  which representation that protocol embeds (``"z"`` or the encoder ``"features"``);
* ``display_name`` and ``paper`` for tables and reports;
* what the run core needs beyond the objective, as typed fields of :class:`Method` (never
  attributes glued onto ``build`` or methods the core probes for): ``model`` (a builder of the
  whole model), ``train`` (:class:`TrainOverrides`: optimiser, schedule, weight decay),
  ``feature_dropout`` (the view pipeline on feature vectors), ``classifier`` (a multi-label
  classifier head the run scores), ``attach_encoder``, ``label_prior`` and ``learned``
  (hooks called with the built objective). :meth:`Method.declared` is their record: each
  run's ``config.json`` holds it under ``method``, the fingerprint covers it and the report
  header prints the training overrides.

Hyperparameters are one flat namespace, ``loss.<name>`` in the experiment config (τ is
``loss.tau`` for every method that has a temperature). :data:`LOSS_HPARAMS` holds each
name's default and description; a method lists the names it reads, and registering a
method with a new name adds it.

Examples
--------
>>> import torch
>>> from hierviz.hierarchy import LabelTree
>>> from hierviz.losses import Objective, SupConLoss
>>> from hierviz.methods import register_method, build_objective, METHODS
>>> @register_method("my-supcon", display_name="My SupCon", hparams={"tau": 0.1})
... def my_supcon(tree, geometry, hp):
...     return Objective("my-supcon", {"supcon": SupConLoss(tree, geometry, tau=hp["tau"])})
>>> tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
>>> obj = build_objective("my-supcon", tree, "euclidean", tau=0.2)
>>> z = torch.nn.functional.normalize(torch.randn(6, 2, 4), dim=-1)
>>> loss, terms = obj(z, torch.tensor([0, 0, 1, 1, 2, 2]))
>>> sorted(terms)
['supcon']
>>> METHODS.unregister("my-supcon")
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from hierviz._registry import Registry
from hierviz.geometry import get_geometry
from hierviz.geometry.registry import GEOMETRIES
from hierviz.losses import (
    DEFAULT_TAU_HYPERBOLIC,
    CentringLoss,
    CPCCLoss,
    EntailmentConeLoss,
    Objective,
    RadialDepthLoss,
    RadialOrderLoss,
)

__all__ = [
    "Needs",
    "TrainOverrides",
    "Method",
    "HParam",
    "METHODS",
    "LOSS_HPARAMS",
    "PROTOCOL_EMBEDDINGS",
    "register_method",
    "register_hparam",
    "get_method",
    "build_objective",
    "RADIAL_HPARAMS",
    "add_radial_terms",
    "depth_terms",
    "DEPTH_TERMS",
    "reads_radial",
    "loss_keys",
]

#: What an evaluation protocol may embed: the projection-head output or the encoder features.
PROTOCOL_EMBEDDINGS = ("z", "features")


@dataclass(frozen=True)
class Needs:
    """What a method needs from the data pipeline and the model.

    Attributes
    ----------
    views : int, default 2
        Augmented views per image in a training batch (``z`` has shape ``(B, views, d)``).
    logits : bool, default False
        The model gets a linear classifier over the tree's leaves (HXE, soft labels).
    level_labels : bool, default False
        The objective reads per-level labels (paper 02); it derives them from the leaf
        labels and its tree.
    sampler : str or None, default None
        Name of a batch sampler the training loader must use (paper 04); ``None`` = shuffle.
    modules : tuple of str, default ()
        Extra trainable modules the objective owns (their parameters are trained with the
        head's learning rate and checkpointed with the objective).
    """

    views: int = 2
    logits: bool = False
    level_labels: bool = False
    sampler: str | None = None
    modules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.views, bool) or not isinstance(self.views, int) or self.views < 1:
            raise ValueError(f"Needs.views must be an integer >= 1, got {self.views!r}")


#: The values of :attr:`TrainOverrides.optimizer` and :attr:`TrainOverrides.schedule`: those of
#: :class:`hierviz.training.TrainConfig` (``methods`` does not import ``training``; a test checks they agree).
OVERRIDE_OPTIMIZERS = ("adamw", "adam")
OVERRIDE_SCHEDULES = ("warmup_cosine", "constant")


@dataclass(frozen=True)
class TrainOverrides:
    """Training settings a method fixes for every run of it, replacing the ``train.*`` values.

    ``None`` keeps the run's own setting. The run core applies them to the
    :class:`hierviz.training.TrainConfig` it passes to ``fit``, writes them to the run's
    ``config.json`` (``method.train``) and to its record (``optimizer``), and the report header
    names them beside the methods that use them.

    Attributes
    ----------
    optimizer : {"adamw", "adam"} or None
        ``"adam"``: :class:`torch.optim.Adam` (L2 weight decay); ``"adamw"``: decoupled decay.
    schedule : {"warmup_cosine", "constant"} or None
        ``"constant"``: the peak learning rates throughout (no warm-up, no decay).
    weight_decay : float or None
        ``>= 0``.

    Raises
    ------
    ValueError
        An unknown optimiser or schedule, or a negative or non-finite weight decay.

    Examples
    --------
    >>> TrainOverrides(optimizer="adam", schedule="constant", weight_decay=0.0).to_dict()
    {'optimizer': 'adam', 'schedule': 'constant', 'weight_decay': 0.0}
    >>> TrainOverrides().to_dict()
    {}
    >>> TrainOverrides(optimizer="sgd")
    Traceback (most recent call last):
    ...
    ValueError: TrainOverrides.optimizer must be one of ('adamw', 'adam') or None, got 'sgd'
    """

    optimizer: str | None = None
    schedule: str | None = None
    weight_decay: float | None = None

    def __post_init__(self) -> None:
        if self.optimizer not in (None, *OVERRIDE_OPTIMIZERS):
            raise ValueError(
                f"TrainOverrides.optimizer must be one of {OVERRIDE_OPTIMIZERS} or None, got {self.optimizer!r}"
            )
        if self.schedule not in (None, *OVERRIDE_SCHEDULES):
            raise ValueError(
                f"TrainOverrides.schedule must be one of {OVERRIDE_SCHEDULES} or None, got {self.schedule!r}"
            )
        wd = self.weight_decay
        if wd is not None and (isinstance(wd, bool) or not isinstance(wd, (int, float)) or not (0 <= wd < math.inf)):
            raise ValueError(f"TrainOverrides.weight_decay must be a finite number >= 0 or None, got {wd!r}")

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (not None), in declaration order: ``TrainConfig`` keyword arguments."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class HParam:
    """One ``loss.<name>`` hyperparameter: its default and a one-line description."""

    name: str
    default: Any
    doc: str = ""


#: :attr:`Method.feature_dropout`'s default: the dropout of compare's views of a feature vector.
FEATURE_DROPOUT = 0.2


def _qualname(fn: Callable[..., Any]) -> str:
    """``module.qualname`` of a callable: how :meth:`Method.declared` records a builder or a hook."""
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


@dataclass(frozen=True)
class Method:
    """A registered training method: everything the run core reads about it, as typed fields.

    Attributes
    ----------
    name : str
        Registry name (lower case), e.g. ``"hwc+lam"``.
    build : callable
        ``build(tree, geometry, hp) -> nn.Module``; ``hp`` maps each name of ``hparams``
        to its value. The module is called by the training loop as
        ``loss_from_output(model_output, labels)`` when it has that method (every
        :class:`hierviz.losses.Objective` does), else as ``module(z, labels)``.
    display_name : str
        Row title in tables and reports.
    hparams : tuple of str
        The ``loss.*`` names the method reads.
    needs : Needs
    protocol : str, default "classification"
        Evaluation protocol name (:data:`hierviz.evaluation.PROTOCOLS`).
    embedding : {"z", "features"}, default "z"
        Which representation the protocol embeds.
    paper : str
        Reference name of the source (``docs/references.md``).
    model : callable or None, default None
        Model builder ``model(train_ds, geometry, seed) -> nn.Module`` that replaces
        :func:`hierviz.models.build_model` (Paper 03's grid: a fitted reduction and a mapper);
        called right after the run seed is set. None: ``build_model`` from ``model.*``.
    train : TrainOverrides
        Optimiser, schedule and weight decay the method fixes (HyILR: Adam at a constant rate,
        no weight decay, Paper 05 §5.1.2). Default: none (the run's ``train.*``).
    feature_dropout : float, default 0.2
        The view pipeline on feature-vector datasets: the dropout probability in [0, 1) of
        :class:`hierviz.data.FeatureViews` (0: the rows as they are).
    classifier : bool, default False
        The objective trains a multi-label classifier head (``predict_proba(out)``,
        :func:`hierviz.evaluation.multilabel.evaluate_classifier`): the run scores it on the
        test split (the ``clf_*`` columns), token datasets train on every label path of a
        document, and ``train.patience`` early-stops on it.
    attach_encoder : callable or None, default None
        ``attach_encoder(objective, encoder)``: called by ``build_model`` right after the
        encoder is built (HyILR sizes its head on a text encoder there).
    label_prior : callable or None, default None
        ``label_prior(objective, labels)``: called once before training with the training
        split's leaf labels ``(N,)`` int, or leaf sets ``(N, C)`` 0/1 on multi-label text.
    learned : callable or None, default None
        ``learned(objective) -> {name: float}``: learned scalars written to the run record
        (``RunRecord.learned``; HyILR's ``c``, ``alpha_t``, ``alpha_l``).

    Raises
    ------
    ValueError
        ``feature_dropout`` outside [0, 1), ``train`` not a :class:`TrainOverrides`, or a
        builder or hook that is not callable.
    """

    name: str
    build: Callable[..., Any]
    display_name: str
    hparams: tuple[str, ...] = ()
    needs: Needs = field(default_factory=Needs)
    protocol: str = "classification"
    embedding: str = "z"
    paper: str = ""
    model: Callable[..., Any] | None = None
    train: TrainOverrides = field(default_factory=TrainOverrides)
    feature_dropout: float = FEATURE_DROPOUT
    classifier: bool = False
    attach_encoder: Callable[[Any, Any], None] | None = None
    label_prior: Callable[[Any, Any], None] | None = None
    learned: Callable[[Any], dict[str, float]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.train, TrainOverrides):
            raise ValueError(f"method {self.name!r}: train must be a TrainOverrides, got {type(self.train).__name__}")
        p = self.feature_dropout
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (0.0 <= p < 1.0):
            raise ValueError(f"method {self.name!r}: feature_dropout must be a number in [0, 1), got {p!r}")
        for key in ("model", "attach_encoder", "label_prior", "learned"):
            value = getattr(self, key)
            if value is not None and not callable(value):
                raise ValueError(f"method {self.name!r}: {key} must be callable or None, got {value!r}")

    def declared(self) -> dict[str, Any]:
        """What this method declares beyond its objective: the record of each run's ``config.json``.

        Only the fields that differ from their defaults, so a method that declares nothing
        records ``{}`` (and the run config has no ``method`` section: its fingerprint is what it
        was before these fields existed). Builders and hooks are recorded by ``module.qualname``
        for the reader; the fingerprint covers the values (``train``, ``feature_dropout``), while
        code is covered by the method's name, as its build function is
        (:data:`hierviz.experiments.records.RESULT_FREE_KEYS`).

        Returns
        -------
        dict
            Keys among ``train`` (:meth:`TrainOverrides.to_dict`), ``model``, ``feature_dropout``,
            ``classifier``, ``attach_encoder``, ``label_prior``, ``learned``; JSON values.

        Examples
        --------
        >>> from hierviz.methods import get_method
        >>> get_method("supcon").declared()
        {}
        >>> d = get_method("hyilr").declared()
        >>> d["train"], d["classifier"], d["label_prior"]
        ({'optimizer': 'adam', 'schedule': 'constant', 'weight_decay': 0.0}, True, 'hierviz.methods.hyilr.HyILRObjective.set_label_prior')
        """
        out: dict[str, Any] = {}
        if self.train.to_dict():
            out["train"] = self.train.to_dict()
        if self.model is not None:
            out["model"] = _qualname(self.model)
        if self.feature_dropout != FEATURE_DROPOUT:
            out["feature_dropout"] = float(self.feature_dropout)
        if self.classifier:
            out["classifier"] = True
        for key in ("attach_encoder", "label_prior", "learned"):
            if getattr(self, key) is not None:
                out[key] = _qualname(getattr(self, key))
        return out


#: name -> :class:`Method`.
METHODS: Registry = Registry("method")
#: ``loss.<name>`` -> :class:`HParam`, in registration order.
LOSS_HPARAMS: dict[str, HParam] = {}


def register_hparam(name: str, default: Any, doc: str = "") -> HParam:
    """Declare a ``loss.<name>`` hyperparameter (idempotent for the same default).

    Parameters
    ----------
    name : str
        A Python identifier.
    default : object
        JSON-representable default (number, bool, string, list or None).
    doc : str
        One line for ``hierviz config`` and the docs.

    Returns
    -------
    HParam

    Raises
    ------
    ValueError
        ``name`` is not an identifier, or is already declared with another default.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"hyperparameter name must be a Python identifier, got {name!r}")
    old = LOSS_HPARAMS.get(name)
    if old is not None:
        if old.default != default:
            raise ValueError(
                f"loss.{name} is already declared with default {old.default!r} (not {default!r}); "
                "reuse that default or pick another name"
            )
        return old
    hp = HParam(name, default, doc)
    LOSS_HPARAMS[name] = hp
    return hp


#: The depth regularisers every method gets on a hyperbolic geometry
#: (:mod:`hierviz.losses.radial`); weight 0 leaves the term out.
RADIAL_HPARAMS = (
    "cone_weight",
    "center_weight",
    "cone_aperture",
    "order_weight",
    "order_margin",
    "cpcc_weight",
    "depth_weight",
    "depth_step",
    "tau_hyperbolic",
)
# The defaults of every hyperbolic run (0.4): entailment cones 0.2, centring 1.0, CPCC 1.0 and tau 1.0 on
# hyperbolic geometries, chosen on the validation split of 20 Newsgroups (docs/results/radius-20news/sweep.csv);
# each run records the terms it got (depth_terms) and the header lists them. 0 switches a term off.
register_hparam(
    "cone_weight",
    0.2,
    "weight of the entailment-cone term (hierviz.losses.EntailmentConeLoss) on hyperbolic geometries; 0 = off",
)
register_hparam(
    "center_weight",
    1.0,
    "weight of the centring term (hierviz.losses.CentringLoss, HypStructure) on hyperbolic geometries; 0 = off",
)
register_hparam("cone_aperture", 0.1, "entailment-cone aperture constant K (Ganea et al. 2018; MERU: 0.1)")
register_hparam(
    "order_weight",
    0.0,
    "weight of the radial-order hinge (hierviz.losses.RadialOrderLoss: each parent prototype nearer the origin "
    "than its children) on hyperbolic geometries; 0 = off",
)
register_hparam("order_margin", 0.1, "margin m of the radial-order hinge, in geodesic units (>= 0)")
register_hparam(
    "depth_weight",
    0.0,
    "weight of the radial-depth term (hierviz.losses.RadialDepthLoss: each batch node prototype at geodesic radius "
    "depth_step x its depth) on hyperbolic geometries; 0 = off",
)
register_hparam("depth_step", 1.0, "geodesic radius per tree level of the radial-depth term (> 0)")
register_hparam(
    "tau_hyperbolic",
    DEFAULT_TAU_HYPERBOLIC,
    "tau of a method that reads loss.tau, on hyperbolic geometries: SupCon scores -d/tau, so the radius the head "
    "settles at grows with tau and the tree needs room (docs/results/radius-20news); null = loss.tau",
)
register_hparam(
    "cpcc_weight",
    1.0,
    "weight of HypStructure's CPCC term (hierviz.losses.CPCCLoss: tree distances against the distances of the batch's "
    "node prototypes) on hyperbolic geometries; 0 = off",
)


def reads_radial(method: Method | str, geometry: Any) -> bool:
    """Whether a run of ``method`` on ``geometry`` gets the depth regularisers (:func:`add_radial_terms`).

    True for a hyperbolic geometry and a method whose evaluated embedding is ``z`` and whose
    protocol is not a retrieval one (Paper 03's mapper keeps its own loss and radius cap): the
    runs that read :data:`RADIAL_HPARAMS`.

    Parameters
    ----------
    method : Method or str
        A :class:`Method` or a registered method name.
    geometry : Geometry, Geometry class or str
        An instance, a class, or a registered geometry name (its class attribute ``hyperbolic``).

    Returns
    -------
    bool

    Examples
    --------
    >>> reads_radial("supcon", "poincare"), reads_radial("supcon", "euclidean"), reads_radial("hxe", "poincare")
    (True, False, False)
    >>> reads_radial("hyper-dino", "poincare")
    False
    """
    if isinstance(method, str):
        method = get_method(method)
    if isinstance(geometry, str):
        geometry = GEOMETRIES.get(geometry)
    # Paper 03's mapper is scored by retrieval with its own loss and radius cap: no depth terms there
    return (
        bool(getattr(geometry, "hyperbolic", False))
        and method.embedding == "z"
        and not method.protocol.startswith("retrieval")
    )


def loss_keys(method: Method | str, geometry: Any) -> tuple[str, ...]:
    """The ``loss.*`` names a run of ``method`` on ``geometry`` reads: its own hyperparameters, never another method's.

    ``method.hparams``, then :data:`RADIAL_HPARAMS` where :func:`reads_radial` holds. A run's
    ``config.json``, ``result.json`` and fingerprint hold these keys only, so a key that a run
    does not read (another method's, or one a user module adds) never changes whether it
    resumes or merges.

    Parameters
    ----------
    method : Method or str
    geometry : Geometry, Geometry class or str

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> loss_keys("supcon", "euclidean")
    ('tau', 'reduction', 'similarity')
    >>> loss_keys("supcon", "poincare")[3:7]
    ('cone_weight', 'center_weight', 'cone_aperture', 'order_weight')
    >>> loss_keys("supcon", "poincare")[7:]
    ('order_margin', 'cpcc_weight', 'depth_weight', 'depth_step', 'tau_hyperbolic')
    >>> loss_keys("hxe", "poincare")  # evaluated on encoder features: no depth terms
    ('hxe_alpha', 'hxe_normalize')
    """
    if isinstance(method, str):
        method = get_method(method)
    keys = tuple(method.hparams)
    if reads_radial(method, geometry):
        keys += tuple(k for k in RADIAL_HPARAMS if k not in keys)
    return keys


#: The depth regularisers' term names in an objective, with their weight keys (``loss.<key>``).
DEPTH_TERMS = {
    "cone": "cone_weight",
    "center": "center_weight",
    "order": "order_weight",
    "cpcc": "cpcc_weight",
    "depth": "depth_weight",
}


def depth_terms(method: Method | str, geometry: Any, hp: Mapping[str, Any]) -> dict[str, float]:
    """The depth regularisers a run of ``method`` on ``geometry`` gets with these ``loss.*`` values: ``{term: weight}``.

    What :func:`add_radial_terms` adds (each term whose weight is > 0, where :func:`reads_radial`
    holds), so the run core records it (``RunRecord.depth_terms``) and the report header lists it:
    a term is never added to a method's loss without the run saying so.

    Parameters
    ----------
    method : Method or str
    geometry : Geometry, Geometry class or str
    hp : mapping
        ``loss.*`` values; missing weights take their defaults (0: off).

    Returns
    -------
    dict of str to float
        Keys among ``cone``, ``center``, ``order``, ``cpcc``, ``depth`` (:data:`DEPTH_TERMS`), in that order.

    Raises
    ------
    ValueError
        A weight that is not a number >= 0.

    Examples
    --------
    >>> depth_terms("supcon", "poincare", {})  # the defaults
    {'cone': 0.2, 'center': 1.0, 'cpcc': 1.0}
    >>> depth_terms("supcon", "lorentz", {"cpcc_weight": 0.0, "order_weight": 0.5})
    {'cone': 0.2, 'center': 1.0, 'order': 0.5}
    >>> depth_terms("supcon", "euclidean", {"cone_weight": 0.2}), depth_terms("hxe", "poincare", {"cone_weight": 0.2})
    ({}, {})
    """
    if not reads_radial(method, geometry):
        return {}
    out: dict[str, float] = {}
    for term, key in DEPTH_TERMS.items():
        w = hp.get(key, LOSS_HPARAMS[key].default)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not (w >= 0):
            raise ValueError(f"loss.{key} must be a number >= 0 (0 = off), got {w!r}")
        if w > 0:
            out[term] = float(w)
    return out


def add_radial_terms(objective: Any, method: Method, tree: Any, geometry: Any, hp: Mapping[str, Any]) -> Any:
    """Add the ``cone``, ``center``, ``order`` and ``cpcc`` terms of :data:`RADIAL_HPARAMS` to a built objective.

    They are added only where the radius means depth: a hyperbolic geometry, a method whose
    evaluated embedding is ``z`` (HXE-like methods evaluate the encoder features, which the
    terms would not reach) and a weight > 0 (:func:`depth_terms`, which the run records).
    Objectives other than :class:`hierviz.losses.Objective` are returned unchanged.

    Parameters
    ----------
    objective : torch.nn.Module
    method : Method
    tree : LabelTree
    geometry : Geometry
    hp : mapping
        ``cone_weight``, ``center_weight``, ``cone_aperture``; ``order_weight``,
        ``order_margin`` and ``cpcc_weight`` (read with their defaults 0, 0.1 and 0 when absent).

    Returns
    -------
    The same objective, with the terms added in place.
    """
    weights = depth_terms(method, geometry, hp)
    if not isinstance(objective, Objective):
        return objective
    make = {
        "cone": lambda: EntailmentConeLoss(tree, geometry, aperture=hp["cone_aperture"]),
        "center": lambda: CentringLoss(geometry),
        "order": lambda: RadialOrderLoss(tree, geometry, margin=hp.get("order_margin", 0.1)),
        "cpcc": lambda: CPCCLoss(tree, geometry),
        "depth": lambda: RadialDepthLoss(tree, geometry, step=hp.get("depth_step", 1.0)),
    }
    for term, w in weights.items():
        objective.terms[term] = make[term]()
        objective.weights[term] = w
    return objective


#: Attributes of a ``build`` function that hierviz 0.3 read as declarations (``build.model = ...``):
#: :func:`register_method` still lifts them into the :class:`Method` fields, with a DeprecationWarning.
_LEGACY_BUILD_ATTRIBUTES = ("model", "train", "feature_dropout")


def _legacy_declarations(name: str, build: Callable[..., Any], given: dict[str, Any]) -> dict[str, Any]:
    """The 0.3 attributes glued onto ``build``, as :class:`Method` fields (those not given explicitly)."""
    found = {k: build.__dict__[k] for k in _LEGACY_BUILD_ATTRIBUTES if k in getattr(build, "__dict__", {})}
    found = {k: v for k, v in found.items() if given.get(k) is None}
    if not found:
        return {}
    warnings.warn(
        f"method {name!r}: attributes {sorted(found)} on the build function are deprecated (hierviz 0.3); pass "
        f"them to register_method({', '.join(f'{k}=...' for k in sorted(found))}) instead",
        DeprecationWarning,
        stacklevel=3,
    )
    if "train" in found and isinstance(found["train"], Mapping):
        found["train"] = TrainOverrides(**found["train"])
    return found


def register_method(
    name: str,
    *,
    display_name: str | None = None,
    hparams: Mapping[str, Any] | tuple[str, ...] | list[str] = (),
    needs: Needs | None = None,
    protocol: str = "classification",
    embedding: str = "z",
    paper: str = "",
    model: Callable[..., Any] | None = None,
    train: TrainOverrides | Mapping[str, Any] | None = None,
    feature_dropout: float | None = None,
    classifier: bool = False,
    attach_encoder: Callable[[Any, Any], None] | None = None,
    label_prior: Callable[[Any, Any], None] | None = None,
    learned: Callable[[Any], dict[str, float]] | None = None,
    replace: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``build(tree, geometry, hp) -> objective`` as a method.

    Parameters
    ----------
    name : str
    display_name : str, optional
        Default: ``name``.
    hparams : mapping or sequence of str
        The ``loss.*`` names the method reads. A mapping ``{name: default}`` also declares
        new names (:func:`register_hparam`); a sequence must name declared ones.
    needs : Needs, optional
    protocol : str, default "classification"
    embedding : {"z", "features"}, default "z"
    paper : str, optional
    model, feature_dropout, classifier, attach_encoder, label_prior, learned
        The :class:`Method` fields of the same names (``feature_dropout`` None: 0.2).
    train : TrainOverrides or mapping, optional
        The method's optimiser, schedule and weight decay (a mapping is read as
        ``TrainOverrides(**train)``).
    replace : bool, default False
        Overwrite an existing registration.

    Returns
    -------
    callable
        The decorator; it returns ``build`` unchanged.

    Raises
    ------
    ValueError
        Unknown hyperparameter names, a bad ``embedding``, bad declarations (:class:`Method`,
        :class:`TrainOverrides`), or a name already registered.

    Examples
    --------
    A loss that trains with Adam at a constant learning rate:

    >>> import torch
    >>> from hierviz.losses import Objective, SupConLoss
    >>> @register_method("my-adam-supcon", hparams=("tau",), train=TrainOverrides(optimizer="adam", schedule="constant"))
    ... def my_adam_supcon(tree, geometry, hp):
    ...     return Objective("my-adam-supcon", {"supcon": SupConLoss(tree, geometry, tau=hp["tau"])})
    >>> get_method("my-adam-supcon").declared()
    {'train': {'optimizer': 'adam', 'schedule': 'constant'}}
    >>> METHODS.unregister("my-adam-supcon")
    """
    if embedding not in PROTOCOL_EMBEDDINGS:
        raise ValueError(f"embedding must be one of {PROTOCOL_EMBEDDINGS}, got {embedding!r}")
    if isinstance(hparams, Mapping):
        for k, v in hparams.items():
            register_hparam(k, v)  # a known name must keep its default
        names = tuple(hparams)
    else:
        names = tuple(hparams)
        missing = [k for k in names if k not in LOSS_HPARAMS]
        if missing:
            raise ValueError(
                f"method {name!r}: hyperparameter(s) {missing} are not declared; pass hparams as a "
                "{name: default} mapping to declare them"
            )
    if isinstance(train, Mapping):
        train = TrainOverrides(**train)

    def deco(build: Callable[..., Any]) -> Callable[..., Any]:
        declared: dict[str, Any] = {"model": model, "train": train, "feature_dropout": feature_dropout}
        declared.update(_legacy_declarations(str(name), build, declared))
        method = Method(
            name=str(name).strip().lower(),
            build=build,
            display_name=display_name or str(name),
            hparams=names,
            needs=needs or Needs(),
            protocol=protocol,
            embedding=embedding,
            paper=paper,
            model=declared["model"],
            train=declared["train"] or TrainOverrides(),
            feature_dropout=FEATURE_DROPOUT if declared["feature_dropout"] is None else declared["feature_dropout"],
            classifier=bool(classifier),
            attach_encoder=attach_encoder,
            label_prior=label_prior,
            learned=learned,
        )
        METHODS.register(name, method, replace=replace)
        return build

    return deco


def get_method(name: str) -> Method:
    """The registered :class:`Method` named ``name``.

    Raises
    ------
    UnknownNameError
        (KeyError and ValueError) naming the closest registered methods.
    """
    return METHODS.get(name)


def build_objective(name: str, tree: Any, geometry: Any, **hparams: Any) -> Any:
    """Build a registered method's training objective.

    Parameters
    ----------
    name : str
        A registered method (``hierviz.methods.METHODS.names()``), case-insensitive.
    tree : LabelTree
        The label tree (labels are its leaf indices).
    geometry : Geometry or str
        A :class:`hierviz.geometry.Geometry` or a registered geometry name.
    **hparams
        ``loss.*`` values (:data:`LOSS_HPARAMS`); unset ones take their defaults; ones the
        method does not read are ignored, so one dict can drive every method. On a
        hyperbolic geometry every method whose embedding is ``z`` also gets the depth
        regularisers of :data:`RADIAL_HPARAMS` (by default entailment cones 0.2, centring 1.0
        and CPCC 1.0; :func:`add_radial_terms`) and, if it reads ``tau``, the temperature
        ``loss.tau_hyperbolic`` (default 1.0) instead of ``loss.tau``, unless ``tau`` is given
        and ``tau_hyperbolic`` is not (an explicit ``tau`` of a library call is kept).

    Returns
    -------
    torch.nn.Module
        Usually a :class:`hierviz.losses.Objective`: ``loss, terms = obj(z, labels)``.

    Raises
    ------
    UnknownNameError
        Unknown method (a ValueError naming the nearest ones).
    TypeError
        An undeclared hyperparameter name (the message lists the valid ones).
    """
    if isinstance(geometry, str):
        geometry = get_geometry(geometry)
    method = get_method(name)
    unknown = sorted(set(hparams) - set(LOSS_HPARAMS))
    if unknown:
        raise TypeError(f"unknown hyperparameter(s) {unknown}; valid: {sorted(LOSS_HPARAMS)}")
    hp = {k: hparams.get(k, LOSS_HPARAMS[k].default) for k in method.hparams}
    radial = {k: hparams.get(k, LOSS_HPARAMS[k].default) for k in RADIAL_HPARAMS}
    # tau on a hyperbolic geometry: loss.tau_hyperbolic, unless only tau was given (a library call's explicit tau)
    own_tau = "tau" in hparams and "tau_hyperbolic" not in hparams
    if "tau" in hp and reads_radial(method, geometry) and radial["tau_hyperbolic"] is not None and not own_tau:
        tau_h = radial["tau_hyperbolic"]
        if isinstance(tau_h, bool) or not isinstance(tau_h, (int, float)) or not (0 < tau_h < float("inf")):
            raise ValueError(f"loss.tau_hyperbolic must be a number > 0 (or null: loss.tau), got {tau_h!r}")
        hp["tau"] = float(tau_h)
    objective = method.build(tree, geometry, hp)
    return add_radial_terms(objective, method, tree, geometry, radial)
