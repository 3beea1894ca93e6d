"""Paper 03 (Hyper-DINO) methods: HCL, the mapper on frozen features, and its cosine control.

``hcl`` trains the encoder and projection head with :class:`~hierviz.losses.HCLLoss`
(Paper 03 (Hyper-DINO) §2.3), so ``hierviz compare --methods hcl`` runs it on images like
any other method. Paper 03 itself trains only a small mapper on frozen features; in the run
core that is a vector dataset (a features ``.npz`` given by ``--data.path``, see
:func:`hierviz.features.save_features`) with the ``mapper`` encoder (Paper 03 §2.2's first
layer, ``Linear(D, 256)`` + ReLU; compare's projection head and the geometry's head follow)
and the retrieval protocol (:mod:`hierviz.evaluation.retrieval`):

* ``hyper-dino``: HCL with one view per row, evaluated by ``retrieval`` (MAP@k by the run
  geometry's distance);
* ``cosine-mapper``: the cosine control, HCL on the unit-sphere directions
  ``log_0(z)/‖log_0(z)‖`` (Euclidean chordal distance), evaluated by ``retrieval-cosine``:
  supervised metric learning on the same labels without the ball.

``hierviz retrieval`` (:mod:`hierviz.retrieval`) runs Paper 03's full grid (PCA/NCA × N ×
5 grouped folds) through ``compare`` too: :mod:`hierviz.retrieval.grid` registers each variant
as a method that builds the paper's exact mapper on its reduced features (no projection head).

Its hyperparameters live under its own namespace (paper 01's α is ``loss.hwc.alpha``):
``loss.hcl.m0`` (:math:`m_0`), ``loss.hcl.alpha`` (:math:`\\alpha`) and ``loss.hcl.lambda``
(:math:`\\lambda`), with the paper's defaults.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hierviz.geometry import get_geometry
from hierviz.losses import HCLLoss, Objective
from hierviz.methods.registry import Needs, register_hparam, register_method
from hierviz.models import register_encoder

__all__ = ["MapperEncoder", "DirectionLoss"]

_PAPER = "Paper 03 (Hyper-DINO)"

# (short name, default, doc): the keys loss.hcl.*, read by HCL and the mappers (the flat names hcl_* of hierviz 0.3)
for _name, _default, _doc in (
    ("m0", 0.5, "HCL base margin m0 of the negative hinge (Paper 03 §2.3, >= 0)"),
    ("alpha", 0.1, "HCL α: weight of the batch-mean distance in the margin m = m0 + α·d̄ (>= 0)"),
    ("lambda", 1e-3, "HCL λ: weight of the mean embedding norm ‖h‖ (>= 0)"),
):
    register_hparam(_name, _default, _doc, namespace="hcl", formerly=f"hcl_{_name}")

#: The loss.* keys HCL reads.
HCL_HPARAMS = ("hcl.m0", "hcl.alpha", "hcl.lambda")


#: HCLLoss's argument → the loss.* key it comes from (its messages name the argument).
_HCL_KEYS = {"m0": "hcl.m0", "alpha": "hcl.alpha", "lam": "hcl.lambda"}


def _hcl(geometry: Any, tree: Any, hp: dict[str, Any]) -> HCLLoss:
    try:
        return HCLLoss(geometry, m0=hp["m0"], alpha=hp["alpha"], lam=hp["lambda"], tree=tree)
    except ValueError as e:  # "alpha must be >= 0.0": name the key the user set, loss.hcl.alpha
        arg = str(e).split(" ", 1)[0]
        if arg in _HCL_KEYS:
            raise ValueError(f"loss.{_HCL_KEYS[arg]}: {e}") from None
        raise


@register_method("hcl", display_name="HCL", hparams=HCL_HPARAMS, paper=_PAPER, depth_terms=True)
def hcl(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    return Objective("hcl", {"hcl": _hcl(geometry, tree, hp)})


#: What the two mapper methods declare alike: HCL's hyperparameters, one view per row, Paper 03.
_MAPPER = {"hparams": HCL_HPARAMS, "needs": Needs(views=1), "paper": _PAPER}


@register_method("hyper-dino", display_name="Hyper-DINO (HCL mapper)", protocol="retrieval", **_MAPPER)
def hyper_dino(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    """Paper 03 §2.3–3.2: HCL on the mapped rows, one view each; MAP@k by the geometry's distance."""
    return Objective("hyper-dino", {"hcl": _hcl(geometry, tree, hp)})


class DirectionLoss(nn.Module):
    """A loss on the unit-sphere directions of the tangent vectors at the origin: ``loss(dir(log_0 z), y)``.

    ``dir(v) = v / ‖v‖``; for the Euclidean geometry ``log_0`` is the identity, so on the
    sphere this is the wrapped loss itself. The cosine control of Paper 03's mapper: it separates "hyperbolic" from
    "supervised metric learning on the same labels".

    Parameters
    ----------
    geometry : Geometry
        The run geometry (whose ``logmap0`` reads ``z``).
    loss : torch.nn.Module
        A loss on Euclidean unit vectors, e.g. ``HCLLoss(Euclidean())``.

    Examples
    --------
    >>> from hierviz.geometry import Euclidean, PoincareBall
    >>> ball = PoincareBall(1.0)
    >>> z = ball.expmap0(torch.tensor([[0.3, 0.0], [0.0, 2.0], [0.1, 0.1]]))
    >>> f = DirectionLoss(ball, HCLLoss(Euclidean()))
    >>> g = HCLLoss(Euclidean())
    >>> u = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), dim=-1)
    >>> bool(torch.isclose(f(z, torch.tensor([0, 1, 0])), g(u, torch.tensor([0, 1, 0]))))
    True
    """

    def __init__(self, geometry: Any, loss: nn.Module) -> None:
        super().__init__()
        self.geometry, self.loss = geometry, loss

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(nn.functional.normalize(self.geometry.logmap0(z), dim=-1), labels)


@register_method("cosine-mapper", display_name="Cosine mapper (control)", protocol="retrieval-cosine", **_MAPPER)
def cosine_mapper(tree: Any, geometry: Any, hp: dict[str, Any]) -> Objective:
    """The cosine control: HCL on the unit-sphere directions, ranked by cosine distance."""
    return Objective("cosine-mapper", {"hcl": DirectionLoss(geometry, _hcl(get_geometry("euclidean"), tree, hp))})


class MapperEncoder(nn.Module):
    """Paper 03 (Hyper-DINO) §2.2's first mapper layer for vector datasets: ``ReLU(W_1 x + b_1)``.

    ``Flatten -> LazyLinear(D, hidden) -> ReLU``: the input size D is read on the first call
    (as :class:`hierviz.models.MLPEncoder`). In ``hierviz compare`` the projection head
    (``hidden -> hidden_dim -> d``) and the geometry's head follow it.

    Parameters
    ----------
    hidden : int, default 256

    Examples
    --------
    >>> MapperEncoder(8)(torch.zeros(3, 5, 1, 1)).shape
    torch.Size([3, 8])
    """

    def __init__(self, hidden: int = 256) -> None:
        super().__init__()
        if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
            raise ValueError(f"hidden must be a positive integer, got {hidden!r}")
        self.net = nn.Sequential(nn.Flatten(), nn.LazyLinear(hidden), nn.ReLU())
        self.out_dim = int(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@register_encoder("mapper", inputs="vectors")
def _mapper(*, width: int = 32, small_input: bool = True, pretrained=None) -> nn.Module:
    """:class:`MapperEncoder` with ``hidden = 8 * width`` (256 at the default width 32, the paper's)."""
    if pretrained is not None:
        raise ValueError(
            "pretrained: the 'mapper' encoder infers its input size on the first batch; load weights after"
        )
    return MapperEncoder(hidden=8 * int(width))
