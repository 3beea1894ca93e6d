"""Paper 03's tables from ``compare``'s run records: per-fold rows, summaries, Table 2, the paired differences.

``hierviz retrieval`` runs its grid through ``compare`` (:mod:`.grid`); :func:`fold_rows` turns
the typed run records (one per variant and fold) into the per-fold rows of ``folds.csv``, with
the random-ranking row of each fold from the labels the runs saved; :func:`summarise` gives
mean ± std over folds (``table2.csv``), :func:`table2_markdown` the table shaped like Paper 03's
Table 2 and :func:`paired_markdown` each Hyper-DINO(V, 32) minus V, paired by fold.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.metrics.baselines import random_ranking_scores
from hierviz.report.stats import paired_ci
from hierviz.retrieval.config import RANDOM_RANKING

__all__ = ["fold_means", "fold_rows", "chance_row", "summarise", "table2_markdown", "paired_markdown", "write_tables"]

#: Paper 03's notation, read back from a run record's display name (:func:`hierviz.retrieval.variant_name`).
_MAPPER = re.compile(r"^(Hyper-DINO|Cosine-mapper)\((.+), (\d+)\)$")
_BASE = re.compile(r"^(PCA|NCA)\((\d+)\)$|^scaled$")
_METRIC = ("map@", "p@", "r_precision", "ndcg")


def chance_row(fold: int, yq: Any, yg: Any, ks: Sequence[int], denominator: str) -> dict[str, Any] | None:
    """The expected scores of a uniformly random ranking of one fold's references (None if undefined).

    Examples
    --------
    >>> r = chance_row(0, [0, 1], [0, 0, 1, 1], (1,), "min_k_r")
    >>> r["variant"], r["map@1"]
    ('Random ranking (chance)', 0.5)
    """
    try:
        scores = random_ranking_scores(yq, yg, tuple(ks), denominator=denominator)
    except ValueError:  # the "hits" normaliser, or a query class without references
        return None
    row: dict[str, Any] = {
        "fold": fold,
        "mapper_seed": "",
        "variant": RANDOM_RANKING,
        "base": "chance",
        "n": "",
        "dim_out": "",
        "storage": "",
        "bytes": 0,
        "clip_fraction": "",
        "seconds": 0.0,
    }
    return {**row, **scores}


def _variant(display: str) -> tuple[str, Any, str] | None:
    """``(base, dim_out or "", kind)`` of a display name; kind ``"base"``, ``"mapper"`` or ``"cosine"``."""
    m = _MAPPER.match(display)
    if m:
        inner = _variant(m.group(2))
        if inner is None:
            return None
        return inner[0], int(m.group(3)), "mapper" if m.group(1) == "Hyper-DINO" else "cosine"
    m = _BASE.match(display)
    if m:
        return ("scaled" if m.group(1) is None else m.group(1).lower()), "", "base"
    return None


def fold_rows(
    records: Sequence[Mapping[str, Any]],
    *,
    ks: Sequence[int] = (1, 5, 10, 20),
    denominator: str = "min_k_r",
    float16_base: bool = True,
    folds: int | None = None,
) -> list[dict[str, Any]]:
    """One row per fold, mapper seed, variant and storage from ``compare``'s records of a retrieval grid.

    Parameters
    ----------
    records : sequence of mapping
        Run records (``result.json``) of the ``retrieval-folds`` protocol: ``seed`` is the
        fold (``seed mod folds`` when ``folds`` is given), ``method_display`` the variant
        (``PCA(16)``, ``Hyper-DINO(PCA(16), 32)``, ``Cosine-mapper(PCA(16), 32)``); records of
        other methods are skipped.
    ks, denominator
        Of the chance rows (the random ranking of each fold's references), from the labels
        the fold's runs saved (``embeddings``).
    float16_base : bool, default True
        The storage name of the base rows (``fp16`` or ``fp32``).
    folds : int or None, default None
        The grid's folds when it ran several mapper seeds per fold (``eval.folds``): run seed
        ``s`` is fold ``s mod folds`` and mapper seed ``s // folds``. None: one run per fold.

    Returns
    -------
    list of dict
        The columns of ``folds.csv``: ``fold``, ``mapper_seed``, ``variant``, ``base``, ``n``,
        ``dim_out``, ``storage``, ``bytes``, ``clip_fraction``, ``seconds`` and the metrics.
    """
    rows: list[dict[str, Any]] = []
    labels: dict[int, tuple] = {}
    for rec in sorted(records, key=lambda r: int(r["seed"])):
        display = str(rec.get("method_display") or rec["method"])
        parsed = _variant(display)
        if parsed is None or rec.get("protocol") not in (None, "retrieval-folds"):
            continue
        base, dim_out, kind = parsed
        seed = int(rec["seed"])
        fold, repeat = (seed % folds, seed // folds) if folds else (seed, 0)
        met = dict(rec["metrics"])
        emb = rec.get("embeddings")
        if fold not in labels and emb and Path(emb).is_file():
            with np.load(emb) as f:
                if "y_train" in f.files and "y_test" in f.files:
                    labels[fold] = (f["y_test"], f["y_train"])
        seconds = float(rec.get("train_seconds") or 0.0) + float(rec.get("eval_seconds") or 0.0)
        common = {"fold": fold, "mapper_seed": repeat, "variant": display, "base": base, "n": int(met.get("n", 0)),
                  "dim_out": dim_out}  # fmt: skip
        plain = {k: v for k, v in met.items() if k.startswith(_METRIC)}
        if kind == "base":
            storage = "fp16" if float16_base else "fp32"
            rows.append({**common, "storage": storage, "bytes": int(met["bytes"]), "clip_fraction": "",
                         "seconds": seconds, **plain})  # fmt: skip
            continue
        if kind == "cosine":
            rows.append({**common, "storage": "cosine", "bytes": int(met["bytes"]), "clip_fraction": "",
                         "seconds": seconds, **plain})  # fmt: skip
            continue
        clip = met.get("clip_fraction", "")
        for storage in dict.fromkeys(k[: -len("_bytes")] for k in met if k.endswith("_bytes")):
            vals = {k[len(storage) + 1 :]: v for k, v in met.items() if k.startswith(f"{storage}_")}
            nbytes = vals.pop("bytes")
            rows.append({**common, "storage": storage, "bytes": int(nbytes), "clip_fraction": clip,
                         "seconds": seconds, **vals})  # fmt: skip
    chance = []
    for fold in sorted(labels):
        c = chance_row(fold, *labels[fold], ks, denominator)
        if c is not None:
            chance.append(c)
    return chance + rows


def fold_means(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of :func:`fold_rows` averaged over mapper seeds: one row per fold, variant and storage.

    A fold's mapper seeds share its queries and references, so the fold is the unit of the
    spread and of the paired intervals; the seeds only lower each fold's noise. Rows of one
    mapper seed are returned as they are (``mapper_seed`` dropped).

    Examples
    --------
    >>> rows = [{"fold": 0, "mapper_seed": s, "variant": "v", "storage": "fp16", "map@1": m, "clip_fraction": ""}
    ...         for s, m in ((0, 0.5), (1, 0.7))]
    >>> [(r["fold"], r["map@1"]) for r in fold_means(rows)]
    [(0, 0.6)]
    """
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["variant"], r["storage"], int(r["fold"])), []).append(r)
    out = []
    for rs in groups.values():
        row = {k: v for k, v in rs[0].items() if k != "mapper_seed"}
        if len(rs) > 1:
            for k in row:
                if k.startswith(_METRIC) or k in ("seconds", "clip_fraction"):
                    vals = [r[k] for r in rs if k in r and r[k] != ""]
                    row[k] = float(np.mean(vals)) if vals else row[k]
        out.append(row)
    return out


#: What :func:`paired_markdown` subtracts from Hyper-DINO(V, 32): the base V alone, or the cosine control.
_AGAINST = {"base": ("V", "fp16"), "cosine": ("Cosine-mapper(V, 32)", "cosine")}


def paired_markdown(
    rows: Sequence[Mapping[str, Any]],
    *,
    storage: str = "fp16",
    metrics: Sequence[str] = ("map@1", "map@5", "map@20"),
    against: str = "base",
) -> str:
    """Hyper-DINO(V, 32) − V (or − the cosine control) per fold: mean and 95 % interval over folds.

    Parameters
    ----------
    rows : sequence of mapping
        :func:`fold_rows` (or a ``folds.csv`` read back); several mapper seeds of a fold are
        averaged first (:func:`fold_means`).
    storage : str, default "fp16"
        The mapper's reference storage.
    metrics : sequence of str
    against : {"base", "cosine"}, default "base"
        ``"base"``: V alone (the paper's comparison); ``"cosine"``: Cosine-mapper(V, 32), the same
        mapper trained on the unit sphere (how much of the gain is the ball).

    Returns
    -------
    str
        A Markdown table (``""`` with fewer than 2 folds, or no variant with both sides: no interval).

    Raises
    ------
    ValueError
        ``against`` is not ``"base"`` or ``"cosine"``.
    """
    if against not in _AGAINST:
        raise ValueError(f"against must be 'base' or 'cosine', got {against!r}")
    seeds = len({r["mapper_seed"] for r in rows if r.get("mapper_seed") not in (None, "")}) or 1
    rows = fold_means(rows)
    by = {(r["variant"], r["storage"], int(r["fold"])): r for r in rows}
    folds = sorted({int(r["fold"]) for r in rows})
    if len(folds) < 2:
        return ""
    bases = list(dict.fromkeys(r["variant"] for r in rows if r["dim_out"] == "" and r["base"] != "chance"))
    other, other_storage = _AGAINST[against]
    title = f"Hyper-DINO(V, 32) − {other}"
    lines = [f"| {title} | " + " | ".join(f"Δ {k.upper()} (points)" for k in metrics) + " | clip fraction |"]
    lines.append("|---|" + "---:|" * (len(metrics) + 1))
    for v in bases:
        hd, ref = f"Hyper-DINO({v}, 32)", other.replace("V", v)
        if any((hd, storage, f) not in by or (ref, other_storage, f) not in by for f in folds):
            continue
        cells = [
            _ci(paired_ci([by[(hd, storage, f)][k] for f in folds], [by[(ref, other_storage, f)][k] for f in folds]))
            for k in metrics
        ]
        clips = [by[(hd, storage, f)]["clip_fraction"] for f in folds]
        lines.append(
            f"| {v} | " + " | ".join(cells) + " | " + " ".join(f"{round(float(c), 4):g}" for c in clips) + " |"
        )
    if len(lines) == 2:
        return ""
    return (
        "\n".join(lines)
        + f"\n\nΔ = Hyper-DINO(V, 32) ({storage} references) − {other}{' alone' if against == 'base' else ''} on the same fold, over {len(folds)} folds"
        + (f" (each the mean of {seeds} mapper seeds)" if seeds > 1 else "")
        + "; [low, high]: 95 % Student-t interval of the mean difference (hierviz.report.stats.paired_ci); "
        "* the interval excludes 0. Clip fraction: the share of points at the mapper's cap, per fold.\n"
    )


def _ci(d: tuple[float, float, float, int], scale: float = 100.0, digits: int = 2) -> str:
    """``+m [lo, hi]`` (``*`` when the interval excludes 0) of a :func:`paired_ci` result."""
    m, lo, hi = (x * scale for x in d[:3])
    star = "*" if lo > 0 or hi < 0 else ""
    return f"{m:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]{star}"


def summarise(rows: list[dict[str, Any]], ks: tuple[int, ...]) -> list[dict[str, Any]]:
    """Mean and standard deviation over folds of each (variant, storage).

    Parameters
    ----------
    rows : list of dict
        ``run_retrieval(...)["rows"]``: one dict per fold, variant and storage (several mapper
        seeds of a fold are averaged first, :func:`fold_means`: the spread is over folds).
    ks : tuple of int
        The MAP@k cut-offs of the rows (kept for the signature; every metric column is summarised).

    Returns
    -------
    list of dict
        Keys ``variant``, ``base``, ``n``, ``dim_out``, ``storage``, ``bytes``, ``folds``
        and ``<metric>_mean`` / ``<metric>_std`` for every metric of the rows.
    """
    metrics = list(dict.fromkeys(k for r in rows for k in r if k.startswith(("map@", "p@", "r_precision", "ndcg"))))
    keyed: dict[tuple, list[dict[str, Any]]] = {}
    for r in fold_means(rows):
        keyed.setdefault((r["variant"], r["storage"]), []).append(r)
    out = []
    for rs in keyed.values():
        s = {k: rs[0][k] for k in ("variant", "base", "n", "dim_out", "storage", "bytes")}
        s["folds"] = len(rs)
        for m in metrics:
            if any(m not in r for r in rs):  # the chance row has no tree NDCG
                continue
            v = np.array([r[m] for r in rs], dtype=float)
            s[f"{m}_mean"], s[f"{m}_std"] = float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0
        clips = [r["clip_fraction"] for r in rs if r["clip_fraction"] != ""]
        s["clip_fraction"] = float(np.mean(clips)) if clips else ""
        out.append(s)
    return out


def table2_markdown(summary: list[dict[str, Any]], ks: tuple[int, ...] = (1, 5, 10, 20), storage: str = "fp16") -> str:
    """A table shaped like Paper 03's Table 2: rows ``base × N``, for each k the base alone, ·→32 and ·→N.

    A last row, *Random ranking (chance)*, gives the expected MAP@k of a random ordering of
    the references (the ``chance`` rows of :func:`run_retrieval`) when the summary has one.

    MAP@k in percent, mean ± std over folds; the Hyper-DINO columns use ``storage``
    references (fp16 tangents by default: the 64-byte claim).

    Parameters
    ----------
    summary : list of dict
        :func:`summarise` output.
    ks : tuple of int, default (1, 5, 10, 20)
    storage : str, default "fp16"

    Returns
    -------
    str
        A Markdown table; ``–`` where a variant was not run.
    """

    def cell(s: dict[str, Any] | None, k: int) -> str:
        if s is None:
            return "–"
        return f"{100 * s[f'map@{k}_mean']:.2f} ± {100 * s[f'map@{k}_std']:.2f}"

    by: dict[tuple, dict[str, Any]] = {}
    chance = next((s for s in summary if s["base"] == "chance"), None)
    cos = {(s["base"], s["n"]): s for s in summary if s["storage"] == "cosine"}
    for s in summary:
        if s["base"] == "chance" or s["storage"] == "cosine":
            continue
        kind = "base" if s["dim_out"] == "" else ("in" if s["dim_out"] == s["n"] and s["dim_out"] != 32 else "32")
        if kind != "base" and s["storage"] != storage:
            continue
        by[(s["base"], s["n"], kind)] = s
    per = 4 if cos else 3
    extra = " | k={k}: cos·→32" if cos else ""
    head = (
        "| base | N | " + " | ".join(f"k={k}: base | k={k}: ·→32 | k={k}: ·→N" + extra.format(k=k) for k in ks) + " |"
    )
    sep = "|" + "---|" * (2 + per * len(ks))
    lines = [head, sep]
    for base, n in sorted({(b, n) for b, n, _ in by}, key=lambda t: (t[0], -t[1])):
        cells = []
        for k in ks:
            cells += [
                cell(by.get((base, n, "base")), k),
                cell(by.get((base, n, "32")), k),
                cell(by.get((base, n, "in")), k),
            ] + ([cell(cos.get((base, n)), k)] if cos else [])
        lines.append(f"| {base.upper()} | {n} | " + " | ".join(cells) + " |")
    if chance is not None:  # chance level: what a random ranking of the references scores
        cells = []
        for k in ks:
            cells += [cell(chance, k)] + ["–"] * (per - 1)
        lines.append("| *Random ranking (chance)* | – | " + " | ".join(cells) + " |")
        lines += [
            "",
            "*Random ranking*: the expected MAP@k of a uniformly random ordering of each fold's references, "
            "computed from the class shares (hierviz.metrics.baselines.random_ranking_scores); ± over folds.",
        ]
    if cos:
        lines += [
            "",
            "*cos·→32*: the cosine control, the same mapper onto the unit sphere trained with HCL on the "
            "cosine (chordal) distance and ranked by cosine distance: supervised metric learning without the ball.",
        ]
    return "\n".join(lines) + "\n"


def write_tables(out: Path, rows, summary, md, cfg, data) -> dict[str, Path]:
    """``folds.csv``, ``table2.csv`` (the summary), ``table2.md`` and ``retrieval.json`` (the grid's settings) in ``out``."""
    paths = {
        "folds": out / "folds.csv",
        "table2": out / "table2.csv",
        "table2_markdown": out / "table2.md",
        "config": out / "retrieval.json",
    }
    for path, table in ((paths["folds"], rows), (paths["table2"], summary)):
        keys = list(dict.fromkeys(k for r in table for k in r))
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(table)
    paths["table2_markdown"].write_text(
        f"MAP@k (%), mean ± std over {cfg.folds} grouped folds"
        + (f" (each fold the mean of {cfg.mapper_seeds} mapper seeds)" if cfg.mapper_seeds > 1 else "")
        + f"; features: {data.source} "
        f"({data.n} × {data.dim}); AP@k normaliser: {cfg.denominator}.\n\n" + md,
        encoding="utf-8",
    )
    paths["config"].write_text(json.dumps(asdict(cfg), indent=1, default=str), encoding="utf-8")
    return paths
