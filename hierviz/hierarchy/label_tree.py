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

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import torch

from hierviz.hierarchy._tree_checks import (
    _quote_list,
    check_counts,
    check_graph,
    check_leaf_order,
    normalise_parents,
)
from hierviz.hierarchy._tree_forms import TreeForms
from hierviz.hierarchy._tree_queries import TreeQueries
from hierviz.hierarchy.dag import ProjectionChoice, project_dag
from hierviz.hierarchy.io import _as_full, _tree_from_full

__all__ = ["LabelTree", "ProjectionChoice", "dfs_leaves", "leaf_parent", "tree_from_obj"]


class LabelTree(TreeForms, TreeQueries):
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

    _normalise_parents = staticmethod(normalise_parents)
    _check_graph = staticmethod(check_graph)

    _check_counts = staticmethod(check_counts)

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
        # (a 10,000-leaf tree peaked at 4.8 GB here before; this keeps it to about half)
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

    _check_leaf_order = staticmethod(check_leaf_order)

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


def dfs_leaves(tree: LabelTree) -> list[str]:
    """Leaves in depth-first (pre-order) order of the tree, children in stored order.

    Every subtree's leaves form one contiguous run, so siblings are adjacent: the order in
    which a tree drawing places leaves side by side, and in which the triplet sampler walks
    subtrees. It can differ from ``tree.leaves``, the label order (first appearance in a
    parent map, for one).

    Parameters
    ----------
    tree : LabelTree

    Returns
    -------
    list of str
        All ``tree.num_leaves`` leaf names.

    Examples
    --------
    >>> t = tree_from_obj({"a1": "a", "b1": "b", "a2": "a", "a": "r", "b": "r"})
    >>> t.leaves, dfs_leaves(t)
    (['a1', 'b1', 'a2'], ['a1', 'a2', 'b1'])
    """
    out: list[str] = []
    stack = [tree.root]
    while stack:
        node = stack.pop()
        kids = tree.children(node)
        if not kids:
            out.append(node)
        else:
            stack.extend(reversed(kids))
    return out


def leaf_parent(tree: LabelTree, leaf: str) -> str:
    """The parent node of ``leaf`` (the leaf itself for a single-node tree, whose root is its only leaf).

    Examples
    --------
    >>> t = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> leaf_parent(t, "a2"), leaf_parent(t, "b1")
    ('a', 'b')
    """
    p = tree.parent(leaf)
    return leaf if p is None else p
