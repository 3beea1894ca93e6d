r"""HyILR (Paper 05 (HyILR)): text–label contrastive loss on a Lorentz hyperboloid with hierarchy negatives.

Three pieces, each a plain function of tensors so they can be used (and gathered across
ranks) without a model:

* :class:`HyperbolicScales` — the learnable scalars of §5.1 (curvature ``c``, text and label
  scales ``α_t``, ``α_l``, all learned in log space) and the projection of Eq. 12,
  ``T_H = φ(α_t T_[CLS])``, ``L_H = φ(α_l W_Lᵀ)``, with φ the exponential map at the origin
  (Eq. 11) and ``d`` the geodesic distance (Eq. 4), both the methods of a
  :class:`hierviz.geometry.Geometry` object: :class:`~hierviz.geometry.Lorentz` is HyILR;
  :class:`~hierviz.geometry.PoincareBall` and :class:`~hierviz.geometry.Euclidean` are the
  ablations of Table 4 (CL-Poincaré, CL-Euclidean (Distance)). No behaviour is chosen by a
  geometry's name (:func:`project`, :func:`distance`).
* :func:`hierarchy_negatives` — the hierarchy-aware hard negatives of Eqs. 13–14, one
  nearest non-positive descendant and one nearest non-positive same-level label per
  positive label, united per sample (unique), vectorised over samples and labels;
  :func:`random_negatives` is the "w/o HNS" ablation.
* :func:`hyilr_contrastive_loss` (Eq. 15) and :func:`hyilr_loss` (BCE + λ·CL, §4.3.2).

Labels are the tree's nodes without the root, in ``tree.nodes`` order (``c = N − 1``
columns); :func:`label_relations` builds the descendant and same-level masks.

The paper writes points as ``[u_s, u_t]`` (time last); hierviz's Lorentz model puts time
first (:mod:`hierviz.geometry.lorentz.math`). The paper's ``k`` (hyperboloid
``⟨u, u⟩_L = −1/k``) is hierviz's ``c``: every signature here says ``c``.

Examples
--------
>>> import torch
>>> from hierviz.hierarchy import LabelTree
>>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
>>> desc, level = label_relations(tree)
>>> [n for n in tree.nodes if n != tree.root]
['a', 'b', 'a1', 'a2', 'b1']
>>> d = torch.tensor([[0.5, 0.4, 0.1, 0.3, 0.2]])  # text-to-label distances of one sample
>>> y = torch.tensor([[True, False, True, False, False]])  # positives: a, a1
>>> hierarchy_negatives(d, y, desc, level).int().tolist()  # a2 (descendant of a), b, b1 (same level)
[[0, 1, 0, 1, 1]]
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from hierviz.geometry import Geometry, get_geometry
from hierviz.geometry._checks import full_precision, scalar
from hierviz.geometry.lorentz import math as lmath

from ._validation import _check_tau, _compiling

Tensor = torch.Tensor

__all__ = [
    "HyperbolicScales",
    "lorentz_expmap0",
    "lorentz_distance",
    "project",
    "distance",
    "label_relations",
    "hierarchy_negatives",
    "negative_sets",
    "random_negatives",
    "hyilr_contrastive_loss",
    "hyilr_loss",
]

#: Range the learnable curvature ``c`` is clamped to (hierviz's maps are tested on [1e-7, 500]).
C_RANGE = (1e-3, 1e2)


def lorentz_expmap0(e_s: Tensor, c: Tensor | float) -> Tensor:
    r"""Eq. 11: :math:`\phi(e_s) = \frac{\sinh(\sqrt c\|e_s\|)}{\sqrt c\|e_s\|}\,e_s`, the space part of ``exp_O``.

    The time coordinate follows from Eq. 3, :math:`u_t = \sqrt{1/c + \|u_s\|^2}`; this is
    the spatial part of :func:`hierviz.geometry.lorentz.math.expmap0`, which it calls. The
    paper's ``k`` is hierviz's ``c``.

    Parameters
    ----------
    e_s : Tensor, shape (..., h)
        Euclidean features (tangent vectors at the origin ``O``).
    c : float or 0-d Tensor
        Curvature magnitude ``c > 0`` (curvature ``−c``); a tensor keeps its gradient.

    Returns
    -------
    Tensor, shape (..., h)
        Space components of the points on the hyperboloid.

    Examples
    --------
    >>> import torch
    >>> lorentz_expmap0(torch.tensor([[1.0, 0.0]], dtype=torch.float64), 1.0)  # sinh(1)
    tensor([[1.1752, 0.0000]], dtype=torch.float64)
    """
    return lmath.expmap0(e_s, c)[..., 1:]


def _with_time(u_s: Tensor, c: Tensor | float) -> Tensor:
    """Eq. 3: prepend ``u_t = sqrt(1/c + ‖u_s‖²)`` (hierviz order, time first)."""
    t = (1.0 / c + u_s.pow(2).sum(-1, keepdim=True)).sqrt()
    return torch.cat([t, u_s], dim=-1)


def lorentz_distance(u_s: Tensor, v_s: Tensor, c: Tensor | float) -> Tensor:
    r"""Eq. 4, all pairs: :math:`d(u, v) = \frac{1}{\sqrt c}\cosh^{-1}(-c\langle u, v\rangle_{\mathcal L})`.

    Points are given by their space components (time from Eq. 3). Evaluated in closed form by
    :func:`hierviz.geometry.lorentz.math.pairwise_dist` (no cancellation for close points).

    Parameters
    ----------
    u_s : Tensor, shape (B, h)
    v_s : Tensor, shape (M, h)
    c : float or 0-d Tensor
        Curvature magnitude ``c > 0`` (the paper's ``k``).

    Returns
    -------
    Tensor, shape (B, M)
        Geodesic distances, ``>= 0``.

    Examples
    --------
    >>> import torch
    >>> o = torch.zeros(1, 2, dtype=torch.float64)
    >>> x = lorentz_expmap0(torch.tensor([[0.7, 0.0]], dtype=torch.float64), 1.0)
    >>> round(float(lorentz_distance(o, x, 1.0)), 6)  # d(O, exp_O(v)) = ‖v‖
    0.7
    """
    return lmath.pairwise_dist(_with_time(u_s, c), _with_time(v_s, c), c)


def _space(geometry: Any) -> Geometry:
    """A :class:`~hierviz.geometry.Geometry` from an object or a registered name (``None``: Lorentz).

    A name builds the geometry with ``validate=False``: its input checks are host reads on every
    call (no ``torch.compile`` graph), and :func:`hyilr_contrastive_loss` checks the distances are
    finite. An object is used as given.
    """
    if geometry is None:
        geometry = "lorentz"
    if isinstance(geometry, str):
        return get_geometry(geometry, validate=False)
    if not isinstance(geometry, Geometry):
        raise TypeError(
            f"geometry must be a hierviz.geometry.Geometry (Lorentz(), PoincareBall(), Euclidean()) or a "
            f"registered name, got {type(geometry).__name__}"
        )
    return geometry


def _stretch(geometry: Geometry, c: Tensor | float) -> Tensor | float:
    """``√(c / c₀)``: the space of curvature ``−c`` is the one of ``geometry`` (``−c₀``) with distances × ``1/√(c/c₀)``."""
    if not geometry.hyperbolic:
        return 1.0
    c0 = float(scalar(geometry.c))
    return (c / c0) ** 0.5 if isinstance(c, Tensor) else math.sqrt(float(c) / c0)


def project(e: Tensor, scale: Tensor | float, c: Tensor | float, geometry: Any = None) -> Tensor:
    r"""Eq. 12 for one scale: ``φ(scale · e)`` onto ``geometry`` at curvature ``−c``, in float64.

    A space of curvature ``−c`` is the space of ``geometry`` (curvature ``−c₀``, its own ``c``)
    with every length multiplied by ``s = √(c₀/c)``: :math:`\exp^{c}_0(v)` is the point
    :math:`\exp^{c_0}_0(\sqrt{c/c_0}\,v)` of ``geometry`` and :math:`d_c = d_{c_0}/\sqrt{c/c_0}`
    (:func:`distance`). So the learned ``c`` (a tensor with its gradient) works through the
    geometry's own :meth:`~hierviz.geometry.Geometry.expmap0` and
    :meth:`~hierviz.geometry.Geometry.pairwise_dist`, for any registered geometry. A
    non-hyperbolic geometry (``geometry.hyperbolic`` False) keeps the scaled features,
    ``c`` unused.

    Parameters
    ----------
    e : Tensor, shape (..., h)
    scale, c : float or 0-d Tensor
        ``α`` and the curvature magnitude ``c > 0`` (the paper's ``k``).
    geometry : Geometry or str, default Lorentz()
        :class:`~hierviz.geometry.Lorentz` (HyILR), :class:`~hierviz.geometry.PoincareBall`
        (CL-Poincaré) or :class:`~hierviz.geometry.Euclidean` (CL-Euclidean (Distance)), or a
        registered name. ``torch.compile(fullgraph=True)`` needs one built with ``validate=False``
        (a name does that).

    Returns
    -------
    Tensor, shape (..., geometry.point_dim(h)), float64
        Points of ``geometry`` (Lorentz: time coordinate first).

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import Lorentz
    >>> x = project(torch.tensor([[0.5, 0.0]]), 2.0, 4.0, Lorentz())  # φ of v = (1, 0) at c = 4
    >>> round(float(distance(x, project(torch.zeros(1, 2), 1.0, 4.0, Lorentz()), 4.0, Lorentz())), 6)  # = ‖v‖
    1.0
    """
    g = _space(geometry)
    with full_precision():
        v = e.to(torch.float64) * scale
        if not g.hyperbolic:
            return v
        return g.expmap0(v * _stretch(g, c))


def distance(x: Tensor, y: Tensor, c: Tensor | float, geometry: Any = None) -> Tensor:
    """All-pairs distance of projected points: ``(B, D), (M, D)`` → ``(B, M)`` (Eq. 4 for Lorentz).

    Hyperbolic: ``geometry.pairwise_dist(x, y) / √(c/c₀)`` (see :func:`project`). Otherwise
    the flat distance ``‖x − y‖`` of the scaled features: hierviz's
    :class:`~hierviz.geometry.Euclidean` measures chords of the unit sphere, which would cancel
    the scales α, while CL-Euclidean (Distance) is the Euclidean distance of the features
    (Paper 05 (HyILR) §5.4).

    Parameters
    ----------
    x, y : Tensor
        Outputs of :func:`project` with the same ``c`` and ``geometry``.
    c : float or 0-d Tensor
    geometry : Geometry or str, default Lorentz()

    Returns
    -------
    Tensor, shape (B, M), float64
    """
    g = _space(geometry)
    with full_precision():
        if not g.hyperbolic:
            return torch.cdist(x, y)
        return g.pairwise_dist(x, y) / _stretch(g, c)


class HyperbolicScales(nn.Module):
    r"""The learnable scalars of HyILR and the projection of Eq. 12 (Paper 05 (HyILR) §4.2, §5.1).

    ``log c`` (init ``log c₀``), ``log α_t`` and ``log α_l`` (init ``log(1/√h)``) are the
    parameters (§5.1: "we learn all the scalars in the logarithmic space"; the paper's ``k``
    is hierviz's ``c``). The maps and distances are those of the geometry object
    (:func:`project`, :func:`distance`), computed in float64 (far from the origin the
    hyperboloid's coordinates grow like ``e^{√c r}`` and float32 loses the distance of close
    points).

    Parameters
    ----------
    h : int
        Feature size (``>= 1``); sets the scale init ``1/√h``.
    geometry : Geometry or str, default Lorentz()
        The contrastive space: :class:`~hierviz.geometry.Lorentz` (HyILR),
        :class:`~hierviz.geometry.PoincareBall` (CL-Poincaré), :class:`~hierviz.geometry.Euclidean`
        (CL-Euclidean (Distance); ``c`` unused) or any registered geometry. Its ``c`` is the
        initial curvature unless ``c`` is given.
    c : float, optional
        Initial curvature magnitude (``> 0``, in :data:`C_RANGE`); default the geometry's ``c``
        (1.0 for a non-hyperbolic one).
    learn_c : bool, default True
        Train ``log c``.

    Raises
    ------
    ValueError
        Unknown geometry name, ``h < 1`` or ``c`` outside :data:`C_RANGE`.
    TypeError
        ``geometry`` neither a Geometry nor a name.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import Lorentz
    >>> s = HyperbolicScales(h=4, geometry=Lorentz())
    >>> round(s.alpha_t.item(), 6), s.c.item()
    (0.5, 1.0)
    >>> T, L = s.project_text(torch.ones(3, 4)), s.project_labels(torch.ones(5, 4))
    >>> s.distance(T, L).shape, T.shape, T.dtype  # Lorentz points: time coordinate first
    (torch.Size([3, 5]), torch.Size([3, 5]), torch.float64)
    """

    def __init__(self, h: int, geometry: Any = None, c: float | None = None, learn_c: bool = True) -> None:
        super().__init__()
        g = _space(geometry)
        if isinstance(h, bool) or not isinstance(h, int) or h < 1:
            raise ValueError(f"h (feature size) must be an integer >= 1, got {h!r}")
        if c is None:
            c = float(scalar(g.c)) if g.hyperbolic else 1.0
        if not (C_RANGE[0] <= float(c) <= C_RANGE[1]):
            raise ValueError(f"c (initial curvature) must be in [{C_RANGE[0]:g}, {C_RANGE[1]:g}], got {c!r}")
        self.geometry = g
        self.log_c = nn.Parameter(torch.tensor(math.log(c), dtype=torch.float64), requires_grad=learn_c)
        init = math.log(1.0 / math.sqrt(h))
        self.log_alpha_t = nn.Parameter(torch.tensor(init, dtype=torch.float64))
        self.log_alpha_l = nn.Parameter(torch.tensor(init, dtype=torch.float64))

    @property
    def c(self) -> Tensor:
        """Curvature magnitude ``exp(log c)``, clamped to :data:`C_RANGE` (0-d float64)."""
        return self.log_c.clamp(math.log(C_RANGE[0]), math.log(C_RANGE[1])).exp()

    @property
    def alpha_t(self) -> Tensor:
        """Text scale ``α_t = exp(log α_t)`` (0-d float64)."""
        return self.log_alpha_t.exp()

    @property
    def alpha_l(self) -> Tensor:
        """Label scale ``α_l = exp(log α_l)`` (0-d float64)."""
        return self.log_alpha_l.exp()

    def project_text(self, t: Tensor) -> Tensor:
        """``T_H = φ(α_t T_[CLS])`` (Eq. 12); ``(B, h)`` → ``(B, point_dim(h))`` float64 points of :attr:`geometry`."""
        return project(t, self.alpha_t, self.c, self.geometry)

    def project_labels(self, w: Tensor) -> Tensor:
        """``L_H = φ(α_l W_Lᵀ)`` (Eq. 12); ``(c, h)`` → ``(c, point_dim(h))`` float64 points of :attr:`geometry`."""
        return project(w, self.alpha_l, self.c, self.geometry)

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        """All-pairs distance at the learned ``c``: ``(B, D), (M, D)`` → ``(B, M)`` float64 (Eq. 4 for Lorentz)."""
        return distance(x, y, self.c, self.geometry)

    def radius(self, x: Tensor) -> Tensor:
        """Distance of each projected point to the origin at the learned ``c``, ``(..., D)`` → ``(...)``."""
        with full_precision():
            flat = x.reshape(-1, x.shape[-1])
            if self.geometry.hyperbolic:
                D = x.shape[-1]
                zero = self.geometry.origin(2 * D - self.geometry.point_dim(D), dtype=x.dtype, device=x.device)
            else:
                zero = torch.zeros(x.shape[-1], dtype=x.dtype, device=x.device)
            return self.distance(flat, zero[None]).reshape(x.shape[:-1])

    def extra_repr(self) -> str:
        return (
            f"geometry={self.geometry!r}, c={self.c.item():.4g}, alpha_t={self.alpha_t.item():.4g}, "
            f"alpha_l={self.alpha_l.item():.4g}"
        )


def label_relations(tree: Any) -> tuple[Tensor, Tensor]:
    """Descendant and same-level masks over the labels (the tree's nodes without the root).

    Parameters
    ----------
    tree : LabelTree

    Returns
    -------
    desc : Tensor, shape (c, c), bool
        ``desc[p, j]``: label ``j`` is a proper descendant of label ``p`` (``Desc(p, H)`` of
        Eq. 13 before removing positives).
    same_level : Tensor, shape (c, c), bool
        ``same_level[p, j]``: ``j ≠ p`` at the same depth (``Sib(p, H)`` of Eq. 14 — the paper's
        "siblings" are all nodes at the same level — before removing positives).
    """
    labels = [n for n in tree.nodes if n != tree.root]
    index = {n: i for i, n in enumerate(labels)}
    c = len(labels)
    desc = torch.zeros(c, c, dtype=torch.bool)
    for n in labels:
        for a in tree.ancestors(n, inclusive=False):
            if a != tree.root:
                desc[index[a], index[n]] = True
    depth = torch.tensor([tree.depth(n) for n in labels])
    same = (depth[:, None] == depth[None, :]) & ~torch.eye(c, dtype=torch.bool)
    return desc, same


def _nearest(d: Tensor, cand: Tensor) -> tuple[Tensor, Tensor]:
    """For each (i, p): the candidate ``j`` with the smallest ``d[i, j]`` and whether one exists.

    ``d`` (B, c), ``cand`` (B, c, c) bool → ``(index (B, c) long, found (B, c) bool)``; ties go
    to the lowest index.
    """
    inf = torch.tensor(float("inf"), dtype=d.dtype, device=d.device)
    masked = torch.where(cand, d[:, None, :], inf)
    return masked.argmin(-1), cand.any(-1)


def negative_sets(d: Tensor, targets: Tensor, desc: Tensor, same_level: Tensor) -> tuple[Tensor, Tensor]:
    r"""The two negative sets ``N_1`` (Eq. 13) and ``N_2`` (Eq. 14) as masks; no Python loop.

    For each sample ``i`` and positive label ``p ∈ P(i)``:

    * Eq. 13: the non-positive proper descendant of ``p`` nearest to the text,
      :math:`\arg\min_{j \in Desc(p)} d(T_i, L_j)`, when ``p`` has one (set ``N_1``);
    * Eq. 14: the non-positive label at ``p``'s depth nearest to the text, among those not
      already in ``N_1`` (:math:`j \notin N_1`), when one is left (set ``N_2``).

    Each negative counts once per sample (the union; §4.3.1 "only unique negative labels");
    a positive label with neither kind contributes none, and a sample may have no negative.
    Ties are broken by the lower label index.

    Parameters
    ----------
    d : Tensor, shape (B, c), float
        Distance of each text to each label (:meth:`HyperbolicScales.distance`); only its
        order matters (no gradient flows through the selection).
    targets : Tensor, shape (B, c), bool (or 0/1)
        Positive labels ``P(i)``.
    desc, same_level : Tensor, shape (c, c), bool
        From :func:`label_relations`.

    Returns
    -------
    n1, n2 : Tensor, shape (B, c), bool
        ``N_1`` (Eq. 13) and ``N_2`` (Eq. 14), disjoint from each other and from ``P(i)``;
        :func:`hierarchy_negatives` returns their union.

    Raises
    ------
    ValueError
        Shapes that do not agree (names the argument).
    """
    B, c = d.shape
    targets = targets.to(torch.bool)
    if targets.shape != (B, c):
        raise ValueError(f"targets must have the shape of d {(B, c)}, got {tuple(targets.shape)}")
    for name, m in (("desc", desc), ("same_level", same_level)):
        if m.shape != (c, c):
            raise ValueError(f"{name} must have shape ({c}, {c}) for {c} labels, got {tuple(m.shape)}")
    d = d.detach()
    desc, same_level = desc.to(d.device), same_level.to(d.device)
    notpos, pos = ~targets, targets
    # Eq. 13 over (i, p, j): j a descendant of p that is not positive for i.
    cand1 = desc[None] & notpos[:, None, :]
    j1, found1 = _nearest(d, cand1)
    found1 &= pos
    n1 = _union(j1, found1, c)
    # Eq. 14: j at p's level, not positive, not already in N_1.
    cand2 = same_level[None] & (notpos & ~n1)[:, None, :]
    j2, found2 = _nearest(d, cand2)
    found2 &= pos
    return n1, _union(j2, found2, c)


def hierarchy_negatives(d: Tensor, targets: Tensor, desc: Tensor, same_level: Tensor) -> Tensor:
    r"""Hierarchy-aware negatives ``N(i) = N_1 ∪ N_2`` of Eqs. 13–14 (see :func:`negative_sets`), one mask.

    Parameters
    ----------
    d : Tensor, shape (B, c)
    targets : Tensor, shape (B, c), bool
    desc, same_level : Tensor, shape (c, c), bool

    Returns
    -------
    Tensor, shape (B, c), bool
        ``N(i)``, disjoint from ``P(i)``; each negative once per sample.

    Raises
    ------
    ValueError
        Shapes that do not agree.
    """
    n1, n2 = negative_sets(d, targets, desc, same_level)
    return n1 | n2


def _union(idx: Tensor, keep: Tensor, c: int) -> Tensor:
    """Mask ``(B, c)`` with ``True`` at ``idx[i, p]`` for every ``p`` where ``keep[i, p]``."""
    counts = torch.zeros(idx.shape[0], c, dtype=torch.int32, device=idx.device)
    counts.scatter_add_(1, idx, keep.to(torch.int32))
    return counts > 0


def random_negatives(targets: Tensor, per_positive: int = 2, generator: torch.Generator | None = None) -> Tensor:
    """The "w/o HNS" ablation (Table 4): uniform random non-positive labels, ``per_positive`` per positive.

    Each sample gets ``min(per_positive · |P(i)|, #non-positives)`` distinct labels drawn
    uniformly from its non-positive labels (vectorised: random keys, the smallest ones kept).

    Parameters
    ----------
    targets : Tensor, shape (B, c), bool
    per_positive : int, default 2
        HyILR picks up to two per positive (one descendant, one same-level label).
    generator : torch.Generator, optional

    Returns
    -------
    Tensor, shape (B, c), bool
    """
    targets = targets.to(torch.bool)
    keys = torch.rand(targets.shape, generator=generator, device=targets.device if generator is None else "cpu")
    keys = keys.to(targets.device).masked_fill(targets, float("inf"))
    rank = keys.argsort(1).argsort(1)
    n = (per_positive * targets.sum(1, keepdim=True)).clamp_max((~targets).sum(1, keepdim=True))
    return (rank < n) & ~targets


def hyilr_contrastive_loss(d: Tensor, targets: Tensor, negatives: Tensor, tau: float = 0.07) -> Tensor:
    r"""Eq. 15: :math:`\frac1m\sum_i \frac{1}{|P(i)|}\sum_{p\in P(i)} -\log\frac{e^{-d_{ip}/\tau}}{\sum_{s\in S(i)} e^{-d_{is}/\tau}}`.

    ``S(i) = N(i) ∪ P(i)``. Samples without a positive label are left out of the mean
    (``m`` counts the others); a sample without negatives still contrasts its positives
    against each other. Returns 0 (with a graph) when no sample has a positive.

    Parameters
    ----------
    d : Tensor, shape (B, c)
        Text–label distances (differentiable).
    targets, negatives : Tensor, shape (B, c), bool
        ``P(i)`` and ``N(i)`` (disjoint).
    tau : float, default 0.07
        Temperature ``τ > 0`` (§5.1).

    Returns
    -------
    Tensor, 0-d, dtype of ``d``

    Raises
    ------
    ValueError
        ``tau <= 0`` (or below float32's normal range), NaN/inf in ``d``, or mismatched shapes.
    """
    tau = _check_tau(tau)
    if not isinstance(d, Tensor) or not torch.is_floating_point(d) or d.ndim != 2:
        raise ValueError(f"d must be a floating (B, c) tensor of distances, got {getattr(d, 'shape', type(d))}")
    if not _compiling() and not bool(torch.isfinite(d).all()):  # a host read: eager only (no sync when compiled)
        raise ValueError(f"d contains NaN or inf ({int((~torch.isfinite(d)).sum())} entries); check the encoder output")
    targets = targets.to(torch.bool)
    negatives = negatives.to(torch.bool)
    if targets.shape != d.shape or negatives.shape != d.shape:
        raise ValueError(
            f"targets {tuple(targets.shape)} and negatives {tuple(negatives.shape)} must have the shape of d "
            f"{tuple(d.shape)}"
        )
    logits = -d / tau
    S = targets | negatives
    log_den = torch.logsumexp(logits.masked_fill(~S, float("-inf")), dim=1)  # -inf for an empty S
    npos = targets.sum(1)
    has = npos > 0
    log_den = torch.where(has, log_den, torch.zeros_like(log_den))
    per_pos = (log_den[:, None] - logits).masked_fill(~targets, 0.0)
    per_sample = per_pos.sum(1) / npos.clamp_min(1)
    # mean over the samples with a positive, 0 (with a graph) when none has one: no host read
    hasf = has.to(per_sample.dtype)
    return (per_sample * hasf).sum() / hasf.sum().clamp_min(1.0)


def hyilr_loss(
    logits: Tensor,
    text: Tensor,
    label_emb: Tensor,
    targets: Tensor,
    scales: HyperbolicScales,
    relations: tuple[Tensor, Tensor],
    *,
    lam: float = 0.3,
    tau: float = 0.07,
    negatives: str = "hierarchy",
    generator: torch.Generator | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    r"""HyILR's objective, :math:`Loss_{BCE} + \lambda\,Loss_{CL}` (§4.3.2), as one plain function.

    Parameters
    ----------
    logits : Tensor, shape (B, c)
        Classifier logits (Eq. 9).
    text : Tensor, shape (B, h)
        Text features ``T_[CLS]`` (Euclidean, before Eq. 12).
    label_emb : Tensor, shape (c, h)
        Label features ``W_Lᵀ`` (Euclidean).
    targets : Tensor, shape (B, c), bool
    scales : HyperbolicScales
        ``c``, ``α_t``, ``α_l`` and the space (HyILR or an ablation).
    relations : (desc, same_level)
        From :func:`label_relations`.
    lam : float, default 0.3
        ``λ >= 0``; ``0`` skips the contrastive term (the "w/o CL" ablation).
    tau : float, default 0.07
    negatives : {"hierarchy", "random"}, default "hierarchy"
        Eqs. 13–14, or :func:`random_negatives` ("w/o HNS").
    generator : torch.Generator, optional
        For ``negatives="random"``.

    Returns
    -------
    loss : Tensor, 0-d float32 (the dtype of ``logits``)
    terms : dict
        ``"bce"``, ``"cl"`` (detached) and ``"negatives"`` (mean count per sample).

    Raises
    ------
    ValueError
        ``lam < 0``, an unknown ``negatives`` or mismatched shapes.
    """
    if lam < 0:
        raise ValueError(f"lam (λ, weight of the contrastive loss) must be >= 0, got {lam!r}")
    if negatives not in ("hierarchy", "random"):
        raise ValueError(f"negatives must be 'hierarchy' or 'random', got {negatives!r}")
    targets = targets.to(torch.bool)
    if logits.shape != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} must have the same shape")
    bce = F.binary_cross_entropy_with_logits(logits, targets.to(logits.dtype))
    terms: dict[str, Tensor] = {"bce": bce.detach()}
    if lam == 0:
        terms["cl"] = torch.zeros((), dtype=logits.dtype)
        return bce, terms
    T = scales.project_text(text)
    L = scales.project_labels(label_emb)
    d = scales.distance(T, L)
    if negatives == "hierarchy":
        neg = hierarchy_negatives(d, targets, *relations)
    else:
        neg = random_negatives(targets, generator=generator)
    cl = hyilr_contrastive_loss(d, targets, neg, tau=tau)
    terms["cl"] = cl.detach().to(logits.dtype)
    terms["negatives"] = neg.sum(1).to(torch.float32).mean()
    return bce + lam * cl.to(logits.dtype), terms
