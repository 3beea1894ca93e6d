"""Per-level labels and the HMC / HCE / HMCE losses (Paper 02 (HMLC), Eqs. 2-4; Zhang et al. 2022).

``official`` mode is checked against ``SalesforceHMLC`` below: a line-by-line re-implementation
of ``losses/losses.py`` (``HMLC``, ``SupConLoss``, ``unique``) of
salesforce/hierarchicalContrastiveLearning, batch loops and all. ``paper`` mode is checked
against plain-Python loops over anchors and pairs written from Eqs. 2-4.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.hierarchy import level_label_matrix, level_labels, level_names
from hierviz.losses import HMLCLoss, SupConLoss
from hierviz.losses.hmlc import layer_penalty_weights

# ---------------------------------------------------------------------------- per-level labels


def test_level_labels_balanced_both_orders(breakhis_tree):
    t = breakhis_tree
    cat = level_label_matrix(t, "category")
    assert cat.shape == (8, 2)
    names = [[t.nodes[int(i)] for i in row] for row in cat]
    assert names[0] == ["benign", "adenosis"] and names[4] == ["malignant", "ductal_carcinoma"]
    assert torch.equal(level_label_matrix(t, "class"), cat.flip(1))
    dense = level_label_matrix(t, "category", dense=True)
    assert dense[:, 0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert dense[:, 1].tolist() == list(range(8))
    y = torch.tensor([7, 0, 3])
    assert torch.equal(level_labels(t, y, "class"), cat.flip(1)[y])
    assert level_names(t)[0] == ["benign", "malignant"]


def test_level_labels_unbalanced_shallow_leaf_repeats(unbalanced_tree):
    t = unbalanced_tree  # c at depth 1, b's leaves at depth 2, a's at depth 3
    m = level_label_matrix(t, "category")
    assert m.shape == (t.num_leaves, 3)
    rows = {leaf: [t.nodes[int(i)] for i in m[k]] for k, leaf in enumerate(t.leaves)}
    assert rows["x"] == ["a", "a1", "x"]
    assert rows["z"] == ["a", "a2", "z"]
    assert rows["u"] == ["b", "u", "u"]
    assert rows["c"] == ["c", "c", "c"]
    # a shallow leaf is never a positive of another leaf at levels below its depth
    for k, leaf in enumerate(t.leaves):
        for j in range(t.num_leaves):
            for col in range(3):
                same = bool(m[k, col] == m[j, col])
                want = (
                    t.ancestors(leaf)[min(col + 1, t.depth(leaf))]
                    == t.ancestors(t.leaves[j])[min(col + 1, t.depth(t.leaves[j]))]
                )
                assert same == want


def test_level_labels_errors(breakhis_tree):
    with pytest.raises(ValueError, match="order must be one of"):
        level_label_matrix(breakhis_tree, "coarse")
    with pytest.raises(ValueError, match=r"outside \[0, 7\]"):
        level_labels(breakhis_tree, torch.tensor([8]))
    with pytest.raises(TypeError, match="LabelTree"):
        level_label_matrix({"a": 1})
    with pytest.raises(ValueError, match=r"shape \(B,\)"):
        level_labels(breakhis_tree, torch.zeros(2, 2, dtype=torch.long))


# ---------------------------------------------------------------------------- official reference


def _sf_unique(x, dim=None):
    unique, inverse = torch.unique(x, sorted=True, return_inverse=True, dim=dim)
    perm = torch.arange(inverse.size(0), dtype=inverse.dtype, device=inverse.device)
    inverse, perm = inverse.flip([0]), perm.flip([0])
    return unique, inverse.new_empty(unique.size(0)).scatter_(0, inverse, perm)


class _SFSupConLoss(torch.nn.Module):
    def __init__(self, temperature=0.07, contrast_mode="all", base_temperature=0.07):
        super().__init__()
        self.temperature = temperature
        self.contrast_mode = contrast_mode
        self.base_temperature = base_temperature

    def forward(self, features, labels=None, mask=None):
        device = features.device
        batch_size = features.shape[0]
        mask = mask.float().to(device)
        contrast_count = features.shape[1]
        contrast_feature = torch.cat(torch.unbind(features, dim=1), dim=0)
        anchor_feature = contrast_feature
        anchor_count = contrast_count
        anchor_dot_contrast = torch.div(torch.matmul(anchor_feature, contrast_feature.T), self.temperature)
        logits_max, _ = torch.max(anchor_dot_contrast, dim=1, keepdim=True)
        logits = anchor_dot_contrast - logits_max.detach()
        mask = mask.repeat(anchor_count, contrast_count)
        logits_mask = torch.scatter(
            torch.ones_like(mask), 1, torch.arange(batch_size * anchor_count).view(-1, 1).to(device), 0
        )
        mask = mask * logits_mask
        exp_logits = torch.exp(logits) * logits_mask
        log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))
        mean_log_prob_pos = (mask * log_prob).sum(1) / mask.sum(1)
        loss = -(self.temperature / self.base_temperature) * mean_log_prob_pos
        return loss.view(anchor_count, batch_size).mean()


class SalesforceHMLC(torch.nn.Module):
    """``HMLC`` of salesforce/hierarchicalContrastiveLearning ``losses/losses.py``, line by line."""

    def __init__(self, temperature=0.07, base_temperature=0.07, layer_penalty=None, loss_type="hmce"):
        super().__init__()
        self.temperature = temperature
        self.base_temperature = base_temperature
        self.layer_penalty = layer_penalty if layer_penalty else self.pow_2
        self.sup_con_loss = _SFSupConLoss(temperature)
        self.loss_type = loss_type

    def pow_2(self, value):
        return torch.pow(2, value)

    def forward(self, features, labels):
        device = features.device
        mask = torch.ones(labels.shape).to(device)
        cumulative_loss = torch.tensor(0.0).to(device)
        max_loss_lower_layer = torch.tensor(float("-inf"))
        for l in range(1, labels.shape[1]):  # noqa: E741 (the reference's name)
            mask[:, labels.shape[1] - l :] = 0
            layer_labels = labels * mask
            mask_labels = torch.stack(
                [torch.all(torch.eq(layer_labels[i], layer_labels), dim=1) for i in range(layer_labels.shape[0])]
            ).type(torch.uint8)
            layer_loss = self.sup_con_loss(features, mask=mask_labels)
            if self.loss_type == "hmc":
                cumulative_loss += self.layer_penalty(torch.tensor(1 / (l)).type(torch.float)) * layer_loss
            elif self.loss_type == "hce":
                layer_loss = torch.max(max_loss_lower_layer.to(layer_loss.device), layer_loss)
                cumulative_loss += layer_loss
            elif self.loss_type == "hmce":
                layer_loss = torch.max(max_loss_lower_layer.to(layer_loss.device), layer_loss)
                cumulative_loss += self.layer_penalty(torch.tensor(1 / l).type(torch.float)) * layer_loss
            _, unique_indices = _sf_unique(layer_labels, dim=0)
            max_loss_lower_layer = torch.max(max_loss_lower_layer.to(layer_loss.device), layer_loss)
            labels = labels[unique_indices]
            mask = mask[unique_indices]
            features = features[unique_indices]
        return cumulative_loss / labels.shape[1]


def _fixed_batch(levels: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(12, 2, 16, generator=g), dim=-1)
    # coarse first, each column refines the previous one (a tree), the last column an image id
    top = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    cols = [top]
    if levels >= 3:
        cols.append(top * 2 + torch.tensor([0, 0, 1, 1] * 3))
    if levels >= 4:
        cols.append(cols[-1] * 2 + torch.tensor([0, 1, 0, 0] * 3))
    cols.append(torch.arange(12) % 7 + 10 * cols[-1])  # repeats inside a parent: unique filtering matters
    return z, torch.stack(cols, dim=1)


@pytest.mark.parametrize("levels", [3, 4])
@pytest.mark.parametrize("tau", [0.07, 0.1])
@pytest.mark.parametrize("penalty", ["exp", "pow2"])
@pytest.mark.parametrize("loss_type", ["hmc", "hce", "hmce"])
def test_official_mode_matches_salesforce(levels, tau, penalty, loss_type):
    z, y = _fixed_batch(levels)
    assert y.shape == (12, levels)
    ref = SalesforceHMLC(temperature=tau, layer_penalty=torch.exp if penalty == "exp" else None, loss_type=loss_type)(
        z, y
    )
    ours = HMLCLoss(loss_type, penalty, tau=tau, mode="official")(z, y)
    assert ours.item() == pytest.approx(ref.item(), rel=1e-5)
    # the filtering changes the value: the paper-mode loss on the same columns differs
    assert abs(HMLCLoss(loss_type, penalty, tau=tau)(z, y).item() - ref.item()) > 1e-3


def test_official_mode_gradients_match_salesforce():
    z, y = _fixed_batch(4, seed=3)
    z1 = z.clone().double().requires_grad_(True)
    z2 = z.clone().double().requires_grad_(True)
    SalesforceHMLC(temperature=0.1, layer_penalty=torch.exp)(z1, y).backward()
    HMLCLoss("hmce", "exp", tau=0.1, mode="official")(z2, y).backward()
    torch.testing.assert_close(z2.grad, z1.grad, rtol=1e-6, atol=1e-9)


def test_official_tau_scaling_is_tau_over_007():
    z, y = _fixed_batch(3)
    a = HMLCLoss("hmc", "exp", tau=0.1, mode="official")(z, y)
    b = HMLCLoss("hmc", "exp", tau=0.1, base_tau=0.1, mode="official")(z, y)
    assert a.item() == pytest.approx(b.item() * 0.1 / 0.07, rel=1e-6)


# ---------------------------------------------------------------------------- paper-mode reference


def _paper_loop(z, y, loss_type, penalty, tau, masks=None):
    """Eqs. 2-4 with Python loops over levels, anchors and pairs (float64)."""
    B, V, d = z.shape
    H = y.shape[1]
    f = {"exp": math.exp, "pow2": lambda x: 2.0**x, "linear": lambda x: x}[penalty]
    idx = [(v, b) for v in range(V) for b in range(B)]
    total = 0.0
    bound = [-math.inf] * len(idx)  # M_{h-1}(i)
    for h in range(H):
        zz = z if masks is None else z * masks[h]
        vec = [zz[b, v].double() for v, b in idx]
        lam = 1.0 if loss_type == "hce" else f(1.0 / (h + 1))
        anchor_losses, new_bound = [], list(bound)
        for i, (_, bi) in enumerate(idx):
            den = sum(math.exp(float(vec[i] @ vec[a]) / tau) for a in range(len(idx)) if a != i)
            pairs = []
            for p, (_, bp) in enumerate(idx):
                if p != i and y[bp, h] == y[bi, h]:
                    pairs.append(-math.log(math.exp(float(vec[i] @ vec[p]) / tau) / den))
            if not pairs:
                continue
            if loss_type != "hmc":
                new_bound[i] = max(bound[i], max(pairs))
                pairs = [max(q, bound[i]) for q in pairs]
            anchor_losses.append(sum(pairs) / len(pairs))
        bound = new_bound
        if anchor_losses:
            total += lam * sum(anchor_losses) / len(anchor_losses)
    return total / H


@pytest.mark.parametrize("loss_type", ["hmc", "hce", "hmce"])
@pytest.mark.parametrize("penalty", ["exp", "pow2", "linear"])
def test_paper_mode_matches_loop(loss_type, penalty, unbalanced_tree):
    g = torch.Generator().manual_seed(1)
    z = torch.nn.functional.normalize(torch.randn(7, 2, 5, generator=g, dtype=torch.float64), dim=-1)
    y = level_labels(unbalanced_tree, torch.tensor([0, 1, 2, 3, 4, 5, 0]), "class")
    ours = HMLCLoss(loss_type, penalty, tau=0.3)(z, y)
    assert ours.item() == pytest.approx(_paper_loop(z, y, loss_type, penalty, 0.3), rel=1e-10)


def test_paper_mode_with_masks_and_single_view_matches_loop():
    g = torch.Generator().manual_seed(2)
    z = torch.randn(6, 1, 4, generator=g, dtype=torch.float64)
    masks = torch.rand(2, 6, 1, 4, generator=g, dtype=torch.float64)
    y = torch.tensor([[0, 0], [0, 0], [1, 0], [2, 1], [2, 1], [3, 2]])  # (3, 2) has no positive at level 1
    for lt in ("hmc", "hmce"):
        ours = HMLCLoss(lt, "linear", tau=0.5)(z, y, masks=masks)
        assert ours.item() == pytest.approx(_paper_loop(z, y, lt, "linear", 0.5, masks), rel=1e-10)


def test_one_level_limit_is_supcon(breakhis_tree):
    g = torch.Generator().manual_seed(4)
    z = torch.nn.functional.normalize(torch.randn(10, 2, 8, generator=g), dim=-1)
    leaf = torch.tensor([0, 0, 1, 2, 3, 3, 4, 5, 6, 7])
    ref = SupConLoss(breakhis_tree, "euclidean", tau=0.2, reduction="anchor")(z, leaf)
    for lt in ("hmc", "hce", "hmce"):
        ours = HMLCLoss(lt, "linear", tau=0.2)(z, leaf[:, None])
        assert ours.item() == pytest.approx(ref.item(), rel=1e-5)
    # exp penalty: λ_1 = e
    assert HMLCLoss("hmc", "exp", tau=0.2)(z, leaf[:, None]).item() == pytest.approx(math.e * ref.item(), rel=1e-5)


def test_hce_bounds_each_level_below_by_earlier_levels():
    g = torch.Generator().manual_seed(5)
    z = torch.nn.functional.normalize(torch.randn(8, 2, 6, generator=g, dtype=torch.float64), dim=-1)
    y = torch.tensor([[0, 0], [1, 0], [2, 0], [3, 0], [4, 1], [5, 1], [6, 1], [7, 1]])
    hmc = HMLCLoss("hmc", "linear", tau=0.2)(z, y)
    hmce = HMLCLoss("hmce", "linear", tau=0.2)(z, y)
    assert hmce.item() > hmc.item()  # the bound raises the coarse level


@given(st.integers(0, 10_000), st.sampled_from(["hmc", "hce", "hmce"]))
@settings(max_examples=25, deadline=None)
def test_property_invariant_to_batch_permutation_and_nonnegative(seed, loss_type):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(6, 2, 4, generator=g, dtype=torch.float64), dim=-1)
    y = torch.randint(0, 3, (6, 2), generator=g)
    perm = torch.randperm(6, generator=g)
    loss = HMLCLoss(loss_type, "pow2", tau=0.4)
    a, b = loss(z, y), loss(z[perm], y[perm])
    assert a.item() >= 0
    assert a.item() == pytest.approx(b.item(), rel=1e-10)


def test_gradcheck_float64_paper_mode():
    g = torch.Generator().manual_seed(6)
    z = torch.randn(5, 2, 3, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[0, 0], [0, 0], [1, 0], [2, 1], [3, 1]])
    for lt in ("hmc", "hmce"):
        assert torch.autograd.gradcheck(lambda x, lt=lt: HMLCLoss(lt, "exp", tau=0.5)(x, y), (z,))
    m = torch.rand(2, 5, 1, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, mm: HMLCLoss("hmce", "linear", tau=0.5)(x, y, mm), (z, m))


def test_leaf_labels_with_tree(breakhis_tree):
    z = torch.nn.functional.normalize(torch.randn(6, 2, 4), dim=-1)
    leaf = torch.tensor([0, 1, 4, 5, 5, 2])
    loss = HMLCLoss("hmce", tree=breakhis_tree, order="category", tau=0.2)
    assert loss(z, leaf).item() == pytest.approx(
        HMLCLoss("hmce", tau=0.2)(z, level_labels(breakhis_tree, leaf, "category")).item(), rel=1e-6
    )
    official = HMLCLoss("hmce", tree=breakhis_tree, mode="official")
    cols = torch.cat([level_labels(breakhis_tree, leaf, "category"), torch.arange(6)[:, None] + 100], dim=1)
    assert official(z, leaf).item() == pytest.approx(HMLCLoss("hmce", mode="official")(z, cols).item(), rel=1e-6)


def test_layer_penalty_weights():
    assert layer_penalty_weights("exp", 2).tolist() == pytest.approx([math.e, math.exp(0.5)], rel=1e-6)
    with pytest.raises(ValueError, match="levels must be"):
        layer_penalty_weights("exp", 0)


def test_errors():
    z = torch.nn.functional.normalize(torch.randn(4, 2, 3), dim=-1)
    y = torch.zeros(4, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="loss_type must be one of"):
        HMLCLoss("hmx")
    with pytest.raises(ValueError, match="layer_penalty must be one of"):
        HMLCLoss(layer_penalty="cubic")
    with pytest.raises(ValueError, match="mode must be one of"):
        HMLCLoss(mode="salesforce")
    with pytest.raises(ValueError, match="tau must be > 0"):
        HMLCLoss(tau=0.0)
    with pytest.raises(ValueError, match=r"level_labels must have shape \(B, L\)"):
        HMLCLoss()(z, torch.zeros(3, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="level_labels must be integers"):
        HMLCLoss()(z, y.float())
    with pytest.raises(ValueError, match="built without tree="):
        HMLCLoss()(z, torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="at least 2 views"):
        HMLCLoss(mode="official")(z[:, :1], y)
    with pytest.raises(ValueError, match="paper-mode feature"):
        HMLCLoss(mode="official")(z, y, masks=torch.ones(2, 1, 1, 3))
    with pytest.raises(ValueError, match="masks must broadcast"):
        HMLCLoss()(z, y, masks=torch.ones(3, 4, 2, 3))
    with pytest.raises(ValueError, match="NaN or inf"):
        HMLCLoss()(z * np.nan, y)


# ---------------------------------------------------------------------------- methods


def test_paper02_methods_build_and_match_their_losses(breakhis_tree):
    from hierviz.methods import METHODS, build_objective, get_method

    assert {"hmc", "hce", "hmce", "g-hmlc", "a-hmlc", "ce"} <= set(METHODS.names())
    g = torch.Generator().manual_seed(7)
    z = torch.nn.functional.normalize(torch.randn(8, 2, 6, generator=g), dim=-1)
    leaf = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7])
    y = level_labels(breakhis_tree, leaf, "class")
    for name in ("hmc", "hce", "hmce"):
        assert get_method(name).needs.level_labels
        loss, terms = build_objective(name, breakhis_tree, "euclidean", tau=0.2)(z, leaf)
        penalty = "exp"
        assert loss.item() == pytest.approx(HMLCLoss(name, penalty, 0.2)(z, y).item(), rel=1e-6)
        assert list(terms) == [name]
    off = build_objective("hmce", breakhis_tree, "euclidean", mode="official", penalty="pow2")
    cols = torch.cat([level_labels(breakhis_tree, leaf, "category"), torch.arange(8)[:, None] + 50], dim=1)
    assert off(z, leaf)[0].item() == pytest.approx(
        SalesforceHMLC(temperature=0.1, layer_penalty=None)(z, cols).item(), rel=1e-5
    )
    cat_first = build_objective("hmce", breakhis_tree, "euclidean", level_order="category")(z, leaf)[0]
    assert cat_first.item() == pytest.approx(
        HMLCLoss("hmce", "exp", 0.1)(z, level_labels(breakhis_tree, leaf, "category")).item(), rel=1e-6
    )
    a = build_objective("a-hmlc", breakhis_tree, "euclidean")
    assert get_method("a-hmlc").needs.modules == ("attention",)
    a(z, leaf)[0].backward()
    assert sum(p.numel() for p in a.parameters()) == 2 * (2 * 6 * 6 + 2 * 6)
    gl = build_objective("g-hmlc", breakhis_tree, "euclidean", gmm_max_iter=20)
    assert torch.isfinite(gl(z, leaf)[0])
    # hyperbolic: the masks act on log0(z), compared by the dot product
    from hierviz.geometry import get_geometry
    from hierviz.losses import GHMLCLoss

    ball = get_geometry("poincare")
    zb = ball.expmap0(0.3 * z.double())
    hyp = build_objective("g-hmlc", breakhis_tree, ball)(zb, leaf)[0]
    ref = GHMLCLoss(breakhis_tree)(ball.logmap0(zb), leaf)
    assert hyp.item() == pytest.approx(ref.item(), rel=1e-6)


def test_ce_method_is_cross_entropy(breakhis_tree):
    from hierviz.methods import build_objective, get_method

    assert get_method("ce").needs.logits
    logits = torch.randn(5, 8, dtype=torch.float64)
    leaf = torch.tensor([0, 3, 7, 2, 2])
    loss, _ = build_objective("ce", breakhis_tree, "euclidean")(None, leaf, logits=logits)
    assert loss.item() == pytest.approx(torch.nn.functional.cross_entropy(logits, leaf).item(), rel=1e-10)


@pytest.mark.parametrize("mode", ["paper", "official"])
@pytest.mark.parametrize("loss_type", ["hmc", "hce", "hmce"])
def test_level_terms_sum_to_the_loss(mode, loss_type):
    z, y = _fixed_batch(4, seed=9)
    loss = HMLCLoss(loss_type, "pow2", 0.1, mode=mode)
    terms = loss.level_terms(z, y)
    assert terms.shape == ((4,) if mode == "paper" else (3,))
    assert terms.sum().item() == pytest.approx(loss(z, y).item(), rel=1e-6)
    assert (terms > 0).all()


# ---------------------------------------------------------------------------- figures and panel (viz/hmlc.py)


def test_level_positives_figure_is_label_equality():
    from hierviz.viz.hmlc import level_positives_figure

    y = np.array([[0, 0], [1, 0], [1, 1], [2, 1]])
    fig = level_positives_figure(y, ["class", "category"])
    for h in range(2):
        z = np.array(fig.data[h].z, dtype=float)
        want = (y[:, h][:, None] == y[:, h][None, :]).astype(float)
        np.fill_diagonal(want, np.nan)
        np.testing.assert_array_equal(z, want)
    with pytest.raises(ValueError, match=r"shape \(n, L\)"):
        level_positives_figure([0, 1, 2])


def test_hmlc_terms_figure_and_panel_read_the_loss():
    from hierviz.losses.hmlc import layer_penalty_weights
    from hierviz.viz.hmlc import hmlc_panel, hmlc_terms_figure

    z, y = _fixed_batch(3, seed=11)
    y = y[:, :2].flip(1)
    fig = hmlc_terms_figure(z, y, 0.2, "pow2", ["class", "category"])
    for bar, lt in zip(fig.data, ("hmc", "hce", "hmce"), strict=True):
        want = HMLCLoss(lt, "pow2", 0.2).level_terms(z.double(), y)
        np.testing.assert_allclose(bar.y, want.numpy(), rtol=1e-10)
        assert f"total {want.sum().item():.3f}" in bar.name
    assert f"{layer_penalty_weights('pow2', 2)[0].item():.2f}" in fig.layout.title.text
    panel = hmlc_panel(z, y, tau=0.2, layer_penalty="pow2", column_names=["class", "category"])
    assert panel.figure.to_dict() == fig.to_dict()
    panel.controls["layer_penalty"].value = "linear"  # moving the slider rebuilds the figure
    np.testing.assert_allclose(
        panel.figure.data[0].y, HMLCLoss("hmc", "linear", 0.2).level_terms(z.double(), y).numpy(), rtol=1e-10
    )


def test_gmm_masks_and_attention_figures():
    from hierviz.losses import LevelAttention, fit_gmm_1d, gmm_feature_masks
    from hierviz.viz.hmlc import attention_figure, gmm_masks_figure

    g = torch.Generator().manual_seed(12)
    x = torch.randn(3, 16, generator=g, dtype=torch.float64)
    fig = gmm_masks_figure(x, 2)
    masks = gmm_feature_masks(fit_gmm_1d(x, 2))
    for i in range(3):
        for h in range(2):
            tr = fig.data[2 * i + h]
            np.testing.assert_array_equal(tr.x, np.flatnonzero(masks[h, i].numpy()))
    a = LevelAttention(2, dim=5)(torch.randn(4, 5, dtype=torch.float32)).detach()
    fa = attention_figure(a, ["class", "category"])
    np.testing.assert_allclose(np.array(fa.data[1].z), 5 * a[1].numpy(), rtol=1e-6)


def test_level_tsne_figure_points_and_colours():
    from hierviz.viz.hmlc import level_tsne_figure

    g = torch.Generator().manual_seed(13)
    y = np.array([[i % 3, i % 2] for i in range(20)])
    emb = {"HMCE": torch.randn(20, 6, generator=g).numpy(), "G-HMLC": torch.randn(20, 6, generator=g).numpy()}
    fig = level_tsne_figure(emb, y, ["class", "category"])
    assert len(fig.data) == 2 * (3 + 2)
    assert sum(len(t.x) for t in fig.data) == 2 * 2 * 20
