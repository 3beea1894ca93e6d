r"""The triplet loss T of Paper 04 (Generalised triplets), Eq. 1, on tree triplets.

.. math:: \mathcal{L}_{triplet}(x_a, x_p, x_n) = \max(0,\ d_{ap} - d_{an} + \alpha)

with one margin :math:`\alpha` for every level (the paper: 0.3) and, in the paper,
:math:`d = -\cos` (negative cosine similarity). ``distance="geometry"`` uses the geodesic
distance of the run's :class:`~hierviz.geometry.Geometry` instead (our extension: the
Poincaré or Lorentz distance in a hyperbolic run). The batch is laid out as the tree-triplet
sampler yields it (:class:`hierviz.samplers.TreeTripletBatchSampler`):
``[a_1, p_1, n_1, a_2, p_2, n_2, ...]``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hierviz.losses._core import _rescale_tiny
from hierviz.losses._validation import _check_choice, _check_embeddings, _check_real, _resolve_geometry

__all__ = ["TripletLoss", "triplet_distances"]

DISTANCES = ("cosine", "geometry")


def triplet_distances(
    z: torch.Tensor, geometry: Any = None, distance: str = "cosine"
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(d_ap, d_an)`` of triplet-ordered embeddings.

    Parameters
    ----------
    z : torch.Tensor, shape (3B, V, d)
        Rows ``3i, 3i+1, 3i+2`` are anchor, positive and negative of triplet i.
    geometry : Geometry, optional
        Needed for ``distance="geometry"``.
    distance : {"cosine", "geometry"}, default "cosine"
        ``-cos(x, y)`` (Paper 04 (Generalised triplets) §II-C), or ``geometry.dist``.

    Returns
    -------
    d_ap, d_an : torch.Tensor, shape (B, V)
        Distances per triplet and view (view v of the anchor against view v of the others).

    Examples
    --------
    >>> z = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[-1.0, 0.0]]])
    >>> triplet_distances(z)
    (tensor([[-1.]]), tensor([[1.]]))
    """
    t = z.reshape(z.shape[0] // 3, 3, *z.shape[1:])
    a, p, n = t[:, 0], t[:, 1], t[:, 2]
    if distance == "cosine":  # rows below cosine_similarity's 1e-8 floor rescaled first: scale-invariant
        cos = nn.functional.cosine_similarity
        a, p, n = _rescale_tiny(a), _rescale_tiny(p), _rescale_tiny(n)
        return -cos(a, p, dim=-1), -cos(a, n, dim=-1)
    return geometry.dist(a, p), geometry.dist(a, n)


class TripletLoss(nn.Module):
    r"""Triplet margin loss on tree triplets (Paper 04 (Generalised triplets), Eq. 1).

    Parameters
    ----------
    tree : LabelTree, optional
        Unused by the loss (the tree acts through the sampler); accepted so every loss is
        built the same way.
    geometry : Geometry or str, optional
        The run's geometry; required for ``distance="geometry"``.
    margin : float, default 0.3
        :math:`\alpha \geq 0` (the paper's value).
    distance : {"cosine", "geometry"}, default "cosine"
        ``"cosine"``: :math:`d = -\cos(x, y)` (the paper); ``"geometry"``:
        ``geometry.dist`` (geodesic distance; on the Euclidean unit sphere the angle).

    Attributes
    ----------
    input_kind : str
        ``"embeddings"``: called as ``loss(z, labels)``.

    Raises
    ------
    ValueError
        Negative ``margin``, unknown ``distance``, a batch that is not a multiple of 3,
        or ``distance="geometry"`` without a geometry.

    Notes
    -----
    ``forward(z, labels)`` with ``z`` (3B, V, d) in sampler order returns the mean of
    :math:`\max(0, d_{ap} - d_{an} + \alpha)` over the B triplets and V views. ``labels``
    are only checked for their length (the sampler guarantees the LCA rule).

    Examples
    --------
    >>> z = torch.tensor([[[1.0, 0.0]], [[0.8, 0.6]], [[0.6, 0.8]]])  # a, p, n
    >>> loss = TripletLoss(margin=0.3)
    >>> round(float(loss(z, torch.tensor([0, 1, 2]))), 4)  # max(0, -0.8 + 0.6 + 0.3)
    0.1
    """

    input_kind = "embeddings"

    def __init__(
        self, tree: Any = None, geometry: Any = None, *, margin: float = 0.3, distance: str = "cosine"
    ) -> None:
        super().__init__()
        self.margin = _check_real(margin, "margin", low=0.0)
        self.distance = _check_choice(distance, "distance", DISTANCES)
        if self.distance == "geometry" and geometry is None:
            raise ValueError("distance='geometry' needs a geometry (a hierviz Geometry or a name such as 'poincare')")
        self.geometry = None if geometry is None else _resolve_geometry(geometry)

    def forward(self, z: torch.Tensor, labels: Any = None) -> torch.Tensor:
        """Mean triplet hinge over triplets and views.

        Parameters
        ----------
        z : torch.Tensor, shape (3B, V, d)
            Embeddings on the manifold, rows in ``(anchor, positive, negative)`` order.
        labels : torch.Tensor, shape (3B,), optional
            Leaf indices (checked for length only).

        Returns
        -------
        torch.Tensor
            Scalar, >= 0.

        Raises
        ------
        ValueError
            ``z`` malformed or its batch not a multiple of 3.
        """
        _check_embeddings(z, self.geometry, min_views=1, who="TripletLoss")
        if z.shape[0] % 3:
            raise ValueError(
                f"TripletLoss: z has {z.shape[0]} rows, not a multiple of 3; train it with the 'tree-triplet' "
                "sampler (batches [a1, p1, n1, a2, ...])"
            )
        if labels is not None and len(labels) != z.shape[0]:
            raise ValueError(f"labels must have shape ({z.shape[0]},) to match z, got {tuple(labels.shape)}")
        d_ap, d_an = triplet_distances(z, self.geometry, self.distance)
        return torch.relu(d_ap - d_an + self.margin).mean()

    def extra_repr(self) -> str:
        return f"margin={self.margin}, distance={self.distance!r}"
