"""Projection heads and the parameter-free map onto the embedding manifold.

``z = to_manifold(head(features))``: :class:`ProjectionHead` is the two-layer MLP of paper 01
§4.2; :func:`manifold_head` returns :class:`L2Normalize` for the unit sphere and
:class:`HyperbolicHead` (feature clipping + ``expmap0``) for hyperbolic geometries, chosen by
``geometry.hyperbolic``, never by the geometry's name.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ProjectionHead", "L2Normalize", "HyperbolicHead", "manifold_head"]


def _float_dtype(x: torch.Tensor) -> torch.dtype:
    """float64 stays float64; every other dtype (float16, bfloat16, float32) becomes float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


class ProjectionHead(nn.Module):
    """Two-layer MLP projection head ``Linear -> BatchNorm -> ReLU -> Linear``.

    Paper 01 §4.2: "A two-layer MLP with BN and ReLU projects encoder features to
    embeddings: 2048 -> 2048 -> d with d=256 by default."  The output is raw (Euclidean,
    unnormalised); :class:`EmbeddingModel` maps it onto the manifold.

    Parameters
    ----------
    in_dim, hidden_dim, out_dim : int
        Layer sizes (all >= 1).

    Raises
    ------
    ValueError
        If a size is not a positive integer.
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("hidden_dim", hidden_dim), ("out_dim", out_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden_dim, bias=False),
            nn.BatchNorm1d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_dim, out_dim),
        )
        self.in_dim, self.hidden_dim, self.out_dim = in_dim, hidden_dim, out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Project features.

        Parameters
        ----------
        x : torch.Tensor, shape (B, in_dim)

        Returns
        -------
        torch.Tensor, shape (B, out_dim)
        """
        return self.net(x)


class L2Normalize(nn.Module):
    """Map onto the unit sphere, ``x / max(||x||, eps)`` (Euclidean mode of paper 01 §3.1).

    Computed in float32 (float64 kept) even under autocast.

    Parameters
    ----------
    eps : float, default 1e-12
        Lower bound on the norm.
    """

    def __init__(self, eps: float = 1e-12) -> None:
        super().__init__()
        self.eps = float(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise the last dimension.

        Parameters
        ----------
        x : torch.Tensor, shape (..., d)

        Returns
        -------
        torch.Tensor, shape (..., d), float32 or float64, unit norm.
        """
        with torch.autocast(device_type=x.device.type, enabled=False):
            x = x.to(_float_dtype(x))
            return F.normalize(x, dim=-1, eps=self.eps)


class HyperbolicHead(nn.Module):
    r"""Learnable feature scale + outlier clipping + exponential map at the origin.

    .. math::
        v \leftarrow e^{s}\,v, \qquad v \leftarrow \min(1, r/\|v\|)\,v, \qquad
        z = \operatorname{proj}(\exp_0(v)),

    with ``s`` a learnable log-scale (as HyILR's text/label scales, paper 05 §5.1), ``r`` the
    feature-clipping radius (Guo et al., CVPR 2022, Eq. 6)
    and ``exp_0`` the geometry's exponential map (paper 01 §3.1; paper 03 §2.2). For the
    Lorentz model ``expmap0`` adds the time coordinate: ``(..., d) -> (..., d+1)``.

    Why the scale: a projection head's raw outputs are long (norm ≫ 1). In hierviz 0.1 the
    head clipped them at ``r = 2``, so every Poincaré embedding sat on the sphere of radius
    ``tanh(2) = 0.964`` and the radial direction, the one that carries the hierarchy, was
    unused. Here the initial points sit well inside the ball and training chooses the
    radius through ``s``; ``r`` only catches outliers (:func:`hierviz.metrics.radius_report`
    reports the fraction of points at the clip radius). The defaults (``scale_init = 1``,
    ``r = 3``) come from a sweep on the quick and medium presets
    (``docs/hyperbolic-fidelity.md``): HyILR's ``1/sqrt(d)`` kept the embeddings at norm
    ≈ 0.1, where the ball is nearly flat, and ``scale_init ≥ 1.4`` drove every point to the
    clip radius within three epochs. ``learn_scale=False, scale_init=1, clip_r=2`` is the
    0.1 head exactly.

    The computation runs with autocast disabled, in float32 (float64 inputs stay float64),
    as DESIGN "Numerics" asks of every hyperbolic op; it is
    ``geometry.to_manifold(e^s v, clip_r)``.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        A hyperbolic geometry (``geometry.hyperbolic`` is true).
    clip_r : float or None, default 3.0
        Maximal tangent norm ``r > 0`` after scaling (geodesic radius ``2r`` on the ball:
        6.0, just inside float32's ``proj`` margin at 6.2); ``None`` or ``inf`` disables
        clipping (then only ``geometry.proj`` keeps points inside the ball).
    scale_init : float, default 1.0
        Initial feature scale ``e^s > 0`` (HyILR: ``1/sqrt(d)``).
    learn_scale : bool, default True
        Train ``s`` (an ``nn.Parameter`` named ``log_scale``); else it is a fixed buffer.

    Notes
    -----
    A geometry built with ``learnable=True`` (a trainable curvature, geoopt's
    ``learnable=True``) has its parameter registered here as the submodule ``curvature``, so
    the optimiser trains it with the head and checkpoints save it; the losses hold the same
    geometry object and see the same value.

    Attributes
    ----------
    scale : torch.Tensor
        ``e^s``, a 0-d tensor.
    max_radius : float
        Geodesic distance from the origin of a point at the clip radius
        (:func:`hierviz.metrics.max_radius`): ``2r`` on the Poincaré ball, ``r`` on the
        hyperboloid, capped by ``proj``.

    Raises
    ------
    ValueError
        If ``geometry`` is Euclidean (use :class:`L2Normalize`), ``clip_r <= 0`` or
        ``scale_init <= 0``.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> head = HyperbolicHead(PoincareBall(1.0), scale_init=0.125)
    >>> float(head.scale)
    0.125
    >>> z = head(torch.full((1, 64), 1.0)).detach()  # raw norm 8 -> tangent norm 1 -> |z| = tanh(1)
    >>> round(float(z.norm()), 4)
    0.7616
    """

    def __init__(
        self,
        geometry,
        clip_r: float | None = 3.0,
        *,
        scale_init: float = 1.0,
        learn_scale: bool = True,
    ) -> None:
        super().__init__()
        if not getattr(geometry, "hyperbolic", False):
            raise ValueError(
                f"geometry: HyperbolicHead needs a hyperbolic geometry, got {geometry!r} "
                "(Euclidean embeddings use L2Normalize)"
            )
        if clip_r is not None and not (float(clip_r) > 0):
            raise ValueError(f"clip_r must be > 0 (or None to disable clipping), got {clip_r!r}")
        if isinstance(scale_init, bool) or not isinstance(scale_init, (int, float)):
            raise ValueError(f"scale_init must be a finite number > 0, got {scale_init!r}")
        if not (math.isfinite(float(scale_init)) and float(scale_init) > 0):
            raise ValueError(f"scale_init must be a finite number > 0 (e.g. 1/sqrt(d)), got {scale_init!r}")
        self.geometry = geometry
        if getattr(geometry, "learnable", False):
            # the trainable curvature (geoopt's parameter) is trained and checkpointed with the head
            self.curvature = geometry.manifold
        self.clip_r = None if clip_r is None else float(clip_r)
        log_s = torch.tensor(math.log(float(scale_init)), dtype=torch.float32)
        if learn_scale:
            self.log_scale = nn.Parameter(log_s)
        else:
            self.register_buffer("log_scale", log_s)
        self.learn_scale = bool(learn_scale)

    @property
    def scale(self) -> torch.Tensor:
        """The feature scale ``e^s`` (0-d tensor)."""
        return self.log_scale.detach().exp()

    @property
    def max_radius(self) -> float:
        """Geodesic distance from the origin of the farthest point the head can output."""
        from hierviz.metrics.radius import max_radius

        return max_radius(self.geometry, self.clip_r)

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        """Map raw head outputs onto the manifold.

        Parameters
        ----------
        v : torch.Tensor, shape (..., d)
            Raw head outputs, read (after scaling) as tangent vectors at the origin.

        Returns
        -------
        torch.Tensor
            Poincaré: shape (..., d), ``||z|| < 1/sqrt(c)``; Lorentz: shape (..., d+1) on
            the hyperboloid. float32 (float64 if ``v`` is float64).
        """
        with torch.autocast(device_type=v.device.type, enabled=False):
            v = v.to(_float_dtype(v))
            v = v * self.log_scale.to(v.dtype).exp()  # exp(0) == 1 exactly: scale 1 is the identity
            return self.geometry.to_manifold(v, clip_r=self.clip_r)

    def extra_repr(self) -> str:
        return (
            f"geometry={self.geometry.name}, c={-self.geometry.curvature:g}, "
            f"learnable_c={getattr(self.geometry, 'learnable', False)}, clip_r={self.clip_r}, "
            f"scale={float(self.scale):.4g}, learn_scale={self.learn_scale}"
        )


def manifold_head(
    geometry,
    clip_r: float | None = 3.0,
    *,
    scale_init: float = 1.0,
    learn_scale: bool = True,
) -> nn.Module:
    """The map onto ``geometry``: :class:`L2Normalize` or :class:`HyperbolicHead`.

    Chosen by ``geometry.hyperbolic``, never by the geometry's name.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        "euclidean", "poincare" or "lorentz".
    clip_r : float or None, default 3.0
        Feature-clipping radius for hyperbolic geometries.
    scale_init, learn_scale
        The hyperbolic head's feature scale (see :class:`HyperbolicHead`); ignored on the
        sphere, where the norm is divided out.

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    ValueError
        If ``geometry`` is not a hierviz Geometry, or a bad head argument.
    """
    if not callable(getattr(geometry, "expmap0", None)):
        raise ValueError(f"geometry: expected a hierviz Geometry, got {type(geometry).__name__}")
    if getattr(geometry, "hyperbolic", False):
        return HyperbolicHead(geometry, clip_r=clip_r, scale_init=scale_init, learn_scale=learn_scale)
    return L2Normalize()
