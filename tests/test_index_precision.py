"""The reference index ranks exactly, on any device and matmul mode."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hierviz.geometry import PoincareBall
from hierviz.retrieval import ReferenceIndex, decode_points


def _exact_topk(ref: torch.Tensor, q: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Brute force in float64 from differences (no Gram matrix): the reference ranking."""
    x, y = q.double()[:, None, :], ref.double()[None, :, :]
    num = (x - y).pow(2).sum(-1)
    den = (1 - x.pow(2).sum(-1)) * (1 - y.pow(2).sum(-1))
    d = 2 * torch.asinh((num / den).sqrt())
    return torch.sort(d, dim=1, stable=True)[0][:, :k], torch.sort(d, dim=1, stable=True)[1][:, :k]


def _shell(n: int, d: int, seed: int, lo: float, hi: float) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    u = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=-1)
    return u * (lo + (hi - lo) * torch.rand(n, 1, generator=g, dtype=torch.float64))


class _ReducedPrecisionBall(PoincareBall):
    """A ball whose float32 pairwise distances use bfloat16-rounded inputs: a device in a reduced
    matmul mode (TF32 keeps 10 mantissa bits, bfloat16 7). float64 work is unaffected, as on a GPU."""

    def pairwise_dist(self, x, y=None):
        if x.dtype == torch.float32:
            x = x.to(torch.bfloat16).float()
            y = None if y is None else y.to(torch.bfloat16).float()
        return super().pairwise_dist(x, y)


@pytest.mark.parametrize("storage", ["fp16", "fp32"])
def test_search_does_not_depend_on_the_matmul_mode(storage):
    ref, q = _shell(600, 32, 0, 0.3, 0.95).float(), _shell(30, 32, 1, 0.3, 0.95).float()
    d0, i0 = ReferenceIndex(ref, storage=storage).search(q, k=10)
    d1, i1 = ReferenceIndex(ref, storage=storage, geometry=_ReducedPrecisionBall()).search(q, k=10)
    assert torch.equal(i0, i1)
    assert torch.equal(d0, d1)
    prev = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")  # bfloat16 matmuls where the CPU has them
        d2, i2 = ReferenceIndex(ref, storage=storage).search(q, k=10)
    finally:
        torch.set_float32_matmul_precision(prev)
    assert torch.equal(i0, i2) and torch.equal(d0, d2)


def test_float64_points_near_the_boundary_are_searched_exactly():
    ref, q = _shell(400, 16, 2, 0.997, 0.99999), _shell(10, 16, 3, 0.997, 0.99999)
    want_d, want_i = _exact_topk(ref, q, 3)
    d, i = ReferenceIndex(ref, storage="fp64").search(q, k=3)
    assert d.dtype == torch.float64
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d, want_d, rtol=1e-9, atol=0)


def test_fp16_storage_is_ranked_exactly_over_its_decoded_points():
    ref, q = _shell(400, 16, 4, 0.5, 0.999), _shell(10, 16, 5, 0.5, 0.999)
    index = ReferenceIndex(ref, storage="fp16")
    decoded = decode_points(index.stored, "fp16", dtype=torch.float64)
    want_d, want_i = _exact_topk(decoded, q, 5)
    d, i = index.search(q, k=5)
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d, want_d, rtol=1e-9, atol=0)


@pytest.mark.parametrize("scale", [1e-6, 1e-9])
def test_tiny_norms_are_kept_by_fp16_and_ranked_exactly(scale):
    # the direction in 16-bit fixed point and the norm in float32: a norm of 1e-9 loses nothing
    g = torch.Generator().manual_seed(23)
    ref = scale * torch.randn(100, 8, generator=g, dtype=torch.float64)
    q = scale * torch.randn(5, 8, generator=g, dtype=torch.float64)
    want_d, want_i = _exact_topk(ref, q, 3)
    d, i = ReferenceIndex(ref, storage="fp16").search(q, k=3)
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d, want_d, rtol=1e-4, atol=0)  # the 16-bit directions: ~1e-5 relative
    want_d, want_i = _exact_topk(ref.float().double(), q, 5)
    d, i = ReferenceIndex(ref.float(), storage="fp32").search(q, k=5)
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d, want_d, rtol=1e-6, atol=0)


def test_the_origin_is_stored_by_fp16():
    ref = torch.cat([torch.zeros(1, 4, dtype=torch.float64), 0.3 * torch.eye(4, dtype=torch.float64)])
    index = ReferenceIndex(ref, storage="fp16")
    d, i = index.search(torch.full((1, 4), 1e-3, dtype=torch.float64), k=1)
    assert i.tolist() == [[0]] and abs(float(d) - 2 * math.atanh(2e-3)) < 1e-12


@pytest.mark.parametrize("device", ["tpu", 3.5])
def test_a_bad_device_is_one_line_naming_the_argument_and_the_choices(device):
    ref = PoincareBall(1.0).expmap0(0.3 * torch.randn(20, 4, generator=torch.Generator().manual_seed(0)))
    with pytest.raises(ValueError, match=r"^device must be 'cpu', 'cuda', 'cuda:N' or a torch.device .*got") as err:
        ReferenceIndex(ref, device=device)
    assert "\n" not in str(err.value)
    assert repr(device) in str(err.value)


def test_an_fp16_index_saved_by_hierviz_03_loads(tmp_path):
    # 0.3 stored float16 log0 tangents; load re-encodes them as 16-bit directions and float32 norms
    ref = _shell(60, 8, 8, 0.2, 0.99)
    index = ReferenceIndex(ref, storage="fp16")
    index.save(tmp_path)
    with np.load(tmp_path / "index.npz") as f:
        arrays = dict(f)
    old = PoincareBall().logmap0(ref).to(torch.float16)
    arrays["stored"] = old.numpy()
    np.savez(tmp_path / "index.npz", **arrays)
    loaded = ReferenceIndex.load(tmp_path)
    assert loaded.stored.dtype == torch.int16 and loaded.dim == 8
    want = PoincareBall().expmap0(old.double())
    torch.testing.assert_close(
        decode_points(loaded.stored, "fp16", dtype=torch.float64), want, rtol=0, atol=2e-5
    )  # 16-bit directions
    assert torch.equal(loaded.search(ref[:5], k=1)[1].flatten(), torch.arange(5))


def _near_duplicates() -> tuple[torch.Tensor, torch.Tensor]:
    """References in one cap at radius 0.997-0.99999 and queries a relative 1e-7 inside ten of them."""
    g = torch.Generator().manual_seed(22)
    e1 = torch.tensor([1.0, 0, 0, 0], dtype=torch.float64)
    u = torch.nn.functional.normalize(e1 + 0.02 * torch.randn(100, 4, generator=g, dtype=torch.float64), dim=-1)
    ref = u * torch.linspace(0.997, 0.99999, 100, dtype=torch.float64)[:, None]
    return ref, ref[::10] * (1 - 1e-7)


@pytest.mark.parametrize("storage", ["fp16", "fp32"])
def test_keep_full_returns_the_distances_of_the_points_given_next_to_the_boundary(storage):
    ref, q = _near_duplicates()
    want_d, want_i = _exact_topk(ref, q, 3)
    assert float(want_d[:, 0].max()) < 1e-3  # each query's nearest reference is its own point
    for index, kw in ((ReferenceIndex(ref, storage=storage, keep_full=True), {}),
                      (ReferenceIndex(ref, storage=storage), {"refine": ref})):  # fmt: skip
        d, i = index.search(q, k=3, **kw)
        assert torch.equal(i, want_i)
        torch.testing.assert_close(d, want_d, rtol=1e-9, atol=0)  # open case's tolerance: 0.05 (fp16), 1e-3 (fp32)
    index = ReferenceIndex(ref, storage=storage, keep_full=True)
    # distances() of the copy, through the geometry's Gram-matrix pairwise_dist (~2 % on these near-duplicates)
    torch.testing.assert_close(index.distances(q).gather(1, want_i), want_d, rtol=0.05, atol=0)
    assert index.bytes_per_reference == {"fp16": 2 * 6 + 8 * 4, "fp32": 4 * 4 + 8 + 8 * 4}[storage]
    # without the copy: the exact distances of the stored codes (the documented contract), not of the points given
    index = ReferenceIndex(ref, storage=storage)
    d, i = index.search(q, k=3)
    codes = decode_points(index.stored, storage, dtype=torch.float64)
    want_codes = PoincareBall().dist(q[:, None], codes[i])
    torch.testing.assert_close(d, want_codes, rtol=1e-9, atol=0)
