"""ReferenceIndex as a maximum-inner-product search: the augmented score, exactness near the boundary, FAISS."""

from __future__ import annotations

import math
import os

import geoopt
import numpy as np
import pytest
import torch

import hierviz.retrieval.index.search as search_mod
from hierviz.geometry import PoincareBall
from hierviz.retrieval import ReferenceIndex, decode_points
from hierviz.retrieval.index import augment_queries, augment_references, merge_results, mips_references


def _faiss():
    """faiss, skipped where it is absent outside CI; under CI=true a missing faiss fails."""
    if os.environ.get("CI") == "true":
        import faiss

        return faiss
    return pytest.importorskip("faiss")


def _brute(q: torch.Tensor, ref: torch.Tensor, c: float, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 brute force from differences: distances (Q, k) and rows (Q, k), ties by the smaller row."""
    x, y = q.double()[:, None, :], ref.double()[None, :, :]
    num = c * (x - y).pow(2).sum(-1)
    den = (1 - c * x.pow(2).sum(-1)) * (1 - c * y.pow(2).sum(-1))
    d = 2 / math.sqrt(c) * torch.asinh((num / den).sqrt())
    order = torch.argsort(d, dim=1, stable=True)[:, :k]
    return d.gather(1, order), order


def _near_boundary(n: int, d: int, c: float, seed: int, clusters: int = 20) -> torch.Tensor:
    """Clustered float32 points with norms up to (1 − 1e-5)/√c: a tenth at that norm, the rest spread inside."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(clusters, d, generator=g, dtype=torch.float64)
    t = centres[torch.randint(0, clusters, (n,), generator=g)] + 0.3 * torch.randn(
        n, d, generator=g, dtype=torch.float64
    )
    u = torch.nn.functional.normalize(t, dim=-1)
    r = torch.tanh(t.norm(dim=-1, keepdim=True) / 1.5)  # 0.5–0.999...
    r[: n // 10] = 1 - 1e-5
    r = torch.minimum(r, torch.full_like(r, 1 - 1e-5))
    return (u * r / math.sqrt(c)).float()


def _recall(got: torch.Tensor, want: torch.Tensor) -> float:
    return sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(got, want)) / want.numel()


# --------------------------------------------------------------------------- the augmented score
def test_augmented_inner_product_hand_value():
    # q = (0.5, 0), x = (0, 0.5), c = 1: ‖q − x‖² = 0.5, 1 − ‖x‖² = 0.75, score 2/3
    q, x = torch.tensor([[0.5, 0.0]], dtype=torch.float64), torch.tensor([[0.0, 0.5]], dtype=torch.float64)
    assert augment_queries(q).tolist() == [[0.25, 0.5, 0.0, 1.0]]
    torch.testing.assert_close(augment_references(x), torch.tensor([[4 / 3, 0.0, -4 / 3, 1 / 3]], dtype=torch.float64))
    assert float(augment_queries(q) @ augment_references(x).T) == pytest.approx(2 / 3, rel=1e-15)
    assert float(augment_queries(q) @ mips_references(x).T) == pytest.approx(-2 / 3, rel=1e-15)
    # d = arcosh(1 + 2·0.5/(0.75·0.75)) = arcosh(25/9)
    d, i = ReferenceIndex(x, storage="fp64").search(q, k=1)
    assert float(d) == pytest.approx(math.acosh(25 / 9), rel=1e-14) and int(i) == 0


@pytest.mark.parametrize("c", [0.1, 1.0, 10.0])
def test_score_order_equals_geoopt_distance_order(c):
    ball = PoincareBall(c)
    g = torch.Generator().manual_seed(1)
    q, x = ball.expmap0(torch.randn(7, 5, generator=g, dtype=torch.float64)), _near_boundary(60, 5, c, 2).double()
    s = augment_queries(q) @ augment_references(x, c).T
    d = geoopt.PoincareBall(c=c).dist(q[:, None], x[None])
    inside = x.norm(dim=-1) * math.sqrt(c) < 1 - 1e-3  # geoopt's float64 artanh saturates near 1 − 1e-5
    assert torch.equal(torch.argsort(s[:, inside], dim=1, stable=True), torch.argsort(d[:, inside], dim=1, stable=True))
    # the score is the distance's argument: cosh(√c d) = 1 + 2c·s/(1 − c‖q‖²)
    want = torch.acosh(1 + 2 * c * s / (1 - c * q.pow(2).sum(-1, keepdim=True))) / math.sqrt(c)
    closed = torch.acosh(
        1
        + 2
        * c
        * (q[:, None] - x[None]).pow(2).sum(-1)
        / ((1 - c * q.pow(2).sum(-1))[:, None] * (1 - c * x.pow(2).sum(-1))[None])
    ) / math.sqrt(c)
    torch.testing.assert_close(want, closed, rtol=1e-9, atol=0)
    assert torch.equal(torch.argsort(s, dim=1, stable=True), torch.argsort(closed, dim=1, stable=True))
    # geoopt's float64 distance (artanh of a Möbius sum, clamped) agrees to 0.5 % inside, less near the boundary
    torch.testing.assert_close(d[:, inside], want[:, inside], rtol=5e-3, atol=0)


# --------------------------------------------------------------------------- exact search near the boundary
@pytest.mark.parametrize("c", [0.1, 1.0, 10.0])
def test_fp32_search_equals_float64_brute_force_near_the_boundary(c):
    ref = _near_boundary(3000, 16, c, 3)
    q = torch.cat(
        [_near_boundary(40, 16, c, 4), ref[:20].double().mul(1 - 1e-7).float()]
    )  # queries at the boundary too
    assert float(ref.double().norm(dim=-1).max()) * math.sqrt(c) > 1 - 2e-5
    want_d, want_i = _brute(q, ref, c, 20)
    # the brute force agrees with geoopt's float64 distance where geoopt does not saturate (‖x‖√c < 1 − 1e-3)
    peer = geoopt.PoincareBall(c=c).dist(q.double()[:, None], ref.double()[None]).gather(1, want_i)
    rq, rx = q.double().norm(dim=-1)[:, None], ref.double().norm(dim=-1)[want_i]
    ok = (rq * math.sqrt(c) < 1 - 1e-3) & (rx * math.sqrt(c) < 1 - 1e-3)
    assert int(ok.sum()) > 100
    torch.testing.assert_close(want_d[ok], peer[ok], rtol=5e-3, atol=0)
    index = ReferenceIndex(ref, storage="fp32", geometry=PoincareBall(c), ref_chunk=700, query_batch=25)
    d, i = index.search(q.double(), k=20)
    assert torch.equal(i, want_i)  # recall@20 = 1.0, same order
    torch.testing.assert_close(d, want_d, rtol=1e-9, atol=0)  # the exact distances, not float32 ones


@pytest.mark.parametrize("c", [0.1, 1.0, 10.0])
def test_fp16_recall_on_codes_and_refine_to_full_precision(c):
    ref = _near_boundary(3000, 16, c, 5)
    q = _near_boundary(100, 16, c, 6)
    want_d, want_i = _brute(q, ref, c, 20)
    index = ReferenceIndex(ref, storage="fp16", geometry=PoincareBall(c))
    assert index.bytes_per_item == 36 and index.bytes_per_reference == 36  # 2·16 direction + a float32 norm
    _, i = index.search(q, k=20)
    assert _recall(i, want_i) >= 0.999
    d, i = index.search(q, k=20, refine=ref)
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d.double(), want_d, rtol=1e-6, atol=0)
    # without refine: exactly the top-k of the decoded codes
    decoded = decode_points(index.stored, "fp16", PoincareBall(c), dtype=torch.float64)
    dd, di = _brute(q, decoded, c, 20)
    d, i = index.search(q.double(), k=20)
    assert torch.equal(i, di)
    torch.testing.assert_close(d, dd, rtol=1e-9, atol=0)


def test_float32_cancellation_is_caught_by_the_certificate(monkeypatch):
    # references and queries in one tight cap at ‖x‖ = 1 − 1e-5: ‖q − x‖² ≈ 1e-10, below float32's resolution
    g = torch.Generator().manual_seed(7)
    u = torch.nn.functional.normalize(
        torch.tensor([1.0] + [0.0] * 7, dtype=torch.float64)
        + 1e-5 * torch.randn(500, 8, generator=g, dtype=torch.float64),
        dim=-1,
    )
    pts = (u * (1 - 1e-5 * (1 + torch.rand(500, 1, generator=g, dtype=torch.float64)))).float()
    ref, q = pts[:450], pts[450:]
    calls = []
    real = ReferenceIndex._torch_candidates

    def spy(self, qq, kc, exact64=False):
        calls.append((len(qq), kc, exact64))
        return real(self, qq, kc, exact64)

    monkeypatch.setattr(ReferenceIndex, "_torch_candidates", spy)
    want_d, want_i = _brute(q, ref, 1.0, 10)
    d, i = ReferenceIndex(ref, storage="fp32").search(q, k=10)
    assert calls[0] == (50, 26, False)
    assert calls[1][1:] == (104, False) and 0 < calls[1][0] <= 50  # 4 x the candidates in float32: still too close
    assert calls[2][1:] == (26, True) and 0 < calls[2][0] <= calls[1][0]  # float32 could not rank them: float64 did
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d.double(), want_d, rtol=1e-6, atol=0)


@pytest.mark.parametrize("backend", ["torch", "faiss"])
def test_a_failed_certificate_is_retried_with_four_times_the_candidates_first(monkeypatch, backend):
    if backend == "faiss":
        _faiss()
    ref, q = _near_boundary(800, 8, 1.0, 8), _near_boundary(30, 8, 1.0, 9)
    want_d, want_i = _brute(q, ref, 1.0, 5)
    index = ReferenceIndex(ref, storage="fp32", **({"backend": "faiss", "kind": "flat"} if backend == "faiss" else {}))
    real_certified, real_candidates = ReferenceIndex._certified, ReferenceIndex._candidates
    kcs, certificates = [], []

    def candidates(self, qq, kc, k):
        kcs.append((len(qq), kc))
        return real_candidates(self, qq, kc, k)

    def certified(self, qq, kth, left_out, u):  # the first list fails for every query; later ones as they are
        certificates.append(u)
        ok = real_certified(self, qq, kth, left_out, u)
        return torch.zeros_like(ok) if len(certificates) == 1 else ok

    monkeypatch.setattr(ReferenceIndex, "_candidates", candidates)
    monkeypatch.setattr(ReferenceIndex, "_certified", certified)
    d, i = index.search(q, k=5)
    assert kcs == [(30, 21), (30, 84)]  # k + 16 candidates, then 4 x as many for the 30 failed queries
    assert certificates == [2.0**-24, 2.0**-24]  # the wider float32 list was certified: no float64 search
    assert torch.equal(i, want_i)
    torch.testing.assert_close(d.double(), want_d, rtol=1e-6, atol=0)


def test_every_query_through_the_fallbacks_gives_the_same_answer(monkeypatch):
    ref, q = _near_boundary(800, 8, 1.0, 8), _near_boundary(30, 8, 1.0, 9)
    d0, i0 = ReferenceIndex(ref, storage="fp16").search(q, k=5)
    monkeypatch.setattr(search_mod, "_unit_roundoff", lambda dtype, device: 1.0)  # no float32 certificate passes
    d1, i1 = ReferenceIndex(ref, storage="fp16").search(q, k=5)
    assert torch.equal(i0, i1) and torch.equal(d0, d1)
    monkeypatch.setattr(
        ReferenceIndex, "_certified", lambda self, q, kth, left, u: torch.zeros(len(q), dtype=torch.bool)
    )
    d2, i2 = ReferenceIndex(ref, storage="fp16").search(q, k=5)  # nor a float64 one: the brute force
    assert torch.equal(i0, i2) and torch.equal(d0, d2)


def test_bytes_per_reference_with_the_scalars():
    ref = PoincareBall().expmap0(0.5 * torch.randn(10, 32, generator=torch.Generator().manual_seed(0)))
    fp16, fp32 = ReferenceIndex(ref, storage="fp16"), ReferenceIndex(ref, storage="fp32")
    assert (fp16.bytes_per_item, fp16.scalar_bytes_per_item, fp16.bytes_per_reference) == (68, 0, 68)
    assert (fp32.bytes_per_item, fp32.scalar_bytes_per_item, fp32.bytes_per_reference) == (128, 8, 136)


def test_sharded_search_merges_to_the_whole_search():
    ref, q = _near_boundary(900, 8, 1.0, 10), _near_boundary(20, 8, 1.0, 11)
    d, i = ReferenceIndex(ref, storage="fp32").search(q, k=10)
    parts = []
    for s in range(0, 900, 300):
        ds, is_ = ReferenceIndex(ref[s : s + 300], storage="fp32").search(q, k=10)
        parts.append((ds, is_ + s))
    md, mi = merge_results(parts, k=10)
    assert torch.equal(mi, i) and torch.equal(md, d)


def test_search_argument_errors():
    index = ReferenceIndex(_near_boundary(50, 4, 1.0, 12), storage="fp32")
    with pytest.raises(ValueError, match=r"candidates must be an integer >= k = 5"):
        index.search(torch.zeros(1, 4), k=5, candidates=3)
    with pytest.raises(ValueError, match=r"refine must hold the 50 references at full precision, shape \(50, 4\)"):
        index.search(torch.zeros(1, 4), k=5, refine=torch.zeros(49, 4))
    with pytest.raises(ValueError, match=r"backend must be one of \['torch', 'faiss'\]"):
        ReferenceIndex(torch.zeros(3, 2), backend="annoy")
    with pytest.raises(ValueError, match=r"kind='ivf' needs backend='faiss'"):
        ReferenceIndex(torch.zeros(3, 2), kind="ivf")
    with pytest.raises(ValueError, match=r"results must hold at least one"):
        merge_results([], k=1)


def test_save_and_load_torch_index(tmp_path):
    ref, q = _near_boundary(200, 8, 0.5, 13), _near_boundary(5, 8, 0.5, 14)
    index = ReferenceIndex(ref, np.arange(200), storage="fp16", geometry=PoincareBall(0.5))
    index.save(tmp_path / "ix")
    back = ReferenceIndex.load(tmp_path / "ix")
    assert back.storage == "fp16" and back.labels.tolist() == list(range(200))
    for a, b in zip(index.search(q, k=7), back.search(q, k=7)):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="no index.npz there"):
        ReferenceIndex.load(tmp_path / "nothing")


def test_missing_faiss_is_one_import_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_faiss(name, *a, **kw):
        if name == "faiss":
            raise ImportError("no faiss")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_faiss)
    with pytest.raises(ImportError, match=r"pip install 'hierviz\[faiss\]'"):
        ReferenceIndex(torch.zeros(3, 2), backend="faiss")


# --------------------------------------------------------------------------- FAISS
@pytest.mark.parametrize("storage", ["fp32", "fp16"])
def test_faiss_flat_equals_our_exact_search(storage):
    _faiss()
    ref, q = _near_boundary(2000, 16, 1.0, 15), _near_boundary(60, 16, 1.0, 16)
    d0, i0 = ReferenceIndex(ref, storage=storage).search(q, k=20)
    d1, i1 = ReferenceIndex(ref, storage=storage, backend="faiss", kind="flat").search(q, k=20)
    assert torch.equal(i0, i1)
    torch.testing.assert_close(d0, d1, rtol=1e-5, atol=0)


def test_faiss_ivf_scanning_every_cell_is_exact_and_reports_recall():
    _faiss()
    ref, q = _near_boundary(3000, 16, 1.0, 17), _near_boundary(50, 16, 1.0, 18)
    _, want = _brute(q, ref, 1.0, 20)
    full = ReferenceIndex(ref, storage="fp32", backend="faiss", kind="ivf", faiss_options={"nlist": 16, "nprobe": 16})
    assert torch.equal(full.search(q, k=20)[1], want)  # every list scanned: the exact search
    part = ReferenceIndex(ref, storage="fp32", backend="faiss", kind="ivf", faiss_options={"nlist": 16, "nprobe": 4})
    assert part.faiss_options["nlist"] == 16
    assert _recall(part.search(q, k=20)[1], want) >= 0.9  # clustered data: the probed cells hold most neighbours


def test_faiss_hnsw_returns_exact_distances_of_what_it_finds():
    _faiss()
    ref, q = _near_boundary(1500, 8, 1.0, 19), _near_boundary(30, 8, 1.0, 20)
    want_d, want_i = _brute(q, ref, 1.0, 10)
    index = ReferenceIndex(ref, storage="fp32", backend="faiss", kind="hnsw", faiss_options={"ef_search": 200})
    d, i = index.search(q, k=10, candidates=100)
    assert _recall(i, want_i) >= 0.8
    D = index.distances(q).double()
    torch.testing.assert_close(d.double(), D.gather(1, i), rtol=1e-6, atol=0)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_faiss_index_saves_and_loads(tmp_path, kind):
    _faiss()
    ref, q = _near_boundary(600, 8, 1.0, 21), _near_boundary(10, 8, 1.0, 22)
    index = ReferenceIndex(ref, storage="fp32", backend="faiss", kind=kind, faiss_options={"seed": 3})
    index.save(tmp_path / kind)
    back = ReferenceIndex.load(tmp_path / kind)
    assert back.kind == kind and (tmp_path / kind / "faiss.index").is_file()
    for a, b in zip(index.search(q, k=5), back.search(q, k=5)):
        assert torch.equal(a, b)


def test_faiss_option_errors():
    _faiss()
    with pytest.raises(ValueError, match=r"faiss_options: unknown option\(s\) \['nprobes'\]"):
        ReferenceIndex(torch.zeros(3, 2), backend="faiss", kind="ivf", faiss_options={"nprobes": 2})
    with pytest.raises(ValueError, match=r"faiss_options\['nlist'\] must be a positive integer"):
        ReferenceIndex(torch.zeros(3, 2), backend="faiss", kind="ivf", faiss_options={"nlist": 0})


# --------------------------------------------------------------------------- hierviz compare --protocol retrieval
@pytest.mark.parametrize("geometry", ["poincare", "lorentz"])
def test_compare_records_the_index_and_its_recall(tmp_path, geometry):
    _faiss()
    import json

    from hierviz.experiments import compare, resolve_config
    from hierviz.experiments.config import ConfigError
    from hierviz.features import FeaturesData, save_features

    g = np.random.default_rng(0)
    y = np.arange(120) % 4
    X = (1.2 * g.normal(size=(4, 10))[y] + g.normal(size=(120, 10))).astype(np.float32)
    path = save_features(tmp_path / "f.npz", FeaturesData(X, y, classes=["a1", "a2", "b1", "b2"]))
    tree = tmp_path / "tree.json"
    tree.write_text(json.dumps({"root": {"a": ["a1", "a2"], "b": ["b1", "b2"]}}), encoding="utf-8")
    sets = [f"data.path={path}", f"data.tree={tree}", "model.encoder=mapper", "model.width=4", "model.embed_dim=8"]
    sets += ["methods=hyper-dino", f"geometries={geometry}", "seeds=1", "eval.protocol=retrieval", "train.epochs=1"]
    sets += ["train.batch_size=32", "train.threads=1", "eval.projection=pca"]
    with pytest.raises(ConfigError, match="eval.index"):
        resolve_config("quick-ham10000", [*sets, "eval.index=faiss-lsh"])
    exact = compare(resolve_config("quick-ham10000", [*sets, f"out={tmp_path / 'e'}"]), progress=False, verbose=False)
    flat = compare(resolve_config("quick-ham10000", [*sets, "eval.index=faiss-flat", f"out={tmp_path / 'f'}"]),
                   progress=False, verbose=False)  # fmt: skip
    m0, m1 = exact.records[0]["metrics"], flat.records[0]["metrics"]
    assert "index_recall@20" not in m0 and m1["index_recall@20"] == 1.0  # the flat index is exact
    for key in ("map@1", "map@5", "map@10", "map@20", "p@1", "r_precision"):
        assert m1[key] == pytest.approx(m0[key], abs=1e-12)
    saved = json.loads((tmp_path / "f" / "config.json").read_text(encoding="utf-8"))
    assert saved["eval"]["index"] == "faiss-flat"
