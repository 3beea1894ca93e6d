"""CUDA: resume, device augmentation and the fused losses on a GPU.

Tests marked ``gpu`` need a CUDA device and are deselected by default (``addopts`` has
``-m 'not gpu'``); run them with ``pytest -m gpu tests/test_gpu.py``. The unmarked tests at
the top drive the same CUDA code paths on a CPU-only machine: RNG state tensors that arrive
on another device or as another dtype, and a mocked ``torch.cuda`` with more or fewer
devices than the checkpoint saw.
"""

from __future__ import annotations

import os
import random
import warnings

import numpy as np
import pytest
import torch

from hierviz.training import checkpoint as ckpt
from hierviz.training.checkpoint import rng_state, set_rng_state

# cuBLAS is deterministic only with a fixed workspace; must be set before CUDA initialises
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (pytest -m gpu on a GPU)")


# ----------------------------------------------------------------------------- CPU: the restore path


class _OnOtherDevice(torch.Tensor):
    """A tensor that behaves like a CUDA tensor for the restore code: ``.numpy()`` refuses, ``.cpu()`` converts."""

    @classmethod
    def wrap(cls, t: torch.Tensor) -> _OnOtherDevice:
        return torch.Tensor._make_subclass(cls, t)

    def numpy(self, *a, **k):  # what torch says for a cuda:0 tensor
        raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() first.")

    def cpu(self, *a, **k):
        return torch.Tensor(super().cpu(*a, **k)).as_subclass(torch.Tensor)

    def detach(self, *a, **k):
        return _OnOtherDevice.wrap(super().detach(*a, **k).as_subclass(torch.Tensor))


class _StrictGen:
    """Stands for the loader generator; accepts only plain CPU uint8 states (as CUDA's set_rng_state does)."""

    def __init__(self, gen: torch.Generator):
        self.gen = gen

    def set_state(self, s):
        assert type(s) is torch.Tensor and s.device.type == "cpu" and s.dtype == torch.uint8
        self.gen.set_state(s)


def _cuda_like(state: dict, dtype=torch.uint8) -> dict:
    """``state`` as it comes out of ``torch.load(map_location='cuda')``: every tensor on 'another device'."""
    out = dict(state)
    out["numpy"] = dict(state["numpy"], key=_OnOtherDevice.wrap(state["numpy"]["key"]))
    out["torch"] = _OnOtherDevice.wrap(state["torch"].to(dtype))
    out["loader"] = _OnOtherDevice.wrap(state["loader"].to(dtype))
    return out


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64])
def test_rng_restore_moves_every_tensor_to_cpu_first(dtype, monkeypatch):
    gen = torch.Generator().manual_seed(5)
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    state = rng_state(gen)
    want = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=gen).item())
    moved = _cuda_like(state, dtype)
    with pytest.raises(TypeError, match="cuda:0"):  # the bug a CPU-only resume test missed, reproduced
        moved["numpy"]["key"].numpy()
    seen = []
    real = torch.set_rng_state

    def strict(s):
        seen.append((type(s), s.device.type, s.dtype))
        real(s)

    monkeypatch.setattr(torch, "set_rng_state", strict)
    random.seed(9), np.random.seed(9), torch.manual_seed(9), gen.manual_seed(9)
    set_rng_state(moved, _StrictGen(gen))
    assert seen == [(torch.Tensor, "cpu", torch.uint8)]
    got = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=gen).item())
    assert got == want


class _FakeCuda:
    """A stand-in for ``torch.cuda`` with ``n`` devices that records what is restored."""

    def __init__(self, n: int):
        self.n = n
        self.all_calls: list[list[torch.Tensor]] = []
        self.one_calls: list[tuple[int, torch.Tensor]] = []

    def is_available(self):
        return self.n > 0

    def device_count(self):
        return self.n

    def get_rng_state_all(self):
        return [_OnOtherDevice.wrap(torch.full((16,), i, dtype=torch.uint8)) for i in range(self.n)]

    def set_rng_state_all(self, states):
        for s in states:
            assert type(s) is torch.Tensor and s.device.type == "cpu" and s.dtype == torch.uint8
        self.all_calls.append(list(states))

    def set_rng_state(self, s, device=0):
        assert type(s) is torch.Tensor and s.device.type == "cpu" and s.dtype == torch.uint8
        self.one_calls.append((device, s))


def _state_with_cuda(n_saved: int) -> dict:
    state = rng_state(torch.Generator().manual_seed(0))
    state["cuda"] = [_OnOtherDevice.wrap(torch.full((16,), 10 + i, dtype=torch.int64)) for i in range(n_saved)]
    return state


def test_rng_state_saves_cuda_states_on_the_cpu(monkeypatch):
    fake = _FakeCuda(2)
    monkeypatch.setattr(ckpt.torch, "cuda", fake)
    state = rng_state(torch.Generator())
    assert [type(s) for s in state["cuda"]] == [torch.Tensor, torch.Tensor]
    assert [int(s[0]) for s in state["cuda"]] == [0, 1]


def test_cuda_states_restored_per_device_same_count(monkeypatch):
    fake = _FakeCuda(2)
    monkeypatch.setattr(ckpt.torch, "cuda", fake)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        set_rng_state(_state_with_cuda(2), torch.Generator())
    assert len(fake.all_calls) == 1 and [int(s[0]) for s in fake.all_calls[0]] == [10, 11]


def test_cuda_states_fewer_devices_now_warns_and_restores_the_common_ones(monkeypatch):
    fake = _FakeCuda(1)
    monkeypatch.setattr(ckpt.torch, "cuda", fake)
    with pytest.warns(UserWarning, match=r"CUDA RNG states of 3 device\(s\) but 1 are visible; restoring the first 1"):
        set_rng_state(_state_with_cuda(3), torch.Generator())
    assert [int(s[0]) for s in fake.all_calls[0]] == [10]


def test_cuda_states_more_devices_now_warns_and_restores_the_saved_ones(monkeypatch):
    fake = _FakeCuda(4)
    monkeypatch.setattr(ckpt.torch, "cuda", fake)
    with pytest.warns(UserWarning, match=r"2 device\(s\) but 4 are visible"):
        set_rng_state(_state_with_cuda(2), torch.Generator())
    assert [(d, int(s[0])) for d, s in fake.one_calls] == [(0, 10), (1, 11)]
    assert fake.all_calls == []


def test_cuda_states_on_a_cpu_machine_warn_and_restore_the_cpu_streams(monkeypatch):
    monkeypatch.setattr(ckpt.torch, "cuda", _FakeCuda(0))
    gen = torch.Generator().manual_seed(4)
    state = _state_with_cuda(1)
    state["loader"] = gen.get_state()
    want = torch.rand(1, generator=gen).item()
    with pytest.warns(UserWarning, match="CUDA is not available here; the CPU streams are restored"):
        set_rng_state(state, gen)
    assert torch.rand(1, generator=gen).item() == want


# ----------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@needs_cuda
def test_kill_then_resume_on_cuda_is_bit_identical(tmp_path):
    """A CUDA run killed after epoch 1 and resumed (checkpoint loaded with map_location=cuda) equals the
    uninterrupted run bit for bit, with deterministic algorithms and without autocast."""
    from hierviz.geometry import get_geometry
    from hierviz.methods import build_objective
    from hierviz.training import fit, load_checkpoint
    from tests.test_training import TREE, TinyViews, _config, _model

    torch.use_deterministic_algorithms(True, warn_only=False)
    try:
        geo = "poincare"
        cfg = dict(device="cuda", amp=False)
        obj_a = build_objective("hwc+lam", TREE, get_geometry(geo))
        ref = fit(_config(tmp_path / "a", **cfg), _model(geo), obj_a, TinyViews())

        def crash(epoch, info):
            if epoch == 0:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            fit(
                _config(tmp_path / "b", **cfg),
                _model(geo),
                build_objective("hwc+lam", TREE, get_geometry(geo)),
                TinyViews(),
                callbacks=[crash],
            )
        saved = load_checkpoint(tmp_path / "b", map_location="cuda")
        assert saved["epoch"] == 1 and len(saved["rng"]["cuda"]) == torch.cuda.device_count()
        torch.manual_seed(999), torch.cuda.manual_seed_all(999)  # disturb: resume must restore them
        obj_c = build_objective("hwc+lam", TREE, get_geometry(geo))
        res = fit(_config(tmp_path / "b", resume=True, **cfg), _model(geo), obj_c, TinyViews())
        assert res.resumed_from == 1 and res.device.type == "cuda"
        a, b = ref.model.state_dict(), res.model.state_dict()
        for k in a:
            assert torch.equal(a[k], b[k]), k
        assert torch.equal(obj_a.state_dict()["terms.lam.prototypes"], obj_c.state_dict()["terms.lam.prototypes"])
        assert res.step_history == ref.step_history
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.gpu
@needs_cuda
def test_cuda_rng_stream_survives_a_checkpoint_round_trip(tmp_path):
    gen = torch.Generator()
    torch.cuda.manual_seed_all(3)
    ckpt.atomic_save({"rng": rng_state(gen)}, tmp_path / "c.pt")
    want = torch.rand(8, device="cuda")
    torch.cuda.manual_seed_all(77)
    set_rng_state(ckpt.load_checkpoint(tmp_path / "c.pt", map_location="cuda")["rng"], gen)
    assert torch.equal(torch.rand(8, device="cuda"), want)


@pytest.mark.gpu
@needs_cuda
def test_device_augmentation_on_cuda_equals_the_cpu_semantics():
    """The same batched ops on CUDA give what they give on the CPU (and torchvision's per-image ops there)."""
    from torchvision.transforms.v2 import functional as TF

    from hierviz.data.gpu_augment import (
        BatchTwoViewAugment,
        adjust_hue_batch,
        adjust_saturation_batch,
        crop_boxes,
        gaussian_blur_batch,
    )

    g = torch.Generator().manual_seed(0)
    x = torch.rand(8, 3, 32, 32, generator=g)
    xc = x.cuda()
    f = torch.linspace(-0.3, 0.3, 8)
    torch.testing.assert_close(
        adjust_hue_batch(xc, f.cuda()).cpu(),
        torch.stack([TF.adjust_hue(x[i], float(f[i])) for i in range(8)]),
        rtol=0,
        atol=1e-5,
    )
    torch.testing.assert_close(
        adjust_saturation_batch(xc, 1 + f.cuda()).cpu(), adjust_saturation_batch(x, 1 + f), rtol=0, atol=1e-6
    )
    sig = torch.linspace(0.1, 2.0, 8)
    torch.testing.assert_close(
        gaussian_blur_batch(xc, 5, sig.cuda()).cpu(), gaussian_blur_batch(x, 5, sig), rtol=0, atol=1e-5
    )
    b = crop_boxes(4096, 64, 64, (0.5, 1.0), (3 / 4, 4 / 3), torch.Generator(device="cuda").manual_seed(0), "cuda")
    frac = ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) / 4096).cpu()
    bc = crop_boxes(4096, 64, 64, (0.5, 1.0), (3 / 4, 4 / 3), torch.Generator().manual_seed(0))
    frac_cpu = (bc[:, 2] - bc[:, 0]) * (bc[:, 3] - bc[:, 1]) / 4096  # same rule, another stream
    assert 0.5 - 0.05 < float(frac.min()) and float(frac.max()) <= 1.0
    assert abs(float(frac.mean()) - float(frac_cpu.mean())) < 0.01
    u8 = (x * 255).to(torch.uint8).cuda()
    aug = BatchTwoViewAugment(24, channels_last=True)
    v = aug(u8, seed=5)
    assert v.is_cuda and v.shape == (8, 2, 3, 24, 24) and torch.equal(v, aug(u8, seed=5))


@pytest.mark.gpu
@needs_cuda
def test_fused_poincare_and_losses_on_cuda_equal_the_reference():
    from hierviz.geometry import get_geometry
    from hierviz.geometry._kernels import poincare_pairwise_dist
    from hierviz.geometry.poincare import math as pm
    from hierviz.hierarchy import LabelTree
    from hierviz.methods import build_objective

    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator().manual_seed(0)
    v = torch.randn(512, 64, generator=g, dtype=torch.float64)
    x = (v / v.norm(dim=-1, keepdim=True) * torch.rand(512, 1, generator=g, dtype=torch.float64) * 0.9).cuda()
    xr = x.clone().requires_grad_()
    xf = x.clone().requires_grad_()
    w = torch.randn(512, 512, generator=g, dtype=torch.float64).cuda()
    ref = pm.pairwise_dist_reference(xr, None, 1.0)
    got = poincare_pairwise_dist(xf, None, 1.0)
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-10)
    (ref * w).sum().backward(), (got * w).sum().backward()
    torch.testing.assert_close(xf.grad, xr.grad, rtol=1e-8, atol=1e-8)
    assert torch.equal(got, got.T)
    # a whole objective on CUDA equals the same objective on the CPU (float64)
    tree = LabelTree.from_nested({"root": {"p": ["a", "b", "c"], "q": ["d", "e"]}})
    ball = get_geometry("poincare")
    z = ball.expmap0(0.3 * torch.randn(64, 2, 16, generator=g, dtype=torch.float64))
    y = torch.randint(0, 5, (64,), generator=g)
    losses = []
    for dev in ("cpu", "cuda"):
        obj = build_objective("hwc+lam", tree, ball).to(dev)
        zz = z.to(dev).detach().requires_grad_()  # a leaf on the device: its .grad is filled
        loss, _ = obj(zz, y.to(dev))
        loss.backward()
        losses.append((loss.detach().cpu(), zz.grad.cpu()))
    assert losses[0][1] is not None and losses[1][1] is not None
    torch.testing.assert_close(losses[1][0], losses[0][0], rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(losses[1][1], losses[0][1], rtol=1e-7, atol=1e-9)


def test_objective_leaf_gradient_on_a_copied_tensor_is_filled():
    """CPU twin of the CUDA test above: the gradient is read from a leaf made on the target device."""
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.methods import build_objective

    tree = LabelTree.from_nested({"root": {"p": ["a", "b", "c"], "q": ["d", "e"]}})
    ball = get_geometry("poincare")
    g = torch.Generator().manual_seed(0)
    v = (0.3 * torch.randn(16, 2, 8, generator=g, dtype=torch.float64)).requires_grad_()
    z = ball.expmap0(v)  # has a grad_fn: z.to(dev).requires_grad_() would not be a leaf
    zz = z.to("cpu").detach().requires_grad_()
    loss, _ = build_objective("hwc+lam", tree, ball)(zz, torch.arange(16) % 5)
    loss.backward()
    assert zz.is_leaf and zz.grad is not None and bool(zz.grad.abs().sum() > 0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (pytest -m gpu on a GPU)")
@pytest.mark.parametrize(("name", "geo"), [("hwc+lam", "euclidean"), ("hwc", "poincare")])
def test_compiled_objective_on_cuda_equals_eager(name, geo):
    """``train.compile_loss`` on CUDA (inductor, fullgraph) equals the eager objective."""
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.losses import CompiledLoss
    from hierviz.methods import build_objective

    torch._dynamo.reset()
    tree = LabelTree.from_nested({"root": {"p": ["a", "b", "c"], "q": ["d", "e"]}})
    geometry = get_geometry(geo)
    g = torch.Generator().manual_seed(0)
    v = 0.3 * torch.randn(64, 2, 16, generator=g)
    z = (geometry.expmap0(v) if geometry.hyperbolic else torch.nn.functional.normalize(v, dim=-1)).cuda()
    y = (torch.arange(64) % 5).cuda()
    results = []
    for compiled in (False, True):
        obj = build_objective(name, tree, geometry).cuda()
        fn = CompiledLoss(obj, fallback=False)
        fn({"z": z}, y)  # the eager first call (prototypes, checks)
        if not compiled:
            fn.compiled = False
        zz = z.detach().clone().requires_grad_()
        loss, _ = fn({"z": zz}, y)
        loss.backward()
        results.append((loss.detach(), zz.grad))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(results[1][1], results[0][1], rtol=1e-4, atol=1e-5)
