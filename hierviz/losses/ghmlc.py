"""G-HMLC: hierarchical contrastive learning on GMM-selected features (Paper 02 (HMLC), §3, Fig. 2).

Per image, a one-dimensional Gaussian mixture with one component per hierarchy level is fitted
to that image's ``d`` feature values; the features assigned to component ``h`` form the hard
mask ``M_h`` and level ``h``'s contrastive term compares ``z[M_h]`` only (Eq. 4 with
``z_i → z_i[M_h]``). :func:`fit_gmm_1d` fits all ``B`` mixtures at once with a batched EM in
torch (no Python loop over images; it runs on the embeddings' device), and :class:`GHMLCLoss`
warm-starts each step's mixtures from the previous step's means (§3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ._validation import _NOT_GIVEN, DEFAULT_TAU, _check_real, _compiling
from .hmlc import _MaskedHMLC

__all__ = ["GMM1D", "GMM2D", "fit_gmm_1d", "fit_gmm_2d", "gmm_feature_masks", "GHMLCLoss"]


@dataclass
class GMM1D:
    """``B`` fitted one-dimensional Gaussian mixtures of ``K`` components (components sorted by mean, ascending).

    Attributes
    ----------
    means, variances, weights : torch.Tensor, shape (B, K)
        ``μ``, ``σ²`` (≥ ``reg_covar``) and mixing weights ``π`` (rows sum to 1).
    resp : torch.Tensor, shape (B, n, K)
        Responsibilities of the last E-step.
    labels : torch.LongTensor, shape (B, n)
        ``argmax_k resp``: the component of each value, in ``0..K-1``.
    log_likelihood : torch.Tensor, shape (B,)
        Mean log-likelihood per value at the last step.
    n_iter : int
        EM iterations run.
    converged : torch.BoolTensor, shape (B,)
        Mixtures whose mean log-likelihood changed by less than ``tol`` in the last step.
    """

    means: torch.Tensor
    variances: torch.Tensor
    weights: torch.Tensor
    resp: torch.Tensor
    labels: torch.Tensor
    log_likelihood: torch.Tensor
    n_iter: int
    converged: torch.Tensor


def _log_gauss(x: torch.Tensor, mu: torch.Tensor, var: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    # x (B, n, 1); mu, var, pi (B, 1, K) -> (B, n, K): log π_k + log N(x | μ_k, σ²_k)
    return torch.log(pi) - 0.5 * (math.log(2 * math.pi) + torch.log(var) + (x - mu) ** 2 / var)


@torch.no_grad()
def _em_check(ll, prev, tol, converged, done, it, compiling: bool):
    """One EM convergence check of :func:`fit_gmm_1d` / :func:`fit_gmm_2d`.

    Eagerly: ``converged = |ll - prev| < tol`` and ``stop`` when every mixture has converged (a host
    read). While ``torch.compile`` traces there is no host-side break: ``done`` (a 0-d tensor)
    records convergence, the iteration count stops growing, and :func:`_em_update` freezes the
    parameters, so the result equals the eager early exit. Returns ``(converged, done, it, stop)``.
    """
    if compiling:
        converged = torch.where(done, converged, (ll - prev).abs() < tol)
        return converged, done | converged.all(), it + (~done).to(torch.long), False
    converged = (ll - prev).abs() < tol
    return converged, done, it + 1, bool(converged.all())


def _em_update(done, compiling: bool, old: tuple, new: tuple) -> tuple:
    """The M-step's new parameters, or (compiled, after convergence) the old ones unchanged."""
    if compiling:
        return tuple(torch.where(done, o, n) for o, n in zip(old, new))
    return new


def _em_settings(
    x: torch.Tensor, n: int, n_components: Any, max_iter: Any, tol: Any, reg_covar: Any, what: str
) -> tuple[int, float, float]:
    """Check the settings of :func:`fit_gmm_1d` / :func:`fit_gmm_2d` for ``n`` ``what`` per row.

    Returns ``(K, tol, reg_covar)``; raises ValueError as those functions document.
    """
    if isinstance(n_components, bool) or not isinstance(n_components, int) or n_components < 1:
        raise ValueError(f"n_components must be an integer >= 1, got {n_components!r}")
    if n < n_components:
        raise ValueError(f"x has n={n} {what} per row, fewer than n_components={n_components}")
    if not _compiling() and not bool(torch.isfinite(x).all()):
        raise ValueError("x contains NaN or inf")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    return n_components, _check_real(tol, "tol", low=0.0), _check_real(reg_covar, "reg_covar", low=0.0, strict=True)


def _em_start(x: torch.Tensor, B: int, K: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Uniform weights π (B, 1, K) and the state of :func:`_em_check`: ``prev``, ``converged``, ``done``."""
    pi = torch.full((B, 1, K), 1.0 / K, dtype=x.dtype, device=x.device)
    prev = torch.full((B,), -math.inf, dtype=x.dtype, device=x.device)
    converged = torch.zeros(B, dtype=torch.bool, device=x.device)
    done = torch.zeros((), dtype=torch.bool, device=x.device)
    return pi, prev, converged, done


def _e_step(logp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-normaliser (B, n, 1) and responsibilities (B, n, K) of the joint log-densities ``logp``."""
    norm = torch.logsumexp(logp, dim=-1, keepdim=True)
    return norm, torch.exp(logp - norm)


def fit_gmm_1d(
    x: torch.Tensor,
    n_components: int,
    *,
    init_means: torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-3,
    reg_covar: float = 1e-6,
) -> GMM1D:
    """Fit ``B`` one-dimensional Gaussian mixtures at once by EM (Dempster et al. 1977), one per row of ``x``.

    The same algorithm as ``sklearn.mixture.GaussianMixture(covariance_type="full")`` on
    one feature (``reg_covar`` added to every variance, convergence on the change of the mean
    log-likelihood), vectorised over the rows: every step is a few ``(B, n, K)`` tensor ops.
    No gradient flows through the fit.

    Parameters
    ----------
    x : torch.Tensor, shape (B, n), float
        Row ``b`` holds the ``n`` values of mixture ``b``; ``n ≥ n_components``.
    n_components : int, ≥ 1
        ``K``.
    init_means : torch.Tensor, shape (K,) or (B, K), optional
        Starting means (a warm start). Default: the row quantiles at ``(k + ½)/K``.
        Variances start at the row variance, weights at ``1/K``.
    max_iter : int, default 100
    tol : float, default 1e-3
        Stop when every row's mean log-likelihood changes by less than ``tol`` (sklearn's
        default).
    reg_covar : float, default 1e-6
        Added to each variance (keeps a component on one repeated value finite).

    Returns
    -------
    GMM1D
        Components sorted by mean (ascending) in every row.

    Raises
    ------
    ValueError
        ``x`` not 2-D, with NaN/inf, or with fewer values than components; bad
        ``n_components``, ``max_iter``, ``tol``, ``reg_covar`` or ``init_means`` shape.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[0.0, 0.1, -0.1, 5.0, 5.1, 4.9], [1.0, 1.1, 0.9, -3.0, -3.1, -2.9]])
    >>> gmm = fit_gmm_1d(x, 2)
    >>> gmm.labels.tolist()
    [[0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0]]
    >>> [round(m, 2) for m in gmm.means[0].tolist()]
    [0.0, 5.0]
    """
    if not isinstance(x, torch.Tensor) or not torch.is_floating_point(x) or x.ndim != 2:
        raise ValueError(f"x must be a floating tensor of shape (B, n), got {getattr(x, 'shape', type(x))}")
    B, n = x.shape
    K, tol, reg_covar = _em_settings(x, n, n_components, max_iter, tol, reg_covar, "values")
    xs = x.unsqueeze(-1)  # (B, n, 1)
    if init_means is None:
        q = (torch.arange(K, dtype=x.dtype, device=x.device) + 0.5) / K
        mu = torch.quantile(x, q, dim=1).T  # (B, K)
    else:
        mu = torch.as_tensor(init_means, dtype=x.dtype, device=x.device)
        if mu.shape not in ((K,), (B, K)):
            raise ValueError(f"init_means must have shape ({K},) or ({B}, {K}), got {tuple(mu.shape)}")
        mu = mu.expand(B, K).clone()
    mu = mu.unsqueeze(1)  # (B, 1, K)
    var = (x.var(dim=1, unbiased=False) + reg_covar)[:, None, None].expand(B, 1, K).clone()
    pi, prev, converged, done = _em_start(x, B, K)
    compiling = _compiling()
    it: Any = 0
    for _ in range(max_iter):  # EM iterations (all B mixtures advance together)
        norm, resp = _e_step(_log_gauss(xs, mu, var, pi))  # E-step
        ll = norm.squeeze(-1).mean(dim=1)
        converged, done, it, stop = _em_check(ll, prev, tol, converged, done, it, compiling)
        if stop:
            break
        prev = ll
        nk = resp.sum(dim=1, keepdim=True) + 10 * torch.finfo(x.dtype).eps  # M-step
        mu_new = (resp * xs).sum(dim=1, keepdim=True) / nk
        var_new = (resp * (xs - mu_new) ** 2).sum(dim=1, keepdim=True) / nk + reg_covar
        mu, var, pi = _em_update(done, compiling, (mu, var, pi), (mu_new, var_new, nk / n))
    norm, resp = _e_step(_log_gauss(xs, mu, var, pi))
    order = mu.squeeze(1).argsort(dim=-1)  # sort components by mean
    mu, var, pi = (t.squeeze(1).gather(1, order) for t in (mu, var, pi))
    resp = resp.gather(2, order[:, None, :].expand(B, n, K))
    return GMM1D(
        means=mu,
        variances=var,
        weights=pi,
        resp=resp,
        labels=resp.argmax(dim=-1),
        log_likelihood=norm.squeeze(-1).mean(dim=1),
        n_iter=it,
        converged=converged,
    )


@dataclass
class GMM2D:
    """``B`` fitted two-dimensional Gaussian mixtures of ``K`` full-covariance components.

    Components are sorted by the mean of their two mean coordinates, ascending (the 1-D rule
    of :class:`GMM1D` on the diagonal), so :func:`gmm_feature_masks` applies unchanged.

    Attributes
    ----------
    means : torch.Tensor, shape (B, K, 2)
    covariances : torch.Tensor, shape (B, K, 2, 2)
        ``reg_covar`` added to the diagonal.
    weights : torch.Tensor, shape (B, K)
    resp : torch.Tensor, shape (B, n, K)
    labels : torch.LongTensor, shape (B, n)
    log_likelihood : torch.Tensor, shape (B,)
    n_iter : int
    converged : torch.BoolTensor, shape (B,)
    """

    means: torch.Tensor
    covariances: torch.Tensor
    weights: torch.Tensor
    resp: torch.Tensor
    labels: torch.Tensor
    log_likelihood: torch.Tensor
    n_iter: int
    converged: torch.Tensor


def _log_gauss_2d(x: torch.Tensor, mu: torch.Tensor, cov: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    # x (B, n, 1, 2); mu (B, 1, K, 2); cov (B, 1, K, 3) as (a, b, c) of [[a, b], [b, c]]; pi (B, 1, K) -> (B, n, K)
    a, b, c = cov.unbind(-1)
    det = a * c - b * b
    d0, d1 = (x - mu).unbind(-1)
    maha = (c * d0 * d0 - 2.0 * b * d0 * d1 + a * d1 * d1) / det
    return torch.log(pi) - math.log(2 * math.pi) - 0.5 * torch.log(det) - 0.5 * maha


def fit_gmm_2d(
    x: torch.Tensor,
    n_components: int,
    *,
    init_means: torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-3,
    reg_covar: float = 1e-6,
) -> GMM2D:
    r"""Fit ``B`` independent 2-D Gaussian mixtures (full covariances) by batched EM (Paper 02 (HMLC), §3).

    Paper 02 §3: the anchor image's embedding and its augmented view's "define a
    two-dimensional plane, where a two-dimensional GMM is fitted": feature :math:`j` of image
    :math:`b` is the point :math:`(z_a[j], z_p[j])`, and the mixture groups the ``d`` points.
    EM as scikit-learn's ``GaussianMixture(covariance_type="full")``, all ``B`` mixtures at once.

    Parameters
    ----------
    x : torch.Tensor, shape (B, n, 2), float
        ``n`` points per mixture (``n ≥ n_components``), finite.
    n_components : int, >= 1
    init_means : torch.Tensor, shape (K, 2) or (B, K, 2), optional
        Warm start; default the per-coordinate quantiles ``(k + ½)/K``.
    max_iter : int, default 100
    tol : float, default 1e-3
        Stop when every mixture's mean log-likelihood per point changed by less.
    reg_covar : float, default 1e-6
        Added to the covariance diagonals.

    Returns
    -------
    GMM2D

    Raises
    ------
    ValueError
        ``x`` not (B, n, 2), non-finite, fewer points than components; bad
        ``n_components``, ``max_iter``, ``tol``, ``reg_covar`` or ``init_means`` shape.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0, 0.1], [0.1, 0.0], [5.0, 5.2], [5.1, 4.9]]])
    >>> fit_gmm_2d(x, 2).labels.tolist()
    [[0, 0, 1, 1]]
    """
    if not isinstance(x, torch.Tensor) or x.ndim != 3 or x.shape[-1] != 2:
        raise ValueError(f"x must be a (B, n, 2) tensor, got {tuple(getattr(x, 'shape', ()))}")
    B, n, _ = x.shape
    K, tol, reg_covar = _em_settings(x, n, n_components, max_iter, tol, reg_covar, "points")
    xs = x.unsqueeze(2)  # (B, n, 1, 2)
    if init_means is None:
        q = (torch.arange(K, dtype=x.dtype, device=x.device) + 0.5) / K
        mu = torch.quantile(x, q, dim=1).permute(1, 0, 2)  # (B, K, 2)
    else:
        mu = torch.as_tensor(init_means, dtype=x.dtype, device=x.device)
        if mu.shape not in ((K, 2), (B, K, 2)):
            raise ValueError(f"init_means must have shape ({K}, 2) or ({B}, {K}, 2), got {tuple(mu.shape)}")
        mu = mu.expand(B, K, 2).clone()
    mu = mu.unsqueeze(1)  # (B, 1, K, 2)
    v = x.var(dim=1, unbiased=False) + reg_covar  # (B, 2)
    cov = torch.stack([v[:, 0], torch.zeros_like(v[:, 0]), v[:, 1]], dim=-1)[:, None, None, :].expand(B, 1, K, 3)
    pi, prev, converged, done = _em_start(x, B, K)
    compiling = _compiling()
    it: Any = 0
    for _ in range(max_iter):
        norm, resp = _e_step(_log_gauss_2d(xs, mu, cov, pi))  # E-step (B, n, K)
        ll = norm.squeeze(-1).mean(dim=1)
        converged, done, it, stop = _em_check(ll, prev, tol, converged, done, it, compiling)
        if stop:
            break
        prev = ll
        r = resp.unsqueeze(-1)  # (B, n, K, 1)
        nk = resp.sum(dim=1) + 10 * torch.finfo(x.dtype).eps  # M-step (B, K)
        mu_new = ((r * xs).sum(dim=1) / nk[..., None]).unsqueeze(1)
        d0, d1 = (xs - mu_new).unbind(-1)  # (B, n, K)
        a = (resp * d0 * d0).sum(dim=1) / nk + reg_covar
        b = (resp * d0 * d1).sum(dim=1) / nk
        c = (resp * d1 * d1).sum(dim=1) / nk + reg_covar
        cov_new = torch.stack([a, b, c], dim=-1).unsqueeze(1)
        pi_new = (nk / n).unsqueeze(1)
        mu, cov, pi = _em_update(done, compiling, (mu, cov, pi), (mu_new, cov_new, pi_new))
    norm, resp = _e_step(_log_gauss_2d(xs, mu, cov, pi))
    mu, cov, pi = mu.squeeze(1), cov.squeeze(1), pi.squeeze(1)
    order = mu.mean(dim=-1).argsort(dim=-1)  # sort components along the diagonal
    mu = mu.gather(1, order[..., None].expand(B, K, 2))
    cov = cov.gather(1, order[..., None].expand(B, K, 3))
    pi = pi.gather(1, order)
    resp = resp.gather(2, order[:, None, :].expand(B, n, K))
    a, b, c = cov.unbind(-1)
    full = torch.stack([torch.stack([a, b], -1), torch.stack([b, c], -1)], -2)
    return GMM2D(
        means=mu,
        covariances=full,
        weights=pi,
        resp=resp,
        labels=resp.argmax(dim=-1),
        log_likelihood=norm.squeeze(-1).mean(dim=1),
        n_iter=it,
        converged=converged,
    )


def gmm_feature_masks(gmm: GMM1D) -> torch.Tensor:
    """Hard per-level feature masks ``M_h`` from fitted mixtures (Paper 02 (HMLC), §3).

    Level ``h`` (column ``h-1`` of the level labels) takes the component with the
    ``h``-th *largest* mean: the first level gets the features with the largest values.
    The paper does not say which component belongs to which level; this fixed rule keeps the
    assignment stable across steps and images.

    Parameters
    ----------
    gmm : GMM1D or GMM2D
        ``B`` mixtures of ``K`` components over ``d`` values (or ``d`` 2-D points).

    Returns
    -------
    torch.Tensor, shape (K, B, d), float 0/1
        ``masks[h, b, j] = 1`` iff feature ``j`` of image ``b`` belongs to level ``h+1``;
        every feature is in exactly one mask. No gradient (the masks are constants of the
        loss).

    Examples
    --------
    >>> import torch
    >>> gmm = fit_gmm_1d(torch.tensor([[0.0, 0.1, 5.0, 5.1]]), 2)
    >>> gmm_feature_masks(gmm)[:, 0].tolist()  # level 1 = the large values
    [[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]]
    """
    K = gmm.means.shape[1]
    level_of = (K - 1) - gmm.labels  # component sorted ascending -> level index (largest mean first)
    return torch.nn.functional.one_hot(level_of, K).permute(2, 0, 1).to(gmm.means.dtype)


class GHMLCLoss(_MaskedHMLC):
    """G-HMLC: HMCE on per-level feature subsets chosen by per-image 1-D GMMs (Paper 02 (HMLC), §3, Eq. 4).

    Each step: (1) for every image, the mean of its ``V`` view embeddings gives ``d`` values;
    (2) :func:`fit_gmm_1d` fits ``L`` components to them, all images at once, warm-started
    from the previous step's means; (3) :func:`gmm_feature_masks` turns the assignments into
    hard masks ``M_h`` (``L, B, d``), shared by the views of an image; (4) the level-``h``
    SupCon of :class:`HMLCLoss` (``"paper"`` mode) compares ``z ⊙ M_h`` (the dot product over
    the selected features, ``z_i[M_h] · z_p[M_h]``, not re-normalised).

    The masks carry no gradient: the fit runs under ``torch.no_grad`` on detached
    embeddings, so gradients reach ``z`` only through the masked dot products.

    The mixture is two-dimensional by default, as §3 says: the anchor view's and the augmented
    view's embeddings "define a two-dimensional plane, where a two-dimensional GMM is fitted",
    so feature ``j`` is the point ``(z_0[j], z_1[j])`` (:func:`fit_gmm_2d`, full covariances);
    ``gmm_dims=1`` fits the 1-D mixture over the values of the view mean instead (hierviz ≤ 0.2;
    also used with a single view). Our readings where the paper is silent: the warm start
    is the batch mean of the previous step's sorted component means (images differ from step
    to step, so per-image means cannot carry over); the component with the largest mean is
    level 1.

    Parameters
    ----------
    tree : LabelTree, optional
        To derive the level labels from leaf labels (``order``); or pass ``(B, L)`` labels.
    tau : float, > 0, default 0.1
        The temperature τ (``temperature`` before 0.3, still accepted with a DeprecationWarning).
    loss_type : {"hmc", "hce", "hmce"}, default "hmce"
        Eq. 4 (HMCE) in the paper.
    layer_penalty : {"exp", "pow2", "linear"}, default "linear"
        "a linear scaling was employed" (§3).
    order : {"class", "category"}, default "class"
    features : callable or None, default None
        Map applied to ``z`` (B, V, d) before masking, e.g. ``geometry.logmap0`` so that a
        hyperbolic embedding is masked in the tangent space at the origin (what the
        ``"g-hmlc"``/``"a-hmlc"`` methods do in a hyperbolic geometry; the paper is Euclidean).
    max_iter : int, default 100
        EM iterations per step (a warm start usually converges in a few).
    gmm_dims : {2, 1}, default 2
        2: the paper's 2-D mixture on the plane of the first two views; 1: the 1-D mixture on
        the values of the view mean.
    tol : float, default 1e-3
    warm_start : bool, default True

    Attributes
    ----------
    means : torch.Tensor, shape (L, 2), (L,) or (0,)
        The warm start for the next step (a non-persistent buffer: empty until the first
        call, not saved in checkpoints).
    last_masks : torch.Tensor or None
        ``(L, B, d)`` masks of the last call (for figures).

    Raises
    ------
    ValueError
        As :class:`HMLCLoss` and :func:`fit_gmm_1d` (e.g. ``d < L``).

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import GHMLCLoss
    >>> g = torch.Generator().manual_seed(0)
    >>> z = torch.nn.functional.normalize(torch.randn(4, 2, 8, generator=g), dim=-1)
    >>> y = torch.tensor([[0, 0], [1, 0], [2, 1], [2, 1]])
    >>> loss = GHMLCLoss(tau=0.5)
    >>> bool(loss(z, y) > 0), tuple(loss.last_masks.shape), tuple(loss.means.shape)
    (True, (2, 4, 8), (2, 2))
    """

    def __init__(
        self,
        tree: Any = None,
        *,
        tau: float = DEFAULT_TAU,
        loss_type: str = "hmce",
        layer_penalty: str = "linear",
        order: str = "class",
        max_iter: int = 100,
        tol: float = 1e-3,
        warm_start: bool = True,
        similarity: Any = None,
        features: Any = None,
        temperature: Any = _NOT_GIVEN,
        gmm_dims: int = 2,
    ):
        super().__init__(tree, tau, temperature, features, loss_type, layer_penalty, order, similarity)
        if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1 (EM iterations of the GMM fit), got {max_iter!r}")
        self.max_iter = int(max_iter)
        self.tol = _check_real(tol, "tol", low=0.0)
        self.warm_start = bool(warm_start)
        if gmm_dims not in (1, 2):
            raise ValueError(f"gmm_dims must be 1 (values of the view mean) or 2 (the paper's plane), got {gmm_dims!r}")
        self.gmm_dims = int(gmm_dims)
        self.register_buffer("means", torch.zeros(0), persistent=False)
        self.last_masks: torch.Tensor | None = None

    def masks(self, z: torch.Tensor, levels: int) -> torch.Tensor:
        """Hard masks ``(L, B, d)`` for a batch ``z`` (B, V, d), updating the warm start; no gradient."""
        with torch.no_grad():
            if self.gmm_dims == 2 and z.shape[1] >= 2:  # the paper's plane of the two views (§3)
                x = torch.stack([z[:, 0].detach(), z[:, 1].detach()], dim=-1)  # (B, d, 2)
                shape, fit = (levels, 2), fit_gmm_2d
            else:  # one view, or gmm_dims=1: the values of the view mean
                x, shape, fit = z.detach().mean(dim=1), (levels,), fit_gmm_1d
            init = self.means if self.warm_start and tuple(self.means.shape) == shape else None
            gmm = fit(x, levels, init_means=init, max_iter=self.max_iter, tol=self.tol)
            self.means = gmm.means.mean(dim=0)
            masks = gmm_feature_masks(gmm)
        self.last_masks = masks
        return masks

    def forward(self, z: torch.Tensor, labels: Any) -> torch.Tensor:
        """Loss of one batch: ``z`` (B, V, d), ``labels`` (B, L) level labels or (B,) leaf labels with ``tree``.

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z`` (not through the masks).
        """
        z, y = self._inputs(z, labels)
        L = int(torch.as_tensor(y).shape[1]) if torch.as_tensor(y).ndim == 2 else 1
        m = self.masks(z, L)
        return self.hmlc(z, y, masks=m[:, :, None, :])
