"""Soft-label cross-entropy on leaf logits (Bertinetto et al. 2020, "Making Better Mistakes", §3.2).

Acts on a classifier head's leaf logits ``(B, C)`` in the tree's leaf order, like
:class:`~hierviz.losses.HXELoss`: the one-hot target of cross-entropy is replaced by a
distribution that puts mass on the leaves near the true one in the tree.
"""

from __future__ import annotations

from typing import Any

import torch

from ._core import _LeafLogitLoss
from ._validation import _check_real, _check_tree

__all__ = ["SoftLabelLoss"]


class SoftLabelLoss(_LeafLogitLoss):
    """Soft-label cross-entropy: cross-entropy against tree-smoothed targets (Bertinetto et al. 2020, Eq. 5).

    A classification loss on leaf logits (``input_kind = "logits"``), usable as a training
    loss in place of cross-entropy or :class:`~hierviz.losses.HXELoss`. The one-hot target
    of the true leaf ``y`` is replaced by the soft target::

        q_j(y) = exp(−β d(y, j)) / Σ_k exp(−β d(y, k)),
        L = −(1/B) Σ_b Σ_j q_j(y_b) log softmax(logits_b)_j

    How ``d`` is measured
        ``d(y, j) = (depth(y) − depth(lca(y, j))) / L = ρ(y, y) − ρ(y, j)``: the height of the
        lowest common ancestor *above the true leaf y*, in edges, divided by the tree height
        ``L = tree.height`` (the largest leaf depth), with ρ = ``tree.rho_matrix`` (paper 01,
        Eq. 4). It is not the tree path distance ``d_T = depth(y) + depth(j) − 2·depth(lca)``
        (``tree.tree_distance_matrix``), which counts the edges down to ``j`` too.
    Balanced trees (every leaf at depth L)
        ``d = 1 − ρ(y, j) = d_T / (2L)``: the LCA height over the tree height, Bertinetto et
        al.'s "height of the LCA" with their code's normalisation (``make_all_soft_labels``
        divides by the largest distance, which is L whenever the root has two or more
        children).
    Unbalanced trees (leaves at different depths)
        ``d`` is measured from the true leaf's own depth, so ``d(y, y) = 0`` for every leaf
        (the true leaf always gets the largest target) and ``d(y, j) ≤ depth(y)/L``. A
        shallow true leaf therefore gets softer targets than a deep one, and ``d`` is not
        symmetric: in ``{"root": {"a": {"a1": ["x", "y"], "a2": ["z"]}, "b": ["u", "v"], "c": None}}``
        (L = 3) the targets of x use d = 0, 1/3, 2/3 for x, y, z and 1 for u, v, c,
        while the targets of the depth-1 leaf c use d = 1/3 for every other leaf.

    β → ∞ gives cross-entropy; β → 0 gives uniform targets over the C leaves. The targets are
    constants (no gradient); the loss is differentiable w.r.t. ``logits`` only. ρ is read
    from ``tree.rho_matrix`` (float32) and the targets are computed in float64, then cast to
    the dtype of ``logits``.

    Parameters
    ----------
    tree : LabelTree
        Label tree; logits are in its leaf order.
    beta : float > 0, default 10.0
        Hardness β (larger: closer to one-hot).

    Raises
    ------
    ValueError
        β ≤ 0 or not finite; logits of the wrong shape (C ≠ ``tree.num_leaves``) or with
        NaN/inf; labels of the wrong shape or outside [0, C-1].
    TypeError
        Missing tree, logits or labels; non-numeric β; non-integer labels.

    Notes
    -----
    Calling convention: ``loss(logits, labels)`` with ``logits`` (B, C) float32/float64 and
    ``labels`` (B,) long leaf indices → scalar tensor ≥ 0 (mean over the batch).

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import SoftLabelLoss
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"a": {"a1": ["x", "y"], "a2": ["z"]}, "b": ["u", "v"], "c": None}})
    >>> tree.leaves
    ['x', 'y', 'z', 'u', 'v', 'c']
    >>> loss = SoftLabelLoss(tree, beta=3.0)
    >>> loss.targets(torch.tensor([0, 5]), torch.float64).round(decimals=3)  # true leaves x (depth 3), c (depth 1)
    tensor([[0.6050, 0.2230, 0.0820, 0.0300, 0.0300, 0.0300],
            [0.1300, 0.1300, 0.1300, 0.1300, 0.1300, 0.3520]], dtype=torch.float64)
    >>> logits = torch.randn(2, tree.num_leaves, generator=torch.Generator().manual_seed(0))
    >>> round(loss(logits, torch.tensor([0, 5])).item(), 3)
    1.668
    """

    def __init__(self, tree: Any, *, beta: float = 10.0):
        super().__init__()
        self.tree = _check_tree(tree, True, type(self).__name__, needs=("rho_matrix", "num_leaves"))
        self.beta = _check_real(beta, "beta", low=0.0, strict=True)
        self.register_buffer("rho", tree.rho_matrix.to(torch.float64).clone(), persistent=False)

    def targets(self, labels: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Soft targets ``q(y)`` of a batch (see the class docstring for ``d``).

        Parameters
        ----------
        labels : LongTensor (B,)
            Leaf indices in [0, C-1], on the device of the module (not re-validated here).
        dtype : torch.dtype, default float32
            Dtype of the result (computed in float64).

        Returns
        -------
        torch.Tensor, shape (B, C)
            Rows summing to 1; the true leaf's entry is the largest of its row.
        """
        beta = _check_real(self.beta, "beta", low=0.0, strict=True)
        # ρ on the diagonal may be < 1 for shallow leaves: measure from the label's own ρ(y, y)
        r = self.rho[labels]
        d = r.gather(1, labels[:, None]) - r
        return torch.softmax(-beta * d, dim=1).to(dtype)

    def _loss(self, logits: torch.Tensor, lab: torch.Tensor) -> torch.Tensor:
        q = self.targets(lab, logits.dtype)
        return -(q * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
