"""One validation layer for embedding matrices passed to the metrics.

Every metric that takes embeddings calls :func:`as_embeddings` (float dtype, 2-D ``(n, D)``,
``n >= 1``, ``D >= 1``, finite, on the geometry when one is given) and, for two sets used
together, :func:`same_dim` (the message names both shapes). hierviz 0.2 accepted ``D = 0``
and let shape mismatches reach torch's own messages.
"""

from __future__ import annotations

from typing import Any

import torch

from hierviz.geometry._checks import as_tensor_arg

__all__ = ["as_embeddings", "same_dim"]


def as_embeddings(z: Any, name: str, geometry: Any = None) -> torch.Tensor:
    """Validate an embedding matrix and return it as a detached floating tensor.

    Parameters
    ----------
    z : array-like or torch.Tensor, shape (n, D)
        Embeddings, float16/32/64 (integers are refused: they are labels, not points).
    name : str
        Argument name for the messages.
    geometry : Geometry, optional
        When given, ``geometry.check_point`` is called (on the manifold, e.g. inside the ball).

    Returns
    -------
    torch.Tensor, shape (n, D)
        ``z`` detached (no copy for a tensor).

    Raises
    ------
    TypeError
        Non-floating dtype.
    ValueError
        Not 2-D, ``n = 0``, ``D = 0``, NaN/inf, or off the manifold.

    Examples
    --------
    >>> import numpy as np
    >>> as_embeddings(np.zeros((3, 0)), "z")
    Traceback (most recent call last):
    ...
    ValueError: z has 0 coordinates per point (shape (3, 0)); embeddings need D >= 1
    """
    t = as_tensor_arg(z, name, "a floating-point array/tensor")
    if not t.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point array/tensor, got dtype {t.dtype}")
    if t.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n, D), got shape {tuple(t.shape)}")
    if t.shape[0] == 0:
        raise ValueError(f"{name} is empty; need at least one point")
    if t.shape[1] == 0:
        raise ValueError(f"{name} has 0 coordinates per point (shape {tuple(t.shape)}); embeddings need D >= 1")
    t = t.detach()
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} holds non-finite values (NaN or inf)")
    if geometry is not None:
        geometry.check_point(t, name=name)
    return t


def same_dim(a: torch.Tensor, a_name: str, b: torch.Tensor, b_name: str) -> None:
    """Raise ValueError naming both shapes unless ``a`` and ``b`` have the same last dimension.

    Examples
    --------
    >>> same_dim(torch.zeros(4, 3), "z_train", torch.zeros(2, 5), "z_test")
    Traceback (most recent call last):
    ...
    ValueError: z_train has shape (4, 3) and z_test has shape (2, 5): their last dimensions (3 and 5) must agree
    """
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{a_name} has shape {tuple(a.shape)} and {b_name} has shape {tuple(b.shape)}: "
            f"their last dimensions ({a.shape[-1]} and {b.shape[-1]}) must agree"
        )
