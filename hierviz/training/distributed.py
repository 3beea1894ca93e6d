"""Data-parallel training under ``torchrun``: negatives from every rank, gradient-correct.

A contrastive loss needs the negatives of the *global* batch, so every rank gathers the
model outputs (``z``, ``logits``, ...) and the labels of all ranks with an autograd-aware
all-gather (:func:`all_gather_with_grad`) and computes the method's objective on the
gathered batch.  :func:`hierviz.training.fit` does this by itself when the process group is
initialised with more than one rank (``torchrun`` + :func:`init_distributed`), for every
registered method: nothing in a loss changes.

Gradient scale (the derivation behind "no extra factor")
--------------------------------------------------------
Let ``W`` ranks hold local outputs ``z_1 .. z_W`` (``z_r = f_θ(x_r)``) and let every rank
compute the same loss ``L(Z)`` on the gathered ``Z = [z_1; ...; z_W]`` (the loss of one
process on the concatenated batch).  The true gradient is
``∂L/∂θ = Σ_r (∂L/∂z_r)(∂z_r/∂θ)``.  On rank ``r`` the backward of the gather receives
``∂L/∂Z`` (the same on every rank), all-reduces it (sum: ``W ∂L/∂Z``) and keeps its slice
``W ∂L/∂z_r``, so rank ``r`` holds ``W (∂L/∂z_r)(∂z_r/∂θ)``.  DistributedDataParallel then
*averages* over ranks: ``(1/W) Σ_r W (∂L/∂z_r)(∂z_r/∂θ) = ∂L/∂θ``, exactly the gradient of
one process.  The all-reduce in the backward is what makes this hold also when ranks
compute different losses ``L_r`` (local anchors against gathered negatives, total
``L = (1/W) Σ_r L_r``): the slice is then ``Σ_r' ∂L_r'/∂z_r`` and the average is again
``∂L/∂θ``.  A gather whose backward only keeps the local slice ``∂L/∂z_r`` (the SimCLR-style
``grads[rank]``) gives ``(1/W)`` of the correct gradient under DDP averaging when every rank
computes the global loss, and a wrong mixture when ranks compute their own ``L_r``.

Parameters owned by the objective (A-HMLC's level attention, paper 04's linear heads) are
not wrapped by DDP: every rank computes the full loss, so their gradient is already the full
one on every rank.  Buffers of the objective (LAM prototypes and their EMA, Eqs. 9-10 of
Paper 01) are updated from the gathered batch, hence identically on every rank;
:func:`broadcast_buffers` copies rank 0's after each step so that they cannot drift apart.

Batch norm layers are converted by :func:`convert_batchnorm` for the duration of
:func:`~hierviz.training.fit` (``TrainConfig.sync_bn``): :class:`torch.nn.SyncBatchNorm` on
CUDA, :class:`AllReduceBatchNorm` elsewhere (``SyncBatchNorm`` refuses CPU tensors in torch
2.14), so the batch statistics are those of the global batch too.  Their backward follows the
same rule: every rank's statistics are gathered with :class:`GatherLayer`.

Examples
--------
>>> from hierviz.training.distributed import is_distributed, is_main_process, get_world_size
>>> is_distributed(), is_main_process(), get_world_size()  # no process group: one process
(False, True, 1)
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

__all__ = [
    "init_distributed",
    "is_distributed",
    "is_main_process",
    "get_rank",
    "get_world_size",
    "barrier",
    "GatherLayer",
    "all_gather_with_grad",
    "all_gather_nograd",
    "gather_batch",
    "broadcast_buffers",
    "AllReduceBatchNorm",
    "convert_batchnorm",
    "revert_batchnorm",
    "ShardedBatchSampler",
    "launched_by_torchrun",
]

#: Environment variables that torchrun sets for every worker.
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def launched_by_torchrun() -> bool:
    """True when the environment holds torchrun's ``RANK``/``WORLD_SIZE``/... variables."""
    return all(k in os.environ for k in TORCHRUN_ENV)


def init_distributed(backend: str | None = None, timeout_s: float = 1800.0) -> bool:
    """Initialise the default process group from torchrun's environment (idempotent).

    Parameters
    ----------
    backend : {"gloo", "nccl"} or None
        None: ``"nccl"`` when CUDA is available, else ``"gloo"``.
    timeout_s : float, default 1800
        Collective timeout in seconds.

    Returns
    -------
    bool
        True when a group of more than one rank is (now) initialised; False outside
        torchrun (one process, nothing done).

    Notes
    -----
    Reads ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT`` (set by
    ``torchrun``; see ``docs/distributed.md`` for several nodes).  With CUDA the process
    uses the GPU ``LOCAL_RANK``.
    """
    if not dist.is_available():
        return False
    if dist.is_initialized():
        return dist.get_world_size() > 1
    if not launched_by_torchrun():
        return False
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=float(timeout_s)))
    return dist.get_world_size() > 1


def is_distributed() -> bool:
    """True inside an initialised process group of more than one rank."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def get_rank() -> int:
    """This process's rank (0 outside a process group)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def get_world_size() -> int:
    """The number of ranks (1 outside a process group)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def is_main_process() -> bool:
    """True on rank 0 (and in a single process): the one that writes files, logs and bars."""
    return get_rank() == 0


def barrier() -> None:
    """Wait for every rank (nothing outside a process group)."""
    if is_distributed():
        dist.barrier()


def _sizes(n: int, device: torch.device) -> list[int]:
    mine = torch.tensor([int(n)], dtype=torch.long, device=device)
    out = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(out, mine)
    return [int(s) for s in out]


def _gather_padded(x: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """All-gather ``x`` (n_r, ...) of every rank into (Σ n_r, ...), padding to the largest n_r."""
    m = max(sizes)
    x = x.contiguous()
    if x.shape[0] < m:
        x = torch.cat([x, x.new_zeros((m - x.shape[0], *x.shape[1:]))])
    parts = [torch.empty_like(x) for _ in sizes]
    dist.all_gather(parts, x)
    return torch.cat([p[:s] for p, s in zip(parts, sizes)])


class GatherLayer(torch.autograd.Function):
    """All-gather along dim 0 whose backward all-reduces the gradient and keeps this rank's slice.

    ``forward(x (n_r, ...), sizes) -> (Σ_r n_r, ...)``: every rank's rows in rank order
    (ranks may hold different ``n_r``).  ``backward``: the incoming gradient (Σ n_r, ...) is
    summed over ranks (``all_reduce``) and rows ``[Σ_{r'<r} n_r', Σ_{r'<=r} n_r')`` are
    returned; see the module notes for why this gives the exact gradient under DDP
    averaging.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, sizes: list[int]) -> torch.Tensor:  # type: ignore[override]
        ctx.sizes = list(sizes)
        ctx.rank = dist.get_rank()
        return _gather_padded(x, ctx.sizes)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        start = sum(ctx.sizes[: ctx.rank])
        return grad[start : start + ctx.sizes[ctx.rank]], None


def all_gather_with_grad(x: torch.Tensor, sizes: list[int] | None = None) -> torch.Tensor:
    """Concatenate ``x`` of every rank along dim 0, differentiably (:class:`GatherLayer`).

    Parameters
    ----------
    x : torch.Tensor, shape (n_r, ...)
        Same trailing shape and dtype on every rank; ``n_r`` may differ.
    sizes : list of int, optional
        Every rank's ``n_r`` (gathered when omitted: one small extra collective).

    Returns
    -------
    torch.Tensor, shape (Σ_r n_r, ...)
        ``x`` itself outside a process group.
    """
    if not is_distributed():
        return x
    if sizes is None:
        sizes = _sizes(x.shape[0], x.device)
    return GatherLayer.apply(x, sizes)


def all_gather_nograd(x: torch.Tensor, sizes: list[int] | None = None) -> torch.Tensor:
    """:func:`all_gather_with_grad` without a gradient (labels, indices)."""
    if not is_distributed():
        return x
    if sizes is None:
        sizes = _sizes(x.shape[0], x.device)
    with torch.no_grad():
        return _gather_padded(x.detach(), sizes)


def gather_batch(
    out: Mapping[str, Any], labels: torch.Tensor | None, shared: Collection[str] = ()
) -> tuple[dict[str, Any], torch.Tensor | None]:
    """The global batch: every per-sample model output and the labels of all ranks.

    Parameters
    ----------
    out : mapping
        A model's output (``"z"`` (B, V, d), ``"logits"``, ``"features"`` ...); every tensor
        whose first dimension is this rank's batch size ``B`` is gathered with gradients,
        anything else (None, scalars) is passed through.
    labels : LongTensor (B,) or None
    shared : collection of str, optional
        Keys of outputs that are the same on every rank rather than per sample (a model's
        ``shared_outputs``, e.g. HyILR's label embeddings ``"labels"`` (c, h)): passed through
        even when their first dimension happens to equal ``B``.

    Returns
    -------
    out, labels
        Rows in rank order (rank 0's batch first): what one process would see on the
        concatenated batch.  Unchanged outside a process group.

    Raises
    ------
    ValueError
        If ``labels`` is None and ``out`` has no ``"z"`` to tell the batch size.
    """
    if not is_distributed():
        return dict(out), labels
    if labels is not None:
        B = int(labels.shape[0])
    elif isinstance(out.get("z"), torch.Tensor):
        B = int(out["z"].shape[0])
    else:
        raise ValueError("gather_batch: labels is None and the model output has no 'z' tensor to size the batch")
    device = labels.device if labels is not None else out["z"].device
    sizes = _sizes(B, device)
    gathered: dict[str, Any] = {}
    for k in sorted(out):  # the same order on every rank
        v = out[k]
        if k not in shared and isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == B:
            gathered[k] = all_gather_with_grad(v, sizes) if v.requires_grad else all_gather_nograd(v, sizes)
        else:
            gathered[k] = v
    gathered = {k: gathered[k] for k in out}  # keep the caller's key order
    return gathered, None if labels is None else all_gather_nograd(labels, sizes)


def broadcast_buffers(module: nn.Module, src: int = 0) -> None:
    """Copy every floating/bool buffer of ``module`` from rank ``src`` to all ranks (in place).

    Used after each optimiser step for the objective's state (LAM prototypes, their
    ``proto_initialized`` flags): they are computed from the gathered batch on every rank,
    and this makes them bit-identical whatever the floating-point order.  Nothing outside
    a process group.
    """
    if not is_distributed():
        return
    with torch.no_grad():
        for _, b in sorted(module.named_buffers(), key=lambda kv: kv[0]):
            if b.numel() == 0:
                continue
            if b.dtype == torch.bool:
                tmp = b.to(torch.uint8)
                dist.broadcast(tmp, src)
                b.copy_(tmp.bool())
            else:
                dist.broadcast(b, src)


class AllReduceBatchNorm(nn.modules.batchnorm._BatchNorm):
    """Batch norm over the global batch of all ranks, for any device (``gloo`` on CPU included).

    In training mode inside a process group of more than one rank, the per-channel mean and
    variance are those of the rows of *every* rank (Ioffe & Szegedy 2015, Alg. 1, over the
    concatenated batch): each rank computes its count, mean and centred sum of squares ``M2``
    (two passes), one differentiable all-gather (:class:`GatherLayer`: its backward
    all-reduces the gradient) brings every rank's triple, and Chan et al.'s (1979) pairwise
    formula combines them (``M2 = Σ_r M2_r + n_r (μ_r - μ)²``; no ``E[x²] - μ²``
    cancellation).  One collective forward and one backward per layer, as
    ``SyncBatchNorm``.  The running statistics are updated as :class:`torch.nn.BatchNorm2d`
    does, with the global mean and the unbiased global variance (``n / (n - 1)``, ``n`` the
    global count), so they are the same on every rank.  Otherwise (evaluation, one process)
    it is the ordinary batch norm.  The input may be (N, C) or (N, C, *) as for
    ``BatchNorm1d/2d/3d``; float16/bfloat16 inputs are normalised in float32.

    Made by :func:`convert_batchnorm` (what :func:`hierviz.training.fit` does under DDP off
    CUDA); :class:`torch.nn.SyncBatchNorm` does the same on CUDA only.

    Raises
    ------
    ValueError
        An input of fewer than 2 dimensions, or a global batch of one value per channel in
        training mode (as ``BatchNorm`` does).

    Examples
    --------
    >>> bn = AllReduceBatchNorm(3)  # outside a process group: BatchNorm
    >>> x = torch.randn(8, 3, 4, 4)
    >>> torch.allclose(bn(x), nn.BatchNorm2d(3)(x), atol=1e-6)
    True
    """

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(
                f"AllReduceBatchNorm: expected an input of 2 or more dimensions (N, C, ...), got {input.dim()}"
            )

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        """Normalise ``input`` (N, C, *) with the statistics of the global batch (training, several ranks)."""
        self._check_input_dim(input)
        if not (self.training and is_distributed()):
            return super().forward(input)
        x = input.float() if input.dtype in (torch.float16, torch.bfloat16) else input
        dims = [0, *range(2, x.dim())]
        shape = [1, -1] + [1] * (x.dim() - 2)
        n_r = x.numel() // max(1, x.shape[1])
        mean_r = x.sum(dims) / max(1, n_r)  # this rank's mean and centred sum of squares (two passes)
        m2_r = ((x - mean_r.view(shape)) ** 2).sum(dims)
        local = torch.stack([mean_r, m2_r, torch.full_like(mean_r, float(n_r))])[None]  # (1, 3, C)
        ranks = GatherLayer.apply(local, [1] * dist.get_world_size())  # (W, 3, C): one collective
        counts = ranks[:, 2].detach()
        n = float(counts[:, 0].sum())
        if n <= 1:
            raise ValueError(
                f"AllReduceBatchNorm: expected more than 1 value per channel in training, got a global batch of {n:g}"
            )
        # Chan et al. (1979): the global mean and M2 from every rank's (n_r, mean_r, M2_r)
        mean = (counts * ranks[:, 0]).sum(0) / n
        var = (ranks[:, 1].sum(0) + (counts * (ranks[:, 0] - mean) ** 2).sum(0)) / n  # biased, for normalising
        y = (x - mean.view(shape)) * torch.rsqrt(var + self.eps).view(shape)
        if self.weight is not None:
            y = y * self.weight.view(shape) + self.bias.view(shape)
        if self.track_running_stats and self.running_mean is not None and self.running_var is not None:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)  # type: ignore[union-attr,operator]
                f = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
                self.running_mean.mul_(1 - f).add_(mean.detach().to(self.running_mean.dtype), alpha=f)
                unbiased = var.detach() * (n / (n - 1))
                self.running_var.mul_(1 - f).add_(unbiased.to(self.running_var.dtype), alpha=f)
        return y.to(input.dtype)


_BN_ORIGIN = "_hierviz_batchnorm_origin"


def _swap_batchnorm(bn: nn.modules.batchnorm._BatchNorm, cls: type) -> nn.Module:
    """A ``cls`` batch norm holding ``bn``'s own parameters and buffers (shared, not copied)."""
    new = cls(bn.num_features, bn.eps, bn.momentum, bn.affine, bn.track_running_stats)
    if bn.affine:
        new.weight, new.bias = bn.weight, bn.bias
    new.running_mean, new.running_var = bn.running_mean, bn.running_var
    new.num_batches_tracked = bn.num_batches_tracked
    new.train(bn.training)
    return new


def convert_batchnorm(module: nn.Module, device_type: str = "cpu") -> nn.Module:
    """Replace every ``BatchNorm1d/2d/3d`` in ``module`` by one that normalises over all ranks.

    :class:`torch.nn.SyncBatchNorm` when ``device_type == "cuda"``, :class:`AllReduceBatchNorm`
    otherwise.  The new layers share the old ones' parameters and buffers (an optimiser or a
    ``state_dict`` sees the same tensors and keys) and remember their class, so
    :func:`revert_batchnorm` gives the model back as it was.

    Parameters
    ----------
    module : torch.nn.Module
        Changed in place; a bare batch-norm layer is returned as a new object.
    device_type : str, default "cpu"
        Where the model runs.

    Returns
    -------
    torch.nn.Module
        ``module`` (or the new layer).

    Examples
    --------
    >>> m = convert_batchnorm(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)))
    >>> type(m[1]).__name__, type(revert_batchnorm(m)[1]).__name__
    ('AllReduceBatchNorm', 'BatchNorm1d')
    """
    cls = nn.SyncBatchNorm if device_type == "cuda" else AllReduceBatchNorm
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and not isinstance(
        module, (nn.SyncBatchNorm, AllReduceBatchNorm)
    ):
        new = _swap_batchnorm(module, cls)
        setattr(new, _BN_ORIGIN, type(module))
        return new
    for name, child in module.named_children():
        module.add_module(name, convert_batchnorm(child, device_type))
    return module


def revert_batchnorm(module: nn.Module) -> nn.Module:
    """Undo :func:`convert_batchnorm`: each converted layer becomes its original class again.

    Parameters and buffers are shared with the converted layer (nothing is copied).

    Parameters
    ----------
    module : torch.nn.Module
        Changed in place; a bare converted layer is returned as a new object.

    Returns
    -------
    torch.nn.Module
    """
    origin = getattr(module, _BN_ORIGIN, None)
    if origin is not None:
        return _swap_batchnorm(module, origin)  # type: ignore[arg-type]
    for name, child in module.named_children():
        module.add_module(name, revert_batchnorm(child))
    return module


class ShardedBatchSampler:
    """This rank's share of a batch sampler's *global* batches (no overlap, same seed on every rank).

    Every rank iterates the same global batch sampler (seeded the same, so the same batches)
    and keeps its contiguous slice of each batch: rank ``r`` of ``W`` gets chunk ``r`` of
    ``np.array_split`` of the batch into ``W`` parts, in units of ``block`` indices (3 for
    tree triplets, so a triplet never straddles two ranks).  Gathering the ranks' outputs
    in rank order then restores the global batch in its original order, which is what
    makes a ``W``-rank run equal one process with the same global batch.

    Parameters
    ----------
    batch_sampler : iterable of index lists
        The global batches (``train.batch_size`` indices each); ``set_epoch`` is passed on.
    num_replicas : int >= 1
    rank : int in [0, num_replicas)
    block : int >= 1, default 1
        Indices that must stay on one rank (the batch length must be a multiple).

    Raises
    ------
    ValueError
        Bad ``num_replicas``/``rank``/``block``, or (when iterating) a batch whose length is
        not a multiple of ``block``.

    Examples
    --------
    >>> batches = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    >>> [list(ShardedBatchSampler(batches, 2, r)) for r in (0, 1)]
    [[[0, 1, 2], [5, 6, 7]], [[3, 4], [8, 9]]]
    """

    def __init__(self, batch_sampler: Any, num_replicas: int, rank: int, block: int = 1) -> None:
        for name, v, lo in (("num_replicas", num_replicas, 1), ("rank", rank, 0), ("block", block, 1)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValueError(f"ShardedBatchSampler: {name} must be an integer >= {lo}, got {v!r}")
        if rank >= num_replicas:
            raise ValueError(f"ShardedBatchSampler: rank must be in [0, num_replicas={num_replicas}), got {rank}")
        self.batch_sampler = batch_sampler
        self.num_replicas, self.rank, self.block = int(num_replicas), int(rank), int(block)

    def set_epoch(self, epoch: int) -> None:
        """Pass the epoch on to the global sampler (reshuffles it identically on every rank)."""
        if hasattr(self.batch_sampler, "set_epoch"):
            self.batch_sampler.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.batch_sampler:
            batch = list(batch)
            if len(batch) % self.block:
                raise ValueError(
                    f"ShardedBatchSampler: a batch of {len(batch)} indices is not a multiple of block={self.block}"
                )
            units = np.arange(len(batch) // self.block)
            mine = np.array_split(units, self.num_replicas)[self.rank]
            yield [batch[u * self.block + j] for u in mine for j in range(self.block)]
