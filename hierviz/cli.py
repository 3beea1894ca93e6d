"""Command line: ``hierviz compare`` (train + evaluate + report) and ``hierviz report``.

``hierviz compare`` trains every method x geometry x seed with the same encoder, data,
augmentations and schedule (paper 01 §4.3: "only the objective and the ambient geometry
differ"), evaluates each frozen encoder on the lesion-grouped test split (paper 01 §4.4)
and writes, into ``--out``:

* ``results.csv`` (one row per run), ``results.md`` (paper 01 Table 1 shape, mean ± std
  over seeds) and ``report.html`` (self-contained, figures from :mod:`hierviz.viz`);
* ``runs/<method>-<geometry>-s<seed>/`` with the per-epoch ``checkpoint.pt``,
  ``result.json`` and ``embeddings.npz`` of each run.

With ``--resume`` finished runs are read back from their ``result.json`` and an
interrupted run continues from its last checkpoint, so nothing done is lost.

``--quick`` is the README's main job: the bundled HAM10000 sample, a small CNN and a few
epochs; it finishes in a few minutes on a 2-core laptop CPU.

Examples
--------
::

    hierviz compare --quick --out runs/quick
    hierviz compare --dataset ham10000 --tree two-step \\
        --methods simclr,supcon,hc-outside,hxe,hwc,lam,hwc+lam \\
        --geometry euclidean,poincare --seeds 3 --epochs 100 --encoder resnet18 --out runs/ham
    hierviz compare --data my.npz --tree my_tree.json --methods supcon,hwc+lam --epochs 20
    hierviz report --out runs/ham
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

__all__ = ["main", "build_parser", "QUICK", "GEOMETRIES"]

#: Geometry names accepted by ``--geometry``.
GEOMETRIES = ("euclidean", "poincare", "lorentz")

#: Settings of ``--quick`` (explicit options still override them): 12 runs (3 methods x
#: 2 geometries x 2 seeds) of 3 epochs on the bundled sample (2,003 images, 32 px).
#: Measured: 4 min 3 s wall on a 2-core CPU with another process busy (load ~1.5).
QUICK: dict[str, Any] = {
    "dataset": "ham10000-sample",
    "tree": "two-step",
    "methods": "supcon,hwc,hwc+lam",
    "geometry": "euclidean,poincare",
    "seeds": 2,
    "epochs": 3,
    "batch_size": 128,
    "encoder": "small_cnn",
    "width": 16,
    "embed_dim": 32,
    "image_size": 32,
    "projection": "tsne",
    "workers": 1,  # augment in a worker process while the main process trains:
    "threads": 1,  # one core each (measured fastest on a 2-core CPU)
    # From scratch and for 3 epochs the small CNN needs more than paper 01's fine-tuning rate
    # (1e-4, for a pretrained ResNet-50 over 100 epochs): at 1e-4 it barely moves.
    "lr_backbone": 1e-3,
}

#: Defaults without ``--quick`` (paper 01 §4.2 where it fixes a value; d smaller for CPU).
DEFAULTS: dict[str, Any] = {
    "dataset": "ham10000",
    "tree": None,  # the dataset's default tree
    "methods": "simclr,supcon,hc-outside,hxe,hwc,lam,hwc+lam",
    "geometry": "euclidean,poincare",
    "seeds": 3,
    "epochs": 100,
    "batch_size": 256,
    "encoder": "resnet18",
    "width": 32,
    "embed_dim": 128,
    "image_size": None,  # the data's own image size
    "projection": "tsne",
    "workers": 0,
    "threads": None,  # torch's default
    "lr_backbone": 1e-4,  # paper 01 §4.2 (head 10x)
}


def build_parser() -> argparse.ArgumentParser:
    """The ``hierviz`` argument parser (subcommands ``compare`` and ``report``).

    Returns
    -------
    argparse.ArgumentParser
    """
    p = argparse.ArgumentParser(prog="hierviz", description="Hierarchical contrastive learning: compare and report.")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compare", help="train and evaluate methods x geometries x seeds, then write the report",
                       description="Train every method x geometry x seed, evaluate the frozen encoders, "
                                   "and write results.csv, results.md and report.html into --out.")
    src = c.add_mutually_exclusive_group()
    src.add_argument("--dataset", help="dataset name (ham10000, ham10000-sample, breastmnist, ...)")
    src.add_argument("--data", metavar="PATH", help="your own .npz (images (N,H,W[,3]) uint8, labels (N,), "
                                                     "classes; optional groups) instead of --dataset")
    c.add_argument("--tree", help="tree name (two-step, benign-malignant, ...) or a tree JSON file; "
                                  "default: the dataset's tree")
    c.add_argument("--methods", help="comma-separated objectives "
                                     "(simclr,supcon,hc-outside,hxe,hwc,lam,hwc+lam)")
    c.add_argument("--geometry", help="comma-separated geometries (euclidean,poincare,lorentz)")
    c.add_argument("--curvature", type=float, default=1.0, help="hyperbolic curvature magnitude c (curvature -c)")
    c.add_argument("--seeds", type=int, help="number of seeds (0..N-1)")
    c.add_argument("--epochs", type=int)
    c.add_argument("--batch-size", type=int, dest="batch_size")
    c.add_argument("--encoder", help="small_cnn, resnet18 or resnet50")
    c.add_argument("--width", type=int, help="small_cnn width (first block channels)")
    c.add_argument("--embed-dim", type=int, dest="embed_dim", help="embedding dimension d")
    c.add_argument("--image-size", type=int, dest="image_size", help="training/eval image side (default: data's)")
    c.add_argument("--pretrained", metavar="PATH", help="local state_dict file for the encoder (never downloaded)")
    c.add_argument("--lr-backbone", type=float, default=None, dest="lr_backbone",
                   help="backbone learning rate (default 1e-4 as paper 01 §4.2; --quick: 1e-3)")
    c.add_argument("--lr-head", type=float, default=None, dest="lr_head", help="default: 10x --lr-backbone")
    c.add_argument("--warmup-epochs", type=float, default=None, dest="warmup_epochs",
                   help="linear warmup (default: 10%% of the epochs, as paper 01's 10 of 100)")
    c.add_argument("--ema-decay", type=float, default=0.99, dest="ema_decay", help="weight EMA (0 = off)")
    c.add_argument("--tau", type=float, default=0.1, help="temperature of the contrastive losses")
    c.add_argument("--split-seed", type=int, default=0, dest="split_seed",
                   help="seed of the grouped train/val/test split (fixed across method seeds)")
    c.add_argument("--device", default="auto", help="auto (cuda if present), cpu, cuda, cuda:1, ...")
    c.add_argument("--out", default="hierviz-out", help="output folder")
    c.add_argument("--resume", action="store_true", help="skip finished runs and continue interrupted ones")
    c.add_argument("--quick", action="store_true",
                   help="laptop preset: bundled HAM10000 sample, small CNN, a few epochs (minutes on a CPU)")
    c.add_argument("--limit", type=int, help="use a stratified random subset of N images (tests, dry runs)")
    c.add_argument("--workers", type=int, help="DataLoader worker processes (default 0; --quick: 1)")
    c.add_argument("--projection", choices=["tsne", "umap", "pca"], help="2-D map in the report")
    c.add_argument("--threads", type=int,
                   help="torch CPU threads (default: torch's choice; --quick: 1)")
    c.add_argument("--no-amp", action="store_true", dest="no_amp", help="no mixed precision on CUDA")
    c.add_argument("--quiet", action="store_true", help="no progress bars")

    r = sub.add_parser("report", help="rebuild results.csv/.md and report.html from the finished runs in --out")
    r.add_argument("--out", default="hierviz-out")
    r.add_argument("--projection", choices=["tsne", "umap", "pca"], default=None)
    return p


# --------------------------------------------------------------------------- helpers

def _split_names(value: str, valid: Sequence[str], what: str) -> list[str]:
    names = [v.strip().lower() for v in str(value).split(",") if v.strip()]
    if not names:
        raise ValueError(f"--{what}: no names given; valid names: {', '.join(valid)}")
    bad = [n for n in names if n not in valid]
    if bad:
        raise ValueError(f"--{what}: unknown name(s) {', '.join(repr(b) for b in bad)}; "
                         f"valid names: {', '.join(valid)}")
    return list(dict.fromkeys(names))


def _positive(name: str, value: Any) -> None:
    if value is not None and value < 1:
        raise ValueError(f"--{name} must be >= 1, got {value}")


def _resolve(args: argparse.Namespace) -> dict[str, Any]:
    """Merge --quick / defaults / explicit options and validate every name."""
    from .data import DATASETS
    from .losses import OBJECTIVES
    from .models import ENCODERS

    base = QUICK if args.quick else DEFAULTS
    s: dict[str, Any] = {}
    for key, default in base.items():
        val = getattr(args, key, None)
        s[key] = default if val is None else val
    for key in ("width", "embed_dim", "image_size", "batch_size", "epochs", "seeds"):
        _positive(key.replace("_", "-"), s.get(key))
    if args.limit is not None and args.limit < 2:
        raise ValueError(f"--limit must be >= 2, got {args.limit}")
    if s["threads"] is not None and s["threads"] < 1:
        raise ValueError(f"--threads must be >= 1, got {s['threads']}")
    if s["workers"] < 0:
        raise ValueError(f"--workers must be >= 0, got {s['workers']}")
    if not args.curvature > 0:
        raise ValueError(f"--curvature must be > 0 (it is c in curvature -c), got {args.curvature}")
    if args.data is not None:
        s["dataset"] = None
        s["data"] = args.data
    else:
        s["data"] = None
        if args.dataset is not None or not args.quick:
            names = list(DATASETS)
            if s["dataset"] not in names:
                raise ValueError(f"--dataset: unknown dataset {s['dataset']!r}; valid names: {', '.join(names)} "
                                 "(or pass your own file with --data PATH)")
    s["methods"] = _split_names(s["methods"], list(OBJECTIVES), "methods")
    s["geometry"] = _split_names(s["geometry"], list(GEOMETRIES), "geometry")
    if s["encoder"] not in ENCODERS:
        raise ValueError(f"--encoder: unknown encoder {s['encoder']!r}; valid names: {', '.join(ENCODERS)}")
    for key in ("curvature", "lr_head", "warmup_epochs", "ema_decay", "tau", "split_seed",
                "device", "out", "resume", "limit", "pretrained", "no_amp", "quiet", "quick"):
        s[key] = getattr(args, key)
    if s["lr_head"] is None:
        s["lr_head"] = 10.0 * s["lr_backbone"]
    if s["warmup_epochs"] is None:
        s["warmup_epochs"] = 0.1 * s["epochs"]
    return s


def _limit_indices(labels: np.ndarray, n: int, seed: int) -> np.ndarray:
    """A seeded random subset of ``n`` indices that keeps every class (a few of each first)."""
    N = labels.shape[0]
    if n >= N:
        return np.arange(N)
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    k = max(2, n // (4 * len(classes)))
    chosen: list[np.ndarray] = []
    for c in classes:
        idx = np.flatnonzero(labels == c)
        chosen.append(rng.choice(idx, size=min(k, idx.size), replace=False))
    first = np.concatenate(chosen)[:n]
    rest = np.setdiff1d(np.arange(N), first)
    extra = rng.choice(rest, size=max(0, n - first.size), replace=False)
    return np.sort(np.concatenate([first, extra]))


def _run_name(method: str, geometry: str, seed: int) -> str:
    return f"{method.replace('+', '_')}-{geometry}-s{seed}"


def _fingerprint(s: dict[str, Any], method: str, geometry: str, seed: int) -> dict[str, Any]:
    keys = ("dataset", "data", "tree", "limit", "split_seed", "encoder", "width", "embed_dim", "image_size",
            "epochs", "batch_size", "lr_backbone", "lr_head", "warmup_epochs", "ema_decay", "tau",
            "curvature", "pretrained")
    fp = {k: s[k] for k in keys}
    fp["data"] = None if fp["data"] is None else str(fp["data"])
    fp.update(method=method, geometry=geometry, seed=seed)
    return fp


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _run_one(s: dict[str, Any], method: str, geometry_name: str, seed: int, tree, train_ds, test_ds,
             run_dir: Path, callbacks: Sequence = ()) -> dict[str, Any]:
    """Train + evaluate one method x geometry x seed; write result.json and embeddings.npz."""
    from .data import ContrastiveDataset, TwoViewTransform
    from .evaluate import eval_embedding_for, evaluate_model
    from .geometry import get_geometry
    from .losses import build_objective
    from .models import build_model
    from .train import TrainConfig, fit, seed_everything

    geometry = get_geometry(geometry_name, c=s["curvature"]) if geometry_name != "euclidean" \
        else get_geometry("euclidean")
    objective = build_objective(method, tree, geometry, tau=s["tau"])
    seed_everything(seed)
    model = build_model(s["encoder"], geometry, embed_dim=s["embed_dim"], width=s["width"],
                        num_classes=tree.num_leaves if objective.requires_logits else None,
                        pretrained=s["pretrained"])
    config = TrainConfig(
        epochs=s["epochs"], batch_size=s["batch_size"], lr_backbone=s["lr_backbone"], lr_head=s["lr_head"],
        warmup_epochs=s["warmup_epochs"], ema_decay=s["ema_decay"] or None, seed=seed, device=s["device"],
        amp=not s["no_amp"], num_workers=s["workers"], checkpoint_dir=run_dir, resume=s["resume"],
        progress=not s["quiet"],
    )
    train_views = ContrastiveDataset(train_ds, TwoViewTransform(s["image_size"], views=2), views=2)
    result = fit(config, model, objective, train_views, callbacks=callbacks)
    use = eval_embedding_for(method)
    ev = evaluate_model(result.model, train_ds, test_ds, tree, geometry, image_size=s["image_size"], use=use,
                        seed=seed, device=result.device, num_workers=s["workers"])
    np.savez_compressed(run_dir / "embeddings.npz", z_test=ev.z_test, y_test=ev.y_test,
                        prototypes=ev.prototypes, proto_nodes=ev.proto_nodes)
    record = {
        "name": run_dir.name, "method": method, "geometry": geometry_name,
        "curvature": float(getattr(geometry, "c", 0.0)), "seed": seed, "metrics": ev.metrics,
        "epochs": s["epochs"], "train_seconds": result.train_seconds, "eval_seconds": ev.seconds,
        "eval_embedding": use, "device": str(result.device), "history": result.history,
        "step_history": result.step_history, "embeddings": "embeddings.npz",
        "settings": _fingerprint(s, method, geometry_name, seed),
    }
    _atomic_write_text(run_dir / "result.json", json.dumps(record, default=_json_default, indent=1))
    return record


def _load_data(s: dict[str, Any]):
    from .data import DEFAULT_TREE, bind_tree, load_dataset

    ds = load_dataset(s["data"] if s["data"] is not None else s["dataset"])
    tree_arg = s["tree"]
    if tree_arg is None:
        if s["dataset"] in DEFAULT_TREE:
            tree_arg = DEFAULT_TREE[s["dataset"]]
        else:
            raise ValueError("--tree is required with --data (a tree name or a tree JSON file whose leaves are "
                             f"the data's classes: {list(ds.classes)})")
    s["tree"] = str(tree_arg)
    ds, tree = bind_tree(ds, tree_arg)
    return ds, tree


def _compare(s: dict[str, Any], argv: Sequence[str], run_callbacks: Optional[dict] = None) -> int:
    import torch

    saved_threads = torch.get_num_threads()
    if s["threads"] is not None:
        torch.set_num_threads(s["threads"])
    try:
        return _compare_runs(s, argv, run_callbacks)
    finally:
        torch.set_num_threads(saved_threads)  # main() may be called in-process (tests, notebooks)


def _compare_runs(s: dict[str, Any], argv: Sequence[str], run_callbacks: Optional[dict]) -> int:
    from . import __version__
    from .data import grouped_split
    from .report import build_report

    t_start = time.perf_counter()
    ds, tree = _load_data(s)
    n_all = len(ds.labels)
    if s["limit"] is not None:
        ds = ds.subset(_limit_indices(np.asarray(ds.labels), s["limit"], s["split_seed"]))
    if s["image_size"] is None:
        s["image_size"] = int(ds.images.shape[1])
    split = grouped_split(np.asarray(ds.labels), None if ds.groups is None else np.asarray(ds.groups),
                          seed=s["split_seed"])
    train_ds, test_ds = ds.subset(split["train"]), ds.subset(split["test"])
    out = Path(s["out"])
    (out / "runs").mkdir(parents=True, exist_ok=True)

    plan = [(m, g, seed) for m in s["methods"] for g in s["geometry"] for seed in range(s["seeds"])]
    records = []
    for i, (method, geo, seed) in enumerate(plan, 1):
        run_dir = out / "runs" / _run_name(method, geo, seed)
        fp = json.loads(json.dumps(_fingerprint(s, method, geo, seed), default=_json_default))
        res_file = run_dir / "result.json"
        tag = f"[{i}/{len(plan)}] {method} · {geo} · seed {seed}"
        if s["resume"] and res_file.is_file():
            rec = json.loads(res_file.read_text(encoding="utf-8"))
            diff = [k for k in fp if rec.get("settings", {}).get(k) != fp[k]]
            if diff:
                raise ValueError(
                    f"--resume: {res_file} was made with different settings ({', '.join(diff)}); "
                    "use the same options or another --out")
            print(f"{tag}: finished earlier, reusing {res_file}", flush=True)
        else:
            if not s["resume"] and run_dir.exists():
                shutil.rmtree(run_dir)
            run_dir.mkdir(parents=True, exist_ok=True)
            cbs = (run_callbacks or {}).get(run_dir.name, ())
            rec = _run_one(s, method, geo, seed, tree, train_ds, test_ds, run_dir, callbacks=cbs)
            m = rec["metrics"]
            print(f"{tag}: train {rec['train_seconds']:.1f} s, eval {rec['eval_seconds']:.1f} s | "
                  + ", ".join(f"{k} {v:.3f}" for k, v in m.items()), flush=True)
        rec["embeddings"] = str(run_dir / "embeddings.npz")
        records.append(rec)

    total = time.perf_counter() - t_start
    header = _header(s, argv, ds, tree, n_all, split, records, total, __version__)
    _atomic_write_text(out / "compare.json", json.dumps(
        {"argv": list(argv), "settings": s, "runs": [r["name"] for r in records], "header": header},
        default=_json_default, indent=1))
    paths = build_report(out, records, tree, header=header, methods=s["methods"], geometries=s["geometry"],
                         projection=s["projection"], title="hierviz compare")
    print(paths["markdown"].read_text(encoding="utf-8"))
    print(f"wrote {paths['csv']}, {paths['markdown']}, {paths['html']} "
          f"({time.perf_counter() - t_start:.1f} s in all)", flush=True)
    return 0


def _header(s, argv, ds, tree, n_all, split, records, total, version) -> dict[str, str]:
    train_s = sum(float(r.get("train_seconds", 0.0)) for r in records)
    eval_s = sum(float(r.get("eval_seconds", 0.0)) for r in records)
    name = s["dataset"] if s["dataset"] is not None else str(s["data"])
    return {
        "Command": "hierviz " + shlex.join(list(argv)),
        "Dataset": f"{getattr(ds, 'name', name) or name}: {len(ds.labels)} images"
                   + (f" (subset of {n_all})" if len(ds.labels) != n_all else "")
                   + f", {len(ds.classes)} classes, {ds.images.shape[1]} px",
        "Licence / citation": f"{getattr(ds, 'licence', '') or 'n/a'} — {getattr(ds, 'citation', '') or 'n/a'}",
        "Tree": f"{s['tree']} (C = {tree.num_leaves} leaves, height L = {tree.height})\n{tree}",
        "Split": f"grouped by {'lesion/group id' if ds.groups is not None else 'image'}, seed {s['split_seed']}: "
                 f"train {len(split['train'])}, val {len(split['val'])} (unused), test {len(split['test'])}",
        "Model": f"{s['encoder']}" + (f" (width {s['width']})" if s["encoder"] == "small_cnn" else "")
                 + f", d = {s['embed_dim']}, image {s['image_size']} px, pretrained: {s['pretrained'] or 'none'}",
        "Training": f"{s['epochs']} epochs, batch {s['batch_size']}, AdamW lr {s['lr_backbone']:g}/{s['lr_head']:g}"
                    f" (backbone/head), warmup {s['warmup_epochs']:g} epochs + cosine, EMA "
                    f"{s['ema_decay'] or 'off'}, tau {s['tau']:g}, c {s['curvature']:g}",
        "Device": ", ".join(sorted({str(r.get('device', '?')) for r in records})),
        "Timings": f"{total:.1f} s in all; training {train_s:.1f} s, evaluation {eval_s:.1f} s "
                   f"over {len(records)} runs",
        "hierviz": version,
    }


def _report(args: argparse.Namespace) -> int:
    from .data import bind_tree, load_dataset
    from .report import build_report, load_records

    out = Path(args.out)
    records = load_records(out)
    if not records:
        raise ValueError(f"--out: no finished runs under {out / 'runs'} (run 'hierviz compare --out {out}' first)")
    meta_file = out / "compare.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
    order = {name: i for i, name in enumerate(meta.get("runs", []))}
    records.sort(key=lambda r: (order.get(r.get("name"), len(order)), r.get("name", "")))
    st = records[0]["settings"]
    ds = load_dataset(st["data"] if st.get("data") else st["dataset"])
    ds, tree = bind_tree(ds, st["tree"])
    methods = list(dict.fromkeys(r["method"] for r in records))
    geos = list(dict.fromkeys(r["geometry"] for r in records))
    header = dict(meta.get("header") or {"Dataset": str(st.get("data") or st.get("dataset")),
                                          "Tree": f"{st['tree']}\n{tree}"})
    header["Report"] = f"rebuilt by 'hierviz report --out {shlex.quote(str(out))}' from {len(records)} finished runs"
    projection = args.projection or meta.get("settings", {}).get("projection") or "tsne"
    paths = build_report(out, records, tree, header=header, methods=methods, geometries=geos,
                         projection=projection)
    print(f"wrote {paths['csv']}, {paths['markdown']}, {paths['html']}")
    return 0


def main(argv: Optional[Sequence[str]] = None, *, _run_callbacks: Optional[dict] = None) -> int:
    """Entry point of the ``hierviz`` command (also ``python -m hierviz``).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 2 on bad input (unknown names, missing files, tree/data mismatch:
        the message is printed to stderr), 1 when training stopped on a non-finite loss.

    Raises
    ------
    SystemExit
        From argparse for malformed options (``--help`` included).
    """
    from .train import NonFiniteLossError

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        if args.command == "compare":
            return _compare(_resolve(args), argv, _run_callbacks)
        return _report(args)
    except NonFiniteLossError as exc:
        print(f"hierviz: error: {exc}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as exc:
        print(f"hierviz: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
