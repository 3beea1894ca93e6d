"""Command line: ``hierviz compare``, ``hierviz report``, ``hierviz config``, ``hierviz features``, ``hierviz retrieval``.

A thin layer: parse → :class:`~hierviz.experiments.ExperimentConfig` → :mod:`hierviz.experiments`.

* ``hierviz compare --preset quick --set loss.tau=0.2 --set train.epochs=1 --out runs/q``
  trains every method × geometry × seed and writes ``results.csv``, ``results.md``,
  ``report.html`` and one folder per run (with its resolved ``config.json``).
* ``hierviz report --out runs/q`` rebuilds the tables and report from finished runs.
* ``hierviz config --preset quick --set …`` prints the resolved config (``--keys``: every key).
* ``hierviz features --run RUN_DIR --out F.npz`` exports frozen encoder features, and
  ``hierviz retrieval --features F.npz --preset quick --out DIR`` runs Paper 03's retrieval
  grid on them as one ``compare`` plan (:mod:`hierviz.features`, :mod:`hierviz.retrieval`).

Shortcuts (``--methods``, ``--geometry``, ``--dataset``, ``--data``, ``--tree``, ``--seeds``,
``--epochs``, ``--limit`` …) set the same keys as ``--set``; ``--set`` wins when both are
given. ``--import MODULE`` (repeatable) imports a module first, so the methods, datasets,
trees, geometries or encoders it registers can be named.

Exit status: 0 success, 2 bad input (a one-line message naming the file or option and the
fix), 1 a runtime failure (a diverged run, a full disk), 130 interrupted. No traceback is
printed unless ``--debug`` is given.

Examples
--------
::

    hierviz compare --preset quick --out runs/quick
    hierviz compare --preset full --set model.encoder=resnet50 --set train.epochs=50 --out runs/ham
    hierviz compare --data my.npz --tree my_tree.json --methods supcon,hwc+lam --epochs 20
    hierviz compare --import my_methods --methods my-loss --preset quick
    hierviz report --out runs/ham
    hierviz config --preset quick --set loss.tau=0.2
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hierviz._registry import UnknownNameError
from hierviz.experiments import ConfigError, apply_overrides, compare, export_run, report, resolve_config, validate
from hierviz.experiments.config import MAX_IMAGE_SIZE, flatten
from hierviz.experiments.htc import (
    add_htc_parser,  # ``hierviz htc`` (Paper 05 (HyILR))
    add_import_option,
    run_htc_command,
)
from hierviz.features import FeaturesData, export_checkpoint, load_features, reduce_features, save_features
from hierviz.methods import LOSS_HPARAMS
from hierviz.metrics.retrieval import _check_denominator
from hierviz.retrieval import RETRIEVAL_PRESETS, rebuild_tables, run_retrieval
from hierviz.retrieval.protocol import limit_error
from hierviz.training import NonFiniteLossError

__all__ = ["main", "build_parser"]

#: Shortcut option -> config key.
SHORTCUTS = {
    "dataset": "data.dataset",
    "data": "data.path",
    "tree": "data.tree",
    "limit": "data.limit",
    "split_seed": "data.split_seed",
    "image_size": "data.image_size",
    "workers": "data.workers",
    "methods": "methods",
    "geometry": "geometries",
    "seeds": "seeds",
    "encoder": "model.encoder",
    "width": "model.width",
    "embed_dim": "model.embed_dim",
    "pretrained": "model.pretrained",
    "curvature": "model.curvature",
    "epochs": "train.epochs",
    "batch_size": "train.batch_size",
    "lr_backbone": "train.lr_backbone",
    "lr_head": "train.lr_head",
    "warmup_epochs": "train.warmup_epochs",
    "ema_decay": "train.ema_decay",
    "tau": "loss.tau",
    "device": "train.device",
    "threads": "train.threads",
    "projection": "eval.projection",
    "protocol": "eval.protocol",
    "fold": "eval.fold",
    "out": "out",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit 2 with one line, as argparse does, plus a hint
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _config_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preset",
        help="quick (20 Newsgroups: the main job), quick-ham10000, medium, full, gpu, paper01-gpu, paper02-cpu, paper02-gpu, "
        "paper04-gpu, or a .toml file (default: full)",
    )
    p.add_argument("--quick", action="store_true", help="same as --preset quick")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="set any config key, e.g. --set loss.tau=0.2 --set train.epochs=1 (repeatable; "
        "'hierviz config --keys' lists them)",
    )
    add_import_option(p, help="import a module first (it may register methods, datasets, trees, ...); repeatable")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", help="a registered dataset (data.dataset)")
    src.add_argument("--data", metavar="PATH", help="your own .npz or image folder (data.path)")
    p.add_argument("--tree", help="a registered tree or a tree JSON file (data.tree)")
    p.add_argument("--methods", help="comma-separated registered methods")
    p.add_argument("--geometry", help="comma-separated geometries (geometries)")
    p.add_argument("--curvature", type=float, help="c of curvature -c (model.curvature)")
    p.add_argument("--seeds", type=int, help="seeds per method x geometry")
    p.add_argument("--epochs", type=int, help="train.epochs")
    p.add_argument("--batch-size", type=int, dest="batch_size", help="train.batch_size")
    p.add_argument("--encoder", help="model.encoder (small_cnn, resnet18, resnet50, ...)")
    p.add_argument("--width", type=int, help="model.width")
    p.add_argument("--embed-dim", type=int, dest="embed_dim", help="model.embed_dim")
    p.add_argument("--image-size", type=int, dest="image_size", help="data.image_size")
    p.add_argument("--pretrained", metavar="PATH", help="local state_dict file (model.pretrained)")
    p.add_argument("--lr-backbone", type=float, dest="lr_backbone", help="train.lr_backbone")
    p.add_argument("--lr-head", type=float, dest="lr_head", help="train.lr_head (default 10x backbone)")
    p.add_argument("--warmup-epochs", type=float, dest="warmup_epochs", help="train.warmup_epochs")
    p.add_argument("--ema-decay", type=float, dest="ema_decay", help="train.ema_decay (0 = off)")
    p.add_argument("--tau", type=float, help="loss.tau")
    p.add_argument("--split-seed", type=int, dest="split_seed", help="data.split_seed")
    p.add_argument("--limit", type=int, help="a stratified subset of N images (data.limit)")
    p.add_argument("--workers", type=int, help="DataLoader workers (data.workers)")
    p.add_argument("--threads", type=int, help="torch CPU threads (train.threads)")
    p.add_argument("--projection", help="tsne, umap or pca (eval.projection)")
    p.add_argument("--protocol", help="evaluate every method with this protocol, e.g. unseen (eval.protocol)")
    p.add_argument("--fold", type=int, help="fold 0-4 of the unseen protocol (eval.fold)")
    p.add_argument("--device", help="auto, cpu, cuda, cuda:1 (train.device)")
    p.add_argument("--no-amp", action="store_true", dest="no_amp", help="train.amp=false")
    p.add_argument("--out", help="output folder (out)")


def build_parser() -> argparse.ArgumentParser:
    """The ``hierviz`` argument parser (subcommands ``compare``, ``report``, ``config``).

    Returns
    -------
    argparse.ArgumentParser
    """
    p = _Parser(prog="hierviz", description="Hierarchical contrastive learning: compare, report, config.")
    p.add_argument("--debug", action="store_true", help="print full tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser(
        "compare",
        help="train and evaluate methods x geometries x seeds, then write the report",
        description="Train every method x geometry x seed, evaluate the frozen encoders, "
        "and write results.csv, results.md and report.html into --out.",
    )
    _config_options(c)
    c.add_argument("--resume", action="store_true", help="reuse finished runs, continue interrupted ones")
    c.add_argument("--quiet", action="store_true", help="no progress bars")
    c.add_argument("--debug", action="store_true", help="print full tracebacks")

    r = sub.add_parser("report", help="rebuild results.csv/.md and report.html from the finished runs in --out")
    r.add_argument("--out", default="hierviz-out")
    r.add_argument("--projection", default=None, help="tsne, umap or pca (default: the runs' eval.projection)")
    add_import_option(r)
    r.add_argument("--debug", action="store_true", help="print full tracebacks")

    g = sub.add_parser("config", help="print the resolved config of a preset and --set overrides")
    _config_options(g)
    g.add_argument("--keys", action="store_true", help="list every key with its value")
    g.add_argument("--debug", action="store_true", help="print full tracebacks")
    _add_retrieval_commands(sub)

    add_htc_parser(sub)
    return p


def _add_retrieval_commands(sub: Any) -> None:
    """``hierviz features`` and ``hierviz retrieval`` (Paper 03 (Hyper-DINO); :mod:`hierviz.retrieval`)."""
    f = sub.add_parser(
        "features",
        help="export frozen encoder features (.npz) from a trained run or a local torchvision checkpoint",
        description="Write a features .npz (features, labels, classes, groups, split) from the encoder of a "
        "finished 'hierviz compare' run (--run) or a local torchvision ResNet state_dict (--checkpoint).",
    )
    src = f.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", metavar="RUN_DIR", help="a run folder <out>/runs/<name>, or an --out with one run")
    src.add_argument("--checkpoint", metavar="PATH", help="a local torchvision ResNet state_dict file")
    f.add_argument("--data", default="ham10000-sample", help="with --checkpoint: a dataset name or a file")
    f.add_argument("--encoder", default="resnet18", help="with --checkpoint: resnet18 or resnet50")
    f.add_argument("--image-size", type=int, dest="image_size", help="with --checkpoint: input side in pixels")
    f.add_argument("--reduce", choices=("pca", "nca", "scaled"), help="standard scaling, then PCA/NCA (fit on train)")
    f.add_argument("--n", type=int, dest="n_components", help="components N of --reduce pca|nca")
    f.add_argument("--float16", action="store_true", help="store the features as float16 (Paper 03 §2.1)")
    f.add_argument("--out", required=True, metavar="F.npz", help="the features file to write")
    f.add_argument("--quiet", action="store_true", help="no progress bars")
    add_import_option(f, help="import a module first (the dataset or encoder a --run was made with)")
    f.add_argument("--debug", action="store_true", help="print full tracebacks")

    r = sub.add_parser(
        "retrieval",
        help="train the Hyperbolic Mapper with HCL on a features file and report MAP@k over grouped folds",
        description="Paper 03 (Hyper-DINO): PCA/NCA(N) base features, Hyper-DINO(., 32) in the Poincaré ball, "
        "MAP@1/5/10/20 over grouped cross-validation folds. An alias of 'hierviz compare' (one run per variant and "
        "fold, in OUT/runs/, with compare's results.csv, results.md and report.html); writes Table 2 as table2.md, "
        "table2.csv and folds.csv.",
    )
    r.add_argument("--features", required=True, metavar="F.npz", help="a features file ('hierviz features')")
    r.add_argument("--preset", default="quick", help="smoke, quick, paper or paper03-gpu (default: quick)")
    r.add_argument("--reducers", help="comma-separated pca,nca,scaled")
    r.add_argument("--n-grid", dest="n_grid", help="comma-separated N of PCA(N)/NCA(N), e.g. 16,32,64")
    r.add_argument("--dim-out", dest="dim_out", help="comma-separated mapper outputs: 32 and/or 'in' (= N)")
    r.add_argument("--folds", type=int, help="grouped cross-validation folds (paper: 5)")
    r.add_argument(
        "--mapper-seeds", dest="mapper_seeds", type=int, help="seeds of every mapper per fold, averaged in the tables"
    )
    r.add_argument("--epochs", type=int, help="mapper training epochs (paper: 100)")
    r.add_argument("--limit", type=int, help="a stratified subset of this many rows")
    r.add_argument("--denominator", help="AP@k normaliser: min_k_r (default), r, k, hits")
    r.add_argument("--device", help="auto, cpu, cuda")
    r.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="a key of the compare config the grid runs, as in 'hierviz compare' (e.g. eval.index=faiss-flat)",
    )
    add_import_option(r, help="import a module first")
    r.add_argument("--resume", action="store_true", help="reuse the finished runs in --out")
    r.add_argument("--out", required=True, help="output folder")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.add_argument("--debug", action="store_true", help="print full tracebacks")


def _csv_option(text: str, name: str, cast: Any) -> tuple:
    try:
        values = tuple(cast(v.strip()) for v in text.split(",") if v.strip())
    except ValueError:
        raise ConfigError(f"--{name} {text!r}: expected comma-separated values such as 16,32") from None
    if not values:
        raise ConfigError(f"--{name}: give at least one value")
    return values


def _run_retrieval_command(args: argparse.Namespace) -> int:
    """Run ``hierviz features`` or ``hierviz retrieval`` (thin: parse → hierviz.features / hierviz.retrieval)."""
    if args.command == "features":
        if args.image_size is not None and not 1 <= args.image_size <= MAX_IMAGE_SIZE:
            raise ConfigError(f"--image-size: must be in [1, {MAX_IMAGE_SIZE}] px, got {args.image_size}")
        if args.reduce in ("pca", "nca") and args.n_components is None:
            raise ConfigError(f"--reduce {args.reduce} needs --n N (the number of components)")
        if args.run is not None:
            data = export_run(args.run, progress=not args.quiet)
        else:
            if not Path(args.checkpoint).is_file():
                raise FileNotFoundError(
                    f"--checkpoint {args.checkpoint}: no such file (a local torchvision ResNet state_dict saved with "
                    "torch.save(model.state_dict(), path); nothing is downloaded)"
                )
            data = export_checkpoint(
                args.checkpoint,
                data=args.data,
                encoder=args.encoder,
                image_size=args.image_size,
                progress=not args.quiet,
            )
        if args.reduce is not None:
            train = data.rows("train")
            _, x = reduce_features(
                data.features[train],
                data.labels[train],
                [data.features],
                method=args.reduce,
                n_components=args.n_components,
            )
            data = FeaturesData(x, data.labels, data.classes, data.groups, data.split, source=data.source)
        path = save_features(args.out, data, float16=args.float16)
        print(
            f"wrote {path}: {data.n} × {data.dim} features ({'float16' if args.float16 else 'float32'}) from {data.source}"
        )
        return 0

    if args.preset not in RETRIEVAL_PRESETS:
        raise ConfigError(
            f"--preset {args.preset!r}: unknown retrieval preset; choose one of {sorted(RETRIEVAL_PRESETS)}"
        )
    cfg = RETRIEVAL_PRESETS[args.preset]
    changes: dict[str, Any] = {}
    if args.reducers:
        changes["reducers"] = _csv_option(args.reducers, "reducers", str)
        bad = sorted(set(changes["reducers"]) - {"pca", "nca", "scaled"})
        if bad:
            raise ConfigError(f"--reducers: unknown {bad}; choose from pca, nca, scaled")
    if args.n_grid:
        changes["n_grid"] = _csv_option(args.n_grid, "n-grid", int)
        if min(changes["n_grid"]) < 1:
            raise ConfigError("--n-grid: every N must be >= 1")
    if args.dim_out:
        changes["dim_out"] = _csv_option(args.dim_out, "dim-out", lambda v: v if v == "in" else int(v))
    for name in ("folds", "mapper_seeds", "epochs", "limit"):
        value = getattr(args, name)
        if value is not None:
            if value < (2 if name == "folds" else 1):
                raise ConfigError(f"--{name.replace('_', '-')}: must be >= {2 if name == 'folds' else 1}, got {value}")
            changes[name] = value
    if args.denominator:
        try:
            changes["denominator"] = _check_denominator(args.denominator)
        except ValueError as exc:
            raise ConfigError(f"--denominator: {exc}") from None
    if args.device:
        changes["device"] = args.device

    if not Path(args.features).is_file():
        raise FileNotFoundError(
            f"--features {args.features}: no such file; make one with 'hierviz features --run RUN_DIR'"
        )
    data = load_features(args.features)
    message = limit_error(data.labels, replace(cfg, **changes), "--limit")
    if message is not None:
        raise ConfigError(message)
    result = run_retrieval(
        data,
        replace(cfg, **changes),
        out=args.out,
        progress=not args.quiet,
        overrides=args.overrides,
        resume=args.resume,
    )
    print(result["markdown"])
    print(f"wrote {', '.join(str(p) for p in result['paths'].values())}")
    return 0


def _import_modules(names: Sequence[str]) -> None:
    """Import each ``--import`` module (a dotted name or a ``.py`` file path) for its registrations.

    Any failure inside the user's module (an ImportError, any other exception, even
    ``sys.exit``) is one ConfigError line naming the module, never a traceback
    that ends the process.
    """
    if names and os.getcwd() not in sys.path and "" not in sys.path:  # the `hierviz` script lacks the cwd
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            _import_one(name)
        except ConfigError:
            raise
        except ImportError as exc:
            raise ConfigError(
                f"--import {name}: cannot import it ({exc}); put the module on PYTHONPATH or in the current folder, "
                "or give the path of a .py file"
            ) from None
        except SystemExit as exc:  # sys.exit() inside the module must not end hierviz silently
            raise ConfigError(
                f"--import {name}: the module called sys.exit({exc.code!r}) while being imported; "
                "remove the call from its top level (guard it with if __name__ == '__main__':)"
            ) from None
        except Exception as exc:
            where = ""
            tb = exc.__traceback__
            while tb is not None:  # the innermost frame of the user's code
                where = f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
                tb = tb.tb_next
            raise ConfigError(
                f"--import {name}: the module raised {type(exc).__name__}: {exc}{where}; fix the module "
                "(rerun with --debug for the traceback)"
            ) from exc


def _import_one(name: str) -> None:
    path = Path(name)
    if name.endswith(".py") or os.sep in name or (os.altsep and os.altsep in name):
        if not path.is_file():
            raise ConfigError(f"--import {name}: no such .py file; give a module name or the path of a .py file")
        mod_name = f"hierviz_user_{path.stem}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"--import {name}: not an importable Python file (it must end in .py)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(mod_name, None)
            raise
        return
    if not name or name.startswith(".") or not all(part.isidentifier() for part in name.split(".")):
        raise ConfigError(
            f"--import {name!r}: not a module name (dotted Python identifiers, e.g. my_methods) nor a .py file path"
        )
    importlib.import_module(name)


def _resolve(args: argparse.Namespace):
    if args.quick and args.preset not in (None, "quick"):
        raise ConfigError(f"--quick and --preset {args.preset} contradict each other; give one")
    preset = "quick" if args.quick else (args.preset if args.preset is not None else "full")
    overrides: dict[str, Any] = {}
    for opt, key in SHORTCUTS.items():
        value = getattr(args, opt, None)
        if value is not None:
            overrides[key] = value
    if args.data is not None:
        overrides["data.dataset"] = None
    if getattr(args, "no_amp", False):
        overrides["train.amp"] = False
    cfg = resolve_config(preset, overrides)

    return validate(apply_overrides(cfg, args.overrides))


def _run(args: argparse.Namespace, argv: Sequence[str], run_callbacks: dict | None) -> int:
    if getattr(args, "out", None) is not None and not str(args.out).strip():  # "" would mean the current folder
        raise ConfigError("--out: empty path; give the folder (or file) to write to")
    _import_modules(getattr(args, "imports", []))
    if args.command in ("features", "retrieval"):
        return _run_retrieval_command(args)
    if args.command == "htc":
        return run_htc_command(args)
    if args.command == "compare":
        cfg = _resolve(args)
        compare(cfg, resume=args.resume, progress=not args.quiet, callbacks=run_callbacks, argv=argv)
        return 0
    if args.command == "report":
        report(args.out, projection=args.projection)
        if (Path(args.out) / "retrieval.json").is_file():  # a 'hierviz retrieval' folder: Table 2 too
            paths = rebuild_tables(args.out)
            print(f"wrote {', '.join(str(p) for p in paths.values())}")
        return 0
    cfg = _resolve(args)
    if args.keys:
        for key, value in flatten(cfg.to_dict()).items():
            doc = LOSS_HPARAMS[key[5:]].doc if key.startswith("loss.") and key[5:] in LOSS_HPARAMS else ""
            print(f"{key} = {json.dumps(value)}" + (f"    # {doc}" if doc else ""))
    else:
        print(json.dumps(cfg.to_dict(), indent=2))
    return 0


def _one_line(exc: BaseException) -> str:
    text = " ".join((str(exc).strip() or type(exc).__name__).split())
    # name the command-line option beside the config key: "--epochs (train.epochs): ..."
    for opt, key in SHORTCUTS.items():
        if text.startswith(f"{key}:"):
            return f"--{opt.replace('_', '-')} ({key}):{text[len(key) + 1 :]}"
    return text


def main(argv: Sequence[str] | None = None, *, _run_callbacks: dict | None = None) -> int:
    """Entry point of the ``hierviz`` command (also ``python -m hierviz``).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success; 2 on bad input (unknown names or keys, missing or malformed files,
        tree/data mismatch, an unwritable ``--out``, a corrupt checkpoint); 1 on a runtime
        failure (a non-finite loss, a full disk, an unexpected error); 130 when
        interrupted. Errors are one line on stderr; ``--debug`` adds the traceback.

    Raises
    ------
    SystemExit
        From argparse for malformed options (``--help`` included), with status 2.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    # a flat loss key of hierviz 0.3 (--set loss.alpha=...) works; say which key it is now (Python hides
    # DeprecationWarnings outside __main__ by default)
    warnings.filterwarnings("default", message=r".*loss\.\S+ is now loss\.", category=DeprecationWarning)
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False)) or "--debug" in argv
    try:
        return _run(args, argv, _run_callbacks)
    except KeyboardInterrupt:
        trains = getattr(args, "command", None) in ("compare", "htc")  # the commands that checkpoint runs
        print(
            "hierviz: interrupted; finished runs and the last checkpoint of the current run are kept: "
            "rerun with --resume to continue"
            if trains
            else f"hierviz: interrupted ({getattr(args, 'command', None) or 'hierviz'} stopped; nothing to resume)",
            file=sys.stderr,
        )
        return 130
    except Exception as exc:  # every failure ends in one line (and a traceback only with --debug)
        if debug:
            traceback.print_exc()
        if isinstance(exc, NonFiniteLossError):
            print(f"hierviz: error: {_one_line(exc)}", file=sys.stderr)
            return 1
        if isinstance(
            exc,
            (
                ValueError,
                FileNotFoundError,
                UnknownNameError,
                IsADirectoryError,
                NotADirectoryError,
                PermissionError,
                UnicodeDecodeError,
                TypeError,
            ),
        ):
            print(f"hierviz: error: {_one_line(exc)}", file=sys.stderr)
            return 2
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f" while writing {exc.filename}" if exc.filename else ""
            print(
                f"hierviz: error: no space left on the device{where}; the last complete checkpoint of each run "
                "is kept: free some space and rerun with --resume",
                file=sys.stderr,
            )
            return 1
        print(
            f"hierviz: error: {type(exc).__name__}: {_one_line(exc)} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
