"""Tree JSON: strict reading, the four forms told apart without flags, and writing them back.

A tree file (or an already parsed object) may hold

* a **parent map** ``{"child": "parent", ...}``: every value a string (``null`` allowed for the
  root); the root is the one parent that is never a child. The most common form;
* a **nested dict** ``{"root": {"a": ["x", "y"], "b": {"c": null}}}``: one top key (the root);
  each value a dict, a list of children (names, or dicts for subtrees) or ``null`` for a leaf;
* a **paths list** ``[["root", "a", "x"], ["root", "a", "y"], ...]``: one root → leaf list per
  leaf (a separator form such as ``"root/a/x"`` is not accepted: names may contain ``/``);
* hierviz's **full form** ``{"name", "source", "leaf_order", "tree" | "parents" | "paths",
  "dag_to_tree", "train_counts"}`` (:meth:`~hierviz.hierarchy.LabelTree.to_dict`).

How the form is told apart (:func:`detect_tree_form`), first rule that applies:

1. a JSON list is a paths list (a bad entry is named: ``paths[0] must be a sequence of names``);
2. an object is the full form when every key is a full-form key, or when it has a
   ``"tree"``, ``"parents"`` or ``"paths"`` key whose value is not a string. So a nested
   dict whose root is literally named ``"tree"``, ``"parents"`` or ``"paths"`` must be
   wrapped: ``{"tree": {"tree": {...}}}``; a parent map may use those names freely
   (``{"oak": "tree", "tree": "plant"}`` is a parent map, its values being strings);
3. an object whose values are all strings or ``null`` (at least one string) is a parent map;
4. an object whose values are all dicts, lists or ``null`` is a nested dict;
5. anything else (a number, an empty object, values that mix strings and dicts, ...) is
   refused with one line listing the four forms. A parent map with several parents per node
   (a DAG) must use the full form, ``{"parents": {...}, "dag_to_tree": true}``.

Reading is strict: the file must be UTF-8 (a BOM is allowed), a key repeated within one
object is refused (``json`` would silently keep the last one and drop a subtree), booleans
must be JSON booleans, and every error is one ``ValueError`` line naming the file (a missing
file is a ``FileNotFoundError`` naming the path). Reading and writing are iterative, so a
tree thousands of levels deep round-trips in every form.

Examples
--------
>>> from hierviz.hierarchy import tree_from_obj
>>> tree_from_obj({"x": "a", "y": "a", "z": "root", "a": "root"}).leaves
['x', 'y', 'z']
>>> detect_tree_form({"root": {"a": ["x"]}}), detect_tree_form([["root", "x"]])
('nested', 'paths')
>>> tree_to_obj(tree_from_obj({"root": ["p", "q"]}), "parents")
{'p': 'root', 'q': 'root'}
>>> parse_tree_json('{"root": {"a": ["x"], "a": ["y"]}}', where="t.json")
Traceback (most recent call last):
...
ValueError: t.json: key 'a' appears twice in one JSON object (line 1, column 23); a repeated key silently drops a subtree: merge them or rename one
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from json.decoder import scanstring
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: label_tree imports this module (the arrow points one way)
    from hierviz.hierarchy.label_tree import LabelTree

__all__ = [
    "TREE_FORMS",
    "FULL_FORM_KEYS",
    "WRITE_FORMS",
    "parse_tree_json",
    "read_tree_file",
    "detect_tree_form",
    "as_tree_object",
    "tree_to_obj",
    "dumps_tree_json",
    "write_tree_file",
]

#: The keys of hierviz's full form of which it must have exactly one.
TREE_FORMS = ("tree", "parents", "paths")
#: Every key the full form allows.
FULL_FORM_KEYS = frozenset({"name", "source", "leaf_order", "tree", "parents", "paths", "dag_to_tree", "train_counts"})
#: The forms :func:`tree_to_obj` and :func:`write_tree_file` write.
WRITE_FORMS = ("full", "parents", "nested", "paths")

#: The one-line list of the four forms every "fits no form" error gives.
_FORMS_HELP = (
    'expected a parent map {"child": "parent", ...}, a nested dict {"root": {"a": ["x", "y"]}}, '
    'a list of root-to-leaf paths [["root", "a", "x"], ...] or the full form '
    '{"name": ..., "tree"|"parents"|"paths": ...}'
)


# --------------------------------------------------------------------------- strict JSON parsing
class _DuplicateKey(ValueError):
    def __init__(self, key: str, pos: int | None = None) -> None:
        super().__init__(key)
        self.key, self.pos = key, pos


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise _DuplicateKey(k)
        seen[k] = v
    return seen


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_CONSTANTS = {"null": None, "true": True, "false": False, "NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _loads_iterative(s: str) -> Any:
    """``json.loads`` with a stack instead of recursion (any nesting depth).

    Same grammar and values as :func:`json.loads` (``NaN``/``Infinity`` included); a
    repeated key raises ``_DuplicateKey`` carrying the position of its second occurrence,
    and malformed text raises :class:`json.JSONDecodeError` like the C reader.
    """
    err = json.JSONDecodeError

    def ws(pos: int) -> int:
        return _WS.match(s, pos).end()

    def key_at(pos: int) -> tuple[str, int, int]:
        if s[pos : pos + 1] != '"':
            raise err("Expecting property name enclosed in double quotes", s, pos)
        key, end = scanstring(s, pos + 1, True)
        end = ws(end)
        if s[end : end + 1] != ":":
            raise err("Expecting ':' delimiter", s, end)
        return key, pos, ws(end + 1)

    stack: list[list[Any]] = []  # ["obj", dict, key, key_pos] or ["arr", list]
    pos = ws(0)
    while True:
        c = s[pos : pos + 1]
        if c == "{":
            pos = ws(pos + 1)
            if s[pos : pos + 1] == "}":
                value: Any = {}
                pos += 1
            else:
                key, kpos, pos = key_at(pos)
                stack.append(["obj", {}, key, kpos])
                continue
        elif c == "[":
            pos = ws(pos + 1)
            if s[pos : pos + 1] == "]":
                value, pos = [], pos + 1
            else:
                stack.append(["arr", []])
                continue
        elif c == '"':
            value, pos = scanstring(s, pos + 1, True)
        else:
            m = _NUMBER.match(s, pos)
            if m is not None:
                integer, frac, exp = m.groups()
                value = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
                pos = m.end()
            else:
                for word, const in _CONSTANTS.items():
                    if s.startswith(word, pos):
                        value, pos = const, pos + len(word)
                        break
                else:
                    raise err("Expecting value", s, pos)
        # A complete value: hand it to the enclosing containers, closing those that end here.
        while True:
            pos = ws(pos)
            if not stack:
                if pos != len(s):
                    raise err("Extra data", s, pos)
                return value
            frame = stack[-1]
            c = s[pos : pos + 1]
            if frame[0] == "obj":
                if frame[2] in frame[1]:
                    raise _DuplicateKey(frame[2], frame[3])
                frame[1][frame[2]] = value
                if c == ",":
                    frame[2], frame[3], pos = key_at(ws(pos + 1))
                    break
                if c != "}":
                    raise err("Expecting ',' delimiter", s, pos)
            else:
                frame[1].append(value)
                if c == ",":
                    pos = ws(pos + 1)
                    break
                if c != "]":
                    raise err("Expecting ',' delimiter", s, pos)
            value, pos = frame[1], pos + 1
            stack.pop()


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def parse_tree_json(text: str | bytes, where: str = "tree JSON") -> Any:
    """Parse tree JSON strictly: UTF-8, no repeated keys, any nesting depth.

    Parameters
    ----------
    text : str or bytes
        The file's content (bytes must be UTF-8; a leading BOM is dropped).
    where : str
        The file name, for messages.

    Returns
    -------
    dict or list or scalar
        What :func:`json.loads` returns (keys in file order).

    Raises
    ------
    ValueError
        Not UTF-8, not valid JSON (line and column named), or a key repeated within one
        object (key, line and column named); the message starts with ``where``.

    Examples
    --------
    >>> parse_tree_json(b'{"x": "root"}')
    {'x': 'root'}
    >>> parse_tree_json('{"x": "root",}', where="t.json")
    Traceback (most recent call last):
    ...
    ValueError: t.json: not valid JSON at line 1, column 14 (Expecting property name enclosed in double quotes)
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{where}: not UTF-8 (byte {e.start}: {e.reason}); a tree file must be UTF-8 JSON: re-save it as UTF-8"
            ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        try:
            return json.loads(text, object_pairs_hook=_no_duplicates)
        except (RecursionError, _DuplicateKey):
            # Deeper than the C reader's recursion limit, or a repeated key whose position we
            # want: the iterative reader handles any depth and knows where the key sits.
            return _loads_iterative(text)
    except _DuplicateKey as e:
        at = " (line {}, column {})".format(*_line_col(text, e.pos)) if e.pos is not None else ""
        raise ValueError(
            f"{where}: key {e.key!r} appears twice in one JSON object{at}; "
            "a repeated key silently drops a subtree: merge them or rename one"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON at line {e.lineno}, column {e.colno} ({e.msg})") from None


def read_tree_file(path: str | PathLike) -> Any:
    """Read and strictly parse a tree JSON file (see :func:`parse_tree_json`).

    Parameters
    ----------
    path : str or PathLike
        The file (``~`` is expanded).

    Returns
    -------
    dict or list
        The parsed JSON, in any form; build the tree with :func:`tree_from_obj`.

    Raises
    ------
    FileNotFoundError
        No such file (the path is named).
    ValueError
        Unreadable, not UTF-8, invalid JSON (line and column) or repeated keys; the path
        is named.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such tree file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot read the tree file ({e.strerror}); check its permissions") from None
    return parse_tree_json(data, where=str(path))


# --------------------------------------------------------------------------- the four forms
def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, Mapping):
        return "an object"
    if isinstance(v, (list, tuple)):
        return "a list"
    return type(v).__name__


def _fits_none(got: str) -> ValueError:
    return ValueError(f"{_FORMS_HELP}; got {got}")


def detect_tree_form(obj: Any) -> str:
    """Which of the four tree forms a parsed JSON value is (rules in the module docstring).

    Parameters
    ----------
    obj : dict or list
        Parsed tree JSON.

    Returns
    -------
    str
        ``"full"``, ``"parents"``, ``"nested"`` or ``"paths"``.

    Raises
    ------
    ValueError
        ``obj`` fits none of the forms; the one-line message says what it got and lists
        the four forms.

    Examples
    --------
    >>> detect_tree_form({"x": "a", "a": "root"})
    'parents'
    >>> detect_tree_form({"name": "t", "paths": [["r", "x"]]})
    'full'
    >>> detect_tree_form({"oak": "tree", "tree": "plant"})  # node names may be form keys
    'parents'
    >>> detect_tree_form(3)
    Traceback (most recent call last):
    ...
    ValueError: expected a parent map {"child": "parent", ...}, a nested dict {"root": {"a": ["x", "y"]}}, a list of root-to-leaf paths [["root", "a", "x"], ...] or the full form {"name": ..., "tree"|"parents"|"paths": ...}; got int 3
    """
    if isinstance(obj, (list, tuple)):
        return "paths"  # LabelTree.from_paths names a bad entry ("paths[0] must be a sequence of names")
    if not isinstance(obj, Mapping):
        shown = repr(obj)
        raise _fits_none(f"{type(obj).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}")
    if not obj:
        raise _fits_none("an empty object {}")
    if set(obj) <= FULL_FORM_KEYS or any(k in obj and not isinstance(obj[k], str) for k in TREE_FORMS):
        return "full"
    kinds = {type(v).__name__ if v is not None else "null" for v in obj.values()}
    if "str" in kinds and kinds <= {"str", "null"}:
        return "parents"
    if all(v is None or isinstance(v, (Mapping, list, tuple)) for v in obj.values()):
        return "nested"
    got = "an object whose values mix " + ", ".join(sorted(kinds))
    if "str" in kinds and "list" in kinds:
        got += ' (a parent map with several parents per node, a DAG, needs the full form {"parents": ..., '
        got += '"dag_to_tree": true})'
    raise _fits_none(got)


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
        ``{"name", ...}`` with exactly one of ``"tree"`` / ``"parents"`` / ``"paths"`` (the full
        form is returned as a shallow copy, its ``"name"`` defaulting to ``name``).

    Raises
    ------
    ValueError
        ``obj`` fits none of the four forms (the message starts with ``where``).

    Examples
    --------
    >>> as_tree_object({"x": "a", "y": "a", "a": "root"}, name="mine")
    {'name': 'mine', 'parents': {'x': 'a', 'y': 'a', 'a': 'root'}}
    >>> as_tree_object({"root": ["p", "q"]})["tree"]
    {'root': ['p', 'q']}
    >>> as_tree_object([["root", "a", "x"]])["paths"]
    [['root', 'a', 'x']]
    """
    try:
        return _as_full(obj, name)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _json_value(v: Any) -> str:
    return "null" if v is None else f"the {_kind(v).split(' ', 1)[-1]} {json.dumps(v)}"


def _tree_from_full(obj: Mapping, cls: type[LabelTree]) -> LabelTree:
    """Build a ``cls`` (LabelTree) from the full form; errors unprefixed (the caller adds the file)."""
    unknown = sorted(set(obj) - FULL_FORM_KEYS)
    if unknown:
        shown = ", ".join(repr(k) for k in unknown)
        raise ValueError(f"obj has unknown keys {shown}; allowed: {sorted(FULL_FORM_KEYS)}")
    kinds = [k for k in TREE_FORMS if k in obj]
    if len(kinds) != 1:
        raise ValueError(f"obj needs exactly one of 'tree', 'parents', 'paths'; got {kinds or 'none'}")
    if kinds[0] != "parents" and ("dag_to_tree" in obj or "train_counts" in obj):
        raise ValueError("obj keys 'dag_to_tree'/'train_counts' only apply with 'parents'")
    dag = obj.get("dag_to_tree", False)
    if not isinstance(dag, bool):
        raise ValueError(
            f"dag_to_tree must be a JSON boolean (true/false), got {_json_value(dag)}; write true or false without quotes"
        )
    meta = {"name": obj.get("name", ""), "source": obj.get("source", "")}
    if kinds[0] == "tree":
        tree = cls.from_nested(obj["tree"], **meta)
    elif kinds[0] == "paths":
        tree = cls.from_paths(obj["paths"], **meta)
    else:
        tree = cls(obj["parents"], dag_to_tree=dag, train_counts=obj.get("train_counts"), **meta)
    if obj.get("leaf_order") is not None:
        tree = tree.with_leaf_order(obj["leaf_order"])
    return tree


def _as_full(obj: Any, name: str) -> dict:
    """Any form as the full form (shallow copy); errors unprefixed."""
    form = detect_tree_form(obj)
    if form == "full":
        out = dict(obj)
        if name:
            out.setdefault("name", name)
        return out
    return {"name": name, {"parents": "parents", "nested": "tree", "paths": "paths"}[form]: obj}


# --------------------------------------------------------------------------- writing
def _nested(tree: LabelTree) -> dict:
    """The nested-dict form, built bottom-up (any depth): all-leaf children become a list."""
    order = [tree.root]
    for u in order:
        order.extend(tree.children(u))
    built: dict[str, Any] = {}
    for n in reversed(order):
        ch = tree.children(n)
        if not ch:
            built[n] = None
        elif all(built[c] is None for c in ch):
            built[n] = list(ch)
        else:
            built[n] = {c: built[c] for c in ch}
    return {tree.root: built[tree.root]}


def tree_to_obj(tree: LabelTree, form: str = "full") -> dict | list:
    """A tree as a JSON-ready object in one of the four forms (the inverse of :func:`tree_from_obj`).

    Parameters
    ----------
    tree : LabelTree
    form : {"full", "parents", "nested", "paths"}, default "full"
        ``"full"`` is :meth:`LabelTree.to_dict` (name, source, leaf order, nested tree);
        ``"parents"`` lists the leaves first, in leaf order, then the other non-root nodes;
        ``"paths"`` gives one root → leaf list per leaf, in leaf order; ``"nested"`` is the
        bare nested dict.

    Returns
    -------
    dict or list
        Reading it back gives an equal tree (``==``: same edges and leaf order), except
        that the nested dict carries no leaf order (its leaves read back in depth-first
        order) and the bare forms carry no name or source.

    Raises
    ------
    ValueError
        Unknown ``form``.
    TypeError
        ``tree`` is not a LabelTree.

    Examples
    --------
    >>> from hierviz.hierarchy import tree_from_obj
    >>> t = tree_from_obj({"root": {"a": ["x", "y"], "b": None}})
    >>> tree_to_obj(t, "paths")
    [['root', 'a', 'x'], ['root', 'a', 'y'], ['root', 'b']]
    >>> tree_to_obj(t, "nested")
    {'root': {'a': ['x', 'y'], 'b': None}}
    """
    if not all(hasattr(tree, a) for a in ("root", "children", "parent", "ancestors", "leaves", "nodes")):
        raise TypeError(f"tree must be a LabelTree, got {type(tree).__name__}")
    if form == "full":
        return {"name": tree.name, "source": tree.source, "leaf_order": tree.leaves, "tree": _nested(tree)}
    if form == "nested":
        return _nested(tree)
    if form == "paths":
        return [tree.ancestors(leaf) for leaf in tree.leaves]
    if form == "parents":
        out = {leaf: tree.parent(leaf) for leaf in tree.leaves}
        out.update((n, tree.parent(n)) for n in tree.nodes[1:] if n not in out)
        return out
    raise ValueError(f"form must be one of {', '.join(WRITE_FORMS)}; got {form!r}")


def dumps_tree_json(obj: Any, indent: int = 2) -> str:
    """``json.dumps(obj, indent=indent, ensure_ascii=False)`` without recursion (any depth).

    Parameters
    ----------
    obj : dict, list, str, int, float, bool or None
        Nested JSON-ready values (dict keys are strings).
    indent : int, default 2

    Returns
    -------
    str
        The same text :func:`json.dumps` writes with these options, no trailing newline.

    Examples
    --------
    >>> print(dumps_tree_json({"root": ["x", "y"]}))
    {
      "root": [
        "x",
        "y"
      ]
    }
    """
    out: list[str] = []
    stack: list[list[Any]] = []  # [iterator of (key | None, value), closing char, level, first]

    def emit(v: Any, level: int) -> None:
        if isinstance(v, Mapping) and v:
            out.append("{")
            stack.append([iter(v.items()), "}", level + 1, True])
        elif isinstance(v, (list, tuple)) and v:
            out.append("[")
            stack.append([((None, x) for x in v), "]", level + 1, True])
        elif isinstance(v, Mapping):
            out.append("{}")
        elif isinstance(v, (list, tuple)):
            out.append("[]")
        else:
            out.append(json.dumps(v, ensure_ascii=False))

    emit(obj, 0)
    while stack:
        frame = stack[-1]
        item = next(frame[0], None)
        if item is None:
            stack.pop()
            out.append("\n" + " " * (indent * (frame[2] - 1)) + frame[1])
            continue
        out.append(("\n" if frame[3] else ",\n") + " " * (indent * frame[2]))
        frame[3] = False
        key, value = item
        if frame[1] == "}":
            out.append(json.dumps(key, ensure_ascii=False) + ": ")
        emit(value, frame[2])
    return "".join(out)


def write_tree_file(tree: LabelTree, path: str | PathLike, form: str = "full") -> Path:
    """Write a tree as indented UTF-8 JSON in one of the four forms (any depth).

    Parameters
    ----------
    tree : LabelTree
    path : str or PathLike
        Destination file (its folder must exist).
    form : {"full", "parents", "nested", "paths"}, default "full"
        See :func:`tree_to_obj`; :func:`read_tree_file` + :func:`tree_from_obj` read any.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    ValueError
        Unknown ``form``, or the file cannot be written (the path is named).
    """
    text = dumps_tree_json(tree_to_obj(tree, form)) + "\n"
    path = Path(path).expanduser()
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ValueError(
            f"{path}: cannot write the tree file ({e.strerror}); check the folder exists and is writable"
        ) from None
    return path
