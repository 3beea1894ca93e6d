"""The LabelTree: the hierarchy every hierarchy-aware loss, metric and figure reads.

A :class:`LabelTree` is a rooted tree of uniquely named nodes whose leaves are the
classes a model predicts. It answers the questions the papers ask of a taxonomy:

* inclusive ancestor sets and depths (paper 01 §4.3, HF1 / H-Acc),
* the lowest common ancestor (LCA) of two leaves and the normalised LCA depth
  ``ρ(y_i, y_j) = depth(lca(y_i, y_j)) / L`` (paper 01, Eq. 4) that HWC and LAM use,
* the tree distance ``d_T`` (number of edges between two leaves),
* the level-ℓ ancestor of every leaf (paper 01 LAM, paper 04 per-level losses),
* the *lowest seen ancestor* of an unseen leaf (paper 04, §III-D "Lowest Seen Ancestor").

All leaf-pair quantities are precomputed once, at construction, as C × C tensors
(O(C²) memory), so the vectorised queries on label tensors are single gathers.

Conventions
-----------
* Node indices follow ``tree.nodes``: breadth-first, root first; siblings are
  ordered by the smallest leaf index below them, so the node order is a function of
  the edges and the leaf order only.
* Leaf indices (the *labels* every loss and metric takes) follow ``tree.leaves``:
  the order given at construction, changeable with :meth:`LabelTree.with_leaf_order`.
* The root has depth 0 and ``L = tree.height`` is the **maximum** leaf depth. In an
  unbalanced tree a shallow leaf keeps its own depth, so Eq. 4 gives it
  ``ρ(c, c) = depth(c) / L < 1`` on the diagonal (it is 1 only for leaves at depth L),
  and ``leaf_paths`` / ``ancestor_at_level`` repeat the leaf itself on the levels
  below it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import torch

from hierviz.hierarchy.dag import ProjectionChoice, project_dag
from hierviz.hierarchy.io import _as_full, _tree_from_full, read_tree_file, tree_to_obj, write_tree_file

__all__ = ["LabelTree", "ProjectionChoice", "tree_from_obj"]

_NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}
_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def _quote_list(names: Iterable[str], limit: int = 12) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _check_name(obj: Any, where: str) -> str:
    if not isinstance(obj, str):
        raise TypeError(f"{where} must be a str node name, got {type(obj).__name__} {obj!r}")
    if not obj:
        raise ValueError(f"{where} is an empty string; node names must be non-empty")
    return obj


class LabelTree:
    """A validated rooted label tree with precomputed LCA / ρ / tree-distance tables.

    Build one with :meth:`from_nested`, :meth:`from_parents`, :meth:`from_paths`,
    :meth:`from_json` or :meth:`from_dict`; calling the class directly is the same
    as :meth:`from_parents`.

    Parameters
    ----------
    parents : Mapping[str, str | None | Sequence[str]]
        Child name → parent name; ``None`` (or an empty sequence) marks the root.
        Names that appear only as parents are added as nodes with no parent. A
        sequence of several parents makes the input a DAG, which is refused unless
        ``dag_to_tree=True``.
    leaf_order : Sequence[str], optional
        The leaf order (= label indices). Default: order of first appearance in
        ``parents`` (keys and values, in iteration order).
    dag_to_tree : bool, default False
        Project a DAG onto a tree with the deterministic rule of paper 01 §4.1: every
        node with several parents keeps (1) the shallowest parent (depth = shortest
        path from the root in the DAG); on a tie (2) the parent whose DAG subtree has
        the larger total count in ``train_counts``; on a tie (3) the lexicographically
        smallest parent name. The decisions are kept in :attr:`dag_projection`.
    train_counts : Mapping[str, int], optional
        Training-split frequency per node name (usually per leaf; internal nodes may
        carry counts of samples labelled only up to that node). A parent's subtree
        frequency is the sum over all its DAG descendants, itself included. Missing
        names count 0. Only used by the DAG projection.
    name, source : str, optional
        Free-text name and citation of the taxonomy (kept by :meth:`to_dict`).

    Attributes
    ----------
    name : str
    source : str
    dag_projection : list of ProjectionChoice
        One entry per multi-parent node that the DAG projection resolved (empty for a tree).

    Raises
    ------
    ValueError
        Empty tree; a tree with only a root (L = 0 leaves ρ undefined); a cycle
        (``"cycle: a -> b -> a"``, each name the parent of the next); nodes
        unreachable from the root; more than one root (``"two roots: 'x', 'y'"``);
        a node with several parents without ``dag_to_tree=True``; a parent listed
        twice; ``leaf_order`` with missing, extra or repeated names; negative or
        unknown ``train_counts``.
    TypeError
        A node name that is not a string, or a parent value of the wrong type.

    Notes
    -----
    ``L`` (:attr:`height`) is the maximum leaf depth. For an unbalanced tree the
    normalisation of Eq. 4 uses this global L, so a leaf at depth ``d < L`` has
    ``ρ(leaf, leaf) = d / L`` and siblings under a depth-``d'`` parent get ``d' / L``
    wherever they sit. Pad shallow leaves with single-child chains if you need
    ``ρ = 1`` on the whole diagonal.

    Examples
    --------
    >>> t = LabelTree.from_nested({"root": {"benign": ["a", "b"], "malignant": ["c"]}})
    >>> t.leaves, t.height
    (['a', 'b', 'c'], 2)
    >>> t.rho(torch.tensor([0, 0]), torch.tensor([1, 2])).tolist()
    [0.5, 0.0]
    """

    # ------------------------------------------------------------------ construction
    def __init__(
        self,
        parents: Mapping[str, str | None | Sequence[str]],
        leaf_order: Sequence[str] | None = None,
        *,
        dag_to_tree: bool = False,
        train_counts: Mapping[str, int] | None = None,
        name: str = "",
        source: str = "",
    ) -> None:
        if not isinstance(parents, Mapping):
            raise TypeError(f"parents must be a Mapping child -> parent, got {type(parents).__name__}")
        self.name = str(name)
        self.source = str(source)
        order, plist = self._normalise_parents(parents)
        if not order:
            raise ValueError("empty tree: parents has no nodes")
        root = self._check_graph(order, plist)
        counts = self._check_counts(train_counts, plist)
        multi = [n for n in order if len(plist[n]) > 1]
        self.dag_projection: list[ProjectionChoice] = []
        if multi:
            if not dag_to_tree:
                n = multi[0]
                raise ValueError(
                    f"DAG: node {n!r} has {len(plist[n])} parents {_quote_list(plist[n])}"
                    + (f" ({len(multi)} multi-parent nodes in all)" if len(multi) > 1 else "")
                    + "; pass dag_to_tree=True to project it to a tree (paper 01 §4.1)"
                )
            plist = self._project_dag(order, plist, root, counts)
        parent = {n: (plist[n][0] if plist[n] else None) for n in order}
        self._build(order, parent, root, leaf_order)

    @staticmethod
    def _normalise_parents(parents: Mapping[str, Any]) -> tuple[list[str], dict[str, list[str]]]:
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
                raise TypeError(
                    f"parents[{child!r}] must be a str, None or a sequence of str, got {type(par).__name__}"
                )
            plist[child] = list(ps)
            for p in ps:
                see(p)
        return order, plist

    @staticmethod
    def _check_graph(order: list[str], plist: dict[str, list[str]]) -> str:
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

    @staticmethod
    def _check_counts(train_counts: Mapping[str, int] | None, plist: dict[str, list[str]]) -> dict[str, int]:
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

    def _project_dag(
        self, order: list[str], plist: dict[str, list[str]], root: str, counts: dict[str, int]
    ) -> dict[str, list[str]]:
        """Paper 01 §4.1 DAG -> tree rule (see :func:`hierviz.hierarchy.dag.project_dag`)."""
        out, choices = project_dag(order, plist, root, counts)
        self.dag_projection.extend(choices)
        return out

    def _build(
        self, order: list[str], parent: dict[str, str | None], root: str, leaf_order: Sequence[str] | None
    ) -> None:
        """Derive node/leaf orders and every cached table from a validated single-parent map."""
        kids: dict[str, list[str]] = {n: [] for n in order}
        for n in order:
            if parent[n] is not None:
                kids[parent[n]].append(n)
        natural = [n for n in order if not kids[n]]
        if leaf_order is None:
            leaves = natural
        else:
            leaves = self._check_leaf_order(leaf_order, natural, "leaf_order")
        if len(order) == 1:
            raise ValueError(
                f"tree has only the root {root!r}; it needs at least one leaf below the root "
                "(L = 0 leaves ρ = depth(lca)/L undefined)"
            )
        leaf_pos = {n: i for i, n in enumerate(leaves)}

        # Smallest leaf index below each node (post-order via reverse BFS).
        bfs = [root]
        for u in bfs:
            bfs.extend(kids[u])
        first_leaf = {n: leaf_pos.get(n, len(leaves)) for n in order}
        for u in reversed(bfs):
            if parent[u] is not None:
                p = parent[u]
                first_leaf[p] = min(first_leaf[p], first_leaf[u])
        children = {n: sorted(kids[n], key=first_leaf.__getitem__) for n in order}
        nodes = [root]
        for u in nodes:
            nodes.extend(children[u])

        self._root = root
        self._parent = dict(parent)
        self._children = children
        self._nodes = tuple(nodes)
        self._leaves = tuple(leaves)
        self._node_index = MappingProxyType({n: i for i, n in enumerate(nodes)})
        self._leaf_index = MappingProxyType(dict(leaf_pos))
        depth = {root: 0}
        for u in nodes[1:]:
            depth[u] = depth[parent[u]] + 1
        self._depth = depth
        self._height = max(depth[n] for n in leaves)
        self._device_cache: dict[tuple[str, str], torch.Tensor] = {}
        self._leaves_under_cache: dict[str, frozenset[str]] = {}
        self._make_tables()

    def _make_tables(self) -> None:
        N, C, L = len(self._nodes), len(self._leaves), self._height
        ni = self._node_index
        self._parent_index = torch.tensor(
            [-1 if self._parent[n] is None else ni[self._parent[n]] for n in self._nodes], dtype=torch.long
        )
        self._node_depth = torch.tensor([self._depth[n] for n in self._nodes], dtype=torch.long)
        self._leaf_node = torch.tensor([ni[n] for n in self._leaves], dtype=torch.long)
        self._leaf_depth = self._node_depth[self._leaf_node]
        paths = torch.empty(C, L + 1, dtype=torch.long)
        for i, leaf in enumerate(self._leaves):
            chain = [ni[a] for a in self.ancestors(leaf)]
            paths[i] = torch.tensor(chain + [chain[-1]] * (L + 1 - len(chain)))
        self._leaf_paths = paths
        anc = torch.zeros(C, N, dtype=torch.bool)
        anc.scatter_(1, paths, True)
        self._ancestor_matrix = anc
        # For leaves i != j the padded paths agree exactly on levels 0..depth(lca) (a leaf is
        # never an ancestor of another leaf, and padding repeats the leaf itself), so the
        # number k of agreeing levels >= 1 is depth(lca); on the diagonal k = L, and
        # min(k, depth(i)) = depth(i) covers both. The LCA is then the path entry at that level.
        # Cost: L passes over C x C small-int tables, no (C, C, L+1) intermediate.
        kdt = torch.uint8 if L < 255 else torch.int32
        k = torch.zeros(C, C, dtype=kdt)
        for level in range(1, L + 1):
            col = paths[:, level]
            k += col[:, None] == col[None, :]
        # small-int depth(lca) and in-place arithmetic: one (C, C) int64 temporary at a time
        # (issue 27 #15: a 10,000-leaf tree peaked at 4.8 GB here, now about half)
        lca_small = torch.minimum(k, self._leaf_depth[:, None].to(kdt))
        del k
        index = lca_small.long()
        self._lca_matrix = paths.gather(1, index)
        del index
        rho = lca_small.to(torch.float32)
        rho /= float(L)
        self._rho_matrix = rho
        dist = lca_small.long()
        del lca_small
        dist *= -2
        dist += self._leaf_depth[:, None]
        dist += self._leaf_depth[None, :]
        self._tree_distance_matrix = dist

    @staticmethod
    def _check_leaf_order(classes: Sequence[str], leaves: Sequence[str], argname: str) -> list[str]:
        if isinstance(classes, str) or not isinstance(classes, Iterable):
            raise TypeError(f"{argname} must be a sequence of leaf names, got {type(classes).__name__}")
        classes = list(classes)
        for c in classes:
            _check_name(c, f"{argname} entry")
        dup = sorted({c for c in classes if classes.count(c) > 1})
        have, want = set(classes), set(leaves)
        missing = [n for n in leaves if n not in have]
        extra = [n for n in classes if n not in want]
        problems = []
        if missing:
            problems.append(f"missing leaves {_quote_list(missing)}")
        if extra:
            problems.append(f"names that are not leaves of the tree {_quote_list(extra)}")
        if dup:
            problems.append(f"repeated names {_quote_list(dup)}")
        if problems:
            raise ValueError(f"{argname} must list every leaf exactly once: " + "; ".join(problems))
        return classes

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
                    f"d{where} must be a dict, a list of children or None, got {type(sub).__name__} {sub!r}"
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
                raise TypeError(f"paths[{i}] must be a sequence of names, got {type(path).__name__} {path!r}{hint}")
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

    def with_leaf_order(self, classes: Sequence[str]) -> LabelTree:
        """Same tree, leaf indices re-ordered to ``classes`` (e.g. a dataset's class list).

        Parameters
        ----------
        classes : Sequence[str]
            Every leaf name exactly once; ``classes[i]`` gets leaf index ``i``.

        Returns
        -------
        LabelTree
            A new tree (node order follows the new leaf order, see module notes).

        Raises
        ------
        ValueError
            Missing leaves, names that are not leaves, or repeated names (all named).
        TypeError
            ``classes`` is a bare string or holds non-strings.
        """
        new = object.__new__(type(self))
        new.name, new.source = self.name, self.source
        new.dag_projection = list(self.dag_projection)
        order = list(self._nodes)
        classes = self._check_leaf_order(classes, self._leaves, "classes")
        new._build(order, self._parent, self._root, classes)
        return new

    # ------------------------------------------------------------------ structure
    @property
    def root(self) -> str:
        """Name of the root node (depth 0)."""
        return self._root

    @property
    def nodes(self) -> list[str]:
        """All node names, breadth-first, root first (index = node index), length N."""
        return list(self._nodes)

    @property
    def leaves(self) -> list[str]:
        """Leaf names in label order (index = leaf index / class label), length C."""
        return list(self._leaves)

    @property
    def node_index(self) -> Mapping[str, int]:
        """Read-only map node name → node index in ``nodes``."""
        return self._node_index

    @property
    def leaf_index(self) -> Mapping[str, int]:
        """Read-only map leaf name → leaf index (label) in ``leaves``."""
        return self._leaf_index

    @property
    def num_nodes(self) -> int:
        """N, the number of nodes (root and internal nodes included)."""
        return len(self._nodes)

    @property
    def num_leaves(self) -> int:
        """C, the number of leaves (classes)."""
        return len(self._leaves)

    @property
    def height(self) -> int:
        """L, the maximum leaf depth (root depth 0); the normaliser of ρ (paper 01, Eq. 4)."""
        return self._height

    def _check_node(self, name: Any, arg: str = "name") -> str:
        if not isinstance(name, str):
            raise TypeError(f"{arg} must be a str node name, got {type(name).__name__} {name!r}")
        if name not in self._node_index:
            raise ValueError(
                f"{arg}: unknown node {name!r} (tree {self.name or self._root!r} has {self.num_nodes} nodes)"
            )
        return name

    def _check_leaf(self, name: Any, arg: str = "leaf") -> str:
        self._check_node(name, arg)
        if name not in self._leaf_index:
            raise ValueError(f"{arg}: {name!r} is an internal node, not a leaf")
        return name

    def parent(self, name: str) -> str | None:
        """Parent of ``name`` (``None`` for the root). Raises ValueError for an unknown name."""
        return self._parent[self._check_node(name)]

    def children(self, name: str) -> list[str]:
        """Children of ``name`` in node order (empty for a leaf). Raises ValueError for an unknown name."""
        return list(self._children[self._check_node(name)])

    def depth(self, name: str) -> int:
        """Depth of ``name`` (edges from the root; root 0). Raises ValueError for an unknown name."""
        return self._depth[self._check_node(name)]

    def is_leaf(self, name: str) -> bool:
        """Whether ``name`` is a leaf (a class). Raises ValueError for an unknown name."""
        return not self._children[self._check_node(name)]

    def ancestors(self, name: str, inclusive: bool = True) -> list[str]:
        """Ancestors of ``name`` from the root down (paper 01 §4.3 inclusive ancestor sets).

        Parameters
        ----------
        name : str
            Any node.
        inclusive : bool, default True
            Include ``name`` itself as the last element.

        Returns
        -------
        list of str
            ``[root, ..., parent(name)(, name)]``; ``[]`` for the root when not inclusive.

        Raises
        ------
        ValueError
            Unknown name.
        """
        self._check_node(name)
        chain = []
        n: str | None = name
        while n is not None:
            chain.append(n)
            n = self._parent[n]
        chain.reverse()
        return chain if inclusive else chain[:-1]

    def descendants(self, name: str) -> list[str]:
        """All proper descendants of ``name`` in node (breadth-first) order; ``[]`` for a leaf.

        Raises
        ------
        ValueError
            Unknown name.
        """
        self._check_node(name)
        out = list(self._children[name])
        for u in out:
            out.extend(self._children[u])
        return sorted(out, key=self._node_index.__getitem__)

    def leaves_under(self, name: str) -> list[str]:
        """Leaves in the subtree of ``name`` (itself for a leaf), in leaf order.

        Raises
        ------
        ValueError
            Unknown name.
        """
        return sorted(self._leaf_set(self._check_node(name)), key=self._leaf_index.__getitem__)

    def _leaf_set(self, name: str) -> frozenset[str]:
        cache = self._leaves_under_cache
        if name not in cache:
            # Iterative post-order over the uncached part of the subtree (any depth).
            order = [name]
            for u in order:
                if u not in cache:
                    order.extend(self._children[u])
            for u in reversed(order):
                if u not in cache:
                    ch = self._children[u]
                    cache[u] = frozenset([u]) if not ch else frozenset().union(*(cache[c] for c in ch))
        return cache[name]

    def siblings(self, name: str) -> list[str]:
        """Other children of ``name``'s parent, in node order (``[]`` for the root or an only child).

        Raises
        ------
        ValueError
            Unknown name.
        """
        p = self._parent[self._check_node(name)]
        return [] if p is None else [c for c in self._children[p] if c != name]

    def levels(self) -> list[list[str]]:
        """Nodes grouped by depth: ``levels()[ℓ]`` are the nodes at depth ℓ, ℓ = 0..L.

        Returns
        -------
        list of list of str
            ``L + 1`` lists in node order; level 0 is ``[root]``. A shallow leaf of an
            unbalanced tree appears only at its own depth (unlike ``leaf_paths``).
        """
        out: list[list[str]] = [[] for _ in range(self._height + 1)]
        for n in self._nodes:
            out[self._depth[n]].append(n)
        return out

    def level_nodes(self, level: int) -> list[str]:
        """Nodes at depth ``level`` (0 ≤ level ≤ L), in node order.

        Raises
        ------
        ValueError
            ``level`` outside [0, L].
        TypeError
            ``level`` is not an int.
        """
        return self.levels()[self._check_level(level)]

    def _check_level(self, level: Any) -> int:
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise TypeError(f"level must be an int, got {type(level).__name__}")
        if not 0 <= level <= self._height:
            raise ValueError(f"level must be in [0, L={self._height}], got {level}")
        return int(level)

    def lowest_seen_ancestor(self, leaf: str, seen_leaves: Iterable[str | int]) -> str:
        """Lowest Seen Ancestor of a leaf (paper 04, §III-D "Lowest Seen Ancestor").

        The LSA of an unseen leaf is the first ancestor, walking from the leaf towards
        the root, that is a class the model encountered in training, i.e. whose subtree
        contains at least one seen leaf.

        Parameters
        ----------
        leaf : str
            The (usually unseen) leaf.
        seen_leaves : iterable of str or int
            Leaves seen in training, by name or leaf index; must be non-empty.

        Returns
        -------
        str
            The LSA node name; ``leaf`` itself when the leaf is seen. The root when no
            lower ancestor has a seen leaf below it.

        Raises
        ------
        ValueError
            Unknown ``leaf``, ``leaf`` not a leaf, empty ``seen_leaves``, or an entry
            that is unknown, internal or an out-of-range index.
        TypeError
            An entry of ``seen_leaves`` that is neither str nor int.
        """
        self._check_leaf(leaf, "leaf")
        if isinstance(seen_leaves, (str, bytes)):
            seen_leaves = [seen_leaves]
        seen: set[str] = set()
        for s in seen_leaves:
            if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
                if not 0 <= s < self.num_leaves:
                    raise ValueError(f"seen_leaves has leaf index {int(s)} outside [0, {self.num_leaves - 1}]")
                seen.add(self._leaves[int(s)])
            elif isinstance(s, str):
                seen.add(self._check_leaf(s, "seen_leaves entry"))
            else:
                raise TypeError(f"seen_leaves entries must be leaf names or indices, got {type(s).__name__}")
        if not seen:
            raise ValueError("seen_leaves is empty: no ancestor can be 'seen'")
        for a in reversed(self.ancestors(leaf)):
            if self._leaf_set(a) & seen:
                return a
        return self._root  # unreachable: the root's subtree holds every seen leaf

    def encode(self, names: str | Iterable[str]) -> torch.Tensor:
        """Leaf names → leaf indices.

        Parameters
        ----------
        names : str or iterable of str
            One leaf name or a sequence of them.

        Returns
        -------
        torch.LongTensor
            Shape ``()`` for a single name, else ``(len(names),)``; values in [0, C-1].

        Raises
        ------
        ValueError
            Lists every unknown or non-leaf name.
        TypeError
            An entry is not a string.
        """
        single = isinstance(names, str)
        items = [names] if single else list(names)
        for x in items:
            if not isinstance(x, str):
                raise TypeError(f"names must hold str leaf names, got {type(x).__name__} {x!r}")
        bad = [x for x in items if x not in self._leaf_index]
        if bad:
            internal = [x for x in bad if x in self._node_index]
            unknown = [x for x in bad if x not in self._node_index]
            parts = []
            if unknown:
                parts.append(f"unknown leaf names {_quote_list(dict.fromkeys(unknown))}")
            if internal:
                parts.append(f"internal (non-leaf) nodes {_quote_list(dict.fromkeys(internal))}")
            raise ValueError("names: " + "; ".join(parts) + f"; leaves are {_quote_list(self._leaves)}")
        out = torch.tensor([self._leaf_index[x] for x in items], dtype=torch.long)
        return out[0] if single else out

    # ------------------------------------------------------------------ cached tensors
    @property
    def parent_index(self) -> torch.Tensor:
        """(N,) long: node index of each node's parent, ``-1`` for the root. Do not modify in place."""
        return self._parent_index

    @property
    def node_depth(self) -> torch.Tensor:
        """(N,) long: depth of each node (root 0). Do not modify in place."""
        return self._node_depth

    @property
    def leaf_node(self) -> torch.Tensor:
        """(C,) long: node index of each leaf. Do not modify in place."""
        return self._leaf_node

    @property
    def leaf_depth(self) -> torch.Tensor:
        """(C,) long: depth of each leaf, in [1, L]. Do not modify in place."""
        return self._leaf_depth

    @property
    def leaf_paths(self) -> torch.Tensor:
        """(C, L+1) long: node index of each leaf's ancestor at level ℓ = 0..L.

        Column 0 is the root, the entry at the leaf's own depth is the leaf; a leaf
        shallower than ℓ repeats itself in column ℓ. Do not modify in place.
        """
        return self._leaf_paths

    @property
    def ancestor_matrix(self) -> torch.Tensor:
        """(C, N) bool: ``[i, n]`` is True iff node n is an inclusive ancestor of leaf i."""
        return self._ancestor_matrix

    @property
    def lca_matrix(self) -> torch.Tensor:
        """(C, C) long: node index of the lowest common ancestor of two leaves (diagonal: the leaf)."""
        return self._lca_matrix

    @property
    def rho_matrix(self) -> torch.Tensor:
        """(C, C) float32: ρ = depth(lca)/L in [0, 1] (paper 01, Eq. 4); symmetric.

        1 for the same leaf at depth L, ``1 - 1/L`` for depth-L siblings, 0 when the
        LCA is the root; a shallow leaf's diagonal is ``depth/L`` (see class Notes).
        """
        return self._rho_matrix

    @property
    def tree_distance_matrix(self) -> torch.Tensor:
        """(C, C) long: d_T = depth(a) + depth(b) − 2·depth(lca(a, b)), edges on the tree path."""
        return self._tree_distance_matrix

    # ------------------------------------------------------------------ vectorised queries
    def _on(self, attr: str, device: torch.device) -> torch.Tensor:
        t = getattr(self, attr)
        if t.device == device:
            return t
        key = (attr, str(device))
        if key not in self._device_cache:
            self._device_cache[key] = t.to(device)
        return self._device_cache[key]

    def _labels(self, labels: Any, arg: str = "labels") -> torch.Tensor:
        if isinstance(labels, torch.Tensor):
            t = labels
        else:
            if isinstance(labels, (str, bytes)):
                raise TypeError(f"{arg} must be integer leaf indices; use tree.encode(names) for names")
            arr = np.asarray(labels)
            if arr.dtype == object:
                raise TypeError(f"{arg} must be integer leaf indices, got objects of type {type(arr.flat[0]).__name__}")
            t = torch.as_tensor(arr)
        if t.dtype not in _INT_DTYPES:
            raise TypeError(f"{arg} must hold integer leaf indices, got dtype {t.dtype}")
        t = t.long()
        if t.numel():
            lo, hi = int(t.min()), int(t.max())
            if lo < 0 or hi >= self.num_leaves:
                raise ValueError(
                    f"{arg} has leaf indices outside [0, {self.num_leaves - 1}] (C = {self.num_leaves}): "
                    f"min {lo}, max {hi}"
                )
        return t

    def ancestor_at_level(self, labels: Any, level: int) -> torch.Tensor:
        """Node index of each label's ancestor at depth ``level`` (a gather from ``leaf_paths``).

        Parameters
        ----------
        labels : LongTensor or array-like of int, any shape
            Leaf indices in [0, C-1].
        level : int
            0 ≤ level ≤ L. A leaf shallower than ``level`` maps to itself.

        Returns
        -------
        torch.LongTensor
            Same shape and device as ``labels``; node indices in [0, N-1].

        Raises
        ------
        ValueError
            Leaf index out of range or ``level`` outside [0, L].
        TypeError
            Non-integer labels or level.
        """
        lvl = self._check_level(level)
        t = self._labels(labels)
        return self._on("_leaf_paths", t.device)[:, lvl][t]

    def lca(self, a: Any, b: Any) -> torch.Tensor:
        """Node index of the lowest common ancestor of leaves ``a`` and ``b`` (broadcast).

        Parameters
        ----------
        a, b : LongTensor or array-like of int
            Leaf indices in [0, C-1], broadcastable shapes (e.g. ``y[:, None], y[None, :]``).

        Returns
        -------
        torch.LongTensor
            Broadcast shape; node indices in [0, N-1].

        Raises
        ------
        ValueError
            Leaf index out of range or shapes that do not broadcast.
        TypeError
            Non-integer labels.
        """
        return self._pair("_lca_matrix", a, b)

    def rho(self, a: Any, b: Any) -> torch.Tensor:
        """ρ(a, b) = depth(lca(a, b)) / L (paper 01, Eq. 4), gathered from ``rho_matrix``.

        Parameters
        ----------
        a, b : LongTensor or array-like of int
            Leaf indices in [0, C-1], broadcastable; ``rho(y[:, None], y[None, :])`` is
            the (B, B) matrix HWC uses.

        Returns
        -------
        torch.FloatTensor
            float32, broadcast shape, values in [0, 1].

        Raises
        ------
        ValueError
            Leaf index out of range or shapes that do not broadcast.
        TypeError
            Non-integer labels.
        """
        return self._pair("_rho_matrix", a, b)

    def tree_distance(self, a: Any, b: Any) -> torch.Tensor:
        """Tree distance d_T(a, b): number of edges between leaves ``a`` and ``b`` (broadcast).

        Parameters
        ----------
        a, b : LongTensor or array-like of int
            Leaf indices in [0, C-1], broadcastable.

        Returns
        -------
        torch.LongTensor
            Broadcast shape, values in [0, 2L]; 0 iff a == b.

        Raises
        ------
        ValueError
            Leaf index out of range or shapes that do not broadcast.
        TypeError
            Non-integer labels.
        """
        return self._pair("_tree_distance_matrix", a, b)

    def _pair(self, attr: str, a: Any, b: Any) -> torch.Tensor:
        ta, tb = self._labels(a, "a"), self._labels(b, "b")
        if ta.device != tb.device:
            raise ValueError(f"a and b are on different devices ({ta.device}, {tb.device})")
        table = self._on(attr, ta.device)
        if ta.dim() == 2 and tb.dim() == 2 and ta.shape[1] == 1 and tb.shape[0] == 1:
            # Outer pattern y[:, None], y2[None, :]: two index_selects beat broadcast advanced
            # indexing (about 5x at B = 256 on CPU, see benchmarks/bench_tree.py).
            return table.index_select(0, ta[:, 0]).index_select(1, tb[0])
        try:
            ta, tb = torch.broadcast_tensors(ta, tb)
        except RuntimeError as e:
            raise ValueError(f"a {tuple(ta.shape)} and b {tuple(tb.shape)} do not broadcast") from e
        return table[ta, tb]

    def ancestor_mask(self, labels: Any) -> torch.Tensor:
        """Inclusive ancestor indicator of each label over all nodes.

        Parameters
        ----------
        labels : LongTensor or array-like of int, shape (...)
            Leaf indices in [0, C-1].

        Returns
        -------
        torch.BoolTensor
            Shape ``(..., N)``; ``[..., n]`` is True iff node n is on the root → leaf
            path (root and the leaf included) — the ancestor sets of HF1 / H-Acc.

        Raises
        ------
        ValueError
            Leaf index out of range.
        TypeError
            Non-integer labels.
        """
        t = self._labels(labels)
        return self._on("_ancestor_matrix", t.device)[t]

    # ------------------------------------------------------------------ display / dunder
    def __str__(self) -> str:
        lines = [self._root]
        # Iterative depth-first rendering (any depth).
        stack = [
            (c, "", i == len(self._children[self._root]) - 1)
            for i, c in reversed(list(enumerate(self._children[self._root])))
        ]
        while stack:
            c, prefix, last = stack.pop()
            tag = f"  [{self._leaf_index[c]}]" if c in self._leaf_index else ""
            lines.append(f"{prefix}{'└── ' if last else '├── '}{c}{tag}")
            ch = self._children[c]
            sub = prefix + ("    " if last else "│   ")
            stack.extend((g, sub, j == len(ch) - 1) for j, g in reversed(list(enumerate(ch))))
        return "\n".join(lines)

    def __repr__(self) -> str:
        nm = f"{self.name!r}, " if self.name else ""
        return f"LabelTree({nm}root={self._root!r}, N={self.num_nodes}, C={self.num_leaves}, L={self._height})"

    def __len__(self) -> int:
        return len(self._nodes)

    def _key(self) -> tuple:
        return (tuple(sorted((n, p or "") for n, p in self._parent.items())), self._leaves)

    def __eq__(self, other: object) -> bool:
        """Structural equality: same edges and same leaf order (name/source ignored)."""
        if not isinstance(other, LabelTree):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def tree_from_obj(obj: Any, *, where: str = "<source>", name: str = "") -> LabelTree:
    """Build a :class:`~hierviz.hierarchy.LabelTree` from parsed tree JSON in any of the four forms.

    Parameters
    ----------
    obj : dict or list
        A parent map, a nested dict, a paths list or the full form (told apart by
        :func:`detect_tree_form`).
    where : str, optional
        The file or source, the first word of every error message.
    name : str, optional
        The tree's name when ``obj`` carries none (e.g. the file's stem).

    Returns
    -------
    LabelTree
        Leaf order: the full form's ``"leaf_order"`` if given, else first appearance
        (parent map keys, paths) or depth-first order (nested dict).

    Raises
    ------
    ValueError
        The form or the tree is refused (fits no form, unknown keys, a string boolean,
        cycles, duplicate names, ...); one line starting with ``where``.

    Examples
    --------
    >>> tree_from_obj([["r", "a", "x"], ["r", "b"]]).leaves
    ['x', 'b']
    >>> tree_from_obj({"parents": {"x": "r"}, "dag_to_tree": "false"}, where="t.json")
    Traceback (most recent call last):
    ...
    ValueError: t.json: dag_to_tree must be a JSON boolean (true/false), got the string "false"; write true or false without quotes
    """
    try:
        return _tree_from_full(_as_full(obj, name), LabelTree)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None
