"""Input checks shared by every loss: one place, one wording of each error.

Every loss validates its hyperparameters, its tree, its geometry and its inputs with the
helpers here, so a user sees the same one-line message (naming the argument and what to
pass instead) whichever loss raised it. Geometry-dependent checks ask the geometry object
(``geometry.hyperbolic``, ``geometry.check_point``), never its name.
"""

from __future__ import annotations

import math
import warnings
from numbers import Real
from typing import Any

import numpy as np
import torch

from hierviz.geometry import get_geometry

__all__: list[str] = []  # private helpers; import them by name

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
#: Half-precision inputs the losses upcast to float32 before computing (:func:`_upcast`).
_HALF_DTYPES = (torch.float16, torch.bfloat16)
#: Smallest temperature accepted: float32's smallest normal number. Below it ``1/τ`` and
#: ``s/τ`` overflow float32 (a NaN loss); see :func:`_check_tau`.
TAU_MIN = float(torch.finfo(torch.float32).tiny)
#: The temperature τ of every contrastive loss and teaching figure unless given one: 0.1 (Paper 01's τ,
#: SupCon's default; ``loss.tau``). The one place it is written.
DEFAULT_TAU: float = 0.1
#: τ on hyperbolic geometries (``loss.tau_hyperbolic``): 1.0, chosen on the validation split of
#: 20 Newsgroups (docs/results/radius-20news); SupCon scores -d/τ there, so the head's radius grows with τ.
DEFAULT_TAU_HYPERBOLIC: float = 1.0


def _compiling() -> bool:
    """True while ``torch.compile`` traces the caller.

    Value checks (finiteness, label ranges, points on the manifold) read tensor values on the
    host; a compiled training step must not, so they are skipped while tracing and run in
    eager mode (every eager call and the first, eager, call of
    :class:`hierviz.losses.CompiledObjective`). Shape and dtype checks always run: they cost
    no host read and are part of the graph's guards.
    """
    return torch.compiler.is_compiling()


def _upcast(x: torch.Tensor) -> torch.Tensor:
    """float16/bfloat16 → float32 (losses compute in full precision); other dtypes unchanged."""
    return x.float() if x.dtype in _HALF_DTYPES else x


#: Default of a renamed keyword's old name: "not given" (``None`` may be a real value).
_NOT_GIVEN: Any = type("_NotGiven", (), {"__repr__": lambda self: "<not given>"})()


def _renamed_kwarg(value: Any, old_value: Any, *, new: str, old: str, who: str, default: Any) -> Any:
    """The value of keyword ``new``, or of its old name ``old`` with a DeprecationWarning.

    τ is ``tau`` in every loss (one name for one quantity): ``HMLCLoss(temperature=...)`` still works, and warns.

    Raises
    ------
    TypeError
        Both names given (``new`` not at its ``default``).
    """
    if old_value is _NOT_GIVEN:
        return value
    warnings.warn(
        f"{who}({old}=...) is now {who}({new}=...); the old name goes in 0.4", DeprecationWarning, stacklevel=3
    )
    if value is not default and value != default:
        raise TypeError(f"{who}: give {new} only, not {old} as well ({old} is its old name)")
    return old_value


def _check_tau(value: Any, name: str = "tau") -> float:
    """Return the temperature ``value`` after checking ``TAU_MIN <= value`` and finite.

    Raises
    ------
    TypeError
        Not a real number.
    ValueError
        NaN/inf, ``<= 0``, or below :data:`TAU_MIN` (≈1.18e-38, float32's smallest normal
        number: ``similarity/τ`` would overflow to inf and the loss become NaN).
    """
    v = _check_real(value, name, low=0.0, strict=True)
    if v < TAU_MIN:
        raise ValueError(
            f"{name}={v:g} is below {TAU_MIN:.3g} (float32's smallest normal number): similarity/{name} "
            f"overflows to inf and the loss is NaN; use {name} >= 1e-30 (typical values are 0.05-1)"
        )
    return v


def _check_real(
    value: Any, name: str, *, low: float | None = None, strict: bool = False, high: float | None = None
) -> float:
    """Return ``float(value)`` after checking it is a finite real number in range.

    Raises
    ------
    TypeError
        ``value`` is not a real number (bool included).
    ValueError
        ``value`` is NaN/inf, below ``low`` (or equal when ``strict``) or above ``high``.
    """
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v <= low if strict else v < low):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def _check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``; ValueError listing them otherwise."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def _resolve_geometry(geometry: Any):
    """Accept a Geometry object or a geometry name ("euclidean", "poincare", "lorentz").

    Raises
    ------
    TypeError
        ``geometry`` is None or lacks ``similarity``/``pairwise_dist``.
    """
    if isinstance(geometry, str):
        return get_geometry(geometry)
    if geometry is None:
        raise TypeError("geometry is required (a hierviz.geometry.Geometry or a name such as 'euclidean')")
    for attr in ("similarity", "pairwise_dist"):
        if not callable(getattr(geometry, attr, None)):
            raise TypeError(f"geometry must be a hierviz Geometry (missing .{attr}), got {type(geometry).__name__}")
    return geometry


def _is_hyperbolic(geometry: Any) -> bool:
    """True when the geometry declares itself hyperbolic (``geometry.hyperbolic``); never read from its name."""
    return bool(getattr(geometry, "hyperbolic", False))


def _check_on_manifold(x: torch.Tensor, geometry: Any, name: str = "z") -> None:
    """Ask a hyperbolic geometry to check that the rows of ``x`` lie on its manifold.

    Euclidean embeddings need no check beyond finiteness (any direction is valid), so only
    geometries with ``hyperbolic = True`` and a ``check_point`` method are asked.

    Raises
    ------
    ValueError
        From ``geometry.check_point``: a point off the manifold (e.g. outside the ball).
    """
    if _is_hyperbolic(geometry) and hasattr(geometry, "check_point"):
        geometry.check_point(x, name=name)


def _check_embeddings(z: Any, geometry: Any, *, min_views: int, who: str) -> tuple[torch.Tensor, int, int]:
    """Validate ``z`` (B, V, d) and return the view-major flat (V*B, d) tensor, B and V.

    Raises
    ------
    TypeError
        ``z`` is not a floating tensor/array.
    ValueError
        Wrong number of dimensions, fewer than ``min_views`` views, fewer than two
        embeddings in all, NaN/inf entries, or (hyperbolic) points off the manifold.
    """
    if not isinstance(z, torch.Tensor):
        z = torch.as_tensor(np.asarray(z))
    if not torch.is_floating_point(z):
        raise TypeError(f"z must be a floating-point tensor, got dtype {z.dtype}")
    if z.ndim != 3:
        raise ValueError(
            f"z must have shape (B, V, d) (B images, V views); got shape {tuple(z.shape)}. "
            "For one view per image use z.unsqueeze(1)."
        )
    B, V, d = z.shape
    if d < 1:
        raise ValueError(f"z has embedding dimension d=0 (shape {tuple(z.shape)}); {who} needs d >= 1")
    if V < min_views:
        raise ValueError(
            f"z has V={V} view(s) but {who} needs at least {min_views} views per image (z of shape (B, V, d))"
        )
    if B * V < 2:
        raise ValueError(f"z holds {B * V} embedding(s); {who} needs at least 2 (z of shape (B, V, d))")
    flat = z.transpose(0, 1).reshape(V * B, d)
    if not _compiling():  # value checks read the tensor on the host: eager only (no sync when compiled)
        if not bool(torch.isfinite(z).all()):
            n_bad = int((~torch.isfinite(z)).sum())
            raise ValueError(f"z contains NaN or inf ({n_bad} entries); check the encoder output")
        _check_on_manifold(flat, geometry, "z")
    return flat, B, V


def _integer_input(x: Any, name: str, required: str, what: str) -> torch.Tensor:
    """``x`` as a tensor: a tensor as it is, an integer array-like converted (no dtype or shape check on tensors).

    Raises
    ------
    TypeError
        ``x`` is None ("{name} is required{required}"), or an array-like whose dtype is not
        integer ("{name} must be {what}, got dtype ...").
    """
    if x is None:
        raise TypeError(f"{name} is required{required}")
    if not isinstance(x, torch.Tensor):
        arr = np.asarray(x)
        if arr.dtype == object or arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be {what}, got dtype {arr.dtype}")
        x = torch.as_tensor(arr)
    return x


def _check_labels(labels: Any, batch: int, num_leaves: int | None, device: torch.device) -> torch.Tensor:
    """Validate ``labels`` (B,) integer leaf indices in [0, C-1]; returns a long tensor on ``device``.

    Raises
    ------
    TypeError
        ``labels`` is None or not integer.
    ValueError
        Wrong shape, or a value outside [0, C-1] (C = the tree's number of leaves).
    """
    labels = _integer_input(labels, "labels", " (LongTensor of leaf indices, shape (B,))", "integer leaf indices")
    if labels.dtype not in _INT_DTYPES:
        raise TypeError(f"labels must hold integer leaf indices, got dtype {labels.dtype}")
    if labels.shape != (batch,):
        raise ValueError(f"labels must have shape (B,) = ({batch},) to match z, got {tuple(labels.shape)}")
    labels = labels.to(device=device, dtype=torch.long)
    if _compiling():  # the range check reads the labels on the host: eager only (no sync when compiled)
        return labels
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or (num_leaves is not None and hi >= num_leaves):
        rng = f"[0, {num_leaves - 1}] (the tree has C = {num_leaves} leaves)" if num_leaves is not None else ">= 0"
        raise ValueError(f"labels has values outside {rng}: min {lo}, max {hi}")
    return labels


def _check_logits(logits: Any, num_leaves: int) -> torch.Tensor:
    """Validate classifier ``logits`` (B, C) over the tree's C leaves; returns a tensor.

    Raises
    ------
    TypeError
        ``logits`` is None or not floating point.
    ValueError
        Wrong shape (B = 0 or C ≠ the tree's number of leaves) or NaN/inf entries.
    """
    if logits is None:
        raise TypeError("logits is required: (B, C) classifier scores over the tree's leaves")
    if not isinstance(logits, torch.Tensor):
        logits = torch.as_tensor(np.asarray(logits))
    if not torch.is_floating_point(logits):
        raise TypeError(f"logits must be a floating-point tensor, got dtype {logits.dtype}")
    if logits.ndim != 2 or logits.shape[1] != num_leaves or logits.shape[0] == 0:
        raise ValueError(
            f"logits must have shape (B, C) with C = {num_leaves} leaves and B >= 1, got {tuple(logits.shape)}"
        )
    if not _compiling() and not bool(torch.isfinite(logits).all()):
        raise ValueError(f"logits contains NaN or inf ({int((~torch.isfinite(logits)).sum())} entries)")
    return logits


def _check_tree(tree: Any, required: bool, who: str, needs: tuple[str, ...] = ("rho_matrix", "num_leaves")):
    """Return ``tree`` after checking it is a LabelTree with the attributes ``needs``; None if allowed.

    Raises
    ------
    TypeError
        ``tree`` is None while ``required``, or lacks one of ``needs``.
    """
    if tree is None:
        if required:
            raise TypeError(f"{who} needs a LabelTree (tree=None given)")
        return None
    if not all(hasattr(tree, attr) for attr in needs):
        raise TypeError(f"tree must be a hierviz LabelTree, got {type(tree).__name__}")
    return tree
