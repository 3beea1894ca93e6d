"""A comparison's data: the dataset and tree of a config (:func:`load_data`), its subset, the output folder check.

Split from :mod:`hierviz.experiments.compare` (no module over 700 lines).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.data import DATASETS, DEFAULT_TREE, bind_tree, load_dataset
from hierviz.experiments.config import ConfigError, ExperimentConfig


def limit_indices(labels: np.ndarray, n: int, seed: int) -> np.ndarray:
    """A seeded random subset of ``n`` indices that keeps every class (a few of each first).

    Parameters
    ----------
    labels : numpy.ndarray, shape (N,), int
    n : int
    seed : int

    Returns
    -------
    numpy.ndarray, shape (min(n, N),), int64, sorted
    """
    N = labels.shape[0]
    if n >= N:
        return np.arange(N)
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    k = max(2, n // (4 * len(classes)))
    chosen: list[np.ndarray] = []
    for c in classes:
        idx = np.flatnonzero(labels == c)
        chosen.append(rng.choice(idx, size=min(k, idx.size), replace=False))
    first = np.concatenate(chosen)[:n]
    rest = np.setdiff1d(np.arange(N), first)
    extra = rng.choice(rest, size=max(0, n - first.size), replace=False)
    return np.sort(np.concatenate([first, extra]))


@contextlib.contextmanager
def _option_named(key: str, param: str = "name_or_path", value: Any = None):
    """Re-raise a library error "<param>: …" (naming a Python parameter) as "<key>: …", same class.

    The CLI then names the option too: "--tree (data.tree): unknown tree 'x'; …". An error
    that names neither the parameter nor ``value`` (e.g. a tree/data mismatch) is prefixed
    with "<key>: <value>: ", so it names the file or name the user gave.
    """
    try:
        yield
    except (ValueError, FileNotFoundError) as exc:
        text = str(exc)
        if text.startswith(f"{param}: "):
            text = f"{key}: {text[len(param) + 2 :]}"
        elif value is not None and str(value) not in text:
            text = f"{key}: {value}: {text}"
        else:
            raise
        try:
            renamed = type(exc)(text)  # the same class, so callers' except clauses still match
        except Exception:  # pragma: no cover - an exception class with another signature
            renamed = ConfigError(text)
        raise renamed from None


def load_data(config: ExperimentConfig):
    """The dataset (bound to its tree, ``data.limit`` applied) and the tree of a config.

    Returns
    -------
    dataset, tree, n_all
        ``n_all`` is the size before ``data.limit``.

    Raises
    ------
    ConfigError
        No tree for a file given by ``data.path``, ``data.limit`` below 3 × classes, or an
        unknown dataset or tree name (the message starts with the key, e.g. ``data.tree:``).
    """
    d = config.data
    spec = DATASETS.get(d.dataset) if d.path is None and d.dataset in DATASETS else None
    # a loader that takes image_size reads a file made at that size (ham10000_32.npz), else resizes once
    size = d.image_size if spec is not None and spec.takes_image_size else None
    with _option_named("data.path" if d.path is not None else "data.dataset"):
        ds = load_dataset(d.path if d.path is not None else d.dataset, image_size=size)
    tree_arg = d.tree
    if tree_arg is None:
        if d.path is None and d.dataset in DEFAULT_TREE:
            tree_arg = DEFAULT_TREE[d.dataset]
        else:
            raise ConfigError(
                "data.tree is required with data.path (--tree: a tree name or a tree JSON file whose leaves are "
                f"the data's classes: {list(ds.classes)})"
            )
    with _option_named("data.tree", value=tree_arg):
        ds, tree = bind_tree(ds, tree_arg)
    n_all = len(ds.labels)
    if d.limit is not None:
        need = 3 * tree.num_leaves
        if d.limit < need:
            raise ConfigError(
                f"data.limit={d.limit} is below classes × splits ({tree.num_leaves} × 3 = {need}): every class "
                f"needs images in train, val and test; use --limit {need} or more"
            )
        ds = ds.subset(limit_indices(np.asarray(ds.labels), d.limit, d.split_seed))
    return ds, tree, n_all


def _check_writable(out: Path) -> None:
    try:
        (out / "runs").mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"--out {out}: cannot write there ({exc.strerror or exc}); choose a folder you can write to"
        ) from None
