"""Projection heads and the parameter-free map onto the embedding manifold.

``z = to_manifold(head(features))``: :class:`ProjectionHead` is the two-layer MLP of paper 01
§4.2; :func:`manifold_head` returns :class:`L2Normalize` for the unit sphere and
:class:`HyperbolicHead` (learned scale, smooth radius bound + ``expmap0``) for hyperbolic geometries, chosen by
``geometry.hyperbolic``, never by the geometry's name.
"""

from __future__ import annotations

import contextlib
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from hierviz.geometry._checks import scalar
from hierviz.metrics.radius import max_radius, origin_distance

__all__ = [
    "ProjectionHead",
    "L2Normalize",
    "HyperbolicHead",
    "manifold_head",
    "clamp_curvature",
    "HEAD_BOUNDS",
    "HEAD_CENTERS",
    "CURVATURE_RANGE",
]


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


#: Head bounds: ``"tanh"`` (smooth, the default) or ``"clip"`` (the hard clip of hierviz 0.1/0.2).
HEAD_BOUNDS = ("tanh", "clip")
#: Head centrings: ``None`` (off, the default) or ``"batch"`` (subtract the batch mean of the raw outputs,
#: a running mean in eval mode).
HEAD_CENTERS = (None, "batch")
#: Momentum of the running mean of ``center="batch"`` (BatchNorm's 0.1).
CENTER_MOMENTUM = 0.1
#: Default clamp of a learnable curvature c (MERU: [0.1, 10]).
CURVATURE_RANGE = (0.1, 10.0)


def _radius_per_tangent(geometry) -> float:
    """``d(0, exp_0 u) / ‖u‖`` of the geometry's convention: 2 on geoopt's ball, 1 on the hyperboloid."""
    u = torch.zeros(1, 2, dtype=torch.float64)
    u[0, 0] = 0.25
    with torch.no_grad():
        return float(origin_distance(geometry.expmap0(u), geometry)[0]) / 0.25


def clamp_curvature(geometry, c_range: tuple[float, float] = CURVATURE_RANGE) -> None:
    """Clamp a learnable curvature ``c`` of ``geometry`` into ``c_range`` in place (MERU's clamp).

    geoopt keeps ``c = softplus(isp_c)`` on the ball and ``k = 1/c`` on the hyperboloid; the
    parameter itself is clamped (no gradient flows through the clamp, as in MERU's
    ``curv.data.clamp_``). A geometry without a learnable curvature is left alone.

    Parameters
    ----------
    geometry : Geometry
    c_range : (float, float)
        ``0 < lo <= hi``.

    Examples
    --------
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall(30.0, learnable=True)
    >>> clamp_curvature(ball, (0.1, 10.0))
    >>> round(float(ball.c.detach()), 6)
    10.0
    """
    if not getattr(geometry, "learnable", False):
        return
    lo, hi = float(c_range[0]), float(c_range[1])
    man = geometry.manifold
    with torch.no_grad():
        if hasattr(man, "isp_c"):  # geoopt ball: c = softplus(isp_c)
            man.isp_c.clamp_(math.log(math.expm1(lo)), math.log(math.expm1(hi)))
        elif isinstance(getattr(man, "k", None), nn.Parameter):  # geoopt hyperboloid: k = 1/c
            man.k.clamp_(1.0 / hi, 1.0 / lo)


class HyperbolicHead(nn.Module):
    r"""Learnable feature scale + smooth radius bound + exponential map at the origin.

    .. math::
        v \leftarrow e^{s}\,(v - \bar v), \qquad
        u = \frac{\rho}{\sqrt c}\tanh\!\Big(\frac{\sqrt c\,\|v\|}{\rho}\Big)\,\frac{v}{\|v\|},
        \qquad z = \operatorname{proj}(\exp_0(u)),

    with ``s`` a learnable log-scale (as HyILR's text/label scales, paper 05 §5.1; MERU's
    learnable α), ``v̄`` the centring (0 unless ``center="batch"``, below), ``ρ = clip_r`` and
    ``exp_0`` the geometry's exponential map (paper 01 §3.1;
    paper 03 §2.2). For the Lorentz model ``expmap0`` adds the time coordinate:
    ``(..., d) -> (..., d+1)``. The bound is the identity near the origin
    (``u = v + O(‖v‖³)``) and keeps ``√c‖u‖ < ρ``, i.e. a geodesic radius below
    ``2ρ/√c`` on the ball (``ρ/√c`` on the hyperboloid), so with ``ρ = 3`` no point reaches
    float32's ``proj`` margin (``√c‖u‖ = 3.1``). Its radial derivative
    ``1 − tanh²(√c‖v‖/ρ)`` never vanishes.

    **Why not a hard clip.** ``bound="clip"`` is the head of hierviz 0.1/0.2,
    ``u = min(1, ρ/‖v‖) v`` (feature clipping, Guo et al., CVPR 2022, Eq. 6). Past the clip
    radius the derivative of ``‖u‖`` with respect to ``‖v‖`` (and to ``s``) is zero: a clipped
    point gets no radial gradient and can never come back. At the scale of a ResNet-18 on a
    GPU (raw head norms ≈ 20–40) every point was clipped and the learned scale stayed at
    1.00 (docs/hyperbolic-fidelity.md). ``bound="clip", scale_init=1, clip_r=3`` is the
    hierviz 0.2 head exactly; ``learn_scale=False, scale_init=1, clip_r=2, bound="clip"`` the
    0.1 head.

    **Scale from the data** (``scale_init="auto"``). On the first forward pass in training
    mode the head sets ``s`` so that the batch's median raw norm ``m`` lands at geodesic
    radius ``init_radius``: with ``k = d(0, exp_0 u)/‖u‖`` (2 on geoopt's ball, 1 on the
    hyperboloid) the target tangent norm is ``t = init_radius / k`` and
    ``e^s = (ρ/√c)·artanh(√c t/ρ) / m`` (``t/m`` for the clip). The flag buffer
    ``scale_initialised`` is saved in checkpoints, so a resumed run is not re-initialised;
    the rule is deterministic (a median of the batch; under ``torch.distributed`` the median
    of the global batch, gathered from every rank, so two ranks equal one process).

    **τ and the radius** (SupCon and every loss that scores ``−d/τ``). Near the origin the
    ball is flat, ``d(x, y) ≈ k‖u_x − u_y‖``, so scaling every radius by λ is the same as
    dividing τ by λ: the radius is an inverse temperature, and a loss free to move it picks
    the radius that suits τ, not the tree. Two rules fix the pair:

    1. *Start*: points at radius ``R`` span logits ``−d/τ ∈ [−2R/τ, 0]`` (antipodes are
       ``2R`` apart), the unit sphere's cosine logits span ``2/τ``. ``init_radius = 1``
       starts hyperbolic training at the Euclidean logit range of the same τ, so the
       Euclidean τ (0.1) carries over.
    2. *Cap*: the bound keeps ``d ≤ 2R_max`` with ``R_max = kρ/√c`` (6 on the ball at
       ``ρ = 3, c = 1``), so ``|logit| ≤ 2R_max/τ = 120`` at τ = 0.1 — the role of CLIP's
       and MERU's logit-scale cap of 100 (Radford et al., 2021). Lower ``clip_r`` or raise
       τ together: keep ``2R_max/τ`` near 100.

    The radial position within the cap is then set by the depth regularisers of
    :mod:`hierviz.losses.radial` (entailment cones, centring), not by τ.

    **Centring in the head** (``center="batch"``). A tree drawn in the radius needs its
    root - the mean of all samples - at the origin, with the depth-1 classes spread around
    it. On the quick preset the evaluated embeddings are collapsed onto one direction (the
    norm of their mean tangent vector 0.63-0.79 of their mean norm), so every node's Fréchet
    mean sits at about the same radius and the radius cannot carry depth
    (docs/hyperbolic-fidelity.md). ``center="batch"`` removes the collapse by construction,
    as BatchNorm removes a mean: in training mode ``v̄`` is the mean of the batch's raw
    outputs (gradients flow through it, as through BatchNorm's mean) and a running mean
    (buffer ``running_mean``, momentum 0.1) is tracked; in eval mode ``v̄`` is the running
    mean, so a sample's embedding does not depend on its batch. The tangent vectors
    ``u`` then have mean ≈ 0 (exactly 0 before the bound, which only shortens vectors
    along their own direction), the root's Fréchet mean sits near the origin and samples
    cannot all point one way. It is applied before the scale rules, so ``scale_init="auto"``
    reads the median norm of the centred outputs. Under ``torch.distributed`` each rank
    uses its own batch's mean (as unsynchronised BatchNorm). The running mean alone is not
    enough after a short training: the encoder's BatchNorm layers move the eval-mode outputs
    by about their spread, so re-estimate the centre on eval-mode outputs with
    :meth:`recentring` (``hierviz compare`` does).

    **Learnable curvature.** A geometry built with ``learnable=True`` (geoopt's trainable
    ``c``) has its parameter registered here as the submodule ``curvature``, so the
    optimiser trains it with the head and checkpoints save it; every forward clamps ``c``
    into ``c_range`` (MERU: [0.1, 10]) with :func:`clamp_curvature`.

    The computation runs with autocast disabled, in float32 (float64 inputs stay float64),
    as DESIGN "Numerics" asks of every hyperbolic op.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        A hyperbolic geometry (``geometry.hyperbolic`` is true).
    clip_r : float or None, default 3.0
        ``ρ > 0``: the bound on ``√c‖u‖`` (tanh) or on ``‖u‖`` (clip). ``None`` or ``inf``:
        no bound (then only ``geometry.proj`` keeps points inside the ball).
    scale_init : float, "auto" or "batch", default "auto"
        Initial feature scale ``e^s > 0`` (HyILR: ``1/sqrt(d)``); ``"auto"``: from the
        first training batch (above); ``"batch"``: the same rule on every training batch,
        ``v ← v·t/m_B`` with the batch's median raw norm ``m_B`` (a running median in eval
        mode, buffer ``running_norm``), times ``e^s`` (start 1) - batch normalisation of the
        radius: the loss moves radii relative to each other, not all of them at once.
    learn_scale : bool, default True
        Train ``s`` (an ``nn.Parameter`` named ``log_scale``); else it is a fixed buffer.
    bound : {"tanh", "clip"}, default "tanh"
        The smooth bound or the hard clip of hierviz 0.2.
    init_radius : float, default 1.0
        Geodesic radius ``d(0, z)`` of the median sample after the automatic
        initialisation; below the bound's radius.
    c_range : (float, float), default (0.1, 10.0)
        Clamp of a learnable curvature.
    center : {None, "batch"}, default None
        ``"batch"``: subtract the batch mean of the raw outputs (a running mean in eval
        mode) before the scale and the bound (above); None: the head as before.
    dim : int, optional
        Size ``d`` of the raw outputs; needed by ``center="batch"`` (the running mean's size).

    Attributes
    ----------
    scale : torch.Tensor
        ``e^s``, a 0-d tensor.
    tangent_bound : float or None
        The largest tangent norm ``‖u‖`` (``ρ/√c`` for tanh, ``ρ`` for clip).
    max_radius : float
        Geodesic distance from the origin of a point at the bound
        (:func:`hierviz.metrics.max_radius`): ``2ρ/√c`` on the ball, ``ρ/√c`` on the
        hyperboloid (clip: ``2ρ``, ``ρ``), capped by ``proj``.

    Raises
    ------
    ValueError
        If ``geometry`` is Euclidean (use :class:`L2Normalize`), ``clip_r <= 0``,
        ``scale_init`` is neither a number > 0 nor "auto", ``bound`` is unknown,
        ``init_radius`` is not in ``(0, max_radius)`` (checked for "auto"/"batch"),
        ``c_range`` is not ``0 < lo <= hi``, ``center`` is unknown or ``center="batch"``
        comes without a positive integer ``dim``.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> head = HyperbolicHead(PoincareBall(1.0), scale_init=0.125)
    >>> z = head(torch.full((1, 64), 1.0)).detach()  # raw norm 8 -> 1 -> u = 3 tanh(1/3) = 0.965
    >>> round(float(z.norm()), 4)  # tanh(0.965)
    0.7463
    >>> head = HyperbolicHead(PoincareBall(1.0))  # scale_init="auto", init_radius=1
    >>> _ = head.train()(30.0 * torch.nn.functional.normalize(torch.randn(64, 16), dim=-1))
    >>> bool(head.scale_initialised), round(float(head.scale * 30), 3)  # 3 artanh(0.5/3)
    (True, 0.505)
    """

    def __init__(
        self,
        geometry,
        clip_r: float | None = 3.0,
        *,
        scale_init: float | str = "auto",
        learn_scale: bool = True,
        bound: str = "tanh",
        init_radius: float = 1.0,
        c_range: tuple[float, float] = CURVATURE_RANGE,
        center: str | None = None,
        dim: int | None = None,
    ) -> None:
        super().__init__()
        if not getattr(geometry, "hyperbolic", False):
            raise ValueError(
                f"geometry: HyperbolicHead needs a hyperbolic geometry, got {geometry!r} "
                "(Euclidean embeddings use L2Normalize)"
            )
        if clip_r is not None and not (float(clip_r) > 0):
            raise ValueError(f"clip_r must be > 0 (or None to disable clipping), got {clip_r!r}")
        if bound not in HEAD_BOUNDS:
            raise ValueError(f"bound must be one of {HEAD_BOUNDS} (tanh: smooth; clip: the 0.2 head), got {bound!r}")
        if center not in HEAD_CENTERS:
            raise ValueError(
                f"center (model.head_center) must be one of {HEAD_CENTERS} (batch: subtract the batch mean), got {center!r}"
            )
        mode = scale_init if isinstance(scale_init, str) and scale_init in ("auto", "batch") else "fixed"
        auto = mode != "fixed"
        if not auto:
            if isinstance(scale_init, bool) or not isinstance(scale_init, (int, float)):
                raise ValueError(f"scale_init must be a finite number > 0, 'auto' or 'batch', got {scale_init!r}")
            if not (math.isfinite(float(scale_init)) and float(scale_init) > 0):
                raise ValueError(
                    f"scale_init must be a finite number > 0 (e.g. 1/sqrt(d)), 'auto' or 'batch', got {scale_init!r}"
                )
        try:
            lo, hi = (float(c_range[0]), float(c_range[1]))
        except (TypeError, ValueError, IndexError):
            raise ValueError(f"c_range must be a pair (lo, hi) with 0 < lo <= hi, got {c_range!r}") from None
        if not (0 < lo <= hi < math.inf):
            raise ValueError(f"c_range must be a pair (lo, hi) with 0 < lo <= hi, got {c_range!r}")
        self.geometry = geometry
        if getattr(geometry, "learnable", False):
            # the trainable curvature (geoopt's parameter) is trained and checkpointed with the head
            self.curvature = geometry.manifold
        self.clip_r = None if clip_r is None or float(clip_r) == math.inf else float(clip_r)
        self.bound = bound
        self.c_range = (lo, hi)
        self.scale_mode = mode
        self._k = _radius_per_tangent(geometry)
        top = self.max_radius
        if isinstance(init_radius, bool) or not isinstance(init_radius, (int, float)):
            raise ValueError(f"init_radius must be a number in (0, {top:g}), got {init_radius!r}")
        if not (0 < float(init_radius) < (top if auto else math.inf)):  # only the data rules use it
            raise ValueError(
                f"init_radius must lie in (0, {top:g}) (the bound's geodesic radius), got {init_radius!r}; "
                "lower it or raise clip_r"
            )
        self.init_radius = float(init_radius)
        log_s = torch.tensor(0.0 if auto else math.log(float(scale_init)), dtype=torch.float32)
        if learn_scale:
            self.log_scale = nn.Parameter(log_s)
        else:
            self.register_buffer("log_scale", log_s)
        self.register_buffer("scale_initialised", torch.tensor(mode != "auto"))
        # the flag's value on the host, so that a training step reads no device tensor (no sync, compilable)
        self._scale_ready = mode != "auto"
        if mode == "batch":  # running median of the raw norms, used in eval mode (0: not yet seen)
            self.register_buffer("running_norm", torch.tensor(0.0, dtype=torch.float64))
        self.learn_scale = bool(learn_scale)
        self.center = center
        if center == "batch":  # running mean of the raw outputs, used in eval mode (BatchNorm's start: 0)
            if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
                raise ValueError(
                    f"dim must be the raw outputs' size (a positive integer) for center='batch', got {dim!r}"
                )
            self.register_buffer("running_mean", torch.zeros(dim, dtype=torch.float64))
        self._recentre_sum: torch.Tensor | None = None
        self._recentre_count, self._recentre_raw = 0, []

    @property
    def scale(self) -> torch.Tensor:
        """The feature scale (0-d tensor): ``e^s``; with ``scale_init="batch"`` times ``t/m_running``."""
        s = self.log_scale.detach().exp()
        if self.scale_mode == "batch" and float(self.running_norm) > 0:
            s = s * float(self._target_norm() / float(self.running_norm))
        return s

    def _target_norm(self) -> float:
        """The raw (pre-bound) tangent norm that lands at geodesic radius ``init_radius``."""
        t = self.init_radius / self._k
        if self.clip_r is not None and self.bound == "tanh":
            rho = self.clip_r / self._sqrt_c()
            return rho * math.atanh(t / rho)
        return t

    @staticmethod
    def _median_norm(v: torch.Tensor) -> float:
        """Median raw norm of the batch; under ``torch.distributed`` of the global batch (all ranks' rows)."""
        norms = v.detach().double().norm(dim=-1).reshape(-1)
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            parts: list = [None] * dist.get_world_size()
            dist.all_gather_object(parts, norms.cpu())
            norms = torch.cat(parts)
        return float(norms.median()) if norms.numel() else float("nan")

    @torch.no_grad()
    def _batch_median(self, v: torch.Tensor) -> float:
        """``scale_init="batch"``: the median raw norm (training: this batch's, tracked; eval: the running one)."""
        if not self.training and float(self.running_norm) > 0:
            return float(self.running_norm)
        m = self._median_norm(v)
        if not (math.isfinite(m) and m > 1e-12):
            m = float(self.running_norm) if float(self.running_norm) > 0 else 1.0
        if self.training:
            old = float(self.running_norm)
            self.running_norm.fill_(m if old <= 0 else 0.9 * old + 0.1 * m)
        return m

    def _centred(self, v: torch.Tensor) -> torch.Tensor:
        """``center="batch"``: ``v − v̄`` (training: the batch mean, tracked; eval: the running mean)."""
        if v.shape[-1] != self.running_mean.shape[0]:
            raise ValueError(
                f"v: the head was built for dim={self.running_mean.shape[0]}, got {v.shape[-1]} coordinates"
            )
        flat = v.reshape(-1, v.shape[-1])
        if not self.training and self._recentre_sum is not None:  # inside recentring(): record the raw outputs
            self._recentre_sum += flat.detach().double().sum(0)
            self._recentre_count += flat.shape[0]
            self._recentre_raw.append(flat.detach().double().cpu())
        if self.training and flat.shape[0] > 0:
            mean = flat.mean(0)
            with torch.no_grad():
                self.running_mean.lerp_(mean.detach().to(self.running_mean.dtype), CENTER_MOMENTUM)
            return v - mean
        return v - self.running_mean.to(v.dtype)

    @contextlib.contextmanager
    def recentring(self):
        """Re-estimate the eval-mode centre from the data passed through the head in eval mode.

        Within the ``with`` block every eval-mode forward pass records its raw outputs (and
        still uses the old centre); on leaving it ``running_mean`` becomes their mean (and,
        with ``scale_init="batch"``, ``running_norm`` the median norm of the centred
        outputs, so the eval-mode median sample sits where the training batches' median does:
        at ``init_radius`` before the learned ``e^s``). This
        is BatchNorm's "precise" statistics (Wu & Johnson, 2021, "Rethinking 'Batch' in
        BatchNorm" §3) for the head's centre: the running mean is tracked on training-mode
        outputs, and on the CPU presets the encoder's BatchNorm layers shift the eval-mode
        outputs' mean away from it by about their spread (docs/hyperbolic-fidelity.md), so
        :func:`hierviz.experiments.compare` re-centres on the clean training images after
        training. Only for ``center="batch"``.

        Raises
        ------
        ValueError
            If the head has no centre (``center=None``), or no sample passed through it.

        Examples
        --------
        >>> import torch
        >>> from hierviz.geometry import PoincareBall
        >>> head = HyperbolicHead(PoincareBall(1.0), scale_init=1.0, center="batch", dim=2).eval()
        >>> with head.recentring():
        ...     _ = head(torch.tensor([[1.0, 0.0], [3.0, 2.0]]))
        >>> head.running_mean.tolist()
        [2.0, 1.0]
        """
        if self.center != "batch":
            raise ValueError("recentring() needs a head built with center='batch' (model.head_center=batch)")
        self._recentre_sum = torch.zeros_like(self.running_mean)
        self._recentre_count, self._recentre_raw = 0, []
        try:
            yield self
            if self._recentre_count == 0:
                raise ValueError("recentring(): no sample passed through the head in eval mode; nothing to average")
            mean = self._recentre_sum / self._recentre_count
            self.running_mean.copy_(mean)
            if self.scale_mode == "batch":  # and the median norm of the centred outputs (the eval radius)
                raw = torch.cat(self._recentre_raw)
                self.running_norm.fill_(float((raw - mean.cpu()).norm(dim=-1).median()))
        finally:
            self._recentre_sum, self._recentre_count, self._recentre_raw = None, 0, []

    def _sqrt_c(self) -> float:
        return math.sqrt(scalar(self.geometry.c))

    @property
    def tangent_bound(self) -> float | None:
        """The largest tangent norm ``‖u‖`` the head outputs (None: unbounded)."""
        if self.clip_r is None:
            return None
        return self.clip_r / self._sqrt_c() if self.bound == "tanh" else self.clip_r

    @property
    def max_radius(self) -> float:
        """Geodesic distance from the origin of the farthest point the head can output."""
        return max_radius(self.geometry, self.tangent_bound)

    def _bounded(self, v: torch.Tensor) -> torch.Tensor:
        """The smooth bound ``(ρ/√c)·tanh(√c‖v‖/ρ)·v/‖v‖`` (the clip goes through ``to_manifold``)."""
        if self.clip_r is None:
            return v
        rho = self.clip_r / self.geometry_sqrt_c(v)
        norm = v.norm(dim=-1, keepdim=True)
        x = norm / rho
        # tanh(x)/x, with its limit 1 at x = 0 (finite gradient at the origin)
        small = x < 1e-4
        ratio = torch.where(small, 1.0 - x.square() / 3.0, torch.tanh(x) / torch.where(small, 1.0, x))
        return v * ratio

    def geometry_sqrt_c(self, like: torch.Tensor) -> torch.Tensor | float:
        """``√c`` as a float, or as a 0-d tensor (carrying gradient) for a learnable curvature."""
        c = self.geometry.c
        if isinstance(c, torch.Tensor):
            return c.to(like.dtype).sqrt()
        return math.sqrt(float(c))

    @torch.no_grad()
    def initialise_scale(self, v: torch.Tensor) -> None:
        """Set ``s`` from a batch of raw head outputs (the rule above) and mark it initialised.

        Parameters
        ----------
        v : torch.Tensor, shape (..., d)
            Raw head outputs (unscaled).
        """
        m = self._median_norm(v)
        if not (math.isfinite(m) and m > 1e-12):  # an all-zero batch says nothing: wait for the next one
            return
        self.log_scale.fill_(math.log(self._target_norm() / m))
        self.scale_initialised.fill_(True)
        self._scale_ready = True

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
        clamp_curvature(self.geometry, self.c_range)
        with torch.autocast(device_type=v.device.type, enabled=False):
            v = v.to(_float_dtype(v))
            if self.center == "batch":
                v = self._centred(v)
            if self.training and not self._scale_ready:
                self.initialise_scale(v)
            if self.scale_mode == "batch":  # the median sample at init_radius, batch after batch
                v = v * (self._target_norm() / self._batch_median(v))
            v = v * self.log_scale.to(v.dtype).exp()  # exp(0) == 1 exactly: scale 1 is the identity
            if self.bound == "clip":  # the 0.2 head, bit for bit
                return self.geometry.to_manifold(v, clip_r=self.clip_r)
            return self.geometry.proj(self.geometry.expmap0(self._bounded(v)))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # checkpoints of hierviz <= 0.2 have no flag: their scale is a trained (or fixed) one
        key = prefix + "scale_initialised"
        if key not in state_dict and prefix + "log_scale" in state_dict:
            state_dict[key] = torch.tensor(True)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._scale_ready = bool(self.scale_initialised)

    def extra_repr(self) -> str:
        return (
            f"geometry={self.geometry.name}, c={-self.geometry.curvature:g}, "
            f"learnable_c={getattr(self.geometry, 'learnable', False)}, bound={self.bound}, clip_r={self.clip_r}, "
            f"scale={float(self.scale):.4g} ({self.scale_mode}), learn_scale={self.learn_scale}, center={self.center}"
        )


def manifold_head(
    geometry,
    clip_r: float | None = 3.0,
    *,
    scale_init: float | str = "auto",
    learn_scale: bool = True,
    bound: str = "tanh",
    init_radius: float = 1.0,
    c_range: tuple[float, float] = CURVATURE_RANGE,
    center: str | None = None,
    dim: int | None = None,
) -> nn.Module:
    """The map onto ``geometry``: :class:`L2Normalize` or :class:`HyperbolicHead`.

    Chosen by ``geometry.hyperbolic``, never by the geometry's name.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        "euclidean", "poincare" or "lorentz".
    clip_r, scale_init, learn_scale, bound, init_radius, c_range, center, dim
        The hyperbolic head's settings (see :class:`HyperbolicHead`); ignored on the
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
        return HyperbolicHead(
            geometry,
            clip_r=clip_r,
            scale_init=scale_init,
            learn_scale=learn_scale,
            bound=bound,
            init_radius=init_radius,
            c_range=c_range,
            center=center,
            dim=dim,
        )
    return L2Normalize()
