r"""Poincaré ball of curvature ``−c`` on ``geoopt.PoincareBall`` (paper 01 §3.1, Eqs. 2–3, 10).

The ball :math:`\mathbb{D}^d_c = \{x : c\|x\|^2 < 1\}` (radius :math:`1/\sqrt c`) with the
geodesic distance

.. math::
    d_c(u, v) = \frac{1}{\sqrt c}\,\operatorname{arcosh}\!\Big(1 +
        \frac{2c\,\|u-v\|^2}{(1-c\|u\|^2)(1-c\|v\|^2)}\Big)
      = \frac{2}{\sqrt c}\,\operatorname{arsinh}\!\Big(\sqrt{\tfrac{c\,\|u-v\|^2}
        {(1-c\|u\|^2)(1-c\|v\|^2)}}\Big).

Paper 01 Eq. 2 (with :math:`\kappa=-c`) writes the arcosh without the :math:`1/\sqrt c`
prefactor; the two agree at the paper's default :math:`c=1`. We keep the prefactor: it is
the true geodesic distance of curvature :math:`-c` (what ``geoopt.PoincareBall.dist``
returns) and the one with a Euclidean limit, :math:`d_c(u,v)\to 2\|u-v\|` as
:math:`c\to 0` (the conformal factor :math:`\lambda_x = 2/(1-c\|x\|^2)\to 2`).

The formulas are pure functions in :mod:`hierviz.geometry.poincare.math`; the class validates
inputs, computes :meth:`PoincareBall.pairwise_dist` there and takes the maps from geoopt.
"""

from __future__ import annotations

import math
from typing import Any

import geoopt
import torch

from hierviz.geometry._checks import DEFAULT_CURVATURE, scalar
from hierviz.geometry.base import (
    Geometry,
    Tensor,
    _check_finite,
    _fp32,
    as_float_tensor,
    check_curvature,
)
from hierviz.geometry.poincare import math as pmath
from hierviz.geometry.registry import register_geometry


@register_geometry("poincare")
class PoincareBall(Geometry):
    r"""Poincaré ball of sectional curvature ``−c`` (``c > 0``), paper 01 §3.1.

    The exponential/logarithmic maps, the projection and the broadcast distance are
    geoopt's (``geoopt.PoincareBall(c=c)``, curvature stored in float64 so that e.g.
    ``c = 1e-6`` is exact). :meth:`pairwise_dist`, the Karcher means and the EMA step are
    our own (closed form / vectorised).

    Parameters
    ----------
    c : float, default 1.0
        Curvature magnitude, ``c > 0``: the ball has radius ``1/sqrt(c)`` and sectional
        curvature ``-c`` (paper 01: :math:`\kappa = -c`, default :math:`\kappa=-1`).
    validate : bool, default True
        Check that inputs lie strictly inside the ball and are finite.
    learnable : bool, default False
        Make ``c`` a trainable parameter, geoopt's ``PoincareBall(learnable=True)``
        (``c = softplus(isp_c)``); the parameter lives in :attr:`manifold`, which the
        model's :class:`~hierviz.models.HyperbolicHead` registers so it is trained and
        checkpointed. Every distance and map then differentiates with respect to ``c``.

    Attributes
    ----------
    name : str
        ``"poincare"``.
    c : float
        The curvature magnitude.
    radius : float
        ``1/sqrt(c)``.
    manifold : geoopt.PoincareBall

    Raises
    ------
    ValueError
        If ``c <= 0`` or not finite.
    TypeError
        If ``c`` is not a real number.

    Notes
    -----
    Numerics (paper 01 §3.4/§4.2): points are kept at norm ``< (1-eps)/sqrt(c)`` by
    :meth:`proj`/:meth:`expmap0`/:meth:`expmap` (geoopt's margins: ``eps = 4e-3`` in float32,
    ``1e-5`` in float64); :meth:`dist`, :meth:`logmap0` and :meth:`logmap` are our closed
    forms, exact up to the boundary (geoopt's clamp its artanh argument at ``1 − 1e-7``; the
    paper uses ``1 − 1e-6``); the pairwise distance uses the arsinh form above with its squared
    argument floored at ``1e-12`` (float32) / ``1e-24`` (float64), which keeps gradients
    finite on the diagonal and near the boundary.
    """

    name = "poincare"
    hyperbolic = True
    display_name = "Poincaré ball"

    def __init__(self, c: float = DEFAULT_CURVATURE, validate: bool = True, *, learnable: bool = False) -> None:
        super().__init__(validate=validate)
        c0 = check_curvature(c, "c")
        self.learnable = bool(learnable)
        # float64 curvature: geoopt stores softplus^{-1}(c); in float32 c=1e-6 would become 9.5e-7.
        self.manifold = geoopt.PoincareBall(c=torch.tensor(c0, dtype=torch.float64), learnable=self.learnable)
        self._c = c0

    @property
    def c(self) -> Any:
        """The curvature magnitude: a float, or with ``learnable=True`` geoopt's
        ``softplus(isp_c)``, a 0-d float64 tensor that carries gradient."""
        return self.manifold.c if self.learnable else self._c

    @property
    def radius(self) -> float:
        """``1/sqrt(c)``, the ball's Euclidean radius."""
        return scalar(self.c) ** -0.5

    # ------------------------------------------------------------------ checks
    def check_point(self, x: Any, name: str = "x") -> None:
        """Raise ValueError unless every row of ``x`` lies strictly inside the ball.

        Parameters
        ----------
        x : Tensor, shape (..., d)
            Candidate points.
        name : str
            Argument name for the message.

        Raises
        ------
        ValueError
            If ``x`` has NaN/inf entries or some ``c·‖x‖² >= 1`` (norm ``>= 1/sqrt(c)``).
        TypeError
            If ``x`` is not numeric.
        """
        t = as_float_tensor(x, name)
        if t.dim() == 0:
            raise ValueError(f"{name} must have at least 1 dimension (..., d), got a scalar")
        if t.numel() == 0:
            return
        with torch.no_grad():
            sq = t.detach().pow(2).sum(-1)
            top = float(sq.max())  # one reduction and one host sync; NaN/inf propagate
            if not math.isfinite(top):
                _check_finite(t, name)
            if top * self.c >= 1.0:
                bad = sq * self.c >= 1.0
                worst = top**0.5
                raise ValueError(
                    f"{name}: {int(bad.sum())} point(s) lie outside the Poincaré ball of curvature "
                    f"-{scalar(self.c):g} (max norm {worst:.6g} >= radius 1/sqrt(c) = {self.radius:.6g}); "
                    f"map raw features with expmap0() or clip them with proj()"
                )

    @_fp32
    def proj(self, x: Any) -> Tensor:
        """Clip norms to ``(1 − eps)/sqrt(c)`` (``geoopt.PoincareBall.projx``).

        Parameters
        ----------
        x : Tensor, shape (..., d)
            Any finite vectors.

        Returns
        -------
        Tensor, shape (..., d)
            Points strictly inside the ball (``eps = 4e-3`` float32, ``1e-5`` float64).

        Raises
        ------
        ValueError
            If ``x`` is non-finite.
        """
        t = as_float_tensor(x, "x")
        _check_finite(t, "x")
        return self.manifold.projx(t)

    # ------------------------------------------------------------------ distances
    @_fp32
    def dist(self, x: Any, y: Any) -> Tensor:
        """Geodesic distance, broadcast over leading dims (``geoopt.PoincareBall.dist``).

        Parameters
        ----------
        x, y : Tensor, shape (..., d), broadcastable
            Points inside the ball.

        Returns
        -------
        Tensor, shape (...)
            ``(2/sqrt(c))·arsinh(sqrt(c)‖x − y‖ / sqrt((1 − c‖x‖²)(1 − c‖y‖²)))`` — paper 01
            Eq. 2 (times ``1/sqrt(c)``), :func:`hierviz.geometry.poincare.math.dist`: exact up to
            the boundary in float64 (geoopt's ``dist`` clamps its artanh argument at
            ``1 − 1e-7`` and saturates at ``≈ 16.8/√c``; hierviz 0.2 returned that), the same
            formulation as :meth:`pairwise_dist`.

        Raises
        ------
        ValueError
            Points outside the ball, non-finite values, mismatched ``d``.
        """
        xt, yt = self._pair(x, y)
        return pmath.dist(xt, yt, self.c)

    @_fp32
    def pairwise_dist(self, x: Any, y: Any = None) -> Tensor:
        r"""All-pairs geodesic distances in closed form over a Gram matrix (paper 01 Eq. 2).

        With :math:`w_{ij} = \max\big(\frac{\|x_i\|^2 + \|y_j\|^2 - 2\langle x_i, y_j\rangle}
        {(1-c\|x_i\|^2)(1-c\|y_j\|^2)}, \epsilon\big)`, returns
        :math:`\frac{2}{\sqrt c}\operatorname{arsinh}(\sqrt{c\,w_{ij}})`, which equals
        :math:`\frac{1}{\sqrt c}\operatorname{arcosh}(1 + 2c\,w_{ij})`. Memory is
        ``O(B·M)``: no ``B×M×d`` intermediate (geoopt's ``dist(x[:, None], y[None])``
        builds several).

        Parameters
        ----------
        x : Tensor, shape (..., B, d)
            Points inside the ball.
        y : Tensor, shape (..., M, d), optional
            Second set; ``None`` means ``x`` against itself, with an exactly zero
            diagonal whose gradient is zero (finite everywhere).

        Returns
        -------
        Tensor, shape (..., B, M)
            Non-negative distances (float32 or float64). Agrees with geoopt's ``dist``
            (and :meth:`dist`) to ~3e-5 (float32) / ~1e-12 (float64) below
            ``2·artanh(1 − 1e-7)/√c ≈ 16.8/√c``. Beyond that geoopt's ``dist`` is capped by
            the clamp of its artanh argument, in float32 and float64 alike (not a float32
            effect); this closed form has no cap (two float64 points at norm ``1 − 1e-9``
            on opposite sides: 42.8 here, 16.8 from geoopt). In float32 the ball's
            ``proj`` margin keeps every point within ``2·artanh(1 − 4e-3)/√c ≈ 6.2/√c``
            of the origin, so no float32 distance reaches the cap. Near-duplicate pairs close to the boundary lose digits
            in float32 (Gram cancellation: error ~ sqrt(1e-7)/(1 − c‖x‖²)); use float64
            there. With ``y=None`` the diagonal is exactly 0.

        Notes
        -----
        Under CUDA, TF32 matmuls (``torch.backends.cuda.matmul.allow_tf32``) would cut
        the Gram accuracy to ~1e-3; leave them off for hyperbolic distances.

        Raises
        ------
        ValueError
            Points outside the ball, non-finite values, fewer than 2 dims, mismatched ``d``.
        """
        xt, yt = self._pairwise_inputs(x, y)
        return pmath.pairwise_dist(xt, yt, self.c)

    # ------------------------------------------------------------------ maps
    @_fp32
    def expmap0(self, v: Any) -> Tensor:
        r"""Exponential map at the origin, :math:`\tanh(\sqrt c\|v\|)\,v/(\sqrt c\|v\|)`.

        ``geoopt.PoincareBall.expmap0`` followed by its projection.

        Parameters
        ----------
        v : Tensor, shape (..., d)
            Tangent vectors at the origin (e.g. raw head outputs).

        Returns
        -------
        Tensor, shape (..., d)
            Points inside the ball (norm ``<= (1-eps)/sqrt(c)``).

        Raises
        ------
        ValueError
            If ``v`` is non-finite.
        """
        t = as_float_tensor(v, "v")
        if self.validate:
            _check_finite(t, "v")
        return self._exp0(t)  # geoopt's map; the closed form under torch.compile (geoopt branches on c)

    @_fp32
    def logmap0(self, x: Any) -> Tensor:
        r"""Logarithmic map at the origin, :math:`\operatorname{artanh}(\sqrt c\|x\|)\,x/(\sqrt c\|x\|)`.

        Parameters
        ----------
        x : Tensor, shape (..., d)
            Points inside the ball.

        Returns
        -------
        Tensor, shape (..., d)
            Tangent vectors at the origin (:func:`hierviz.geometry.poincare.math.logmap0`: the
            artanh is clamped only at the largest float below 1, so float64 points near the
            boundary keep their distance; geoopt's ``logmap0`` stops at norm ``8.41/√c``).

        Raises
        ------
        ValueError
            Points outside the ball or non-finite.
        """
        return pmath.logmap0(self._points(x, "x"), self.c)

    @_fp32
    def expmap(self, x: Any, v: Any) -> Tensor:
        r"""Exponential map at ``x``: :math:`x \oplus_c \tanh(\sqrt c\,\lambda_x\|v\|/2)\,v/(\sqrt c\|v\|)`.

        Parameters
        ----------
        x : Tensor, shape (..., d)
            Base points inside the ball.
        v : Tensor, shape (..., d)
            Tangent vectors at ``x`` (broadcastable with ``x``).

        Returns
        -------
        Tensor, shape (..., d)
            Points inside the ball (``geoopt.PoincareBall.expmap``, projected).

        Raises
        ------
        ValueError
            Base points outside the ball or non-finite inputs.
        """
        xt, vt = self._base_and_tangent(x, v)
        return self.manifold.expmap(xt, vt.to(xt.dtype))

    @_fp32
    def logmap(self, x: Any, y: Any) -> Tensor:
        r"""Logarithmic map of ``y`` at ``x``: :math:`\frac{2}{\sqrt c\lambda_x}\operatorname{artanh}(\sqrt c\|{-x}\oplus_c y\|)\frac{-x\oplus_c y}{\|-x\oplus_c y\|}`.

        Parameters
        ----------
        x, y : Tensor, shape (..., d), broadcastable
            Points inside the ball.

        Returns
        -------
        Tensor, shape (..., d)
            Tangent vectors at ``x`` (:func:`hierviz.geometry.poincare.math.logmap`: direction
            ``−x ⊕_c y``, Riemannian length :meth:`dist`, exact up to the boundary).

        Raises
        ------
        ValueError
            Points outside the ball, non-finite values, mismatched ``d``.
        """
        xt, yt = self._pair(x, y)
        return pmath.logmap(xt, yt, self.c)

    def origin(self, d: int, *, dtype: torch.dtype | None = None, device: Any = None) -> Tensor:
        """The centre of the ball.

        Parameters
        ----------
        d : int
            Dimension.
        dtype, device : optional

        Returns
        -------
        Tensor, shape (d,)
            Zeros.
        """
        return torch.zeros(int(d), dtype=dtype or torch.get_default_dtype(), device=device)

    # batched maps for the shared Karcher / EMA code (no checks): exact log and distance, geoopt's exp
    def _log(self, base: Tensor, x: Tensor) -> Tensor:
        return pmath.logmap(base, x, self.c)

    def _dist_rows(self, a: Tensor, b: Tensor) -> Tensor:
        return pmath.dist(a, b, self.c)

    def _exp(self, base: Tensor, v: Tensor) -> Tensor:
        if torch.compiler.is_compiling() and not self.learnable:
            return pmath.expmap(base, v, self.c)
        return self.manifold.expmap(base, v)

    def _log0(self, x: Tensor) -> Tensor:
        return pmath.logmap0(x, self.c)

    def _exp0(self, v: Tensor) -> Tensor:
        if torch.compiler.is_compiling() and not self.learnable:
            return pmath.expmap0(v, self.c)
        return self.manifold.expmap0(v)
