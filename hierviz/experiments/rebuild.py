"""``hierviz report``: rebuild a finished folder's tables and report from its run records.

Split from :mod:`hierviz.experiments.compare` (no module over 700 lines).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from hierviz.evaluation import PROTOCOLS
from hierviz.experiments.config import RENAMED_KEYS, ConfigError, ExperimentConfig
from hierviz.experiments.inputs import load_data
from hierviz.experiments.records import (
    check_mergeable,
    load_records,
    read_run_file,
)
from hierviz.experiments.result import CompareResult
from hierviz.hierarchy import LabelTree
from hierviz.methods import LOSS_HPARAMS, METHODS
from hierviz.metrics.projection import PROJECTIONS
from hierviz.models import ENCODERS
from hierviz.report import build_report


def report(out: str | os.PathLike, *, projection: str | None = None, verbose: bool = True) -> CompareResult:
    """Rebuild ``results.csv``/``.md`` and ``report.html`` from the finished runs in ``out``.

    Parameters
    ----------
    out : str or Path
        A folder written by :func:`compare`.
    projection : str, optional
        Override the config's ``eval.projection``.
    verbose : bool, default True

    Returns
    -------
    CompareResult

    Raises
    ------
    ConfigError
        No finished runs, or runs trained with different settings (the keys are named).

    Notes
    -----
    It reads the run records only (``result.json``: display names, geometry config, metrics;
    ``config.json``; ``tree.json``), never the method or loss registry: a folder made with a
    method, loss or geometry from a user module (``--import``) is reported without importing
    it again. Figures that need a geometry this process does not know are replaced
    by a note naming the module to import.
    """
    out = Path(out)
    records = load_records(out)
    if not records:
        raise ConfigError(f"--out: no finished runs under {out / 'runs'} (run 'hierviz compare --out {out}' first)")
    check_mergeable(records)
    meta_file = out / "compare.json"
    meta = read_run_file(meta_file) if meta_file.is_file() else {}
    order = {name: i for i, name in enumerate(meta.get("runs", []))}
    records.sort(key=lambda r: (order.get(r.get("name"), len(order)), r.get("name", "")))
    cfg_dict = {k: v for k, v in records[0]["config"].items() if k not in ("run", "method", "fingerprint")}
    cfg = _known_settings(cfg_dict, records, where=str(Path(records[0]["folder"]) / "config.json"))
    tree_file = out / "tree.json"
    if tree_file.is_file():
        try:  # LabelTree.from_json reads iteratively (any depth) and names the file
            tree = LabelTree.from_json(tree_file)
        except (ValueError, TypeError, KeyError, OSError) as exc:  # a readable JSON object that is no tree
            text = str(exc) if str(exc).startswith(str(tree_file)) else f"{tree_file}: not a label tree ({exc})"
            raise ConfigError(f"{text}; delete it and rerun compare") from None
    else:
        _, tree, _ = load_data(cfg)  # a folder without tree.json (hierviz 0.1): the tree from the data
    methods = list(dict.fromkeys(r["method"] for r in records))
    geos = list(dict.fromkeys(r["geometry"] for r in records))
    header = dict(
        meta.get("header") or {"Dataset": str(cfg.data.path or cfg.data.dataset), "Tree": f"{cfg.data.tree}\n{tree}"}
    )
    header["Report"] = f"rebuilt by 'hierviz report --out {shlex.quote(str(out))}' from {len(records)} finished runs"
    paths = build_report(
        out,
        records,
        tree,
        header=header,
        methods=methods,
        geometries=geos,
        projection=projection or cfg.eval.projection,
        baseline=(cfg_dict.get("report") or {}).get("baseline"),  # the record's name, registered here or not
    )
    result = CompareResult.from_tables(paths, records, out=out, config=cfg, tree=tree)
    if verbose:
        print(f"wrote {paths['csv']}, {paths['markdown']}, {paths['html']}")
    return result


def _known_settings(cfg_dict: dict[str, Any], records: list[dict], where: str) -> ExperimentConfig:
    """The comparison's :class:`ExperimentConfig` as far as this process knows the names in it.

    Methods, geometries and ``loss.*`` keys come from the records (a user module may have
    registered them, and ``hierviz report`` runs without it); the other sections are read and
    checked as usual. A name a user module registered and this process does not know
    (``report.baseline``, ``eval.protocol``, ``eval.projection``, ``model.encoder``) is left at
    its default in the returned config; the report uses the record's baseline, and a
    projection this process does not know falls back to the default (``--projection`` picks one).

    Examples
    --------
    >>> cfg = _known_settings({"methods": ["my-loss"], "loss": {"my_scale": 2.0, "tau": 0.2},
    ...                        "model": {"encoder": "my-encoder", "embed_dim": 8},
    ...                        "eval": {"projection": "my-map"}, "report": {"baseline": "my-loss"}},
    ...                       [{"method": "my-loss", "geometry": "my-ball", "config": {"loss": {"my_scale": 2.0}}},
    ...                        {"method": "supcon", "geometry": "my-ball", "config": {"loss": {"tau": 0.2}}}], "x")
    >>> cfg.methods, cfg.geometries, cfg.loss["tau"], "my_scale" in cfg.loss
    (['my-loss', 'supcon'], ['my-ball'], 0.2, False)
    >>> cfg.model.encoder, cfg.model.embed_dim, cfg.eval.projection, cfg.report.baseline
    ('resnet18', 8, 'tsne', None)
    """
    d = {k: v for k, v in cfg_dict.items() if k not in ("methods", "geometries", "loss")}
    for section, key, registry in (
        ("report", "baseline", METHODS),
        ("eval", "protocol", PROTOCOLS),
        ("eval", "projection", PROJECTIONS),
        ("model", "encoder", ENCODERS),
    ):
        if (d.get(section) or {}).get(key) not in (None, *registry.names()):
            d[section] = {k: v for k, v in d[section].items() if k != key}
    cfg = ExperimentConfig.from_dict(d, where=where)
    cfg.methods = list(dict.fromkeys(r["method"] for r in records))
    cfg.geometries = list(dict.fromkeys(r["geometry"] for r in records))
    for rec in records:  # each run holds its method's keys (agreeing where shared: check_mergeable)
        for k, v in ((rec.get("config") or {}).get("loss") or {}).items():  # by their keys now (load_records)
            name = RENAMED_KEYS.get(f"loss.{k}", f"loss.{k}")[5:]
            if name in LOSS_HPARAMS:  # the keys this process declares
                cfg.loss[name] = v
    return cfg
