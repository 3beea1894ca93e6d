"""A training objective run through ``torch.compile(fullgraph=True)`` (``train.compile_loss``).

Every registered objective is written without host reads in its training step (no
``.item()``, boolean-mask indexing, ``nonzero`` or Python ``if`` on tensor values; value
checks run in eager mode only, see :func:`hierviz.losses._validation._compiling`), so its
forward and backward compile to one graph each. :class:`CompiledLoss` wraps an objective for
the training loop:

* the **first call runs eagerly**: it validates the inputs (finite, on the manifold, labels
  in range), materialises lazy state (``LazyLinear`` heads, LAM's prototype width, cached
  tables) and fixes the shapes;
* later calls run the compiled function (``fullgraph=True``, ``dynamic=False`` by default:
  one graph per batch shape, so a shorter last batch compiles once more);
* if compiling fails (an objective registered by a user with a graph break, a backend
  error), it warns once naming the reason and stays eager: training never stops for it.

The wrapper holds the objective by reference: its ``state_dict``, buffers (LAM prototypes,
leaf counts) and parameters are the objective's own, so checkpoints do not change.

Examples
--------
>>> import torch
>>> from hierviz.hierarchy import LabelTree
>>> from hierviz.methods import build_objective
>>> tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
>>> obj = build_objective("supcon", tree, "euclidean")
>>> loss_fn = CompiledLoss(obj, backend="eager")  # "eager": trace only (fast); default "inductor"
>>> z = torch.nn.functional.normalize(torch.randn(6, 2, 4), dim=-1)
>>> y = torch.tensor([0, 0, 1, 1, 2, 2])
>>> a, _ = loss_fn({"z": z}, y)  # first call: eager
>>> b, _ = loss_fn({"z": z}, y)  # compiled
>>> torch.allclose(a, b)
True
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

__all__ = ["CompiledLoss", "objective_loss", "DEFAULT_BACKEND"]

#: ``torch.compile`` backend of :class:`CompiledLoss` when none is given (tests may set
#: ``"aot_eager"``: the same graphs, no code generation).
DEFAULT_BACKEND = "inductor"


def objective_loss(objective: nn.Module, out: Mapping[str, Any], labels: torch.Tensor | None) -> tuple[Any, Any]:
    """``objective.loss_from_output(out, labels)``, or ``objective(z, labels)`` for a bare loss module.

    Parameters
    ----------
    objective : nn.Module
        A :class:`hierviz.losses.Objective` (or any module with ``loss_from_output``), or a
        loss called as ``module(z, labels)``.
    out : mapping
        Model outputs: ``"z"`` (B, V, d) and optionally ``"logits"``.
    labels : LongTensor (B,) or None

    Returns
    -------
    loss, terms
        ``terms`` is ``{}`` for a bare loss module.
    """
    if hasattr(objective, "loss_from_output"):
        return objective.loss_from_output(out, labels)
    z = out["z"]
    return objective(z.float() if z.dtype in (torch.float16, torch.bfloat16) else z, labels), {}


class CompiledLoss:
    """Call an objective through ``torch.compile(fullgraph=True)`` after one eager call.

    Parameters
    ----------
    objective : nn.Module
        The training objective (see :func:`objective_loss` for how it is called).
    backend : str, optional
        ``torch.compile`` backend (default :data:`DEFAULT_BACKEND`, ``"inductor"``) (``"eager"``/``"aot_eager"`` trace without code generation).
    dynamic : bool, default False
        ``torch.compile``'s ``dynamic``: False specialises on the batch shape (static shapes).
    mode : str or None, default None
        ``torch.compile``'s ``mode`` (e.g. ``"max-autotune-no-cudagraphs"``).
    fallback : bool, default True
        On a compile error warn once and run eagerly from then on; ``False`` re-raises (tests).

    Attributes
    ----------
    calls : int
        Calls so far.
    compiled : bool
        False once the wrapper fell back to eager mode.
    """

    def __init__(
        self,
        objective: nn.Module,
        *,
        backend: str | None = None,
        dynamic: bool = False,
        mode: str | None = None,
        fallback: bool = True,
    ) -> None:
        self.objective = objective
        self.calls = 0
        self.compiled = True
        self.fallback = bool(fallback)
        kw: dict[str, Any] = {"fullgraph": True, "dynamic": bool(dynamic), "backend": backend or DEFAULT_BACKEND}
        if mode is not None:
            kw["mode"] = mode
        self._fn = torch.compile(self._step, **kw)

    def _step(self, z: Any, logits: Any, labels: Any, features: Any = None) -> tuple[Any, Any]:
        out = {"z": z} if logits is None else {"z": z, "logits": logits}
        if features is not None:  # objectives on the encoder features (HyILR, hierviz.methods.hyilr)
            out["features"] = features
        return objective_loss(self.objective, out, labels)

    def __call__(self, out: Mapping[str, Any], labels: torch.Tensor | None) -> tuple[Any, Any]:
        """``(loss, terms)`` of one batch; ``out`` holds ``"z"``, for logit objectives ``"logits"``, and ``"features"``."""
        self.calls += 1
        z, logits, features = out.get("z"), out.get("logits"), out.get("features")
        if self.calls == 1 or not self.compiled:
            return self._step(z, logits, labels, features)
        try:
            return self._fn(z, logits, labels, features)
        except Exception as err:  # noqa: BLE001 - any compile failure: keep training, eagerly
            if not self.fallback or not _is_compile_error(err):
                raise
            self.compiled = False
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            warnings.warn(
                f"train.compile_loss: compiling the objective failed ({type(err).__name__}: {first}); "
                "running it eagerly",
                RuntimeWarning,
                stacklevel=2,
            )
            return self._step(z, logits, labels, features)


def _is_compile_error(err: BaseException) -> bool:
    """True for errors raised by dynamo/inductor themselves (not a ValueError of a loss's checks)."""
    mod = type(err).__module__ or ""
    return mod.startswith(("torch._dynamo", "torch._inductor", "torch.fx", "torch._subclasses"))
