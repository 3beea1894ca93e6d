"""Transcriptions of upstream reference code, kept to show what hierviz's losses fix.

:func:`supcon_reference_per_anchor` is the per-anchor ``L_out`` of the original SupContrast code
(Khosla et al. 2020, ``HobbitLong/SupContrast`` ``losses.py``) **before** the fix of its PR #142:
an anchor without a positive divides 0 by 0 and returns NaN (HobbitLong/SupContrast#141).
Notebook 02 §3 runs it beside :class:`hierviz.losses.SupConLoss`, which leaves such an anchor out.
Do not train with it.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["supcon_reference_per_anchor"]


def supcon_reference_per_anchor(z: Tensor, labels: Tensor, tau: float) -> Tensor:
    """Per-anchor SupCon ``L_out`` as the original SupContrast code computed it (before PR #142).

    For view-major anchor ``i`` with positives ``P(i)`` (same label, ``k != i``),
    ``ℓ_i = −(1/|P(i)|) Σ_{j∈P(i)} log( exp(s_ij) / Σ_{k≠i} exp(s_ik) )``, ``s = z·zᵀ/τ``
    (Khosla et al. 2020, Eq. 2), with no guard for ``|P(i)| = 0``.

    Parameters
    ----------
    z : Tensor, shape (B, V, d)
        ``V`` views of ``B`` images, L2-normalised.
    labels : Tensor, shape (B,), int
    tau : float, > 0
        Temperature.

    Returns
    -------
    Tensor, shape (B·V,)
        One loss per anchor in view-major order (row ``v·B + b`` is view ``v`` of image ``b``);
        **NaN** for an anchor without a positive (0/0), which is the bug this function documents.

    Raises
    ------
    ValueError
        ``z`` not 3-D, ``labels`` not of length ``B``, or ``tau <= 0``.

    Examples
    --------
    One view per image, labels [0, 1, 1, 3]: the two singletons have no positive.

    >>> import torch.nn.functional as F
    >>> z = F.normalize(torch.randn(4, 1, 3, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> supcon_reference_per_anchor(z, torch.tensor([0, 1, 1, 3]), 0.1).isnan().tolist()
    [True, False, False, True]
    """
    if z.dim() != 3:
        raise ValueError(f"z must have shape (B, V, d), got {tuple(z.shape)}")
    if labels.shape != (z.shape[0],):
        raise ValueError(f"labels must have shape ({z.shape[0]},), got {tuple(labels.shape)}")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau!r}")
    flat = torch.cat(torch.unbind(z, dim=1))
    lab = labels.repeat(z.shape[1])
    logits = flat @ flat.T / tau
    self_mask = torch.eye(len(flat), dtype=torch.bool, device=flat.device)
    pos = ((lab[:, None] == lab[None, :]) & ~self_mask).to(flat.dtype)
    log_prob = logits - torch.logsumexp(logits.masked_fill(self_mask, float("-inf")), dim=1, keepdim=True)
    return -(pos * log_prob).sum(1) / pos.sum(1)  # 0 / 0 for an anchor without positives
