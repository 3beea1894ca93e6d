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

import math
from typing import Any

import torch
from torch import nn

from hierviz.geometry._checks import scalar
from hierviz.losses._validation import _check_labels, _check_tree

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

_EPS = 1e-6


def _margin(t: torch.Tensor) -> float:
    """Distance from ±1 at which ``asin``/``acos`` arguments are clamped (finite gradients)."""
    return 1e-12 if t.dtype == torch.float64 else 1e-7


def _check_hyperbolic(geometry: Any, who: str) -> None:
    if not getattr(geometry, "hyperbolic", False):
        raise ValueError(
            f"geometry: {who} needs a hyperbolic geometry (Poincaré or Lorentz), got {geometry!r}; "
            "on the unit sphere every point has radius 1"
        )


def _has_time(geometry: Any) -> bool:
    """True for a model with a time coordinate (the hyperboloid: d+1 numbers per point), read from
    the geometry's ``point_dim``, never from its name."""
    return geometry.point_dim(1) != 1


def _sqrt_c(geometry: Any, like: torch.Tensor) -> torch.Tensor:
    c = geometry.c
    if isinstance(c, torch.Tensor):
        return c.to(like.dtype).sqrt()
    return torch.tensor(math.sqrt(float(c)), dtype=like.dtype, device=like.device)


def cone_half_aperture(x: torch.Tensor, geometry: Any, K: float = 0.1, eps: float = _EPS) -> torch.Tensor:
    r"""Half-aperture :math:`\psi(x)` of the entailment cone at ``x`` (Ganea et al. Eq. 26; MERU).

    Parameters
    ----------
    x : torch.Tensor, shape (..., D)
        Points on the ball (D = d) or the hyperboloid (D = d + 1, time first).
    geometry : PoincareBall or Lorentz
    K : float, default 0.1
        Aperture constant (MERU and HyCoCLIP: 0.1); the cone is a half-space
        (:math:`\psi = \pi/2`) within :math:`\sinh(\sqrt c\,d(0,x)) \le 2K`.
    eps : float
        Floor of the radius in the denominator (the origin); the ``asin`` argument is
        clamped 1e-7 (float32) / 1e-12 (float64) below 1.

    Returns
    -------
    torch.Tensor, shape (...,), in (0, π/2)

    Raises
    ------
    ValueError
        A non-hyperbolic geometry, or ``K <= 0``.

    Examples
    --------
    >>> import math, torch
    >>> from hierviz.geometry import PoincareBall
    >>> x = torch.tensor([[0.5, 0.0]], dtype=torch.float64)  # K (1 - |x|^2)/|x| = 0.15
    >>> round(float(cone_half_aperture(x, PoincareBall(1.0))[0]), 6) == round(math.asin(0.15), 6)
    True
    """
    _check_hyperbolic(geometry, "cone_half_aperture")
    if not (float(K) > 0):
        raise ValueError(f"K (loss.cone_aperture) must be > 0, got {K!r}")
    sc = _sqrt_c(geometry, x)
    if _has_time(geometry):
        arg = 2.0 * K / (sc * x[..., 1:].norm(dim=-1)).clamp_min(eps)
    else:
        s = (sc * x.norm(dim=-1)).clamp_min(eps)
        arg = K * (1.0 - s.square()) / s
    m = _margin(arg)
    return torch.asin(arg.clamp(-1.0 + m, 1.0 - m))


def cone_exterior_angle(x: torch.Tensor, y: torch.Tensor, geometry: Any, eps: float = _EPS) -> torch.Tensor:
    r"""Exterior angle :math:`\Xi(x, y)` at ``x`` between the origin→x geodesic extended and x→y.

    Ball (Ganea et al. Eq. 28, at :math:`\sqrt c\,x, \sqrt c\,y`):

    .. math::
        \cos\Xi = \frac{\langle x,y\rangle(1+\|x\|^2) - \|x\|^2(1+\|y\|^2)}
        {\|x\|\,\|x-y\|\sqrt{1+\|x\|^2\|y\|^2-2\langle x,y\rangle}};

    hyperboloid (MERU's ``oxy_angle``), with :math:`\ell = c\langle x, y\rangle_L`:
    :math:`\cos\Xi = (y_0 + \ell\,x_0)/(\|x_{1:}\|\sqrt{\ell^2-1})`.

    Parameters
    ----------
    x, y : torch.Tensor, shape (..., D)
        Points (broadcastable) on the geometry's manifold.
    geometry : PoincareBall or Lorentz
    eps : float
        Floor of the denominators; the ``acos`` argument is clamped 1e-7 (float32) /
        1e-12 (float64) inside [-1, 1] (finite gradients).

    Returns
    -------
    torch.Tensor, shape (...,), in [0, π]
        0 when ``y`` lies straight outward of ``x``, π when straight inward.

    Examples
    --------
    >>> import math, torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall(1.0)
    >>> x = torch.tensor([0.3, 0.0], dtype=torch.float64)
    >>> [round(float(cone_exterior_angle(x, torch.tensor(y, dtype=torch.float64), ball)), 4)
    ...  for y in ([0.6, 0.0], [0.1, 0.0])]  # outward 0, inward pi
    [0.0, 3.1416]
    """
    _check_hyperbolic(geometry, "cone_exterior_angle")
    sc = _sqrt_c(geometry, x)
    if _has_time(geometry):
        c = sc.square()
        x0, xs = x[..., 0], x[..., 1:]
        y0, ys = y[..., 0], y[..., 1:]
        ell = c * ((xs * ys).sum(-1) - x0 * y0)
        num = y0 + ell * x0
        den = xs.norm(dim=-1) * (ell.square() - 1.0).clamp_min(eps).sqrt()
        cos = num / den.clamp_min(eps)
    else:
        x, y = sc * x, sc * y
        xy = (x * y).sum(-1)
        nx2, ny2 = x.square().sum(-1), y.square().sum(-1)
        num = xy * (1.0 + nx2) - nx2 * (1.0 + ny2)
        den = nx2.clamp_min(eps**2).sqrt() * (x - y).norm(dim=-1) * (1.0 + nx2 * ny2 - 2.0 * xy).clamp_min(eps).sqrt()
        cos = num / den.clamp_min(eps)
    m = _margin(cos)
    return torch.acos(cos.clamp(-1.0 + m, 1.0 - m))


def cone_energy(x: torch.Tensor, y: torch.Tensor, geometry: Any, K: float = 0.1) -> torch.Tensor:
    r"""Entailment-cone violation :math:`E(x, y) = \max(0, \Xi(x, y) - \psi(x))` (Ganea et al. Eq. 32).

    Parameters
    ----------
    x : torch.Tensor, shape (..., D)
        The general concepts (parents: the cone apices).
    y : torch.Tensor, shape (..., D)
        The specific ones (children), broadcastable with ``x``.
    geometry : PoincareBall or Lorentz
    K : float, default 0.1

    Returns
    -------
    torch.Tensor, shape (...,), >= 0

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall(1.0)
    >>> x = torch.tensor([0.5, 0.0], dtype=torch.float64)
    >>> float(cone_energy(x, torch.tensor([0.8, 0.01], dtype=torch.float64), ball))  # inside
    0.0
    >>> round(float(cone_energy(x, torch.tensor([0.2, 0.0], dtype=torch.float64), ball)), 4)  # pi - asin(0.15)
    2.991
    """
    return torch.relu(cone_exterior_angle(x, y, geometry) - cone_half_aperture(x, geometry, K))


def origin_radius(x: torch.Tensor, geometry: Any) -> torch.Tensor:
    r"""Geodesic distance to the origin, :math:`d(0, x)`, in closed form with a finite gradient everywhere.

    The differentiable twin of :func:`hierviz.metrics.radius.origin_distance` (which detaches
    and evaluates in float64); the same values (tested).

    Ball: :math:`\frac{2}{\sqrt c}\operatorname{artanh}(\sqrt c\,\|x\|)`; hyperboloid:
    :math:`\frac{1}{\sqrt c}\operatorname{arsinh}(\sqrt c\,\|x_{1:}\|)` (the spatial part, not
    the cancelling :math:`\operatorname{arcosh}(\sqrt c\,x_0)`).

    Parameters
    ----------
    x : torch.Tensor, shape (..., D)
        Points on the ball (D = d) or the hyperboloid (D = d + 1, time first).
    geometry : PoincareBall or Lorentz

    Returns
    -------
    torch.Tensor, shape (...,), >= 0
        The artanh argument is clamped 1e-7 (float32) / 1e-12 (float64) below 1.

    Raises
    ------
    ValueError
        A non-hyperbolic geometry.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> x = torch.tensor([[0.5, 0.0]], dtype=torch.float64)  # 2 artanh(0.5) = ln 3
    >>> round(float(origin_radius(x, PoincareBall(1.0))[0]), 6)
    1.098612
    """
    _check_hyperbolic(geometry, "origin_radius")
    sc = _sqrt_c(geometry, x)
    if _has_time(geometry):
        return torch.asinh(sc * x[..., 1:].norm(dim=-1)) / sc
    s = sc * x.norm(dim=-1)
    return 2.0 * torch.atanh(s.clamp_max(1.0 - _margin(s))) / sc


def node_prototypes(
    x: torch.Tensor,
    labels: torch.Tensor,
    ancestors: torch.Tensor,
    geometry: Any,
    steps: int = 3,
    paths: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch Fréchet mean and sample count of every tree node (root included).

    Parameters
    ----------
    x : torch.Tensor, shape (n, D)
        Points on the manifold.
    labels : LongTensor, shape (n,)
        Leaf indices.
    ancestors : BoolTensor, shape (C, N)
        ``LabelTree.ancestor_matrix``: leaf ``c`` lies below node ``n``.
    geometry : Geometry
    steps : int, default 3
        Karcher steps (paper 01 Eq. 3; the gradient reaches ``x`` through them).
    paths : LongTensor, shape (C, L + 1), optional
        ``LabelTree.leaf_paths`` (root to leaf, padded with the leaf). Inside ``torch.compile``
        the (sample, node) pairs are then taken from the padded paths, a fixed ``n (L + 1)`` of
        them (a leaf above the deepest level repeats its samples in its own group, every one
        alike, so its mean is the same), instead of the data-dependent ``nonzero`` of the
        eager path; the two agree to rounding. Without it, or in eager mode, the eager path.

    Returns
    -------
    protos : torch.Tensor, shape (N, D)
        Nodes without samples hold the origin.
    counts : LongTensor, shape (N,)
    """
    member = ancestors.to(x.device)[labels]  # (n, N)
    N = member.shape[1]
    if paths is not None and torch.compiler.is_compiling():  # fixed shapes: no graph break in a compiled step
        pairs = paths.to(x.device)[labels]  # (n, L + 1)
        node = pairs.reshape(-1)
        protos, _ = geometry.group_mean(x.repeat_interleave(pairs.shape[1], 0), node, N, steps=steps, allow_empty=True)
        return protos, member.sum(0)
    sample, node = member.nonzero(as_tuple=True)
    protos, _ = geometry.group_mean(x[sample], node, N, steps=steps, allow_empty=True)
    return protos, member.sum(0)


def _check_depth_z(z: Any, geometry: Any, who: str) -> torch.Tensor:
    """The checks the other losses make on ``z``, for a depth regulariser: (B, V, D) or (B, D), B >= 1.

    Raises
    ------
    TypeError
        ``z`` is not a floating-point tensor.
    ValueError
        Wrong number of dimensions, no embedding, fewer coordinates than a point of the geometry
        has (``D = 0``; the hyperboloid needs ``D >= 2``), or NaN/inf entries (eager only).
    """
    if not isinstance(z, torch.Tensor) or not torch.is_floating_point(z):
        raise TypeError(f"{who}: z must be a floating-point tensor, got {getattr(z, 'dtype', type(z).__name__)}")
    if z.dim() not in (2, 3):
        raise ValueError(f"{who}: z must have shape (B, V, D) or (B, D), got {tuple(z.shape)}")
    need = geometry.point_dim(1) if hasattr(geometry, "point_dim") else 1
    if z.shape[-1] < need:
        raise ValueError(
            f"{who}: z has D={z.shape[-1]} coordinates per point (shape {tuple(z.shape)}); needs D >= {need}"
        )
    if z.numel() == 0:
        raise ValueError(f"{who}: z holds no embedding (shape {tuple(z.shape)}); pass a batch of at least one")
    if not torch.compiler.is_compiling() and not bool(torch.isfinite(z).all()):
        raise ValueError(f"{who}: z contains NaN or inf ({int((~torch.isfinite(z)).sum())} entries)")
    return z


def _flatten(
    z: torch.Tensor, labels: torch.Tensor, geometry: Any = None, num_leaves: int | None = None, who: str = "loss"
) -> tuple[torch.Tensor, torch.Tensor]:
    """``z`` (B, V, D) or (B, D) and ``labels`` (B,) → (n, D) points and (n,) leaf indices, checked.

    Labels are checked like every other loss's (:func:`hierviz.losses._validation._check_labels`):
    integer, shape (B,), values in ``[0, num_leaves - 1]`` (the range read on the host in eager mode only).
    """
    z = _check_depth_z(z, geometry, who)
    labels = _check_labels(labels, z.shape[0], num_leaves, z.device)
    if z.dim() == 3:
        B, V, D = z.shape
        return z.reshape(B * V, D), labels.repeat_interleave(V)
    return z, labels


def _register_edge_buffers(module: torch.nn.Module, tree: Any, min_depth: int = 1) -> None:
    """Register the tree's edges and leaf ancestry on ``module`` (non-persistent buffers).

    ``edge_parent``, ``edge_child`` : (E,) long, the parent and child node of every edge whose
    child is at depth >= ``min_depth`` (1: all N - 1 edges); ``ancestors`` : (C, N) bool,
    ``tree.ancestor_matrix``; ``leaf_paths`` : (C, L + 1) long, ``tree.leaf_paths``.
    """
    keep = tree.node_depth >= min_depth
    module.register_buffer("edge_parent", tree.parent_index.clone()[keep], persistent=False)
    module.register_buffer("edge_child", torch.arange(tree.num_nodes)[keep], persistent=False)
    module.register_buffer("ancestors", tree.ancestor_matrix.clone(), persistent=False)  # (C, N)
    module.register_buffer("leaf_paths", tree.leaf_paths.clone(), persistent=False)  # (C, L + 1)


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
