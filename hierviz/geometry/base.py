"""The :class:`Geometry` interface shared by the unit sphere, the Poincaré ball and the Lorentz model.

A geometry bundles what the hierarchy-aware losses and metrics need from an embedding
space (paper 01 §3.1 and §3.4): a distance, a pairwise distance matrix, a similarity,
a Fréchet/Karcher mean, an EMA prototype step, the exponential/logarithmic maps and
:meth:`Geometry.to_manifold` (head outputs → points). Capability attributes
(``hyperbolic``, ``display_name``, ``config()``, ``curvature``) let other code treat any
registered geometry alike. This module also holds the shared input checks
(:func:`as_float_tensor`, :func:`check_curvature`, the ``_check_*`` helpers) and
:func:`full_precision`; the closed-form pairwise kernel is in ``_kernels.py``, the means in
``frechet.py``, the formulas in each manifold's ``math.py``.

All hyperbolic arithmetic runs in float32 or float64: float16/bfloat16 inputs are
upcast to float32 and autocast is switched off inside every method.
"""

from __future__ import annotations

import abc
from typing import Any

import torch

from hierviz.geometry import frechet as _frechet
from hierviz.geometry._checks import (  # noqa: F401  (0.1 import paths: hierviz.geometry.base.*)
    DEFAULT_CURVATURE,
    F,
    Tensor,
    _check_eta,
    _check_finite,
    _check_index,
    _check_num_groups,
    _check_steps,
    _check_weights,
    _fp32,
    _segment_sum,
    as_float_tensor,
    check_curvature,
    full_precision,
    scalar,
)
from hierviz.geometry._kernels import (  # noqa: F401  (0.1 import paths)
    SQ_EPS,
    _ScaledAsinhSqrt,
    _sq_eps,
    augmented_gram,
    scaled_asinh_sqrt,
)


class Geometry(abc.ABC):
    """One embedding space: distances, means and maps (paper 01 §3.1).

    Subclasses: :class:`~hierviz.geometry.Euclidean` (unit-norm vectors),
    :class:`~hierviz.geometry.PoincareBall` (curvature ``-c``),
    :class:`~hierviz.geometry.Lorentz` (curvature ``-c``).

    Code outside ``geometry/`` never switches on :attr:`name`: it reads the capability
    attributes (:attr:`hyperbolic`, :attr:`display_name`) and calls the methods.

    Attributes
    ----------
    name : str
        Registry name: ``"euclidean"``, ``"poincare"``, ``"lorentz"`` or a user's.
    hyperbolic : bool
        True for the hyperbolic spaces (points are checked against the manifold, heads use
        ``expmap0``), False for the unit sphere.
    display_name : str
        For tables and figures ("Poincaré ball", ...).
    c : float
        Curvature magnitude of a hyperbolic space (sectional curvature ``-c``, ``c > 0``);
        0.0 for :class:`~hierviz.geometry.Euclidean`, whose distances and maps are those of
        flat ``R^d`` (chordal distance between unit vectors).
    curvature : float
        Signed sectional curvature of the space the distances and maps use: ``-c`` for the
        hyperbolic spaces, ``0.0`` for Euclidean (the unit sphere's own curvature ``+1`` is
        used by no distance or map here).
    manifold : geoopt.Manifold
        The geoopt manifold providing the maps.
    validate : bool
        When True (default) ``dist``/``pairwise_dist``/``mean``/... call
        :meth:`check_point` on their inputs (one host sync per call). Set False in a hot
        loop once the pipeline is trusted.

    Notes
    -----
    Methods accept torch tensors or numpy arrays, broadcast over leading dimensions
    where stated, keep autograd history, and compute in float32 or float64
    (float16/bfloat16 are upcast; autocast is disabled inside).
    """

    name: str = "geometry"
    hyperbolic: bool = False
    display_name: str = "geometry"
    c: float = 0.0
    #: True for the Euclidean space: the mean is the arithmetic mean in closed form.
    _flat: bool = False

    def __init__(self, validate: bool = True) -> None:
        self.validate = bool(validate)

    # ------------------------------------------------------------------ helpers
    def __repr__(self) -> str:
        return f"{type(self).__name__}(c={scalar(self.c):g})"

    @property
    def curvature(self) -> float:
        """Signed sectional curvature: ``-c`` (hyperbolic) or ``0.0`` (Euclidean, flat maps).

        Examples
        --------
        >>> from hierviz.geometry import Euclidean, Lorentz
        >>> Lorentz(c=0.5).curvature, Euclidean().curvature
        (-0.5, 0.0)
        """
        return -scalar(self.c) if self.c else 0.0

    def to_manifold(self, v: Any, clip_r: float | None = None) -> Tensor:
        r"""Map head outputs onto the manifold: clip the norm at ``clip_r``, then ``proj(expmap0(v))``.

        Feature clipping :math:`v \leftarrow \min(1, r/\|v\|)\,v` (Guo et al., CVPR 2022, Eq. 6)
        followed by the exponential map at the origin (paper 01 §3.1; paper 03 §2.2,
        :math:`h = \exp_0(e)`). Runs with autocast disabled, in float32 (float64 inputs stay
        float64): the arithmetic of ``hierviz.models.HyperbolicHead`` exactly.
        :class:`~hierviz.geometry.Euclidean` overrides it with L2 normalisation.

        Parameters
        ----------
        v : Tensor, shape (..., d)
            Raw head outputs, read as tangent vectors at the origin (any float dtype).
        clip_r : float, optional
            Maximal tangent norm ``r > 0``; ``None`` or ``inf``: no clipping (then only
            :meth:`proj` keeps points off the boundary).

        Returns
        -------
        Tensor, shape (..., point_dim(d))
            Points on the manifold (Lorentz adds the time coordinate), float32 or float64.

        Raises
        ------
        ValueError
            ``clip_r <= 0`` or NaN, non-finite ``v``, or ``v`` 0-d / with ``d = 0``.

        Examples
        --------
        >>> import torch
        >>> from hierviz.geometry import PoincareBall
        >>> z = PoincareBall(c=1.0).to_manifold(torch.tensor([[30.0, 40.0]]), clip_r=2.0)
        >>> round(float(z.norm()), 4)  # tanh(2)
        0.964
        """
        if clip_r is not None and not (float(clip_r) > 0):
            raise ValueError(f"clip_r must be > 0 (or None to disable clipping), got {clip_r!r}")
        t = v if isinstance(v, Tensor) else as_float_tensor(v, "v")
        if t.dim() == 0 or t.shape[-1] == 0:
            raise ValueError(
                f"v must have shape (..., d) with d >= 1 (one row per embedding), got shape {tuple(t.shape)}"
            )
        with torch.autocast(device_type=t.device.type, enabled=False):
            t = t.to(torch.float64 if t.dtype == torch.float64 else torch.float32)
            if clip_r is not None and float(clip_r) != float("inf"):
                norm = t.norm(dim=-1, keepdim=True).clamp_min(1e-15)
                t = t * torch.clamp(float(clip_r) / norm, max=1.0)
            return self.proj(self.expmap0(t))

    def config(self) -> dict:
        """Constructor arguments by name: ``get_geometry(**g.config()) == g``.

        Examples
        --------
        >>> from hierviz.geometry import get_geometry
        >>> get_geometry("lorentz", c=0.5).config()
        {'name': 'lorentz', 'c': 0.5}
        """
        out = {"name": self.name}
        if getattr(self, "hyperbolic", False):
            out["c"] = scalar(self.c)
        return out

    def __eq__(self, other: object) -> bool:
        if getattr(self, "learnable", False) or getattr(other, "learnable", False):
            return self is other  # a trainable curvature changes: only the same object is equal
        return type(self) is type(other) and scalar(self.c) == scalar(other.c)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        if getattr(self, "learnable", False):
            return id(self)
        return hash((type(self).__name__, scalar(self.c)))

    def point_dim(self, d: int) -> int:
        """Number of coordinates of a point whose tangent space has dimension ``d``.

        Parameters
        ----------
        d : int
            Intrinsic (tangent) dimension.

        Returns
        -------
        int
            ``d`` (Euclidean, Poincaré) or ``d + 1`` (Lorentz, ambient coordinates).
        """
        return int(d)

    def _points(self, x: Any, name: str, min_dim: int = 1) -> Tensor:
        t = as_float_tensor(x, name)
        if t.dim() < min_dim:
            raise ValueError(f"{name} must have at least {min_dim} dimension(s), got shape {tuple(t.shape)}")
        if self.validate and not torch.compiler.is_compiling():  # value check: eager only (no sync when compiled)
            self.check_point(t, name)
        return t

    def _pair(self, x: Any, y: Any, xname: str = "x", yname: str = "y") -> tuple[Tensor, Tensor]:
        xt = self._points(x, xname)
        yt = self._points(y, yname)
        if xt.shape[-1] != yt.shape[-1]:
            raise ValueError(
                f"{xname} and {yname} must have the same last dimension, got {xt.shape[-1]} and {yt.shape[-1]}"
            )
        try:
            torch.broadcast_shapes(xt.shape, yt.shape)
        except RuntimeError:  # name both shapes, not torch's broadcasting message
            raise ValueError(
                f"{xname} has shape {tuple(xt.shape)} and {yname} has shape {tuple(yt.shape)}: their leading "
                f"(batch) dimensions do not broadcast; use pairwise_dist for all pairs"
            ) from None
        dtype = torch.promote_types(xt.dtype, yt.dtype)
        return xt.to(dtype), yt.to(device=xt.device, dtype=dtype)

    @staticmethod
    def _tangent_at(xt: Tensor, vt: Tensor) -> None:
        """Raise ValueError unless tangent vectors ``v`` match the base points ``x`` (last dim, broadcast)."""
        if vt.dim() == 0 or vt.shape[-1] != xt.shape[-1]:
            raise ValueError(
                f"v must have the same last dimension as x ({xt.shape[-1]}), got shape {tuple(vt.shape)} "
                f"for x of shape {tuple(xt.shape)}"
            )
        try:
            torch.broadcast_shapes(xt.shape, vt.shape)
        except RuntimeError:
            raise ValueError(
                f"x has shape {tuple(xt.shape)} and v has shape {tuple(vt.shape)}: their leading (batch) "
                "dimensions do not broadcast"
            ) from None

    def _base_and_tangent(self, x: Any, v: Any) -> tuple[Tensor, Tensor]:
        """Base points ``x`` and tangent vectors ``v`` at them, checked (:meth:`_tangent_at`; finite ``v``)."""
        xt = self._points(x, "x")
        vt = as_float_tensor(v, "v")
        self._tangent_at(xt, vt)
        if self.validate:
            _check_finite(vt, "v")
        return xt, vt

    def _pairwise_inputs(self, x: Any, y: Any) -> tuple[Tensor, Tensor | None]:
        xt = self._points(x, "x", min_dim=2)
        if y is None:
            return xt, None
        yt = self._points(y, "y", min_dim=2)
        if xt.shape[-1] != yt.shape[-1]:
            raise ValueError(f"x and y must have the same last dimension, got {xt.shape[-1]} and {yt.shape[-1]}")
        dtype = torch.promote_types(xt.dtype, yt.dtype)
        return xt.to(dtype), yt.to(device=xt.device, dtype=dtype)

    @staticmethod
    def _gram(x: Tensor, y: Tensor | None) -> Tensor:
        """``x @ yᵀ`` over the last dim; ``x @ xᵀ`` made exactly symmetric when ``y is None``."""
        g = x @ (x if y is None else y).transpose(-1, -2)
        if y is None:
            g = 0.5 * (g + g.transpose(-1, -2))
        return g

    @staticmethod
    def _augmented_gram(left: Tensor, right: Tensor, symmetric: bool) -> Tensor:
        """``left @ rightᵀ``: one matmul yields ``a_i b_j (‖x_i‖² + ‖y_j‖² − 2⟨x_i, y_j⟩)``.

        ``left_i = a_i [−2 x_i, ‖x_i‖², 1]`` and ``right_j = b_j [y_j, 1, ‖y_j‖²]`` (built by
        the caller), so the squared-distance matrix costs one GEMM and no ``B×M``
        broadcasting passes. ``symmetric`` (``y is None``) averages with the transpose so
        the result is exactly symmetric (:func:`hierviz.geometry._kernels.augmented_gram`).
        """
        return augmented_gram(left, right, symmetric)

    @staticmethod
    def _zero_diagonal(d: Tensor) -> Tensor:
        n = d.shape[-1]
        eye = torch.eye(n, dtype=torch.bool, device=d.device)
        return d.masked_fill(eye, 0.0)

    # ------------------------------------------------------------------ interface
    @abc.abstractmethod
    def check_point(self, x: Any, name: str = "x") -> None:
        """Raise ValueError if ``x`` is not a valid point of this space (see subclasses)."""

    @abc.abstractmethod
    def proj(self, x: Any) -> Tensor:
        """Project ``x`` onto the manifold (see subclasses)."""

    @abc.abstractmethod
    def dist(self, x: Any, y: Any) -> Tensor:
        """Geodesic distance between broadcast rows of ``x`` and ``y`` (see subclasses)."""

    @abc.abstractmethod
    def pairwise_dist(self, x: Any, y: Any = None) -> Tensor:
        """All-pairs distance matrix via a Gram matrix (see subclasses)."""

    #: Distances below ``NEAR / √c`` (``NEAR`` on a flat geometry) are what :meth:`refine_near` recomputes.
    NEAR = 1e-3

    def refine_near(self, D: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """Recompute the entries of a ``pairwise_dist(x, y)`` matrix below ``NEAR / √c`` by :meth:`dist`, in place.

        ``pairwise_dist`` works from a Gram matrix, whose cancellation scatters the distance of two
        equal points around 0 (by ~1e-8 in float64); :meth:`dist` takes the differences, so equal
        points are exactly 0 apart and near-duplicates keep their digits. Retrieval evaluation
        calls this, so a collapsed embedding's tied block ties exactly (no gradient is kept).

        Parameters
        ----------
        D : Tensor, shape (B, M), float
            ``pairwise_dist(x, y)``; modified in place.
        x : Tensor, shape (B, d)
        y : Tensor, shape (M, d)

        Returns
        -------
        Tensor
            ``D``.

        Examples
        --------
        >>> from hierviz.geometry import PoincareBall
        >>> ball = PoincareBall(1.0)
        >>> x = ball.expmap0(torch.tensor([[0.3, 0.1], [0.3, 0.1]], dtype=torch.float64))
        >>> float(ball.refine_near(ball.pairwise_dist(x[:1], x[1:]), x[:1], x[1:]))
        0.0
        """
        c = scalar(self.c) if self.c else 0.0
        near = self.NEAR / c**0.5 if c > 0 else self.NEAR
        with torch.no_grad():
            i, j = torch.nonzero(D < near, as_tuple=True)
            for a in range(0, len(i), 1 << 18):  # in slices: a collapsed block can hold millions of pairs
                ii, jj = i[a : a + (1 << 18)], j[a : a + (1 << 18)]
                D[ii, jj] = self.dist(x[ii], y[jj]).to(D.dtype)
        return D

    @abc.abstractmethod
    def expmap0(self, v: Any) -> Tensor:
        """Exponential map at the origin (see subclasses)."""

    @abc.abstractmethod
    def logmap0(self, x: Any) -> Tensor:
        """Logarithmic map at the origin (see subclasses)."""

    @abc.abstractmethod
    def expmap(self, x: Any, v: Any) -> Tensor:
        """Exponential map at ``x`` (see subclasses)."""

    @abc.abstractmethod
    def logmap(self, x: Any, y: Any) -> Tensor:
        """Logarithmic map of ``y`` at ``x`` (see subclasses)."""

    # Ambient-coordinate maps used by the Karcher iteration (Lorentz works in d+1 coords).
    @abc.abstractmethod
    def _log(self, base: Tensor, x: Tensor) -> Tensor:
        """Batched ``log_base(x)`` in the coordinates the Karcher average is taken in."""

    @abc.abstractmethod
    def _exp(self, base: Tensor, v: Tensor) -> Tensor:
        """Batched ``exp_base(v)`` in the same coordinates as :meth:`_log`."""

    @abc.abstractmethod
    def _log0(self, x: Tensor) -> Tensor:
        """``log_0(x)`` in the ambient tangent coordinates used by :meth:`_exp0`."""

    @abc.abstractmethod
    def _exp0(self, v: Tensor) -> Tensor:
        """``exp_0(v)`` taking ambient tangent coordinates."""

    @_fp32
    def similarity(self, x: Any, y: Any = None) -> Tensor:
        """Pairwise similarity before dividing by the temperature (paper 01 Eq. 1).

        Parameters
        ----------
        x : Tensor, shape (..., B, D)
            Points on the manifold.
        y : Tensor, shape (..., M, D), optional
            Second set; ``None`` means ``x`` against itself.

        Returns
        -------
        Tensor, shape (..., B, M)
            ``-pairwise_dist(x, y)`` for the hyperbolic spaces (Eq. 1 without ``1/τ``);
            the Euclidean space overrides this with cosine similarity.

        Raises
        ------
        ValueError
            As :meth:`pairwise_dist`.
        """
        return -self.pairwise_dist(x, y)

    @_fp32
    def to_tangent0(self, x: Any) -> Tensor:
        """Features for a Euclidean probe: ``logmap0(x)`` (identity for Euclidean).

        Parameters
        ----------
        x : Tensor, shape (..., D)
            Points on the manifold.

        Returns
        -------
        Tensor, shape (..., d)
            Tangent vectors at the origin (``d = D`` except Lorentz, where ``d = D - 1``).

        Raises
        ------
        ValueError
            If ``x`` is not on the manifold.
        """
        return self.logmap0(x)

    @abc.abstractmethod
    def origin(self, d: int, *, dtype: torch.dtype | None = None, device: Any = None) -> Tensor:
        """The origin (see subclasses)."""

    # ------------------------------------------------------------------ means
    @_fp32
    def group_mean(
        self,
        x: Any,
        index: Any,
        num_groups: int,
        steps: int | None = None,
        init: Any = None,
        *,
        weights: Any = None,
        allow_empty: bool = False,
        beta: float = 1.0,
        tol: float | None = None,
        max_steps: int = _frechet.MAX_STEPS,
    ) -> Tensor | tuple[Tensor, Tensor]:
        r"""Per-group Fréchet/Karcher means, all groups at once (paper 01 Eq. 3).

        Each step, for every group :math:`g` at once,

        .. math::
            \bar v_g = \frac{\sum_{i: g_i=g} w_i \log_{\mu_g}(x_i)}{\sum_{i: g_i=g} w_i},
            \qquad \mu_g \leftarrow \exp_{\mu_g}(\beta\,\bar v_g),

        i.e. the fixed point is taken in the tangent space at the *current estimate*
        (not at the origin), with segment sums (``index_add``) instead of a loop over
        groups. Euclidean: the (weighted) arithmetic mean, ``steps``/``init`` unused.

        Parameters
        ----------
        x : Tensor, shape (n, D)
            Points on the manifold (float32/float64; half precision is upcast).
        index : LongTensor, shape (n,)
            Group id of each row, in ``[0, num_groups)``.
        num_groups : int
            K, the number of groups (rows of the output).
        steps : int or None, default None
            ``None`` (default): iterate until converged, i.e. every non-empty group's
            Riemannian gradient norm is at most ``tol`` (default
            :data:`~hierviz.geometry.frechet.DEFAULT_TOL` = 1e-6), at most ``max_steps``
            steps. An int: exactly that many Karcher fixed-point steps when ``tol`` is None
            (paper 01: :math:`T_{mean}=3`; no host synchronisation in the loop, so it runs
            inside compiled training steps), or at most that many with ``tol``. 0 returns
            the initial estimate.
        init : Tensor, shape (K, D), optional
            Starting estimates (e.g. the EMA prototypes, paper 01 §4.2). Default: the
            origin-tangent mean :math:`\exp_0(\mathrm{mean}_i \log_0 x_i)` per group
            (Poincaré) or the Lorentzian centroid (Lorentz, see :class:`Lorentz`).
            Empty groups return their ``init`` row.
        weights : Tensor, shape (n,), optional
            Non-negative weights (default 1). A group whose weights sum to 0 is empty.
        allow_empty : bool, default False
            Without ``init``, an empty group raises ValueError unless this is True, in
            which case its row is the origin (zeros for Euclidean) and a mask is returned.
        beta : float, default 1.0
            Step size :math:`\beta` of Eq. 3. Halved per group, at most 8 times, while
            the step would increase the Fréchet objective :math:`\sum_i w_i d^2(\mu_g, x_i)`
            (plain Eq. 3 with :math:`\beta=1` can overshoot across the origin for a spread
            group near the boundary); see ``_karcher_step``. A step that raises the
            objective is never taken.
        tol : float, optional
            Stop once every non-empty group's Fréchet gradient norm
            :math:`\|\bar v_g\|_{\mu_g}` (:func:`hierviz.geometry.frechet.riemannian_grad_norm`)
            is at most ``tol`` (one host synchronisation per step). ``None`` with an int
            ``steps``: run exactly ``steps`` steps; with ``steps=None``: 1e-6. Reached in
            float32 and float64 alike (the line search compares the objective in float64).
        max_steps : int, default 100
            Cap on the steps when ``steps`` is None.

        Returns
        -------
        Tensor, shape (K, D)
            The means (same dtype as ``x``).
        Tensor, shape (K,), bool
            Only when ``allow_empty=True``: True for groups that had members.

        Raises
        ------
        ValueError
            If ``x``/``init`` are off the manifold or non-finite, shapes disagree,
            ``index`` is out of range, weights are negative, or a group is empty while
            ``init is None and not allow_empty`` (the message lists the empty groups).
        TypeError
            For non-integer ``index``/``num_groups``/``steps``.
        """
        return _frechet.group_mean(
            self,
            x,
            index,
            num_groups,
            steps=steps,
            init=init,
            weights=weights,
            allow_empty=allow_empty,
            beta=beta,
            tol=tol,
            max_steps=max_steps,
        )

    def _karcher_step(
        self,
        mu: Tensor,
        vbar: Tensor,
        x: Tensor,
        idx: Tensor,
        w: Tensor,
        K: int,
        beta: float,
        max_halvings: int = 8,
        *,
        sync: bool = True,
    ) -> Tensor:
        r"""One step of Eq. 3, :math:`\mu_g \leftarrow \exp_{\mu_g}(\beta_g \bar v_g)`, made monotone.

        With the paper's :math:`\beta = 1` the plain fixed point can overshoot and swing
        across the origin for a widely spread group near the boundary (the Fréchet
        objective :math:`F_g(\mu) = \sum_i w_i d^2(\mu, x_i)` then *increases*). Here
        :math:`\beta_g` is halved, per group and at most ``max_halvings`` times, while
        :math:`F_g` would go up; groups where the full step helps take it unchanged, so
        compact groups follow Eq. 3 exactly. The objective is evaluated without gradient;
        the returned estimate stays differentiable with respect to ``x``.
        """
        return _frechet.karcher_step(self, mu, vbar, x, idx, w, K, beta, max_halvings=max_halvings, sync=sync)

    def _dist_rows(self, a: Tensor, b: Tensor) -> Tensor:
        """Row-wise geodesic distance via the geoopt manifold, unvalidated (internal, for the mean)."""
        return self.manifold.dist(a, b)

    def _tangent_dim(self, D: int) -> int:
        return D

    def _initial_means(self, x: Tensor, idx: Tensor, wcol: Tensor, denom: Tensor, K: int) -> Tensor:
        """Default Karcher start: the origin-tangent mean ``exp_0(Σ w log_0 x / Σ w)`` per group."""
        return self._exp0(_segment_sum(self._log0(x) * wcol, idx, K) / denom)

    @_fp32
    def mean(
        self,
        x: Any,
        weights: Any = None,
        steps: int | None = None,
        init: Any = None,
        *,
        tol: float | None = None,
        max_steps: int = _frechet.MAX_STEPS,
    ) -> Tensor:
        r"""Fréchet/Karcher mean of a set of points (paper 01 Eq. 3; Euclidean: arithmetic mean).

        Parameters
        ----------
        x : Tensor, shape (n, D)
            Points on the manifold, n >= 1.
        weights : Tensor, shape (n,), optional
            Non-negative weights with a positive sum (default: uniform).
        steps : int or None, default None
            ``None``: iterate to convergence (Riemannian gradient norm <= ``tol``, default
            1e-6, at most ``max_steps`` steps). An int: that many fixed-point steps in the
            tangent space at the current estimate (paper 01: :math:`T_{mean}=3`,
            :math:`\beta=1`), fewer if ``tol`` is given and reached first.
        init : Tensor, shape (D,), optional
            Starting estimate (default: :math:`\exp_0(\mathrm{mean}_i \log_0 x_i)`;
            Lorentz: the Lorentzian centroid).
        tol : float, optional
            Gradient-norm tolerance (see :meth:`group_mean`).
        max_steps : int, default 100
            Cap on the steps when ``steps`` is None.

        Returns
        -------
        Tensor, shape (D,)
            The mean, differentiable with respect to ``x`` (and ``weights``).

        Raises
        ------
        ValueError
            If ``x`` is empty, off the manifold or non-finite, or weights sum to 0.
        """
        return _frechet.mean(self, x, weights=weights, steps=steps, init=init, tol=tol, max_steps=max_steps)

    @_fp32
    def ema_step(self, proto: Any, x: Any, index: Any, eta: float) -> Tensor:
        r"""One EMA update of prototypes from a minibatch (paper 01 Eq. 9 / Eq. 10).

        Euclidean (Eq. 9): :math:`c_g \leftarrow (1-\eta)\,c_g + \eta\,\bar z_g` with
        :math:`\bar z_g` the batch mean of group g. Hyperbolic (Eq. 10): one Karcher step
        at the prototype's own basepoint,
        :math:`c_g \leftarrow \exp_{c_g}\big(\eta\,\tfrac{1}{|B_g|}\sum_{z\in B_g}\log_{c_g} z\big)`.
        All groups are updated at once (``index_add``); groups absent from the batch are
        returned unchanged.

        Parameters
        ----------
        proto : Tensor, shape (K, D)
            Current prototypes (on the manifold).
        x : Tensor, shape (n, D)
            Minibatch embeddings.
        index : LongTensor, shape (n,)
            Prototype (group) id of each row of ``x``, in ``[0, K)``.
        eta : float
            EMA rate in ``[0, 1]`` (paper 01: 0.01–0.1).

        Returns
        -------
        Tensor, shape (K, D)
            Updated prototypes. Autograd history is kept; the paper stops gradients
            through prototype updates, so call under ``torch.no_grad()`` or detach.

        Raises
        ------
        ValueError
            Off-manifold/non-finite inputs, shape mismatch, index out of range, or
            ``eta`` outside ``[0, 1]``.
        """
        return _frechet.ema_step(self, proto, x, index, eta)
