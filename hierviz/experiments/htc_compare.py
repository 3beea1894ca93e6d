"""``hierviz htc --engine compare``: Paper 05 (HyILR)'s experiment as ``compare`` plans (issue 23).

An :class:`~hierviz.methods.paper05.HTCConfig` (an ``hierviz htc`` preset and its options)
becomes one :class:`~hierviz.experiments.ExperimentConfig` (:func:`compare_config`) on the
``20news-text`` dataset (token sequences, the ``hyilr-text`` encoder, label–text attention
over the tokens), run by :func:`hierviz.experiments.compare` (``run_one`` → ``fit`` → typed
records → compare's tables and report). A λ sweep of ``hyilr`` is one more ``compare`` plan per
λ (``<out>/lam<λ>/``). Table 4's shape (method × Micro-F1, Macro-F1, Hi-MiF1, Hi-MaF1, mean ±
std over seeds, percent) is then written from the runs' typed records
(:func:`hierviz.report.htc.classifier_rows`) into ``<out>/htc_results.md`` and ``.csv``, and
the per-level and long-tail F1 of the saved predictions into ``levels.csv`` and ``buckets.csv``
(:func:`hierviz.report.htc.classifier_levels`).

What differs from ``hierviz htc``'s own driver (:func:`hierviz.experiments.htc.run_htc`):
a stratified subset of ``data.limit = max_train + max_test`` messages before the official
split (htc caps train and test separately), the encoder at ``h = 4 · model.width`` with one layer and
4 heads and a vocabulary of 8000 words, and compare's linear probe, radius and figures on top;
only ``20news`` (no BERT, no ``.jsonl`` corpora, whose documents may have several label paths);
no label-disk figure. The optimiser (AdamW, weight decay 0, no warm-up, cosine schedule,
gradient clip 5), λ, τ, early stopping, the dropout on ``vec(F)`` and the log-odds bias are
``train_htc``'s.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hierviz.experiments.compare import compare
from hierviz.experiments.config import ConfigError, ExperimentConfig, resolve_config
from hierviz.experiments.records import load_records
from hierviz.hierarchy import LabelTree
from hierviz.methods.paper05 import HTCConfig
from hierviz.report.htc import classifier_levels, classifier_markdown, classifier_rows

__all__ = ["compare_config", "run_htc_compare"]


def compare_config(cfg: HTCConfig, out: str | os.PathLike, *, lam: float | None = None) -> ExperimentConfig:
    """The ``compare`` config of an ``hierviz htc`` config (see the module notes for what differs).

    Parameters
    ----------
    cfg : HTCConfig
    out : path
        ``--out`` of the comparison.
    lam : float, optional
        λ (``loss.hyilr_lambda``; default ``cfg.lam``).

    Returns
    -------
    ExperimentConfig

    Raises
    ------
    ConfigError
        A dataset other than 20news, a BERT checkpoint, seeds other than ``0 … n−1``, or a
        ``max_len`` below 8.

    Examples
    --------
    >>> c = compare_config(HTCConfig.preset("smoke", methods=("hyilr",)), "out")
    >>> c.data.dataset, c.data.split, c.model.encoder, c.data.image_size, c.model.width, c.data.limit
    ('20news-text', 'official', 'hyilr-text', 32, 4, 300)
    >>> c.train.epochs, c.train.lr_head, c.train.weight_decay, c.train.grad_clip, c.loss["tau"], c.train.patience
    (1, 0.001, 0.0, 5.0, 0.07, 1)
    """
    if cfg.dataset != "20news":
        raise ConfigError(
            f"dataset: hierviz htc --engine compare runs 20news only, got {cfg.dataset!r}; use --engine htc"
        )
    if cfg.bert:
        raise ConfigError("bert: hierviz htc --engine compare trains its own text encoder; use --engine htc for BERT")
    if tuple(cfg.seeds) != tuple(range(len(cfg.seeds))):
        raise ConfigError(f"seeds: compare runs seeds 0 … n−1, got {list(cfg.seeds)}; use --seeds 0,1,…")
    if cfg.h % 4 or cfg.h < 4:
        raise ConfigError(f"h: the hyilr-text encoder has h = 4 · model.width, got h={cfg.h}; use a multiple of 4")
    over: dict[str, Any] = {
        "methods": list(cfg.methods),
        "geometries": ["euclidean"],  # the probe's space; HyILR's own space is the method's (Table 4)
        "seeds": len(cfg.seeds),
        "out": str(out),
        "eval.projection": "pca",
        "data.dataset": "20news-text",
        "data.tree": "20news",
        "data.image_size": int(cfg.max_len),
        "data.split": "official",  # bydate train/test, 10 % of train as val (as hierviz htc)
        "data.limit": None if cfg.max_train is None or cfg.max_test is None else int(cfg.max_train + cfg.max_test),
        "model.encoder": "hyilr-text",
        "model.width": cfg.h // 4,
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
    plans = [(out, compare_config(cfg, out))]
    for lam in lams or ():
        if float(lam) != cfg.lam:
            sub = out / f"lam{float(lam):g}"
            c = compare_config(cfg, sub, lam=float(lam))
            c.methods = ["hyilr"]
            plans.append((sub, c))
    records = []
    for folder, c in plans:
        compare(c, resume=resume, progress=progress, verbose=progress)
        records += load_records(folder)
    rows = classifier_rows(records)
    prior = None
    if (out / "baselines.csv").is_file():  # compare's Majority row: the frequency prior's clf_* columns
        with open(out / "baselines.csv", newline="", encoding="utf-8") as fh:
            prior = next((r for r in csv.DictReader(fh) if r.get("baseline") == "majority"), None)
    title = "20news-text (hierviz htc --engine compare): test split, mean ± std over seeds (percent)"
    (out / "htc_results.md").write_text(classifier_markdown(rows, title, prior), encoding="utf-8")
    tables = {"htc_results": rows}
    tables["levels"], tables["buckets"] = classifier_levels(records, LabelTree.from_json(out / "tree.json"))
    for name, table in tables.items():
        if table:
            with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=list(table[0]))
                w.writeheader()
                w.writerows(table)
    return rows
