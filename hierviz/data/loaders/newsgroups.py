"""20 Newsgroups (Lang 1995), "bydate" version, as a vector dataset of TF-IDF features.

``"20news"`` reads ``text/20news-bydate.tar.gz`` from the data folder (the original layout
``20news-bydate-{train,test}/<group>/<message id>``, 18,846 messages, 20 groups), drops each
message's header block (it names the newsgroup, i.e. the label), and turns the bodies into
TF-IDF vectors with scikit-learn's :class:`~sklearn.feature_extraction.text.TfidfVectorizer`
**fitted on the official bydate-train messages only** (vocabulary and IDF come from them; no
label is used). The result is an :class:`~hierviz.data.ArrayDataset` of float32 features
``(N, D)`` (a vector dataset) with the official split in ``official_split``; its default tree
``20news`` follows the dotted group names (``hierviz/data/trees/20news.json``). Nothing is
downloaded: no pretrained text model, only word counts.

Note that :func:`hierviz.experiments.compare` draws its own stratified split from all
messages, so bydate-test messages may land in its training split and bydate-train ones in its
test split; the TF-IDF statistics then saw the words (never the labels) of some test
messages. Paper 04 uses audio, so this is our choice for a text stand-in.

When the tarball is absent and no folder was named, :func:`load_20news` falls back to
:func:`synthetic_corpus`: made-up messages whose words are drawn along each group's path in the
``20news`` tree (so the tree is learnable), named ``"20news (synthetic stand-in)"``. The tests and
the notebooks' SMOKE runs use it on machines without the data; numbers from it say nothing
about 20 Newsgroups.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tarfile
import zipfile
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.data.base import ArrayDataset, DatasetInfo, find_data_file, register_dataset
from hierviz.data.folders import cache_dir, data_search_dirs
from hierviz.data.trees import load_tree

__all__ = [
    "NEWS_CITATION",
    "NEWS_LICENCE",
    "NEWS_INFO",
    "load_20news",
    "read_20news_tar",
    "strip_header",
    "synthetic_corpus",
]

NEWS_CITATION = (
    "Lang K. NewsWeeder: Learning to filter netnews. Proc. ICML 1995, 331-339. 'bydate' version: "
    "J. Rennie, http://qwone.com/~jason/20Newsgroups/"
)
NEWS_LICENCE = "no explicit licence; freely redistributed for research for decades: research use only"
NEWS_INFO = DatasetInfo(
    "20news-bydate.tar.gz",
    "custom",
    "copy 20news-bydate.tar.gz into $HIERVIZ_DATA/text/ (the 'bydate' tarball of J. Rennie's 20 Newsgroups page)",
    "20 Newsgroups bydate: 18,846 messages, 20 groups with a dotted-name tree, TF-IDF vectors",
)


def strip_header(text: str) -> str:
    """The body of a Usenet message: everything after the first blank line.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        ``text`` without its header block (the whole text when it has no blank line).

    Examples
    --------
    >>> strip_header("From: a\\nNewsgroups: sci.med\\n\\nHello\\n\\nworld")
    'Hello\\n\\nworld'
    """
    head, sep, body = text.partition("\n\n")
    return body if sep else text


def read_20news_tar(path: str | PathLike) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """Read the messages of a 20news-bydate tarball (latin-1, headers dropped).

    Parameters
    ----------
    path : str or PathLike
        A ``.tar.gz`` holding ``20news-bydate-train/<group>/<id>`` and
        ``20news-bydate-test/<group>/<id>`` files.

    Returns
    -------
    texts : list of str
        Message bodies, sorted by (split, group, member name).
    labels : numpy.ndarray, shape (N,), int64
        Index into ``groups``.
    groups : list of str
        The group names, sorted.
    split : numpy.ndarray, shape (N,), str
        ``"train"`` or ``"test"``.

    Raises
    ------
    ValueError
        Not a readable tarball, or no message in the expected layout (names the file).
    """
    try:
        tar = tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise ValueError(f"{path}: not a readable tar archive ({exc}); expected 20news-bydate.tar.gz") from None
    rows: list[tuple[str, str, str, str]] = []
    with tar:
        for m in tar.getmembers():
            parts = m.name.strip("/").split("/")
            if not m.isfile() or len(parts) != 3 or parts[0] not in ("20news-bydate-train", "20news-bydate-test"):
                continue
            f = tar.extractfile(m)
            if f is None:  # pragma: no cover - isfile() members always have data
                continue
            text = strip_header(f.read().decode("latin-1"))
            rows.append((parts[0].rsplit("-", 1)[1], parts[1], parts[2], text))
    if not rows:
        raise ValueError(
            f"{path}: no message found under 20news-bydate-train/<group>/ or 20news-bydate-test/<group>/; "
            "is it the 20news 'bydate' tarball?"
        )
    rows.sort(key=lambda r: (r[0] != "train", r[1], r[2]))
    groups = sorted({r[1] for r in rows})
    gi = {g: i for i, g in enumerate(groups)}
    return (
        [r[3] for r in rows],
        np.array([gi[r[1]] for r in rows], dtype=np.int64),
        groups,
        np.array([r[0] for r in rows]),
    )


def _find_tarball(data_dir: str | PathLike | None) -> Path:
    """``<folder>/text/20news-bydate.tar.gz`` or ``<folder>/20news-bydate.tar.gz``, folder by folder."""
    for d in data_search_dirs(data_dir):
        for p in (d / "text" / NEWS_INFO.filename, d / NEWS_INFO.filename):
            if p.is_file():
                return p
    return find_data_file("text/" + NEWS_INFO.filename, data_dir)  # raises FileNotFoundError naming the folders


def synthetic_corpus(
    n_per_group: int = 60, seed: int = 0, words: int = 40
) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """Made-up messages for the 20 groups, with words drawn along each group's path in the tree.

    Every node of the ``20news`` tree (root excluded) owns 12 pseudo-words; a message of group
    ``g`` draws ``words`` tokens: from the nodes on g's path with weight growing with depth
    (the group's own words most often), and a quarter from a shared pool of 60 words. Groups
    under one parent therefore share words, and the tree is learnable from the text.

    Parameters
    ----------
    n_per_group : int, default 60
        Messages per group (>= 2); 60 % go to ``"train"``, the rest to ``"test"``.
    seed : int, default 0
    words : int, default 40
        Tokens per message (>= 1).

    Returns
    -------
    texts, labels, groups, split
        As :func:`read_20news_tar`: ``labels`` int64 ``(N,)`` into the sorted ``groups``.

    Raises
    ------
    ValueError
        ``n_per_group < 2`` or ``words < 1``.

    Examples
    --------
    >>> texts, labels, groups, split = synthetic_corpus(3, seed=1)
    >>> len(groups), len(texts), sorted(set(split.tolist()))
    (20, 60, ['test', 'train'])
    """
    for name, v, low in (("n_per_group", n_per_group, 2), ("words", words, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    tree = load_tree("20news")
    groups = sorted(tree.leaves)
    rng = np.random.default_rng(seed)
    shared = [f"common{k}" for k in range(60)]
    vocab = {n: [f"n{i}w{k}" for k in range(12)] for i, n in enumerate(tree.nodes) if n != tree.root}
    texts: list[str] = []
    labels: list[int] = []
    split: list[str] = []
    for gi, g in enumerate(groups):
        path = [n for n in tree.ancestors(g) if n != tree.root]  # root side first, the group last
        weights = np.arange(1, len(path) + 1, dtype=float)
        weights /= weights.sum()
        for i in range(n_per_group):
            n_shared = words // 4
            nodes = rng.choice(len(path), size=words - n_shared, p=weights)
            toks = [vocab[path[j]][rng.integers(12)] for j in nodes]
            toks += [shared[rng.integers(len(shared))] for _ in range(n_shared)]
            rng.shuffle(toks)
            texts.append(" ".join(toks))
            labels.append(gi)
            split.append("train" if i < int(0.6 * n_per_group) else "test")
    return texts, np.asarray(labels, dtype=np.int64), groups, np.asarray(split)


def read_corpus(
    data_dir: str | PathLike | None = None, synthetic: bool | None = None, seed: int = 0
) -> tuple[list[str], np.ndarray, list[str], np.ndarray, bool]:
    """The 20 Newsgroups messages, or the synthetic stand-in, by the rule every 20news loader follows.

    ``synthetic=True`` reads the stand-in (:func:`synthetic_corpus` with ``seed``); ``False`` the
    tarball; ``None`` the tarball when found, else the stand-in, unless a ``data_dir`` was named.

    Returns
    -------
    texts, labels, groups, split
        As :func:`read_20news_tar`.
    stand_in : bool
        Whether the synthetic stand-in was read (loaders name the dataset after it).

    Raises
    ------
    FileNotFoundError
        No tarball, and the stand-in is not allowed (``synthetic=False`` or a ``data_dir`` named).
    """
    path = _tarball_or_stand_in(data_dir, synthetic)
    if path is not None:
        return (*read_20news_tar(path), False)
    return (*synthetic_corpus(seed=seed), True)


def _tarball_or_stand_in(data_dir: str | PathLike | None, synthetic: bool | None) -> Path | None:
    """The tarball by :func:`read_corpus`'s rule, or None where the synthetic stand-in is read."""
    if synthetic:
        return None
    try:
        return _find_tarball(data_dir)
    except FileNotFoundError:
        if synthetic is False or data_dir is not None:
            raise
    return None


@register_dataset("20news", default_tree="20news", info=NEWS_INFO, inputs="vectors")
def load_20news(
    data_dir: str | PathLike | None = None, *, max_features: int = 2000, synthetic: bool | None = None
) -> ArrayDataset:
    """20 Newsgroups as TF-IDF vectors (a vector dataset; see the module notes).

    Parameters
    ----------
    data_dir : str or PathLike, optional
        Folder holding ``text/20news-bydate.tar.gz`` or ``20news-bydate.tar.gz``; default
        ``$HIERVIZ_DATA``, then ``../shared/data``.
    max_features : int, default 2000
        Vocabulary size D (the most frequent terms of the training messages).
    synthetic : bool or None, default None
        ``None``: the tarball if found, else (only when ``data_dir`` is not given)
        :func:`synthetic_corpus`; ``True``: always the synthetic stand-in; ``False``: the
        tarball or ``FileNotFoundError``.

    Returns
    -------
    ArrayDataset
        ``images`` float32 ``(N, D)`` L2-normalised TF-IDF rows (sublinear tf, English stop
        words removed, terms in >= 2 training messages), 20 classes (sorted group names),
        ``official_split`` train/test, ``ids`` the message ids.

    Raises
    ------
    FileNotFoundError
        The tarball is missing (names the file and where it was looked for) and no synthetic
        stand-in is allowed (``synthetic=False``, or a ``data_dir`` was named).
    ValueError
        An unreadable tarball, or ``max_features`` < 1.

    Notes
    -----
    The tarball's vectors are built once and then read from the process and from
    :func:`hierviz.data.cache_dir` (``$HIERVIZ_CACHE``; ``off`` disables it), keyed by the
    tarball's path, modification time and size: about 8 s the first time, about 1 s after.
    """
    if isinstance(max_features, bool) or not isinstance(max_features, int) or max_features < 1:
        raise ValueError(f"max_features must be a positive integer, got {max_features!r}")
    tarball = _tarball_or_stand_in(data_dir, synthetic)
    if tarball is not None:  # the same file, unchanged since the last call: its vectors come from the cache
        stat = tarball.stat()
        X, labels, groups, split = _tarball_tfidf(str(tarball.resolve()), stat.st_mtime_ns, stat.st_size, max_features)
    else:
        texts, labels, groups, split = synthetic_corpus()
        X = _tfidf(texts, split, max_features)
    return ArrayDataset(
        np.asarray(X.toarray(), dtype=np.float32),  # a fresh array per call (no copy: already float32)
        labels.copy(),
        list(groups),
        name="20news" if tarball is not None else "20news (synthetic stand-in)",
        citation=NEWS_CITATION,
        licence=NEWS_LICENCE,
        official_split=split.copy(),
    )


def _tfidf(texts: list[str], split: np.ndarray, max_features: int) -> Any:
    """Sparse float32 TF-IDF rows of ``texts``, the vectoriser fitted on the ``"train"`` ones (see load_20news)."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # heavy: scikit-learn, imported on first use

    train = split == "train"
    vec = TfidfVectorizer(
        max_features=max_features,
        sublinear_tf=True,
        stop_words="english",
        min_df=2 if int(train.sum()) >= 50 else 1,
        dtype=np.float32,
    )
    vec.fit([t for t, tr in zip(texts, train, strict=True) if tr])
    return vec.transform(texts)


#: Part of the cache key of the TF-IDF rows: raise it whenever ``_tfidf`` or ``read_20news_tar``
#: changes what it returns, so that no cache file from before is read.
TFIDF_CACHE_VERSION = 1


@functools.lru_cache(maxsize=1)
def _tarball_tfidf(path: str, mtime_ns: int, size: int, max_features: int) -> tuple[Any, np.ndarray, list, np.ndarray]:
    """The tarball's TF-IDF rows (sparse CSR, about 10 MB), labels, groups and split, read once.

    Reading and vectorising the 18,846 messages takes about 8 s on a 2-core CPU. The result is
    kept in this process (the next call returns it) and in :func:`~hierviz.data.folders.cache_dir`
    (the next process reads it in a fraction of a second), keyed by the file's path,
    modification time and size, ``max_features``, scikit-learn's version and
    :data:`TFIDF_CACHE_VERSION`: a replaced tarball is read again. A cache file that cannot be
    read is rebuilt; a cache folder that cannot be written is passed over. Callers copy what
    they return.
    """
    import sklearn  # heavy: scikit-learn (its version keys the cache), imported on first use
    from scipy import sparse  # heavy: scipy, imported on first use

    key = json.dumps([path, mtime_ns, size, max_features, sklearn.__version__, TFIDF_CACHE_VERSION])
    folder = cache_dir()
    file = None if folder is None else folder / f"20news-tfidf-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"
    if file is not None and file.is_file():
        try:
            with np.load(file, allow_pickle=False) as f:
                if str(f["key"]) == key:
                    X = sparse.csr_matrix((f["data"], f["indices"], f["indptr"]), shape=tuple(f["shape"]))
                    return X, f["labels"], [str(g) for g in f["groups"]], f["split"]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            pass  # damaged or from another layout: rebuilt below
    texts, labels, groups, split = read_20news_tar(path)
    X = _tfidf(texts, split, max_features).tocsr()
    if file is not None:
        arrays = {"key": np.array(key), "data": X.data, "indices": X.indices, "indptr": X.indptr,
                  "shape": np.array(X.shape), "labels": labels, "groups": np.array(groups), "split": split}  # fmt: skip
        tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as out:
                np.savez(out, **arrays)
            os.replace(tmp, file)  # atomic: a process reading it meanwhile sees the old file or the new one
        except OSError:  # an unwritable cache folder: the next process vectorises again
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
    return X, labels, groups, split
