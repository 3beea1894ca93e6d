"""``compare(config)``: train every method × geometry × seed, evaluate, tabulate, report.

The one run loop of hierviz: the CLI (``hierviz compare``) and every notebook call it. It
names no method and no geometry: what a run needs (views, a classifier, the evaluation
protocol and which representation it embeds) comes from the method registry, and geometry
behaviour from the :class:`~hierviz.geometry.Geometry` object.

Paper 01 §4.3: "only the objective and the ambient geometry differ" — every run shares the
encoder, data, augmentations and schedule; each frozen encoder is evaluated on the
group-wise test split (paper 01 §4.4).
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierviz.data import DEFAULT_TREE, grouped_split
from hierviz.data.splits import official_split
from hierviz.evaluation import PROTOCOLS
from hierviz.experiments.config import ConfigError, ExperimentConfig, validate
from hierviz.experiments.header import _header, _px  # noqa: F401 (moved to header.py, re-exported here)
from hierviz.experiments.inputs import _check_writable, _option_named, limit_indices, load_data
from hierviz.experiments.rebuild import report
from hierviz.experiments.records import (
    PLAN_KEYS,
    RECORD_KEYS,
    RESULT_FREE_KEYS,
    atomic_write_text,
    declared_read_by,
    diff_keys,
    fingerprint,
    json_default,
    load_records,
    loss_read_by,
    read_run_file,
    recorded_argv,
    recorded_config,
    run_name,
    write_tree_json,
)
from hierviz.experiments.result import CompareResult
from hierviz.experiments.run_one import _launch, _run_one, _speed_options  # noqa: F401 (re-exported)
from hierviz.methods import depth_terms, get_method
from hierviz.models import encoder_inputs
from hierviz.report import build_report
from hierviz.training import distributed as hd
from hierviz.training.distributed import init_distributed

__all__ = [
    "CompareResult",
    "compare",
    "report",
    "limit_indices",
    "load_data",
    "table_protocols",
    "MixedProtocolWarning",
]


# What --resume may change and still reuse a finished run: keys that do not change results, and the
# plan (more seeds, methods or geometries).
_RESUME_FREE_KEYS = RESULT_FREE_KEYS | PLAN_KEYS


class MixedProtocolWarning(UserWarning):
    """One comparison table mixes evaluation protocols: its rows score different test problems."""


def table_protocols(cfg: ExperimentConfig) -> dict[str, str]:
    """The evaluation protocol each method of ``cfg`` is scored under, ``{method: protocol}``.

    ``eval.protocol`` when set (every method then shares it), else each method's own
    (:attr:`hierviz.methods.Method.protocol`; e.g. ``t+pl`` declares ``"unseen"``: two leaves held out
    of training and the scores taken on the seen test samples only).

    Parameters
    ----------
    cfg : ExperimentConfig

    Returns
    -------
    dict of str to str
        In ``cfg.methods`` order.

    Examples
    --------
    >>> from hierviz.experiments import resolve_config
    >>> table_protocols(resolve_config("quick", ["methods=supcon,t+pl"]))
    {'supcon': 'classification', 't+pl': 'unseen'}
    >>> table_protocols(resolve_config("quick", ["methods=supcon,t+pl", "eval.protocol=classification"]))
    {'supcon': 'classification', 't+pl': 'classification'}
    """
    return {m: cfg.eval.protocol or get_method(m).protocol for m in cfg.methods}


def warn_mixed_protocols(cfg: ExperimentConfig, say: Callable[..., Any] | None = None) -> str | None:
    """Warn (:class:`MixedProtocolWarning`, and one line through ``say``) when the methods' protocols differ.

    Rows under different protocols train on different splits and are scored on different test
    samples, so neither their means nor their paired differences compare like with like.

    Returns
    -------
    str or None
        The warning's text, None when every method shares one protocol.
    """
    by_protocol: dict[str, list[str]] = {}
    for m, p in table_protocols(cfg).items():
        by_protocol.setdefault(p, []).append(m)
    if len(by_protocol) < 2:
        return None
    groups = "; ".join(f"{p}: {', '.join(ms)}" for p, ms in by_protocol.items())
    msg = (
        f"compare: one table mixes evaluation protocols ({groups}); their rows are scored on different splits "
        f"and test samples, so the means and paired differences across them are not comparable. Set "
        f"eval.protocol=classification (or {next(iter(p for p in by_protocol if p != 'classification'), 'one protocol')}) "
        "to score every method alike, or run each protocol's methods in their own compare"
    )
    warnings.warn(msg, MixedProtocolWarning, stacklevel=3)
    if say is not None:
        say(msg, flush=True)
    return msg


def compare(
    config: ExperimentConfig,
    *,
    resume: bool = False,
    progress: bool = True,
    verbose: bool = True,
    callbacks: Mapping[str, Sequence[Callable]] | None = None,
    argv: Sequence[str] | None = None,
) -> CompareResult:
    """Train and evaluate every method × geometry × seed of ``config``; write the tables and report.

    Parameters
    ----------
    config : ExperimentConfig
        From :func:`hierviz.experiments.resolve_config` (a preset plus overrides).
    resume : bool, default False
        Reuse finished runs whose fingerprint matches (a mismatch is refused, naming the
        keys) and continue interrupted ones from their last checkpoint.
    progress : bool, default True
        tqdm progress bars.
    verbose : bool, default True
        One line per run and the final table on stdout.
    callbacks : mapping of run name to callables, optional
        ``cb(epoch, info)`` after each epoch of that run (tests interrupt runs this way).
    argv : sequence of str, optional
        The command line, recorded in the report header.

    Returns
    -------
    CompareResult

    Raises
    ------
    ConfigError
        Bad settings, an unwritable ``out``, a ``resume`` onto runs made with other settings.
    ValueError, FileNotFoundError
        Missing or malformed data or tree files (the message names the file).
    hierviz.training.NonFiniteLossError
        A run diverged (its last good checkpoint is kept).

    Examples
    --------
    A few minutes on a laptop CPU (``tests/test_experiments.py`` runs smaller ones)::

        from hierviz.experiments import compare, resolve_config
        cfg = resolve_config("quick", ["train.epochs=1", "methods=supcon", "seeds=1"])
        result = compare(cfg)
        print(result.markdown)
    """
    init_distributed()  # under torchrun: join the process group (nothing in one process)
    cfg = validate(config.copy())
    saved_threads = torch.get_num_threads()
    if cfg.train.threads is not None:
        torch.set_num_threads(cfg.train.threads)
    try:
        return _compare(cfg, resume, progress, verbose, callbacks or {}, argv)
    finally:
        torch.set_num_threads(saved_threads)  # compare() may run in a notebook's process


def _complete_data_config(cfg: ExperimentConfig, ds: Any) -> None:
    """Fill the data settings the dataset decides (``data.image_size``, ``data.tree``) and check the encoder reads it.

    Raises
    ------
    ConfigError
        If the dataset holds feature vectors and ``model.encoder`` encodes images.
    """
    if getattr(ds, "is_vector", False) and encoder_inputs(cfg.model.encoder) != "vectors":
        raise ConfigError(
            f"model.encoder: {cfg.model.encoder!r} encodes images, but the dataset holds feature vectors "
            f"(N, D) = {ds.images.shape}; use --encoder mlp (or an encoder registered with "
            "register_encoder(name, inputs='vectors'))"
        )
    if cfg.data.image_size is None:
        cfg.data.image_size = int(ds.images.shape[1])
    if cfg.data.tree is None:
        cfg.data.tree = DEFAULT_TREE.get(cfg.data.dataset)


def _default_split(cfg: ExperimentConfig, ds: Any) -> dict[str, np.ndarray]:
    """The train/val/test split of every run whose protocol brings none: the dataset's own, or grouped.

    Raises
    ------
    ConfigError
        ``data.split=official`` on a dataset without one, or an empty train or test split.
    """
    if cfg.data.split == "official":  # the dataset's own train/test (the split of ``hierviz htc``)
        if ds.official_split is None:
            raise ConfigError(f"data.split: dataset {ds.name!r} has no official split; use data.split=grouped")
        split = official_split(ds.official_split, val=0.1, seed=cfg.data.split_seed)
    else:
        split = grouped_split(
            np.asarray(ds.labels), None if ds.groups is None else np.asarray(ds.groups), seed=cfg.data.split_seed
        )
    empty = [k for k in ("train", "test") if len(split[k]) == 0]
    if empty:  # say why here, not "dataset is empty: nothing to embed" after training
        counts = np.bincount(np.asarray(ds.labels))
        raise ConfigError(
            f"the {' and '.join(empty)} split is empty: {len(ds)} {'samples' if ds.is_vector else 'images'} over "
            f"{len(counts)} classes (at most {int(counts.max())} per class) give train/val/test = "
            f"{len(split['train'])}/{len(split['val'])}/{len(split['test'])}; the grouped split needs about 3 or more "
            "per class (more images, fewer classes, or a larger data.limit)"
        )
    return split


def _check_resumable(cfg_file: Path, run_cfg: dict[str, Any]) -> None:
    """Refuse to resume a run folder whose ``config.json`` differs from ``run_cfg`` in a key that changes results.

    Raises
    ------
    ConfigError
        Naming the keys that differ.
    """
    saved = read_run_file(cfg_file)
    saved.pop("fingerprint", None)
    saved = loss_read_by(saved, run_cfg["loss"])  # a 0.2 config.json holds every loss key
    saved = declared_read_by(saved, run_cfg)  # a config.json before 0.4 has no method section
    if fingerprint(saved, _RESUME_FREE_KEYS) != fingerprint(run_cfg, _RESUME_FREE_KEYS):
        keys = diff_keys(saved, run_cfg, _RESUME_FREE_KEYS)
        raise ConfigError(
            f"--resume: {cfg_file} was made with different settings ({', '.join(keys)}); "
            "use the same preset and --set values, or another --out"
        )


class _Runs:
    """The runs of one :func:`compare`: every method × geometry × seed, each trained or reused.

    Holds the loaded data, the default split and the splits made so far by the protocols'
    own ``make_split`` (one per protocol, or per protocol and seed).
    """

    def __init__(
        self,
        cfg: ExperimentConfig,
        ds: Any,
        tree: Any,
        split: dict[str, np.ndarray],
        *,
        resume: bool,
        progress: bool,
        callbacks: Mapping[str, Sequence[Callable]],
        say: Callable[..., Any],
    ) -> None:
        self.cfg, self.ds, self.tree, self.split = cfg, ds, tree, split
        self.resume, self.progress, self.callbacks, self.say = resume, progress, callbacks, say
        self.main = hd.is_main_process()
        self.splits: dict[tuple, tuple] = {}

    def data_for(self, protocol_name: str, seed: int) -> tuple:
        """(split, train, test) of a protocol: its own ``make_split`` (e.g. unseen leaves) or the default split.

        A protocol declared ``per_seed`` (``retrieval-folds``) makes fold ``seed mod folds`` of
        ``folds = eval.folds`` (None: ``cfg.seeds``) folds."""
        cfg, ds = self.cfg, self.ds
        protocol = PROTOCOLS.get(protocol_name)
        maker, per_seed = protocol.make_split, protocol.per_seed
        folds = cfg.eval.folds or cfg.seeds
        key = (protocol_name, seed % folds if per_seed else None)
        if key not in self.splits:
            sp = self.split
            if maker is not None:
                fold = seed % folds if per_seed else cfg.eval.fold
                with _option_named("eval.fold", "fold", value=fold):
                    sp = maker(
                        np.asarray(ds.labels),
                        None if ds.groups is None else np.asarray(ds.groups),
                        num_leaves=self.tree.num_leaves,
                        seed=cfg.data.split_seed,
                        fold=fold,
                        **({"folds": folds} if per_seed else {}),
                    )
            self.splits[key] = (sp, ds.subset(sp["train"]), ds.subset(sp[cfg.eval.split]))
        return self.splits[key]

    def run_all(self, out: Path) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
        """Train (or, under ``resume``, reuse) every run in plan order.

        Returns
        -------
        records : list of dict
            One per run, its folder, embeddings file and run config added (empty on ranks
            other than 0, which train and leave evaluation to rank 0).
        header_split : dict
            The first run's split, which the report header describes.
        """
        cfg = self.cfg
        plan = [(m, g, s) for m in cfg.methods for g in cfg.geometries for s in range(cfg.seeds)]
        records, header_split = [], self.split
        for i, (method, geo, seed) in enumerate(plan, 1):
            run_split, train_ds, test_ds = self.data_for(cfg.eval.protocol or get_method(method).protocol, seed)
            if i == 1:
                header_split = run_split  # the header describes the first run's split
            run_dir = out / "runs" / run_name(method, geo, seed)
            run_cfg = cfg.run_config(method, geo, seed)
            run_cfg["run"].update(_launch(cfg, train_ds, hd.get_world_size()))  # recorded, not fingerprinted
            terms = depth_terms(method, geo, cfg.loss)  # the depth regularisers added to its loss: follow from loss.*
            if terms:
                run_cfg["run"]["depth_terms"] = terms
            tag = f"[{i}/{len(plan)}] {method} · {geo} · seed {seed}"
            hd.barrier()  # rank 0's files of the previous run are on disk: every rank decides alike
            res_file, cfg_file = run_dir / "result.json", run_dir / "config.json"
            if self.resume and cfg_file.is_file():
                _check_resumable(cfg_file, run_cfg)
            if self.resume and res_file.is_file():
                rec = read_run_file(res_file, required=RECORD_KEYS)
                self.say(f"{tag}: finished earlier, reusing {res_file}", flush=True)
            else:
                rec = self._train((method, geo, seed), run_dir, run_cfg, run_split, train_ds, test_ds, tag)
                if rec is None:  # a rank other than 0: it trained, rank 0 evaluates and writes
                    continue
            rec["embeddings"] = str(run_dir / "embeddings.npz")
            rec["config"], rec["folder"] = run_cfg, str(run_dir)
            records.append(rec)
        return records, header_split

    def _train(
        self,
        run: tuple[str, str, int],
        run_dir: Path,
        run_cfg: dict[str, Any],
        run_split: dict[str, np.ndarray],
        train_ds: Any,
        test_ds: Any,
        tag: str,
    ) -> dict[str, Any] | None:
        """Train and evaluate one ``(method, geometry, seed)`` run in a fresh (or, under ``resume``, kept) folder.

        Returns its record on rank 0 and None on the other ranks.
        """
        cfg, ds = self.cfg, self.ds
        if self.main:
            if not self.resume and run_dir.exists():
                shutil.rmtree(run_dir)
            run_dir.mkdir(parents=True, exist_ok=True)
            config_text = json.dumps(
                {**recorded_config(run_cfg), "fingerprint": fingerprint(run_cfg)}, indent=1, default=json_default
            )
            atomic_write_text(run_dir / "config.json", config_text)
        hd.barrier()
        method, geo, seed = run
        rec = _run_one(
            cfg,
            method,
            geo,
            seed,
            self.tree,
            train_ds,
            test_ds,
            run_dir,
            resume=self.resume,
            progress=self.progress,
            callbacks=self.callbacks.get(run_dir.name, ()),
            # train.patience stops on the validation split (methods with a classifier)
            val_ds=ds.subset(run_split["val"]) if cfg.train.patience and len(run_split.get("val", ())) else None,
        )
        if rec is None:
            return None
        m = rec["metrics"]
        self.say(
            f"{tag}: train {rec['train_seconds']:.1f} s, eval {rec['eval_seconds']:.1f} s | "
            + ", ".join(f"{k} {v:.3f}" for k, v in m.items()),
            flush=True,
        )
        return rec


def _written_result(out: Path, cfg: ExperimentConfig, tree: Any) -> CompareResult:
    """The :class:`CompareResult` read back from the tables rank 0 wrote in ``out`` (the other ranks' result)."""
    paths = {"csv": out / "results.csv", "markdown": out / "results.md", "html": out / "report.html"}
    return CompareResult.from_tables(paths, load_records(out), out=out, config=cfg, tree=tree)


def _write_tables(
    out: Path,
    cfg: ExperimentConfig,
    argv: Sequence[str] | None,
    records: list[dict[str, Any]],
    tree: Any,
    header: dict[str, Any],
) -> dict[str, Path]:
    """Write ``compare.json`` (command, config, runs, header), then the tables and the report.

    Returns
    -------
    dict of str to pathlib.Path
        :func:`hierviz.report.build_report`'s paths (``"csv"``, ``"markdown"``, ``"html"``, ...).
    """
    atomic_write_text(
        out / "compare.json",
        json.dumps(
            {
                "argv": recorded_argv(argv, cfg.out),
                "config": recorded_config(cfg.to_dict()),
                "runs": [r["name"] for r in records],
                "header": header,
            },
            default=json_default,
            indent=1,
        ),
    )
    return build_report(
        out,
        records,
        tree,
        header=header,
        methods=cfg.methods,
        geometries=cfg.geometries,
        projection=cfg.eval.projection,
        title="hierviz compare",
        baseline=cfg.report.baseline,
    )


def _compare(
    cfg: ExperimentConfig,
    resume: bool,
    progress: bool,
    verbose: bool,
    callbacks: Mapping[str, Sequence[Callable]],
    argv: Sequence[str] | None,
) -> CompareResult:
    """:func:`compare` on a validated config: data and splits, every run, then the tables and the report."""
    main = hd.is_main_process()  # under torchrun rank 0 alone evaluates, prints and writes
    say = print if verbose and main else (lambda *a, **k: None)
    progress = progress and main
    t_start = time.perf_counter()
    out = Path(cfg.out)
    _check_writable(out)
    ds, tree, n_all = load_data(cfg)
    _complete_data_config(cfg, ds)
    runs = _Runs(cfg, ds, tree, _default_split(cfg, ds), resume=resume, progress=progress, callbacks=callbacks, say=say)
    if main:
        atomic_write_text(
            out / "config.json", json.dumps(recorded_config(cfg.to_dict()), indent=1, default=json_default)
        )
        write_tree_json(out / "tree.json", tree)
        warn_mixed_protocols(cfg, say)
    records, header_split = runs.run_all(out)
    if not main:
        hd.barrier()  # rank 0 writes the tables and the report
        return _written_result(out, cfg, tree)
    total = time.perf_counter() - t_start
    header = _header(cfg, argv, ds, tree, n_all, header_split, records, total)
    paths = _write_tables(out, cfg, argv, records, tree, header)
    result = CompareResult.from_tables(paths, records, out=out, config=cfg, tree=tree)
    say(result.markdown)
    say(
        f"wrote {paths['csv']}, {paths['markdown']}, {paths['html']} ({time.perf_counter() - t_start:.1f} s in all)",
        flush=True,
    )

    hd.barrier()  # the other ranks read the tables now
    return result
