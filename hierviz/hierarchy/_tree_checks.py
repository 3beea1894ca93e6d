"""Validation of a label tree's input: names, parent maps, graphs, counts and leaf orders.

Split from :mod:`hierviz.hierarchy.label_tree` (no module over 700 lines); the
:class:`~hierviz.hierarchy.LabelTree` constructor calls these.
"""

from __future__ import annotations

import reprlib
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

__all__: list[str] = []  # private helpers; import them by name

_NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}
_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def _quote_list(names: Iterable[str], limit: int = 12) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


#: A bounded repr for messages about user values: a 5,000-deep bracket list ended in a RecursionError
#: while its full repr was built for the message.
_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxlist, _repr.maxdict, _repr.maxstring, _repr.maxother = 3, 4, 4, 40, 40
_short = _repr.repr


def _check_name(obj: Any, where: str) -> str:
    if not isinstance(obj, str):
        raise TypeError(f"{where} must be a str node name, got {type(obj).__name__} {_short(obj)}")
    if not obj:
        raise ValueError(f"{where} is an empty string; node names must be non-empty")
    return obj


def normalise_parents(parents: Mapping[str, Any]) -> tuple[list[str], dict[str, list[str]]]:
    """Type-check a parent map and return (first-appearance order, name -> list of parents)."""
    order: list[str] = []
    plist: dict[str, list[str]] = {}

    def see(n: str) -> None:
        if n not in plist:
            plist[n] = []
            order.append(n)

    for child, par in parents.items():
        _check_name(child, "parents key")
        see(child)
        if par is None:
            ps: list[str] = []
        elif isinstance(par, str):
            ps = [_check_name(par, f"parents[{child!r}]")]
        elif isinstance(par, Sequence):
            ps = [_check_name(p, f"parents[{child!r}] entry") for p in par]
            dup = sorted({p for p in ps if ps.count(p) > 1})
            if dup:
                raise ValueError(f"parents[{child!r}] lists parent {_quote_list(dup)} more than once")
        else:
            raise TypeError(f"parents[{child!r}] must be a str, None or a sequence of str, got {type(par).__name__}")
        plist[child] = list(ps)
        for p in ps:
            see(p)
    return order, plist


def check_graph(order: list[str], plist: dict[str, list[str]]) -> str:
    """Refuse cycles, unreachable nodes and several (or no) roots; return the root."""
    children: dict[str, list[str]] = {n: [] for n in order}
    for n in order:
        for p in plist[n]:
            children[p].append(n)
    roots = [n for n in order if not plist[n]]

    # Iterative DFS along parent -> child edges; a grey node met again closes a cycle.
    colour = dict.fromkeys(order, 0)  # 0 white, 1 grey (on stack), 2 black
    cycle: list[str] | None = None
    for start in order:
        if colour[start] or cycle:
            continue
        stack = [(start, iter(children[start]))]
        path = [start]
        colour[start] = 1
        while stack and cycle is None:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour[nxt] == 1:
                cycle = path[path.index(nxt) :] + [nxt]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, iter(children[nxt])))
                path.append(nxt)
    if cycle is not None:
        text = "cycle: " + " -> ".join(cycle) + " (each name is the parent of the next)"
        if len(roots) == 1:
            seen = {roots[0]}
            queue = deque([roots[0]])
            while queue:
                for c in children[queue.popleft()]:
                    if c not in seen:
                        seen.add(c)
                        queue.append(c)
            unreachable = [n for n in order if n not in seen]
            if unreachable:
                raise ValueError(f"unreachable from root {roots[0]!r}: {_quote_list(unreachable)}; {text}")
        if not roots:
            text += "; every node has a parent, so there is no root"
        raise ValueError(text)
    if len(roots) > 1:
        word = _NUMBER_WORDS.get(len(roots), str(len(roots)))
        raise ValueError(f"{word} roots: {_quote_list(roots)}; a label tree needs exactly one")
    # With one root and no cycle, every parent chain ends at that root: all nodes reachable.
    return roots[0]


def check_counts(train_counts: Mapping[str, int] | None, plist: dict[str, list[str]]) -> dict[str, int]:
    if train_counts is None:
        return {}
    if not isinstance(train_counts, Mapping):
        raise TypeError(f"train_counts must be a Mapping name -> int, got {type(train_counts).__name__}")
    unknown = [k for k in train_counts if k not in plist]
    if unknown:
        raise ValueError(f"train_counts names unknown nodes: {_quote_list(unknown)}")
    out = {}
    for k, v in train_counts.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"train_counts[{k!r}] must be an int, got {type(v).__name__}")
        if v < 0:
            raise ValueError(f"train_counts[{k!r}] = {v} is negative")
        out[k] = int(v)
    return out


def leaf_mismatch(classes: Sequence[str], leaves: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """How a list of class names differs from a tree's leaves.

    Parameters
    ----------
    classes : sequence of str
        Class names, in their order.
    leaves : sequence of str
        The tree's leaf names.

    Returns
    -------
    extra : list of str
        Names of ``classes`` that are not leaves, in the order of ``classes``.
    missing : list of str
        Leaves not among ``classes``, in the order of ``leaves``.
    repeated : list of str
        Names that stand more than once in ``classes``, sorted.
    """
    classes = list(classes)
    have, want = set(classes), set(leaves)
    extra = [c for c in classes if c not in want]
    missing = [n for n in leaves if n not in have]
    repeated = sorted({c for c in classes if classes.count(c) > 1})
    return extra, missing, repeated


def check_leaf_order(classes: Sequence[str], leaves: Sequence[str], argname: str) -> list[str]:
    if isinstance(classes, str) or not isinstance(classes, Iterable):
        raise TypeError(f"{argname} must be a sequence of leaf names, got {type(classes).__name__}")
    classes = list(classes)
    for c in classes:
        _check_name(c, f"{argname} entry")
    extra, missing, dup = leaf_mismatch(classes, leaves)
    found = (("missing leaves", missing), ("names that are not leaves of the tree", extra), ("repeated names", dup))
    problems = [f"{what} {_quote_list(names)}" for what, names in found if names]
    if problems:
        raise ValueError(f"{argname} must list every leaf exactly once: " + "; ".join(problems))
    return classes
