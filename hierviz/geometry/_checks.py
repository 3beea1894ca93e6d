"""Shared input checks and the full-precision guard of :mod:`hierviz.geometry`.

:func:`as_float_tensor` (tensor/array → float32/float64 tensor), :func:`check_curvature`
(``c > 0``, finite), :func:`full_precision` (autocast off), and the private ``_check_*``
validators of indices, weights, steps and EMA rates used by the means (``frechet.py``).
Re-exported by ``hierviz.geometry.base`` (their 0.1 home).
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch

Tensor = torch.Tensor
F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["DEFAULT_CURVATURE", "as_float_tensor", "check_curvature", "full_precision"]


@contextlib.contextmanager
def full_precision():
    """Switch autocast off (CPU and CUDA) inside the block.

    Hyperbolic distances lose all accuracy in float16/bfloat16 (``1 - c‖x‖²`` and the
    Gram-matrix cancellation), so every geometry method runs under this context.
    """
    with contextlib.ExitStack() as stack:
        for dev in ("cpu", "cuda"):
            try:
                enabled = torch.is_autocast_enabled(dev)
            except (TypeError, RuntimeError):  # pragma: no cover - older torch
                enabled = False
            if enabled:
                stack.enter_context(torch.autocast(device_type=dev, enabled=False))
        yield


def _fp32(fn: F) -> F:
    """Decorator: run ``fn`` with autocast disabled (see :func:`full_precision`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with full_precision():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def as_tensor_arg(x: Any, name: str, what: str) -> Tensor:
    """``x`` itself if a tensor, else ``torch.as_tensor(np.asarray(x))`` (dtype and shape unchecked).

    Raises
    ------
    TypeError
        ``x`` cannot be converted; the message reads "{name} must be {what}, got <type>".
    """
    if isinstance(x, Tensor):
        return x
    try:
        return torch.as_tensor(np.asarray(x))
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be {what}, got {type(x).__name__}") from err


def as_float_tensor(x: Any, name: str = "x") -> Tensor:
    """Convert ``x`` to a floating tensor of at least float32 precision.

    Parameters
    ----------
    x : torch.Tensor, numpy.ndarray, sequence or number
        Input values.
    name : str
        Argument name used in error messages.

    Returns
    -------
    torch.Tensor
        ``x`` as a tensor (no copy when already float32/float64); float16/bfloat16 are
        upcast to float32, integer/bool to the default dtype. Autograd history is kept.

    Raises
    ------
    TypeError
        If ``x`` is not numeric (strings, objects) or is complex.
    """
    t = as_tensor_arg(x, name, "a torch.Tensor or numeric array")
    if t.is_complex():
        raise TypeError(f"{name} must be real-valued, got complex dtype {t.dtype}")
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    elif not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    return t


#: Smallest and largest curvature magnitude accepted (measured: geoopt's Poincaré ball returns
#: NaN or 0 for c >= 710 and is 20-80 % off for c <= 1e-8; both models agree with closed forms
#: to 1e-8 relative in float32 across this range).
C_MIN, C_MAX = 1e-7, 500.0
#: The curvature magnitude ``c`` every hyperbolic geometry, map and figure uses unless given one:
#: 1.0, sectional curvature -1 (Paper 01's κ = -1, the unit Poincaré ball). The one place it is written.
DEFAULT_CURVATURE: float = 1.0


def check_curvature(value: Any, name: str = "c") -> float:
    """Validate a curvature magnitude and return it as a Python float.

    Parameters
    ----------
    value : float
        Curvature magnitude; the space has sectional curvature ``-value``.
    name : str
        Argument name for the error message.

    Returns
    -------
    float
        ``float(value)``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is not finite, ``value <= 0``, or outside ``[C_MIN, C_MAX]`` =
        ``[1e-7, 500]``, where geoopt's maps are wrong.
    """
    value = _real_scalar(value, name)
    if not np.isfinite(value) or value <= 0.0:
        raise ValueError(
            f"{name} must be a finite number > 0 (we store {name} > 0 for sectional "
            f"curvature -{name}); got {name}={value!r}"
        )
    if not C_MIN <= value <= C_MAX:
        raise ValueError(
            f"{name}={value:g} is outside the curvature range hierviz computes correctly, "
            f"[{C_MIN:g}, {C_MAX:g}] (geoopt's ball overflows from c ≈ 710 and goes flat below c ≈ 1e-8); "
            f"rescale the embedding instead: curvature -c at radius r is curvature -1 at radius r·sqrt(c)"
        )
    return value


def _real_scalar(value: Any, name: str) -> float:
    """``float(value)`` for a real number or a one-element tensor; ``TypeError`` otherwise (bools too)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise TypeError(f"{name} must be a scalar, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def scalar(v: Any) -> float:
    """``float(v)``; a tensor is detached first (a learnable curvature carries gradient)."""
    return float(v.detach()) if isinstance(v, Tensor) else float(v)


def _check_finite(x: Tensor, name: str) -> None:
    if torch.compiler.is_compiling():  # a host read: eager only, never in a compiled step
        return
    with torch.no_grad():
        x = x.detach()
        if x.numel() == 0 or math.isfinite(float(x.sum())):  # fast path: NaN/inf propagate into the sum
            return
        bad = ~torch.isfinite(x)
        if bool(bad.any()):
            raise ValueError(f"{name} contains {int(bad.sum())} non-finite value(s) (NaN or inf)")


def _check_index(index: Any, n: int, num_groups: int, device: torch.device, name: str = "index") -> Tensor:
    idx = as_tensor_arg(index, name, "an integer tensor/array")
    if idx.is_floating_point() or idx.is_complex() or idx.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer group ids, got dtype {idx.dtype}")
    if idx.dim() != 1 or idx.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) to match x, got {tuple(idx.shape)}")
    idx = idx.to(device=device, dtype=torch.long)
    if n > 0 and not torch.compiler.is_compiling():  # range check reads values: eager only (no sync when compiled)
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= num_groups:
            raise ValueError(
                f"{name} values must lie in [0, {num_groups - 1}] (num_groups={num_groups}); got min {lo}, max {hi}"
            )
    return idx


def _check_num_groups(num_groups: Any) -> int:
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral):
        raise TypeError(f"num_groups must be an int, got {type(num_groups).__name__}")
    if num_groups < 1:
        raise ValueError(f"num_groups must be >= 1, got {num_groups}")
    return int(num_groups)


def _check_steps(steps: Any, name: str = "steps") -> int:
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise ValueError(f"{name} must be >= 0, got {steps}")
    return int(steps)


def _check_weights(weights: Any, n: int, like: Tensor) -> Tensor:
    if weights is None:
        return torch.ones(n, dtype=like.dtype, device=like.device)
    w = as_float_tensor(weights, "weights").to(device=like.device, dtype=like.dtype)
    if w.dim() != 1 or w.shape[0] != n:
        raise ValueError(f"weights must have shape ({n},) to match x, got {tuple(w.shape)}")
    _check_finite(w, "weights")
    if bool((w.detach() < 0).any()):
        raise ValueError("weights must be >= 0; got negative entries")
    return w


def _check_eta(eta: Any) -> float:
    eta = _real_scalar(eta, "eta")
    if not (0.0 <= eta <= 1.0):
        raise ValueError(f"eta (EMA rate) must lie in [0, 1], got {eta}")
    return eta


def _segment_sum(values: Tensor, index: Tensor, num_groups: int) -> Tensor:
    """Sum rows of ``values`` (n, D) into ``num_groups`` rows by ``index`` (n,) — no Python loop."""
    out = values.new_zeros((num_groups,) + tuple(values.shape[1:]))
    return out.index_add(0, index, values)
