"""SoftLabelLoss as a training loss (Bertinetto et al. 2020, soft labels): loop reference, dtypes, gradcheck.

The reference recomputes the soft targets from the tree's parent links in plain Python
(d(y, j) = (depth(y) − depth(lca(y, j))) / L, the LCA height above the true leaf over the
tree height), independently of ``tree.rho_matrix``.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from hierviz.losses import Objective, SoftLabelLoss


def ancestors(tree, leaf: str) -> list[str]:
    """Root → leaf path of node names, from the parent links."""
    path = [leaf]
    while tree.parent(path[-1]) is not None:
        path.append(tree.parent(path[-1]))
    return path[::-1]


def ref_soft_label(tree, logits: torch.Tensor, labels: torch.Tensor, beta: float) -> float:
    """Loop-based soft-label cross-entropy, written plainly."""
    leaves = tree.leaves
    paths = [ancestors(tree, leaf) for leaf in leaves]
    L = max(len(p) - 1 for p in paths)
    total = 0.0
    for row, y in zip(logits.tolist(), labels.tolist()):
        py = paths[y]
        d = []
        for pj in paths:
            common = 0
            while common < min(len(py), len(pj)) and py[common] == pj[common]:
                common += 1
            d.append(((len(py) - 1) - (common - 1)) / L)  # depth(y) − depth(lca), over L
        w = [math.exp(-beta * dj) for dj in d]
        q = [wj / sum(w) for wj in w]
        m = max(row)
        lse = m + math.log(sum(math.exp(v - m) for v in row))
        total += -sum(qj * (v - lse) for qj, v in zip(q, row))
    return total / len(labels)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("tree_name", ["breakhis_tree", "unbalanced_tree"])
def test_soft_label_matches_loop_reference(request, tree_name, dtype):
    tree = request.getfixturevalue(tree_name)
    C = tree.num_leaves
    g = torch.Generator().manual_seed(3)
    logits = 2 * torch.randn(9, C, generator=g, dtype=dtype)
    y = torch.randint(0, C, (9,), generator=g)
    y[:C] = torch.arange(C)[:9]  # every leaf (the shallow one included) is a true label at least once
    for beta in (0.5, 3.0, 10.0):
        val = SoftLabelLoss(tree, beta=beta)(logits, y)
        assert val.dtype == dtype and val.shape == ()
        ref = ref_soft_label(tree, logits.double(), y, beta)
        # ρ is stored as float32 in the tree, so the targets carry ~1e-8 relative rounding
        assert val.item() == pytest.approx(ref, rel=1e-6 if dtype == torch.float64 else 1e-5)


def test_soft_label_unbalanced_targets_by_hand(unbalanced_tree):
    """x (depth 3): d = 0, 1/3, 2/3 for x, y, z and 1 for u, v, c; c (depth 1): d = 1/3 to every other leaf."""
    t = unbalanced_tree
    assert t.leaves == ["x", "y", "z", "u", "v", "c"] and t.height == 3
    beta = 3.0
    q = SoftLabelLoss(t, beta=beta).targets(torch.tensor([0, 5, 3]), torch.float64)
    d_rows = [[0, 1 / 3, 2 / 3, 1, 1, 1], [1 / 3] * 5 + [0], [2 / 3, 2 / 3, 2 / 3, 0, 1 / 3, 2 / 3]]
    for row, d in zip(q.tolist(), d_rows):
        w = [math.exp(-beta * v) for v in d]
        assert row == pytest.approx([v / sum(w) for v in w], rel=1e-6)
    assert torch.equal(q.argmax(1), torch.tensor([0, 5, 3]))  # the true leaf keeps the largest target


def test_soft_label_gradcheck_float64(unbalanced_tree):
    logits = torch.randn(
        5, unbalanced_tree.num_leaves, dtype=torch.float64, generator=torch.Generator().manual_seed(4)
    ).requires_grad_(True)
    y = torch.tensor([0, 2, 3, 5, 5])
    loss = SoftLabelLoss(unbalanced_tree, beta=2.0)
    assert torch.autograd.gradcheck(lambda t: loss(t, y), (logits,), eps=1e-6, atol=1e-8)
    # analytic gradient of −Σ q log softmax: (softmax − q) / B
    (g,) = torch.autograd.grad(loss(logits, y), logits)
    expected = (torch.softmax(logits.detach(), 1) - loss.targets(y, torch.float64)) / 5
    torch.testing.assert_close(g, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_soft_label_trains_a_linear_head(breakhis_tree, dtype):
    """Used as a training loss through an Objective (routed by input_kind): a few SGD steps lower it."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(32, 6, generator=g, dtype=dtype)
    y = torch.randint(0, breakhis_tree.num_leaves, (32,), generator=g)
    head = torch.nn.Linear(6, breakhis_tree.num_leaves).to(dtype)
    obj = Objective("soft", {"soft": SoftLabelLoss(breakhis_tree, beta=4.0)}, requires_logits=True)
    opt = torch.optim.SGD(head.parameters(), lr=0.5)
    first = None
    for _ in range(20):
        loss, terms = obj(None, y, logits=head(x))
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.dtype == dtype and set(terms) == {"soft"}
    assert loss.item() < first
    # large β is plain cross-entropy
    logits = head(x).detach()
    assert SoftLabelLoss(breakhis_tree, beta=300.0)(logits, y).item() == pytest.approx(
        F.cross_entropy(logits, y).item(), rel=1e-5
    )


def test_soft_label_bad_input(breakhis_tree):
    loss = SoftLabelLoss(breakhis_tree)
    with pytest.raises(ValueError, match=r"logits must have shape \(B, C\) with C = 8"):
        loss(torch.zeros(4, 7), torch.tensor([0, 1, 2, 3]))
    with pytest.raises(ValueError, match=r"labels has values outside \[0, 7\]"):
        loss(torch.zeros(4, 8), torch.tensor([0, 1, 2, 8]))
    with pytest.raises(TypeError, match="labels must hold integer"):
        loss(torch.zeros(2, 8), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="beta must be > 0"):
        SoftLabelLoss(breakhis_tree, beta=-1.0)
    with pytest.raises(TypeError, match="SoftLabelLoss needs a LabelTree"):
        SoftLabelLoss(None)
