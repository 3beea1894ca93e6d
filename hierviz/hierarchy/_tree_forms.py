"""Building a :class:`~hierviz.hierarchy.LabelTree` from each tree form, and writing it back.

Split from :mod:`hierviz.hierarchy.label_tree` (no module over 700 lines):
:class:`TreeForms` is a base class of ``LabelTree``, so ``LabelTree.from_nested`` etc. are
unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz.hierarchy._tree_checks import _check_name, _short
from hierviz.hierarchy.io import _as_full, _tree_from_full, read_tree_file, tree_to_obj, write_tree_file

if TYPE_CHECKING:
    from hierviz.hierarchy.label_tree import LabelTree

__all__ = ["TreeForms"]


class TreeForms:
    """The constructors ``from_parents``/``from_nested``/``from_paths``/``from_dict``/``from_json``
    and the writers ``to_dict``/``to_json`` of :class:`~hierviz.hierarchy.LabelTree`."""

    @classmethod
    def from_parents(
        cls,
        parents: Mapping[str, str | None | Sequence[str]],
        *,
        dag_to_tree: bool = False,
        train_counts: Mapping[str, int] | None = None,
    ) -> LabelTree:
        """Build from a child → parent map (a DAG only with ``dag_to_tree=True``).

        Parameters
        ----------
        parents : Mapping[str, str | None | Sequence[str]]
            ``{"adenosis": "benign", "benign": "root", "root": None, ...}``; the root
            may be omitted as a key. A sequence value lists several parents (a DAG).
        dag_to_tree : bool, default False
            Apply the deterministic DAG → tree projection of paper 01 §4.1
            (shallowest parent → larger training-subtree frequency → lexicographic).
        train_counts : Mapping[str, int], optional
            Training counts per node for the second tie-break (see :class:`LabelTree`).

        Returns
        -------
        LabelTree
            Leaves ordered by first appearance in ``parents``.

        Raises
        ------
        ValueError, TypeError
            See :class:`LabelTree`.
        """
        return cls(parents, dag_to_tree=dag_to_tree, train_counts=train_counts)

    @classmethod
    def from_nested(cls, d: Mapping, *, name: str = "", source: str = "") -> LabelTree:
        """Build from a nested dict with a single top key (the root).

        Parameters
        ----------
        d : Mapping
            ``{"root": {"benign": ["adenosis", ...], "malignant": {...}}}``. Each value
            is a nested dict, a list of children (leaf names, or dicts for subtrees),
            or ``None`` / ``{}`` / ``[]`` for a leaf.
        name, source : str, optional
            Taxonomy name and citation.

        Returns
        -------
        LabelTree
            Leaves in depth-first (pre-order) order of ``d``.

        Raises
        ------
        ValueError
            Empty dict, several top keys (``"two roots: ..."``), a name used twice
            (``"duplicate node name 'x' (under 'a' and under 'b')"``), root only.
        TypeError
            A key that is not a str or a value of another type.
        """
        if not isinstance(d, Mapping):
            raise TypeError(f"d must be a Mapping (nested dict), got {type(d).__name__}")
        parent: dict[str, str | None] = {}

        def add(n: Any, p: str | None, where: str) -> None:
            _check_name(n, where)
            if n in parent:
                was = "the top level" if parent[n] is None else f"under {parent[n]!r}"
                now = "the top level" if p is None else f"under {p!r}"
                raise ValueError(f"duplicate node name {n!r} ({was} and {now})")
            parent[n] = p

        # Iterative pre-order walk (any depth; a recursive walk stops near 1,000 levels): a
        # stack of generators visits children in exactly the order a recursive walk would.
        def frame(sub: Any, p: str, where: str):
            if sub is None:
                return
            if isinstance(sub, Mapping):
                for k, v in sub.items():
                    yield ("add", k, p, f"key under {p!r}")
                    yield ("walk", v, k, f"{where}[{k!r}]")
            elif isinstance(sub, (list, tuple)):
                for j, item in enumerate(sub):
                    if isinstance(item, Mapping):
                        yield ("walk", item, p, f"{where}[{j}]")
                    else:
                        yield ("add", item, p, f"{where}[{j}]")
            else:
                raise TypeError(
                    f"d{where} must be a dict, a list of children or None, got {type(sub).__name__} {_short(sub)}"
                )

        def walk(sub: Any, p: str, where: str) -> None:
            stack = [frame(sub, p, where)]
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    stack.pop()
                elif step[0] == "add":
                    add(step[1], step[2], step[3])
                else:
                    stack.append(frame(step[1], step[2], step[3]))

        for k, v in d.items():
            add(k, None, "top-level key")
            walk(v, k, f"[{k!r}]")
        return cls(parent, name=name, source=source)

    @classmethod
    def from_paths(cls, paths: Sequence[Sequence[str]], *, name: str = "", source: str = "") -> LabelTree:
        """Build from root → leaf paths, e.g. ``[["root", "benign", "adenosis"], ...]``.

        Parameters
        ----------
        paths : Sequence[Sequence[str]]
            One path per leaf (a path that is a prefix of another just adds nothing).
        name, source : str, optional
            Taxonomy name and citation.

        Returns
        -------
        LabelTree
            Leaves in order of first appearance.

        Raises
        ------
        ValueError
            No paths, an empty path, a name repeated within a path (a cycle), a name
            reached under two different parents (duplicate name), several roots.
        TypeError
            ``paths`` or one path is a bare string, or a name is not a string.
        """
        if isinstance(paths, (str, bytes)) or not isinstance(paths, Iterable):
            raise TypeError(f"paths must be a sequence of root->leaf sequences, got {type(paths).__name__}")
        parent: dict[str, str | None] = {}
        for i, path in enumerate(paths):
            if isinstance(path, (str, bytes)) or not isinstance(path, Iterable):
                hint = ' (write each path as a list of names, e.g. ["root", "a", "x"])' if isinstance(path, str) else ""
                raise TypeError(
                    f"paths[{i}] must be a sequence of names, got {type(path).__name__} {_short(path)}{hint}"
                )
            path = list(path)
            if not path:
                raise ValueError(f"paths[{i}] is empty")
            on_path: set[str] = set()
            for j, n in enumerate(path):
                _check_name(n, f"paths[{i}][{j}]")
                if n in on_path:
                    k = path.index(n)
                    raise ValueError(f"paths[{i}] repeats {n!r}: cycle: " + " -> ".join(path[k : j + 1]))
                on_path.add(n)
                p = path[j - 1] if j else None
                if n in parent and parent[n] != p:
                    was = "the root" if parent[n] is None else f"under {parent[n]!r}"
                    now = "the root" if p is None else f"under {p!r}"
                    raise ValueError(f"duplicate node name {n!r}: paths[{i}] puts it {now}, an earlier path {was}")
                parent.setdefault(n, p)
        return cls(parent, name=name, source=source)

    @classmethod
    def from_dict(cls, obj: Mapping | Sequence) -> LabelTree:
        """Build from parsed tree JSON in any of the four forms (see :mod:`hierviz.hierarchy.io`).

        Parameters
        ----------
        obj : Mapping or list
            A parent map ``{"child": "parent", ...}``, a nested dict ``{"root": {...}}``, a
            list of root → leaf paths, or the full form ``{"name": str, "source": str,
            "leaf_order": [...] (optional), "tree": <nested dict>}`` where instead of
            ``"tree"`` exactly one of ``"parents"`` (child → parent map, may carry
            ``"dag_to_tree": true`` and ``"train_counts"``) or ``"paths"`` may stand. The
            form is told apart by :func:`~hierviz.hierarchy.io.detect_tree_form`.

        Returns
        -------
        LabelTree

        Raises
        ------
        ValueError
            ``obj`` fits no form; unknown keys or not exactly one of tree/parents/paths in
            the full form; ``dag_to_tree`` not a JSON boolean; any error of the matching
            constructor; ``leaf_order`` not a permutation of the leaves.
        TypeError
            ``obj`` is neither a mapping nor a list, or a name/value of the wrong type.

        Examples
        --------
        >>> from hierviz.hierarchy import LabelTree
        >>> LabelTree.from_dict({"x": "a", "y": "a", "a": "root", "z": "root"}).leaves
        ['x', 'y', 'z']
        """
        if not isinstance(obj, (Mapping, list, tuple)):
            raise TypeError(f"obj must be parsed tree JSON (a Mapping or a list), got {type(obj).__name__}")
        return _tree_from_full(_as_full(obj, ""), cls)

    @classmethod
    def from_json(cls, path: str | PathLike) -> LabelTree:
        """Read a tree from a JSON file in any of the four forms (see :meth:`from_dict`).

        Parameters
        ----------
        path : str or PathLike
            The UTF-8 ``.json`` file. A missing ``"name"`` defaults to the file stem.

        Returns
        -------
        LabelTree

        Raises
        ------
        FileNotFoundError
            The file does not exist (the path is named).
        ValueError
            Not UTF-8, invalid JSON (line and column), a repeated key, or content refused
            by :meth:`from_dict`; one line starting with the path.
        """
        path = Path(path).expanduser()
        obj = read_tree_file(path)
        try:
            return _tree_from_full(_as_full(obj, path.stem), cls)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: {exc}") from None

    def to_dict(self) -> dict:
        """The full JSON form: ``{"name", "source", "leaf_order", "tree"}``.

        Returns
        -------
        dict
            ``"tree"`` is a nested dict (children that are all leaves become a list,
            a leaf child with internal siblings maps to ``None``); ``"leaf_order"`` is
            :attr:`leaves`. ``LabelTree.from_dict(t.to_dict()) == t``. Other forms:
            :func:`hierviz.hierarchy.tree_to_obj`.
        """
        return tree_to_obj(self, "full")

    def to_json(self, path: str | PathLike, form: str = "full") -> None:
        """Write the tree to ``path`` as indented UTF-8 JSON (any depth).

        Parameters
        ----------
        path : str or PathLike
            Destination file (its folder must exist).
        form : {"full", "parents", "nested", "paths"}, default "full"
            :meth:`to_dict`'s form, or a bare one (see :func:`hierviz.hierarchy.tree_to_obj`).

        Raises
        ------
        ValueError
            Unknown ``form`` or an unwritable file (the path is named).
        """
        write_tree_file(self, path, form)
