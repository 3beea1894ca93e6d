"""The unit sphere S^{d−1} with cosine similarity, named "Euclidean" as in the papers (paper 01 §3.1).

Distance ``d(u, v) = ‖û − v̂‖₂`` with ``û = u/‖u‖₂`` (the chordal distance on the unit
sphere, monotone in cosine similarity), similarity = cosine, mean = arithmetic mean
(paper 01 §3.1 "Prototypes and means"), EMA = paper 01 Eq. 9.
"""

from __future__ import annotations

import math
from typing import Any

import geoopt
import torch
import torch.nn.functional as F

from hierviz.geometry.base import Geometry, Tensor, _check_finite, _fp32, _sq_eps, as_float_tensor
from hierviz.geometry.registry import register_geometry


def _normalize(t: Tensor) -> Tensor:
    """``F.normalize`` that keeps the direction of rows below its ``1e-12`` floor.

    ``F.normalize`` divides by ``max(‖t‖, 1e-12)``, so a row of norm 1e-13 came out of norm 0.1
    and a distance on the sphere changed with the scale (LAM's Euclidean distance: 0.568 for
    ``z·1e-13`` against 0.372 for ``z``). Rows whose largest entry is below 1e-6 are first
    divided by it (no host sync); other rows are unchanged bit for bit.
    """
    amax = t.detach().abs().amax(dim=-1, keepdim=True)
    t = torch.where(amax < 1e-6, t / amax.clamp_min(torch.finfo(t.dtype).tiny), t)
    return F.normalize(t, dim=-1)


@register_geometry("euclidean")
class Euclidean(Geometry):
    """The unit sphere S^{d−1} ⊂ R^d with cosine similarity ("Euclidean" in paper 01 §3.1; alias ``UnitSphere``).

    Registry name ``"euclidean"`` (the papers' name for SupCon/SimCLR embeddings). Points are any non-zero finite vectors; distances and similarities act on their
    directions (``û = u/‖u‖``), :meth:`proj` returns the unit vector. The maps are the
    flat ones (``exp_x(v) = x + v``, ``log_x(y) = y − x``, ``exp_0`` = identity) from
    ``geoopt.Euclidean(ndim=1)``, which is the ``c → 0`` limit of the Poincaré ball's
    maps.

    Parameters
    ----------
    validate : bool, default True
        Check inputs for non-finite values in every method.

    Attributes
    ----------
    name : str
        ``"euclidean"``.
    c : float
        0.0 (distances and maps are those of flat ``R^d``; ``curvature`` is 0.0).
    manifold : geoopt.Euclidean
        ``geoopt.Euclidean(ndim=1)``.

    Examples
    --------
    >>> g = Euclidean()
    >>> round(float(g.dist(torch.tensor([2.0, 0.0]), torch.tensor([0.0, 5.0]))), 4)  # ‖e1 − e2‖
    1.4142
    """

    name = "euclidean"
    hyperbolic = False
    display_name = "Euclidean (unit sphere)"
    c = 0.0
    _flat = True

    def __init__(self, validate: bool = True) -> None:
        super().__init__(validate=validate)
        self.manifold = geoopt.Euclidean(ndim=1)

    def __repr__(self) -> str:
        return "Euclidean()"

    def to_manifold(self, v: Any, clip_r: float | None = None) -> Tensor:
        """Map head outputs onto the unit sphere: ``v / max(‖v‖, 1e-12)``.

        Autocast disabled, float32 (float64 kept): the arithmetic of
        ``hierviz.models.L2Normalize`` exactly.

        Parameters
        ----------
        v : Tensor, shape (..., d)
            Raw head outputs.
        clip_r : float, optional
            Ignored (normalising makes a norm clip irrelevant); accepted so every geometry
            has the same call.

        Returns
        -------
        Tensor, shape (..., d)
            Unit vectors, float32 or float64.

        Raises
        ------
        ValueError
            With ``validate`` (default): NaN/inf values, zero rows (no direction: hierviz
            0.2 returned them unchanged), or a 0-d ``v``.

        Examples
        --------
        >>> import torch
        >>> Euclidean().to_manifold(torch.tensor([[3.0, 4.0]]))
        tensor([[0.6000, 0.8000]])
        """
        t = v if isinstance(v, Tensor) else as_float_tensor(v, "v")
        with torch.autocast(device_type=t.device.type, enabled=False):
            t = t.to(torch.float64 if t.dtype == torch.float64 else torch.float32)
            return self._unit(t, "v")

    def _unit(self, t: Tensor, name: str) -> Tensor:
        """``t/‖t‖`` row-wise; with ``validate``, NaN/inf and zero rows are refused (one host sync).

        A zero vector has no direction, so it cannot be put on the sphere (hierviz 0.2
        returned it unchanged, a point off the sphere). ``F.normalize``'s ``eps = 1e-12``
        floor is not used: it returned ``v/1e-12`` (not a unit vector) for norms below it;
        any norm above float's smallest normal is divided exactly.
        """
        if t.dim() == 0:
            raise ValueError(f"{name} must have shape (..., d) with d >= 1, got a scalar; pass a vector")
        if t.shape[-1] == 0:
            raise ValueError(f"{name} must have d >= 1 coordinates, got shape {tuple(t.shape)}")
        n = t.norm(dim=-1, keepdim=True)
        if self.validate and n.numel():
            with torch.no_grad():
                lo, total = torch.stack([n.detach().min(), n.detach().sum()]).tolist()
            if not math.isfinite(total):
                _check_finite(t, name)
            tiny = torch.finfo(t.dtype).tiny
            if lo < tiny:
                bad = int((n.detach() < tiny).sum())
                raise ValueError(
                    f"{name}: {bad} row(s) are zero vectors (norm < {tiny:.3g}), which have no direction and "
                    f"cannot be projected onto the unit sphere; drop them or add a bias to the head"
                )
        return t / n.clamp_min(torch.finfo(t.dtype).tiny)

    # ------------------------------------------------------------------ checks
    def check_point(self, x: Any, name: str = "x") -> None:
        """Raise ValueError if ``x`` has NaN/inf entries.

        Parameters
        ----------
        x : Tensor, shape (..., d)
            Candidate points (any finite vector is a valid direction).
        name : str
            Argument name for the message.

        Raises
        ------
        ValueError
            If ``x`` contains non-finite values.
        TypeError
            If ``x`` is not numeric.
        """
        _check_finite(as_float_tensor(x, name), name)

    @_fp32
    def proj(self, x: Any) -> Tensor:
        """Unit-normalise: ``x / ‖x‖``.

        Parameters
        ----------
        x : Tensor, shape (..., d)
            Non-zero finite vectors.

        Returns
        -------
        Tensor, shape (..., d)
            Unit vectors.

        Raises
        ------
        ValueError
            With ``validate`` (default): NaN/inf values or zero rows (a zero vector has no
            direction; hierviz 0.2 returned it unchanged), or a 0-d ``x``.
        """
        return self._unit(as_float_tensor(x, "x"), "x")

    # ------------------------------------------------------------------ distances
    @_fp32
    def dist(self, x: Any, y: Any) -> Tensor:
        """Unit-norm Euclidean distance ``‖x̂ − ŷ‖₂`` (paper 01 §3.1), broadcast.

        Parameters
        ----------
        x, y : Tensor, shape (..., d)
            Broadcastable; need not be normalised.

        Returns
        -------
        Tensor, shape (...)
            Distances in ``[0, 2]``.

        Raises
        ------
        ValueError
            Non-finite input or mismatched last dimension.
        """
        xt, yt = self._pair(x, y)
        return self.manifold.dist(F.normalize(xt, dim=-1), F.normalize(yt, dim=-1))

    @_fp32
    def pairwise_dist(self, x: Any, y: Any = None) -> Tensor:
        """All-pairs ``‖x̂_i − ŷ_j‖`` from a Gram matrix (no ``B×M×d`` tensor).

        ``sqrt(max(‖x̂‖² + ‖ŷ‖² − 2⟨x̂, ŷ⟩, eps))`` with ``eps = 1e-12`` (float32) /
        ``1e-24`` (float64), so the gradient stays finite at coincident points.

        Parameters
        ----------
        x : Tensor, shape (..., B, d)
        y : Tensor, shape (..., M, d), optional
            ``None``: ``x`` against itself, with an exactly zero diagonal.

        Returns
        -------
        Tensor, shape (..., B, M)
            Distances in ``[0, 2]``.

        Raises
        ------
        ValueError
            Non-finite input, fewer than 2 dimensions, or mismatched ``d``.
        """
        xt, yt = self._pairwise_inputs(x, y)
        xn = _normalize(xt)
        x2 = (xn * xn).sum(-1, keepdim=True)
        if yt is None:
            yn, y2 = xn, x2
        else:
            yn = _normalize(yt)
            y2 = (yn * yn).sum(-1, keepdim=True)
        left = torch.cat([-2.0 * xn, x2, torch.ones_like(x2)], dim=-1)
        right = torch.cat([yn, torch.ones_like(y2), y2], dim=-1)
        sq = self._augmented_gram(left, right, yt is None)
        d = sq.clamp_min(_sq_eps(sq.dtype)).sqrt()
        return self._zero_diagonal(d) if yt is None else d

    @_fp32
    def similarity(self, x: Any, y: Any = None) -> Tensor:
        """Cosine similarity matrix ``⟨x̂_i, ŷ_j⟩`` (paper 01 Eq. 1, Euclidean mode).

        Parameters
        ----------
        x : Tensor, shape (..., B, d)
        y : Tensor, shape (..., M, d), optional
            ``None``: ``x`` against itself.

        Returns
        -------
        Tensor, shape (..., B, M)
            Values in ``[-1, 1]``; ``‖x̂ − ŷ‖² = 2 − 2·similarity``.

        Raises
        ------
        ValueError
            As :meth:`pairwise_dist`; also ``d = 0`` and (with ``validate``) zero rows, whose
            cosine is undefined (0.3 returned 0).
        """
        xt, yt = self._pairwise_inputs(x, y)
        xn = self._direction(xt, "x")
        yn = None if yt is None else self._direction(yt, "y")
        return self._gram(xn, yn)

    def _direction(self, t: Tensor, name: str) -> Tensor:
        """``t/‖t‖`` for a cosine: ``d = 0`` refused; zero rows too (eager, with ``validate``), whose cosine is 0/0."""
        if t.shape[-1] == 0:
            raise ValueError(
                f"{name} must have d >= 1 coordinates, got shape {tuple(t.shape)}; a cosine needs a direction"
            )
        if self.validate and not torch.compiler.is_compiling():  # the zero-row check reads the host: eager only
            return self._unit(t, name)
        return _normalize(t)

    # ------------------------------------------------------------------ maps
    @_fp32
    def expmap0(self, v: Any) -> Tensor:
        """Identity: the flat exponential map at the origin.

        Parameters
        ----------
        v : Tensor, shape (..., d)

        Returns
        -------
        Tensor, shape (..., d)
            ``v`` (apply :meth:`proj` to get unit vectors; a zero ``v`` is a valid tangent
            vector and maps to the origin of ``R^d``, which :meth:`proj` refuses).

        Raises
        ------
        ValueError
            With ``validate``: NaN/inf values (hierviz 0.2 passed them through).
        """
        t = as_float_tensor(v, "v")
        if self.validate:
            _check_finite(t, "v")
        return t

    @_fp32
    def logmap0(self, x: Any) -> Tensor:
        """Identity: the flat logarithmic map at the origin.

        Parameters
        ----------
        x : Tensor, shape (..., d)

        Returns
        -------
        Tensor, shape (..., d)
        """
        return self._points(x, "x")

    @_fp32
    def expmap(self, x: Any, v: Any) -> Tensor:
        """Flat exponential map ``x + v`` (``geoopt.Euclidean.expmap``).

        Parameters
        ----------
        x, v : Tensor, shape (..., d), broadcastable

        Returns
        -------
        Tensor, shape (..., d)
        """
        xt, vt = self._base_and_tangent(x, v)
        return self.manifold.expmap(xt, vt)

    @_fp32
    def logmap(self, x: Any, y: Any) -> Tensor:
        """Flat logarithmic map ``y − x`` (``geoopt.Euclidean.logmap``).

        Parameters
        ----------
        x, y : Tensor, shape (..., d), broadcastable

        Returns
        -------
        Tensor, shape (..., d)
        """
        xt, yt = self._pair(x, y)
        return self.manifold.logmap(xt, yt)

    @_fp32
    def to_tangent0(self, x: Any) -> Tensor:
        """Identity (Euclidean features are already linear-probe features).

        Parameters
        ----------
        x : Tensor, shape (..., d)

        Returns
        -------
        Tensor, shape (..., d)
        """
        return self._points(x, "x")

    def origin(self, d: int, *, dtype: torch.dtype | None = None, device: Any = None) -> Tensor:
        """The zero vector of length ``d``.

        Parameters
        ----------
        d : int
        dtype, device : optional

        Returns
        -------
        Tensor, shape (d,)
        """
        return torch.zeros(int(d), dtype=dtype or torch.get_default_dtype(), device=device)

    # Flat maps required by the interface (the Euclidean mean/EMA use the closed forms, _flat=True).
    def _log(self, base: Tensor, x: Tensor) -> Tensor:
        return x - base

    def _exp(self, base: Tensor, v: Tensor) -> Tensor:
        return base + v

    def _log0(self, x: Tensor) -> Tensor:
        return x

    def _exp0(self, v: Tensor) -> Tensor:
        return v


#: The name says what the space is: the unit sphere S^{d-1} of R^d with cosine similarity.
UnitSphere = Euclidean
