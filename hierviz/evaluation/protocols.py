"""Evaluation protocols as declared objects: :class:`ProtocolSpec`, :class:`EvalContext` and :data:`PROTOCOLS`.

A protocol is one function ``evaluate(ctx) -> record`` registered with :func:`register_protocol`,
which declares what the run core needs beyond it as typed fields of a :class:`ProtocolSpec`: its
own train/test split (``make_split``, made once per run seed when ``per_seed``), the protocol
it refines (``refines``) and whether it reads ``eval.index`` (``takes_index``). The run core
(:mod:`hierviz.experiments`) builds one :class:`EvalContext` per run and calls
``PROTOCOLS.get(name).evaluate(ctx)``; it reads the spec's fields, never attributes of functions.

The record a protocol returns has ``.metrics`` (dict of floats), ``.arrays()`` (what a run saves in
``embeddings.npz``) and ``.seconds``.

Two older forms keep working, with a :class:`DeprecationWarning`: a function taking
``(model, train_data, test_data, tree, geometry, *, embedding, seed, image_size, device,
num_workers, batch_size, mean_steps[, index])`` (called through an adapter), and the extras set as
attributes of the registered function (``f.make_split = ...``, ``f.refines = ...``,
``f.takes_index = True``, or ``per_seed`` on the split function), read once when the protocol is
first looked up.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from hierviz._registry import Registry

__all__ = ["EvalContext", "ProtocolSpec", "PROTOCOLS", "register_protocol"]

#: The extras older code set as attributes of a protocol function (read with a DeprecationWarning).
_LEGACY_ATTRS = ("make_split", "per_seed", "refines", "takes_index")


@dataclass(frozen=True, kw_only=True)
class EvalContext:
    """What an evaluation protocol reads about one run, built once per run by the run core.

    Attributes
    ----------
    model : torch.nn.Module
        The trained model (:class:`hierviz.models.EmbeddingModel`, or a method's own model).
    train_data, test_data : ArrayDataset
        The run's training split and the evaluated split (``eval.split``) of the protocol's split.
    tree : LabelTree
        The label tree of the dataset.
    geometry : Geometry
        The run's geometry (its curvature as trained).
    image_size : int, >= 0
        Side in pixels the images are resized to (``data.image_size``; unused by vector and text data).
    embedding : {"z", "features"}, default "z"
        What the protocol embeds: the projection head's points or the encoder's features.
    seed : int, default 0
        The run seed (the probe's seed; the fold of a ``per_seed`` split).
    device : torch.device or str or None, default None
        Where to embed (None: the model's device).
    num_workers : int, >= 0, default 0
        Data-loader workers (``data.workers``).
    batch_size : int, >= 1, default 256
        Embedding batch size (``eval.batch_size``).
    mean_steps : int, >= 0, default 10
        Karcher-mean steps of the hyperbolic parent prototypes (``eval.mean_steps``).
    index : str, default "exact"
        The retrieval index (``eval.index``); read by protocols declared ``takes_index``.

    Raises
    ------
    ValueError
        ``batch_size`` < 1, ``num_workers`` < 0, ``mean_steps`` < 0 or ``image_size`` < 0.

    Examples
    --------
    >>> ctx = EvalContext(model=None, train_data=None, test_data=None, tree=None, geometry=None, image_size=16)
    >>> ctx.embedding, ctx.batch_size, ctx.index
    ('z', 256, 'exact')
    >>> EvalContext(model=None, train_data=None, test_data=None, tree=None, geometry=None, image_size=16,
    ...             batch_size=0)
    Traceback (most recent call last):
    ...
    ValueError: EvalContext: batch_size must be an integer >= 1, got 0
    """

    model: Any
    train_data: Any
    test_data: Any
    tree: Any
    geometry: Any
    image_size: int
    embedding: str = "z"
    seed: int = 0
    device: Any = None
    num_workers: int = 0
    batch_size: int = 256
    mean_steps: int = 10
    index: str = "exact"

    def __post_init__(self) -> None:
        for key, low in (("batch_size", 1), ("num_workers", 0), ("mean_steps", 0), ("image_size", 0)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"EvalContext: {key} must be an integer >= {low}, got {value!r}")

    def keywords(self, *, index: bool = False) -> dict[str, Any]:
        """The keyword arguments of an old-style protocol function (``index`` only when asked for).

        >>> sorted(EvalContext(model=None, train_data=None, test_data=None, tree=None, geometry=None,
        ...                    image_size=8).keywords())  # doctest: +NORMALIZE_WHITESPACE
        ['batch_size', 'device', 'embedding', 'image_size', 'mean_steps', 'num_workers', 'seed']
        """
        positional = ("model", "train_data", "test_data", "tree", "geometry", "index")
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in positional}
        return {**out, "index": self.index} if index else out


@dataclass(frozen=True)
class ProtocolSpec:
    """A registered evaluation protocol: everything the run core reads about it, as typed fields.

    Attributes
    ----------
    name : str
        Registry name (lower case), e.g. ``"unseen"``.
    evaluate : callable
        ``evaluate(ctx: EvalContext) -> record`` with ``.metrics``, ``.arrays()`` and ``.seconds``.
    make_split : callable or None, default None
        The protocol's own split, ``make_split(labels, groups, *, num_leaves, seed, fold[, folds])
        -> {"train", "val", "test"}`` row indices (``unseen``: held-out leaves). None: the run's
        default split.
    per_seed : bool, default False
        ``make_split`` makes fold ``s`` of ``len(seeds)`` folds for run seed ``s`` (``folds`` is passed;
        ``retrieval-folds``). Requires ``make_split``.
    refines : str or None, default None
        A protocol this one refines: ``compare --protocol <refines>`` keeps this one for the methods
        that name it (``retrieval-cosine`` refines ``retrieval``).
    takes_index : bool, default False
        The protocol reads ``ctx.index`` (``eval.index``); an old-style function is passed ``index=``.
    doc : str
        One line on what it measures (default: the first line of the function's docstring).

    Raises
    ------
    ValueError
        ``evaluate`` or ``make_split`` not callable, ``per_seed`` without ``make_split``, a
        ``refines`` that is not a name, or flags that are not bools.
    """

    name: str
    evaluate: Callable[[EvalContext], Any]
    make_split: Callable[..., dict] | None = None
    per_seed: bool = False
    refines: str | None = None
    takes_index: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        where = f"protocol {self.name!r}"
        if not callable(self.evaluate):
            raise ValueError(f"{where}: evaluate must be callable, got {self.evaluate!r}")
        if self.make_split is not None and not callable(self.make_split):
            raise ValueError(f"{where}: make_split must be callable or None, got {self.make_split!r}")
        for key in ("per_seed", "takes_index"):
            if not isinstance(getattr(self, key), bool):
                raise ValueError(f"{where}: {key} must be a bool, got {getattr(self, key)!r}")
        if self.per_seed and self.make_split is None:
            raise ValueError(f"{where}: per_seed needs a make_split (the split made once per run seed)")
        if self.refines is not None and not (isinstance(self.refines, str) and self.refines.strip()):
            raise ValueError(f"{where}: refines must be a protocol name or None, got {self.refines!r}")

    @property
    def function(self) -> Callable[..., Any]:
        """The function as registered (an old-style function behind its adapter)."""
        return inspect.unwrap(self.evaluate)


def _takes_context(fn: Callable[..., Any]) -> bool:
    """True for ``fn(ctx)``: exactly one positional parameter (the old form takes five)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in params) == 1 and not any(p.kind is p.VAR_POSITIONAL for p in params)


def _adapter(fn: Callable[..., Any], takes_index: bool) -> Callable[[EvalContext], Any]:
    """``evaluate(ctx)`` calling an old-style ``fn(model, train_data, test_data, tree, geometry, **keywords)``."""

    @functools.wraps(fn)
    def evaluate(ctx: EvalContext) -> Any:
        return fn(ctx.model, ctx.train_data, ctx.test_data, ctx.tree, ctx.geometry, **ctx.keywords(index=takes_index))

    return evaluate


def _spec(name: str, fn: Callable[..., Any], *, warn: bool = True, **declared: Any) -> ProtocolSpec:
    """The :class:`ProtocolSpec` of a registered function (an old-style one adapted, with a warning)."""
    if not callable(fn):
        raise ValueError(f"protocol {name!r}: evaluate must be callable, got {fn!r}")
    doc = declared.pop("doc", None)
    if doc is None:
        doc = ((fn.__doc__ or "").strip().splitlines() or [""])[0]
    evaluate = fn
    if not _takes_context(fn):
        if warn:
            warnings.warn(
                f"protocol {name!r}: a protocol function taking (model, train_data, test_data, tree, geometry, "
                "**keywords) is deprecated; take one EvalContext (def evaluate(ctx)) instead",
                DeprecationWarning,
                stacklevel=3,
            )
        evaluate = _adapter(fn, bool(declared.get("takes_index", False)))
    return ProtocolSpec(name=name, evaluate=evaluate, doc=doc, **declared)


def _legacy(spec: ProtocolSpec) -> dict[str, Any]:
    """Extras set as attributes of ``spec``'s function (or ``per_seed`` on its split) that its fields lack."""
    found = {k: v for k, v in vars(spec.function).items() if k in _LEGACY_ATTRS}
    split = found.get("make_split", spec.make_split)
    if split is not None and vars(split).get("per_seed") and not spec.per_seed:
        found.setdefault("per_seed", True)
    return {k: v for k, v in found.items() if getattr(spec, k) != v}


class ProtocolRegistry(Registry):
    """The registry of :class:`ProtocolSpec` (a :class:`hierviz._registry.Registry` that declares functions).

    ``register(name, f)`` with a function stores ``ProtocolSpec(name, f)`` (see :func:`register_protocol`);
    ``get`` folds extras set as attributes of the function into the spec, once, with a warning.
    """

    def register(self, name: str, obj: Any = None, *, replace: bool = False, **declared: Any) -> Any:
        """Register a :class:`ProtocolSpec`, or a function as one; without ``obj``, return a decorator.

        The decorator returns the function unchanged. Registering the same function again (a
        module imported twice) replaces its entry.

        Raises
        ------
        ValueError
            An empty name, a name taken by another protocol (and ``replace`` is False), or a
            declaration :class:`ProtocolSpec` rejects.
        """
        key = self._normalise(name)

        def deco(o: Any) -> Any:
            spec = o if isinstance(o, ProtocolSpec) else _spec(key, o, **declared)
            old = self._entries.get(key)
            again = old is not None and old.function is spec.function
            Registry.register(self, name, spec, replace=replace or again)
            return o

        if not key:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        return deco if obj is None else deco(obj)

    def get(self, name: str) -> ProtocolSpec:
        """The :class:`ProtocolSpec` named ``name``.

        Raises
        ------
        UnknownNameError
            (a KeyError and a ValueError) naming the closest valid names.
        """
        spec = super().get(name)
        extra = _legacy(spec)
        if extra:
            warnings.warn(
                f"protocol {spec.name!r}: {', '.join(sorted(extra))} set as attributes of the function is "
                f"deprecated; declare them: register_protocol({spec.name!r}, {', '.join(f'{k}=...' for k in extra)})",
                DeprecationWarning,
                stacklevel=2,
            )
            declared = {f.name: getattr(spec, f.name) for f in fields(spec) if f.name not in ("name", "evaluate")}
            spec = _spec(spec.name, spec.function, warn=False, **{**declared, **extra})
            self._entries[self._normalise(name)] = spec
        return spec


#: Evaluation protocols: name -> :class:`ProtocolSpec` (``evaluate(ctx: EvalContext) -> record``).
PROTOCOLS: ProtocolRegistry = ProtocolRegistry("evaluation protocol")


def register_protocol(
    name: str,
    *,
    make_split: Callable[..., dict] | None = None,
    per_seed: bool = False,
    refines: str | None = None,
    takes_index: bool = False,
    doc: str | None = None,
    replace: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``evaluate(ctx) -> record`` as the protocol ``name`` (see :data:`PROTOCOLS`).

    Parameters
    ----------
    name : str
    make_split, per_seed, refines, takes_index, doc
        The :class:`ProtocolSpec` fields (``doc`` default: the docstring's first line).
    replace : bool, default False
        Allow replacing another protocol registered under ``name``.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Raises
    ------
    ValueError
        See :meth:`ProtocolRegistry.register`.

    Examples
    --------
    >>> @register_protocol("doc-example", refines="classification")
    ... def doc_example(ctx):
    ...     "Counts the test rows."
    ...     return len(ctx.test_data)
    >>> spec = PROTOCOLS.get("doc-example")
    >>> spec.evaluate(EvalContext(model=None, train_data=[], test_data=[1, 2], tree=None, geometry=None,
    ...                           image_size=0)), spec.refines, spec.doc
    (2, 'classification', 'Counts the test rows.')
    >>> PROTOCOLS.unregister("doc-example")
    """
    declared = dict(make_split=make_split, per_seed=per_seed, refines=refines, takes_index=takes_index, doc=doc)
    return PROTOCOLS.register(name, replace=replace, **declared)
