"""``hierviz htc --engine compare``: Paper 05 (HyILR)'s experiment as ``compare`` plans (issue 23).

An :class:`~hierviz.methods.paper05.HTCConfig` (an ``hierviz htc`` preset and its options)
becomes one :class:`~hierviz.experiments.ExperimentConfig` (:func:`compare_config`) run by
:func:`hierviz.experiments.compare` (``run_one`` → ``fit`` → typed records → compare's tables
and report). Its corpus is written first (:func:`write_corpus`): the documents, train/val/test
split and token ids of :func:`hierviz.methods.paper05.load_data` and
:func:`~hierviz.methods.paper05.build_tokenizer` as a text ``.npz`` (``<out>/htc_corpus.npz``,
read through ``data.path`` with ``data.split=official``), and the encoder of the preset's sizes
is registered (:func:`hierviz.models.text.text_encoder`). A λ sweep of ``hyilr`` is one more
``compare`` plan per λ (``<out>/lam<λ>/``). Table 4's shape (method × Micro-F1, Macro-F1,
Hi-MiF1, Hi-MaF1, mean ± std over seeds, percent) is then written from the runs' typed records
(:func:`hierviz.report.htc.classifier_rows`) into ``<out>/htc_results.md`` and ``.csv``, and
the per-level and long-tail F1 of the saved predictions into ``levels.csv`` and ``buckets.csv``
(:func:`hierviz.report.htc.classifier_levels`).

**The same run as the token driver** (:func:`hierviz.experiments.htc.train_htc`; tested step by
step in ``tests/test_htc_engines.py``): the same documents, split and tokens; the encoder's and
the classifier's weights drawn from the run seed in the driver's order (the HyILR head is
initialised right after the encoder, :meth:`hierviz.methods.hyilr.HyILRObjective.attach_encoder`);
batches read in the process (``data.workers=0``: a loader worker reads ahead and moves the
shuffling generator); the validation scoring of early stopping leaves the dropout stream alone.
The optimiser (AdamW, weight decay 0, no warm-up, cosine schedule, gradient clip 5), λ, τ,
early stopping, the dropout on ``vec(F)`` and the log-odds bias are ``train_htc``'s. On top:
compare's linear probe, radius and figures. Not through this path: BERT, the label-disk figure.

**Several label paths per document** (``synthetic-htc``, ``.jsonl`` corpora): the file then
holds ``leaf_sets`` (:class:`hierviz.data.text.LabelSetDataset`); the HyILR classifier trains,
stops early and is scored on the union of a document's paths, as the token driver did, and the
frequency prior is the driver's (label sets as they are). Compare's single-leaf parts (linear
probe, HF1, radius, Majority row in ``results.md``) read each document's first leaf in the tree's
leaf order; ``htc_results.md`` says so under the table. A label path that ends above the leaves
is refused (:func:`write_corpus`).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.data.loaders.htc import targets_to_labels
from hierviz.data.text import pack_tokens
from hierviz.experiments.compare import compare
from hierviz.experiments.config import ConfigError, ExperimentConfig, resolve_config
from hierviz.experiments.records import load_records
from hierviz.hierarchy import LabelTree
from hierviz.methods.paper05 import HTCConfig, build_tokenizer, frequency_prior_scores, load_data
from hierviz.metrics.htc import leaf_path_targets
from hierviz.models.text import text_encoder
from hierviz.report.htc import classifier_levels, classifier_markdown, classifier_rows

__all__ = ["Corpus", "write_corpus", "compare_config", "run_htc_compare"]


@dataclass(frozen=True)
class Corpus:
    """An ``hierviz htc`` corpus written for ``compare`` (:func:`write_corpus`).

    Attributes
    ----------
    name : str
        The corpus (``HTCData.name``).
    path, tree : Path
        The text ``.npz`` (``tokens`` (N, s, 2), ``labels``, ``classes``, ``split``) and its tree JSON.
    encoder : str
        The registered encoder of the config's sizes (:func:`hierviz.models.text.text_encoder`).
    sizes : dict
        ``train``/``val``/``test`` documents.
    multi_path : bool
        Some document lies on several label paths (the file holds ``leaf_sets``).
    prior : dict
        The frequency prior's ``clf_*`` scores on the test split, label sets as they are
        (:func:`hierviz.methods.paper05.frequency_prior_scores`).
    """

    name: str
    path: Path
    tree: Path
    encoder: str
    sizes: dict[str, int]
    multi_path: bool
    prior: dict[str, float]


def write_corpus(cfg: HTCConfig, out: str | os.PathLike, data_dir: str | None = None) -> Corpus:
    """Write the corpus of ``cfg`` as ``compare`` reads it: ``<out>/htc_corpus.npz`` and ``<out>/htc_tree.json``.

    The documents and their train/val/test split are :func:`hierviz.methods.paper05.load_data`'s
    (20news: train capped at ``max_train``, test at ``max_test``, 10 % of train held out as val,
    seed 0), the token ids :func:`hierviz.methods.paper05.build_tokenizer`'s (a
    :class:`~hierviz.data.text.WordVocab` of ``cfg.vocab`` words fitted on the train split),
    cut at ``cfg.max_len``; the ``split`` array carries val, so ``data.split=official`` keeps
    it. Each document's ``labels`` entry is its first leaf (``tree.leaves`` order); when some
    document lies on several paths, ``leaf_sets`` (N, C) holds all its leaves.

    Raises
    ------
    ConfigError
        A BERT checkpoint, or a document with a label path that ends above the leaves.
    """
    if cfg.bert:
        raise ConfigError("bert: hierviz htc trains its own text encoder through compare; drop --bert")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = load_data(cfg, data_dir)
    tree = data.tree
    tok = build_tokenizer(cfg, data)
    ids, mask = tok.encode(data.texts, cfg.max_len)
    leaf_col = {tree.node_index[leaf]: i for i, leaf in enumerate(tree.leaves)}
    sets = np.zeros((len(data), tree.num_leaves), dtype=bool)
    for i, row in enumerate(data.targets):
        for j in np.flatnonzero(row):
            if j in leaf_col:
                sets[i, leaf_col[j]] = True
    ends = leaf_path_targets(sets, tree)
    bad = np.flatnonzero((ends != data.targets).any(1) | ~sets.any(1))
    if len(bad):  # a path that stops at an inner node: no leaf says it
        i = int(bad[0])
        raise ConfigError(
            f"dataset: document {i} of {data.name} has labels {targets_to_labels(data.targets[i : i + 1], tree)[0]}, "
            f"a path that ends above the leaves ({len(bad)} such documents); hierviz htc trains on root-to-leaf "
            "paths: extend the tree with a leaf under each such node, or drop those documents"
        )
    labels = sets.argmax(1)  # the first of each document's leaves (tree.leaves order)
    path, tree_path = out / "htc_corpus.npz", out / "htc_tree.json"
    tmp = path.with_name(path.stem + ".tmp.npz")
    multi = {"leaf_sets": sets} if (sets.sum(1) > 1).any() else {}  # several label paths
    np.savez_compressed(
        tmp, tokens=pack_tokens(ids.numpy(), mask.numpy()), labels=labels, classes=np.array(tree.leaves),
        split=data.split.astype(str), citation=np.array(data.name), **multi,
    )  # fmt: skip
    os.replace(tmp, path)
    tree.to_json(tree_path)
    encoder = text_encoder(cfg.h, cfg.layers, cfg.heads, len(tok), cfg.max_len)
    sizes = {s: int((data.split == s).sum()) for s in ("train", "val", "test")}
    prior = {f"clf_{k}": v for k, v in frequency_prior_scores(data).items()}
    return Corpus(data.name, path, tree_path, encoder, sizes, bool(multi), prior)


def compare_config(
    cfg: HTCConfig, out: str | os.PathLike, corpus: Corpus, *, lam: float | None = None
) -> ExperimentConfig:
    """The ``compare`` config of an ``hierviz htc`` config on its written corpus.

    Parameters
    ----------
    cfg : HTCConfig
    out : path
        ``--out`` of the comparison.
    corpus : Corpus
        :func:`write_corpus`.
    lam : float, optional
        λ (``loss.hyilr_lambda``; default ``cfg.lam``).

    Returns
    -------
    ExperimentConfig

    Raises
    ------
    ConfigError
        Seeds other than ``0 … n−1``.
    """
    if tuple(cfg.seeds) != tuple(range(len(cfg.seeds))):
        raise ConfigError(f"seeds: compare runs seeds 0 … n−1, got {list(cfg.seeds)}; use --seeds 0,1,…")
    over: dict[str, Any] = {
        "methods": list(cfg.methods),
        "geometries": ["euclidean"],  # the probe's space; HyILR's own space is the method's (Table 4)
        "seeds": len(cfg.seeds),
        "out": str(out),
        "eval.projection": "pca",
        "data.dataset": None,
        "data.path": str(corpus.path),
        "data.tree": str(corpus.tree),
        "data.image_size": int(cfg.max_len),
        "data.split": "official",  # the corpus' own train/val/test (val already held out)
        "data.limit": None,
        "data.workers": 0,  # the batches read in this process, as hierviz htc's loop did (a worker reads ahead)
        "model.encoder": corpus.encoder,
        "model.width": max(1, cfg.h // 4),
        "train.epochs": int(cfg.epochs),
        "train.batch_size": int(cfg.batch_size),
        "train.lr_backbone": float(cfg.lr),
        "train.lr_head": float(cfg.lr),
        "train.weight_decay": 0.0,
        "train.warmup_epochs": 0.0,
        "train.grad_clip": 5.0,
        "train.ema_decay": 0.0,
        "train.threads": cfg.threads,
        "train.patience": int(cfg.patience),  # early stopping on the validation split, the best epoch kept
        "loss.tau": float(cfg.tau),
        "loss.hyilr_lambda": float(cfg.lam if lam is None else lam),
    }
    return resolve_config("quick", over)


def run_htc_compare(
    cfg: HTCConfig,
    out: str | os.PathLike,
    *,
    lams: Sequence[float] | None = None,
    data_dir: str | None = None,
    resume: bool = True,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run ``cfg`` (and a λ sweep of ``hyilr``) through ``compare``; write Table 4 from the records.

    Parameters
    ----------
    cfg : HTCConfig
    out : path
        ``<out>/`` holds the comparison at ``cfg.lam``, ``<out>/lam<λ>/`` one per other λ of
        ``lams`` (``hyilr`` only), and ``htc_results.md``/``htc_results.csv``.
    lams : sequence of float, optional
    resume : bool, default True
        Reuse finished runs (compare's ``--resume``).
    progress : bool, default True

    Returns
    -------
    list of dict
        :func:`hierviz.report.htc.classifier_rows`.
    """
    out = Path(out)
    corpus = write_corpus(cfg, out, data_dir)
    plans = [(out, compare_config(cfg, out, corpus))]
    for lam in lams or ():
        if float(lam) != cfg.lam:
            sub = out / f"lam{float(lam):g}"
            c = compare_config(cfg, sub, corpus, lam=float(lam))
            c.methods = ["hyilr"]
            plans.append((sub, c))
    records = []
    for folder, c in plans:
        compare(c, resume=resume, progress=progress, verbose=progress)
        records += load_records(folder)
    rows = classifier_rows(records)
    title = f"{corpus.name}: test split, mean ± std over seeds (percent)"
    md = classifier_markdown(rows, title, corpus.prior)
    md += f"\n{corpus.sizes} documents; {corpus.encoder} (h, layers, heads, vocabulary, max_len); epochs ≤ {cfg.epochs}.\n"
    if corpus.multi_path:
        md += (
            "\nSome documents lie on several label paths: the classifier columns score all of them; compare's "
            "probe, HF1 and radius (results.md) read each document's first leaf (tree order).\n"
        )
    (out / "htc_results.md").write_text(md, encoding="utf-8")
    tables = {"htc_results": rows}
    tables["levels"], tables["buckets"] = classifier_levels(records, LabelTree.from_json(out / "tree.json"))
    for name, table in tables.items():
        if table:
            with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=list(table[0]))
                w.writeheader()
                w.writerows(table)
    return rows
