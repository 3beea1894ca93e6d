"""One small registry class behind every open registry of hierviz.

Methods, geometries, encoders, datasets, trees, metrics and projections are each a
:class:`Registry`: a name → object map filled by a decorator (or a plain call) where the
object is defined, so adding one is one new file plus one registration line. A user module
registers its own entries the same way; ``hierviz compare --import MODULE`` imports it first.

Examples
--------
>>> from hierviz._registry import Registry
>>> colours = Registry("colour")
>>> @colours.register("teal")
... def teal():
...     return "#008080"
>>> colours.get("teal")()
'#008080'
>>> colours.get("tael")
Traceback (most recent call last):
...
hierviz._registry.UnknownNameError: unknown colour 'tael'; did you mean 'teal'? valid names: teal
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["Registry", "UnknownNameError", "nearest"]

T = TypeVar("T")


class UnknownNameError(KeyError, ValueError):
    """A name that is not registered. A KeyError and a ValueError, so either ``except`` catches it.

    ``str(err)`` is the one-line message (KeyError would otherwise quote it).
    """

    def __str__(self) -> str:  # KeyError.__str__ adds quotes around the message
        return str(self.args[0]) if self.args else ""


def nearest(name: str, valid: list[str] | tuple[str, ...], n: int = 3, cutoff: float = 0.5) -> list[str]:
    """The valid names closest to ``name`` (difflib ratio ≥ 0.5), best first.

    Parameters
    ----------
    name : str
    valid : sequence of str
    n : int, default 3
        At most this many suggestions.
    cutoff : float, default 0.5
        Minimum similarity ratio in [0, 1].

    Returns
    -------
    list of str

    Examples
    --------
    >>> nearest("supcn", ["simclr", "supcon", "hwc"])
    ['supcon']
    """
    return difflib.get_close_matches(str(name), list(valid), n=n, cutoff=cutoff)


def unknown_message(kind: str, name: Any, valid: list[str]) -> str:
    """``"unknown <kind> 'x'; did you mean 'y'? valid names: a, b, c"`` (one line)."""
    close = nearest(str(name), valid)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {kind} {name!r}{hint}{';' if not close else ''} valid names: {', '.join(valid)}"


#: kind -> the first :class:`Registry` made for it (:func:`registry_for`).
_BY_KIND: dict[str, Registry] = {}


def registry_for(kind: str) -> Registry | None:
    """The registry of ``kind`` (e.g. ``"method"``) if the module that makes it was imported, else None.

    For a layer that may read a registry's entries without importing the code that fills it:
    ``hierviz.report`` reads method display names this way and imports no method code.

    Examples
    --------
    >>> registry_for("no such kind") is None
    True
    """
    return _BY_KIND.get(kind)


class Registry(Generic[T]):
    """A name → object map with a registering decorator and helpful misses.

    Parameters
    ----------
    kind : str
        What the entries are ("method", "geometry", ...), used in error messages.
    normalise : callable, optional
        Applied to names on registration and lookup; default: strip and lower-case.

    Notes
    -----
    Registering a name twice raises ``ValueError`` unless ``replace=True`` (so two modules
    cannot silently shadow each other). Order of registration is kept: ``names()`` lists
    the built-in entries first, in the order their modules define them.
    """

    def __init__(self, kind: str, normalise: Callable[[str], str] | None = None) -> None:
        self.kind = kind
        self._normalise = normalise or (lambda s: str(s).strip().lower())
        self._entries: dict[str, T] = {}
        _BY_KIND.setdefault(kind, self)

    def register(self, name: str, obj: T | None = None, *, replace: bool = False) -> Any:
        """Register ``obj`` under ``name``; without ``obj``, return a decorator.

        Parameters
        ----------
        name : str
        obj : object, optional
        replace : bool, default False
            Allow overwriting an existing entry.

        Returns
        -------
        The object (or a decorator that registers and returns its argument).

        Raises
        ------
        ValueError
            ``name`` is empty or already registered (and ``replace`` is False).
        """
        key = self._normalise(name)
        if not key:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")

        def deco(o: T) -> T:
            if key in self._entries and not replace and self._entries[key] is not o:
                raise ValueError(f"{self.kind} {key!r} is already registered; choose another name or pass replace=True")
            self._entries[key] = o
            return o

        return deco if obj is None else deco(obj)

    def unregister(self, name: str) -> None:
        """Remove an entry (tests and interactive sessions); a missing name is ignored."""
        self._entries.pop(self._normalise(name), None)

    def get(self, name: str) -> T:
        """The entry named ``name``.

        Raises
        ------
        UnknownNameError
            (a KeyError and a ValueError) naming the closest valid names.
        """
        key = self._normalise(name)
        if key not in self._entries:
            raise UnknownNameError(unknown_message(self.kind, name, self.names()))
        return self._entries[key]

    def names(self) -> list[str]:
        """Registered names in registration order."""
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs in registration order."""
        return list(self._entries.items())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._normalise(name) in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
