r"""Paper 05 (HyILR) as methods of ``hierviz compare``: HyILR and the five ablations of Table 4.

=====================  ==============================================================
name                   what changes (Paper 05 (HyILR) §5.4, Table 4)
=====================  ==============================================================
``hyilr``              BCE + λ·CL, Lorentz (Eqs. 11–15), hierarchy negatives
``hyilr-no-cl``        w/o CL: BCE only
``hyilr-euclidean``    CL-Euclidean (Distance): Euclidean distance of the scaled features
``hyilr-poincare``     CL-Poincaré: Poincaré ball of learnable curvature −c
``hyilr-no-hns``       w/o HNS: random negatives (2 per positive) on the Lorentz model
``hyilr-no-att``       w/o label–text att.: ``F = x ⊙ W_Lᵀ``
=====================  ==============================================================

The objective (:class:`HyILRObjective`, one term ``"hyilr"``, :class:`HyILRLoss`) reads the
encoder features ``x`` of each sample (the paper's text feature ``T_[CLS]``) and its leaf
label. The label set of a sample is its leaf and the leaf's ancestors without the root, over
the tree's non-root nodes in ``tree.nodes`` order (``c = N − 1`` labels), as in hierarchical
text classification. The loss is :func:`hierviz.losses.hyilr.hyilr_loss`: BCE of the
classifier of Eq. 9 plus λ times the contrastive loss of Eq. 15 between ``x`` and the label
features ``W_Lᵀ`` projected into the method's space (Eq. 12) with the hierarchy negatives of
Eqs. 13–14. ``W_L``, the classifier (:class:`hierviz.models.text.HyILRHead`) and the
learnable scalars ``log c``, ``log α_t``, ``log α_l`` (:class:`~hierviz.losses.hyilr.HyperbolicScales`)
are trainable modules of the objective (``Needs(modules=...)``): ``fit`` trains them with the
head's learning rate and checkpoints them.

**Inputs.** On vector and image datasets ``compare`` feeds one vector per sample (TF-IDF
through the MLP encoder on ``20news``, a CNN's features on images). Label–text attention (Eq. 8)
over a sequence of one token gives every label the weight 1, so on this path ``hyilr``'s
classifier is a linear layer on ``c`` copies of ``x``, while ``hyilr-no-att`` uses
``F = x ⊙ W_Lᵀ`` (§5.4's ablation): the two differ in the classifier, not in attention over
tokens. On a text dataset (``20news-text``, the ``hyilr-text`` encoder) the model also returns
the token features and their mask, and the classifier attends over the tokens as ``hierviz htc``
(:mod:`hierviz.methods.paper05`) does, with dropout 0.1 on ``vec(F)`` (on vectors none: compare's
vector views already drop input features), and its bias starting at the training label
log-odds (``set_label_prior``; on vectors at ``nn.Linear``'s init). Unlike ``hierviz htc``:
one view per sample (``Needs(views=1)``).

**Geometry.** The contrastive space is the method's (Table 4): Lorentz for ``hyilr``,
``hyilr-no-hns`` and ``hyilr-no-att``, the Poincaré ball or flat distances for the two
geometry ablations, the hyperbolic ones with a learnable curvature (built with
``validate=False``: no host read per step, so the objective compiles; Eq. 15 checks that the
distances are finite). The run's geometry
(``--geometries``) only sets the space the evaluation protocol embeds the encoder features in
(``embedding="features"``, as for HXE), so every row has compare's usual columns.

**Hyperparameters.** ``loss.tau`` (τ of Eq. 15; compare's shared default 0.1, the paper's
0.07 with ``--set loss.tau=0.07``) and ``loss.hyilr.lambda`` (λ of §4.3.2, default 0.3, the
paper's value for WOS). ``hyilr-no-cl`` reads neither.

**Optimiser.** Every HyILR method trains with Adam at a constant learning rate, no weight decay (Paper 05 (HyILR)
§5.1.2: "the Adam optimizer is used with the learning rate fixed"; :data:`HYILR_TRAIN`), not with
compare's shared warm-up + cosine schedule: the run core reads the override from the method's
``train`` field (:class:`~hierviz.methods.TrainOverrides`), records it in each run's ``config.json``
(``method.train``) and its ``result.json`` (``optimizer``), and the report header names it. It matters on short runs: ``hierviz htc --preset medium
--methods hyilr,hyilr-no-cl --seeds 0,1,2`` on 20news gives HyILR a Micro-F1 of 38.62 ± 0.88 with it
and 28.12 ± 3.00 under the cosine schedule (6 epochs, 2-core CPU, 2026-11-26).

Examples
--------
>>> import torch
>>> from hierviz.hierarchy import LabelTree
>>> from hierviz.methods import build_objective
>>> tree = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})
>>> obj = build_objective("hyilr", tree, "euclidean")
>>> obj.terms["hyilr"].leaf_targets.int().tolist()  # label sets over a, b, a1, a2, b1
[[1, 0, 1, 0, 0], [1, 0, 0, 1, 0], [0, 1, 0, 0, 1]]
>>> loss, terms = obj.loss_from_output({"features": torch.randn(4, 1, 6)}, torch.tensor([0, 1, 2, 0]))
>>> sorted(terms)
['bce', 'cl', 'negatives']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter

from hierviz.geometry import Euclidean, Lorentz, PoincareBall
from hierviz.losses import Objective
from hierviz.losses._validation import _check_real
from hierviz.losses.hyilr import HyperbolicScales, hyilr_loss, label_relations
from hierviz.methods.registry import Needs, TrainOverrides, register_hparam, register_method
from hierviz.models.text import HyILRHead

__all__ = ["HyILRLoss", "HyILRObjective", "HYILR_TRAIN", "HYILR_VARIANTS", "leaf_label_sets"]

_PAPER = "Paper 05 (HyILR)"

#: The training settings every HyILR method fixes (:attr:`hierviz.methods.Method.train`): Adam at a
#: constant learning rate and without weight decay, Paper 05 (HyILR) §5.1.2.
HYILR_TRAIN = TrainOverrides(optimizer="adam", schedule="constant", weight_decay=0.0)

#: Dropout on ``vec(F)`` when the classifier attends over a text encoder's tokens (:class:`hierviz.models.text.HyILRModel`'s).
TOKEN_DROPOUT = 0.1

register_hparam(
    "hyilr.lambda",
    0.3,
    "HyILR λ: weight of the contrastive loss (Paper 05 §4.3.2, >= 0; paper 0.3-0.6)",
    formerly="hyilr_lambda",
)


def leaf_label_sets(tree: Any) -> torch.Tensor:
    """The label set of each leaf: itself and its ancestors without the root.

    Parameters
    ----------
    tree : LabelTree

    Returns
    -------
    Tensor, shape (C, N − 1), bool
        Row ``y`` (a leaf index) marks the non-root nodes on the path root → leaf ``y``, columns
        in ``tree.nodes`` order without the root (the labels of
        :func:`hierviz.losses.hyilr.label_relations`).
    """
    labels = [n for n in tree.nodes if n != tree.root]
    index = {n: i for i, n in enumerate(labels)}
    out = torch.zeros(tree.num_leaves, len(labels), dtype=torch.bool)
    for y, leaf in enumerate(tree.leaves):
        for a in tree.ancestors(leaf, inclusive=True):
            if a != tree.root:
                out[y, index[a]] = True
    return out


class HyILRLoss(nn.Module):
    r"""HyILR's loss on encoder features and leaf labels: :math:`Loss_{BCE} + \lambda\,Loss_{CL}` (§4.3.2).

    Parameters
    ----------
    tree : LabelTree
    space : Geometry
        The contrastive space (:class:`~hierviz.geometry.Lorentz` for HyILR); its curvature is
        the initial ``c``, learned in log space.
    lam : float
        λ ``>= 0``; 0 is the "w/o CL" ablation (BCE only).
    tau : float
        τ ``> 0`` of Eq. 15.
    negatives : {"hierarchy", "random"}, default "hierarchy"
    attention : bool, default True
        :class:`hierviz.models.text.HyILRHead`'s ``attention``.

    Attributes
    ----------
    head : HyILRHead
        ``W_L`` and the classifier (``h`` set at the first call).
    scales : HyperbolicScales
        ``c``, ``α_t``, ``α_l``; the scales start at ``1/√h`` (§5.1) once ``h`` is known.
    leaf_targets : Tensor, shape (C, c), bool
        :func:`leaf_label_sets`.
    """

    input_kind = "features"

    def __init__(
        self,
        tree: Any,
        space: Any,
        *,
        lam: float,
        tau: float,
        negatives: str = "hierarchy",
        attention: bool = True,
    ) -> None:
        super().__init__()
        self.lam = _check_real(lam, "hyilr.lambda", low=0.0)
        self.tau = float(tau)
        if negatives not in ("hierarchy", "random"):
            raise ValueError(f"negatives must be 'hierarchy' or 'random', got {negatives!r}")
        self.negatives = negatives
        targets = leaf_label_sets(tree)
        if targets.shape[1] < 1:
            raise ValueError("tree must have at least one node below the root (HyILR's labels)")
        desc, same = label_relations(tree)
        self.register_buffer("leaf_targets", targets, persistent=False)
        self.register_buffer("desc", desc, persistent=False)
        self.register_buffer("same_level", same, persistent=False)
        # no dropout on vec(F) (HyILRModel's 0.1): compare's vector views already drop input features
        self.head = HyILRHead(targets.shape[1], attention=attention, dropout=0.0)
        self.scales = HyperbolicScales(1, geometry=space)
        self.label_prior: torch.Tensor | None = None
        self._text = False  # attach_encoder saw a text encoder

    def _targets(self, labels: torch.Tensor) -> torch.Tensor:
        """Label sets ``(B, c)`` bool of leaf labels ``(B,)``, or of leaf sets ``(B, C)`` (0/1: several
        label paths, :class:`hierviz.data.text.LabelSetDataset`): the union of their paths."""
        if labels.ndim == 2:
            return (labels.to(self.leaf_targets.device).float() @ self.leaf_targets.float()) > 0
        return self.leaf_targets[labels.long()]

    def set_label_prior(self, labels: Any) -> None:
        """The training leaf labels ``(N,)`` or leaf sets ``(N, C)``: on a text encoder's tokens the classifier bias starts at
        their label log-odds (``hierviz htc``'s init: fewer all-negative first epochs), clamped to
        frequencies in [1e-3, 1 − 1e-3]. Set at once after :meth:`attach_encoder` (``fit`` then loads a
        resumed run's own bias), else at the first call only.
        """
        self.label_prior = self._targets(torch.as_tensor(np.asarray(labels))).float().mean(0).clamp(1e-3, 1 - 1e-3)
        if self._text and not isinstance(self.head.bias, UninitializedParameter):  # attached: set it now
            with torch.no_grad():
                p = self.label_prior.to(self.head.bias)
                self.head.bias.copy_(torch.log(p / (1 - p)))

    def attach_encoder(self, encoder: nn.Module) -> None:
        """Initialise ``W_L``, ``W_c``, ``b`` right after a text encoder is built (``hierviz htc``'s order).

        On a text encoder (an ``encoder.text`` attribute, e.g. ``hyilr-text``) the head is sized
        by ``encoder.out_dim`` at once and draws its weights from the run seed right after the
        encoder's, in :class:`hierviz.models.text.HyILRModel`'s order (``W_L``, then ``W_c`` and
        ``b``), so a ``compare`` run starts from the weights ``hierviz htc``'s token model had;
        ``α_t``, ``α_l`` start at ``1/√h`` (§5.1) and :meth:`set_label_prior` sets the bias. On
        other encoders nothing happens (the head stays lazy, sized at the first call).
        """
        if not getattr(encoder, "text", False):
            return
        h = int(encoder.out_dim)
        self.head.initialize_parameters(torch.zeros(1, h))
        self.head.drop.p = TOKEN_DROPOUT
        self._text = True
        with torch.no_grad():
            self.scales.log_alpha_t.fill_(math.log(1.0 / math.sqrt(h)))
            self.scales.log_alpha_l.fill_(math.log(1.0 / math.sqrt(h)))

    def forward(
        self,
        x: torch.Tensor,
        labels: torch.Tensor,
        tokens: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Loss and its terms (``bce``, ``cl``, ``negatives``) for features ``x`` (B, h) or (B, V, h).

        ``labels``: leaf indices ``(B,)``, or leaf sets ``(B, C)`` 0/1 (documents on several label
        paths: the union of their paths). Views are read as samples (each view gets its sample's
        label set). ``tokens`` (B, s, h) or
        (B, V, s, h) and ``mask`` (B, s) or (B, V, s): a text encoder's token features, which the
        classifier attends over (Eq. 8); ``x`` is then their ``[CLS]`` token.

        Raises
        ------
        ValueError
            Missing labels, a label outside the tree's leaves, or features that are not 2-D/3-D.
        """
        if labels is None:
            raise ValueError("HyILR needs leaf labels (B,); got labels=None")
        if x.ndim == 3:
            labels = labels.repeat_interleave(x.shape[1], dim=0)
            x = x.reshape(-1, x.shape[-1])
            if tokens is not None:
                tokens, mask = tokens.reshape(-1, *tokens.shape[-2:]), mask.reshape(-1, mask.shape[-1])
        if x.ndim != 2:
            raise ValueError(f"features must have shape (B, h) or (B, V, h), got {tuple(x.shape)}")
        first = isinstance(self.head.W_L, UninitializedParameter)  # (a type check: traceable by torch.compile)
        if tokens is None:
            logits = self.head(x)
        else:  # token features (a text encoder): HyILRModel's dropout 0.1 on vec(F)
            self.head.drop.p = TOKEN_DROPOUT
            if first and self.label_prior is not None:  # htc's bias init at the training label log-odds
                self.head.initialize_parameters(x)
                with torch.no_grad():
                    p = self.label_prior.to(self.head.bias)
                    self.head.bias.copy_(torch.log(p / (1 - p)))
            logits = self.head(x, tokens.float(), mask)
        if first:  # §5.1: α_t, α_l start at 1/√h, known from the first batch
            with torch.no_grad():
                init = math.log(1.0 / math.sqrt(x.shape[-1]))
                self.scales.log_alpha_t.fill_(init)
                self.scales.log_alpha_l.fill_(init)
        targets = self._targets(labels)
        return hyilr_loss(
            logits,
            x,
            self.head.label_features(),
            targets,
            self.scales,
            (self.desc, self.same_level),
            lam=self.lam,
            tau=self.tau,
            negatives=self.negatives,
        )


class HyILRObjective(Objective):
    """An :class:`~hierviz.losses.Objective` whose one term, ``"hyilr"``, reads the encoder features.

    ``loss_from_output(out, labels)`` takes ``out["features"]`` (the text feature of the paper),
    not the projection head's ``z``; ``terms`` holds ``bce``, ``cl`` and ``negatives``
    (mean number of negatives per sample) rather than one value per term.
    """

    def forward(
        self,
        z: torch.Tensor | None,
        labels: torch.Tensor | None,
        logits: torch.Tensor | None = None,
        tokens: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``z`` here is the features ``(B, h)`` or ``(B, V, h)``; see :meth:`HyILRLoss.forward`."""
        if z is None:
            raise ValueError(f"objective {self.name!r} needs encoder features (B, h); got None")
        return self.terms["hyilr"](z, labels, tokens, mask)

    def set_label_prior(self, labels: Any) -> None:
        """See :meth:`HyILRLoss.set_label_prior` (``compare`` passes the training split's leaf labels)."""
        self.terms["hyilr"].set_label_prior(labels)

    def attach_encoder(self, encoder: nn.Module) -> None:
        """See :meth:`HyILRLoss.attach_encoder` (``compare``'s ``build_model`` calls it)."""
        self.terms["hyilr"].attach_encoder(encoder)

    def learned(self) -> dict[str, float]:
        """The learned scalars of Eq. 12 for the run record: ``c`` (curvature magnitude), ``alpha_t``, ``alpha_l``."""
        scales = self.terms["hyilr"].scales
        return {k: float(getattr(scales, k).detach()) for k in ("c", "alpha_t", "alpha_l")}

    @torch.no_grad()
    def predict_proba(self, features: torch.Tensor | Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The classifier's label probabilities ``sigmoid(ℓ)`` (Eq. 9) for encoder features.

        What :func:`hierviz.evaluation.multilabel.evaluate_classifier` thresholds (for
        the classifier's micro/macro F1 and Hi-MiF1/Hi-MaF1 in ``compare``'s table).

        Parameters
        ----------
        features : Tensor, shape (B, h), float, or the model's output dict
            The encoder features (``out["features"]``) of one view per sample; the output dict
            of a text encoder's model also gives ``tokens`` and ``mask`` (attention over tokens).

        Returns
        -------
        Tensor, shape (B, N − 1), float32 in [0, 1]
            Columns: the tree's non-root nodes in ``tree.nodes`` order.

        Raises
        ------
        ValueError
            Features not 2-D, or a classifier never called (untrained).
        """
        loss = self.terms["hyilr"]
        tokens = mask = None
        if isinstance(features, Mapping):
            tokens, mask = features.get("tokens"), features.get("mask")
            features = features["features"]
        if features.ndim != 2:
            raise ValueError(f"features must have shape (B, h), got {tuple(features.shape)}")
        if isinstance(loss.head.W_L, UninitializedParameter):
            raise ValueError(f"objective {self.name!r}: the classifier was never trained (its size is unknown)")
        was = loss.head.training
        loss.head.eval()
        try:
            if tokens is None:
                return torch.sigmoid(loss.head(features.float())).float()
            return torch.sigmoid(loss.head(features.float(), tokens.float(), mask)).float()
        finally:
            loss.head.train(was)

    def loss_from_output(
        self, out: Mapping[str, torch.Tensor | None], labels: torch.Tensor | None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        feats = out.get("features")
        if feats is None:
            raise ValueError(f"objective {self.name!r} reads the encoder features: the model output has no 'features'")
        return self(feats.float(), labels, tokens=out.get("tokens"), mask=out.get("mask"))


#: name -> (display name, contrastive space (a Geometry class, built with ``validate=False``),
#: negatives, attention, contrastive term).
HYILR_VARIANTS: dict[str, tuple[str, Callable[[], Any], str, bool, bool]] = {
    "hyilr": ("HyILR", Lorentz, "hierarchy", True, True),
    "hyilr-no-cl": ("HyILR w/o CL", Lorentz, "hierarchy", True, False),
    "hyilr-euclidean": ("HyILR CL-Euclidean (Distance)", Euclidean, "hierarchy", True, True),
    "hyilr-poincare": ("HyILR CL-Poincaré", PoincareBall, "hierarchy", True, True),
    "hyilr-no-hns": ("HyILR w/o HNS CL-Lorentz", Lorentz, "random", True, True),
    "hyilr-no-att": ("HyILR w/o Label-text att.", Lorentz, "hierarchy", False, True),
}


def _register(name: str) -> None:
    display, space, negatives, attention, contrastive = HYILR_VARIANTS[name]

    def build(tree: Any, geometry: Any, hp: dict[str, Any]) -> HyILRObjective:
        loss = HyILRLoss(
            tree,
            space(validate=False),  # no host read per step (torch.compile); Eq. 15 checks d is finite
            lam=hp["lambda"] if contrastive else 0.0,
            tau=hp["tau"] if contrastive else 0.07,
            negatives=negatives,
            attention=attention,
        )
        return HyILRObjective(name, {"hyilr": loss})

    build.__name__ = build.__qualname__ = name.replace("-", "_")
    build.__doc__ = f"{display}: see :mod:`hierviz.methods.hyilr`."
    register_method(
        name,
        display_name=display,
        hparams=("tau", "hyilr.lambda") if contrastive else (),
        needs=Needs(views=1, modules=("head", "scales")),
        embedding="features",
        paper=_PAPER,
        train=HYILR_TRAIN,
        classifier=True,
        attach_encoder=HyILRObjective.attach_encoder,
        label_prior=HyILRObjective.set_label_prior,
        learned=HyILRObjective.learned,
    )(build)


for _name in HYILR_VARIANTS:
    _register(_name)
