r"""Lorentz (hyperboloid) model of curvature ``−c`` on ``geoopt.Lorentz`` (paper 01 §3.1 maps, Eqs. 3, 10).

Points are ``(d+1)``-vectors :math:`x = (x_0, x_s)` on the upper sheet

.. math::
    \mathbb{L}^d_c = \{x : \langle x, x\rangle_{\mathcal L} = -1/c,\ x_0 > 0\},\qquad
    \langle x, y\rangle_{\mathcal L} = -x_0 y_0 + x_s\cdot y_s,

with distance :math:`d_c(x, y) = \frac{1}{\sqrt c}\operatorname{arcosh}(-c\langle x, y\rangle_{\mathcal L})`
and sectional curvature :math:`-c`, the same ``c`` as :class:`~hierviz.geometry.PoincareBall`
(geoopt's ``Lorentz(k=1/c)``; see :mod:`hierviz.geometry` for the two conventions).
:meth:`Lorentz.to_ball` is an isometry onto ``PoincareBall(c=c)``. The formulas are pure
functions in :mod:`hierviz.geometry.lorentz.math`.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import geoopt
import numpy as np
import torch

from hierviz.geometry._checks import DEFAULT_CURVATURE, full_precision, scalar
from hierviz.geometry.base import (
    Geometry,
    Tensor,
    _check_finite,
    _segment_sum,
    as_float_tensor,
    check_curvature,
)
from hierviz.geometry.lorentz import math as lmath
from hierviz.geometry.registry import register_geometry


def _out_dtype(args: tuple, kwargs: dict) -> torch.dtype:
    """float64 if any floating input is float64, else float32 (the dtype a Lorentz op returns)."""
    for a in (*args, *kwargs.values()):
        dt = getattr(a, "dtype", None)
        if dt in (torch.float64, np.float64):
            return torch.float64
    return torch.float32


def _float64_inside(fn):
    """Run a Lorentz op in float64 and return floating results in the inputs' dtype.

    On the hyperboloid the coordinates grow like ``e^{√c r}/2`` with the distance ``r``
    from the origin, and ``arcosh(−c⟨x, y⟩)`` of two close points cancels ``x_0 y_0`` against
    ``x_s·y_s``; in float32 distances of close points were off by 1–3 % from ``r ≈ 2``
    on and the Karcher mean went NaN near ``r = 12`` (hierviz 0.2). Points are therefore
    re-projected in float64 (``x_0 = sqrt(1/c + ‖x_s‖²)`` from the float32 spatial part,
    which float32 stores to relative precision) and every formula runs in float64.
    """

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        dtype = _out_dtype(args, kwargs)
        with full_precision():
            out = fn(self, *args, **kwargs)
        if isinstance(out, Tensor) and out.is_floating_point():
            return out.to(dtype)
        if isinstance(out, tuple):
            return tuple(o.to(dtype) if isinstance(o, Tensor) and o.is_floating_point() else o for o in out)
        return out

    return wrapper


@register_geometry("lorentz")
class Lorentz(Geometry):
    r"""Hyperboloid of sectional curvature ``−c`` (``c > 0``) in ambient coordinates.

    Points have ``d + 1`` coordinates (time first). Tangent vectors at the origin are given
    by their ``d`` spatial coordinates (:meth:`expmap0` takes ``(..., d)``,
    :meth:`logmap0` returns ``(..., d)``); tangent vectors at other points
    (:meth:`expmap`, :meth:`logmap`) are ambient ``(..., d+1)`` vectors.

    Parameters
    ----------
    c : float, default 1.0
        Curvature magnitude, ``c > 0`` (curvature ``−c``, hyperboloid ``⟨x,x⟩_L = −1/c``;
        geoopt's ``k`` is ``1/c``).
    validate : bool, default True
        Check that inputs lie on the hyperboloid and are finite.
    k : float, optional, keyword only
        Deprecated (hierviz 0.1) name of ``c`` — the same number, not geoopt's ``k``;
        warns with DeprecationWarning. Passing both ``c`` and ``k`` raises TypeError.
    learnable : bool, default False
        Make the curvature trainable, geoopt's ``Lorentz(learnable=True)`` (its ``k = 1/c``
        is the parameter); it lives in :attr:`manifold`, which the model's
        :class:`~hierviz.models.HyperbolicHead` registers so it is trained and checkpointed.

    Attributes
    ----------
    name : str
        ``"lorentz"``.
    c : float
        The curvature magnitude.
    k : float
        Read-only 0.1 alias of ``c`` (kept for old code; prefer ``c``).
    manifold : geoopt.Lorentz
        ``geoopt.Lorentz(k=1/c)`` in float64.

    Raises
    ------
    ValueError
        If ``c <= 0`` or not finite.
    TypeError
        If ``c`` is not a real number, or both ``c`` and ``k`` are given.

    Notes
    -----
    The Karcher mean (paper 01 Eq. 3) and EMA step (Eq. 10) are taken in ambient tangent
    vectors at the current estimate; they are intrinsic, so the converged means agree with
    the Poincaré ones through :meth:`to_ball`. The default Karcher start is the Lorentzian
    centroid (closed form; the Poincaré ball starts from the origin-tangent mean), so with
    few steps the two models' means differ slightly.

    :meth:`logmap`, :meth:`logmap0` and :meth:`expmap` are closed forms written here
    rather than geoopt's: ``geoopt.Lorentz`` clamps squared Minkowski norms at 1e-8, so its
    log maps under-shoot by up to 10× for distances below ~1e-4 and its ``expmap`` shifts
    the base point by ~5e-9·‖x‖ (float64) for such short steps — which breaks
    ``exp∘log = id``, the Karcher mean of a tight cluster and the EMA step near
    convergence. :meth:`expmap0`, the projections and the broadcast distance are geoopt's.

    geoopt recommends float64 for this model: far from the origin the coordinates grow
    like ``e^{√c·d}`` and float32 loses digits.
    """

    name = "lorentz"
    hyperbolic = True
    display_name = "Lorentz hyperboloid"

    def __init__(
        self, c: float | None = None, validate: bool = True, *, k: float | None = None, learnable: bool = False
    ) -> None:
        if k is not None:
            if c is not None:
                raise TypeError("Lorentz: pass the curvature once, as c (k is its deprecated 0.1 name)")
            warnings.warn(
                "Lorentz(k=...) is deprecated: the curvature is named c everywhere (curvature -c, the same "
                "number as 0.1's k); use Lorentz(c=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            c = k
        super().__init__(validate=validate)
        c0 = check_curvature(DEFAULT_CURVATURE if c is None else c, "c")
        self.learnable = bool(learnable)
        self.manifold = geoopt.Lorentz(k=torch.tensor(1.0 / c0, dtype=torch.float64), learnable=self.learnable)
        self._c = c0

    @property
    def c(self) -> Any:
        """The curvature magnitude: a float, or with ``learnable=True`` ``1/k`` of geoopt's
        trainable ``k``, a 0-d float64 tensor that carries gradient."""
        return 1.0 / self.manifold.k if self.learnable else self._c

    @property
    def k(self) -> float:
        """hierviz 0.1's name of ``c`` (the same number; not geoopt's ``k``), kept for reading."""
        return scalar(self.c)

    def __repr__(self) -> str:
        return f"Lorentz(c={scalar(self.c):g})"

    def point_dim(self, d: int) -> int:
        """``d + 1``: ambient coordinates of a point with ``d`` intrinsic dimensions.

        Parameters
        ----------
        d : int

        Returns
        -------
        int
        """
        return int(d) + 1

    def _tangent_dim(self, D: int) -> int:
        return D - 1

    # ------------------------------------------------------------------ checks
    def check_point(self, x: Any, name: str = "x") -> None:
        r"""Raise ValueError unless every row of ``x`` lies on the upper hyperboloid sheet.

        Accepts :math:`|c\langle x,x\rangle_{\mathcal L} + 1| \le
        \mathrm{tol}\cdot c(x_0^2 + \|x_s\|^2)` with ``tol = 1e-3`` (float32) / ``1e-6``
        (float64) — a relative test, since rounding grows with the coordinates.

        Parameters
        ----------
        x : Tensor, shape (..., d+1)
            Candidate points, time coordinate first.
        name : str
            Argument name for the message.

        Raises
        ------
        ValueError
            Non-finite values, fewer than 2 coordinates, ``x_0 <= 0``, or off the hyperboloid.
        TypeError
            If ``x`` is not numeric.
        """
        t = as_float_tensor(x, name)
        if t.dim() == 0 or t.shape[-1] < 2:
            raise ValueError(
                f"{name} must have shape (..., d+1) with d >= 1 (time coordinate first), got {tuple(t.shape)}"
            )
        if t.numel() == 0:
            return
        with torch.no_grad():
            tol = 1e-3 if t.dtype == torch.float32 else 1e-6
            in_dtype = t.dtype if t.dtype in lmath.COORD_MAX else torch.float32
            t = t.detach().double()  # float32 squares overflow from coordinates ~1.8e19 (radius ~44)
            sq = t.pow(2)
            spatial = sq[..., 1:].sum(-1)
            mink = spatial - sq[..., 0]
            err = (self.c * mink + 1.0).abs()
            # relative violation; NaN/inf propagate into the max
            viol = err / (tol * (self.c * (spatial + sq[..., 0])).clamp_min(1.0))
            lower = t[..., 0] <= 0
            worst, n_lower, top = torch.stack([viol.max(), lower.sum().to(viol.dtype), t.abs().max()]).tolist()
            if not math.isfinite(worst) or not math.isfinite(top):
                _check_finite(t, name)
            # the bound of the input's dtype: a float32 point past it squares to inf (0.3 accepted x0 = 3e38)
            self._radius_guard(top, name, "lies", in_dtype)
            if n_lower > 0:
                raise ValueError(
                    f"{name}: {int(n_lower)} point(s) have time coordinate x0 <= 0 "
                    f"(lower sheet); Lorentz points need x0 > 0"
                )
            if worst > 1.0:
                off = viol > 1.0
                raise ValueError(
                    f"{name}: {int(off.sum())} point(s) are off the hyperboloid <x,x>_L = -1/c "
                    f"(c={scalar(self.c):g}; worst |c<x,x>_L + 1| = {float(err.max()):.3g}); "
                    f"map tangent vectors with expmap0() or fix the time coordinate with proj()"
                )

    def _radius_guard(self, top: float, name: str, verb: str, dtype: torch.dtype) -> None:
        """Refuse coordinates beyond :data:`~hierviz.geometry.lorentz.math.COORD_MAX` (an error, never inf/NaN)."""
        bound = lmath.COORD_MAX.get(dtype, lmath.COORD_MAX[torch.float32])
        if top > bound:
            r = lmath.max_radius(scalar(self.c), dtype)
            raise ValueError(
                f"{name}: a point {verb} beyond the radius the Lorentz model can hold in {str(dtype)[6:]} "
                f"(largest coordinate {top:.3g} > {bound:.3g}, distance from the origin > {r:.4g}); "
                f"its Minkowski form would overflow to inf/NaN. Clip the tangent norm (to_manifold(v, clip_r=...))"
                + (" or use float64" if dtype != torch.float64 else "")
            )

    def _points(self, x: Any, name: str, min_dim: int = 1) -> Tensor:
        """Validate in the input's dtype, then float64 with the time coordinate recomputed."""
        t = super()._points(x, name, min_dim)
        if t.dim() == 0 or t.shape[-1] < 2:
            return t
        return self.manifold.projx(t.double())

    @_float64_inside
    def group_mean(self, *args: Any, **kwargs: Any) -> Any:
        return super().group_mean(*args, **kwargs)

    @_float64_inside
    def mean(self, *args: Any, **kwargs: Any) -> Tensor:
        return super().mean(*args, **kwargs)

    @_float64_inside
    def ema_step(self, *args: Any, **kwargs: Any) -> Tensor:
        return super().ema_step(*args, **kwargs)

    group_mean.__doc__ = Geometry.group_mean.__doc__
    mean.__doc__ = Geometry.mean.__doc__
    ema_step.__doc__ = Geometry.ema_step.__doc__

    @_float64_inside
    def proj(self, x: Any) -> Tensor:
        r"""Recompute the time coordinate, :math:`x_0 = \sqrt{1/c + \|x_s\|^2}` (``geoopt.Lorentz.projx``).

        Parameters
        ----------
        x : Tensor, shape (..., d+1)
            Any finite vectors (the time coordinate is ignored).

        Returns
        -------
        Tensor, shape (..., d+1)
            Points on the hyperboloid.

        Raises
        ------
        ValueError
            Non-finite input or fewer than 2 coordinates.
        """
        t = as_float_tensor(x, "x")
        _check_finite(t, "x")
        if t.dim() == 0 or t.shape[-1] < 2:
            raise ValueError(f"x must have shape (..., d+1) with d >= 1, got {tuple(t.shape)}")
        return self.manifold.projx(t.double())

    # ------------------------------------------------------------------ distances
    @_float64_inside
    def dist(self, x: Any, y: Any) -> Tensor:
        r"""Geodesic distance :math:`\frac{1}{\sqrt c}\operatorname{arcosh}(-c\langle x,y\rangle_{\mathcal L})`.

        Computed as :math:`\frac{2}{\sqrt c}\operatorname{arsinh}\sqrt{\tfrac c4\|y-x\|^2_{\mathcal L}}`
        (:func:`hierviz.geometry.lorentz.math.dist`, in float64): finite for every point
        :meth:`check_point` accepts (geoopt's arcosh form was inf at radius 300 in float64),
        and exact for close points.

        Parameters
        ----------
        x, y : Tensor, shape (..., d+1), broadcastable
            Points on the hyperboloid.

        Returns
        -------
        Tensor, shape (...)

        Raises
        ------
        ValueError
            Off-manifold or non-finite points, mismatched dimension.
        """
        xt, yt = self._pair(x, y)
        return lmath.dist(xt, yt, self.c)

    @_float64_inside
    def pairwise_dist(self, x: Any, y: Any = None) -> Tensor:
        r"""All-pairs distances in closed form over a Minkowski Gram matrix.

        With :math:`w_{ij} = \max\big(\tfrac{c}{4}(\langle x_i,x_i\rangle + \langle y_j,y_j\rangle
        - 2\langle x_i,y_j\rangle)_{\mathcal L}, \epsilon\big)`, the squared Minkowski norm of
        :math:`x_i - y_j` times ``c/4``, returns :math:`\frac{2}{\sqrt c}\operatorname{arsinh}\sqrt{w_{ij}}`,
        which equals :math:`\frac{1}{\sqrt c}\operatorname{arcosh}(-c\langle x_i,y_j\rangle_{\mathcal L})`
        on the hyperboloid. ``O(B·M)`` memory.

        Parameters
        ----------
        x : Tensor, shape (..., B, d+1)
            Points on the hyperboloid.
        y : Tensor, shape (..., M, d+1), optional
            ``None``: ``x`` against itself with an exactly zero diagonal (zero gradient there).

        Returns
        -------
        Tensor, shape (..., B, M)
            Non-negative distances.

        Raises
        ------
        ValueError
            Off-manifold or non-finite points, fewer than 2 dims, mismatched dimension.
        """
        xt, yt = self._pairwise_inputs(x, y)
        return lmath.pairwise_dist(xt, yt, self.c)

    # ------------------------------------------------------------------ maps
    @_float64_inside
    def expmap0(self, v: Any) -> Tensor:
        r"""Exponential map at the origin :math:`o = (1/\sqrt c, 0, \dots, 0)`.

        For a spatial tangent vector :math:`v`,
        :math:`\exp_o(v) = \big(\cosh(\sqrt c\|v\|)/\sqrt c,\ \sinh(\sqrt c\|v\|)\,v/(\sqrt c\|v\|)\big)`
        (``geoopt.Lorentz.expmap0`` on ``(0, v)``, then its projection).

        Parameters
        ----------
        v : Tensor, shape (..., d)
            Spatial coordinates of tangent vectors at the origin.

        Returns
        -------
        Tensor, shape (..., d+1)
            Points on the hyperboloid.

        Raises
        ------
        ValueError
            Non-finite ``v``, a scalar, or (radius guard) ``sqrt(c)·‖v‖`` beyond
            :func:`~hierviz.geometry.lorentz.math.max_radius` of the dtype (≈ 354 float64, ≈ 87
            float32 at ``c = 1``), where the point's coordinates would overflow: hierviz 0.2
            returned inf from norm ≈ 90 (float32) / ≈ 355 (float64) and NaN from 711.
        """
        t = as_float_tensor(v, "v")
        if t.dim() == 0:
            raise ValueError("v must have shape (..., d), got a scalar")
        if t.shape[-1] == 0:  # geoopt's TorchScript map failed with a traceback
            raise ValueError(f"v must have d >= 1 spatial coordinates, got shape {tuple(t.shape)}")
        if self.validate and t.numel() and not torch.compiler.is_compiling():  # host read: eager only, no sync compiled
            with torch.no_grad():
                top = float(t.detach().double().norm(dim=-1).max())
            if not math.isfinite(top):
                _check_finite(t, "v")
            r = lmath.max_radius(scalar(self.c), t.dtype)
            if top > r:
                raise ValueError(
                    f"v: tangent norm {top:.4g} exceeds {r:.4g}, the largest radius the Lorentz model holds in "
                    f"{str(t.dtype)[6:]} (cosh(sqrt(c)·‖v‖)/sqrt(c) would overflow to inf); clip it "
                    f"(to_manifold(v, clip_r=...)) or rescale the head"
                    + (", or use float64" if t.dtype != torch.float64 else "")
                )
        return self.manifold.expmap0(lmath._pad(t.double()))

    @_float64_inside
    def logmap0(self, x: Any) -> Tensor:
        r"""Logarithmic map at the origin, spatial part (inverse of :meth:`expmap0`).

        :math:`\log_o(x)_s = \frac{\operatorname{arsinh}(\sqrt c\|x_s\|)}{\sqrt c\|x_s\|}\,x_s`
        (closed form, accurate down to ``x_s = 0``; see the class notes on geoopt's clamp).

        Parameters
        ----------
        x : Tensor, shape (..., d+1)
            Points on the hyperboloid.

        Returns
        -------
        Tensor, shape (..., d)
            Spatial coordinates of ``log_o(x)`` (its time coordinate is 0); norm = ``dist(o, x)``.

        Raises
        ------
        ValueError
            Off-manifold or non-finite points.
        """
        return self._log0(self._points(x, "x"))[..., 1:]

    @_float64_inside
    def expmap(self, x: Any, v: Any) -> Tensor:
        r"""Exponential map at ``x``, :math:`\cosh(\sqrt c\|v\|_{\mathcal L})\,x + \frac{\sinh(\sqrt c\|v\|_{\mathcal L})}{\sqrt c\|v\|_{\mathcal L}}\,v`.

        ``v`` is first projected onto :math:`T_x` (``geoopt.Lorentz.proju``) and the result
        onto the hyperboloid (``projx``). Closed form written here: geoopt's ``expmap``
        floors the tangent norm at 1e-4, which in float64 shifts ``x`` by ~5e-9·‖x‖ for
        steps shorter than that (e.g. EMA steps near convergence).

        Parameters
        ----------
        x : Tensor, shape (..., d+1)
            Base points on the hyperboloid.
        v : Tensor, shape (..., d+1)
            Ambient tangent vectors at ``x`` (:math:`\langle x, v\rangle_{\mathcal L} = 0`).

        Returns
        -------
        Tensor, shape (..., d+1)

        Raises
        ------
        ValueError
            Off-manifold base points or non-finite inputs.
        """
        xt = self._points(x, "x")
        vt = as_float_tensor(v, "v")
        if self.validate:
            _check_finite(vt, "v")
        if vt.shape[-1] != xt.shape[-1]:
            raise ValueError(f"v must be an ambient tangent vector with {xt.shape[-1]} coordinates, got {vt.shape[-1]}")
        out = self._exp(xt, vt.to(xt.dtype))
        if self.validate and out.numel() and not torch.compiler.is_compiling():  # host read: eager only
            with torch.no_grad():
                top = float(out.detach().abs().max())  # NaN/inf propagate
            dtype = _out_dtype((x, v), {})
            if not math.isfinite(top):
                top = float("inf")
            self._radius_guard(top, "expmap(x, v)", "would lie", dtype)
        return out

    @_float64_inside
    def logmap(self, x: Any, y: Any) -> Tensor:
        r"""Logarithmic map of ``y`` at ``x``, ambient coordinates (closed form).

        With :math:`w = \tfrac{c}{4}\|y - x\|^2_{\mathcal L} = \sinh^2(\sqrt c\,d/2)` and
        :math:`u = (y - x) - 2w\,x` (the part of ``y`` Minkowski-orthogonal to ``x``,
        :math:`\|u\|_{\mathcal L} = \sinh(\sqrt c d)/\sqrt c`),
        :math:`\log_x(y) = \frac{\operatorname{arsinh}\sqrt w}{\sqrt w\,\sqrt{1+w}}\,u`,
        whose Minkowski norm is ``d(x, y)``. Differences are taken directly, so close points
        keep their digits (geoopt's version under-shoots below ~1e-4; see class notes);
        it agrees with ``geoopt.Lorentz.logmap`` elsewhere.

        Parameters
        ----------
        x, y : Tensor, shape (..., d+1), broadcastable
            Points on the hyperboloid.

        Returns
        -------
        Tensor, shape (..., d+1)
            Tangent vectors at ``x`` (:math:`\langle x, v\rangle_{\mathcal L} = 0`).

        Raises
        ------
        ValueError
            Off-manifold or non-finite points, mismatched dimension.
        """
        xt, yt = self._pair(x, y)
        return self._log(xt, yt)

    def origin(self, d: int, *, dtype: torch.dtype | None = None, device: Any = None) -> Tensor:
        r"""The origin :math:`(1/\sqrt c, 0, \dots, 0)`.

        Parameters
        ----------
        d : int
            Intrinsic dimension (the point has ``d + 1`` coordinates).
        dtype, device : optional

        Returns
        -------
        Tensor, shape (d+1,)
        """
        o = torch.zeros(int(d) + 1, dtype=dtype or torch.get_default_dtype(), device=device)
        o[0] = scalar(self.c) ** -0.5
        return o

    # ------------------------------------------------------------------ ball conversion
    @_float64_inside
    def to_ball(self, x: Any) -> Tensor:
        r"""Map to the Poincaré ball of the same curvature: :math:`p = x_s/(1 + \sqrt c\,x_0)`.

        An isometry onto ``PoincareBall(c=c)`` (used for plotting, and as a cross-check).

        Parameters
        ----------
        x : Tensor, shape (..., d+1)
            Points on the hyperboloid.

        Returns
        -------
        Tensor, shape (..., d)
            Points with norm ``< 1/sqrt(c)``.

        Raises
        ------
        ValueError
            Off-manifold or non-finite points.
        """
        xt = self._points(x, "x")
        return lmath.to_ball(xt, self.c)

    @_float64_inside
    def from_ball(self, p: Any) -> Tensor:
        r"""Inverse of :meth:`to_ball`: :math:`x = \big(\frac{1 + c\|p\|^2}{\sqrt c(1 - c\|p\|^2)},\ \frac{2p}{1 - c\|p\|^2}\big)`.

        Parameters
        ----------
        p : Tensor, shape (..., d)
            Points of the Poincaré ball of curvature ``−c`` (norm ``< 1/sqrt(c)``).

        Returns
        -------
        Tensor, shape (..., d+1)
            Points on the hyperboloid.

        Raises
        ------
        ValueError
            Points outside the ball or non-finite.
        """
        pt = as_float_tensor(p, "p").double()
        _check_finite(pt, "p")
        if pt.dim() == 0:
            raise ValueError("p must have shape (..., d), got a scalar")
        p2 = pt.pow(2).sum(-1, keepdim=True)
        if bool((p2.detach() * self.c >= 1.0).any()):
            raise ValueError(
                f"p: point(s) lie outside the Poincaré ball of radius 1/sqrt(c) = {scalar(self.c) ** -0.5:.6g}"
            )
        return lmath.from_ball(pt, self.c)

    def _initial_means(self, x: Tensor, idx: Tensor, wcol: Tensor, denom: Tensor, K: int) -> Tensor:
        """Karcher start: the Lorentzian centroid ``s/sqrt(−c⟨s,s⟩_L)``, ``s`` = weighted mean.

        Closed form (Law et al., ICML 2019), exact for identical points and close to the
        Fréchet mean for a tight cluster, so few Karcher steps are needed. Empty groups
        (s = 0) fall back to the origin.
        """
        s = _segment_sum(x * wcol, idx, K) / denom
        mink = (s[..., 1:].pow(2).sum(-1, keepdim=True) - s[..., :1].pow(2)).neg()
        empty = mink <= 0
        mu = s / (self.c * mink.clamp_min(torch.finfo(s.dtype).tiny)).sqrt()
        o = self.origin(self._tangent_dim(x.shape[-1]), dtype=x.dtype, device=x.device)
        return torch.where(empty, o, mu)

    # batched maps for the shared Karcher / EMA code (ambient coordinates, geoopt, no checks)
    def _log(self, base: Tensor, x: Tensor) -> Tensor:
        return lmath.logmap(base, x, self.c)

    def _exp(self, base: Tensor, v: Tensor) -> Tensor:
        return self.manifold.projx(lmath.expmap(base, self.manifold.proju(base, v), self.c))

    def _log0(self, x: Tensor) -> Tensor:
        return lmath.logmap0(x, self.c)

    def _exp0(self, v: Tensor) -> Tensor:
        return self.manifold.expmap0(v)
