r"""The stored codes of :class:`~hierviz.retrieval.index.ReferenceIndex`: its storage modes and their errors.

``"fp16"`` stores :math:`\log_0` tangents as a 16-bit fixed-point direction and a float32 norm
(2·d + 4 bytes), ``"fp32"``/``"fp64"`` the ball coordinates, ``"fp16-ball"`` float16 ball
coordinates (the naive choice, for comparison); :func:`encode_points` and :func:`decode_points`
convert, :func:`storage_distance_error` and :func:`storage_error_curve` measure what each mode
loses. The package docstring of :mod:`hierviz.retrieval.index` derives the layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hierviz.geometry import PoincareBall

#: Storage modes of :class:`ReferenceIndex`.
STORAGES = ("fp32", "fp16", "fp16-ball", "fp64")


def _geometry(geometry: Any, index: bool = False):
    if geometry is None:
        return PoincareBall(1.0)
    if not isinstance(geometry, PoincareBall):
        if index:
            raise ValueError(
                "the reference index works in the Poincaré ball or the Lorentz model, got "
                f"geometry={type(geometry).__name__}"
            )
        raise ValueError(
            f"this function works in the Poincaré ball only, got geometry={type(geometry).__name__}; "
            "map Lorentz points to the ball first (Lorentz.to_ball) and pass a PoincareBall "
            "(ReferenceIndex takes Lorentz points itself)"
        )
    return geometry


def _scalar_c(c: Any) -> float:
    """A geometry's curvature magnitude as a float (a learnable one is a 0-d tensor)."""
    return float(c.detach()) if isinstance(c, torch.Tensor) else float(c)


#: Largest magnitude of the 16-bit direction codes of ``"fp16"`` storage (the largest coordinate of each).
CODE_SCALE = 32767


def _pack_fp16(v: torch.Tensor) -> torch.Tensor:
    """float64 tangents (n, d) → (n, d + 2) int16: the direction in 16-bit fixed point, then the float32 norm's bits."""
    nu = v.norm(dim=-1, keepdim=True)
    m = v.abs().amax(dim=-1, keepdim=True) if v.shape[-1] else nu
    w = torch.where(m > 0, torch.round(v / m.clamp_min(torch.finfo(torch.float64).tiny) * CODE_SCALE), 0.0)
    bits = nu.to(torch.float32).contiguous().view(torch.int16)  # (n, 2): the float32 norm, bit for bit
    return torch.cat([w.to(torch.int16), bits], dim=1)


def _unpack_fp16(code: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(n, d + 2) int16 codes → directions ``w`` (n, d) float64, their norms ``‖w‖`` (n,) and tangent norms ``ν`` (n,)."""
    w = code[:, :-2].to(torch.float64)
    nu = code[:, -2:].contiguous().view(torch.float32).to(torch.float64).squeeze(-1)
    return w, w.norm(dim=-1), nu


def _fp16_points(code: torch.Tensor, c: float) -> torch.Tensor:
    """The ball points of ``"fp16"`` codes, float64: ``tanh(√c ν)/√c · w/‖w‖`` (the origin where ν or w is 0)."""
    w, wn, nu = _unpack_fp16(code)
    r = torch.tanh(c**0.5 * nu) / c**0.5
    scale = torch.where(wn > 0, r / wn.clamp_min(1.0), torch.zeros_like(r))
    return w * scale[:, None]


def encode_points(x: torch.Tensor, storage: str, geometry: Any = None) -> torch.Tensor:
    r"""Ball points → the stored tensor of a storage mode (see the module docstring).

    Parameters
    ----------
    x : torch.Tensor, shape (n, d)
        Points inside the ball.
    storage : {"fp32", "fp16", "fp16-ball", "fp64"}
    geometry : PoincareBall, optional
        Default ``PoincareBall(1.0)``.

    Returns
    -------
    torch.Tensor
        ``"fp32"``/``"fp64"``: the coordinates, shape (n, d), float32/float64; ``"fp16-ball"``:
        float16 coordinates, (n, d); ``"fp16"``: int16 codes, shape (n, d + 2): the direction
        of :math:`v = \log_0 x` in 16-bit fixed point (``round(v / max_i |v_i| · 32767)``), then
        the two int16 halves of the float32 norm :math:`\|v\|` (2·d + 4 bytes a point).

    Raises
    ------
    ValueError
        Unknown ``storage``; points outside the ball.
    """
    g = _geometry(geometry)
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {list(STORAGES)}, got {storage!r}")
    if storage == "fp32":
        return x.detach().to(torch.float32)
    if storage == "fp64":
        return x.detach().to(torch.float64)
    if storage == "fp16":
        return _pack_fp16(g.logmap0(x.detach().to(torch.float64)))
    return x.detach().to(torch.float16)


def decode_points(
    stored: torch.Tensor, storage: str, geometry: Any = None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    r"""The stored tensor → ball points, shape (n, d) (``exp_0`` of the fp16 tangent codes; a cast otherwise).

    Parameters
    ----------
    stored : torch.Tensor, shape (n, d), or (n, d + 2) int16 for ``"fp16"``
        What :func:`encode_points` returned.
    storage : {"fp32", "fp16", "fp16-ball", "fp64"}
    geometry : PoincareBall, optional
    dtype : torch.dtype, default torch.float32
        Dtype of the points. ``"fp16"`` codes decode in float64
        (:math:`\tanh(\sqrt c\,\|v\|)/\sqrt c` times the unit direction) and are then
        cast; in float32 geoopt keeps points at radius ``<= (1 - 4e-3)/sqrt(c)``, so points
        stored beyond that (e.g. r = 0.9999) need float64.

    Raises
    ------
    ValueError
        Unknown ``storage``.
    """
    g = _geometry(geometry)
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {list(STORAGES)}, got {storage!r}")
    if storage == "fp16":
        c = g.c
        x = _fp16_points(stored, float(c.detach()) if isinstance(c, torch.Tensor) else float(c))
        return x if dtype == torch.float64 else g.proj(x.to(dtype))
    x = stored.to(dtype)
    if storage == "fp64":
        return x
    if storage == "fp16-ball":  # rounding may land a point on or beyond the boundary
        x = g.proj(x)
    return x


def storage_distance_error(x: torch.Tensor, y: torch.Tensor, storage: str, geometry: Any = None) -> np.ndarray:
    """Relative error of the distances ``d(x_i, y_i)`` after a round trip through a storage mode.

    Parameters
    ----------
    x, y : torch.Tensor, shape (n, d)
        Pairs of points inside the ball (``y`` is stored, ``x`` is the float32 query).
    storage : {"fp32", "fp16", "fp16-ball"}
    geometry : PoincareBall, optional

    Returns
    -------
    numpy.ndarray, shape (n,), float64
        ``|d(x, decode(encode(y))) − d(x, y)| / d(x, y)``, everything but the storage in
        float64: the error is the storage's alone.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> g = torch.Generator().manual_seed(0)
    >>> u = torch.nn.functional.normalize(torch.randn(200, 32, generator=g, dtype=torch.float64), dim=-1)
    >>> x, y = 0.5 * u[:100], 0.999 * u[100:]
    >>> tangent, ball = (storage_distance_error(x, y, s) for s in ("fp16", "fp16-ball"))
    >>> bool(tangent.max() < ball.max())
    True
    """
    g = _geometry(geometry)
    x64, y64 = x.to(torch.float64), y.to(torch.float64)
    ref = g.dist(x64, y64)
    back = decode_points(encode_points(y64, storage, g), storage, g, dtype=torch.float64)
    got = g.dist(x64, g.proj(back))
    return ((got - ref).abs() / ref.clamp_min(1e-12)).numpy()


def storage_error_curve(
    radii: Any = (0.5, 0.9, 0.99, 0.999, 0.9999),
    *,
    dim: int = 32,
    n: int = 2000,
    query_radius: float = 0.5,
    quantile: float = 0.99,
    seed: int = 0,
) -> dict[str, list[float]]:
    """The ``quantile`` of the relative distance error of each storage mode, for stored points at each radius.

    Stored points lie at norm ``r`` in random directions, queries at ``query_radius``
    (c = 1); see :func:`storage_distance_error`.

    Parameters
    ----------
    radii : sequence of float in (0, 1)
        Norms of the stored points.
    dim : int, default 32
    n : int, default 2000
        Pairs per radius.
    query_radius : float, default 0.5
    quantile : float, default 0.99
    seed : int, default 0

    Returns
    -------
    dict
        ``{"radius": [...], "fp32": [...], "fp16": [...], "fp16-ball": [...]}``.

    Raises
    ------
    ValueError
        A radius outside (0, 1).

    Examples
    --------
    >>> curve = storage_error_curve((0.9999,), n=500)
    >>> curve["fp16"][0] < 1e-3 < curve["fp16-ball"][0]
    True
    """
    radii = [float(r) for r in radii]
    if any(not 0.0 < r < 1.0 for r in radii):
        raise ValueError(f"radii must lie in (0, 1), got {radii}")
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {"radius": radii, **{s: [] for s in STORAGES}}
    for r in radii:
        u = torch.nn.functional.normalize(torch.randn(2 * n, dim, generator=g, dtype=torch.float64), dim=-1)
        x, y = query_radius * u[:n], r * u[n:]
        for s in STORAGES:
            out[s].append(float(np.quantile(storage_distance_error(x, y, s), quantile)))
    return out
