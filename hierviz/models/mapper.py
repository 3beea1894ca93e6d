r"""The Hyperbolic Mapper of Hyper-DINO: frozen features → a small MLP → the Poincaré ball.

Paper 03 (Hyper-DINO) §2.2: :math:`e = W_2\,\sigma(W_1 x + b_1) + b_2` with 256 hidden units
and ReLU :math:`\sigma`, read as a tangent vector at the origin, then

.. math:: h = \beta\,\exp_0(e), \qquad \beta = \min\Big(1, \frac{r}{\|\exp_0(e)\|}\Big),
    \quad r = (1 - \delta)/\sqrt c,

so every embedding lies at most at radius :math:`r`, a distance :math:`\delta` inside the
unit ball (:math:`c = 1`). :math:`\exp_0` is the package's
(:meth:`hierviz.geometry.PoincareBall.expmap0`). The module records the fraction of points
that the radius projection moved (:attr:`HyperbolicMapper.clip_fraction`): a clip that
every point hits is a bug, not a safeguard (``DESIGN.md``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hierviz.geometry import PoincareBall

__all__ = ["HyperbolicMapper"]


class HyperbolicMapper(nn.Module):
    r"""Two-layer MLP into the Poincaré ball with a radius cap (Paper 03 (Hyper-DINO) §2.2).

    Parameters
    ----------
    dim_in : int, >= 1
        Input feature size (e.g. N of PCA(N)).
    dim_out : int, >= 1, default 32
        Ball dimension (the paper's Hyper-DINO(·, 32)).
    hidden : int, >= 1, default 256
        Hidden units of :math:`W_1` (the paper: 256).
    delta : float, in (0, 1), default 1e-2
        The projection radius is :math:`r = (1 - \delta)/\sqrt c` (the paper: :math:`\delta \ll 1`,
        value not given). The default keeps :math:`r` = 0.99 above geoopt's own float32
        margin (``expmap0`` projects to :math:`(1 - 4\cdot10^{-3})/\sqrt c`), so this cap is the
        one that acts, and inside the range where float32 distances are accurate.
    geometry : PoincareBall, optional
        Default ``PoincareBall(c=1.0)``.

    Attributes
    ----------
    clip_fraction : float
        Share of the rows of the last forward call that a projection moved (in [0, 1]):
        those with :math:`\tanh(\sqrt c\,\|e\|)/\sqrt c > r`, computed from :math:`\|e\|`
        so that geoopt's own margin counts too.
    radius : float
        :math:`r`.

    Raises
    ------
    ValueError
        Non-positive sizes, ``delta`` outside (0, 1), a non-hyperbolic geometry, or at call
        time an input of the wrong shape or with NaN/inf.

    Notes
    -----
    The cap has no gradient in the radial direction: for a capped point :math:`\|h\| = r`
    whatever :math:`\|e\|`, so neither HCL's hinge nor its norm penalty
    :math:`\lambda\,\|h\|` can pull it back inside; only its direction still learns. On
    HAM10000 features (``docs/results/paper03.md``) some folds end with every point at the
    cap within 5 epochs, even with :math:`\lambda = 0.1`: watch :attr:`clip_fraction`.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> hm = HyperbolicMapper(10, 4)
    >>> h = hm(torch.randn(5, 10))
    >>> h.shape, bool(h.norm(dim=-1).max() <= hm.radius), 0.0 <= hm.clip_fraction <= 1.0
    (torch.Size([5, 4]), True, True)
    """

    def __init__(
        self, dim_in: int, dim_out: int = 32, hidden: int = 256, *, delta: float = 1e-2, geometry: Any = None
    ) -> None:
        super().__init__()
        for name, v in (("dim_in", dim_in), ("dim_out", dim_out), ("hidden", hidden)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not 0.0 < float(delta) < 1.0:
            raise ValueError(f"delta must be in (0, 1) (radius 1 - delta), got {delta!r}")
        if geometry is None:
            geometry = PoincareBall(1.0)
        if not getattr(geometry, "hyperbolic", False) or not hasattr(geometry, "radius"):
            raise ValueError(f"geometry must be a PoincareBall, got {geometry!r}")
        self.geometry = geometry
        self.dim_in, self.dim_out, self.delta = dim_in, dim_out, float(delta)
        self.radius = (1.0 - self.delta) * float(geometry.radius)
        self.net = nn.Sequential(nn.Linear(dim_in, hidden), nn.ReLU(), nn.Linear(hidden, dim_out))
        self.clip_fraction = 0.0

    def tangent(self, x: torch.Tensor) -> torch.Tensor:
        """The Euclidean part :math:`e = W_2\\,\\mathrm{ReLU}(W_1 x + b_1) + b_2`, shape (B, dim_out)."""
        if x.ndim != 2 or x.shape[1] != self.dim_in:
            raise ValueError(f"x must have shape (B, {self.dim_in}), got {tuple(x.shape)}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x holds NaN or inf; check the features file")
        return self.net(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map features to the ball.

        Parameters
        ----------
        x : torch.Tensor, shape (B, dim_in), float

        Returns
        -------
        torch.Tensor, shape (B, dim_out)
            Points with norm ``<= radius``.
        """
        e = self.tangent(x)
        p = self.geometry.expmap0(e)
        norm = p.norm(dim=-1, keepdim=True).clamp_min(1e-15)
        beta = torch.clamp(self.radius / norm, max=1.0)
        with torch.no_grad():
            sqrt_c = float(self.geometry.c) ** 0.5
            exact = torch.tanh(sqrt_c * e.detach().double().norm(dim=-1)) / sqrt_c  # ‖exp_0(e)‖ before any cap
            self.clip_fraction = float((exact > self.radius).double().mean()) if len(e) else 0.0
        return p * beta
