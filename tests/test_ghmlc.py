"""G-HMLC (batched 1-D GMMs, hard masks) and A-HMLC (per-level attention) of Paper 02 (HMLC), §3."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture

from hierviz.hierarchy import LabelTree, level_labels
from hierviz.losses import AHMLCLoss, GHMLCLoss, HMLCLoss, LevelAttention, fit_gmm_1d, gmm_feature_masks


def _separable(B=16, n=48, K=3, seed=0, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for _ in range(B):
        centres = np.sort(rng.uniform(-5, 5, K)) + np.arange(K) * 4.0  # at least 4 apart
        lab = rng.integers(0, K, n)
        lab[:K] = np.arange(K)  # every component present
        rows.append(centres[lab] + rng.normal(0, 0.3, n))
        truth.append(lab)
    return torch.tensor(np.array(rows), dtype=dtype), np.array(truth)


def test_batched_gmm_matches_sklearn_on_separable_data():
    x, truth = _separable()
    gmm = fit_gmm_1d(x, 3)
    for b in range(x.shape[0]):
        sk = GaussianMixture(3, random_state=0).fit(x[b].numpy()[:, None])
        sk_lab = sk.predict(x[b].numpy()[:, None])
        assert adjusted_rand_score(sk_lab, gmm.labels[b].numpy()) >= 0.95
        assert adjusted_rand_score(truth[b], gmm.labels[b].numpy()) >= 0.95
        np.testing.assert_allclose(np.sort(sk.means_.ravel()), gmm.means[b].numpy(), atol=0.05)
        np.testing.assert_allclose(np.sort(sk.weights_)[np.argsort(np.argsort(sk.means_.ravel()))].sum(), 1.0)
    assert bool(gmm.converged.all())
    torch.testing.assert_close(gmm.weights.sum(1), torch.ones(x.shape[0], dtype=x.dtype))


def test_gmm_em_step_matches_sklearn_parameters():
    # same start, one EM step: sklearn's _m_step/_e_step give the same means and variances
    x, _ = _separable(B=3, n=30, K=2, seed=3)
    for b in range(3):
        init = np.array([x[b].min().item(), x[b].max().item()])
        sk = GaussianMixture(2, max_iter=200, tol=1e-10, means_init=init[:, None], reg_covar=1e-6).fit(
            x[b].numpy()[:, None]
        )
        ours = fit_gmm_1d(x[b : b + 1], 2, init_means=torch.tensor(init), max_iter=200, tol=1e-10)
        np.testing.assert_allclose(np.sort(sk.means_.ravel()), ours.means[0].numpy(), rtol=1e-6)
        order = np.argsort(sk.means_.ravel())
        np.testing.assert_allclose(sk.covariances_.ravel()[order], ours.variances[0].numpy(), rtol=1e-5)
        np.testing.assert_allclose(sk.weights_[order], ours.weights[0].numpy(), rtol=1e-5)


def test_gmm_warm_start_converges_faster_and_sorts_components():
    x, _ = _separable(B=8, n=40, K=2, seed=1)
    cold = fit_gmm_1d(x, 2)
    warm = fit_gmm_1d(x, 2, init_means=cold.means)
    assert warm.n_iter <= cold.n_iter
    assert bool((warm.means[:, 0] < warm.means[:, 1]).all())
    torch.testing.assert_close(warm.means, cold.means, rtol=1e-3, atol=1e-3)


def test_gmm_feature_masks_partition_and_level_order():
    x = torch.tensor([[0.0, 0.1, 9.0, 9.1, 4.0, 4.1]])
    m = gmm_feature_masks(fit_gmm_1d(x, 3))
    assert m.shape == (3, 1, 6)
    torch.testing.assert_close(m.sum(0), torch.ones(1, 6))
    assert m[0, 0].tolist() == [0, 0, 1, 1, 0, 0]  # level 1 = largest values
    assert m[2, 0].tolist() == [1, 1, 0, 0, 0, 0]


def test_gmm_errors():
    with pytest.raises(ValueError, match="fewer than n_components"):
        fit_gmm_1d(torch.zeros(2, 2), 3)
    with pytest.raises(ValueError, match=r"shape \(B, n\)"):
        fit_gmm_1d(torch.zeros(5), 2)
    with pytest.raises(ValueError, match="init_means must have shape"):
        fit_gmm_1d(torch.randn(2, 5), 2, init_means=torch.zeros(3))
    with pytest.raises(ValueError, match="NaN or inf"):
        fit_gmm_1d(torch.tensor([[0.0, float("nan"), 1.0]]), 2)


def _batch(seed=0, dtype=torch.float32, B=6, d=8):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(B, 2, d, generator=g, dtype=dtype), dim=-1)
    y = torch.tensor([[0, 0], [0, 0], [1, 0], [2, 1], [2, 1], [3, 1]])[:B]
    return z, y


def test_ghmlc_equals_hmlc_on_its_masks_and_masks_have_no_gradient():
    z, y = _batch(dtype=torch.float64)
    z.requires_grad_(True)
    loss = GHMLCLoss(tau=0.3, max_iter=50, gmm_dims=1)  # the 1-D fit (2-D: tests/test_ghmlc_2d.py)
    val = loss(z, y)
    m = loss.last_masks
    assert m.shape == (2, 6, 8) and not m.requires_grad
    ref = HMLCLoss("hmce", "linear", 0.3)(z, y, masks=m[:, :, None, :])
    assert val.item() == pytest.approx(ref.item(), rel=1e-12)
    # the masks come from the view mean of z, fitted by fit_gmm_1d
    expected = gmm_feature_masks(fit_gmm_1d(z.detach().mean(1), 2, max_iter=50))
    torch.testing.assert_close(m, expected)
    val.backward()
    assert torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0


def test_ghmlc_warm_start_state_and_tree_labels(breakhis_tree):
    z, _ = _batch()
    leaf = torch.tensor([0, 1, 4, 5, 5, 2])
    loss = GHMLCLoss(breakhis_tree, tau=0.2, gmm_dims=1)  # the 1-D fit (2-D: tests/test_ghmlc_2d.py)
    assert loss.means.numel() == 0
    loss(z, leaf)
    first = loss.means.clone()
    assert first.shape == (2,) and first[0] < first[1]
    loss(z, leaf)  # warm start from the means it stored
    warm = fit_gmm_1d(z.mean(1), 2, init_means=first)
    torch.testing.assert_close(loss.last_masks, gmm_feature_masks(warm))
    torch.testing.assert_close(loss.means, warm.means.mean(0))
    y = level_labels(breakhis_tree, leaf, "class")
    cold = GHMLCLoss(breakhis_tree, tau=0.2)(z, leaf)
    assert cold.item() == pytest.approx(GHMLCLoss(tau=0.2)(z, y).item(), rel=1e-5)
    assert "means" not in loss.state_dict()


def test_ghmlc_gradcheck_float64():
    z, y = _batch(dtype=torch.float64, B=5, d=6)
    loss = GHMLCLoss(tau=0.5, warm_start=False)
    masks = loss.masks(z, 2)  # fixed masks: gradcheck the loss given them
    z = z.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: loss.hmlc(x, y, masks=masks[:, :, None, :]), (z,))


def test_level_attention_rows_are_softmax_and_lazy_dim():
    att = LevelAttention(3)
    a = att(torch.randn(4, 2, 5))
    assert a.shape == (3, 4, 2, 5) and att.q_weight.shape == (3, 5, 5)
    torch.testing.assert_close(a.sum(-1), torch.ones(3, 4, 2))
    # head h on one vector, by hand: softmax((W_q z + b_q) * (W_k z + b_k) / sqrt(d))
    z = torch.randn(5)
    h = 1
    q = att.q_weight[h] @ z + att.q_bias[h]
    k = att.k_weight[h] @ z + att.k_bias[h]
    torch.testing.assert_close(att(z[None])[h, 0], torch.softmax(q * k / 5**0.5, -1))
    with pytest.raises(ValueError, match="built for d=5"):
        att(torch.randn(2, 2, 4))
    with pytest.raises(ValueError, match="levels must be"):
        LevelAttention(0)


def test_ahmlc_uniform_attention_limit_is_hmlc():
    z, y = _batch()
    loss = AHMLCLoss(levels=2, dim=8, tau=0.4)
    with torch.no_grad():
        loss.attention.q_weight.zero_()
        loss.attention.q_bias.zero_()
    assert loss(z, y).item() == pytest.approx(HMLCLoss("hmce", "linear", 0.4)(z, y).item(), rel=1e-6)
    torch.testing.assert_close(loss.last_attention, torch.full((2, 6, 2, 8), 1 / 8))


def test_ahmlc_gradcheck_float64_z_and_heads():
    z, y = _batch(dtype=torch.float64, B=5, d=4)
    loss = AHMLCLoss(levels=2, dim=4, tau=0.5).double()
    z = z.clone().requires_grad_(True)
    ps = tuple(p.detach().clone().requires_grad_(True) for p in loss.attention.parameters())
    assert torch.autograd.gradcheck(lambda x, *q: _functional(loss, x, y, q), (z, *ps))


def _functional(loss, x, y, params):
    return torch.func.functional_call(
        loss,
        {f"attention.{n}": p for n, p in zip(("q_weight", "k_weight", "q_bias", "k_bias"), params, strict=True)},
        (x, y),
    )


def test_ahmlc_trains_heads_and_tree_levels(breakhis_tree):
    z, _ = _batch()
    leaf = torch.tensor([0, 1, 4, 5, 5, 2])
    loss = AHMLCLoss(breakhis_tree, tau=0.2)  # lazy d
    loss(z, leaf).backward()
    assert loss.attention.q_weight.shape == (2, 8, 8)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in loss.attention.parameters())
    with pytest.raises(ValueError, match="needs tree= .* or levels="):
        AHMLCLoss()
    with pytest.raises(ValueError, match="3 attention heads"):
        AHMLCLoss(levels=3, dim=8)(z, torch.zeros(6, 2, dtype=torch.long))


def test_unbalanced_tree_levels_run(unbalanced_tree):
    t: LabelTree = unbalanced_tree
    z = torch.nn.functional.normalize(torch.randn(6, 2, 9), dim=-1)
    leaf = torch.arange(6) % t.num_leaves
    for loss in (GHMLCLoss(t), AHMLCLoss(t, dim=9)):
        assert torch.isfinite(loss(z, leaf))
