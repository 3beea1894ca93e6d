"""Run records: what each run folder holds, how it is read back, and who may be merged.

A finished run folder ``<out>/runs/<method>-<geometry>-s<seed>/`` holds

* ``config.json`` — the fully resolved config of the run (:meth:`ExperimentConfig.run_config`)
  with its ``fingerprint``;
* ``result.json`` — the run record: method, geometry, seed, display names, metrics,
  timings, history, the fingerprint;
* ``embeddings.npz`` — the evaluation protocol's arrays (test embeddings, prototypes …);
* ``checkpoint.pt`` (+ ``checkpoint.pt.prev``) — the last two training checkpoints.

A run's ``config.json`` and fingerprint hold only the ``loss.*`` keys its method reads
(:func:`hierviz.methods.loss_keys`; before hierviz 0.3 they held every declared key, and such
folders still resume and report: :func:`loss_read_by` drops the keys a run does not read). Before
hierviz 0.4 the keys were flat (``loss.alpha``, ``loss.hcl_m0``); :func:`load_records` and
:func:`loss_read_by` read them by their namespaced keys now (``loss.hwc.alpha``, ``loss.hcl.m0``:
:func:`hierviz.methods.upgrade_loss`), so such folders report and ``--resume`` as before.
``--resume`` reuses a finished run only when its fingerprint equals the new one, and
``hierviz report`` merges only runs whose configs agree on every key but the run's own
method, geometry and seed (``loss.*``: on the keys both runs read); a mismatch is refused,
naming the keys that differ.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.experiments.config import RENAMED_KEYS, ConfigError, flatten
from hierviz.experiments.run_names import run_name, safe_name
from hierviz.geometry import GEOMETRIES
from hierviz.hierarchy.io import dumps_tree_json
from hierviz.methods import LOSS_HPARAMS, METHODS, legacy_keys, loss_keys, upgrade_loss
from hierviz.report.run_files import RECORD_KEYS, RunFileError
from hierviz.report.run_files import read_run_file as _read_run_file
from hierviz.report.run_record import RunRecord

__all__ = [
    "write_tree_json",
    "safe_name",
    "read_run_file",
    "RECORD_KEYS",
    "RESULT_FREE_KEYS",
    "PLAN_KEYS",
    "RUN_KEYS",
    "fingerprint",
    "diff_keys",
    "run_name",
    "load_records",
    "check_mergeable",
    "loss_read_by",
    "declared_read_by",
    "atomic_write_text",
    "json_default",
    "recorded_path",
    "recorded_config",
    "recorded_argv",
]

#: Keys that do not change a run's results: they may differ between a run and its
#: ``--resume``, and between runs merged into one report.
RESULT_FREE_KEYS = frozenset(
    {
        "out",
        "train.device",
        "train.threads",
        "eval.projection",
        "eval.batch_size",
        "train.channels_last",  # memory layout and compilation: rounding only
        "train.compile",
        "report.baseline",  # which method the paired table compares with
        "run.world_size",  # torchrun ranks: the same global batches and steps on any number (docs/distributed.md)
        "run.global_batch_size",  # train.batch_size capped at the training set: follows from other keys
        "run.depth_terms",  # the depth terms added to the method's loss (and their weights): follow from loss.*
        "train.compile_loss",
        # what a method declares by code (Method.declared: recorded for the reader) is covered by the method's name,
        # as its build function is; its training overrides and views (method.train.*, method.feature_dropout) are values
        "method.model",
        "method.classifier",
        "method.attach_encoder",
        "method.label_prior",
        "method.learned",
    }
)

#: Keys that say which runs a comparison holds, not how one run is made: ``--resume`` may add
#: methods, geometries or seeds to a comparison and reuses the runs it already finished.
PLAN_KEYS = frozenset({"methods", "geometries", "seeds"})

#: Keys added after results were recorded: at these values they are left out of fingerprints,
#: so runs recorded before them still resume and merge (a changed value is part of it).
_NEW_KEY_DEFAULTS = {
    "data.augment_seeds": "auto",  # 0.2: per-sample seeds under torchrun only
    "train.sync_bn": True,  # 0.2: batch norm over ranks (no effect in one process)
    "train.augment_on": "auto",
    "data.persistent_workers": False,
    "data.prefetch_factor": None,
    "eval.embedding": None,  # 0.3: the probe input of every method (None: each method's own)
    # 0.3: G-HMLC's 2-D GMM became the default; g-hmlc runs recorded before it used the 1-D fit
    "loss.g_hmlc.gmm_dims": 2,
    # 0.3: at these values the head is the 0.2 one (with model.scale_init = 1) and no depth regulariser
    "model.head_bound": "clip",
    "model.init_radius": 1.0,
    "model.curvature_range": [0.1, 10.0],
    "loss.cone_weight": 0.0,
    "loss.center_weight": 0.0,
    "loss.cone_aperture": 0.1,
    "loss.hyilr.lambda": 0.3,  # 0.3: HyILR's λ (hierviz.methods.hyilr)
    "model.head_center": None,  # 0.3: the head subtracts no mean
    "train.patience": None,  # 0.3: no early stopping
    "data.split": "grouped",  # 0.3: the grouped split (not the dataset's official one)
    "loss.order_weight": 0.0,  # 0.3: no radial-order hinge
    "loss.order_margin": 0.1,
    "loss.cpcc_weight": 0.0,  # 0.3: no CPCC term
    "loss.depth_weight": 0.0,  # 0.4: no radial-depth term
    "loss.depth_step": 1.0,
    "loss.tau_hyperbolic": None,  # 0.4: hyperbolic runs used loss.tau
    "eval.folds": None,  # 0.4: one fold per seed of a per-seed split (retrieval-folds)
    "eval.index": "exact",  # the retrieval protocol's top-20 from the full distance matrix (no FAISS index)
}

#: Keys that legitimately differ between the runs of one comparison.
RUN_KEYS = frozenset({"run.method", "run.geometry", "run.seed", "fingerprint"}) | PLAN_KEYS | RESULT_FREE_KEYS


def json_default(o: Any) -> Any:
    """``json.dumps`` fallback for NumPy scalars and paths."""
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def recorded_path(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> str:
    """``path`` as a run's files record it: relative to the current folder when it lies below it.

    A run folder made under the repository and committed (``docs/results/...``) then names no
    machine's absolute path; a path outside the current folder stays as given, so the record still
    says where the run was written.

    Parameters
    ----------
    path : str or os.PathLike
        A folder or file path, absolute or relative.
    cwd : str or os.PathLike, optional
        The folder to be relative to (default: the process's current folder).

    Returns
    -------
    str
        ``path`` relative to ``cwd`` with ``/`` separators (``"."`` for ``cwd`` itself) when
        ``path`` is absolute and inside ``cwd`` (compared as given, then with symlinks
        resolved); otherwise ``str(path)`` unchanged (a relative path is already relative).

    Examples
    --------
    >>> recorded_path("/work/repo/docs/results/x", cwd="/work/repo")
    'docs/results/x'
    >>> recorded_path("/tmp/elsewhere", cwd="/work/repo")
    '/tmp/elsewhere'
    >>> recorded_path("runs/x", cwd="/work/repo")
    'runs/x'
    """
    p = Path(path)
    if not p.is_absolute():
        return str(path)
    base = Path(os.getcwd() if cwd is None else cwd)
    for a, b in ((Path(os.path.normpath(p)), Path(os.path.normpath(base))), (p.resolve(), base.resolve())):
        try:
            return a.relative_to(b).as_posix()
        except ValueError:
            continue
    return str(path)


def recorded_config(config: Mapping[str, Any], cwd: str | os.PathLike | None = None) -> dict[str, Any]:
    """A copy of a resolved config whose ``out`` is :func:`recorded_path` of it, for ``config.json``.

    ``out`` is a result-free key (:data:`RESULT_FREE_KEYS`): fingerprints and ``--resume`` ignore it,
    and ``--resume`` finds the runs under the ``--out`` it is given, never under the recorded one.

    Parameters
    ----------
    config : Mapping
        :meth:`ExperimentConfig.to_dict` or :meth:`ExperimentConfig.run_config` output.
    cwd : str or os.PathLike, optional
        Passed to :func:`recorded_path`.

    Returns
    -------
    dict
        A shallow copy; ``config`` itself is left unchanged.

    Examples
    --------
    >>> recorded_config({"out": "/work/repo/runs/a", "seeds": 1}, cwd="/work/repo")
    {'out': 'runs/a', 'seeds': 1}
    """
    d = dict(config)
    if isinstance(d.get("out"), (str, os.PathLike)):
        d["out"] = recorded_path(d["out"], cwd)
    return d


def recorded_argv(
    argv: Sequence[str] | None, out: str | os.PathLike, cwd: str | os.PathLike | None = None
) -> list[str] | None:
    """The command line as ``compare.json`` records it: each spelling of ``out`` as :func:`recorded_path`.

    Parameters
    ----------
    argv : sequence of str or None
        The arguments after ``hierviz``; None (a call from Python) is returned as None.
    out : str or os.PathLike
        The run's output folder as given (``--out``, ``--set out=``).
    cwd : str or os.PathLike, optional
        Passed to :func:`recorded_path`.

    Returns
    -------
    list of str or None
        ``argv`` with every argument equal to ``out``, ``--out=OUT`` or ``out=OUT`` rewritten.

    Examples
    --------
    >>> recorded_argv(["compare", "--out", "/w/r/o", "--set", "out=/w/r/o"], "/w/r/o", cwd="/w/r")
    ['compare', '--out', 'o', '--set', 'out=o']
    """
    if argv is None:
        return None
    given, rec = str(out), recorded_path(out, cwd)
    swap = {given: rec, f"--out={given}": f"--out={rec}", f"out={given}": f"out={rec}"}
    return [swap.get(str(a), str(a)) for a in argv]


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def read_run_file(path: str | os.PathLike, *, required: Sequence[str] = (), what: str = "") -> Any:
    """Read one file of a run folder, naming the file in every error.

    :func:`hierviz.report.run_files.read_run_file` (the one reader of ``config.json``,
    ``result.json``, ``compare.json``, ``tree.json`` and ``embeddings.npz``) with its failures
    raised as :class:`ConfigError`, one line naming the file and the fix.

    Parameters
    ----------
    path : str or Path
    required : sequence of str
        Keys (JSON) or arrays (npz) that must be present.
    what : str
        What the file is, for the message (default: from the name).

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        Missing/unreadable file, invalid JSON, not an object, missing keys.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "result.json"
    >>> _ = p.write_text("{}")
    >>> read_run_file(p, required=RECORD_KEYS)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hierviz.experiments.config.ConfigError: .../result.json: run record without key 'name' ...
    """
    try:
        return _read_run_file(path, required=required, what=what)
    except RunFileError as exc:
        raise ConfigError(str(exc)) from None


def write_tree_json(path: str | os.PathLike, tree: Any) -> Path:
    """Write a run folder's ``tree.json`` atomically with the iterative JSON writer (any depth).

    ``json.dumps`` recurses once per level, so a 1000-level tree ended ``compare`` in a
    RecursionError; :func:`hierviz.hierarchy.io.dumps_tree_json` does not.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from hierviz.hierarchy import LabelTree
    >>> deep = LabelTree.from_parents({f"n{i}": f"n{i - 1}" if i else None for i in range(1500)})
    >>> p = write_tree_json(pathlib.Path(tempfile.mkdtemp()) / "tree.json", deep)
    >>> LabelTree.from_json(p).depth("n1499")
    1499
    """
    return atomic_write_text(path, dumps_tree_json(tree.to_dict(), indent=1) + "\n")


def _read_json(path: Path, required: Sequence[str] = ()) -> dict:
    return read_run_file(path, required=required)


def load_records(out_dir: str | os.PathLike) -> list[dict]:
    """Read every finished run (``runs/*/result.json``) below ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path

    Returns
    -------
    list of dict
        Sorted by run folder name; ``embeddings`` made absolute and ``config`` holding the
        run's ``config.json`` (None for runs written by hierviz 0.1).

    Raises
    ------
    ConfigError
        A record that is not valid JSON, lacks a key or holds a value of the wrong type
        (:class:`hierviz.report.run_record.RunRecord`; naming the file).
    """
    out = []
    for p in sorted(Path(out_dir).glob("runs/*/result.json")):
        try:  # the typed record (hierviz.report.run_record): required keys and their types checked
            rec = RunRecord.from_dict(_read_json(p, RECORD_KEYS), where=str(p)).to_dict()
        except RunFileError as exc:
            raise ConfigError(str(exc)) from None
        if rec.get("embeddings"):
            rec["embeddings"] = str(p.parent / Path(rec["embeddings"]).name)
        cfg_file = p.parent / "config.json"
        rec["config"] = _read_json(cfg_file) if cfg_file.is_file() else None
        _upgrade_record(rec)
        rec["folder"] = str(p.parent)
        out.append(rec)
    return out


def _record_keys(rec: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The ``loss.*`` keys a recorded run reads now (:func:`hierviz.methods.loss_keys`); None if its names are unknown here."""
    if rec.get("method") in METHODS and rec.get("geometry") in GEOMETRIES:
        return loss_keys(str(rec["method"]), str(rec["geometry"]))
    return None


def _upgrade_record(rec: dict[str, Any]) -> None:
    """Read a record written with flat ``loss.*`` names (hierviz 0.3) by its keys now, in place.

    Its ``config.json`` ``loss`` section and its ``hparams`` (:func:`hierviz.methods.upgrade_loss`),
    so the report merges it with new runs and rebuilds its objective without a DeprecationWarning.
    """
    keys = _record_keys(rec)
    cfg = rec.get("config")
    if isinstance(cfg, Mapping) and isinstance(cfg.get("loss"), Mapping):
        loss = {RENAMED_KEYS.get(f"loss.{k}", f"loss.{k}")[5:]: v for k, v in cfg["loss"].items()}
        rec["config"] = {**cfg, "loss": upgrade_loss(loss, keys)}
    if isinstance(rec.get("hparams"), Mapping):
        rec["hparams"] = upgrade_loss(rec["hparams"], keys)


def check_mergeable(records: Sequence[Mapping[str, Any]]) -> None:
    """Refuse to put runs with different settings into one table.

    Parameters
    ----------
    records : sequence of dict
        From :func:`load_records`.

    Raises
    ------
    ConfigError
        A run without ``config.json`` (hierviz 0.1), or two runs whose configs differ on a
        key other than :data:`RUN_KEYS`; the message names both runs and the keys.
    """
    first = None
    for rec in records:
        cfg = rec.get("config")
        if cfg is None:
            raise ConfigError(
                f"{rec.get('folder', rec.get('name'))}: no config.json (written by hierviz 0.1?); "
                "rerun it with this version or report it from its own --out folder"
            )
        if first is None:
            first = rec
            continue
        shared = set(first["config"].get("loss") or {}) & set(cfg.get("loss") or {})  # keys both runs read
        a, b = (_without_method(loss_read_by(c, shared)) for c in (first["config"], cfg))  # each method's own
        keys = diff_keys(a, b, ignore=RUN_KEYS)
        if keys:
            shown = ", ".join(f"{k}: {_get(first['config'], k)!r} vs {_get(cfg, k)!r}" for k in keys[:6]) + (
                " …" if len(keys) > 6 else ""
            )
            raise ConfigError(
                f"runs {Path(first['folder']).name} and {Path(rec['folder']).name} were trained with different "
                f"settings ({shown}); a report averages like with like: put them in separate --out folders"
            )


def loss_read_by(config: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """A copy of a run's config whose ``loss`` section keeps only ``keys``, each by its key now.

    A ``config.json`` written before hierviz 0.3 holds every declared ``loss.*`` key, and one
    written before 0.4 holds flat names (``alpha``: now ``hwc.alpha``, :func:`hierviz.methods.upgrade_loss`);
    compared with a new run's config (the keys its method reads, :func:`hierviz.methods.loss_keys`)
    through this view, it resumes and merges as long as the keys the run reads agree.

    Parameters
    ----------
    config : mapping
        A resolved run config (``config.json``).
    keys : iterable of str
        ``loss.*`` names without the prefix.

    Returns
    -------
    dict

    Examples
    --------
    >>> loss_read_by({"seeds": 1, "loss": {"tau": 0.1, "alpha": 0.5, "base_temperature": 2.0}}, ["tau", "hmlc.base_tau"])
    {'seeds': 1, 'loss': {'tau': 0.1, 'hmlc.base_tau': 2.0}}
    >>> loss_read_by({"loss": {"tau": 0.1, "alpha": 0.5, "lambda_lam": 1.0}}, ["tau", "hwc.alpha"])
    {'loss': {'tau': 0.1, 'hwc.alpha': 0.5}}
    """
    keep = set(keys)
    out = dict(config)
    loss = config.get("loss")
    if isinstance(loss, Mapping):
        loss = upgrade_loss({RENAMED_KEYS.get(f"loss.{k}", f"loss.{k}")[5:]: v for k, v in loss.items()}, keep)
        out["loss"] = {k: v for k, v in loss.items() if k in keep}
    return out


def _get(d: Mapping[str, Any], key: str) -> Any:
    cur: Any = d
    parts = key.split(".")
    if parts[0] == "loss" and len(parts) > 2:  # loss keys are dotted within the section: loss.hwc.alpha
        parts = ["loss", ".".join(parts[1:])]
    for part in parts:
        if not isinstance(cur, Mapping) or part not in cur:
            return "<missing>"
        cur = cur[part]
    return cur


# --------------------------------------------------------------------------- fingerprints


def _renamed(key: str) -> str:
    """A renamed key by its new name: :data:`RENAMED_KEYS`, or a flat ``loss.*`` name of hierviz 0.3 with one key now."""
    if key in RENAMED_KEYS:
        return RENAMED_KEYS[key]
    if key.startswith("loss.") and key[5:] not in LOSS_HPARAMS and len(legacy_keys(key[5:])) == 1:
        return f"loss.{legacy_keys(key[5:])[0]}"
    return key


def _canonical(d: Mapping[str, Any], ignore: frozenset[str] | set[str]) -> dict[str, Any]:
    flat = {_renamed(k): v for k, v in flatten(d).items()}  # a renamed key fingerprints as the new one
    return {
        k: v
        for k, v in sorted(flat.items())
        if k not in ignore
        and k.rsplit(".", 1)[0] not in ignore  # run.depth_terms.cone: a part of an ignored section
        and not (k in _NEW_KEY_DEFAULTS and v == _NEW_KEY_DEFAULTS[k])
    }


def fingerprint(config: Mapping[str, Any], ignore: frozenset[str] | set[str] = RESULT_FREE_KEYS) -> str:
    """sha256 (16 hex digits) of a resolved config without the keys in ``ignore``.

    Examples
    --------
    >>> from hierviz.experiments.config import ExperimentConfig
    >>> a = ExperimentConfig().to_dict()
    >>> b = ExperimentConfig().to_dict(); b["out"] = "elsewhere"
    >>> fingerprint(a) == fingerprint(b)
    True
    """
    text = json.dumps(_canonical(config, ignore), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def diff_keys(
    a: Mapping[str, Any], b: Mapping[str, Any], ignore: frozenset[str] | set[str] = RESULT_FREE_KEYS
) -> list[str]:
    """Dotted keys whose values differ between two resolved configs (``ignore`` left out).

    Examples
    --------
    >>> from hierviz.experiments.config import ExperimentConfig
    >>> from hierviz.experiments.config import ExperimentConfig
    >>> a = ExperimentConfig().to_dict(); b = ExperimentConfig().to_dict()
    >>> b["train"]["epochs"] = 5; b["loss"]["tau"] = 0.2
    >>> diff_keys(a, b)
    ['loss.tau', 'train.epochs']
    """
    fa, fb = _canonical(a, ignore), _canonical(b, ignore)
    return sorted(k for k in set(fa) | set(fb) if fa.get(k, "<missing>") != fb.get(k, "<missing>"))


def _without_method(config: Mapping[str, Any]) -> dict[str, Any]:
    """A run config without its ``method`` section (what the run's method declares: it differs between methods)."""
    return {k: v for k, v in config.items() if k != "method"}


def declared_read_by(saved: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """A saved run config with the ``method`` section of ``current`` where it has none (written before hierviz 0.4).

    From hierviz 0.4 a run's ``config.json`` records what its method declares beyond its loss
    (:meth:`hierviz.methods.Method.declared`: training overrides, model builder, views, hooks)
    under ``method``. A folder written before has no such section although its method declared
    the same things in code (HyILR trained with Adam at a constant rate since 0.3), so it is
    read as declaring what the method declares now: it resumes as before. A saved section is
    kept as it is, so a change of what a method declares is a change of settings.

    Examples
    --------
    >>> now = {"seeds": 1, "method": {"train": {"optimizer": "adam"}}}
    >>> declared_read_by({"seeds": 1}, now)["method"]
    {'train': {'optimizer': 'adam'}}
    >>> declared_read_by({"seeds": 1, "method": {"train": {"optimizer": "adamw"}}}, now)["method"]
    {'train': {'optimizer': 'adamw'}}
    """
    out = dict(saved)
    if "method" not in out and "method" in current:
        out["method"] = current["method"]
    return out
