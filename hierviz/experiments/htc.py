"""``hierviz htc``: Paper 05 (HyILR)'s experiment (Table 4) as ``compare`` plans.

An :class:`~hierviz.methods.paper05.HTCConfig` (an ``hierviz htc`` preset and its options)
becomes one :class:`~hierviz.experiments.ExperimentConfig` (:func:`compare_config`) run by
:func:`hierviz.experiments.compare` (``run_one`` → ``fit`` → typed records → compare's tables
and report). Its corpus is written first (:func:`write_corpus`): the documents, train/val/test
split and token ids of :func:`hierviz.methods.paper05.load_data` and
:func:`~hierviz.methods.paper05.build_tokenizer` as a text ``.npz`` (``<out>/htc_corpus_<hash>.npz``,
read through ``data.path`` with ``data.split=official``), and the encoder of the preset's sizes
is registered (:func:`hierviz.models.text.text_encoder`). A λ sweep of ``hyilr`` is one more
``compare`` plan per λ (``<out>/lam<λ>/``). Table 4's shape (method × Micro-F1, Macro-F1,
Hi-MiF1, Hi-MaF1, mean ± std over seeds, percent) is then written from the runs' typed records
(:func:`hierviz.report.htc.classifier_rows`) into ``<out>/htc_results.md`` and ``.csv``, one
row per run into ``seeds.csv`` (:func:`hierviz.report.htc.classifier_runs`: paired intervals), and
the per-level and long-tail F1 of the saved predictions into ``levels.csv`` and ``buckets.csv``
(:func:`hierviz.report.htc.classifier_levels`).

**The same run as the token driver ``hierviz htc`` ran before 0.3** (its one-run
function :func:`train_htc` is kept, as the helper of notebook 09 and as the reference of
``tests/test_htc_engines.py``, which checks the two step by step): the same documents, split and tokens; the encoder's and
the classifier's weights drawn from the run seed in the driver's order (the HyILR head is
initialised right after the encoder, :meth:`hierviz.methods.hyilr.HyILRObjective.attach_encoder`);
batches read in the process (``data.workers=0``: a loader worker reads ahead and moves the
shuffling generator); the validation scoring of early stopping leaves the dropout stream alone.
The optimiser (Adam at a constant learning rate, the HyILR methods' own
:data:`hierviz.methods.hyilr.HYILR_TRAIN`; gradient clip 5), λ, τ,
early stopping (its best epoch kept across ``--resume``), the dropout on ``vec(F)`` and the
log-odds bias are ``train_htc``'s. On top:
compare's linear probe, radius and figures, and ``<out>/labels.html`` (each method's label
embeddings of seed 0 on the disk, :func:`label_points`). Not through this path: BERT.

**Several label paths per document** (``synthetic-htc``, ``.jsonl`` corpora): the file then
holds ``leaf_sets`` (:class:`hierviz.data.text.LabelSetDataset`); the HyILR classifier trains,
stops early and is scored on the union of a document's paths, as the token driver did, and the
frequency prior is the driver's (label sets as they are). Compare's single-leaf parts (linear
probe, HF1, radius, Majority row in ``results.md``) read each document's first leaf in the tree's
leaf order; ``htc_results.md`` says so under the table. A label path that ends above the leaves
is refused (:func:`write_corpus`).

:func:`train_htc` trains one method with one seed in memory (HyILR's token model,
:mod:`hierviz.methods.paper05`) through :func:`hierviz.training.fit`, the loop of every method,
and returns the model for the notebook's figures.
"""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import TensorDataset

from hierviz.data.loaders.htc import HTCData, targets_to_labels
from hierviz.data.text import pack_tokens
from hierviz.experiments.compare import compare
from hierviz.experiments.config import ConfigError, ExperimentConfig, resolve_config
from hierviz.experiments.records import load_records
from hierviz.geometry import get_geometry
from hierviz.geometry._checks import scalar
from hierviz.hierarchy import LabelTree
from hierviz.methods import build_objective, upgrade_loss
from hierviz.methods.hyilr import HYILR_TRAIN
from hierviz.methods.paper05 import (
    HTC_METHODS,
    HTC_PRESETS,
    HTCConfig,
    PackedTokens,
    _evaluate,
    _full,
    _predict,
    build_htc_run,
    build_tokenizer,
    frequency_prior_scores,
    load_data,
)
from hierviz.metrics.htc import hierarchical_f1, label_columns, leaf_path_targets
from hierviz.models.text import text_encoder
from hierviz.report.htc import (
    classifier_levels,
    classifier_markdown,
    classifier_rows,
    classifier_runs,
    write_label_figures,
)
from hierviz.training import TrainConfig, fit, load_checkpoint, seed_run

__all__ = [
    "Corpus",
    "write_corpus",
    "compare_config",
    "run_htc",
    "label_points",
    "train_htc",
    "add_htc_parser",
    "add_import_option",
    "run_htc_command",
]


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
    counts : numpy.ndarray, shape (tree.num_nodes,)
        Training documents per label (every path), the long-tail buckets' frequencies.
    """

    name: str
    path: Path
    tree: Path
    encoder: str
    sizes: dict[str, int]
    multi_path: bool
    prior: dict[str, float]
    counts: np.ndarray


def write_corpus(cfg: HTCConfig, out: str | os.PathLike, data_dir: str | None = None) -> Corpus:
    """Write the corpus of ``cfg`` as ``compare`` reads it: ``<out>/htc_corpus_<hash>.npz`` and ``<out>/htc_tree.json``.

    ``<hash>``: 12 hex digits of the SHA-1 of the arrays, so a run's ``data.path`` (and its
    fingerprint, which ``--resume`` compares) names the exact data it trained on.

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
        raise ConfigError(
            "bert: hierviz htc trains its own text encoder through compare (no BERT checkpoint); unset bert "
            "(hierviz.experiments.htc.train_htc still reads one, in memory)"
        )
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
    multi = {"leaf_sets": sets} if (sets.sum(1) > 1).any() else {}  # several label paths
    arrays = {"tokens": pack_tokens(ids.numpy(), mask.numpy()), "labels": labels, "classes": np.array(tree.leaves),
              "split": data.split.astype(str), "citation": np.array(data.name), **multi}  # fmt: skip
    digest = hashlib.sha1()
    for k in sorted(arrays):  # the file's name says its content: other data is another data.path (fingerprint)
        digest.update(k.encode() + np.ascontiguousarray(arrays[k]).tobytes())
    path, tree_path = out / f"htc_corpus_{digest.hexdigest()[:12]}.npz", out / "htc_tree.json"
    if not path.is_file():
        tmp = path.with_name(path.stem + ".tmp.npz")
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, path)
    tree.to_json(tree_path)
    encoder = text_encoder(cfg.h, cfg.layers, cfg.heads, len(tok), cfg.max_len)
    sizes = {s: int((data.split == s).sum()) for s in ("train", "val", "test")}
    prior = {f"clf_{k}": v for k, v in frequency_prior_scores(data).items()}
    counts = data.part("train").targets.sum(0)
    return Corpus(data.name, path, tree_path, encoder, sizes, bool(multi), prior, counts)


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
        λ (``loss.hyilr.lambda``; default ``cfg.lam``).

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
        "loss.hyilr.lambda": float(cfg.lam if lam is None else lam),
    }
    return resolve_config("quick-ham10000", over)


def run_htc(
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
        ``lams`` (``hyilr`` only), ``htc_results.md``/``htc_results.csv`` and ``seeds.csv`` (one
        row per run).
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
    tree = LabelTree.from_json(out / "tree.json")
    tables = {"htc_results": rows, "seeds": classifier_runs(records)}
    tables["levels"], tables["buckets"] = classifier_levels(records, tree, corpus.counts)
    for name, table in tables.items():
        if table:
            with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=list(table[0]))
                w.writeheader()
                w.writerows(table)
    main = (out / "runs").resolve()  # the runs at cfg.lam (a λ sweep's are under <out>/lam<λ>/runs)
    _write_label_figures(
        out, tree, [r for r in records if r["seed"] == 0 and Path(r["embeddings"]).resolve().parent.parent == main]
    )
    return rows


def label_points(
    run: str | os.PathLike, tree: LabelTree, record: Mapping[str, Any] | None = None
) -> tuple[np.ndarray, float, Any] | None:
    """The label embeddings ``L_H = φ(α_l W_Lᵀ)`` (Eq. 12) of a finished HyILR run, as it was evaluated.

    The objective's weights come from ``<run>/early_stopping.pt`` (the best epoch's), else from
    ``<run>/checkpoint.pt`` (the last epoch: a run without early stopping); the method and its
    hyperparameters from ``<run>/result.json``, or from ``record`` when the caller has read it
    (:func:`hierviz.experiments.records.load_records`).

    Returns
    -------
    (points, c, geometry) or None
        ``points`` (N − 1, h) float64: the space part of each label's point (the Lorentz
        model's time coordinate dropped), in ``tree.nodes`` order without the root; ``c`` the
        curvature of the geometry the points lie on (its own; 1.0 when flat); ``geometry`` that
        geometry. None when the run has no HyILR objective state.
    """
    run = Path(run)
    rec = record if record is not None else json.loads((run / "result.json").read_text(encoding="utf-8"))
    path = run / "early_stopping.pt" if (run / "early_stopping.pt").is_file() else run / "checkpoint.pt"
    state = load_checkpoint(path)["objective"] if path.is_file() else None
    if not state or "terms.hyilr.head.W_L" not in state:
        return None
    hparams = upgrade_loss(rec.get("hparams") or {})  # a record of hierviz 0.3 holds flat names (hyilr_lambda)
    obj = build_objective(rec["method"], tree, get_geometry("euclidean"), **hparams)
    loss = obj.terms["hyilr"]
    h = int(state["terms.hyilr.head.W_L"].shape[0])
    loss.head.initialize_parameters(torch.zeros(1, h))
    obj.load_state_dict(state)
    with torch.no_grad():
        L = loss.scales.project_labels(loss.head.label_features().double())
    g = loss.scales.geometry
    return L[..., L.shape[-1] - h :].numpy(), float(scalar(g.c)) if g.hyperbolic else 1.0, g


def _write_label_figures(out: Path, tree: LabelTree, records: Sequence[dict[str, Any]]) -> None:
    """``<out>/labels.html`` of the runs in ``records`` (:func:`hierviz.report.htc.write_label_figures`)."""
    labels = []
    for r in records:
        got = label_points(Path(r["embeddings"]).parent, tree, r)
        if got is not None:
            labels.append((r["method"], got[0], got[2]))
    write_label_figures(out / "labels.html", tree, labels)


class _EarlyStop(Exception):
    """Raised by :func:`train_htc`'s epoch callback to end :func:`hierviz.training.fit` early."""


def train_htc(
    data: HTCData,
    method: str,
    cfg: HTCConfig,
    seed: int = 0,
    *,
    tokenizer: Any = None,
    encoded: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train one method with one seed through :func:`hierviz.training.fit`; evaluate the best-on-val model.

    The loop is the one of every method (``hierviz compare``'s) with the HyILR methods' settings
    (:data:`hierviz.methods.hyilr.HYILR_TRAIN`): Adam at the constant learning rate ``cfg.lr``
    for the model and the objective's scalars (Paper 05 (HyILR) §5.1.2), no weight decay,
    gradients of the model clipped at norm 5, shuffled
    batches of ``cfg.batch_size`` (the last partial batch dropped), on the CPU with
    ``cfg.threads`` threads. After each epoch a callback scores the validation split (micro +
    macro F1), keeps the best state and stops after ``cfg.patience`` epochs without gain.

    Parameters
    ----------
    data : HTCData
    method : str
        A name of :data:`hierviz.methods.paper05.HTC_METHODS`.
    cfg : HTCConfig
    seed : int, default 0
    tokenizer : optional
        Reuse a fitted tokenizer (else :func:`hierviz.methods.paper05.build_tokenizer`).
    encoded : dict, optional
        ``{"train"|"val"|"test": (ids, mask)}`` already encoded with ``tokenizer``.
    progress : bool, default True
        The loop's progress bar.

    Returns
    -------
    dict
        ``method``, ``seed``, ``test`` (:func:`hierviz.metrics.htc.hierarchical_f1`), ``val``,
        ``levels``, ``buckets``, ``history`` (per epoch: loss, bce, cl, negatives, val micro/macro,
        c, alpha_t, alpha_l), ``c``, ``alpha_t``, ``alpha_l``, ``radius`` (mean/max distance to the
        origin of the projected test texts and labels), ``label_points`` (labels, h) projected
        labels and ``points_c`` (the curvature of the geometry they lie on), ``seconds``, and
        ``model``/``scales``/``tokenizer`` objects.

    Raises
    ------
    NonFiniteLossError
        A NaN/inf loss (names the epoch and step; lower ``lr``).

    Examples
    --------
    >>> cfg = HTCConfig.preset("smoke", dataset="synthetic-htc", methods=("hyilr",), seeds=(0,), max_train=40)
    >>> res = train_htc(load_data(cfg), "hyilr", cfg, seed=0, progress=False)
    >>> sorted(res["test"]), len(res["history"]) <= cfg.epochs
    (['hi_macro_f1', 'hi_micro_f1', 'macro_f1', 'micro_f1'], True)
    """
    HTC_METHODS.get(method)  # UnknownNameError naming the nearest
    tree = data.tree
    tokenizer = tokenizer or build_tokenizer(cfg, data)
    if encoded is None:
        encoded = {s: tokenizer.encode(data.part(s).texts, cfg.max_len) for s in ("train", "val", "test")}
    cols = label_columns(tree)
    Y = {s: torch.from_numpy(data.part(s).targets[:, cols]) for s in ("train", "val", "test")}
    seed_run(seed)  # every RNG and process switch from the seed: independent of earlier runs
    model, objective = build_htc_run(cfg, method, data, len(tokenizer))
    net, scales = model.net, objective.scales
    history: list[dict[str, float]] = []
    state: dict[str, Any] = {"best": -1.0, "bad": 0, "saved": None}

    def on_epoch(epoch: int, info: dict[str, Any]) -> None:
        pv = _predict(net, *encoded["val"], cfg.batch_size) >= cfg.threshold
        val = hierarchical_f1(_full(Y["val"].numpy(), tree), _full(pv, tree), tree)
        row = {"epoch": epoch + 1, **{k: v[-1] for k, v in info["history"].items() if k != "lr_head"}}
        row.update({"val_micro_f1": val["micro_f1"], "val_macro_f1": val["macro_f1"]})
        row.update({k: float(getattr(scales, k).detach()) for k in ("c", "alpha_t", "alpha_l")})
        history.append(row)
        score = val["micro_f1"] + val["macro_f1"]
        if score > state["best"]:
            state.update(best=score, bad=0, saved=(copy.deepcopy(net.state_dict()), copy.deepcopy(scales.state_dict())))
            return
        state["bad"] += 1
        if state["bad"] >= cfg.patience:
            raise _EarlyStop

    config = TrainConfig(
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr_backbone=cfg.lr,
        lr_head=cfg.lr,
        warmup_epochs=0.0,
        ema_decay=None,
        grad_clip=5.0,
        seed=seed,
        device="cpu",
        amp=False,
        progress=progress,
        **HYILR_TRAIN.to_dict(),
    )
    train = TensorDataset(PackedTokens.pack(*encoded["train"]), Y["train"])
    t0 = time.perf_counter()
    old_threads = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        fit(config, model, objective, train, callbacks=[on_epoch])
    except _EarlyStop:
        pass
    finally:
        torch.set_num_threads(old_threads)
    if state["saved"] is not None:
        net.load_state_dict(state["saved"][0])
        scales.load_state_dict(state["saved"][1])
    seconds = time.perf_counter() - t0
    res = _evaluate(net, scales, encoded, Y, data, cfg)
    res.update(method=method, seed=seed, history=history, seconds=seconds, model=net, scales=scales)
    res["tokenizer"] = tokenizer
    return res


# ------------------------------------------------------------------ ``hierviz htc``
def add_import_option(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """Add the repeatable ``--import MODULE`` option (``args.imports``, a list of str) to ``parser``.

    Every ``hierviz`` sub-command that may meet a name a user module registers takes it.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    help : str or None
        The option's line in ``--help`` (None: listed without one).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_import_option(p)
    >>> p.parse_args(["--import", "a", "--import", "b.c"]).imports, p.parse_args([]).imports
    (['a', 'b.c'], [])
    """
    parser.add_argument("--import", action="append", default=[], metavar="MODULE", dest="imports", help=help)


def add_htc_parser(sub: Any) -> Any:
    """Add the ``htc`` sub-command to the ``hierviz`` parser (``sub`` from ``add_subparsers``)."""
    h = sub.add_parser(
        "htc",
        help="hierarchical text classification: HyILR and its ablations (Paper 05) on 20news or an HTC .jsonl",
        description="Train HyILR and the Table 4 ablations (methods x seeds, and a lambda sweep of hyilr) "
        "as hierviz compare runs, evaluate micro/macro F1 and Hi-MiF1/Hi-MaF1 on the test split, and write "
        "htc_results.md/.csv, levels.csv, buckets.csv, labels.html and compare's results and report.html into --out "
        "(finished runs are reused).",
    )
    h.add_argument("--preset", default="medium", help=f"size: {', '.join(HTC_PRESETS)} (default medium)")
    h.add_argument("--dataset", help="20news (default), synthetic-htc, or a <name>_htc.jsonl from data_scripts/")
    h.add_argument("--data", dest="data_dir", help="folder holding text/20news-bydate.tar.gz")
    h.add_argument("--methods", help=f"comma-separated, from: {', '.join(HTC_METHODS.names())}")
    h.add_argument("--seeds", help="comma-separated integers 0,1,…,n−1, e.g. 0,1,2")
    h.add_argument("--lam", type=float, help="λ, weight of the contrastive loss (default 0.3)")
    h.add_argument("--lams", help="comma-separated λ values for a sweep of hyilr, e.g. 0.1,0.3,0.6,1.0")
    h.add_argument("--epochs", type=int)
    h.add_argument("--bert", help=argparse.SUPPRESS)  # refused with a one-line error (hierviz 0.3)
    h.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any HTCConfig field")
    add_import_option(h, help="import a module first (a user method, dataset or encoder)")
    h.add_argument("--out", default="hierviz-htc", help="output folder")
    h.add_argument("--resume", action="store_true", help="reuse finished runs in --out (the default)")
    h.add_argument("--fresh", action="store_true", help="retrain runs already in --out")
    h.add_argument("--quiet", action="store_true", help="no progress bars")
    h.add_argument("--debug", action="store_true", help="print full tracebacks")
    return h


def _parse_value(v: str) -> Any:
    try:
        return json.loads(v)
    except ValueError:
        return v


def run_htc_command(args: Any) -> int:
    """Run ``hierviz htc`` from parsed arguments; prints the markdown table. Returns 0."""
    over: dict[str, Any] = {}
    for item in args.set:
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        over[k.strip()] = _parse_value(v.strip())
    if args.dataset:
        over["dataset"] = args.dataset
    if args.methods:
        over["methods"] = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    if args.seeds:
        try:
            over["seeds"] = tuple(int(s) for s in args.seeds.split(","))
        except ValueError:
            raise ValueError(f"--seeds must be comma-separated integers, got {args.seeds!r}") from None
    if args.bert is not None:
        raise ConfigError(
            "--bert: hierviz htc runs through compare, which trains its own text encoder (no BERT checkpoint); "
            "drop --bert (a larger encoder: --preset full, or --set h=… layers=… heads=…)"
        )
    if args.resume and args.fresh:
        raise ConfigError("--resume and --fresh contradict each other; pass one of them")
    for k in ("lam", "epochs"):
        if getattr(args, k) is not None:
            over[k] = getattr(args, k)
    try:
        lams = [float(x) for x in args.lams.split(",")] if args.lams else None
    except ValueError:
        raise ValueError(f"--lams must be comma-separated numbers, got {args.lams!r}") from None
    cfg = HTCConfig.preset(args.preset, **over)
    run_htc(cfg, args.out, lams=lams, data_dir=args.data_dir, resume=not args.fresh, progress=not args.quiet)
    print((Path(args.out) / "htc_results.md").read_text(encoding="utf-8"))
    print(f"report: {Path(args.out) / 'report.html'}")
    return 0
