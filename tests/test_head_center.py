"""The hyperbolic head's centring (``model.head_center=batch``) and its eval-mode re-estimate."""

from __future__ import annotations

import pytest
import torch

from hierviz.geometry import Lorentz, PoincareBall
from hierviz.models import HyperbolicHead, build_model

F64 = torch.float64


def _collapsed(n=64, d=5, seed=0):
    """Raw outputs that all point one way: a common offset of norm 10 plus unit noise."""
    g = torch.Generator().manual_seed(seed)
    offset = torch.zeros(d, dtype=F64)
    offset[0] = 10.0
    return offset + torch.randn(n, d, generator=g, dtype=F64)


@pytest.mark.parametrize("geo", [PoincareBall(1.0), PoincareBall(3.0), Lorentz(1.0)])
def test_training_mode_subtracts_the_batch_mean_loop_reference(geo):
    v = _collapsed() / 10  # centred tangent norms ~0.2: inside the ball's float64 margin at every c here
    head = HyperbolicHead(geo, clip_r=None, scale_init=1.0, learn_scale=False, center="batch", dim=5).train()
    u = geo.logmap0(head(v))  # (64, 5) on both models (hierviz's logmap0 drops the hyperboloid's time axis)
    mean = [sum(float(v[i, j]) for i in range(v.shape[0])) / v.shape[0] for j in range(5)]  # loop reference
    ref = torch.tensor([[float(v[i, j]) - mean[j] for j in range(5)] for i in range(v.shape[0])], dtype=F64)
    torch.testing.assert_close(u, ref, rtol=1e-9, atol=1e-9)
    assert float(u.mean(0).norm()) < 1e-9  # the root at the origin, by construction
    # the uncentred head keeps the collapse: every tangent vector points the same way
    plain = geo.logmap0(HyperbolicHead(geo, clip_r=None, scale_init=0.5, learn_scale=False)(v))
    assert float(plain.mean(0).norm() / plain.norm(dim=-1).mean()) > 0.95


def test_running_mean_is_an_ema_of_batch_means_and_eval_uses_it():
    ball = PoincareBall(1.0)
    head = HyperbolicHead(ball, scale_init=0.1, center="batch", dim=5).train()
    a, b = _collapsed(seed=1), _collapsed(n=10, seed=2) * 2
    head(a)
    head(b)
    expect = 0.9 * (0.1 * a.mean(0)) + 0.1 * b.mean(0)  # BatchNorm's momentum 0.1 from 0
    torch.testing.assert_close(head.running_mean, expect, rtol=1e-12, atol=1e-12)
    head.eval()  # one sample's embedding does not depend on its batch
    torch.testing.assert_close(head(a[:1]), head(a)[:1])
    ref = HyperbolicHead(ball, scale_init=0.1)(a[:1] - expect)
    torch.testing.assert_close(head(a[:1]), ref)
    assert "running_mean" in head.state_dict()
    other = HyperbolicHead(ball, scale_init=0.1, center="batch", dim=5)
    other.load_state_dict(head.state_dict())
    torch.testing.assert_close(other.running_mean, expect)


def test_gradient_flows_through_the_batch_mean_gradcheck_float64():
    ball = PoincareBall(1.0)
    head = HyperbolicHead(ball, scale_init=0.2, center="batch", dim=3).train()
    g = torch.Generator().manual_seed(3)
    v = (torch.randn(6, 3, generator=g, dtype=F64) + 2.0).requires_grad_(True)
    w = torch.randn(6, 3, generator=g, dtype=F64)
    assert torch.autograd.gradcheck(lambda x: (head(x) * w).sum(), (v,))
    # the batch mean is part of the graph: shifting every sample by the same vector changes nothing
    shifted = head(v + 5.0)
    torch.testing.assert_close(shifted, head(v))


def test_recentring_sets_the_eval_centre_and_the_batch_scale_median_from_eval_outputs():
    ball = PoincareBall(1.0)
    head = HyperbolicHead(ball, scale_init="batch", init_radius=1.0, center="batch", dim=5).train()
    head(_collapsed(seed=4))  # training: a running mean and a running median norm
    head.eval()
    a, b = _collapsed(n=30, seed=5) + 3.0, _collapsed(n=11, seed=6) + 3.0  # eval-mode outputs, shifted
    with head.recentring():
        head(a)
        head(b)
    both = torch.cat([a, b])
    torch.testing.assert_close(head.running_mean, both.mean(0), rtol=1e-12, atol=1e-12)
    med = float((both - both.mean(0)).norm(dim=-1).median())
    assert float(head.running_norm) == pytest.approx(med, rel=1e-12)
    r = ball.dist(head(both).detach(), torch.zeros(1, 5, dtype=F64))
    assert float(r.median()) == pytest.approx(1.0, rel=1e-9)  # the eval median at init_radius, as in training
    u = ball.logmap0(head(both).detach())
    assert float(u.mean(0).norm() / u.norm(dim=-1).mean()) < 0.05  # centred (the bound is odd, not linear)


def test_center_errors_name_the_argument():
    ball = PoincareBall(1.0)
    with pytest.raises(ValueError, match="center"):
        HyperbolicHead(ball, center="mean")
    with pytest.raises(ValueError, match="dim"):
        HyperbolicHead(ball, center="batch")
    with pytest.raises(ValueError, match="recentring"):
        with HyperbolicHead(ball).recentring():
            pass
    head = HyperbolicHead(ball, scale_init=1.0, center="batch", dim=2).eval()
    with pytest.raises(ValueError, match="no sample"):
        with head.recentring():
            pass
    with pytest.raises(ValueError, match="dim=2"):
        head(torch.zeros(1, 3))


def test_build_model_passes_head_center_and_the_sphere_ignores_it():
    from hierviz.geometry import get_geometry
    from hierviz.models import L2Normalize

    m = build_model("small_cnn", PoincareBall(1.0), embed_dim=6, width=4, head_center="batch")
    assert m.to_manifold.center == "batch" and m.to_manifold.running_mean.shape == (6,)
    assert m.features_to_manifold.center is None  # HXE's fixed-scale feature map is left alone
    e = build_model("small_cnn", get_geometry("euclidean"), embed_dim=6, width=4, head_center="batch")
    assert isinstance(e.to_manifold, L2Normalize)


def test_config_key_is_validated():
    from hierviz.experiments import resolve_config
    from hierviz.experiments.config import ConfigError, validate

    assert resolve_config("quick-ham10000", ["model.head_center=batch"]).model.head_center == "batch"
    with pytest.raises(ConfigError, match="model.head_center"):
        validate(resolve_config("quick-ham10000", ["model.head_center=mean"]))


def test_compare_recentres_the_head_on_the_evaluated_training_images(tmp_path):
    """End to end: after `compare` the evaluated training embeddings have a zero mean tangent vector."""
    import numpy as np

    from hierviz.experiments import compare, resolve_config

    tiny = ["data.limit=60", "seeds=1", "model.width=4", "model.embed_dim=8", "data.image_size=16"]
    tiny += ["eval.projection=pca", "train.batch_size=32", "train.epochs=1", "data.workers=0", "methods=supcon"]
    ball = PoincareBall(1.0)
    ratios = {}
    for center in ("null", "batch"):
        out = tmp_path / center
        cfg = resolve_config(
            "quick-ham10000", [*tiny, "geometries=poincare", f"model.head_center={center}", f"out={out}"]
        )
        compare(cfg, progress=False, verbose=False)
        z = torch.as_tensor(np.load(out / "runs" / "supcon-poincare-s0" / "embeddings.npz")["z_train"], dtype=F64)
        u = ball.logmap0(z)
        ratios[center] = float(u.mean(0).norm() / u.norm(dim=-1).mean())
    # the mean is removed before the (odd, radial) tanh bound, so it is ~0 after it, not exactly 0
    assert ratios["batch"] < 0.02 < ratios["null"], ratios
