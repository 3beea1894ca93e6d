"""``hierviz htc``: Paper 05 (HyILR)'s experiment driver (methods x seeds, a λ sweep, tables, report).

The methods, the model and the objective live in :mod:`hierviz.methods.paper05`; one run,
:func:`train_htc`, trains them with :func:`hierviz.training.fit` (the loop of every method); this
module runs a plan of them into a folder and writes the
tables and the HTML report (:func:`hierviz.report.htc.write_report`), so that the method layer
imports no report or figure. ``hierviz htc --engine compare`` runs the same plan through
``hierviz compare`` instead (:mod:`hierviz.experiments.htc_compare`, issue 23).
"""

from __future__ import annotations

import copy
import csv
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import TensorDataset
from tqdm.auto import tqdm

from hierviz.data.loaders.htc import HTCData
from hierviz.experiments.records import safe_name
from hierviz.methods.paper05 import (
    HTC_METHODS,
    HTC_PRESETS,
    METRIC_KEYS,
    HTCConfig,
    PackedTokens,
    _atomic_json,
    _evaluate,
    _full,
    _predict,
    build_htc_run,
    build_tokenizer,
    frequency_prior_scores,
    load_data,
    markdown_table,
    summarise,
)
from hierviz.metrics.htc import hierarchical_f1, label_columns
from hierviz.training import TrainConfig, fit, seed_everything

__all__ = ["add_htc_parser", "run_htc", "run_htc_command", "train_htc"]


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

    The loop is the one of every method (``hierviz compare``'s): AdamW with weight decay 0
    (Adam) at ``cfg.lr`` for the model and the objective's scalars, the loop's cosine schedule
    over ``cfg.epochs`` without warm-up, gradients of the model clipped at norm 5, shuffled
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
    seed_everything(seed)
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
        weight_decay=0.0,
        warmup_epochs=0.0,
        ema_decay=None,
        grad_clip=5.0,
        seed=seed,
        device="cpu",
        amp=False,
        progress=progress,
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


def run_htc(
    cfg: HTCConfig,
    out: str | os.PathLike,
    *,
    lams: Sequence[float] | None = None,
    data_dir: str | None = None,
    resume: bool = True,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train every method × seed (× λ of ``lams`` for ``hyilr``), write the table and the report.

    Each finished run is written atomically to ``<out>/runs/<method>_lam<λ>_seed<s>.json`` and
    skipped on a later call with ``resume=True`` (same config). Writes ``results.csv``,
    ``seeds.csv`` (one row per run: the test metrics as fractions, c, α), ``baselines.csv``
    (the frequency prior),
    ``results.md`` (mean ± std over seeds; learned ``c``, ``α_t``, ``α_l``; radii),
    ``levels.csv``, ``buckets.csv``, ``labels_<method>.npz`` (projected label embeddings of seed 0)
    and ``report.html`` (table, label embeddings on the Poincaré disk coloured by depth, per-level
    and long-tail F1, training curves).

    Parameters
    ----------
    cfg : HTCConfig
    out : path
    lams : sequence of float, optional
        A λ sweep for ``hyilr`` (besides ``cfg.lam`` for every method).
    data_dir : str, optional
    resume : bool, default True
    progress : bool, default True

    Returns
    -------
    list of dict
        :func:`summarise` rows.

    Raises
    ------
    ValueError
        ``out`` holds runs of another config (with ``resume=True``).
    """
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    cfg_path = out / "config.json"
    cfg_dict = {**asdict(cfg), "lams": list(lams or [])}
    if resume and cfg_path.is_file():
        old = json.loads(cfg_path.read_text())
        same = {k: v for k, v in old.items() if k not in ("methods", "seeds", "lams")} == {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in cfg_dict.items()
            if k not in ("methods", "seeds", "lams")
        }
        if not same:
            raise ValueError(f"{out} holds runs of another htc config; pick a new --out or pass resume=False")
    _atomic_json(cfg_path, cfg_dict)
    data = load_data(cfg, data_dir)
    data.tree.to_json(out / "tree.json")
    tok = build_tokenizer(cfg, data)
    enc = {s: tok.encode(data.part(s).texts, cfg.max_len) for s in ("train", "val", "test")}
    jobs = [(m, cfg.lam, s) for m in cfg.methods for s in cfg.seeds]
    jobs += [("hyilr", float(lam), s) for lam in (lams or []) if float(lam) != cfg.lam for s in cfg.seeds]
    records = []
    for m, lam, s in tqdm(jobs, desc="htc runs", disable=not progress):
        path = out / "runs" / f"{safe_name(m)}_lam{lam:g}_seed{s}.json"  # one sanitiser (issue 27 #18)
        if resume and path.is_file():
            records.append(json.loads(path.read_text()))
            continue
        res = train_htc(data, m, replace(cfg, lam=lam), s, tokenizer=tok, encoded=enc, progress=progress)
        rec = {k: v for k, v in res.items() if k not in ("model", "scales", "tokenizer", "label_points", "points_c")}
        rec.update(lam=lam, dataset=data.name)
        if s == cfg.seeds[0] and lam == cfg.lam:
            np.savez_compressed(
                out / f"labels_{m}.npz",
                points=res["label_points"],
                names=np.array([n for n in data.tree.nodes if n != data.tree.root]),
                depth=np.array([data.tree.depth(n) for n in data.tree.nodes if n != data.tree.root]),
                c=res["points_c"],  # the curvature of the geometry the points lie on
                c_learned=res["c"],
                geometry=HTC_METHODS.get(m).geometry,
            )
        _atomic_json(path, rec)
        records.append(rec)
    rows = summarise(records)
    _write_tables(out, rows, records, data, cfg)
    return rows


def _write_tables(out: Path, rows, records, data: HTCData, cfg: HTCConfig) -> None:
    with open(out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(out / "seeds.csv", "w", newline="") as f:  # issue 24: one row per run, for regenerating the table
        w = csv.DictWriter(f, fieldnames=["method", "lam", "seed", *METRIC_KEYS, "c", "alpha_t", "alpha_l"])
        w.writeheader()
        for r in records:
            w.writerow(
                {"method": r["method"], "lam": r["lam"], "seed": r["seed"], **{k: r["test"][k] for k in METRIC_KEYS}}
                | {k: r[k] for k in ("c", "alpha_t", "alpha_l")}
            )
    for name, key in (("levels", "levels"), ("buckets", "buckets")):
        with open(out / f"{name}.csv", "w", newline="") as f:
            flat = [{"method": r["method"], "lam": r["lam"], "seed": r["seed"], **x} for r in records for x in r[key]]
            w = csv.DictWriter(f, fieldnames=list(flat[0]))
            w.writeheader()
            w.writerows(flat)
    sizes = {s: int((data.split == s).sum()) for s in ("train", "val", "test")}
    md = markdown_table(rows, f"{data.name}: test split, mean ± std over seeds (percent)")
    prior = frequency_prior_scores(data)
    with open(out / "baselines.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["baseline", *prior])
        w.writeheader()
        w.writerow({"baseline": "frequency_prior", **prior})
    md += (
        "| *Frequency prior* | – | – | "
        + " | ".join(f"{100 * prior[k]:.2f}" for k in METRIC_KEYS)
        + " | – | – | – | – | – |\n\n*Frequency prior*: the train split's most frequent label set predicted for "
        "every test document (hierviz.metrics.baselines.frequency_prior_targets).\n"
    )
    md += (
        f"\n{sizes} documents; tree {data.tree.num_nodes - 1} labels, {data.tree.height} levels; "
        f"encoder h={cfg.h}, layers={cfg.layers}, max_len={cfg.max_len}, epochs ≤ {cfg.epochs}, τ={cfg.tau}.\n"
        "c, α_t, α_l: learned values (c: the curvature magnitude, the paper's k; unused by CL-Euclidean and w/o CL). label r / text r: mean distance "
        "to the origin of the projected label / test-text embeddings, in the run's own space.\n"
    )
    (out / "results.md").write_text(md)
    # `hierviz --help` builds the htc parser from this module and does without plotly, so
    # heavy: plotly (the HTML report imports it), imported only when a report is written
    from hierviz.report.htc import write_report

    write_report(out, rows, records)


# ------------------------------------------------------------------ ``hierviz htc``
def add_htc_parser(sub: Any) -> Any:
    """Add the ``htc`` sub-command to the ``hierviz`` parser (``sub`` from ``add_subparsers``)."""
    h = sub.add_parser(
        "htc",
        help="hierarchical text classification: HyILR and its ablations (Paper 05) on 20news or an HTC .jsonl",
        description="Train HyILR and the Table 4 ablations (methods x seeds, and a lambda sweep of hyilr), "
        "evaluate micro/macro F1 and Hi-MiF1/Hi-MaF1 on the test split, and write results.csv, results.md "
        "and report.html into --out (finished runs are reused).",
    )
    h.add_argument("--preset", default="medium", help=f"size: {', '.join(HTC_PRESETS)} (default medium)")
    h.add_argument("--dataset", help="20news (default), synthetic-htc, or a <name>_htc.jsonl from data_scripts/")
    h.add_argument("--data", dest="data_dir", help="folder holding text/20news-bydate.tar.gz")
    h.add_argument("--methods", help=f"comma-separated, from: {', '.join(HTC_METHODS.names())}")
    h.add_argument("--seeds", help="comma-separated integers, e.g. 0,1,2")
    h.add_argument("--lam", type=float, help="λ, weight of the contrastive loss (default 0.3)")
    h.add_argument("--lams", help="comma-separated λ values for a sweep of hyilr, e.g. 0.1,0.3,0.6,1.0")
    h.add_argument("--epochs", type=int)
    h.add_argument("--bert", help="a local BERT checkpoint folder (needs the transformers package)")
    h.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any HTCConfig field")
    h.add_argument(
        "--engine",
        choices=("htc", "compare"),
        default="htc",
        help="htc (default): this driver (token pipeline, early stopping); compare: the same methods as one "
        "hierviz compare plan on 20news-text, Table 4 written from its run records (issue 23; see "
        "hierviz.experiments.htc_compare for what differs)",
    )
    h.add_argument("--out", default="hierviz-htc", help="output folder")
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
    for k in ("lam", "epochs", "bert"):
        if getattr(args, k) is not None:
            over[k] = getattr(args, k)
    try:
        lams = [float(x) for x in args.lams.split(",")] if args.lams else None
    except ValueError:
        raise ValueError(f"--lams must be comma-separated numbers, got {args.lams!r}") from None
    cfg = HTCConfig.preset(args.preset, **over)
    if getattr(args, "engine", "htc") == "compare":
        # heavy: plotly (compare's report; hierviz.report.htc imports it), imported only for this engine
        from hierviz.experiments.htc_compare import run_htc_compare

        run_htc_compare(
            cfg, args.out, lams=lams, data_dir=args.data_dir, resume=not args.fresh, progress=not args.quiet
        )
        print((Path(args.out) / "htc_results.md").read_text())
        print(f"report: {Path(args.out) / 'report.html'}")
        return 0
    run_htc(cfg, args.out, lams=lams, data_dir=args.data_dir, resume=not args.fresh, progress=not args.quiet)
    print((Path(args.out) / "results.md").read_text())
    print(f"report: {Path(args.out) / 'report.html'}")
    return 0
