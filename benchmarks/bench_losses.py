"""Forward + backward time of HWC vs our SupCon vs pytorch-metric-learning's SupConLoss.

Paper 01 §3.4 says HWC adds only O(B²) scalar weights on top of SupCon's similarity
matrix; this script checks that the implementation keeps that promise (target: HWC within
1.5× of our SupCon, no Python loop over the batch or the classes).

Usage
-----
    python3 benchmarks/bench_losses.py                  # 2B = 1024, d = 128, CPU
    python3 benchmarks/bench_losses.py --n 512 --d 64 --repeats 20 --threads 1

``--share`` instead measures the share of a whole training step
(encoder + head forward under bf16 autocast, loss, backward, AdamW step) that the loss
takes, for SupCon and HWC+LAM on Euclidean and Poincaré, against the same step with a
trivial loss (``z.sum() * 0``)::

    python3 benchmarks/bench_losses.py --share --device cuda --encoder resnet50 --image-size 224 --batch 128
    python3 benchmarks/bench_losses.py --share --device cuda --encoder resnet50 --image-size 64 --batch 256
    python3 benchmarks/bench_losses.py --share --encoder small_cnn --image-size 32 --batch 32 --repeats 3  # CPU smoke

It also times the loss alone (forward + backward on detached embeddings of the same
shape) and, with ``--compile``, the fused Poincaré kernels (``compile_kernels``).

Prints one table per geometry (Euclidean cosine, Poincaré −d_M) with the median time of
forward + backward and ratios to our SupCon. For the Poincaré ball pytorch-metric-learning
is given the same closed-form distance through a small ``BaseDistance`` adapter, so all
three compute the same loss. Never asserted in tests: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.losses import HWCLoss, SupConLoss


def _pml_supcon(geometry, tau):
    """pytorch-metric-learning SupConLoss using the geometry's similarity (or None if not installed)."""
    try:
        from pytorch_metric_learning.distances import BaseDistance, CosineSimilarity
        from pytorch_metric_learning.losses import SupConLoss as PMLSupCon
    except ImportError:  # pragma: no cover - optional peer
        return None
    if geometry.name == "euclidean":
        return PMLSupCon(temperature=tau, distance=CosineSimilarity())

    class GeometryDistance(BaseDistance):
        def __init__(self):
            super().__init__(normalize_embeddings=False, is_inverted=False)

        def compute_mat(self, query_emb, ref_emb):
            return geometry.pairwise_dist(query_emb, ref_emb)

    return PMLSupCon(temperature=tau, distance=GeometryDistance())


def _time_round_robin(fns: dict, repeats: int, warmup: int = 2) -> dict[str, tuple[float, float]]:
    """Time each callable once per round, rounds interleaved (robust to a machine whose load drifts).

    Returns
    -------
    dict: name → (median seconds, median per-round ratio to the first entry).
    """
    names = list(fns)
    for _ in range(warmup):
        for k in names:
            fns[k]()
    times: dict[str, list[float]] = {k: [] for k in names}
    for _ in range(repeats):
        for k in names:
            t0 = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t0)
    base = times[names[0]]
    return {k: (statistics.median(v), statistics.median([a / b for a, b in zip(v, base)])) for k, v in times.items()}


def bench(geometry_name: str, n: int, d: int, repeats: int, seed: int = 0) -> dict[str, float]:
    """Median seconds of forward + backward for each loss on one random batch.

    Parameters
    ----------
    geometry_name : {"euclidean", "poincare"}
    n : int
        Embeddings in the batch (2B with two views).
    d : int
        Embedding dimension.
    repeats : int
        Timed repetitions (median reported).

    Returns
    -------
    dict: loss name → (median seconds, median ratio to our SupCon over interleaved rounds).
    """
    g = torch.Generator().manual_seed(seed)
    geometry = get_geometry(geometry_name)
    tree = LabelTree.from_nested(
        {"root": {f"p{i}": {f"q{i}{j}": [f"l{i}{j}{k}" for k in range(4)] for j in range(3)} for i in range(4)}}
    )
    B = n // 2
    labels = torch.randint(0, tree.num_leaves, (B,), generator=g)
    raw = torch.randn(B, 2, d, generator=g)
    if geometry_name == "euclidean":
        z0 = torch.nn.functional.normalize(raw, dim=-1)
    else:
        z0 = geometry.expmap0(0.3 * raw / d**0.5)
    tau = 0.1
    ours_sup = SupConLoss(tree, geometry, tau=tau, reduction="anchor")
    ours_hwc = HWCLoss(tree, geometry, tau=tau, alpha=0.5, gamma=0.5, reduction="anchor")
    ours_hwc_pairs = HWCLoss(tree, geometry, tau=tau, alpha=0.5, gamma=0.5, reduction="pairs")
    pml = _pml_supcon(geometry, tau)

    def run(loss_fn, flat: bool):
        def step():
            z = z0.clone().requires_grad_(True)
            if flat:
                loss = loss_fn(z.transpose(0, 1).reshape(n, d), labels.repeat(2))
            else:
                loss = loss_fn(z, labels)
            loss.backward()

        return step

    fns = {
        "SupCon (ours)": run(ours_sup, False),
        "HWC (ours, anchor)": run(ours_hwc, False),
        "HWC (ours, pairs)": run(ours_hwc_pairs, False),
    }
    if pml is not None:
        fns["SupConLoss (pytorch-metric-learning)"] = run(pml, True)
    return _time_round_robin(fns, repeats)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench_share(
    encoder: str,
    image_size: int,
    batch: int,
    device: torch.device,
    repeats: int,
    methods: tuple[str, ...] = ("supcon", "hwc+lam"),
    geometries: tuple[str, ...] = ("euclidean", "poincare"),
    embed_dim: int = 128,
    compile_loss: bool = False,
    compile_mode: str | None = None,
    compile_backend: str | None = None,
) -> list[dict]:
    """Share of a training step (two views, autocast bf16 on CUDA, AdamW) taken by each loss.

    For each geometry the same model steps with a trivial loss (``base``) and with each
    method's objective, interleaved; ``share = (t_method − t_base) / t_method``. The loss is
    also timed alone on detached embeddings (``loss_ms``). With ``compile_loss`` the objectives
    run through :class:`hierviz.losses.CompiledLoss` (``compile_mode``, ``compile_backend``: its
    ``mode`` and ``backend``; ``"aot_eager"`` traces the same graphs without code generation, the
    CPU dry run of ``benchmarks/gpu_session.sh``).

    Returns
    -------
    list of dict with keys geometry, method, step_ms, base_ms, share, loss_ms.
    """
    from hierviz.methods import build_objective
    from hierviz.models import build_model

    tree = LabelTree.from_nested(
        {"root": {"benign": ["nv", "bkl", "df", "vasc"], "malignant": ["mel", "bcc", "akiec"]}}
    )
    g = torch.Generator().manual_seed(0)
    x = torch.rand(batch, 2, 3, image_size, image_size, generator=g).to(device)
    y = torch.randint(0, tree.num_leaves, (batch,), generator=g).to(device)
    amp = device.type == "cuda"
    rows = []
    for geo_name in geometries:
        geometry = get_geometry(geo_name)
        torch.manual_seed(0)
        model = build_model(encoder, geometry, embed_dim=embed_dim, small_input=image_size <= 64).to(device)
        model = model.to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        objectives = {m: build_objective(m, tree, geometry).to(device) for m in methods}
        if compile_loss:  # train.compile_loss: fullgraph torch.compile after one eager call
            from hierviz.losses import CompiledLoss

            # compile_mode "reduce-overhead": CUDA graphs on top (static shapes), the launches replayed at once
            compiled = {m: CompiledLoss(o, mode=compile_mode, backend=compile_backend) for m, o in objectives.items()}
            objectives = {m: (lambda z, y, f=f: f({"z": z}, y)) for m, f in compiled.items()}

        def step(obj, model=model, opt=opt):
            def run():
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                    out = model(x)
                z = out["z"].float()
                loss = z.sum() * 0.0 if obj is None else obj(z, y)[0]
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                _sync(device)

            return run

        fns = {"base": step(None)}
        fns.update({m: step(o) for m, o in objectives.items()})
        res = _time_round_robin(fns, repeats)
        with torch.no_grad():
            z0 = model(x)["z"].float()
        for m, obj in objectives.items():

            def alone(obj=obj, z0=z0):
                z = z0.clone().requires_grad_(True)
                obj(z, y)[0].backward()
                _sync(device)

            t_loss = _time_round_robin({"loss": alone}, repeats)["loss"][0]
            t_step, t_base = res[m][0], res["base"][0]
            rows.append(
                dict(
                    geometry=geo_name,
                    method=m,
                    step_ms=1e3 * t_step,
                    base_ms=1e3 * t_base,
                    share=(t_step - t_base) / t_step,
                    loss_ms=1e3 * t_loss,
                )
            )
    return rows


#: The targets: the share of a ResNet-50 224 px B128 bf16 step each loss may take.
SHARE_GOALS = {"supcon": 0.015, "hwc+lam": 0.03}


def verdicts(rows: list[dict]) -> list[dict]:
    """One goal/measured/met line per (method, geometry) with a goal in :data:`SHARE_GOALS`."""
    out = []
    for r in rows:
        goal = SHARE_GOALS.get(r["method"])
        if goal is None:
            continue
        out.append(
            dict(
                goal=f"{r['method']} {r['geometry']}: share of the step <= {100 * goal:.1f}%",
                measured=f"{100 * r['share']:.2f}% (loss alone {r['loss_ms']:.2f} ms, step {r['step_ms']:.2f} ms)",
                met=bool(r["share"] <= goal),
            )
        )
    return out


def _write_json(path: str | None, payload: dict) -> None:
    if path:
        import json
        import os

        with open(f"{path}.tmp", "w", encoding="utf-8") as f:  # whole or not at all: a timeout may stop the run
            json.dump(payload, f, indent=2)
        os.replace(f"{path}.tmp", path)
        print(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; prints a table per geometry."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024, help="2B, embeddings per batch (default 1024)")
    ap.add_argument("--d", type=int, default=128, help="embedding dimension (default 128)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    ap.add_argument("--geometries", default="euclidean,poincare")
    ap.add_argument("--share", action="store_true", help="share of a training step taken by SupCon / HWC+LAM")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (with --share)")
    ap.add_argument("--encoder", default="resnet50", help="encoder for --share (resnet50, resnet18, small_cnn)")
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=128, help="images per step for --share (two views each)")
    ap.add_argument("--compile", action="store_true", help="fuse the Poincaré kernels with torch.compile")
    ap.add_argument("--compile-loss", action="store_true", help="objectives through CompiledLoss (train.compile_loss)")
    ap.add_argument(
        "--compile-mode",
        default=None,
        help="torch.compile mode of --compile-loss, e.g. reduce-overhead (CUDA graphs)",
    )
    ap.add_argument(
        "--compile-backend",
        default=None,
        help="torch.compile backend of --compile-loss (default inductor; aot_eager: no code generation)",
    )
    ap.add_argument("--methods", default="supcon,hwc+lam", help="methods for --share")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.compile:
        from hierviz.geometry._kernels import compile_kernels

        compile_kernels(True)
    if args.share:
        device = torch.device(args.device)
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        print(
            f"torch {torch.__version__}, {device} ({name}), {args.encoder} {args.image_size} px, batch {args.batch} "
            f"x 2 views, {'bf16 autocast, ' if device.type == 'cuda' else ''}AdamW, median of {args.repeats} "
            f"interleaved steps{', compiled kernels' if args.compile else ''}"
            f"{', compiled objectives' if args.compile_loss else ''}"
            f"{f' (mode {args.compile_mode})' if args.compile_loss and args.compile_mode else ''}"
            f"{f' (backend {args.compile_backend})' if args.compile_loss and args.compile_backend else ''}"
        )
        print(f"  {'geometry':10s} {'loss':8s} {'step ms':>9s} {'base ms':>9s} {'share':>7s} {'loss alone ms':>14s}")
        rows: list[dict] = []
        for geo in args.geometries.split(","):  # one geometry at a time: a run stopped early keeps the finished ones
            new_rows = bench_share(
                args.encoder,
                args.image_size,
                args.batch,
                device,
                args.repeats,
                methods=tuple(args.methods.split(",")),
                geometries=(geo,),
                compile_loss=args.compile_loss,
                compile_mode=args.compile_mode,
                compile_backend=args.compile_backend,
            )
            rows += new_rows
            for r in new_rows:
                print(
                    f"  {r['geometry']:10s} {r['method']:8s} {r['step_ms']:9.2f} {r['base_ms']:9.2f} "
                    f"{100 * r['share']:6.1f}% {r['loss_ms']:14.2f}"
                )
            for v in verdicts(new_rows):
                print(f"GOAL {v['goal']} | measured {v['measured']} | {'met' if v['met'] else 'not met'}", flush=True)
            _write_json(
                args.json,
                dict(
                    benchmark="bench_losses --share",
                    torch=torch.__version__,
                    device=name,
                    date=time.strftime("%Y-%m-%d", time.gmtime()),
                    settings=dict(
                        encoder=args.encoder,
                        image_size=args.image_size,
                        batch=args.batch,
                        repeats=args.repeats,
                        compile_loss=args.compile_loss,
                        compile_mode=args.compile_mode,
                        compile_backend=args.compile_backend,
                        compile_kernels=args.compile,
                    ),
                    rows=rows,
                    verdicts=verdicts(rows),
                ),
            )
        return
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, 2B = {args.n}, d = {args.d}, "
        f"median of {args.repeats} interleaved forward+backward rounds"
    )
    for name in args.geometries.split(","):
        res = bench(name, args.n, args.d, args.repeats)
        print(f"\n[{name}]")
        print(f"  {'loss':40s} {'ms':>9s} {'× our SupCon':>13s}")
        for k, (sec, ratio) in res.items():
            print(f"  {k:40s} {1e3 * sec:9.2f} {ratio:13.2f}")


if __name__ == "__main__":
    main()
