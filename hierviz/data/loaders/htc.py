"""Hierarchical text classification (HTC) data: texts with multi-label targets over a label tree.

An :class:`HTCData` holds raw texts, boolean targets ``(N, tree.num_nodes)`` in ``tree.nodes``
order (every label on each of a document's paths; the root column is always False), the tree
and a ``train``/``val``/``test`` split. Sources:

* :func:`load_20news_htc` — 20 Newsgroups (``text/20news-bydate.tar.gz``, read by
  :func:`hierviz.data.loaders.newsgroups.read_20news_tar`) on the ``20news`` tree from the dotted
  group names (2–3 levels); a document's target is its group's full path (single path, decoded
  multi-label). Without the tarball (and no folder named) it uses the loader's
  :func:`~hierviz.data.loaders.newsgroups.synthetic_corpus` stand-in.
* :func:`synthetic_htc` — a random tree and documents on one to several paths (multi-path),
  words drawn along each path: for tests and SMOKE runs.
* :func:`load_htc_jsonl` — the files ``data_scripts/{wos,rcv1,nyt,bgc}.py`` write from a local
  copy of WOS, RCV1-V2, NYT or BGC (one JSON object per line, ``{"text", "labels", "split"}``,
  and a tree JSON beside it); the parsers of those corpora are here (:func:`read_wos`,
  :func:`read_rcv1`, :func:`read_hiagm_jsonl`, :func:`read_bgc`) so they are tested.

Examples
--------
>>> d = synthetic_htc(n_docs=40, seed=0)
>>> d.targets.shape == (40, d.tree.num_nodes), sorted(set(d.split.tolist()))
(True, ['test', 'train', 'val'])
>>> bool(d.targets[:, d.tree.node_index[d.tree.root]].any())
False
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.data.loaders import newsgroups as ng
from hierviz.data.trees import load_tree
from hierviz.hierarchy import LabelTree

__all__ = [
    "HTCData",
    "HTC_DATASETS",
    "paths_to_targets",
    "targets_to_labels",
    "load_20news_htc",
    "synthetic_htc",
    "load_htc",
    "load_htc_jsonl",
    "write_htc_jsonl",
    "read_wos",
    "read_rcv1",
    "read_hiagm_jsonl",
    "read_bgc",
]


@dataclass
class HTCData:
    """Texts with hierarchical multi-label targets.

    Attributes
    ----------
    texts : list of str
    targets : numpy.ndarray, shape (N, tree.num_nodes), bool
        ``tree.nodes`` order; ancestors of every true label are true; root column False.
    tree : LabelTree
    split : numpy.ndarray, shape (N,), str
        ``"train"``, ``"val"`` or ``"test"``.
    name : str
    """

    texts: list[str]
    targets: np.ndarray
    tree: LabelTree
    split: np.ndarray
    name: str = ""

    def __post_init__(self) -> None:
        n = len(self.texts)
        if self.targets.shape != (n, self.tree.num_nodes):
            raise ValueError(f"targets must have shape ({n}, {self.tree.num_nodes}), got {self.targets.shape}")
        if self.split.shape != (n,):
            raise ValueError(f"split must have shape ({n},), got {self.split.shape}")

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, mask: np.ndarray) -> HTCData:
        """The rows where ``mask`` is True (bool ``(N,)``) or the given indices."""
        idx = np.flatnonzero(mask) if np.asarray(mask).dtype == bool else np.asarray(mask)
        return HTCData([self.texts[i] for i in idx], self.targets[idx], self.tree, self.split[idx], self.name)

    def part(self, split: str) -> HTCData:
        """The rows of one split (``"train"``, ``"val"`` or ``"test"``)."""
        return self.subset(self.split == split)


def paths_to_targets(labels: Sequence[Iterable[str]], tree: LabelTree) -> np.ndarray:
    """Multi-hot targets from each document's label names, closed upwards (all ancestors set).

    Parameters
    ----------
    labels : sequence of iterables of str
        Per document, any labels (leaves or inner nodes) of ``tree``.
    tree : LabelTree

    Returns
    -------
    numpy.ndarray, shape (N, tree.num_nodes), bool
        Root column False.

    Raises
    ------
    ValueError
        A label that is not a node of ``tree`` (named, with the document index).

    Examples
    --------
    >>> t = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> paths_to_targets([["a1"], ["a2", "b1"]], t).astype(int).tolist()
    [[0, 1, 0, 1, 0, 0], [0, 1, 1, 0, 1, 1]]
    """
    idx = tree.node_index
    out = np.zeros((len(labels), tree.num_nodes), dtype=bool)
    for i, names in enumerate(labels):
        for n in names:
            if n not in idx:
                raise ValueError(f"document {i}: label {n!r} is not a node of the tree {tree.name or ''}".rstrip())
            for a in tree.ancestors(n):
                out[i, idx[a]] = True
    out[:, idx[tree.root]] = False
    return out


def targets_to_labels(targets: np.ndarray, tree: LabelTree, leaves_only: bool = False) -> list[list[str]]:
    """Label names of each row of a boolean target/prediction array (``tree.nodes`` order).

    Parameters
    ----------
    targets : numpy.ndarray, shape (N, tree.num_nodes), bool
    tree : LabelTree
    leaves_only : bool, default False
        Keep only the most specific labels (those with no predicted child).

    Returns
    -------
    list of list of str
    """
    t = np.asarray(targets, dtype=bool)
    nodes = tree.nodes
    out = []
    for row in t:
        names = [nodes[j] for j in np.flatnonzero(row) if nodes[j] != tree.root]
        if leaves_only:
            s = set(names)
            names = [n for n in names if not any(c in s for c in tree.children(n))]
        out.append(names)
    return out


def _val_split(split: np.ndarray, rng: np.random.Generator, frac: float = 0.1) -> np.ndarray:
    """Move ``frac`` of the training rows (at random) to ``"val"``."""
    split = split.astype(object).copy()
    tr = np.flatnonzero(split == "train")
    n = max(1, int(round(frac * len(tr)))) if len(tr) > 1 else 0
    split[rng.choice(tr, size=n, replace=False)] = "val"
    return split.astype(str)


def load_20news_htc(
    data_dir: str | PathLike | None = None,
    *,
    synthetic: bool | None = None,
    max_train: int | None = None,
    max_test: int | None = None,
    seed: int = 0,
) -> HTCData:
    """20 Newsgroups as HTC: targets are the full path of the group in the ``20news`` tree.

    The official bydate split gives ``train``/``test``; 10 % of the training messages (at random,
    ``seed``) become ``val``. The tree has 7 first-level nodes, 3 inner second-level nodes
    (comp.sys, rec.sport, talk.politics) and the 20 groups at depth 2 or 3.

    Parameters
    ----------
    data_dir : str or PathLike, optional
        Folder with ``text/20news-bydate.tar.gz`` (default ``$HIERVIZ_DATA``, ``../shared/data``).
    synthetic : bool or None, default None
        As :func:`hierviz.data.loaders.newsgroups.load_20news`: ``None`` falls back to the
        synthetic stand-in when no tarball is found and no folder was named.
    max_train, max_test : int, optional
        Keep a random subset of this many training (before the val cut) / test messages.
    seed : int, default 0

    Returns
    -------
    HTCData

    Raises
    ------
    FileNotFoundError
        No tarball, and the synthetic stand-in is not allowed.
    """
    texts, labels, groups, split, stand_in = ng.read_corpus(data_dir, synthetic, seed=seed)
    name = "20news (synthetic stand-in)" if stand_in else "20news"
    rng = np.random.default_rng(seed)
    keep = np.ones(len(texts), dtype=bool)
    for part, cap in (("train", max_train), ("test", max_test)):
        rows = np.flatnonzero(split == part)
        if cap is not None and cap < len(rows):
            keep[rng.choice(rows, size=len(rows) - cap, replace=False)] = False
    idx = np.flatnonzero(keep)
    tree = load_tree("20news")
    targets = paths_to_targets([[groups[labels[i]]] for i in idx], tree)
    return HTCData([texts[i] for i in idx], targets, tree, _val_split(split[idx], rng), name)


def _random_tree(rng: np.random.Generator, branching: Sequence[int]) -> LabelTree:
    """A tree with ``branching[l]`` (±1 at random, at least 1) children per node at depth l."""
    parents: dict[str, str | None] = {"root": None}
    frontier = ["root"]
    for level, b in enumerate(branching, start=1):
        nxt = []
        for p in frontier:
            for k in range(max(1, b + int(rng.integers(-1, 2)))):
                n = f"L{level}_{len(parents)}" if p == "root" else f"{p}.{k}"
                parents[n] = p
                nxt.append(n)
        frontier = nxt
    return LabelTree(parents, name="synthetic-htc")


def synthetic_htc(
    n_docs: int = 300,
    *,
    branching: Sequence[int] = (4, 3, 2),
    max_paths: int = 2,
    words: int = 30,
    seed: int = 0,
    tree: LabelTree | None = None,
) -> HTCData:
    """Synthetic multi-path HTC documents on a random (or given) tree.

    Each document takes 1..``max_paths`` random leaves; every node owns 8 pseudo-words, and a
    document's ``words`` tokens are drawn from the nodes on its paths (weight growing with
    depth) plus a quarter from a shared pool, so labels are learnable from the text and sibling
    labels share their parent's words. 70 % / 10 % / 20 % train / val / test.

    Parameters
    ----------
    n_docs : int, default 300
    branching : sequence of int, default (4, 3, 2)
        Children per node per level (each ±1 at random); ignored when ``tree`` is given.
    max_paths : int, default 2
    words : int, default 30
    seed : int, default 0
    tree : LabelTree, optional

    Returns
    -------
    HTCData

    Raises
    ------
    ValueError
        ``n_docs < 3``, ``max_paths < 1`` or ``words < 4``.
    """
    for nm, v, lo in (("n_docs", n_docs, 3), ("max_paths", max_paths, 1), ("words", words, 4)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{nm} must be an integer >= {lo}, got {v!r}")
    rng = np.random.default_rng(seed)
    tree = tree if tree is not None else _random_tree(rng, branching)
    vocab = {n: [f"w{i}x{k}" for k in range(8)] for i, n in enumerate(tree.nodes)}
    shared = [f"common{k}" for k in range(40)]
    leaves = tree.leaves
    texts, labels = [], []
    for _ in range(n_docs):
        chosen = list(rng.choice(leaves, size=min(len(leaves), int(rng.integers(1, max_paths + 1))), replace=False))
        path = [n for leaf in chosen for n in tree.ancestors(str(leaf)) if n != tree.root]
        w = np.array([tree.depth(n) for n in path], dtype=float)
        w /= w.sum()
        n_sh = words // 4
        toks = [vocab[path[j]][rng.integers(8)] for j in rng.choice(len(path), size=words - n_sh, p=w)]
        toks += [shared[rng.integers(len(shared))] for _ in range(n_sh)]
        rng.shuffle(toks)
        texts.append(" ".join(toks))
        labels.append([str(x) for x in chosen])
    u = rng.random(n_docs)
    split = np.where(u < 0.7, "train", np.where(u < 0.8, "val", "test"))
    split[:3] = ["train", "val", "test"]  # every split non-empty
    return HTCData(texts, paths_to_targets(labels, tree), tree, split.astype(str), "synthetic-htc")


# ------------------------------------------------------------------ files from data_scripts/
def write_htc_jsonl(
    path: str | PathLike, texts: Sequence[str], labels: Sequence[Sequence[str]], split: Sequence[str]
) -> None:
    """Write ``{"text", "labels", "split"}`` per line (UTF-8), the format :func:`load_htc_jsonl` reads."""
    with open(path, "w", encoding="utf-8") as f:
        for t, ls, s in zip(texts, labels, split, strict=True):
            f.write(json.dumps({"text": t, "labels": list(ls), "split": s}, ensure_ascii=False) + "\n")


def load_htc_jsonl(
    path: str | PathLike, tree: LabelTree | str | PathLike | None = None, *, val_fraction: float = 0.1, seed: int = 0
) -> HTCData:
    """Read an HTC JSON-lines file (``data_scripts/{wos,rcv1,nyt,bgc}.py``) and its tree.

    Parameters
    ----------
    path : str or PathLike
        One ``{"text": str, "labels": [names], "split": "train"|"val"|"test"}`` per line.
    tree : LabelTree or path, optional
        Default: ``<stem>_tree.json`` beside the file (``wos_htc.jsonl`` → ``wos_tree.json``).
    val_fraction : float, default 0.1
        When the file has no ``"val"`` row, this fraction of ``"train"`` becomes ``"val"``.
    seed : int, default 0

    Returns
    -------
    HTCData

    Raises
    ------
    FileNotFoundError
        The file or its tree is missing (names both and the script that makes them).
    ValueError
        A malformed line (file and line number) or an unknown label.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such HTC file; make one with data_scripts/{{wos,rcv1,nyt,bgc}}.py")
    if tree is None or not isinstance(tree, LabelTree):
        tp = Path(tree) if tree is not None else p.with_name(p.name.replace("_htc.jsonl", "") + "_tree.json")
        if not tp.is_file():
            raise FileNotFoundError(f"{tp}: the tree of {p} is missing; pass tree= or keep <name>_tree.json beside it")
        tree = LabelTree.from_json(tp)
    texts, labels, split = [], [], []
    fmt = '{"text": "...", "labels": ["a", "a1"], "split": "train"}'
    try:
        with open(p, encoding="utf-8") as f:
            for ln, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"{p}:{ln}: not a JSON line ({exc}); each line must be {fmt}") from None
                if not isinstance(o, dict) or "text" not in o or "labels" not in o:
                    raise ValueError(f"{p}:{ln}: each line must be an object {fmt}, got {str(o)[:60]!r}")
                text, labs = o["text"], o["labels"]
                if not isinstance(text, str):  # null would become the text "None"
                    raise ValueError(f'{p}:{ln}: "text" must be a string, got {json.dumps(text)[:40]}')
                if not isinstance(labs, list) or not all(isinstance(x, str) for x in labs):
                    # a bare string "a1" would be split into characters
                    raise ValueError(
                        f'{p}:{ln}: "labels" must be a list of label names (e.g. ["a", "a1"]), '
                        f"got {json.dumps(labs)[:40]}"
                    )
                texts.append(text)
                labels.append(labs)
                split.append(str(o.get("split", "train")))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the file as UTF-8") from None
    if len(texts) < 2:
        raise ValueError(
            f"{p}: holds {len(texts)} document(s); an HTC dataset needs at least 2 (train and test), "
            f"one JSON line each: {fmt}"
        )
    sp = np.array(split)
    bad = sorted(set(sp.tolist()) - {"train", "val", "test"})
    if bad:
        raise ValueError(f"{p}: split must be train, val or test, got {bad}")
    if not (sp == "val").any():
        sp = _val_split(sp, np.random.default_rng(seed), val_fraction)
    return HTCData(texts, paths_to_targets(labels, tree), tree, sp, p.stem.replace("_htc", ""))


def read_wos(folder: str | PathLike, seed: int = 0) -> tuple[list[str], list[list[str]], LabelTree, list[str]]:
    """WOS-46985 (Kowsari et al. 2017) from its ``X.txt``, ``YL1.txt``, ``YL2.txt`` (one line per document).

    The tree is domain (``YL1``) → area (``YL2`` within the domain), labelled ``d<YL1>`` and
    ``d<YL1>.a<YL2>``. WOS has no official split: 20 % test at random (``seed``), as in HiAGM.

    Returns
    -------
    texts, labels, tree, split
    """
    f = Path(folder)
    files = {n: f / f"{n}.txt" for n in ("X", "YL1", "YL2")}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"WOS: missing {missing}; point --from-dir at the WOS46985 folder (X.txt, YL1.txt, ...)"
        )
    X = files["X"].read_text(encoding="utf-8", errors="replace").splitlines()
    y1 = files["YL1"].read_text().split()
    y2 = files["YL2"].read_text().split()
    if not len(X) == len(y1) == len(y2):
        raise ValueError(f"WOS: X.txt ({len(X)}), YL1.txt ({len(y1)}), YL2.txt ({len(y2)}) differ in length")
    labels = [[f"d{a}", f"d{a}.a{b}"] for a, b in zip(y1, y2, strict=True)]
    tree = LabelTree.from_paths(sorted({("root", *ls) for ls in labels}), name="wos")
    rng = np.random.default_rng(seed)
    split = np.where(rng.random(len(X)) < 0.2, "test", "train").tolist()
    return X, [[ls[-1]] for ls in labels], tree, split


def _tree_from_edges(edges: Iterable[tuple[str, str]], root: str, name: str) -> LabelTree:
    parents: dict[str, str | None] = {root: None}
    for p, c in edges:
        if c != root and c not in parents:
            parents[c] = p
    return LabelTree(parents, name=name)


def read_rcv1(folder: str | PathLike) -> tuple[list[str], list[list[str]], LabelTree, list[str]]:
    """RCV1-V2 (Lewis et al. 2004) from the LYRL2004 files: ``rcv1.topics.hier.orig``,
    ``rcv1-v2.topics.qrels`` and ``lyrl2004_tokens_{train,test_pt0..3}.dat``.

    The hierarchy file's lines are ``parent: X child: Y child-description: ...`` (root
    ``Root``); the qrels lines ``topic docid 1``; the token files ``.I docid`` / ``.W`` blocks.
    The official LYRL2004 split (train 23,149 / test 781,265) is kept.

    Returns
    -------
    texts, labels, tree, split
    """
    f = Path(folder)
    hier, qrels = f / "rcv1.topics.hier.orig", f / "rcv1-v2.topics.qrels"
    for p in (hier, qrels):
        if not p.is_file():
            raise FileNotFoundError(f"RCV1-V2: missing {p}; point --from-dir at the folder with the LYRL2004 files")
    edges = []
    for line in hier.read_text(encoding="latin-1").splitlines():
        m = re.match(r"\s*parent:\s*(\S+)\s+child:\s*(\S+)", line)
        if m and m.group(1) != "None":
            edges.append((m.group(1), m.group(2)))
    tree = _tree_from_edges(edges, "Root", "rcv1-v2")
    topics: dict[str, list[str]] = {}
    for line in qrels.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            topics.setdefault(parts[1], []).append(parts[0])
    texts, labels, split = [], [], []
    token_files = sorted(f.glob("lyrl2004_tokens_*.dat"))
    if not token_files:
        raise FileNotFoundError(f"RCV1-V2: no lyrl2004_tokens_*.dat in {f}")
    for tf in token_files:
        part = "train" if "train" in tf.name else "test"
        for block in tf.read_text(encoding="latin-1").split(".I ")[1:]:
            head, _, body = block.partition("\n")
            doc = head.strip()
            if doc in topics:
                texts.append(" ".join(body.replace(".W", " ").split()))
                labels.append(topics[doc])
                split.append(part)
    return texts, labels, tree, split


def read_hiagm_jsonl(
    files: dict[str, str | PathLike], taxonomy: str | PathLike, name: str = "nyt"
) -> tuple[list[str], list[list[str]], LabelTree, list[str]]:
    """The HiAGM/HGCLR preprocessed form (used for NYT): JSON lines ``{"token": ..., "label": [...]}``
    per split and a taxonomy file whose lines are ``parent<TAB>child<TAB>child...`` (root ``Root``).

    Parameters
    ----------
    files : dict
        ``{"train": path, "val": path, "test": path}`` (any subset).
    taxonomy : str or PathLike
    name : str, default "nyt"

    Returns
    -------
    texts, labels, tree, split
    """
    tax = Path(taxonomy)
    if not tax.is_file():
        raise FileNotFoundError(f"{name}: missing taxonomy file {tax}")
    edges = []
    for line in tax.read_text(encoding="utf-8").splitlines():
        parts = [p for p in line.split("\t") if p.strip()]
        edges += [(parts[0].strip(), c.strip()) for c in parts[1:]]
    tree = _tree_from_edges(edges, "Root", name)
    texts, labels, split = [], [], []
    for part, path in files.items():
        with open(path, encoding="utf-8") as fh:
            for ln, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                    tok = o["token"]
                    texts.append(tok if isinstance(tok, str) else " ".join(tok))
                    labels.append([str(x) for x in o["label"]])
                except (ValueError, KeyError) as exc:
                    raise ValueError(f"{path}:{ln}: expected {{'token', 'label'}} JSON ({exc})") from None
                split.append(part)
    return texts, labels, tree, split


def read_bgc(folder: str | PathLike) -> tuple[list[str], list[list[str]], LabelTree, list[str]]:
    """Blurb Genre Collection (Aly et al. 2019): ``BlurbGenreCollection_EN_{train,dev,test}.txt``
    (``<book>`` records with ``<body>`` and ``<topics><d0>..</d0><d1>..</d1></topics>``) and
    ``hierarchy.txt`` (``parent<TAB>child`` lines; a line with one name is a first-level genre).

    Returns
    -------
    texts, labels, tree, split
    """
    f = Path(folder)
    hier = f / "hierarchy.txt"
    if not hier.is_file():
        raise FileNotFoundError(f"BGC: missing {hier}; point --from-dir at the BlurbGenreCollection folder")
    edges = []
    for line in hier.read_text(encoding="utf-8").splitlines():
        parts = [p.strip() for p in line.split("\t") if p.strip()]
        if len(parts) == 1:
            edges.append(("root", parts[0]))
        elif len(parts) >= 2:
            edges.append((parts[0], parts[1]))
    # first-level genres are those never given a parent
    children = {c for _, c in edges}
    for p, _ in list(edges):
        if p != "root" and p not in children:
            edges.append(("root", p))
            children.add(p)
    tree = _tree_from_edges(edges, "root", "bgc")
    texts, labels, split = [], [], []
    for part, tag in (("train", "train"), ("val", "dev"), ("test", "test")):
        path = f / f"BlurbGenreCollection_EN_{tag}.txt"
        if not path.is_file():
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        for book in re.findall(r"<book[^>]*>(.*?)</book>", raw, flags=re.S):
            body = re.search(r"<body>(.*?)</body>", book, flags=re.S)
            topics = re.search(r"<topics>(.*?)</topics>", book, flags=re.S)
            if not body or not topics:
                continue
            names = [t.strip() for t in re.findall(r"<d\d+>(.*?)</d\d+>", topics.group(1), flags=re.S)]
            texts.append(" ".join(body.group(1).split()))
            labels.append([n for n in names if n in tree.node_index])
            split.append(part)
    if not texts:
        raise FileNotFoundError(f"BGC: no <book> record in {f}/BlurbGenreCollection_EN_{{train,dev,test}}.txt")
    return texts, labels, tree, split


#: ``hierviz htc --dataset`` names; any other value is read as an HTC ``.jsonl`` file.
HTC_DATASETS = ("20news", "synthetic-htc")


def load_htc(name: str, *, data_dir: str | PathLike | None = None, seed: int = 0, **kw: Any) -> HTCData:
    """An HTC dataset by name (:data:`HTC_DATASETS`) or a ``.jsonl`` path (:func:`load_htc_jsonl`).

    Parameters
    ----------
    name : str
        ``"20news"``, ``"synthetic-htc"`` or a path to ``<name>_htc.jsonl``.
    data_dir : str or PathLike, optional
        For ``"20news"``.
    seed : int, default 0
    **kw
        Passed on (``max_train``/``max_test``/``synthetic`` for 20news; ``n_docs`` … for the
        synthetic set).

    Returns
    -------
    HTCData

    Raises
    ------
    ValueError
        Unknown name that is not a ``.jsonl`` file.
    """
    if name == "20news":
        return load_20news_htc(data_dir, seed=seed, **kw)
    if name == "synthetic-htc":
        return synthetic_htc(seed=seed, **{k: v for k, v in kw.items() if k in ("n_docs", "max_paths", "words")})
    if str(name).endswith(".jsonl"):
        return load_htc_jsonl(name, seed=seed)
    raise ValueError(f"unknown HTC dataset {name!r}; use one of {HTC_DATASETS} or a <name>_htc.jsonl file")
