"""Projection heads and the parameter-free map onto the embedding manifold.

``z = to_manifold(head(features))``: :class:`ProjectionHead` is the two-layer MLP of paper 01
§4.2; :func:`manifold_head` returns :class:`L2Normalize` for the unit sphere and
:class:`HyperbolicHead` (feature clipping + ``expmap0``) for hyperbolic geometries, chosen by
``geometry.hyperbolic``, never by the geometry's name.
"""

from __future__ import annotations

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
    """Feature clipping + exponential map at the origin: tangent vectors -> hyperbolic points.

    ``v <- min(1, r / ||v||) v`` (feature clipping, Guo et al. CVPR 2022, Eq. 6), then
    ``z = geometry.proj(geometry.expmap0(v))`` (paper 03 §2.2, ``h = beta exp_0(e)``;
    paper 01 §3.1 "clip norms to < 1/sqrt(-kappa) - eps").  With curvature ``-c`` the
    Poincaré radius of the output is at most ``tanh(sqrt(c) r) / sqrt(c)``, so the
    embeddings stay away from the boundary where distances explode.  For the Lorentz
    model ``expmap0`` adds the time coordinate: ``(..., d) -> (..., d+1)``.

    The computation runs with autocast disabled, in float32 (float64 inputs stay float64),
    as DESIGN "Numerics" asks of every hyperbolic op.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        A hyperbolic geometry (``name`` "poincare" or "lorentz").
    clip_r : float, default 2.0
        Maximal tangent norm ``r > 0``; ``None`` or ``inf`` disables clipping (then only
        ``geometry.proj`` keeps points inside the ball).

    Raises
    ------
    ValueError
        If ``geometry`` is Euclidean (use :class:`L2Normalize`) or ``clip_r <= 0``.
    """

    def __init__(self, geometry, clip_r: float | None = 2.0) -> None:
        super().__init__()
        if not getattr(geometry, "hyperbolic", False):
            raise ValueError(
                f"geometry: HyperbolicHead needs a hyperbolic geometry, got {geometry!r} "
                "(Euclidean embeddings use L2Normalize)"
            )
        if clip_r is not None and not (float(clip_r) > 0):
            raise ValueError(f"clip_r must be > 0 (or None to disable clipping), got {clip_r!r}")
        self.geometry = geometry
        self.clip_r = None if clip_r is None else float(clip_r)

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        """Map tangent vectors at the origin onto the manifold.

        Parameters
        ----------
        v : torch.Tensor, shape (..., d)
            Raw head outputs, read as tangent vectors at the origin.

        Returns
        -------
        torch.Tensor
            Poincaré: shape (..., d), ``||z|| < 1/sqrt(c)``; Lorentz: shape (..., d+1) on
            the hyperboloid. float32 (float64 if ``v`` is float64).
        """
        with torch.autocast(device_type=v.device.type, enabled=False):
            v = v.to(_float_dtype(v))
            if self.clip_r is not None and self.clip_r != float("inf"):
                norm = v.norm(dim=-1, keepdim=True).clamp_min(1e-15)
                v = v * torch.clamp(self.clip_r / norm, max=1.0)
            return self.geometry.proj(self.geometry.expmap0(v))

    def extra_repr(self) -> str:
        return f"geometry={self.geometry.name}, c={getattr(self.geometry, 'c', None)}, clip_r={self.clip_r}"


def manifold_head(geometry, clip_r: float | None = 2.0) -> nn.Module:
    """The parameter-free map onto ``geometry``: :class:`L2Normalize` or :class:`HyperbolicHead`.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        "euclidean", "poincare" or "lorentz".
    clip_r : float, default 2.0
        Feature-clipping radius for hyperbolic geometries.

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    ValueError
        If ``geometry`` is not a hierviz Geometry.
    """
    if not callable(getattr(geometry, "expmap0", None)):
        raise ValueError(f"geometry: expected a hierviz Geometry, got {type(geometry).__name__}")
    if getattr(geometry, "hyperbolic", False):
        return HyperbolicHead(geometry, clip_r=clip_r)
    return L2Normalize()
