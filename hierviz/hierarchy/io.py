"""Reading tree JSON: strict parsing and the four forms, told apart without flags.

A tree file may hold

* a plain parent map ``{"child": "parent", ...}`` (every value a string; the root is the one
  parent that is never a child) — the most common form;
* a nested dict ``{"root": {"a": ["x", "y"], "b": {"c": null}}}``;
* a list of root → leaf paths ``[["root", "a", "x"], ...]``;
* hierviz's full form ``{"name", "source", "leaf_order", "tree" | "parents" | "paths",
  "dag_to_tree", "train_counts"}``.

Rules: a list is a paths list; an object with a ``"tree"``, ``"parents"`` or ``"paths"``
key is the full form; an object whose values are all strings is a parent map; any other
object is a nested dict. Reading is strict: the file must be UTF-8, a key repeated within
one object is refused (``json`` would silently keep the last one and drop a subtree), and
every error is one line naming the file.

Examples
--------
>>> tree_from_obj({"x": "a", "y": "a", "z": "root", "a": "root"}).leaves
['x', 'y', 'z']
>>> parse_tree_json('{"root": {"a": ["x"], "a": ["y"]}}', where="t.json")
Traceback (most recent call last):
...
ValueError: t.json: key 'a' appears twice in one JSON object (line 1); a repeated key silently drops a subtree: merge them or rename one
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

__all__ = ["parse_tree_json", "read_tree_file", "as_tree_object", "tree_from_obj", "TREE_FORMS"]

#: The keys that mark hierviz's full form, one of which it must have.
TREE_FORMS = ("tree", "parents", "paths")


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise _DuplicateKey(k)
        seen[k] = v
    return seen


def parse_tree_json(text: str | bytes, where: str = "tree JSON") -> Any:
    """Parse tree JSON strictly.

    Parameters
    ----------
    text : str or bytes
        The file's content (bytes must be UTF-8).
    where : str
        The file name, for messages.

    Returns
    -------
    dict or list

    Raises
    ------
    ValueError
        Not UTF-8, not valid JSON (line and column named), a key repeated within one object,
        or nested deeper than the JSON reader allows (use a parent map for very deep trees).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{where}: not UTF-8 text (byte {e.start}: {e.reason}); re-save the file as UTF-8") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as e:
        key = str(e)
        line = _line_of_second(text, key)
        raise ValueError(
            f"{where}: key {key!r} appears twice in one JSON object{f' (line {line})' if line else ''}; "
            "a repeated key silently drops a subtree: merge them or rename one"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON at line {e.lineno}, column {e.colno} ({e.msg})") from None
    except RecursionError:
        raise ValueError(
            f"{where}: nested too deeply for the JSON reader; write a very deep tree as a parent map "
            '{"child": "parent", ...}'
        ) from None


def _line_of_second(text: str, key: str) -> int | None:
    needle = json.dumps(key)
    first = text.find(needle)
    second = text.find(needle, first + 1) if first >= 0 else -1
    return text.count("\n", 0, second) + 1 if second >= 0 else None


def read_tree_file(path: str | PathLike) -> Any:
    """Read and strictly parse a tree JSON file (see :func:`parse_tree_json`).

    Raises
    ------
    FileNotFoundError
        No such file (the path is named).
    ValueError
        Unreadable, not UTF-8, invalid JSON or repeated keys (the path is named).
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such tree file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot read the tree file ({e.strerror}); check its permissions") from None
    return parse_tree_json(data, where=str(path))


def as_tree_object(obj: Any, *, name: str = "", where: str = "tree") -> dict:
    """A parsed tree JSON in any of the four forms, as the full form.

    Parameters
    ----------
    obj : dict or list
        The parsed JSON.
    name : str, optional
        Default ``"name"`` (a file's stem, a registered tree's name).
    where : str, optional
        The file or tree, for error messages.

    Returns
    -------
    dict
        ``{"name", ...}`` with exactly one of ``"tree"`` / ``"parents"`` / ``"paths"``.

    Raises
    ------
    ValueError
        ``obj`` is neither a JSON object nor a list (names ``where``).

    Examples
    --------
    >>> as_tree_object({"x": "a", "y": "a", "a": "root"}, name="mine")
    {'name': 'mine', 'parents': {'x': 'a', 'y': 'a', 'a': 'root'}}
    >>> as_tree_object({"root": ["p", "q"]})["tree"]
    {'root': ['p', 'q']}
    >>> as_tree_object([["root", "a", "x"]])["paths"]
    [['root', 'a', 'x']]
    """
    if isinstance(obj, list):
        return {"name": name, "paths": obj}
    if not isinstance(obj, Mapping):
        raise ValueError(
            f"{where}: expected a parent map {{\"child\": \"parent\"}}, a nested dict, a list of root-to-leaf paths "
            f"or hierviz's full form with 'tree'/'parents'/'paths'; got {type(obj).__name__}"
        )
    obj = dict(obj)
    if any(k in obj for k in TREE_FORMS):
        if name:
            obj.setdefault("name", name)
        return obj
    if obj and all(isinstance(v, str) for v in obj.values()):
        return {"name": name, "parents": obj}
    return {"name": name, "tree": obj}


def tree_from_obj(obj: Any, *, where: str = "tree", name: str = ""):
    """Build a :class:`~hierviz.hierarchy.LabelTree` from parsed JSON in any form.

    Raises
    ------
    ValueError
        The form or the tree is refused; the message starts with ``where``.
    """
    from hierviz.hierarchy.label_tree import LabelTree

    full = as_tree_object(obj, name=name, where=where)
    try:
        return LabelTree.from_dict(full)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None
