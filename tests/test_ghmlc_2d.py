"""G-HMLC's two-dimensional GMM (Paper 02 (HMLC), §3: "a two-dimensional GMM is fitted")."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.mixture import GaussianMixture

from hierviz.losses import GHMLCLoss, fit_gmm_2d, gmm_feature_masks


def _blobs2d(B=6, n=60, K=3, seed=0):
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for _ in range(B):
        centres = np.stack([np.arange(K) * 4.0, np.arange(K) * 4.0 + rng.uniform(-1, 1, K)], 1)
        lab = rng.integers(0, K, n)
        lab[:K] = np.arange(K)
        rows.append(centres[lab] + rng.normal(0, 0.4, (n, 2)) @ np.array([[1.0, 0.3], [0.0, 0.6]]))
        truth.append(lab)
    return torch.tensor(np.array(rows), dtype=torch.float64), np.array(truth)


def test_fit_gmm_2d_converges_to_sklearns_full_covariance_mixture():
    x, truth = _blobs2d()
    for b in range(x.shape[0]):
        pts = x[b].numpy()
        init = np.stack([pts[truth[b] == k].mean(0) for k in range(3)])  # both start from the same means
        sk = GaussianMixture(3, covariance_type="full", means_init=init, tol=1e-12, max_iter=500, reg_covar=1e-6)
        sk.fit(pts)
        ours = fit_gmm_2d(x[b : b + 1], 3, init_means=torch.tensor(init), tol=1e-12, max_iter=500)
        order = np.argsort(sk.means_.mean(1))  # ours are sorted along the diagonal
        np.testing.assert_allclose(sk.means_[order], ours.means[0].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sk.covariances_[order], ours.covariances[0].numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(sk.weights_[order], ours.weights[0].numpy(), rtol=1e-5)
        np.testing.assert_array_equal(np.argsort(order)[sk.predict(pts)], ours.labels[0].numpy())


def test_fit_gmm_2d_cold_start_and_errors():
    x, truth = _blobs2d(B=4, seed=1)
    gmm = fit_gmm_2d(x, 3)  # quantile start, all mixtures at once
    assert gmm.means.shape == (4, 3, 2) and gmm.covariances.shape == (4, 3, 2, 2)
    for b in range(4):  # components sorted along the diagonal = the blobs' order here
        assert (gmm.labels[b].numpy() == truth[b]).mean() >= 0.95
    masks = gmm_feature_masks(gmm)
    assert masks.shape == (3, 4, 60) and bool((masks.sum(0) == 1).all())
    with pytest.raises(ValueError, match=r"\(B, n, 2\)"):
        fit_gmm_2d(torch.zeros(2, 5), 2)
    with pytest.raises(ValueError, match="fewer than n_components"):
        fit_gmm_2d(torch.zeros(1, 2, 2), 3)
    with pytest.raises(ValueError, match="init_means"):
        fit_gmm_2d(x, 3, init_means=torch.zeros(3))


def test_ghmlc_fits_the_plane_of_the_two_views_by_default():
    g = torch.Generator().manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(6, 2, 16, generator=g, dtype=torch.float64), dim=-1)
    y = torch.tensor([[0, 0], [1, 0], [2, 1], [2, 1], [3, 1], [0, 0]])
    two = GHMLCLoss(tau=0.5)
    loss = two(z, y)
    want = gmm_feature_masks(fit_gmm_2d(torch.stack([z[:, 0], z[:, 1]], -1), 2, max_iter=100, tol=1e-3))
    torch.testing.assert_close(two.last_masks, want)
    assert two.means.shape == (2, 2) and bool(torch.isfinite(loss))
    one = GHMLCLoss(tau=0.5, gmm_dims=1)  # hierviz <= 0.2: 1-D on the view mean
    one(z, y)
    assert one.means.shape == (2,)
    single = GHMLCLoss(tau=0.5)  # one view: no plane, the 1-D fit
    single(z[:, :1], y)
    assert single.means.shape == (2,)
    with pytest.raises(ValueError, match="gmm_dims must be 1"):
        GHMLCLoss(gmm_dims=3)


def test_g_hmlc_method_defaults_to_the_2d_gmm():
    from hierviz.experiments import resolve_config
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.methods import build_objective

    tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
    obj = build_objective("g-hmlc", tree, get_geometry("euclidean"))
    assert next(m for m in obj.modules() if isinstance(m, GHMLCLoss)).gmm_dims == 2
    assert resolve_config("quick-ham10000", ["loss.g_hmlc.gmm_dims=1"]).loss["g_hmlc.gmm_dims"] == 1
