"""Data-parallel training (hierviz.training.distributed): 2 gloo processes vs one process.

Each rank holds DIFFERENT data (rank 1's batch lacks leaves 1 and 2).  For every registered
method, in float64: the loss, the gradients of the model's and the objective's parameters,
the parameters after one AdamW step and the objective's buffers (LAM prototypes) equal one
process on the concatenated batch to 1e-6.  The processes are spawned once per module (a
file store in tmp_path) and run every case; each test checks one case's record.
"""

from __future__ import annotations

import json
import os
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from hierviz.hierarchy import LabelTree
from hierviz.methods import METHODS, build_objective, get_method
from hierviz.models.text import HyILRModel
from hierviz.training import distributed as hd

WORLD = 2
D_IN, HIDDEN, DIM = 5, 8, 4
TOL = 1e-6
# rank r's leaf labels: rank 1 lacks leaves 1 and 2; triplet methods read (a, p, n) blocks of 3
LABELS = {0: [0, 0, 2, 1, 1, 3], 1: [3, 3, 0, 3, 3, 0]}
GEOMETRIES = {
    "supcon": ("euclidean", "poincare"),
    "hwc+lam": ("euclidean", "poincare"),
    "hcl": ("euclidean", "poincare"),
}


def _package_methods() -> list[str]:
    """The methods hierviz registers (not a user's, e.g. tests/toy_method.py while another test runs)."""
    return [m for m in METHODS.names() if METHODS.get(m).build.__module__.startswith("hierviz.")]


CASES = [(m, g) for m in _package_methods() for g in GEOMETRIES.get(m, ("euclidean",))]


def _tree() -> LabelTree:
    return LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})


class TinyModel(nn.Module):
    """features -> z on the manifold (-> leaf logits): the shape of hierviz.models.EmbeddingModel's output."""

    def __init__(self, geometry, num_classes: int | None) -> None:
        super().__init__()
        self.geometry = geometry
        self.encoder = nn.Linear(D_IN, HIDDEN)
        self.head = nn.Linear(HIDDEN, DIM)
        self.classifier = None if num_classes is None else nn.Linear(HIDDEN, num_classes)

    def forward(self, x: torch.Tensor) -> dict:
        h = torch.tanh(self.encoder(x))
        z = self.geometry.expmap0(0.5 * torch.tanh(self.head(h)))
        return {"features": h, "z": z, "logits": None if self.classifier is None else self.classifier(h)}


def _data(rank: int, views: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + rank)
    y = torch.tensor(LABELS[rank], dtype=torch.long)
    return torch.randn(len(y), views, D_IN, generator=g, dtype=torch.float64), y


def _build(method: str, geometry: str):
    from hierviz.geometry import get_geometry

    tree = _tree()
    geo = get_geometry(geometry)
    torch.manual_seed(0)
    needs = get_method(method).needs
    model = TinyModel(geo, tree.num_leaves if needs.logits else None).double()
    obj = build_objective(method, tree, geo).double()
    return model, obj


def _loss(obj, out, y):
    """loss_from_output without its float32 cast (the tests run in float64)."""
    from hierviz.losses.objective import mean_over_view_logits

    if getattr(obj, "requires_logits", False):
        return mean_over_view_logits(obj, out["z"], y, out["logits"])
    return obj(out["z"], y)


def _step(model, obj, train_model, x, y, distributed: bool):
    params = [p for p in model.parameters()] + [p for p in obj.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=1e-4)
    out = train_model(x)
    if distributed:
        out, y = hd.gather_batch(out, y)
    loss, _ = _loss(obj, out, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    grads.update({"obj." + n: p.grad.clone() for n, p in obj.named_parameters() if p.grad is not None})
    opt.step()
    if distributed:
        hd.broadcast_buffers(obj)
    after = {n: p.detach().clone() for n, p in model.named_parameters()}
    after.update({"obj." + n: p.detach().clone() for n, p in obj.named_parameters()})
    bufs = {n: b.clone() for n, b in obj.named_buffers() if b.is_floating_point()}
    return float(loss.detach()), grads, after, bufs


def _max_diff(a: dict, b: dict) -> float:
    if set(a) != set(b):
        raise AssertionError(f"different keys: {sorted(set(a) ^ set(b))}")
    return max([0.0] + [float((a[k] - b[k]).abs().max()) if a[k].numel() else 0.0 for k in a])


def _case(method: str, geometry: str, rank: int) -> dict:
    views = get_method(method).needs.views
    xs, ys = zip(*(_data(r, views) for r in range(WORLD)))
    # one process on the concatenated batch
    model, obj = _build(method, geometry)
    ref = _step(model, obj, model, torch.cat(xs), torch.cat(ys), distributed=False)
    # this rank's data, DDP, the loss on the gathered batch
    model, obj = _build(method, geometry)
    ddp = nn.parallel.DistributedDataParallel(model, static_graph=True)
    got = _step(model, obj, ddp, xs[rank], ys[rank], distributed=True)
    return {
        "loss": abs(got[0] - ref[0]),
        "loss_value": got[0],
        "grad": _max_diff(got[1], ref[1]),
        "grad_norm": float(sum(g.abs().sum() for g in ref[1].values())),
        "param": _max_diff(got[2], ref[2]),
        "buffer": _max_diff(got[3], ref[3]),
        "buffers": sorted(ref[3]),
    }


class BNModel(nn.Module):
    """conv -> BatchNorm2d -> pool -> linear -> BatchNorm1d (cumulative average) -> z: both batch-norm kinds."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(3)
        self.fc = nn.Linear(3, 6)
        self.bn1 = nn.BatchNorm1d(6, momentum=None)
        self.out = nn.Linear(6, DIM)

    def forward(self, x: torch.Tensor) -> dict:
        lead = x.shape[:2]  # (B, V): views flattened into the batch, as hierviz.models.EmbeddingModel
        h = torch.relu(self.bn2(self.conv(x.reshape(-1, *x.shape[2:])))).mean((2, 3))
        z = nn.functional.normalize(self.out(torch.relu(self.bn1(self.fc(h)))), dim=-1)
        return {"z": z.reshape(*lead, DIM)}


BN_LABELS = {0: [0, 0, 2, 1, 1, 3], 1: [3, 3, 0, 3]}  # 6 and 4 images (12 and 8 rows): uneven shares


def _bn_run(model, train_model, x, y, distributed: bool, steps: int = 2) -> dict:
    from hierviz.geometry import get_geometry

    loss_fn = build_objective("supcon", _tree(), get_geometry("euclidean")).double()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    rec: dict = {"loss": []}
    for step in range(steps):
        out, yy = train_model(x), y
        if distributed:
            out, yy = hd.gather_batch(out, y)
        loss, _ = loss_fn(out["z"], yy)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if step == 0:
            rec["z"] = out["z"].detach().clone()
            rec["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()}
        opt.step()
        rec["loss"].append(float(loss.detach()))
    rec["params"] = {n: p.detach().clone() for n, p in model.named_parameters()}
    rec["buffers"] = {n: b.clone().double() for n, b in model.named_buffers()}
    return rec


def _bn_case(rank: int) -> dict:
    """2 ranks with different data and sizes, AllReduceBatchNorm under DDP vs BatchNorm on the concatenated batch."""
    xs, ys = [], []
    for r in range(WORLD):
        g = torch.Generator().manual_seed(200 + r)
        y = torch.tensor(BN_LABELS[r], dtype=torch.long)
        xs.append(torch.randn(len(y), 2, 1, 4, 4, generator=g, dtype=torch.float64) * (1 + 2 * r) + r)
        ys.append(y)
    torch.manual_seed(0)
    model = BNModel().double()
    ref = _bn_run(model, model, torch.cat(xs), torch.cat(ys), distributed=False)
    torch.manual_seed(0)
    model = hd.convert_batchnorm(BNModel().double())
    kinds = sorted({type(m).__name__ for m in model.modules() if "Norm" in type(m).__name__})
    got = _bn_run(model, nn.parallel.DistributedDataParallel(model), xs[rank], ys[rank], distributed=True)
    hd.revert_batchnorm(model)
    return {
        "kinds": kinds,
        "reverted": sorted({type(m).__name__ for m in model.modules() if "Norm" in type(m).__name__}),
        "loss": [abs(a - b) for a, b in zip(got["loss"], ref["loss"])],
        "z": float((got["z"] - ref["z"]).abs().max()),
        "grad": _max_diff(got["grads"], ref["grads"]),
        "grad_norm": float(sum(g.abs().sum() for g in ref["grads"].values())),
        "param": _max_diff(got["params"], ref["params"]),
        "buffer": _max_diff(got["buffers"], ref["buffers"]),
        "buffers": sorted(ref["buffers"]),
        "running_var_moved": float((ref["buffers"]["bn2.running_var"] - 1).abs().max()),
        "batches_tracked": float(got["buffers"]["bn1.num_batches_tracked"]),
    }


# HyILR (Paper 05) on token sequences (hierviz htc, hierviz.experiments.htc.train_htc): text-label contrast
# on the Lorentz model (and its Table 4 ablations), covered here as a loss on gathered text features and
# logits (the hyilr* methods of compare, on encoder features, are in CASES)
HYILR_CASES = [("lorentz", "hierarchy"), ("poincare", "hierarchy"), ("euclidean", "hierarchy"), ("lorentz", "random")]
HYILR_LEAVES = {0: [0, 0, 2, 1, 3], 1: [3, 3, 0]}  # 5 and 3 texts; rank 1 lacks leaves 1 and 2


class TinyHTC(nn.Module):
    """Text features T_[CLS] (B, h) and logits against learned label features W_L (c, h), like HyILRModel."""

    def __init__(self, num_labels: int) -> None:
        super().__init__()
        self.encoder = nn.Linear(D_IN, HIDDEN)
        self.label_w = nn.Parameter(0.5 * torch.randn(num_labels, HIDDEN))

    def forward(self, x: torch.Tensor) -> dict:
        text = torch.tanh(self.encoder(x))
        return {"text": text, "logits": text @ self.label_w.T}


def _hyilr_targets(leaves: list[int]) -> torch.Tensor:
    """Multi-hot (B, c) over the tree's nodes without the root: a leaf and its ancestors."""
    tree = _tree()
    cols = [n for n in tree.nodes if n != tree.root]
    rows = [[n in tree.ancestors(tree.leaves[leaf]) for n in cols] for leaf in leaves]
    return torch.tensor(rows, dtype=torch.bool)


def _hyilr_case(rank: int, geometry: str, negatives: str) -> dict:
    """2 ranks with different texts: the loss on the gathered text features and logits vs one process."""
    from hierviz.losses.hyilr import HyperbolicScales, hyilr_loss, label_relations

    rel = label_relations(_tree())
    xs = [torch.randn(len(HYILR_LEAVES[r]), D_IN, generator=torch.Generator().manual_seed(300 + r)) for r in range(2)]
    ts = [_hyilr_targets(HYILR_LEAVES[r]) for r in range(2)]

    def run(x, t, distributed: bool):
        torch.manual_seed(0)
        model = TinyHTC(t.shape[1]).double()
        scales = HyperbolicScales(HIDDEN, geometry=geometry)  # the objective's parameters: not wrapped
        train = nn.parallel.DistributedDataParallel(model, static_graph=True) if distributed else model
        opt = torch.optim.AdamW([*model.parameters(), *scales.parameters()], lr=1e-2)
        out = train(x.double())
        if distributed:  # the label features W_L are a parameter: the same on every rank, not gathered
            out, t = hd.gather_batch(out, t.long())
        gen = torch.Generator().manual_seed(1)  # "random" negatives: the same draw for the same global batch
        loss, terms = hyilr_loss(out["logits"], out["text"], model.label_w, t.bool(), scales, rel,
                                 negatives=negatives, generator=gen)  # fmt: skip
        opt.zero_grad(set_to_none=True)
        loss.backward()
        named = [*model.named_parameters(), *scales.named_parameters()]
        grads = {n: p.grad.clone() for n, p in named if p.grad is not None}  # euclidean: k unused
        opt.step()
        after = {n: p.detach().clone() for n, p in [*model.named_parameters(), *scales.named_parameters()]}
        return float(loss.detach()), float(terms["cl"]), grads, after

    ref = run(torch.cat(xs), torch.cat(ts), False)
    got = run(xs[rank], ts[rank], True)
    return {
        "loss": abs(got[0] - ref[0]),
        "cl": ref[1],
        "grad": _max_diff(got[2], ref[2]),
        "grad_norm": float(sum(g.abs().sum() for g in ref[2].values())),
        "scale_grad": float(sum(ref[2][k].abs() for k in ("log_alpha_t", "log_alpha_l"))),
        "param": _max_diff(got[3], ref[3]),
    }


def _teardown() -> None:
    """Free the DDP wrappers (their reducers hold gloo work) and leave the group together."""
    import gc

    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def _spawn(fn, tmp: Path, outputs: list[str]) -> None:
    """``mp.spawn`` the ranks; a rank killed by SIGABRT *after* writing its results is accepted.

    gloo can abort a process while it exits ("terminate called without an active exception",
    seen once in 4 suite runs under pytest-xdist on 2 cores), after the rank finished its work;
    the results it wrote are complete, so only a missing output counts as a failure.
    """
    try:
        mp.spawn(fn, args=(str(tmp / "store"), str(tmp)), nprocs=WORLD, join=True)
    except mp.ProcessExitedException as exc:
        if exc.signal_name != "SIGABRT" or not all((tmp / name).is_file() for name in outputs):
            raise


def _worker(rank: int, store: str, out_dir: str) -> None:
    import datetime

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=120)
    )
    try:
        records = {}
        for method, geometry in CASES:
            try:
                records[f"{method}/{geometry}"] = _case(method, geometry, rank)
            except Exception:  # recorded; the test of this case fails with it
                records[f"{method}/{geometry}"] = {"error": traceback.format_exc()}
        try:
            records["batchnorm"] = _bn_case(rank)
        except Exception:
            records["batchnorm"] = {"error": traceback.format_exc()}
        for geometry, negatives in HYILR_CASES:
            try:
                records[f"hyilr/{geometry}/{negatives}"] = _hyilr_case(rank, geometry, negatives)
            except Exception:
                records[f"hyilr/{geometry}/{negatives}"] = {"error": traceback.format_exc()}
        # the gather alone, with uneven batches (3 and 5 rows) and its gradient
        x = torch.arange(3 + 2 * rank, dtype=torch.float64).mul(rank + 1).requires_grad_()
        y = hd.all_gather_with_grad(x)
        w = torch.arange(1, 9, dtype=torch.float64)
        (w * y).sum().backward()  # every rank: the same loss of the global vector
        records["uneven"] = {"gathered": y.tolist(), "grad": x.grad.tolist()}
        # a shared output whose first dimension equals the batch size (HyILR's label embeddings
        # when c == B) stays the rank's own; the per-sample ones are gathered
        lab = torch.full((3, 2), float(rank))
        out, _ = hd.gather_batch({"text": torch.full((3, 2), 10.0 + rank), "labels": lab}, torch.arange(3),
                                 shared=HyILRModel.shared_outputs)  # fmt: skip
        records["shared"] = {"labels_is_own": out["labels"] is lab, "text": out["text"][:, 0].tolist()}
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(records))
    finally:
        _teardown()


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> list[dict]:
    tmp = tmp_path_factory.mktemp("ddp")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _spawn(_worker, tmp, [f"rank{r}.json" for r in range(WORLD)])
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(WORLD)]


@pytest.mark.parametrize("method,geometry", CASES, ids=[f"{m}-{g}" for m, g in CASES])
def test_loss_gradients_and_step_equal_one_process(records, method, geometry):
    for rank, rec in enumerate(records):
        r = rec[f"{method}/{geometry}"]
        assert "error" not in r, f"rank {rank}: {r.get('error')}"
        assert np.isfinite(r["loss_value"])
        assert r["grad_norm"] > 0  # a case with no gradient could not fail
        assert r["loss"] < TOL, (rank, r)
        assert r["grad"] < TOL, (rank, r)
        assert r["param"] < TOL, (rank, r)
        assert r["buffer"] < TOL, (rank, r)
    if method in ("lam", "hwc+lam"):
        assert "terms.lam.prototypes" in records[0][f"{method}/{geometry}"]["buffers"]


def test_all_reduce_batchnorm_equals_one_process_on_the_concatenated_batch(records):
    """Different data and shares (12 and 8 rows), BatchNorm2d and BatchNorm1d(momentum=None), 2 AdamW steps."""
    for rank, rec in enumerate(records):
        r = rec["batchnorm"]
        assert "error" not in r, f"rank {rank}: {r.get('error')}"
        assert r["kinds"] == ["AllReduceBatchNorm"] and r["reverted"] == ["BatchNorm1d", "BatchNorm2d"]
        assert r["grad_norm"] > 0 and r["running_var_moved"] > 1e-3  # the statistics did move
        assert max(r["loss"]) < TOL and r["z"] < TOL, (rank, r)
        assert r["grad"] < TOL and r["param"] < TOL, (rank, r)
        assert r["buffer"] < TOL, (rank, r)  # running mean/var (unbiased, global n) and num_batches_tracked
        assert r["batches_tracked"] == 2
        assert "bn2.running_mean" in r["buffers"] and "bn1.running_var" in r["buffers"]


def test_local_batchnorm_would_differ():
    """The check above can fail: batch norm over one rank's 12 rows is not that of all 20."""
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(3).double().requires_grad_(False)
    x = torch.randn(20, 3, 2, 2, dtype=torch.float64) + torch.arange(20, dtype=torch.float64).view(-1, 1, 1, 1) / 5
    assert float((bn(x)[:12] - bn(x[:12])).abs().max()) > 1e-2


def test_all_reduce_batchnorm_is_batchnorm_in_one_process():
    torch.manual_seed(1)
    for dims, ref_cls in ((2, nn.BatchNorm1d), (3, nn.BatchNorm1d), (4, nn.BatchNorm2d), (5, nn.BatchNorm3d)):
        ref = ref_cls(4, momentum=0.3).double()
        x = torch.randn(6, 4, *([3] * (dims - 2)), dtype=torch.float64, requires_grad=True)
        bn = hd.convert_batchnorm(ref_cls(4, momentum=0.3).double())
        assert isinstance(bn, hd.AllReduceBatchNorm)
        (gx,) = torch.autograd.grad((ref(x) ** 3).sum(), x)
        (gy,) = torch.autograd.grad((bn(x) ** 3).sum(), x)
        torch.testing.assert_close(gy, gx)
        torch.testing.assert_close(bn.running_var, ref.running_var)
        ref.eval(), bn.eval()
        torch.testing.assert_close(bn(x), ref(x))
    with pytest.raises(ValueError, match="AllReduceBatchNorm"):
        hd.AllReduceBatchNorm(4)(torch.randn(4))


def test_convert_batchnorm_shares_parameters_and_state_dict_keys():
    from hierviz.models import ProjectionHead

    head = ProjectionHead(4, 6, 3)
    before = dict(head.state_dict())
    params = [id(p) for p in head.parameters()]
    conv = hd.convert_batchnorm(head)
    assert isinstance(conv.net[1], hd.AllReduceBatchNorm)
    assert [id(p) for p in conv.parameters()] == params and list(conv.state_dict()) == list(before)
    back = hd.revert_batchnorm(conv)
    assert type(back.net[1]) is nn.BatchNorm1d and [id(p) for p in back.parameters()] == params
    assert type(hd.convert_batchnorm(nn.BatchNorm2d(3), "cuda")) is nn.SyncBatchNorm
    assert type(hd.revert_batchnorm(hd.convert_batchnorm(nn.BatchNorm2d(3), "cuda"))) is nn.BatchNorm2d


@pytest.mark.parametrize("geometry,negatives", HYILR_CASES, ids=[f"{g}-{n}" for g, n in HYILR_CASES])
def test_hyilr_on_gathered_texts_equals_one_process(records, geometry, negatives):
    for rank, rec in enumerate(records):
        r = rec[f"hyilr/{geometry}/{negatives}"]
        assert "error" not in r, f"rank {rank}: {r.get('error')}"
        assert r["cl"] > 0 and r["grad_norm"] > 0 and r["scale_grad"] > 0  # the contrastive term is on
        assert r["loss"] < TOL and r["grad"] < TOL and r["param"] < TOL, (rank, r)


def test_every_registered_method_is_covered():
    assert {m for m, _ in CASES} == set(_package_methods())
    assert len(CASES) >= 24  # paper 01, 02, 03 and 04 methods


def test_uneven_gather_and_its_gradient(records):
    # rank 0 holds [0, 1, 2], rank 1 holds 2 * [0, 1, 2, 3, 4]; the loss is sum(w * y) on every rank
    for rec in records:
        assert rec["uneven"]["gathered"] == [0, 1, 2, 0, 2, 4, 6, 8]
    # d/dx_r of sum(w * y), summed over ranks, averaged by DDP (/2): the rank's slice of w
    assert records[0]["uneven"]["grad"] == [2 * w for w in (1, 2, 3)]
    assert records[1]["uneven"]["grad"] == [2 * w for w in (4, 5, 6, 7, 8)]


def test_gather_batch_leaves_shared_outputs_alone(records):
    """HyILR's label embeddings (c, h) are a parameter, not a batch: never gathered, even when c == B."""
    for rec in records:
        assert rec["shared"] == {"labels_is_own": True, "text": [10.0] * 3 + [11.0] * 3}


def test_sharded_batch_sampler_partitions_each_global_batch():
    from torch.utils.data import BatchSampler, RandomSampler

    def shards(epoch: int, world: int) -> list[list[list[int]]]:
        out = []
        for r in range(world):
            g = torch.Generator().manual_seed(7)
            s = hd.ShardedBatchSampler(BatchSampler(RandomSampler(range(23), generator=g), 8, True), world, r)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    for world in (1, 2, 3):
        ranks = shards(0, world)
        g = torch.Generator().manual_seed(7)
        single = list(BatchSampler(RandomSampler(range(23), generator=g), 8, True))
        for b, batch in enumerate(single):
            # the ranks' slices in rank order are the single-process batch: no overlap, nothing lost
            assert sum((ranks[r][b] for r in range(world)), []) == batch
        assert shards(0, world) == ranks  # reproducible


def test_sharded_batch_sampler_keeps_triplets_and_follows_epochs():
    from hierviz.samplers import TreeTripletBatchSampler, TreeTripletSampler

    tree = _tree()
    labels = [0, 0, 1, 1, 2, 2, 3, 3]

    def run(epoch: int, r: int) -> list[list[int]]:
        s = hd.ShardedBatchSampler(TreeTripletBatchSampler(TreeTripletSampler(labels, tree, seed=3), 4), 2, r, block=3)
        s.set_epoch(epoch)
        return list(s)

    whole = TreeTripletBatchSampler(TreeTripletSampler(labels, tree, seed=3), 4)
    for epoch in (0, 1):
        whole.set_epoch(epoch)
        for b, batch in enumerate(whole):
            a, c = run(epoch, 0)[b], run(epoch, 1)[b]
            assert a + c == batch and len(a) % 3 == 0 and len(c) % 3 == 0
    assert run(0, 0) != run(1, 0)  # a new epoch, new triplets
    assert run(1, 1) == run(1, 1)


def test_tree_triplet_sampler_shards_without_overlap():
    from hierviz.samplers import TreeTripletSampler

    tree = _tree()
    labels = [0, 0, 1, 1, 2, 2, 3, 3]
    whole = TreeTripletSampler(labels, tree, seed=5)
    whole.set_epoch(2)
    parts = []
    for r in range(2):
        s = TreeTripletSampler(labels, tree, seed=5, num_replicas=2, rank=r)
        s.set_epoch(2)
        parts.append(s.epoch_triplets())
    total = whole.epoch_triplets()
    n = len(total)
    joined = np.empty((2 * len(parts[0]), 3), dtype=total.dtype)
    joined[0::2], joined[1::2] = parts
    # interleaved shards give back the epoch's triplets (the tail padded by wrapping)
    # the interleaved shards are the epoch's triplets, each position on exactly one rank
    # (a shard is padded by wrapping when the count is odd)
    np.testing.assert_array_equal(joined[:n], total)
    assert len(joined) - n < 2


def test_single_process_helpers_are_identity():
    x = torch.randn(3, 2, requires_grad=True)
    assert hd.all_gather_with_grad(x) is x
    out, y = hd.gather_batch({"z": x, "logits": None}, torch.tensor([0, 1, 2]))
    assert out["z"] is x and y.tolist() == [0, 1, 2]
    assert not hd.is_distributed() and hd.is_main_process() and hd.get_world_size() == 1
    assert hd.init_distributed() is False or hd.launched_by_torchrun()


@pytest.mark.parametrize(
    "kw", [{"num_replicas": 0, "rank": 0}, {"num_replicas": 2, "rank": 2}, {"num_replicas": 2, "rank": -1}]
)
def test_sharded_batch_sampler_rejects_bad_ranks(kw):
    with pytest.raises(ValueError, match="ShardedBatchSampler"):
        hd.ShardedBatchSampler([[0, 1]], **kw)


def test_sharded_batch_sampler_rejects_split_blocks():
    with pytest.raises(ValueError, match="block=3"):
        list(hd.ShardedBatchSampler([[0, 1, 2, 3]], 2, 0, block=3))


# --------------------------------------------------------------------------- fit under 2 ranks

FIT_N, FIT_BATCH = 20, 8  # two global batches of 8 per epoch (4 per rank)


class _Views(torch.utils.data.Dataset):
    """Deterministic two-view items (no augmentation RNG), leaf labels cycling over 4 leaves."""

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(11)
        self.x = torch.randn(FIT_N, 2, D_IN, generator=g)
        self.y = [i % 4 for i in range(FIT_N)]

    def __len__(self) -> int:
        return FIT_N

    def __getitem__(self, i: int):
        return self.x[i], self.y[i]


def _fit(method: str, ckpt: str | None, *, resume: bool = False, stop_after: int | None = None) -> dict:
    from hierviz.training import TrainConfig, fit, seed_everything

    tree = _tree()
    from hierviz.geometry import get_geometry

    geo = get_geometry("euclidean")
    seed_everything(0)
    model = TinyModel(geo, None)
    obj = build_objective(method, tree, geo)
    cfg = TrainConfig(
        epochs=2, batch_size=FIT_BATCH, warmup_epochs=0.5, ema_decay=None, amp=False, device="cpu",
        lr_backbone=1e-2, progress=False, checkpoint_dir=ckpt, resume=resume, seed=3,
    )  # fmt: skip

    def stop(epoch: int, info: dict) -> None:
        if stop_after is not None and epoch + 1 >= stop_after:
            raise KeyboardInterrupt  # an interrupted run (its checkpoint is on disk)

    try:
        res = fit(cfg, model, obj, _Views(), callbacks=[stop])
    except KeyboardInterrupt:
        return {}
    state = {k: v.detach().clone() for k, v in res.model.state_dict().items()}
    state.update({"obj." + k: v.detach().clone() for k, v in obj.state_dict().items() if v.is_floating_point()})
    return {"state": state, "loss": res.step_history["loss"]}


def _fit_worker(rank: int, store: str, out_dir: str) -> None:
    import datetime

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=120)
    )
    try:
        out = {}
        for method in ("supcon", "hwc+lam"):
            out[method] = _fit(method, str(Path(out_dir, f"full-{method}")))
            _fit(method, str(Path(out_dir, f"half-{method}")), stop_after=1)  # interrupted after epoch 1
        torch.save(out, Path(out_dir, f"fit{rank}.pt"))
    finally:
        _teardown()


@pytest.fixture(scope="module")
def fit_runs(tmp_path_factory) -> tuple[Path, list[dict]]:
    tmp = tmp_path_factory.mktemp("ddpfit")
    _spawn(_fit_worker, tmp, [f"fit{r}.pt" for r in range(WORLD)])
    return tmp, [torch.load(tmp / f"fit{r}.pt") for r in range(WORLD)]


@pytest.mark.parametrize("method", ["supcon", "hwc+lam"])
def test_fit_on_two_ranks_equals_one_process_with_the_same_global_batch(fit_runs, method, tmp_path):
    tmp, runs = fit_runs
    one = _fit(method, str(tmp_path / "one"))
    for rank, run in enumerate(runs):
        r = run[method]
        np.testing.assert_allclose(r["loss"], one["loss"], rtol=1e-5, atol=1e-6, err_msg=f"rank {rank}")
        assert set(r["state"]) == set(one["state"])
        for k, v in one["state"].items():
            torch.testing.assert_close(r["state"][k], v, rtol=1e-5, atol=1e-6, msg=f"rank {rank}: {k}")
    assert len(one["loss"]) == 4  # 2 epochs x 2 global batches
    # rank 0 alone wrote the checkpoint (one file set per run directory)
    assert (tmp / f"full-{method}" / "checkpoint.pt").is_file()


@pytest.mark.parametrize("method", ["supcon", "hwc+lam"])
def test_resume_a_two_rank_checkpoint_in_one_process(fit_runs, method, tmp_path):
    tmp, _ = fit_runs
    import shutil

    shutil.copytree(tmp / f"half-{method}", tmp_path / "half")
    resumed = _fit(method, str(tmp_path / "half"), resume=True)
    one = _fit(method, str(tmp_path / "one"))
    np.testing.assert_allclose(resumed["loss"], one["loss"], rtol=1e-5, atol=1e-6)
    for k, v in one["state"].items():
        torch.testing.assert_close(resumed["state"][k], v, rtol=1e-5, atol=1e-6, msg=k)


# --------------------------------------------------------------------------- hierviz compare under torchrun

CLI_ARGS = [
    "compare", "--preset=quick-ham10000", "--limit", "80", "--epochs", "2", "--seeds", "2", "--methods", "supcon",
    "--geometry", "euclidean", "--encoder", "small_cnn", "--width", "4", "--embed-dim", "8",
    "--image-size", "16", "--batch-size", "32", "--projection", "pca", "--quiet", "--set", "data.workers=0",
]  # fmt: skip


def test_compare_under_torchrun_resumes_a_one_process_run(tmp_path):
    """Seed 1 is interrupted in one process; torchrun with 2 ranks resumes it; rank 0 alone writes."""
    import csv
    import subprocess
    import sys

    from hierviz.cli import main

    def crash(epoch: int, info: dict) -> None:
        if epoch == 0:
            raise KeyboardInterrupt

    out = tmp_path / "run"
    assert main([*CLI_ARGS, "--out", str(out)], _run_callbacks={"supcon-euclidean-s1": [crash]}) == 130
    assert not (out / "runs" / "supcon-euclidean-s1" / "result.json").exists()
    first = json.loads((out / "runs" / "supcon-euclidean-s0" / "result.json").read_text())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "hierviz"]
    proc = subprocess.run(
        [*cmd, *CLI_ARGS, "--out", str(out), "--resume"], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads((out / "runs" / "supcon-euclidean-s1" / "result.json").read_text())
    # each run says how it was launched (result.json and its config.json); the fingerprint leaves it out
    saved = json.loads((out / "runs" / "supcon-euclidean-s1" / "config.json").read_text())
    assert (rec["world_size"], first["world_size"], saved["run"]["world_size"]) == (2, 1, 2)
    assert rec["global_batch_size"] == first["global_batch_size"] == saved["run"]["global_batch_size"] == 32
    # the same global batches per epoch as one process: the second epoch ran on 2 ranks
    assert len(rec["step_history"]["loss"]) == len(first["step_history"]["loss"]) >= 2
    assert all(np.isfinite(rec["step_history"]["loss"]))
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["method"], r["seed"]) for r in rows] == [("supcon", "0"), ("supcon", "1")]
    # seed 0 was reused, not retrained
    assert json.loads((out / "runs" / "supcon-euclidean-s0" / "result.json").read_text()) == first
    assert proc.stdout.count("finished earlier, reusing") == 1  # printed by rank 0 only


# --------------------------------------------------------------------------- per-sample augmentation seeds


def _image_data(n: int = 6):
    from hierviz.data import ArrayDataset

    rng = np.random.default_rng(0)
    return ArrayDataset(rng.integers(0, 256, (n, 16, 16, 3), dtype=np.uint8), np.arange(n) % 2, ["a", "b"])


def test_per_sample_views_do_not_depend_on_who_draws_them():
    from torch.utils.data import DataLoader

    from hierviz.data import ContrastiveDataset, TwoViewTransform

    views = ContrastiveDataset(_image_data(), TwoViewTransform(16), seed=3)
    views.set_epoch(1)
    torch.manual_seed(0)
    in_order = [views[i][0] for i in range(6)]
    torch.manual_seed(123)  # another global stream, reversed order: the same views
    assert all(torch.equal(views[i][0], in_order[i]) for i in reversed(range(6)))
    # two "ranks" (halves of the batch) and DataLoader workers draw the same views
    shards = [list(hd.ShardedBatchSampler([list(range(6))], 2, r))[0] for r in range(2)]
    assert all(torch.equal(views[i][0], in_order[i]) for s in shards for i in s)
    (x, _), *_ = DataLoader(views, batch_size=6, num_workers=2)
    assert torch.equal(x, torch.stack(in_order))
    assert not torch.equal(in_order[0][0], in_order[0][1])  # two different views
    views.set_epoch(2)
    assert not torch.equal(views[0][0], in_order[0])  # a new epoch, new views


def test_per_sample_views_follow_the_epoch_in_persistent_workers():
    from torch.utils.data import DataLoader

    from hierviz.data import ContrastiveDataset, TwoViewTransform

    views = ContrastiveDataset(_image_data(), TwoViewTransform(16), seed=3)
    loader = DataLoader(views, batch_size=6, num_workers=1, persistent_workers=True)
    got = []
    for epoch in (0, 1):
        views.set_epoch(epoch)  # before iter(loader), as fit does
        got.append(next(iter(loader))[0])
    assert not torch.equal(got[0], got[1])  # the worker saw the new epoch
    assert torch.equal(got[1], torch.stack([views[i][0] for i in range(6)]))  # epoch 1 in the main process


def test_per_sample_seeds_leave_the_global_stream_and_default_mode_alone():
    from hierviz.data import ContrastiveDataset, FeatureViews, TwoViewTransform

    ds = _image_data()
    torch.manual_seed(5)
    ContrastiveDataset(ds, TwoViewTransform(16), seed=0)[2]
    after = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(torch.rand(3), after)  # the global RNG was not advanced
    # seed=None: the views of the global stream, exactly as TwoViewTransform draws them (0.1 behaviour)
    torch.manual_seed(9)
    default = ContrastiveDataset(ds, TwoViewTransform(16))[2][0]
    torch.manual_seed(9)
    assert torch.equal(default, TwoViewTransform(16)(ds.images[2]))
    # any transform on torch's global RNG: feature dropout views of a vector dataset
    from hierviz.data import ArrayDataset

    vec = ArrayDataset(np.ones((4, 50), np.float32), np.array([0, 1, 0, 1]), ["a", "b"])
    fv = ContrastiveDataset(vec, FeatureViews(0.5), seed=1)
    assert torch.equal(fv[3][0], fv[3][0]) and not torch.equal(fv[3][0][0], fv[3][0][1])
    with pytest.raises(ValueError, match="seed"):
        ContrastiveDataset(ds, TwoViewTransform(16), seed=-1)


def test_view_seeds():
    from hierviz.data.transforms import view_seeds

    seeds = {tuple(view_seeds(s, e, i, 2)) for s in range(3) for e in range(3) for i in range(20)}
    assert len(seeds) == 180 and all(0 <= x < 2**64 for t in seeds for x in t)
    assert view_seeds(1, 2, 3, 3)[:2] == view_seeds(1, 2, 3, 2)  # view v does not depend on V
    with pytest.raises(ValueError, match="index"):
        view_seeds(0, 0, -1, 2)


@pytest.mark.slow
def test_compare_on_two_ranks_gives_the_table_of_one_process(tmp_path):
    """``torchrun --nproc_per_node 2 -m hierviz compare`` == one process with the same global batch.

    Per-sample augmentation seeds (``data.augment_seeds=sample``) and batch norm over both
    ranks (``train.sync_bn``, the small_cnn encoder and the projection head have batch norm)
    make every step the same computation up to float rounding: the table, the per-step
    losses and the test embeddings agree.  Without either they differ (docs/distributed.md).
    """
    import csv
    import subprocess
    import sys

    from hierviz.cli import main

    args = [*CLI_ARGS, "--seeds", "1", "--batch-size", "16", "--set", "data.augment_seeds=sample"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "hierviz"]
    proc = subprocess.run(
        [*cmd, *args, "--out", str(tmp_path / "two")], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    def table(out: str) -> list[dict]:
        with open(tmp_path / out / "results.csv", newline="") as fh:
            return [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in csv.DictReader(fh)]

    one, two = table("one"), table("two")
    assert len(one) == 1 and [r["method"] for r in two] == ["supcon"]
    for a, b in zip(one, two):
        for k, v in a.items():
            try:
                np.testing.assert_allclose(float(b[k]), float(v), rtol=1e-5, atol=1e-6, err_msg=k)
            except ValueError:  # a name
                assert b[k] == v, k
    run = "runs/supcon-euclidean-s0"
    rec = [json.loads((tmp_path / o / run / "result.json").read_text()) for o in ("one", "two")]
    assert len(rec[0]["step_history"]["loss"]) == 6  # 2 epochs x 3 global batches of 16 (8 per rank)
    np.testing.assert_allclose(rec[1]["step_history"]["loss"], rec[0]["step_history"]["loss"], rtol=1e-5)
    emb = [np.load(tmp_path / o / run / "embeddings.npz") for o in ("one", "two")]
    np.testing.assert_allclose(emb[1]["z_test"], emb[0]["z_test"], atol=1e-5)


def test_new_keys_at_their_default_keep_older_fingerprints():
    """A run folder written before data.augment_seeds / train.sync_bn existed still resumes."""
    from hierviz.experiments.config import ExperimentConfig
    from hierviz.experiments.records import diff_keys, fingerprint

    now = ExperimentConfig().to_dict()
    before = json.loads(json.dumps(now))
    del before["data"]["augment_seeds"], before["train"]["sync_bn"]
    assert fingerprint(before) == fingerprint(now) and diff_keys(before, now) == []
    now["data"]["augment_seeds"] = "sample"
    assert fingerprint(before) != fingerprint(now) and diff_keys(before, now) == ["data.augment_seeds"]
