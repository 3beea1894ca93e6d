"""``hierviz htc``: Paper 05 (HyILR)'s experiment driver (methods x seeds, a λ sweep, tables, report).

The methods, the model and one run (:func:`hierviz.methods.paper05.train_htc`) live in
:mod:`hierviz.methods.paper05`; this module runs a plan of them into a folder and writes the
tables and the HTML report (:func:`hierviz.report.htc.write_report`), so that the method layer
imports no report or figure.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hierviz.data.loaders.htc import HTCData
from hierviz.experiments.records import safe_name
from hierviz.methods.paper05 import (
    HTC_METHODS,
    HTC_PRESETS,
    METRIC_KEYS,
    HTCConfig,
    _atomic_json,
    build_tokenizer,
    frequency_prior_scores,
    load_data,
    markdown_table,
    summarise,
    train_htc,
)

__all__ = ["add_htc_parser", "run_htc", "run_htc_command"]


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
    # in the function: the HTML report imports plotly, which `hierviz --help` (this module builds
    # the htc parser) does without
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
    run_htc(cfg, args.out, lams=lams, data_dir=args.data_dir, resume=not args.fresh, progress=not args.quiet)
    print((Path(args.out) / "results.md").read_text())
    print(f"report: {Path(args.out) / 'report.html'}")
    return 0
