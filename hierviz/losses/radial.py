r"""Depth in the radius: entailment cones and a centring term that any hyperbolic method can add.

A contrastive loss on hyperbolic distances does not say where in the radius a class should
sit; at scale it pushes every point outwards to the bound, on a CPU budget it leaves them
near the flat origin (docs/hyperbolic-fidelity.md). Two regularisers put the label tree
into the radius explicitly:

* :class:`EntailmentConeLoss` - hyperbolic entailment cones (Ganea et al., ICML 2018,
  "Hyperbolic entailment cones"; as used by MERU, Desai et al., ICML 2023, and HyCoCLIP,
  Pal et al., ICLR 2025). A point :math:`x` owns the cone of half-aperture

  .. math::
      \psi(x) = \arcsin\!\Big(\frac{2K}{\sinh(\sqrt c\, d(0, x))}\Big)
      \;=\; \arcsin\!\Big(K\,\frac{1 - c\|x\|^2}{\sqrt c\,\|x\|}\Big)\ \text{(ball)}
      \;=\; \arcsin\!\Big(\frac{2K}{\sqrt c\,\|x_{1:}\|}\Big)\ \text{(hyperboloid)},

  (Ganea et al. Eq. 25-26 with :math:`\psi` clamped at :math:`\pi/2`; MERU's
  ``half_aperture``), and :math:`y` is entailed by :math:`x` when the *exterior angle*
  :math:`\Xi(x, y)` - the angle at :math:`x` between the geodesic to :math:`y` and the
  geodesic continuing away from the origin - is at most :math:`\psi(x)` (Ganea et al.
  Eq. 28; MERU's ``oxy_angle``). The energy is :math:`E(x, y) = \max(0, \Xi(x,y) - \psi(x))`.
  Cones narrow with the radius, so a child inside its parent's cone lies farther out.
* :class:`RadialOrderLoss` - the target stated directly: a hinge
  :math:`\max(0,\ d(0, \mu_p) - d(0, \mu_q) + m)` on every parent → child edge of the
  batch's node prototypes, so each parent prototype sits at least ``m`` nearer the origin
  than each child's (the metric ``edge_order`` of :mod:`hierviz.metrics.radius` counts the
  same edges on the test prototypes).
* :class:`CentringLoss` - HypStructure's centring term (Sinha et al., NeurIPS 2024): the
  norm of the batch's mean tangent vector at the origin, which keeps the root of the tree
  (the mean of everything) at the origin.

**Which pairs, which apices.** Both terms read a batch ``z`` of shape (B, V, D) (or
(B, D)) with leaf labels. Each node's prototype :math:`\mu_n` is the *batch* Fréchet mean
(:meth:`Geometry.group_mean`, 3 Karcher steps, paper 01 Eq. 3) of the samples below it -
no state to keep, and the gradient reaches the samples through the means. A mean cannot
be its own cone's apex: its samples (and its children's means) surround it, their log
vectors sum to zero at :math:`\mu_n`, so some of them always point inwards (exterior angle
≥ π/2) and the constraint could only be met by putting every node at the origin. The cone
of node :math:`n` is therefore rooted at its *apex*
:math:`a_n = \exp_0(\kappa \log_0 \mu_n)`, the point a fraction κ (default 1/2) of the way
from the origin to :math:`\mu_n`: "a concept sits inward of its examples". The cone term
averages :math:`E(a_p, a_q)` over the tree's edges below depth 1 whose ends have
different samples in the batch (a parent with one child present has the child's
prototype: that edge says nothing) and :math:`E(a_{y_i}, z_i)` over the samples. It is
zero when every child's prototype lies farther out than its parent's, inside the
parent's cone, and every sample lies outward of its leaf's apex within that cone - the
tree drawn in the radius. The edges out of the root are left out: the root's prototype
sits at the origin (the centring term), where every direction is outward.

The ball and the hyperboloid are isometric, and :math:`\psi` and :math:`\Xi` are intrinsic,
so the two closed forms agree through :meth:`Lorentz.to_ball` (tested).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hierviz.geometry._checks import scalar

# split out by responsibility and re-exported here, the public import path
from hierviz.losses._batch_nodes import _check_depth_z, _flatten, _register_edge_buffers, node_prototypes
from hierviz.losses._radial_forms import (
    _EPS,  # noqa: F401
    _check_hyperbolic,
    _has_time,  # noqa: F401
    _margin,  # noqa: F401
    _sqrt_c,  # noqa: F401
    cone_energy,
    cone_exterior_angle,
    cone_half_aperture,
    origin_radius,
)
from hierviz.losses._validation import _check_tree

__all__ = [
    "cone_half_aperture",
    "cone_exterior_angle",
    "cone_energy",
    "EntailmentConeLoss",
    "RadialOrderLoss",
    "RadialDepthLoss",
    "CentringLoss",
    "origin_radius",
]


class EntailmentConeLoss(nn.Module):
    r"""Entailment cones over batch node prototypes (parent → child) and leaf prototype → sample.

    .. math::
        L = \frac{1}{|\mathcal E|}\sum_{(p, q) \in \mathcal E} E(a_p, a_q)
          + \frac1n\sum_{i} E(a_{y_i}, z_i),
        \qquad a_n = \exp_0(\kappa \log_0 \mu_n),

    with :math:`\mu_n` the batch Fréchet mean of the samples below node :math:`n` and
    :math:`\mathcal E` the edges below depth 1 whose ends differ in the batch (module
    docstring). MERU weighs its entailment term 0.2; ``loss.cone_weight`` sets ours.

    Parameters
    ----------
    tree : LabelTree
    geometry : PoincareBall or Lorentz
    aperture : float, default 0.1
        ``K`` of :func:`cone_half_aperture` (``loss.cone_aperture``).
    apex : float, default 0.5
        κ in (0, 1]: where the cone of a node starts, as a fraction of its prototype's
        tangent norm at the origin.
    steps : int, default 3
        Karcher steps of the batch prototypes.

    Raises
    ------
    ValueError
        A non-hyperbolic geometry, ``aperture <= 0``, ``apex`` outside (0, 1], bad shapes
        or labels.

    Notes
    -----
    Calling convention: ``loss(z, labels)``: ``z`` (B, V, D) or (B, D) on the manifold,
    ``labels`` (B,) leaf indices → scalar ≥ 0 (0 when ``labels`` is None or the batch has no
    pair).

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1"]}})
    >>> ball = PoincareBall(1.0)
    >>> loss = EntailmentConeLoss(tree, ball, aperture=0.5)
    >>> def at(r, a):  # a point at geodesic radius r, angle a
    ...     a = torch.tensor(a, dtype=torch.float64)
    ...     r = torch.as_tensor(r, dtype=torch.float64).reshape(-1, 1)
    ...     return ball.expmap0(r / 2 * torch.stack([a.cos(), a.sin()], -1))
    >>> y = torch.tensor([0, 0, 1, 1, 2, 2])
    >>> tree_like = torch.stack([at(3.0, [0.0, 0.0, 0.6, 0.6, 3.0, 3.0])] * 2, 1)  # a1, a2 fan out
    >>> round(float(loss(tree_like, y)), 4)
    0.0
    >>> inward = torch.stack([at([3.0, 3.0, 0.5, 0.5, 3.0, 3.0], [0.0, 0.0, 0.1, 0.1, 3.0, 3.0])] * 2, 1)
    >>> round(float(loss(inward, y)), 2)  # a2 nearer the origin than its parent a
    0.77
    """

    input_kind = "embeddings"

    def __init__(self, tree: Any, geometry: Any, aperture: float = 0.1, apex: float = 0.5, steps: int = 3) -> None:
        super().__init__()
        _check_hyperbolic(geometry, "EntailmentConeLoss")
        _check_tree(
            tree, True, "EntailmentConeLoss", needs=("ancestor_matrix", "leaf_paths", "num_nodes", "num_leaves")
        )
        if isinstance(aperture, bool) or not isinstance(aperture, (int, float)) or not (aperture > 0):
            raise ValueError(f"aperture (loss.cone_aperture) must be a number > 0 (MERU: 0.1), got {aperture!r}")
        if isinstance(apex, bool) or not isinstance(apex, (int, float)) or not (0 < apex <= 1):
            raise ValueError(f"apex must be a number in (0, 1] (1/2: halfway to the prototype), got {apex!r}")
        self.tree, self.geometry = tree, geometry
        self.aperture, self.apex, self.steps = float(aperture), float(apex), int(steps)
        # edges below depth 1 only: the root's prototype sits at the origin
        _register_edge_buffers(self, tree, min_depth=2)
        self.register_buffer("leaf_node", tree.leaf_node.clone(), persistent=False)
        self.root = int(tree.node_index[tree.root])

    def prototypes(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch Fréchet mean and sample count of every node (root included).

        Parameters
        ----------
        z : torch.Tensor, shape (n, D)
        labels : LongTensor, shape (n,)

        Returns
        -------
        protos : torch.Tensor, shape (N, D)
            Nodes without samples hold the origin.
        counts : LongTensor, shape (N,)
        """
        return node_prototypes(z, labels, self.ancestors, self.geometry, self.steps, self.leaf_paths)

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The cone loss of one batch (see the class docstring)."""
        if labels is None:
            return z.sum() * 0.0
        x, y = _flatten(z, labels, self.geometry, self.tree.num_leaves, "EntailmentConeLoss")
        protos, counts = self.prototypes(x, y)
        apices = self.geometry.expmap0(self.apex * self.geometry.logmap0(protos))
        p, q = self.edge_parent.to(x.device), self.edge_child.to(x.device)
        ok = (counts[q] > 0) & (counts[p] > counts[q])
        total = cone_energy(apices[self.leaf_node.to(x.device)[y]], x, self.geometry, self.aperture).mean()
        if torch.compiler.is_compiling():  # fixed shapes: every edge, the absent ones masked (finite at the origin)
            e = cone_energy(apices[p], apices[q], self.geometry, self.aperture)
            return total + (e * ok).sum() / ok.sum().clamp_min(1)
        if bool(ok.any()):
            total = total + cone_energy(apices[p[ok]], apices[q[ok]], self.geometry, self.aperture).mean()
        return total

    def extra_repr(self) -> str:
        return f"geometry={type(self.geometry).__name__}, K={self.aperture:g}, apex={self.apex:g}, steps={self.steps}"


class RadialOrderLoss(nn.Module):
    r"""A hinge on the radius order of batch node prototypes: every parent nearer the origin than its children.

    .. math::
        L = \frac{1}{|\mathcal E|}\sum_{(p, q) \in \mathcal E}
            \max\big(0,\ d(0, \mu_p) - d(0, \mu_q) + m\big),

    with :math:`\mu_n` the batch Fréchet mean of the samples below node :math:`n` (as in
    :class:`EntailmentConeLoss`) and :math:`\mathcal E` the parent → child edges whose ends
    have different samples in the batch - the root's edges included (the root's prototype is
    the mean of the batch). A parent with one child present has that child's prototype; its
    edge says nothing and is left out, as the metric ``edge_order`` contracts single-child
    chains. Where the cone term asks for a child inside its parent's cone (direction and
    radius), this term asks for the radius order alone, the quantity the depth targets
    (``edge_order``) measure; a hyperbolic mean of angularly spread children already falls inward of them,
    so the hinge mostly acts on edges whose children cluster.

    Parameters
    ----------
    tree : LabelTree
    geometry : PoincareBall or Lorentz
    margin : float, default 0.1
        ``m`` (``loss.order_margin``), in geodesic units: how much nearer the origin a parent
        prototype must sit than each child's.
    steps : int, default 3
        Karcher steps of the batch prototypes.

    Raises
    ------
    ValueError
        A non-hyperbolic geometry, ``margin < 0``, bad shapes or labels.

    Notes
    -----
    Calling convention: ``loss(z, labels)``: ``z`` (B, V, D) or (B, D) on the manifold,
    ``labels`` (B,) leaf indices → scalar ≥ 0 (0 when ``labels`` is None or no edge has two
    different ends in the batch). Not from a paper: the hinge form of the order targets of
    docs/hyperbolic-fidelity.md.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> ball = PoincareBall(1.0)
    >>> def at(r, a):  # points at geodesic radius r, angle a
    ...     a = torch.tensor(a, dtype=torch.float64)
    ...     return ball.expmap0(r / 2 * torch.stack([a.cos(), a.sin()], -1))
    >>> y = torch.tensor([0, 1, 2, 3])
    >>> fanned = at(2.0, [0.0, 1.0, 3.0, 4.0])  # siblings 1 rad apart: each parent's mean lies inward
    >>> float(RadialOrderLoss(tree, ball, margin=0.1)(fanned, y))
    0.0
    >>> float(RadialOrderLoss(tree, ball, margin=0.0)(at(2.0, [0.0, 0.0, 3.0, 3.0]), y))  # a = a1 = a2: ties
    0.0
    >>> # the four leaf edges tie (hinge 0.1 each), the root's two hold: 4 x 0.1 / 6 edges
    >>> round(float(RadialOrderLoss(tree, ball, margin=0.1)(at(2.0, [0.0, 0.0, 3.0, 3.0]), y)), 4)
    0.0667
    """

    input_kind = "embeddings"

    def __init__(self, tree: Any, geometry: Any, margin: float = 0.1, steps: int = 3) -> None:
        super().__init__()
        _check_hyperbolic(geometry, "RadialOrderLoss")
        _check_tree(tree, True, "RadialOrderLoss", needs=("ancestor_matrix", "leaf_paths", "num_nodes", "num_leaves"))
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not (margin >= 0):
            raise ValueError(f"margin (loss.order_margin) must be a number >= 0 (geodesic units), got {margin!r}")
        self.tree, self.geometry = tree, geometry
        self.margin, self.steps = float(margin), int(steps)
        _register_edge_buffers(self, tree)

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The radial-order loss of one batch (see the class docstring)."""
        if labels is None:
            return z.sum() * 0.0
        x, y = _flatten(z, labels, self.geometry, self.tree.num_leaves, "RadialOrderLoss")
        protos, counts = node_prototypes(x, y, self.ancestors, self.geometry, self.steps, self.leaf_paths)
        p, q = self.edge_parent.to(x.device), self.edge_child.to(x.device)
        ok = (counts[q] > 0) & (counts[p] > counts[q])
        if torch.compiler.is_compiling():  # fixed shapes: every edge, the absent ones masked
            r = origin_radius(protos, self.geometry)
            return (torch.relu(r[p] - r[q] + self.margin) * ok).sum() / ok.sum().clamp_min(1)
        if not bool(ok.any()):
            return z.sum() * 0.0
        r = origin_radius(protos, self.geometry)
        return torch.relu(r[p[ok]] - r[q[ok]] + self.margin).mean()

    def extra_repr(self) -> str:
        return f"geometry={type(self.geometry).__name__}, margin={self.margin:g}, steps={self.steps}"


class RadialDepthLoss(nn.Module):
    r"""Each batch node prototype at the geodesic radius its depth asks for: :math:`d(0, \mu_n) \approx \ell\,\mathrm{depth}(n)`.

    .. math::
        L = \frac{1}{|\mathcal N|}\sum_{n \in \mathcal N}
            \big(d(0, \mu_n) - \ell\,\mathrm{depth}(n)\big)^2,

    with :math:`\mu_n` the batch Fréchet mean of the samples below node :math:`n` (as in
    :class:`EntailmentConeLoss`) and :math:`\mathcal N` the non-root nodes with samples in the
    batch, less those whose batch samples all lie under one child (a single-child chain such as
    20 Newsgroups' ``alt → alt.atheism``: its prototype *is* the child's, so only the child's
    target applies, as the metrics contract such chains). This is the radial half of Sarkar's
    construction of a tree in the hyperbolic plane (Sarkar 2011; Sala et al. 2018, §3), which
    puts every node at distance ``ℓ · depth`` from the root and spreads siblings by angle: here
    the angles are left to the contrastive loss, and only the radius is asked for. Unlike the
    hinge of :class:`RadialOrderLoss`, which orders each parent against its own children, it
    also orders nodes of different branches (a depth-2 leaf such as ``alt.atheism`` nearer the
    origin than a depth-3 leaf such as ``rec.sport.hockey``), which is what the depth ranking
    ``radius_depth_spearman`` measures, and it sets the scale of the radius, so leaves sit
    ``ℓ`` per level beyond the top-level classes (``radius_gap``).

    Parameters
    ----------
    tree : LabelTree
    geometry : PoincareBall or Lorentz
    step : float, default 1.0
        ``ℓ`` (``loss.depth_step``), geodesic units per tree level (> 0). The deepest target,
        ``ℓ · L``, should stay well inside the head's radius bound.
    steps : int, default 3
        Karcher steps of the batch prototypes.

    Raises
    ------
    ValueError
        A non-hyperbolic geometry, ``step <= 0``, bad shapes or labels.

    Notes
    -----
    Calling convention: ``loss(z, labels)``: ``z`` (B, V, D) or (B, D) on the manifold,
    ``labels`` (B,) leaf indices → scalar ≥ 0, in squared geodesic units (0 when ``labels`` is
    None). Not from one of the course's five papers: the depth targets of
    docs/hyperbolic-fidelity.md stated as a loss, after Sarkar's construction.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1"]}})  # b -> b1: a chain
    >>> ball = PoincareBall(1.0)
    >>> def at(r, a):  # points at geodesic radius r, angle a
    ...     a = torch.tensor(a, dtype=torch.float64)
    ...     r = torch.as_tensor(r, dtype=torch.float64).reshape(-1, 1)
    ...     return ball.expmap0(r / 2 * torch.stack([a.cos(), a.sin()], -1))
    >>> y = torch.tensor([0, 1, 2])
    >>> loss = RadialDepthLoss(tree, ball, step=1.0)
    >>> z = at([2.0, 2.0, 2.0], [0.0, 0.0, 3.0])  # a1 = a2: a's prototype sits at radius 2, not 1
    >>> round(float(loss(z, y)), 4)  # nodes a (2 - 1)^2, a1 0, a2 0, b1 0; b is b1's chain: left out
    0.25
    """

    input_kind = "embeddings"

    def __init__(self, tree: Any, geometry: Any, step: float = 1.0, steps: int = 3) -> None:
        super().__init__()
        _check_hyperbolic(geometry, "RadialDepthLoss")
        if isinstance(step, bool) or not isinstance(step, (int, float)) or not (0 < step < float("inf")):
            raise ValueError(f"step (loss.depth_step) must be a number > 0 (geodesic units per level), got {step!r}")
        self.tree, self.geometry = tree, geometry
        self.step, self.steps = float(step), int(steps)
        _register_edge_buffers(self, tree)
        self.register_buffer("depth", tree.node_depth.clone().to(torch.float64), persistent=False)

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The radial-depth loss of one batch (see the class docstring)."""
        if labels is None:
            return z.sum() * 0.0
        x, y = _flatten(z, labels)
        protos, counts = node_prototypes(x, y, self.ancestors, self.geometry, self.steps, self.leaf_paths)
        p, q = self.edge_parent.to(x.device), self.edge_child.to(x.device)
        # a node whose batch samples all lie under one child has that child's prototype: a chain, left out
        chain = torch.zeros_like(counts).index_add_(0, p, ((counts[q] == counts[p]) & (counts[q] > 0)).long()) > 0
        depth = self.depth.to(x.device)
        use = (counts > 0) & ~chain & (depth > 0)
        target = (self.step * depth).to(x.dtype)
        err = (origin_radius(protos, self.geometry) - target) ** 2
        return (err * use).sum() / use.sum().clamp_min(1)

    def extra_repr(self) -> str:
        return f"geometry={type(self.geometry).__name__}, step={self.step:g}, steps={self.steps}"


class CentringLoss(nn.Module):
    r"""HypStructure's centring term: the norm of the batch's mean tangent vector at the origin.

    .. math::
        L = \Big\|\frac1n\sum_i \log_0(z_i)\Big\|

    (Sinha et al., NeurIPS 2024, weight ≈ 0.01 there). It keeps the mean of all
    embeddings - the root of the tree - at the origin, so the depth-1 classes spread around
    it and the radius is free to carry depth.

    Parameters
    ----------
    geometry : PoincareBall or Lorentz

    Raises
    ------
    ValueError
        A non-hyperbolic geometry or bad shapes.

    Notes
    -----
    Calling convention: ``loss(z, labels)``: ``z`` (B, V, D) or (B, D); ``labels`` unused.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall(1.0)
    >>> z = ball.expmap0(torch.tensor([[0.3, 0.0], [0.1, 0.0]], dtype=torch.float64))
    >>> round(float(CentringLoss(ball)(z, None)), 6)  # |mean(0.3, 0.1)|
    0.2
    """

    input_kind = "embeddings"

    def __init__(self, geometry: Any) -> None:
        super().__init__()
        _check_hyperbolic(geometry, "CentringLoss")
        self.geometry = geometry

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """The centring loss of one batch."""
        x = _check_depth_z(z, self.geometry, "CentringLoss").reshape(-1, z.shape[-1])
        v = self.geometry.logmap0(x)
        return v.mean(0).norm()

    def extra_repr(self) -> str:
        return f"geometry={type(self.geometry).__name__}, c={scalar(self.geometry.c):g}"
