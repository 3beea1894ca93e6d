"""The DAG → tree projection of paper 01 §4.1 (a label graph with several parents per node).

:class:`~hierviz.hierarchy.LabelTree` calls :func:`project_dag` when built with
``dag_to_tree=True`` and records each decision as a :class:`ProjectionChoice`.
"""

from __future__ import annotations

import warnings
from collections import deque
from dataclasses import dataclass

__all__ = ["ProjectionChoice", "project_dag"]


def _quote_list(names, limit: int = 12) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


@dataclass(frozen=True)
class ProjectionChoice:
    """One decision of the DAG → tree projection (paper 01 §4.1, "ODIR (DAG → tree)").

    Attributes
    ----------
    node : str
        The node that had several parents in the DAG.
    kept : str
        The parent it keeps in the tree.
    dropped : tuple of str
        The parents whose edge to ``node`` was removed (sorted).
    rule : str
        Which rule decided: ``"depth"`` (kept parent is strictly shallowest),
        ``"train_counts"`` (tie on depth, kept parent's subtree is strictly more
        frequent in the training counts) or ``"lexicographic"`` (all else tied,
        smallest name wins).
    """

    node: str
    kept: str
    dropped: tuple[str, ...]
    rule: str


def project_dag(
    order: list[str], plist: dict[str, list[str]], root: str, counts: dict[str, int]
) -> tuple[dict[str, list[str]], list[ProjectionChoice]]:
    """Project a DAG onto a tree (paper 01 §4.1): keep one parent per node.

    The kept parent is the shallowest one (shortest path from the root); ties go to the
    parent whose subtree holds more training samples (``counts``), then to the smallest
    name.

    Parameters
    ----------
    order : list of str
        Node names in first-appearance order.
    plist : dict of str to list of str
        Node -> its parents (several for DAG nodes).
    root : str
    counts : dict of str to int
        Training samples per node (missing = 0).

    Returns
    -------
    parents : dict of str to list of str
        Node -> ``[kept parent]`` (``[]`` for the root).
    choices : list of ProjectionChoice
        One per node that had several parents, naming the rule that decided.

    Warns
    -----
    UserWarning
        When the projection leaves an internal node without children.
    """
    choices: list[ProjectionChoice] = []
    children: dict[str, list[str]] = {n: [] for n in order}
    for n in order:
        for p in plist[n]:
            children[p].append(n)
    depth = {root: 0}  # shortest-path depth in the DAG
    queue = deque([root])
    while queue:
        u = queue.popleft()
        for c in children[u]:
            if c not in depth:
                depth[c] = depth[u] + 1
                queue.append(c)
    freq_cache: dict[str, int] = {}

    def subtree_freq(p: str) -> int:
        if p not in freq_cache:
            seen = {p}
            stack = [p]
            while stack:
                for c in children[stack.pop()]:
                    if c not in seen:
                        seen.add(c)
                        stack.append(c)
            freq_cache[p] = sum(counts.get(x, 0) for x in seen)
        return freq_cache[p]

    out = {n: list(ps) for n, ps in plist.items()}
    for n in order:
        ps = plist[n]
        if len(ps) < 2:
            continue
        ranked = sorted(ps, key=lambda p: (depth[p], -subtree_freq(p), p))
        best, second = ranked[0], ranked[1]
        if depth[best] < depth[second]:
            rule = "depth"
        elif subtree_freq(best) > subtree_freq(second):
            rule = "train_counts"
        else:
            rule = "lexicographic"
        out[n] = [best]
        choices.append(ProjectionChoice(n, best, tuple(sorted(ranked[1:])), rule))
    orphaned = [n for n in order if children[n] and not any(out[c] == [n] for c in children[n])]
    if orphaned:
        warnings.warn(
            f"DAG -> tree projection left {_quote_list(orphaned)} without children; "
            "they are leaves of the projected tree",
            stacklevel=4,
        )
    return out, choices
