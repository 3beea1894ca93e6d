"""What a registered method declares: :class:`Method` and its :class:`Needs` and :class:`TrainOverrides`.

The typed record the run core reads about a method (the data it needs, its protocol and
embedding, its model builder, training overrides and hooks) and :meth:`Method.declared`, the
record of it each run's ``config.json`` holds. Re-exported by :mod:`hierviz.methods.registry`
and :mod:`hierviz.methods`; :func:`~hierviz.methods.registry.register_method` builds these.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Needs", "TrainOverrides", "Method", "PROTOCOL_EMBEDDINGS"]

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
        ``build(tree, geometry, hp) -> nn.Module``; ``hp`` maps the short name
        (:attr:`HParam.name`) of each key of ``hparams`` to its value. The module is called by the training loop as
        ``loss_from_output(model_output, labels)`` when it has that method (every
        :class:`hierviz.losses.Objective` does), else as ``module(z, labels)``.
    display_name : str
        Row title in tables and reports.
    hparams : tuple of str
        The ``loss.*`` keys the method reads (:attr:`HParam.key`: ``"tau"``, ``"hwc.alpha"``);
        their short names are distinct.
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
    depth_terms : bool, default False
        The method takes the depth regularisers of :data:`RADIAL_HPARAMS` on a hyperbolic
        geometry (:func:`reads_radial`). Every built-in method whose evaluated embedding is
        ``z`` does; a user method does only when it says so (``register_method(...,
        depth_terms=True)``), so no term is added to a user's loss unasked.

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
    depth_terms: bool = False

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
