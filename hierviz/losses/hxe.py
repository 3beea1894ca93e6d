"""HXE: hierarchical cross-entropy on leaf logits (Bertinetto et al. 2020, "Making Better Mistakes", Eqs. 2–4).

Acts on a classifier head's leaf logits ``(B, C)`` in the tree's leaf order; paper 01
§4.3 uses HXE as the end-to-end baseline (method ``"hxe"``). The soft-label loss of the
same paper is :class:`~hierviz.losses.SoftLabelLoss` (:mod:`hierviz.losses.soft_label`).
"""

from __future__ import annotations

from typing import Any

import torch

from ._core import _LeafLogitLoss
from ._validation import _check_real, _check_tree
from .soft_label import SoftLabelLoss  # noqa: F401  (0.1 import path: hierviz.losses.hxe.SoftLabelLoss)

__all__ = ["HXELoss", "SoftLabelLoss"]


class HXELoss(_LeafLogitLoss):
    """HXE, hierarchical cross-entropy: tree-weighted conditional log-likelihoods of leaf logits (Bertinetto 2020).

    A classification loss on ``(B, C)`` logits (``input_kind = "logits"``), Eqs. 2–4 of
    Bertinetto et al. 2020, the end-to-end baseline of paper 01 §4.3.

    The flat softmax over leaves induces node probabilities ``p(n) = Σ_{leaf under n} p(leaf)``;
    along the root → leaf path ``a_0 = root, a_1, …, a_D = y`` the leaf likelihood factorises
    into conditionals ``p(a_ℓ | a_{ℓ−1}) = p(a_ℓ)/p(a_{ℓ−1})`` and::

        HXE(p, y) = − Σ_{ℓ=1}^{D} λ(a_ℓ) log p(a_ℓ | a_{ℓ−1}),   λ(a_ℓ) = exp(−α ℓ)

    i.e. the edge into a node at depth ℓ is discounted by ``exp(−α · depth)`` as in the
    authors' code (``get_exponential_weighting``: larger α puts more weight on coarse
    decisions). By default (``normalize=True``, hierviz ≥ 0.2) the weights are divided by
    their sum over all tree nodes (root included), exactly as the authors' code
    (making-better-mistakes) does, so the loss has the authors' scale. ``normalize=False``
    keeps the scale of cross-entropy, so that α = 0 gives plain cross-entropy (the
    log-ratios telescope); on HAM10000's two-step tree (14 nodes, α = 0.1) that is 11.3×
    the authors' loss, which matters for any learning rate tuned with their code. Computed with log-sum-exp over each node's
    leaves (stable for large logits); leaves shallower than L simply have fewer terms.

    Parameters
    ----------
    tree : LabelTree
        Label tree; logits are in its leaf order.
    alpha : float ≥ 0, default 0.1
        Decay α of the exponential weighting.
    normalize : bool, default True
        Divide the weights by ``Σ_{nodes} exp(−α depth)`` (authors' code); False: the
        cross-entropy scale (hierviz 0.1's default).

    Raises
    ------
    ValueError
        α < 0 or not finite; logits of the wrong shape or with NaN/inf; labels outside the tree.
    TypeError
        Missing logits/labels, non-integer labels.

    Notes
    -----
    Calling convention: ``loss(logits, labels)``: ``logits`` (B, C) float, ``labels`` (B,) long in [0, C-1] →
    scalar tensor ≥ 0 (mean over the batch).

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import HXELoss
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"benign": ["a", "f"], "malignant": ["d", "l"]}})
    >>> logits = torch.randn(4, tree.num_leaves, generator=torch.Generator().manual_seed(0))
    >>> loss = HXELoss(tree, alpha=0.1)
    >>> round(loss(logits, torch.tensor([0, 1, 2, 3])).item(), 3)
    0.222
    >>> HXELoss.input_kind
    'logits'
    """

    def __init__(self, tree: Any, *, alpha: float = 0.1, normalize: bool = True):
        super().__init__()
        self.tree = _check_tree(tree, True, type(self).__name__, needs=("leaf_paths", "num_leaves"))
        self.alpha = _check_real(alpha, "alpha", low=0.0)
        self.normalize = bool(normalize)
        C = int(tree.num_leaves)
        L = int(tree.height)
        leaves = torch.arange(C)
        # (N, C): leaf c lies under node n
        self.register_buffer("leaf_under", tree.ancestor_mask(leaves).T.contiguous(), persistent=False)
        self.register_buffer("paths", tree.leaf_paths.clone(), persistent=False)  # (C, L+1)
        depth = tree.leaf_depth
        edge_valid = torch.arange(1, L + 1)[None, :] <= depth[:, None]  # (C, L)
        self.register_buffer("edge_valid", edge_valid, persistent=False)
        self.register_buffer("node_depth", tree.node_depth.clone(), persistent=False)

    def edge_weights(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """λ for the edges into depth ℓ = 1..L, shape (L,).

        Returns
        -------
        torch.Tensor (L,): ``exp(−α ℓ)``, divided by ``Σ_n exp(−α depth(n))`` when ``normalize``.
        """
        alpha = _check_real(self.alpha, "alpha", low=0.0)
        L = self.paths.shape[1] - 1
        lvl = torch.arange(1, L + 1, dtype=torch.float64, device=self.paths.device)
        w = torch.exp(-alpha * lvl)
        if self.normalize:
            w = w / torch.exp(-alpha * self.node_depth.to(torch.float64)).sum()
        return w.to(dtype)

    def node_log_prob(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """log p(a_ℓ) of each label's path nodes, ℓ = 0..L.

        Parameters
        ----------
        logits : torch.Tensor (B, C)
        labels : LongTensor (B,)

        Returns
        -------
        torch.Tensor (B, L+1); column 0 (root) is 0 up to rounding.
        """
        logp = torch.log_softmax(logits, dim=1)  # (B, C)
        nodes = self.paths[labels]  # (B, L+1)
        mask = self.leaf_under[nodes]  # (B, L+1, C)
        return torch.logsumexp(logp[:, None, :].masked_fill(~mask, float("-inf")), dim=-1)

    def _loss(self, logits: torch.Tensor, lab: torch.Tensor) -> torch.Tensor:
        lp = self.node_log_prob(logits, lab)  # (B, L+1)
        cond = lp[:, 1:] - lp[:, :-1]  # log p(a_ℓ | a_{ℓ-1}), (B, L)
        w = self.edge_weights(logits.dtype)[None, :] * self.edge_valid[lab].to(logits.dtype)
        return -(w * cond).sum(dim=1).mean()
