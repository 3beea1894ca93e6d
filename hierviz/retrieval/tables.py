"""The tables of ``hierviz retrieval``: per-variant summaries, the Table-2-shaped Markdown, the files."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["summarise", "table2_markdown", "write_tables"]


def summarise(rows: list[dict[str, Any]], ks: tuple[int, ...]) -> list[dict[str, Any]]:
    """Mean and standard deviation over folds of each (variant, storage).

    Parameters
    ----------
    rows : list of dict
        ``run_retrieval(...)["rows"]``: one dict per fold, variant and storage.
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
    for r in rows:
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
    if chance is not None:  # issue 24: what a random ranking of the references scores
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


def write_tables(out: Path, rows, summary, md, cfg, examples, data) -> dict[str, Path]:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"--out {out}: cannot write there ({exc.strerror or exc}); choose a folder you can write to"
        ) from None
    paths = {
        "folds": out / "folds.csv",
        "results": out / "results.csv",
        "markdown": out / "results.md",
        "config": out / "config.json",
    }
    for path, table in ((paths["folds"], rows), (paths["results"], summary)):
        keys = list(dict.fromkeys(k for r in table for k in r))
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(table)
    paths["markdown"].write_text(
        f"MAP@k (%), mean ± std over {cfg.folds} grouped folds; features: {data.source} "
        f"({data.n} × {data.dim}); AP@k normaliser: {cfg.denominator}.\n\n" + md,
        encoding="utf-8",
    )
    cfg_d = asdict(cfg)
    paths["config"].write_text(json.dumps(cfg_d, indent=1, default=str), encoding="utf-8")
    if examples:
        paths["examples"] = out / "examples.npz"
        np.savez_compressed(paths["examples"], **examples)
    return paths
