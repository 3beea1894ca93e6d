"""SimCLR / NT-Xent (Chen et al. 2020): self-supervised, view positives only, no labels.

The views layout, the similarity and the reductions are described in
:mod:`hierviz.losses._core`.
"""

from __future__ import annotations

from typing import Any

import torch

from ._core import _PairwiseContrastive
from ._validation import DEFAULT_TAU

__all__ = ["SimCLRLoss"]


class SimCLRLoss(_PairwiseContrastive):
    """SimCLR / NT-Xent: self-supervised; the other views of the same image are the only positives (Chen et al. 2020).

    ``P(i)`` = the other V − 1 views of the same image; every other embedding is a
    negative, whatever its label. Equivalent to :class:`SupConLoss` with the image index
    as the label (Khosla et al.'s "unsupervised" mode). With V = 2 it equals
    ``pytorch_metric_learning.losses.NTXentLoss`` with the image index as label; for V > 2
    NTXentLoss leaves the other positives out of each denominator, we keep them in (as
    Khosla et al.). Both reductions coincide here (every anchor has V − 1 positives).

    Parameters
    ----------
    tree : LabelTree or None
        Unused (accepted so that every loss is built the same way).
    geometry : Geometry or str
        Supplies the similarity.
    tau : float, > 0, default 0.1
        Temperature τ.
    similarity : None, "geometry", "cosine", "neg_dist" or callable
        Override of the similarity.

    Raises
    ------
    ValueError
        ``tau`` ≤ 0; V < 2 ("a single view where the loss needs two"); NaN/inf in ``z``.

    Notes
    -----
    Calling convention: ``loss(z, labels=None)``; ``z`` (B, V, d), V ≥ 2; ``labels`` are ignored (checked when
    given) → scalar tensor ≥ 0.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import get_geometry
    >>> from hierviz.losses import SimCLRLoss
    >>> geometry = get_geometry("euclidean")
    >>> z = torch.nn.functional.normalize(torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> loss = SimCLRLoss(None, geometry, tau=0.5)  # no tree: SimCLR ignores labels
    >>> round(loss(z).item(), 3)
    2.063
    """

    _min_views = 2
    _needs_labels = False

    def __init__(self, tree: Any, geometry: Any, *, tau: float = DEFAULT_TAU, similarity: Any = None):
        super().__init__(tree, geometry, tau=tau, reduction="pairs", similarity=similarity)

    def _logits_and_weights(self, sim, lab, B, V):
        eye_b = torch.eye(B, dtype=torch.bool, device=sim.device)
        return sim / self.tau, self._off_diagonal(self._tile(eye_b, V)).to(sim.dtype)
