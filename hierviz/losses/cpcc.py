r"""HypStructure's CPCC term: the label tree's distances in the distances between node prototypes.

The cophenetic correlation coefficient (CPCC; Sokal & Rohlf 1962) of an embedding is the
Pearson correlation between the tree distance :math:`d_T(u, v)` of two tree nodes (edges on
the path between them) and the embedding distance of their prototypes. HypStructure (Sinha et
al. 2024) trains it as a batch regulariser, :math:`1 - \mathrm{CPCC}`, over the prototypes of
the batch's classes at every level, with hyperbolic distances; together with its centring
term (:class:`hierviz.losses.CentringLoss`) it is the "optional" third depth regulariser of a
hyperbolic head (docs/hyperbolic-fidelity.md).

How hierviz reads it (:class:`CPCCLoss`):

* **Prototypes** are the batch Fréchet means of the samples below each node
  (:func:`hierviz.losses.radial.node_prototypes`, 3 Karcher steps, as the cone and order
  terms), where HypStructure maps Euclidean class means into the ball or takes a Poincaré
  mean.
* **Which nodes.** Every node with samples in the batch, **the root included** (its
  prototype is the batch's mean, held at the origin by the centring term): the pairs
  (root, n) then ask d(μ_root, μ_n) to grow with the depth of n, so the term also puts depth
  into the radius. A node one of whose children holds all its batch samples has that child's
  prototype; it is left out, as :func:`hierviz.metrics.radius.edge_order` contracts
  single-child chains (HypStructure keeps both, a pair at distance 0 whatever the tree says).
* **Undefined cases** (fewer than two pairs, or every pair at the same tree distance, e.g. a
  batch of one class) give 0 and no gradient, where HypStructure returns the constant 1.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hierviz.hierarchy.synthetic import node_tree_distance
from hierviz.losses._validation import _check_tree
from hierviz.losses.radial import _check_hyperbolic, _flatten, node_prototypes

__all__ = ["CPCCLoss", "weighted_pearson"]


def weighted_pearson(a: torch.Tensor, b: torch.Tensor, w: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    r"""Pearson correlation of ``a`` and ``b`` over the entries where ``w`` is 1 (a fixed-shape mask).

    .. math::
        r = \frac{\sum w\,(a - \bar a)(b - \bar b)}
                 {\sqrt{\max(\sum w\,(a - \bar a)^2, \epsilon)}\ \sqrt{\max(\sum w\,(b - \bar b)^2, \epsilon)}},
        \qquad \bar a = \frac{\sum w\,a}{\sum w}.

    Parameters
    ----------
    a, b : torch.Tensor
        Same shape, floating point.
    w : torch.Tensor
        Same shape, 0/1 (bool or float): which entries count.
    eps : float, default 1e-12
        Floor of each sum of squares (a finite gradient when one side is constant).

    Returns
    -------
    torch.Tensor, scalar
        In [-1, 1]; 0 where one side has no spread over the selected entries.

    Examples
    --------
    >>> import torch
    >>> a = torch.tensor([1.0, 2.0, 3.0, 100.0]); b = torch.tensor([2.0, 4.0, 6.0, -5.0])
    >>> round(float(weighted_pearson(a, b, torch.tensor([1, 1, 1, 0]))), 6)  # the last entry left out
    1.0
    """
    w = w.to(a.dtype)
    n = w.sum().clamp_min(1.0)
    da = (a - (w * a).sum() / n) * w
    db = (b - (w * b).sum() / n) * w
    return (da * db).sum() / ((da * da).sum().clamp_min(eps).sqrt() * (db * db).sum().clamp_min(eps).sqrt())


class CPCCLoss(nn.Module):
    r"""HypStructure's CPCC regulariser, :math:`1 - \mathrm{CPCC}` over the batch's tree-node prototypes.

    .. math::
        L = 1 - \operatorname{corr}_{(u, v) \in \mathcal P}\big(d(\mu_u, \mu_v),\ d_T(u, v)\big),

    with :math:`\mu_n` the batch Fréchet mean of the samples below node :math:`n`,
    :math:`d` the geometry's geodesic distance, :math:`d_T` the tree distance (edges on the
    path) and :math:`\mathcal P` the unordered pairs of distinct nodes present in the batch
    (see the module docstring for which nodes count; the root is one of them).

    Parameters
    ----------
    tree : LabelTree
    geometry : PoincareBall or Lorentz
    steps : int, default 3
        Karcher steps of the batch prototypes.

    Raises
    ------
    ValueError
        A non-hyperbolic geometry, bad shapes or labels.

    Notes
    -----
    Calling convention: ``loss(z, labels)``: ``z`` (B, V, D) or (B, D) on the manifold,
    ``labels`` (B,) leaf indices → scalar in [0, 2] (0: the prototypes' distances are an
    increasing affine function of the tree's; 0 also when ``labels`` is None or the
    correlation is undefined). Fixed shapes throughout (a mask over all N × N node pairs; the
    prototypes from the padded leaf paths under ``torch.compile``), no host read: it compiles
    with ``fullgraph=True`` (``tests/test_compile_losses.py``). Source: Sinha et al. 2024 (HypStructure), their CPCC loss; the reading
    differs where the module docstring says.

    Examples
    --------
    Two leaves opposite each other at radius 1: the root's mean is the origin, so the three
    distances (1, 1, 2) are the tree distances (1, 1, 2) and the correlation is 1.

    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": ["x", "y"]})
    >>> ball = PoincareBall(1.0)
    >>> z = ball.expmap0(torch.tensor([[0.5, 0.0], [-0.5, 0.0]], dtype=torch.float64))  # d(0, z) = 1
    >>> abs(float(CPCCLoss(tree, ball)(z, torch.tensor([0, 1])))) < 1e-9
    True
    """

    input_kind = "embeddings"

    def __init__(self, tree: Any, geometry: Any, steps: int = 3) -> None:
        super().__init__()
        _check_hyperbolic(geometry, "CPCCLoss")
        _check_tree(tree, True, "CPCCLoss", needs=("ancestor_matrix", "leaf_paths", "num_nodes", "num_leaves"))
        self.tree, self.geometry, self.steps = tree, geometry, int(steps)
        N = tree.num_nodes
        self.register_buffer("ancestors", tree.ancestor_matrix.clone(), persistent=False)  # (C, N)
        self.register_buffer("leaf_paths", tree.leaf_paths.clone(), persistent=False)  # (C, L + 1)
        self.register_buffer("tree_distance", torch.from_numpy(node_tree_distance(tree)).double(), persistent=False)
        self.register_buffer("upper", torch.ones(N, N, dtype=torch.bool).triu(1), persistent=False)
        keep = tree.node_depth >= 1
        self.register_buffer("edge_parent", tree.parent_index.clone()[keep], persistent=False)
        self.register_buffer("edge_child", torch.arange(N)[keep], persistent=False)

    def nodes_used(self, counts: torch.Tensor) -> torch.Tensor:
        """(N,) bool: nodes with batch samples, less those that share every sample with one child."""
        p, q = self.edge_parent.to(counts.device), self.edge_child.to(counts.device)
        same = ((counts[q] == counts[p]) & (counts[q] > 0)).to(torch.int64)
        shadowed = torch.zeros_like(counts).scatter_reduce(0, p, same, "amax")
        return (counts > 0) & (shadowed == 0)

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The CPCC loss of one batch (see the class docstring)."""
        if labels is None:
            return z.sum() * 0.0
        x, y = _flatten(z, labels, self.geometry, self.tree.num_leaves, "CPCCLoss")
        protos, counts = node_prototypes(x, y, self.ancestors, self.geometry, self.steps, self.leaf_paths)
        used = self.nodes_used(counts)
        pairs = used[:, None] & used[None, :] & self.upper.to(x.device)
        d = self.geometry.pairwise_dist(protos)
        t = self.tree_distance.to(device=x.device, dtype=d.dtype)
        t_mean = (pairs * t).sum() / pairs.sum().clamp_min(1)
        defined = (pairs.sum() >= 2) & ((pairs * (t - t_mean).abs()).sum() > 0)
        return torch.where(defined, 1.0 - weighted_pearson(d, t, pairs), d.sum() * 0.0)

    def extra_repr(self) -> str:
        return f"geometry={type(self.geometry).__name__}, steps={self.steps}"
