"""The ``loss.*`` hyperparameter declarations: :class:`HParam`, :data:`LOSS_HPARAMS`, :func:`register_hparam`.

Each key's default, description, namespace (``loss.<namespace>.<name>``, :func:`namespace_of`)
and the flat names it had in hierviz 0.3 (:attr:`HParam.formerly`). Which registered methods read
a key (:func:`~hierviz.methods.registry.legacy_keys`, :func:`~hierviz.methods.registry.loss_keys`)
is the registry's. Re-exported by :mod:`hierviz.methods.registry` and :mod:`hierviz.methods`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["HParam", "LOSS_HPARAMS", "namespace_of", "register_hparam"]


@dataclass(frozen=True)
class HParam:
    """One ``loss.*`` hyperparameter: its key, its default and a one-line description.

    Attributes
    ----------
    name : str
        The short name a method's build function reads (``hp["alpha"]``); a Python identifier.
    default : object
        JSON-representable default.
    doc : str
        One line for ``hierviz config`` and the docs.
    namespace : str or None, default None
        The owner: the key is ``<namespace>.<name>`` (``loss.hwc.alpha``). None: a shared key,
        the same idea for every method that reads it (``loss.tau``).
    formerly : tuple of str, default ()
        The flat names this key had before keys were namespaced (hierviz 0.3, ``"alpha"``):
        still read, with a DeprecationWarning (:func:`legacy_keys`).

    Examples
    --------
    >>> HParam("alpha", 0.5, namespace="hwc").key, HParam("tau", 0.1).key
    ('hwc.alpha', 'tau')
    """

    name: str
    default: Any
    doc: str = ""
    namespace: str | None = None
    formerly: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``<namespace>.<name>``, or ``name`` for a shared key: the ``loss.*`` key without ``loss.``."""
        return f"{self.namespace}.{self.name}" if self.namespace else self.name


#: ``loss.*`` key (:attr:`HParam.key`, without ``loss.``) -> :class:`HParam`, in registration order.
LOSS_HPARAMS: dict[str, HParam] = {}


def namespace_of(method_name: str) -> str:
    """The namespace of the keys a method declares: its name, lower case, each non-word character as ``_``.

    Examples
    --------
    >>> namespace_of("hwc+lam"), namespace_of("My-Loss"), namespace_of("t")
    ('hwc_lam', 'my_loss', 't')
    """
    ns = re.sub(r"\W", "_", str(method_name).strip().lower())
    return ns if ns.isidentifier() else f"_{ns}"


def register_hparam(
    name: str,
    default: Any,
    doc: str = "",
    *,
    namespace: str | None = None,
    formerly: str | tuple[str, ...] = (),
) -> HParam:
    """Declare a ``loss.*`` hyperparameter (idempotent for the same key and default).

    Parameters
    ----------
    name : str
        The short name, a Python identifier; or ``"<namespace>.<name>"``.
    default : object
        JSON-representable default (number, bool, string, list or None).
    doc : str
        One line for ``hierviz config`` and the docs.
    namespace : str, optional
        The owner of the key (a Python identifier): ``loss.<namespace>.<name>``. None (and no
        dot in ``name``): a shared key, ``loss.<name>``, the same idea for every method.
    formerly : str or tuple of str
        The flat name(s) of hierviz 0.3 (:attr:`HParam.formerly`).

    Returns
    -------
    HParam

    Raises
    ------
    ValueError
        A name or namespace that is not an identifier, or a key already declared with another default.

    Examples
    --------
    >>> register_hparam("hwc.alpha", 0.5).key
    'hwc.alpha'
    >>> register_hparam("alpha", 0.3, namespace="hwc")
    Traceback (most recent call last):
    ...
    ValueError: loss.hwc.alpha is already declared with default 0.5 (not 0.3); reuse that default or pick another name
    """
    if isinstance(name, str) and namespace is None and name.count(".") == 1:
        namespace, name = name.split(".")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"hyperparameter name must be a Python identifier, got {name!r}")
    if namespace is not None and (not isinstance(namespace, str) or not namespace.isidentifier()):
        raise ValueError(f"hyperparameter namespace must be a Python identifier, got {namespace!r}")
    hp = HParam(name, default, doc, namespace, (formerly,) if isinstance(formerly, str) else tuple(formerly))
    old = LOSS_HPARAMS.get(hp.key)
    if old is not None:
        if old.default != default:
            raise ValueError(
                f"loss.{hp.key} is already declared with default {old.default!r} (not {default!r}); "
                "reuse that default or pick another name"
            )
        if hp.formerly and not set(hp.formerly) <= set(old.formerly):
            old = LOSS_HPARAMS[hp.key] = HParam(
                old.name, old.default, old.doc or doc, namespace, old.formerly + hp.formerly
            )
        return old
    LOSS_HPARAMS[hp.key] = hp
    return hp
