"""ReferenceIndex on Lorentz (hyperboloid) points: searched through their Poincaré images, Lorentz distances back."""

from __future__ import annotations

import pytest
import torch

from hierviz.geometry import Lorentz
from hierviz.retrieval import ReferenceIndex


def _points(c: float, n: int, d: int, seed: int) -> torch.Tensor:
    """Half near the origin, half at distance 10 to 13 (in units of 1/sqrt(c)) from it."""
    g = torch.Generator().manual_seed(seed)
    u = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=-1)
    r = torch.rand(n, 1, generator=g, dtype=torch.float64)
    r = torch.where(torch.arange(n)[:, None] % 2 == 0, 3.0 * r, 10.0 + 3.0 * r) / c**0.5
    return Lorentz(c).expmap0(u * r)


def _brute(geo: Lorentz, q: torch.Tensor, ref: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    d = geo.dist(q[:, None], ref[None])  # the geometry's own distance, float64
    d, i = torch.sort(d, dim=1, stable=True)
    return d[:, :k], i[:, :k]


@pytest.mark.parametrize("c", [0.1, 1.0, 10.0])
@pytest.mark.parametrize(("storage", "rtol"), [("fp64", 1e-9), ("fp32", 1e-6), ("fp16", 1e-4)])
def test_lorentz_points_are_searched_exactly_with_lorentz_distances(c, storage, rtol):
    geo = Lorentz(c)
    ref, q = _points(c, 400, 8, 0), _points(c, 30, 8, 1)
    assert float(geo.dist(geo.origin(8, dtype=torch.float64), ref).max()) > 10.0 / c**0.5
    want_d, want_i = _brute(geo, q, ref, 5)
    index = ReferenceIndex(ref, geometry=geo, storage=storage)
    assert index.dim == 8 and index.point_dim == 9
    d, i = index.search(q, k=5)
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d, want_d, rtol=rtol, atol=0)
    # with the float64 copy kept, the distances are the full-precision ones
    d, i = ReferenceIndex(ref, geometry=geo, storage=storage, keep_full=True).search(q, k=5)
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d, want_d, rtol=1e-9, atol=0)
    D = index.distances(q)
    assert D.shape == (30, 400)
    torch.testing.assert_close(D.gather(1, i), index.search(q, k=5)[0], rtol=1e-6, atol=0)


def test_lorentz_points_through_faiss_flat():
    pytest.importorskip("faiss")
    geo = Lorentz(1.0)
    ref, q = _points(1.0, 300, 8, 2), _points(1.0, 20, 8, 3)
    want_d, want_i = _brute(geo, q, ref, 5)
    d, i = ReferenceIndex(ref, geometry=geo, storage="fp32", backend="faiss", kind="flat").search(q, k=5)
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d, want_d, rtol=1e-6, atol=0)


def test_lorentz_index_saves_and_loads(tmp_path):
    geo = Lorentz(0.5)
    ref, q = _points(0.5, 100, 4, 4), _points(0.5, 5, 4, 5)
    index = ReferenceIndex(ref, geometry=geo, storage="fp16", keep_full=True)
    index.save(tmp_path)
    loaded = ReferenceIndex.load(tmp_path)
    assert loaded.lorentz and loaded.point_dim == 5
    for a, b in zip(index.search(q, k=3), loaded.search(q, k=3)):
        assert torch.equal(a, b)


def test_lorentz_bad_input_is_one_clear_line():
    geo = Lorentz(1.0)
    ref = _points(1.0, 20, 4, 6)
    index = ReferenceIndex(ref, geometry=geo)
    with pytest.raises(ValueError, match=r"queries must have shape \(Q, 5\), got \(3, 4\)"):
        index.search(torch.zeros(3, 4, dtype=torch.float64), k=1)
    far = geo.expmap0(torch.tensor([[40.0, 0, 0, 0]], dtype=torch.float64))
    with pytest.raises(ValueError, match=r"points: 1 Lorentz point\(s\) lie as far as 40 from the origin.*~37.4"):
        ReferenceIndex(torch.cat([ref, far]), geometry=geo)
    with pytest.raises(ValueError, match="points"):
        ReferenceIndex(ref[:, 1:], geometry=geo)  # ball coordinates are not on the hyperboloid


def test_a_sphere_geometry_is_refused():
    from hierviz.geometry import get_geometry

    pts = torch.nn.functional.normalize(torch.randn(5, 3, generator=torch.Generator().manual_seed(0)), dim=-1)
    with pytest.raises(ValueError, match="Poincaré ball or the Lorentz model, got geometry="):
        ReferenceIndex(pts, geometry=get_geometry("euclidean"))
