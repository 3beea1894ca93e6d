"""The embedding model: encoder + projection head + manifold map (+ optional classifier)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from hierviz.models.encoders import build_encoder
from hierviz.models.heads import CURVATURE_RANGE, ProjectionHead, manifold_head

__all__ = ["EmbeddingModel", "build_model"]


class EmbeddingModel(nn.Module):
    """Encoder + projection head + map onto the manifold (+ optional linear classifier).

    ``features = encoder(x)``, ``z = to_manifold(head(features))``, and, when
    ``num_classes`` is given, ``logits = classifier(features)`` - the classifier trained
    end to end by the HXE baseline (paper 01 §4.3).  For HXE the representation that is
    evaluated is the penultimate one, i.e. the encoder features mapped into the run's
    geometry (:meth:`embed` with ``use="features"``), so all methods are compared in the
    same ambient geometry.

    Parameters
    ----------
    encoder : torch.nn.Module
        Maps ``(B, 3, H, W)`` to ``(B, F)``; must expose ``out_dim`` (= F).
    head : torch.nn.Module
        Maps ``(B, F)`` to ``(B, d)`` (e.g. :class:`ProjectionHead`).
    geometry : hierviz.geometry.Geometry
        Euclidean (unit sphere), Poincaré ball or Lorentz hyperboloid.
    num_classes : int, optional
        Add ``nn.Linear(F, num_classes)`` on the encoder features.
    clip_r : float or None, default 3.0
        Radius bound ``ρ`` of the :class:`HyperbolicHead` (smooth unless ``head_bound="clip"``).
    scale_init : float or "auto", default "auto"
        Initial feature scale of the hyperbolic head; "auto": from the first training batch.
    learn_scale : bool, default True
        Learn the hyperbolic head's feature scale (a log-parameterised scalar).
    head_bound : {"tanh", "clip"}, default "tanh"
        The smooth bound, or the hard clip of hierviz 0.2.
    init_radius : float, default 1.0
        Geodesic radius of the median training sample after ``scale_init="auto"``.
    curvature_range : (float, float), default (0.1, 10.0)
        Clamp of a learnable curvature.
    head_center : {None, "batch"}, default None
        Centring of the hyperbolic head (:class:`HyperbolicHead` ``center``).

    Raises
    ------
    ValueError
        If the encoder has no positive integer ``out_dim``, ``num_classes < 1`` or the
        geometry is unknown.
    """

    def __init__(
        self,
        encoder: nn.Module,
        head: nn.Module,
        geometry,
        num_classes: int | None = None,
        clip_r: float | None = 3.0,
        *,
        scale_init: float | str = "auto",
        learn_scale: bool = True,
        head_bound: str = "tanh",
        init_radius: float = 1.0,
        curvature_range: tuple[float, float] = CURVATURE_RANGE,
        head_center: str | None = None,
    ) -> None:
        super().__init__()
        out_dim = getattr(encoder, "out_dim", None)
        if not isinstance(out_dim, int) or out_dim < 1:
            raise ValueError(f"encoder must have a positive integer attribute out_dim, got {out_dim!r}")
        if num_classes is not None and (
            isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1
        ):
            raise ValueError(f"num_classes must be a positive integer or None, got {num_classes!r}")
        self.encoder = encoder
        self.head = head
        self.geometry = geometry
        bound = {"bound": head_bound, "c_range": tuple(curvature_range)}
        self.to_manifold = manifold_head(
            geometry,
            clip_r=clip_r,
            scale_init=scale_init,
            learn_scale=learn_scale,
            init_radius=init_radius,
            center=head_center,
            dim=getattr(head, "out_dim", None),
            **bound,
        )
        # The encoder features of the logits methods (HXE) are mapped with a fixed scale 1/sqrt(F):
        # nothing trains a scale there, and unscaled ReLU features would all land at the bound.
        self.features_to_manifold = manifold_head(
            geometry, clip_r=clip_r, scale_init=out_dim**-0.5, learn_scale=False, **bound
        )
        self.classifier = nn.Linear(out_dim, num_classes) if num_classes is not None else None
        self.feature_dim = out_dim
        self.num_classes = num_classes

    def backbone_parameters(self) -> list[nn.Parameter]:
        """Encoder parameters (the "backbone" LR group of paper 01 §4.2)."""
        return list(self.encoder.parameters())

    def head_parameters(self) -> list[nn.Parameter]:
        """Projection head (+ its manifold map's feature scale) and classifier parameters.

        The 10x LR group of paper 01 §4.2.
        """
        params = list(self.head.parameters()) + list(self.to_manifold.parameters())
        if self.classifier is not None:
            params += list(self.classifier.parameters())
        return params

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor | None]:
        """Run the model on one or several views.

        Parameters
        ----------
        x : torch.Tensor, shape (B, 3, H, W) or (B, V, 3, H, W), float
            Images, or V views per image (views are flattened into the batch so BatchNorm
            sees all ``B*V`` samples, then reshaped back).

        Returns
        -------
        dict
            ``features``: (B, F) or (B, V, F) encoder features;
            ``z``: (B, d) or (B, V, d) manifold points, float32 (Lorentz: d+1 coordinates);
            ``logits``: (B, C) or (B, V, C) when ``num_classes`` was given, else ``None``;
            with a text encoder (it returns token features and a mask, e.g. ``"hyilr-text"``)
            also ``tokens`` (B, s, F) or (B, V, s, F) and ``mask`` (B, s) or (B, V, s) bool,
            and ``features`` is the ``[CLS]`` token.

        Raises
        ------
        ValueError
            If ``x`` is not 4-D or 5-D.
        """
        if x.dim() not in (4, 5):
            raise ValueError(f"x must have shape (B, 3, H, W) or (B, V, 3, H, W), got {tuple(x.shape)}")
        lead = x.shape[:-3]
        flat = x.reshape(-1, *x.shape[-3:])
        feats = self.encoder(flat)
        tokens = None
        if isinstance(feats, tuple):  # a text encoder: token features (N, s, F) and mask; features = [CLS]
            tokens, mask = feats
            feats = tokens[:, 0]
        z = self.to_manifold(self.head(feats))
        logits = self.classifier(feats) if self.classifier is not None else None
        out = {
            "features": feats.reshape(*lead, feats.shape[-1]),
            "z": z.reshape(*lead, z.shape[-1]),
            "logits": None if logits is None else logits.reshape(*lead, logits.shape[-1]),
        }
        if tokens is not None:  # what label-text attention reads (hierviz.methods.hyilr)
            out["tokens"] = tokens.reshape(*lead, *tokens.shape[-2:])
            out["mask"] = mask.reshape(*lead, mask.shape[-1])
        return out

    @torch.no_grad()
    def embed(self, x: torch.Tensor, use: str = "z") -> torch.Tensor:
        """Manifold embeddings for evaluation (no gradient; call ``model.eval()`` first).

        Parameters
        ----------
        x : torch.Tensor, shape (B, 3, H, W)
        use : {"z", "features"}
            ``"z"``: the projection-head output (contrastive methods); ``"features"``: the
            encoder (penultimate) features mapped into the geometry (HXE, paper 01 §4.3)
            with a fixed feature scale ``1/sqrt(F)`` and the same clip radius.

        Returns
        -------
        torch.Tensor, shape (B, d) or (B, F) (+1 coordinate for Lorentz), float32.

        Raises
        ------
        ValueError
            If ``use`` is not "z" or "features".
        """
        if use not in ("z", "features"):
            raise ValueError(f"use must be 'z' or 'features', got {use!r}")
        out = self.forward(x)
        if use == "z":
            return out["z"]
        return self.features_to_manifold(out["features"])


def build_model(
    encoder: str,
    geometry,
    *,
    embed_dim: int = 128,
    hidden_dim: int | None = None,
    num_classes: int | None = None,
    width: int = 32,
    small_input: bool = True,
    pretrained: str | Path | None = None,
    clip_r: float | None = 3.0,
    scale_init: float | str = "auto",
    learn_scale: bool = True,
    head_bound: str = "tanh",
    init_radius: float = 1.0,
    curvature_range: tuple[float, float] = CURVATURE_RANGE,
    head_center: str | None = None,
    on_encoder: Callable[[nn.Module], None] | None = None,
) -> EmbeddingModel:
    """Build the paper 01 §4.2 model: encoder -> MLP head (F -> F -> d) -> manifold.

    Parameters
    ----------
    encoder : {"small_cnn", "resnet18", "resnet50"}
    geometry : hierviz.geometry.Geometry
    embed_dim : int, default 128
        ``d`` (paper: 256; smaller for CPU runs).
    hidden_dim : int, optional
        Hidden width of the head; default = encoder feature size (paper: 2048 -> 2048 -> d).
    num_classes : int, optional
        Adds the HXE linear classifier.
    width, small_input, pretrained
        Passed to :func:`build_encoder`.
    clip_r : float or None, default 3.0
        Radius bound of the hyperbolic head (:class:`HyperbolicHead`).
    scale_init : float or "auto", default "auto"
        Initial feature scale of the hyperbolic head ("auto": from the first training batch).
    learn_scale : bool, default True
        Learn that scale.
    head_bound, init_radius, curvature_range, head_center
        See :class:`HyperbolicHead` (``bound``, ``init_radius``, ``c_range``, ``center``).
    on_encoder : callable, optional
        Called with the encoder right after it is built, before the head draws its weights
        (an objective whose own modules are sized by the encoder initialises them there:
        :meth:`hierviz.methods.hyilr.HyILRObjective.attach_encoder`).

    Returns
    -------
    EmbeddingModel

    Raises
    ------
    ValueError
        Unknown encoder / geometry, or non-positive sizes.
    """
    enc = build_encoder(encoder, width=width, small_input=small_input, pretrained=pretrained)
    if on_encoder is not None:
        on_encoder(enc)
    head = ProjectionHead(enc.out_dim, hidden_dim or enc.out_dim, embed_dim)
    return EmbeddingModel(
        enc,
        head,
        geometry,
        num_classes=num_classes,
        clip_r=clip_r,
        scale_init=scale_init,
        learn_scale=learn_scale,
        head_bound=head_bound,
        init_radius=init_radius,
        curvature_range=curvature_range,
        head_center=head_center,
    )
