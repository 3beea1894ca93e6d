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

Hyperparameters are namespaced (:class:`HParam`). A method's own keys live under its
namespace, ``loss.<namespace>.<name>`` in the experiment config (``loss.hwc.alpha``,
``loss.lam.lambda``, ``loss.hcl.m0``); the few keys that mean the same for every method are
declared shared and have no namespace: ``loss.tau``, ``loss.tau_hyperbolic``,
``loss.similarity`` and the depth-regulariser keys of :data:`RADIAL_HPARAMS`.
:data:`LOSS_HPARAMS` holds each key's default and description. A method lists the keys it
reads (several methods may read one key, e.g. paper 01's α ``hwc.alpha`` is read by HWC,
HWC + LAM and the outside-softmax HC: they say so), and its build function receives them by
their short names (``hp["alpha"]``). A user method registered with ``hparams={"alpha": 0.3}``
gets new keys under its own name (``loss.my_method.alpha``): it never binds to another
method's key unless it names it (``hparams=("hwc.alpha",)``).

The flat names of hierviz 0.3 (``loss.alpha``, ``loss.hcl_m0``, ``loss.lambda_lam``) are each
key's :attr:`HParam.formerly`: the config, :func:`build_objective` and the run folders written
before still read them, with a DeprecationWarning naming the new key (:func:`legacy_keys`).

Examples
--------
>>> import torch
>>> from hierviz.hierarchy import LabelTree
>>> from hierviz.losses import Objective, SupConLoss
>>> from hierviz.methods import register_method, build_objective, METHODS
>>> @register_method("my-supcon", display_name="My SupCon", hparams=("tau", {"scale": 1.0}))
... def my_supcon(tree, geometry, hp):
...     return Objective("my-supcon", {"supcon": SupConLoss(tree, geometry, tau=hp["tau"])}, {"supcon": hp["scale"]})
>>> get_method("my-supcon").hparams
('tau', 'my_supcon.scale')
>>> tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
>>> obj = build_objective("my-supcon", tree, "euclidean", tau=0.2, scale=2.0)
>>> z = torch.nn.functional.normalize(torch.randn(6, 2, 4), dim=-1)
>>> loss, terms = obj(z, torch.tensor([0, 0, 1, 1, 2, 2]))
>>> sorted(terms), obj.weights["supcon"]
(['supcon'], 2.0)
>>> METHODS.unregister("my-supcon")
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
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
from hierviz.methods._hparams import LOSS_HPARAMS, HParam, namespace_of, register_hparam
from hierviz.methods._method import (  # the private names are re-exported: they were defined here before
    _LEGACY_BUILD_ATTRIBUTES,  # noqa: F401
    FEATURE_DROPOUT,
    OVERRIDE_OPTIMIZERS,  # noqa: F401
    OVERRIDE_SCHEDULES,  # noqa: F401
    PROTOCOL_EMBEDDINGS,
    Method,
    Needs,
    TrainOverrides,
    _legacy_declarations,
    _qualname,  # noqa: F401
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
    "legacy_keys",
    "upgrade_loss",
    "namespace_of",
]

#: name -> :class:`Method`.
METHODS: Registry = Registry("method")


def legacy_keys(name: str) -> tuple[str, ...]:
    """The keys a flat ``loss.<name>`` of hierviz 0.3 now sets (:attr:`HParam.formerly`); () if none.

    One flat name may map to several keys: a user method's ``hparams={"alpha": ...}`` was paper
    01's α before keys were namespaced, so while that method is registered ``loss.alpha`` sets both.

    Examples
    --------
    >>> legacy_keys("lambda_lam"), legacy_keys("hcl_m0"), legacy_keys("tau")
    (('lam.lambda',), ('hcl.m0',), ())
    """
    read = {k for _, m in METHODS.items() for k in m.hparams}  # a key of an unregistered user method is left out
    return tuple(k for k, h in LOSS_HPARAMS.items() if name in h.formerly and k in read)


def upgrade_loss(values: Mapping[str, Any], keys: Iterable[str] | None = None) -> dict[str, Any]:
    """``loss.*`` values recorded with the flat names of hierviz 0.3, by their keys now (no warning).

    How a run folder written before keys were namespaced is read (its ``config.json`` ``loss``
    section, its record's ``hparams``): each flat name becomes the key(s) it now is
    (:func:`legacy_keys`); a key already present wins; names that are no flat name (current
    keys, or keys of a module this process has not imported) are kept as they are.

    Parameters
    ----------
    values : mapping
        Key or flat name -> value.
    keys : iterable of str, optional
        The keys the run reads (:func:`loss_keys`): a flat name that maps to several keys sets
        only those among them. None: all of them.

    Returns
    -------
    dict

    Examples
    --------
    >>> upgrade_loss({"tau": 0.2, "alpha": 0.7, "lambda_lam": 2.0, "my_key": 1})
    {'tau': 0.2, 'my_key': 1, 'hwc.alpha': 0.7, 'lam.lambda': 2.0}
    >>> upgrade_loss({"alpha": 0.7, "hwc.alpha": 0.4})
    {'hwc.alpha': 0.4}
    """
    wanted = None if keys is None else set(keys)
    out = {k: v for k, v in values.items() if k in LOSS_HPARAMS or not legacy_keys(k)}
    for name, value in values.items():
        if name in out:
            continue
        for key in legacy_keys(name):
            if (wanted is None or key in wanted) and key not in out:
                out[key] = value
    return out


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

    True for a hyperbolic geometry and a method that takes them (:attr:`Method.depth_terms`: every
    built-in, a user method that says so), whose evaluated embedding is ``z`` and whose protocol is
    not a retrieval one (Paper 03's mapper keeps its own loss and radius cap): the runs that read
    :data:`RADIAL_HPARAMS`.

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
        and method.depth_terms
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
    ('tau', 'supcon.reduction', 'similarity')
    >>> loss_keys("supcon", "poincare")[3:7]
    ('cone_weight', 'center_weight', 'cone_aperture', 'order_weight')
    >>> loss_keys("supcon", "poincare")[7:]
    ('order_margin', 'cpcc_weight', 'depth_weight', 'depth_step', 'tau_hyperbolic')
    >>> loss_keys("hxe", "poincare")  # evaluated on encoder features: no depth terms
    ('hxe.alpha', 'hxe.normalize')
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
    depth_terms: bool = False,
    replace: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``build(tree, geometry, hp) -> objective`` as a method.

    Parameters
    ----------
    name : str
    display_name : str, optional
        Default: ``name``.
    hparams : mapping, or sequence of str and mappings
        The ``loss.*`` keys the method reads. A mapping ``{name: default}`` declares new keys
        under the method's own namespace (:func:`namespace_of`: ``hparams={"alpha": 0.3}`` of
        ``"my-loss"`` is ``loss.my_loss.alpha``), so a method never shares a key by accident. A
        string names a declared key the method reads too: a shared one (``"tau"``) or another
        method's (``"hwc.alpha"``, said explicitly). A sequence may mix both:
        ``hparams=("tau", {"alpha": 0.3})``. The build function reads each by its short name
        (``hp["alpha"]``); the short names must be distinct. A flat name of hierviz 0.3
        (``"alpha"``) is read as its new key, with a DeprecationWarning.
    needs : Needs, optional
    protocol : str, default "classification"
    embedding : {"z", "features"}, default "z"
    paper : str, optional
    model, feature_dropout, classifier, attach_encoder, label_prior, learned
        The :class:`Method` fields of the same names (``feature_dropout`` None: 0.2).
    train : TrainOverrides or mapping, optional
        The method's optimiser, schedule and weight decay (a mapping is read as
        ``TrainOverrides(**train)``).
    depth_terms : bool, default False
        Take the depth regularisers of :data:`RADIAL_HPARAMS` on a hyperbolic geometry
        (:attr:`Method.depth_terms`); the run records the terms it got and the report header
        names them. Off by default: no term is added to a user's loss unless it asks.
    replace : bool, default False
        Overwrite an existing registration.

    Returns
    -------
    callable
        The decorator; it returns ``build`` unchanged.

    Raises
    ------
    ValueError
        Unknown hyperparameter keys, two keys with one short name, a bad ``embedding``, bad
        declarations (:class:`Method`, :class:`TrainOverrides`), or a name already registered.

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

    A key of its own never touches paper 01's α, ``loss.hwc.alpha``:

    >>> @register_method("my-weighted", hparams=("tau", {"alpha": 0.3}))
    ... def my_weighted(tree, geometry, hp):
    ...     return Objective("my-weighted", {"supcon": SupConLoss(tree, geometry, tau=hp["tau"])}, {"supcon": hp["alpha"]})
    >>> get_method("my-weighted").hparams, LOSS_HPARAMS["hwc.alpha"].default
    (('tau', 'my_weighted.alpha'), 0.5)
    >>> METHODS.unregister("my-weighted")
    """
    if embedding not in PROTOCOL_EMBEDDINGS:
        raise ValueError(f"embedding must be one of {PROTOCOL_EMBEDDINGS}, got {embedding!r}")
    names = _method_keys(str(name), hparams)
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
            depth_terms=bool(depth_terms),
        )
        METHODS.register(name, method, replace=replace)
        return build

    return deco


def _method_keys(name: str, hparams: Any) -> tuple[str, ...]:
    """The ``loss.*`` keys of :func:`register_method`'s ``hparams``, declaring the new ones under the method's namespace."""
    ns = namespace_of(name)
    items = [hparams] if isinstance(hparams, Mapping) else list(hparams)
    keys: list[str] = []
    for item in items:
        if isinstance(item, Mapping):
            for k, v in item.items():
                if not isinstance(k, str) or not k.isidentifier():
                    raise ValueError(
                        f"method {name!r}: new hyperparameter names must be identifiers (declared under "
                        f"loss.{ns}.*), got {k!r}; name another method's key in a sequence, e.g. hparams=('hwc.alpha',)"
                    )
                keys.append(register_hparam(k, v, namespace=ns, formerly=k).key)  # a known key keeps its default
            continue
        key = str(item)
        if key not in LOSS_HPARAMS and len(legacy_keys(key)) == 1:  # a 0.3 flat name read by a 0.3 module
            new = legacy_keys(key)[0]
            warnings.warn(
                f"method {name!r}: hyperparameter {key!r} is now {new!r} (loss.{new}); name it so",
                DeprecationWarning,
                stacklevel=4,
            )
            key = new
        if key not in LOSS_HPARAMS:
            raise ValueError(
                f"method {name!r}: hyperparameter {key!r} is not declared; pass a {{name: default}} mapping to "
                f"declare it as loss.{ns}.<name>, or name a declared key (e.g. 'tau', 'hwc.alpha')"
            )
        keys.append(key)
    keys = list(dict.fromkeys(keys))
    short = [LOSS_HPARAMS[k].name for k in keys]
    twice = sorted({s for s in short if short.count(s) > 1})
    if twice:
        raise ValueError(
            f"method {name!r}: keys {[k for k in keys if LOSS_HPARAMS[k].name in twice]} share the short name(s) "
            f"{twice} that its build function reads; read one of them"
        )
    return tuple(keys)


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
        ``loss.*`` values by key (:data:`LOSS_HPARAMS`: ``tau``, ``hwc.alpha``, ``cone_weight``;
        pass dotted keys as ``**{"hwc.alpha": 0.3}``) or by the short names of this method's keys
        (``alpha=0.3`` for HWC); unset ones take their defaults; keys the method does not read
        are ignored, so one dict of keys (``ExperimentConfig.loss``) can drive every method. A
        flat name of hierviz 0.3 (``lambda_lam``) sets its new key with a DeprecationWarning. On
        a hyperbolic geometry every method that takes them (:func:`reads_radial`) also gets the
        depth regularisers of :data:`RADIAL_HPARAMS` (by default entailment cones 0.2, centring
        1.0 and CPCC 1.0; :func:`add_radial_terms`) and, if it reads ``tau``, the temperature
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
        An undeclared hyperparameter name (the message lists the valid ones), or one key given
        twice (by key and by short name).
    """
    if isinstance(geometry, str):
        geometry = get_geometry(geometry)
    method = get_method(name)
    given = _given_keys(method, hparams)
    hp = {LOSS_HPARAMS[k].name: given.get(k, LOSS_HPARAMS[k].default) for k in method.hparams}
    radial = {k: given.get(k, LOSS_HPARAMS[k].default) for k in RADIAL_HPARAMS}
    # tau on a hyperbolic geometry: loss.tau_hyperbolic, unless only tau was given (a library call's explicit tau)
    own_tau = "tau" in given and "tau_hyperbolic" not in given
    if (
        "tau" in method.hparams
        and reads_radial(method, geometry)
        and radial["tau_hyperbolic"] is not None
        and not own_tau
    ):
        tau_h = radial["tau_hyperbolic"]
        if isinstance(tau_h, bool) or not isinstance(tau_h, (int, float)) or not (0 < tau_h < float("inf")):
            raise ValueError(f"loss.tau_hyperbolic must be a number > 0 (or null: loss.tau), got {tau_h!r}")
        hp["tau"] = float(tau_h)
    objective = method.build(tree, geometry, hp)
    return add_radial_terms(objective, method, tree, geometry, radial)


def _given_keys(method: Method, hparams: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`build_objective`'s keyword arguments by key: keys, the method's short names, 0.3 flat names (warned)."""
    short = {LOSS_HPARAMS[k].name: k for k in method.hparams}
    out: dict[str, Any] = {}
    unknown, flat = [], {}
    for name, value in hparams.items():
        if name in LOSS_HPARAMS:
            keys: tuple[str, ...] = (name,)
        elif name in short:
            keys = (short[name],)
        elif legacy_keys(name):
            keys = legacy_keys(name)
            flat[name] = keys
        else:
            unknown.append(name)
            continue
        for key in keys:
            if key in out:
                raise TypeError(f"loss.{key} given twice (as {key!r} and by its short name {LOSS_HPARAMS[key].name!r})")
            out[key] = value
    if unknown:
        raise TypeError(
            f"unknown hyperparameter(s) {sorted(unknown)}; valid: the keys {sorted(LOSS_HPARAMS)}, "
            f"or the short names of {method.name!r}'s keys {sorted(short)}"
        )
    for name, keys in flat.items():
        warnings.warn(
            f"hyperparameter {name!r} is now {' and '.join(repr(k) for k in keys)} (loss."
            f"{', loss.'.join(keys)}){'; the one flat name sets them all' if len(keys) > 1 else ''}",
            DeprecationWarning,
            stacklevel=3,
        )
    return out
