r"""HCL: the hyperbolic contrastive loss of Hyper-DINO, with a dynamic margin and a norm penalty.

Paper 03 (Hyper-DINO) §2.3, "Hyperbolic Contrastive Loss Function". For a batch of
embeddings :math:`h_1, \dots, h_B` with labels :math:`y`, the distance matrix
:math:`D_{ij} = d(h_i, h_j)` of the geometry, the masks :math:`S_{ij} = [y_i = y_j]` and
:math:`N_{ij} = 1 - S_{ij}`:

.. math::
    \mathcal L_{pos} = \frac{\sum_{ij} S_{ij} D_{ij}}{\sum_{ij} S_{ij} + \varepsilon},\quad
    \mathcal L_{neg} = \frac{\sum_{ij} N_{ij}\max(0, m - D_{ij})}{\sum_{ij} N_{ij} + \varepsilon},\quad
    \mathcal R_{norm} = \frac{\lambda}{B}\sum_i \|h_i\|,

with the dynamic margin :math:`m = m_0 + \alpha\,\bar d`,
:math:`\bar d = \frac{1}{B^2}\sum_{ij} D_{ij}`, and
:math:`\mathcal L = \mathcal L_{pos} + \mathcal L_{neg} + \mathcal R_{norm}`.

The sums run over all :math:`B^2` ordered pairs, diagonal included, as the paper writes
them: :math:`S_{ii} = 1` and :math:`D_{ii} = 0`, so the diagonal adds :math:`B` to the
positive count and zeros to :math:`\bar d`. :math:`\bar d` is not detached (the paper does
not say so), so the margin also receives a gradient. The loss takes every distance from the
geometry (``geometry.pairwise_dist``), so the same code runs in the Poincaré ball (the
paper) and, as a control, on the unit sphere (:class:`~hierviz.geometry.Euclidean`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hierviz.geometry import PoincareBall

from ._validation import _check_embeddings, _check_labels, _check_real, _check_tree, _resolve_geometry

__all__ = ["HCLLoss", "hcl_terms"]


def hcl_terms(
    D: torch.Tensor, labels: torch.Tensor, norms: torch.Tensor, *, m0: float, alpha: float, lam: float, eps: float
) -> dict[str, torch.Tensor]:
    r"""The terms of HCL from a distance matrix (Paper 03 (Hyper-DINO) §2.3).

    Parameters
    ----------
    D : torch.Tensor, shape (n, n), float
        Pairwise distances, ``D[i, i] = 0``.
    labels : torch.Tensor, shape (n,), long
        Class of each row.
    norms : torch.Tensor, shape (n,), float
        Euclidean norms ``‖h_i‖`` of the embeddings.
    m0, alpha, lam, eps : float
        Base margin :math:`m_0`, margin scale :math:`\alpha`, norm weight :math:`\lambda`
        and the :math:`\varepsilon` of the denominators.

    Returns
    -------
    dict of str to torch.Tensor
        Scalars ``"pos"`` (:math:`\mathcal L_{pos}`), ``"neg"`` (:math:`\mathcal L_{neg}`),
        ``"norm"`` (:math:`\mathcal R_{norm}`), ``"margin"`` (:math:`m`), ``"d_bar"``
        (:math:`\bar d`) and ``"loss"`` (their sum ``pos + neg + norm``).

    Examples
    --------
    Two points of one class at distance 1 and a third of another class at distance 2 from
    both (no hinge is active when ``m0 = 0.5`` and ``alpha = 0.1``):

    >>> import torch
    >>> D = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0], [2.0, 2.0, 0.0]])
    >>> t = hcl_terms(D, torch.tensor([0, 0, 1]), torch.zeros(3), m0=0.5, alpha=0.1, lam=0.0, eps=0.0)
    >>> round(t["pos"].item(), 4), round(t["margin"].item(), 4), t["neg"].item()  # pos = 2 / 5
    (0.4, 0.6111, 0.0)
    """
    S = (labels[:, None] == labels[None, :]).to(D.dtype)
    N = 1.0 - S
    n = D.shape[0]
    d_bar = D.sum() / (n * n)
    margin = m0 + alpha * d_bar
    pos = (S * D).sum() / (S.sum() + eps)
    neg = (N * torch.clamp(margin - D, min=0.0)).sum() / (N.sum() + eps)
    norm = lam * norms.mean()
    return {"pos": pos, "neg": neg, "norm": norm, "margin": margin, "d_bar": d_bar, "loss": pos + neg + norm}


class HCLLoss(nn.Module):
    r"""Hyperbolic contrastive loss with a dynamic margin (Paper 03 (Hyper-DINO) §2.3).

    :math:`\mathcal L = \mathcal L_{pos} + \mathcal L_{neg} + \mathcal R_{norm}`: the mean
    distance of same-class pairs, a hinge pushing different-class pairs beyond the margin
    :math:`m = m_0 + \alpha\bar d` (:math:`\bar d` = mean of the batch's distance matrix),
    and :math:`\lambda` times the mean Euclidean norm of the embeddings, which keeps them
    away from the boundary of the ball. See :mod:`hierviz.losses.hcl` for the formulas.

    Parameters
    ----------
    geometry : Geometry or str, optional
        Where distances are measured; default ``PoincareBall(c=1.0)`` (the paper).
        :class:`~hierviz.geometry.Euclidean` (unit sphere, chordal distance in [0, 2]) is
        the Euclidean control.
    m0 : float, >= 0, default 0.5
        Base margin :math:`m_0`.
    alpha : float, >= 0, default 0.1
        Scale :math:`\alpha` of the batch-mean distance in the margin.
    lam : float, >= 0, default 1e-3
        Weight :math:`\lambda` of the norm penalty.
    eps : float, > 0, default 1e-8
        :math:`\varepsilon` of the two denominators (the paper leaves its value open).
    tree : LabelTree, optional
        Only used to check that labels lie in ``[0, C-1]``.

    Raises
    ------
    ValueError
        Negative ``m0``, ``alpha`` or ``lam``; ``eps <= 0``; at call time ``h`` of the wrong
        shape, with NaN/inf or (hyperbolic) outside the ball, or ``labels`` of the wrong
        shape or outside the tree.
    TypeError
        Non-numeric hyperparameters, a non-geometry ``geometry``, non-integer ``labels``.

    Notes
    -----
    Calling convention: ``loss(h, labels)`` with ``h`` of shape ``(B, d)`` or ``(B, V, d)``
    (V views of each image; all ``B·V`` embeddings enter the matrix, the views of one image
    being positives of each other) and ``labels`` ``(B,)`` → scalar tensor ``>= 0``. After
    each call ``last_terms`` holds the detached terms (``pos``, ``neg``, ``norm``,
    ``margin``, ``d_bar``) for logging. Vectorised: one ``(n, n)`` distance matrix,
    ``n = B·V``, no loop over the batch.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import PoincareBall
    >>> from hierviz.losses import HCLLoss
    >>> h = 0.3 * torch.nn.functional.normalize(torch.randn(6, 4, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> loss = HCLLoss(PoincareBall(1.0), m0=0.5, alpha=0.1, lam=1e-3)
    >>> value = loss(h, torch.tensor([0, 0, 1, 1, 2, 2]))
    >>> round(value.item(), 4) == round(sum(loss.last_terms[k] for k in ("pos", "neg", "norm")), 4)
    True
    """

    input_kind = "embeddings"

    def __init__(
        self,
        geometry: Any = None,
        m0: float = 0.5,
        alpha: float = 0.1,
        lam: float = 1e-3,
        *,
        eps: float = 1e-8,
        tree: Any = None,
    ) -> None:
        super().__init__()
        if geometry is None:
            geometry = PoincareBall(1.0)
        self.geometry = _resolve_geometry(geometry)
        self.m0 = _check_real(m0, "m0", low=0.0)
        self.alpha = _check_real(alpha, "alpha", low=0.0)
        self.lam = _check_real(lam, "lam", low=0.0)
        self.eps = _check_real(eps, "eps", low=0.0, strict=True)
        self.tree = _check_tree(tree, False, "HCLLoss", needs=("num_leaves",))
        self._last_terms: dict[str, torch.Tensor] = {}

    def extra_repr(self) -> str:
        return f"geometry={self.geometry!r}, m0={self.m0:g}, alpha={self.alpha:g}, lam={self.lam:g}"

    def forward(self, h: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        h : torch.Tensor, shape (B, d) or (B, V, d), float32/float64
            Embeddings on the geometry's manifold (inside the ball for Poincaré).
        labels : LongTensor, shape (B,)
            Class indices.

        Returns
        -------
        torch.Tensor
            Scalar, ``>= 0``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring.
        """
        if isinstance(h, torch.Tensor) and h.ndim == 2:
            h = h.unsqueeze(1)
        flat, B, V = _check_embeddings(h, self.geometry, min_views=1, who="HCLLoss")
        num_leaves = None if self.tree is None else self.tree.num_leaves
        y = _check_labels(labels, B, num_leaves, flat.device).repeat(V)  # view-major, as flat
        D = self.geometry.pairwise_dist(flat)
        terms = hcl_terms(D, y, flat.norm(dim=-1), m0=self.m0, alpha=self.alpha, lam=self.lam, eps=self.eps)
        self._last_terms = {k: v.detach() for k, v in terms.items() if k != "loss"}  # read lazily: no host sync
        return terms["loss"]

    @property
    def last_terms(self) -> dict[str, float]:
        """The terms of the last call as floats (``{}`` before the first call)."""
        return {k: float(v) for k, v in getattr(self, "_last_terms", {}).items()}
