r"""Fréchet (Karcher) means and the prototype EMA step, for any :class:`~hierviz.geometry.Geometry`.

Paper 01 Eq. 3: :math:`\mu \leftarrow \exp_\mu(\beta \bar v)`, :math:`\bar v = \sum_i w_i \log_\mu(x_i) / \sum_i w_i`,
made monotone by halving :math:`\beta` per group while the Fréchet objective would rise; Eqs. 9–10:
the EMA of prototypes along geodesics. The geometry methods ``group_mean``, ``mean`` and
``ema_step`` call these functions (under the geometry's float32/float64 guard); a geometry
supplies ``_log``, ``_exp``, ``_log0``, ``_exp0``, ``_dist_rows``, ``_initial_means`` and ``origin``.
"""

from __future__ import annotations

from typing import Any

import torch

from hierviz.geometry._checks import (
    Tensor,
    _check_eta,
    _check_index,
    _check_num_groups,
    _check_steps,
    _check_weights,
    _segment_sum,
    as_float_tensor,
)

__all__ = ["group_mean", "mean", "ema_step", "karcher_step", "riemannian_grad_norm", "DEFAULT_TOL", "MAX_STEPS"]

#: Default stopping tolerance of :func:`group_mean`/:func:`mean` when ``steps`` is None: every
#: group's Riemannian gradient norm :math:`\|\bar v_g\|_{\mu_g}` at most this.
DEFAULT_TOL = 1e-6
#: Default cap on the Karcher steps when iterating to convergence (``steps=None``).
MAX_STEPS = 100


def riemannian_grad_norm(geometry, mu: Tensor, vbar: Tensor) -> Tensor:
    r"""Per-group norm of the Fréchet gradient, :math:`\|\bar v_g\|_{\mu_g}` (length of the Karcher step).

    The Riemannian gradient of :math:`F_g(\mu)/\sum_i w_i` is :math:`-2\bar v_g`, with
    :math:`\bar v_g` the weighted mean of :math:`\log_{\mu_g} x_i`; its norm in the metric at
    :math:`\mu_g` is the geodesic length :math:`d(\mu_g, \exp_{\mu_g}\bar v_g)`, which is what
    is returned (no gradient). Zero exactly at a Fréchet mean.

    Parameters
    ----------
    geometry : Geometry
    mu : Tensor, shape (K, D)
        Current estimates, on the manifold.
    vbar : Tensor, shape (K, D)
        Mean log-maps at ``mu`` (tangent vectors).

    Returns
    -------
    Tensor, shape (K,)
        :math:`\|\bar v_g\|_{\mu_g} \ge 0`, dtype of ``mu``.
    """
    with torch.no_grad():
        if geometry._flat:
            return vbar.norm(dim=-1)
        m64 = mu.detach().double()  # the length of a short step, without float32 cancellation
        return geometry._dist_rows(m64, geometry._exp(m64, vbar.detach().double())).to(mu.dtype)


def _iteration_limits(steps: int | None, tol: float | None, max_steps: int) -> tuple[int, float | None]:
    """``(steps, tol)`` of :func:`group_mean`'s iteration.

    ``steps=None`` (the default) iterates to convergence: at most ``max_steps`` steps,
    stopping once the gradient norm is at most ``tol`` (default :data:`DEFAULT_TOL`); a
    given ``steps`` runs that many unless ``tol`` is given too.

    Raises
    ------
    ValueError
        A negative or non-integer ``steps``/``max_steps``, or ``tol < 0``.
    """
    if steps is None:  # iterate to convergence (the default): tol on the gradient norm, max_steps cap
        steps = _check_steps(max_steps, "max_steps")
        if tol is None:
            tol = DEFAULT_TOL
    else:
        steps = _check_steps(steps)
    if tol is not None and not (float(tol) >= 0):
        raise ValueError(f"tol must be >= 0 (or None to run every step), got {tol!r}")
    return steps, tol


def _checked_init(geometry, init: Any, K: int, D: int, xt: Tensor) -> Tensor:
    """``init`` as points of ``geometry`` on ``xt``'s device and dtype, shape (K, D).

    Raises
    ------
    ValueError
        Points off the manifold, or another shape.
    """
    init_t = geometry._points(init, "init", min_dim=2).to(device=xt.device, dtype=xt.dtype)
    if tuple(init_t.shape) != (K, D):
        raise ValueError(f"init must have shape ({K}, {D}), got {tuple(init_t.shape)}")
    return init_t


def _refuse_empty_groups(empty: Tensor) -> None:
    """Raise the ValueError of :func:`group_mean` naming its empty groups (the first 20) when ``empty`` (K,) has any."""
    missing = torch.nonzero(empty).flatten().tolist()
    shown = missing[:20]
    more = "" if len(missing) <= 20 else f" (+{len(missing) - 20} more)"
    raise ValueError(
        f"group_mean: group(s) {shown}{more} have no members (index never takes these "
        f"values or their weights sum to 0); pass init= to keep a previous estimate "
        f"or allow_empty=True to get the origin and a mask"
    )


def _empty_fill(geometry, mu: Tensor, init_t: Tensor | None, xt: Tensor, K: int) -> Tensor:
    """What an empty group's mean is: its ``init`` row, else the origin (zero in a flat geometry); (K, D) as ``mu``."""
    if init_t is not None:
        return init_t
    if geometry._flat:
        return torch.zeros_like(mu)
    D = xt.shape[1]
    return geometry.origin(geometry._tangent_dim(D), dtype=xt.dtype, device=xt.device).expand(K, D)


def group_mean(
    geometry,
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
    max_steps: int = MAX_STEPS,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""Per-group Fréchet/Karcher means of ``x`` on ``geometry``, all groups at once (paper 01 Eq. 3).

    Each step, for every group :math:`g` at once (segment sums, no loop over groups),
    :math:`\bar v_g = \sum_{i: g_i=g} w_i \log_{\mu_g}(x_i) / \sum_{i: g_i=g} w_i` and
    :math:`\mu_g \leftarrow \exp_{\mu_g}(\beta\,\bar v_g)` (:func:`karcher_step`).

    Parameters
    ----------
    geometry : Geometry
        Supplies the maps (``_log``/``_exp``), the start (``_initial_means``) and the checks.
    x, index, num_groups, steps, init, weights, allow_empty, beta, tol, max_steps
        As :meth:`hierviz.geometry.Geometry.group_mean`.

    Returns
    -------
    Tensor, shape (K, D), and with ``allow_empty=True`` a (K,) bool mask
        As :meth:`hierviz.geometry.Geometry.group_mean`.

    Raises
    ------
    ValueError, TypeError
        As :meth:`hierviz.geometry.Geometry.group_mean`.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall()
    >>> x = ball.expmap0(torch.tensor([[0.5, 0.0], [0.5, 0.0], [0.0, -0.3]], dtype=torch.float64))
    >>> torch.allclose(group_mean(ball, x, torch.tensor([0, 0, 1]), 2), x[1:])
    True
    """
    xt = geometry._points(x, "x", min_dim=2)
    if xt.dim() != 2:
        raise ValueError(f"x must have shape (n, D), got {tuple(xt.shape)}")
    n, D = xt.shape
    if n == 0:
        raise ValueError("x is empty (n=0): a mean needs at least one point")
    K = _check_num_groups(num_groups)
    idx = _check_index(index, n, K, xt.device)
    steps, tol = _iteration_limits(steps, tol, max_steps)
    # fixed steps (tol None): no host synchronisation in the loop (compiled training steps)
    sync = tol is not None
    # on the CPU a host synchronisation costs nothing: the line search may stop early there (the
    # same result, about half the trial steps; karcher_step), also with a fixed number of steps
    host_sync_free = xt.device.type == "cpu" and not torch.compiler.is_compiling()
    w = _check_weights(weights, n, xt)
    init_t = None if init is None else _checked_init(geometry, init, K, D, xt)

    out_dtype = xt.dtype
    if sync and not geometry._flat and xt.dtype != torch.float64:
        # iterating to a tolerance: float32 log maps near the boundary are too noisy (their mean, the
        # step, is off by ~1e-4 at norm 0.9999), so the iteration runs in float64 and the mean is
        # rounded once at the end (differentiable through the casts)
        xt, w = xt.double(), w.double()
        init_t = None if init_t is None else init_t.double()
    counts = _segment_sum(w.detach(), idx, K)
    empty = counts <= 0
    # the only sync of the fixed-step path (skipped while torch.compile traces: no graph break there)
    if init_t is None and not allow_empty and not torch.compiler.is_compiling() and bool(empty.any()):
        _refuse_empty_groups(empty)
    denom = _segment_sum(w, idx, K).clamp_min(torch.finfo(xt.dtype).tiny).unsqueeze(-1)
    wcol = w.unsqueeze(-1)

    if geometry._flat:
        mu = _segment_sum(xt * wcol, idx, K) / denom
    else:
        if init_t is None:
            mu = geometry._initial_means(xt, idx, wcol, denom, K)
        else:
            mu = init_t
        for _ in range(steps):
            v = geometry._log(mu[idx], xt) * wcol
            vbar = _segment_sum(v, idx, K) / denom
            if sync:
                gn = riemannian_grad_norm(geometry, mu, vbar).masked_fill(empty, 0.0)
                if not float(gn.max()) > tol:  # converged (a NaN stops too: more steps cannot mend it)
                    break
            mu = geometry._karcher_step(mu, vbar, xt, idx, w, K, beta, sync=sync or host_sync_free)

    if init_t is not None or allow_empty:  # else no group is empty (checked above); no sync: a where
        mu = torch.where(empty.unsqueeze(-1), _empty_fill(geometry, mu, init_t, xt, K), mu)
    mu = mu.to(out_dtype)
    if allow_empty:
        return mu, ~empty
    return mu


def karcher_step(
    geometry,
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
    r"""One step of Eq. 3, :math:`\mu_g \leftarrow \exp_{\mu_g}(\beta_g \bar v_g)`, with a monotone line search.

    Eq. 3 is Riemannian gradient descent on :math:`F_g(\mu) = \sum_i w_i d^2(\mu, x_i) / 2\sum_i w_i`
    with step 1. On a hyperbolic space the Hessian of :math:`F_g` has eigenvalues up to
    :math:`\overline{\sqrt c\, d \coth(\sqrt c\, d)}` (> 1), so for a spread group the
    full step overshoots, often by a factor of about 2, and the plain iteration oscillates
    or diverges. Here each group takes, among the trial steps
    :math:`\beta, \beta/2, \dots, \beta/2^{\text{max\_halvings}}`, the largest one that does not
    raise :math:`F_g`, replaced by a smaller one only if that lowers :math:`F_g` further;
    if every trial raises it, the group stays where it is. So :math:`F_g` never rises. For a
    compact group near the minimiser the full step is the best and Eq. 3 is followed exactly.

    The objective is compared in float64 whatever the points' dtype: hierviz 0.2 compared it
    in float32 and took only strict decreases, so near the minimiser, where a step changes
    :math:`F_g` by less than float32 resolves, every step was refused and float32 means stalled
    2.1e-3 from the Fréchet mean. The objective is evaluated without gradient; the returned
    estimate stays differentiable with respect to ``x``.

    ``sync=False`` runs all ``max_halvings + 1`` trials without the early exit (no host
    synchronisation: usable inside compiled training steps); the result is the same.
    """
    with torch.no_grad():
        xd, wd, vd, mud = x.detach(), w.detach(), vbar.detach(), mu.detach()
        x64, w64 = xd.double(), wd.double()

        def objective(m: Tensor) -> Tensor:
            return _segment_sum(w64 * geometry._dist_rows(m.double()[idx], x64) ** 2, idx, K)

        best_f = objective(mud)
        step = torch.zeros(K, dtype=x.dtype, device=x.device)  # 0 = stay: never a rise of F_g
        passed = torch.zeros(K, dtype=torch.bool, device=x.device)
        t = float(beta)
        for _ in range(max_halvings + 1):
            f1 = objective(geometry._exp(mud, t * vd))
            # the first acceptable step may tie (at the minimiser a step changes nothing); a smaller
            # one must improve strictly. NaN compares False: never taken
            better = ((f1 < best_f) | ((f1 <= best_f) & (step == 0))) & ~passed
            # F_g is geodesically convex, so along the ray it rises again once past its minimum:
            # a group that improved earlier and not now needs no smaller trial step
            passed |= ~better & (step > 0)
            step = torch.where(better, torch.full_like(step, t), step)
            best_f = torch.where(better, f1, best_f)
            if sync and not torch.compiler.is_compiling() and bool(passed.all()):
                break
            t /= 2
    return geometry._exp(mu, step.unsqueeze(-1) * vbar)


def mean(
    geometry,
    x: Any,
    weights: Any = None,
    steps: int | None = None,
    init: Any = None,
    *,
    tol: float | None = None,
    max_steps: int = MAX_STEPS,
) -> Tensor:
    r"""Fréchet/Karcher mean of a set of points on ``geometry`` (paper 01 Eq. 3; Euclidean: arithmetic mean).

    One group of :func:`group_mean`. Parameters, return value and errors as
    :meth:`hierviz.geometry.Geometry.mean`.
    """
    xt = geometry._points(x, "x", min_dim=2)
    if xt.dim() != 2:
        raise ValueError(f"x must have shape (n, D), got {tuple(xt.shape)}")
    init1 = None
    if init is not None:
        it = as_float_tensor(init, "init")
        if it.dim() != 1:
            raise ValueError(f"init must have shape ({xt.shape[1]},), got {tuple(it.shape)}")
        init1 = it.unsqueeze(0)
    idx = torch.zeros(xt.shape[0], dtype=torch.long, device=xt.device)
    if weights is not None:
        w = _check_weights(weights, xt.shape[0], xt)
        if float(w.detach().sum()) <= 0:
            raise ValueError("weights sum to 0: the weighted mean is undefined")
    else:
        w = None
    return geometry.group_mean(xt, idx, 1, steps=steps, init=init1, weights=w, tol=tol, max_steps=max_steps)[0]


def ema_step(geometry, proto: Any, x: Any, index: Any, eta: float) -> Tensor:
    r"""One EMA update of prototypes on ``geometry`` from a minibatch (paper 01 Eq. 9 / Eq. 10).

    Euclidean: :math:`c_g \leftarrow (1-\eta)c_g + \eta\bar z_g`; hyperbolic: one Karcher step
    at the prototype, :math:`c_g \leftarrow \exp_{c_g}(\eta\,\mathrm{mean}_{z\in B_g}\log_{c_g} z)`.
    Parameters, return value and errors as :meth:`hierviz.geometry.Geometry.ema_step`.
    """
    pt = geometry._points(proto, "proto", min_dim=2)
    xt = geometry._points(x, "x", min_dim=2)
    if pt.dim() != 2 or xt.dim() != 2:
        raise ValueError(f"proto and x must be 2-D (K, D) and (n, D), got {tuple(pt.shape)} and {tuple(xt.shape)}")
    if pt.shape[1] != xt.shape[1]:
        raise ValueError(f"proto and x must have the same D, got {pt.shape[1]} and {xt.shape[1]}")
    dtype = torch.promote_types(pt.dtype, xt.dtype)
    pt, xt = pt.to(dtype), xt.to(device=pt.device, dtype=dtype)
    eta = _check_eta(eta)
    K = pt.shape[0]
    idx = _check_index(index, xt.shape[0], K, pt.device)
    counts = torch.bincount(idx, minlength=K).to(dtype)
    present = (counts > 0).unsqueeze(-1)
    denom = counts.clamp_min(1.0).unsqueeze(-1)
    if geometry._flat:
        batch_mean = _segment_sum(xt, idx, K) / denom
        new = (1.0 - eta) * pt + eta * batch_mean
    else:
        vbar = _segment_sum(geometry._log(pt[idx], xt), idx, K) / denom
        new = geometry._exp(pt, eta * vbar)
    return torch.where(present, new, pt)


def karcher_path(geometry, x: Any, beta: float, steps: int, init: Any) -> tuple[Tensor, list[float]]:
    r"""Eq. (3) written out with a fixed step ``β``, and the Fréchet objective after every step.

    :math:`\mu^{(t)} = \exp_{\mu^{(t-1)}}\big(\beta\,\tfrac1n\sum_i \log_{\mu^{(t-1)}}(x_i)\big)`, with no line
    search (compare :func:`group_mean`, which halves ``β`` while a step would raise the objective). Notebook
    01 §6 uses it to show that ``β = 1`` can oscillate on wide clouds in negative curvature.

    Parameters
    ----------
    geometry : Geometry
    x : Tensor, shape (n, D)
        Points on the manifold.
    beta : float, > 0
        Step size (paper 01 uses 1).
    steps : int, >= 0
    init : Tensor, shape (D,)
        The start :math:`\mu^{(0)}`.

    Returns
    -------
    mean : Tensor, shape (D,)
        :math:`\mu^{(\text{steps})}`.
    costs : list of float, length steps + 1
        :math:`\sum_i d^2(\mu^{(t)}, x_i)` for t = 0 .. steps.

    Raises
    ------
    ValueError
        ``beta`` not positive or ``steps`` negative.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> ball = PoincareBall()
    >>> x = ball.expmap0(torch.tensor([[0.4, 0.0], [0.0, 0.4]], dtype=torch.float64))
    >>> m, costs = karcher_path(ball, x, 1.0, 5, torch.zeros(2, dtype=torch.float64))
    >>> len(costs), costs[-1] <= costs[0], round(float(m[0] - m[1]), 12)
    (6, True, 0.0)
    """
    if not (isinstance(beta, (int, float)) and beta > 0):
        raise ValueError(f"beta must be a positive step size, got {beta!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    m, costs = init, []
    for t in range(steps + 1):
        costs.append(float((geometry.dist(m, x) ** 2).sum()))
        if t < steps:
            m = geometry.expmap(m, beta * geometry.logmap(m, x).mean(0))
    return m, costs
