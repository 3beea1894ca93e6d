"""Encoders, projection heads and the map onto the embedding manifold.

The pipeline of paper 01 §3 / §4.2 is ``image -> encoder f -> projection head g -> z``;
``z`` lives on the unit sphere (Euclidean mode, cosine geometry) or in a hyperbolic space
(Poincaré ball or Lorentz hyperboloid).  Encoder and head parameters stay Euclidean, so
any optimiser works unchanged; only the last map is geometric (paper 01 §3.4, "Encoder
parameters remain Euclidean").

Building blocks
---------------
* :class:`SmallCNN` - a four-block CNN for CPU runs and tests.
* :func:`resnet_encoder` - torchvision ResNet-18/50 with the classifier removed and,
  for small images (28-64 px), a 3x3 stride-1 stem without max-pool (the CIFAR
  adaptation of He et al. 2016, §4.2).
* :class:`ProjectionHead` - the two-layer MLP with BatchNorm and ReLU of paper 01 §4.2.
* :class:`HyperbolicHead` - feature clipping (Guo et al., CVPR 2022, "Clipped hyperbolic
  classifiers are super-hyperbolic classifiers") followed by ``expmap0`` and projection
  (paper 03 §2.2, the "Hyperbolic Mapper"), always computed in float32/float64.
* :class:`EmbeddingModel` - ties them together and returns
  ``dict(features=..., z=..., logits=...)``.

Pretrained weights are never downloaded: pass a local ``state_dict`` file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "ENCODERS",
    "SmallCNN",
    "resnet_encoder",
    "build_encoder",
    "ProjectionHead",
    "L2Normalize",
    "HyperbolicHead",
    "manifold_head",
    "EmbeddingModel",
    "build_model",
]

#: Encoder names accepted by :func:`build_encoder` (and the CLI's ``--encoder``).
ENCODERS = ("small_cnn", "resnet18", "resnet50")

_RESNET_DIMS = {"resnet18": 512, "resnet50": 2048}


def _float_dtype(x: torch.Tensor) -> torch.dtype:
    """float64 stays float64; every other dtype (float16, bfloat16, float32) becomes float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


class SmallCNN(nn.Module):
    """A small four-block CNN encoder for CPU runs, tests and teaching.

    Each block is ``Conv3x3 -> BatchNorm -> ReLU`` followed by 2x2 max-pooling (the last
    block uses global average pooling instead), with channel widths
    ``width, 2*width, 4*width, 8*width``.  Works for any input size >= 8 px.

    Parameters
    ----------
    width : int, default 32
        Channels of the first block (>= 1).  ``out_dim = 8 * width``.
    in_channels : int, default 3
        Image channels (>= 1).

    Attributes
    ----------
    out_dim : int
        Size of the feature vector returned by :meth:`forward`.

    Raises
    ------
    ValueError
        If ``width`` or ``in_channels`` is not a positive integer.

    Examples
    --------
    >>> enc = SmallCNN(width=8)
    >>> enc(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 64])
    """

    def __init__(self, width: int = 32, in_channels: int = 3) -> None:
        super().__init__()
        for name, value in (("width", width), ("in_channels", in_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        chans = [in_channels, width, 2 * width, 4 * width, 8 * width]
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [
                nn.Conv2d(chans[i], chans[i + 1], kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(chans[i + 1]),
                nn.ReLU(inplace=True),
            ]
            if i < 3:
                layers.append(nn.MaxPool2d(2))
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.net = nn.Sequential(*layers)
        self.width = width
        self.out_dim = 8 * width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Encode images.

        Parameters
        ----------
        x : torch.Tensor, shape (B, in_channels, H, W), float
            Normalised images, ``H, W >= 8``.

        Returns
        -------
        torch.Tensor, shape (B, out_dim)
            Pooled features.
        """
        return self.net(x)


def _load_state_dict_file(module: nn.Module, path: Union[str, Path]) -> None:
    """Load a local state_dict into ``module``, skipping tensors whose shapes differ."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"pretrained: weights file {str(path)!r} does not exist (hierviz never downloads weights; "
            "pass a local torch state_dict file)"
        )
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise TypeError(f"pretrained: {str(path)!r} does not hold a state_dict (got {type(state).__name__})")
    own = module.state_dict()
    usable = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    if not usable:
        raise ValueError(
            f"pretrained: no tensor in {str(path)!r} matches the encoder's parameter names and shapes "
            f"(file keys e.g. {list(state)[:3]}, model keys e.g. {list(own)[:3]})"
        )
    module.load_state_dict(usable, strict=False)


def resnet_encoder(
    name: str = "resnet18",
    small_input: bool = True,
    pretrained: Optional[Union[str, Path]] = None,
) -> nn.Module:
    """A torchvision ResNet trunk returning pooled features (classifier removed).

    Parameters
    ----------
    name : {"resnet18", "resnet50"}
        Architecture (He et al., CVPR 2016); feature size 512 or 2048.  Paper 01 §4.2
        uses ResNet-50.
    small_input : bool, default True
        Replace the 7x7 stride-2 stem and the max-pool by a 3x3 stride-1 convolution and
        no pooling, so 32-64 px images keep spatial resolution (CIFAR variant, He et al.
        §4.2).  Use ``False`` for 224 px images.
    pretrained : str or Path, optional
        A local file holding a ``state_dict`` (e.g. torchvision ImageNet weights saved with
        ``torch.save(model.state_dict(), path)``).  Tensors whose name and shape match are
        loaded; the rest (``fc.*``, and ``conv1.weight`` when ``small_input``) keep their
        random initialisation.  Nothing is ever downloaded.

    Returns
    -------
    torch.nn.Module
        Maps ``(B, 3, H, W)`` float images to ``(B, out_dim)`` features; has attribute
        ``out_dim`` (512 or 2048).

    Raises
    ------
    ValueError
        If ``name`` is unknown (the message lists the valid names) or no tensor of the
        ``pretrained`` file matches.
    FileNotFoundError
        If ``pretrained`` does not exist.
    """
    import torchvision

    if name not in _RESNET_DIMS:
        raise ValueError(f"name: unknown ResNet {name!r}; valid names are {sorted(_RESNET_DIMS)}")
    net = getattr(torchvision.models, name)(weights=None)
    if pretrained is not None:
        _load_state_dict_file(net, pretrained)
    if small_input:
        net.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        nn.init.kaiming_normal_(net.conv1.weight, mode="fan_out", nonlinearity="relu")
        net.maxpool = nn.Identity()
    net.fc = nn.Identity()
    net.out_dim = _RESNET_DIMS[name]
    return net


def build_encoder(
    name: str,
    *,
    width: int = 32,
    small_input: bool = True,
    pretrained: Optional[Union[str, Path]] = None,
) -> nn.Module:
    """Build an encoder by name.

    Parameters
    ----------
    name : {"small_cnn", "resnet18", "resnet50"}
        See :data:`ENCODERS`.
    width : int, default 32
        First-block width of :class:`SmallCNN` (ignored for ResNets).
    small_input : bool, default True
        Small-image stem for ResNets (see :func:`resnet_encoder`).
    pretrained : str or Path, optional
        Local state_dict file (ResNets and SmallCNN alike).

    Returns
    -------
    torch.nn.Module
        Encoder with an ``out_dim`` attribute.

    Raises
    ------
    ValueError
        If ``name`` is unknown; the message lists :data:`ENCODERS`.
    """
    if name == "small_cnn":
        enc = SmallCNN(width=width)
        if pretrained is not None:
            _load_state_dict_file(enc, pretrained)
        return enc
    if name in _RESNET_DIMS:
        return resnet_encoder(name, small_input=small_input, pretrained=pretrained)
    raise ValueError(f"encoder: unknown encoder {name!r}; valid names are {list(ENCODERS)}")


class ProjectionHead(nn.Module):
    """Two-layer MLP projection head ``Linear -> BatchNorm -> ReLU -> Linear``.

    Paper 01 §4.2: "A two-layer MLP with BN and ReLU projects encoder features to
    embeddings: 2048 -> 2048 -> d with d=256 by default."  The output is raw (Euclidean,
    unnormalised); :class:`EmbeddingModel` maps it onto the manifold.

    Parameters
    ----------
    in_dim, hidden_dim, out_dim : int
        Layer sizes (all >= 1).

    Raises
    ------
    ValueError
        If a size is not a positive integer.
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("hidden_dim", hidden_dim), ("out_dim", out_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden_dim, bias=False),
            nn.BatchNorm1d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_dim, out_dim),
        )
        self.in_dim, self.hidden_dim, self.out_dim = in_dim, hidden_dim, out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Project features.

        Parameters
        ----------
        x : torch.Tensor, shape (B, in_dim)

        Returns
        -------
        torch.Tensor, shape (B, out_dim)
        """
        return self.net(x)


class L2Normalize(nn.Module):
    """Map onto the unit sphere, ``x / max(||x||, eps)`` (Euclidean mode of paper 01 §3.1).

    Computed in float32 (float64 kept) even under autocast.

    Parameters
    ----------
    eps : float, default 1e-12
        Lower bound on the norm.
    """

    def __init__(self, eps: float = 1e-12) -> None:
        super().__init__()
        self.eps = float(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise the last dimension.

        Parameters
        ----------
        x : torch.Tensor, shape (..., d)

        Returns
        -------
        torch.Tensor, shape (..., d), float32 or float64, unit norm.
        """
        with torch.autocast(device_type=x.device.type, enabled=False):
            x = x.to(_float_dtype(x))
            return F.normalize(x, dim=-1, eps=self.eps)


class HyperbolicHead(nn.Module):
    """Feature clipping + exponential map at the origin: tangent vectors -> hyperbolic points.

    ``v <- min(1, r / ||v||) v`` (feature clipping, Guo et al. CVPR 2022, Eq. 6), then
    ``z = geometry.proj(geometry.expmap0(v))`` (paper 03 §2.2, ``h = beta exp_0(e)``;
    paper 01 §3.1 "clip norms to < 1/sqrt(-kappa) - eps").  With curvature ``-c`` the
    Poincaré radius of the output is at most ``tanh(sqrt(c) r) / sqrt(c)``, so the
    embeddings stay away from the boundary where distances explode.  For the Lorentz
    model ``expmap0`` adds the time coordinate: ``(..., d) -> (..., d+1)``.

    The computation runs with autocast disabled, in float32 (float64 inputs stay float64),
    as DESIGN "Numerics" asks of every hyperbolic op.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        A hyperbolic geometry (``name`` "poincare" or "lorentz").
    clip_r : float, default 2.0
        Maximal tangent norm ``r > 0``; ``None`` or ``inf`` disables clipping (then only
        ``geometry.proj`` keeps points inside the ball).

    Raises
    ------
    ValueError
        If ``geometry`` is Euclidean (use :class:`L2Normalize`) or ``clip_r <= 0``.
    """

    def __init__(self, geometry, clip_r: Optional[float] = 2.0) -> None:
        super().__init__()
        name = getattr(geometry, "name", None)
        if name not in ("poincare", "lorentz"):
            raise ValueError(
                f"geometry: HyperbolicHead needs a 'poincare' or 'lorentz' geometry, got {name!r} "
                "(Euclidean embeddings use L2Normalize)"
            )
        if clip_r is not None and not (float(clip_r) > 0):
            raise ValueError(f"clip_r must be > 0 (or None to disable clipping), got {clip_r!r}")
        self.geometry = geometry
        self.clip_r = None if clip_r is None else float(clip_r)

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        """Map tangent vectors at the origin onto the manifold.

        Parameters
        ----------
        v : torch.Tensor, shape (..., d)
            Raw head outputs, read as tangent vectors at the origin.

        Returns
        -------
        torch.Tensor
            Poincaré: shape (..., d), ``||z|| < 1/sqrt(c)``; Lorentz: shape (..., d+1) on
            the hyperboloid. float32 (float64 if ``v`` is float64).
        """
        with torch.autocast(device_type=v.device.type, enabled=False):
            v = v.to(_float_dtype(v))
            if self.clip_r is not None and self.clip_r != float("inf"):
                norm = v.norm(dim=-1, keepdim=True).clamp_min(1e-15)
                v = v * torch.clamp(self.clip_r / norm, max=1.0)
            return self.geometry.proj(self.geometry.expmap0(v))

    def extra_repr(self) -> str:
        return f"geometry={self.geometry.name}, c={getattr(self.geometry, 'c', None)}, clip_r={self.clip_r}"


def manifold_head(geometry, clip_r: Optional[float] = 2.0) -> nn.Module:
    """The parameter-free map onto ``geometry``: :class:`L2Normalize` or :class:`HyperbolicHead`.

    Parameters
    ----------
    geometry : hierviz.geometry.Geometry
        "euclidean", "poincare" or "lorentz".
    clip_r : float, default 2.0
        Feature-clipping radius for hyperbolic geometries.

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    ValueError
        If ``geometry.name`` is not one of the three names.
    """
    name = getattr(geometry, "name", None)
    if name == "euclidean":
        return L2Normalize()
    if name in ("poincare", "lorentz"):
        return HyperbolicHead(geometry, clip_r=clip_r)
    raise ValueError(f"geometry: unknown geometry {name!r}; valid names are ['euclidean', 'poincare', 'lorentz']")


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
    clip_r : float, default 2.0
        Feature-clipping radius of the :class:`HyperbolicHead`.

    Raises
    ------
    ValueError
        If the encoder has no positive integer ``out_dim``, ``num_classes < 1`` or the
        geometry is unknown.
    """

    def __init__(self, encoder: nn.Module, head: nn.Module, geometry, num_classes: Optional[int] = None,
                 clip_r: Optional[float] = 2.0) -> None:
        super().__init__()
        out_dim = getattr(encoder, "out_dim", None)
        if not isinstance(out_dim, int) or out_dim < 1:
            raise ValueError(f"encoder must have a positive integer attribute out_dim, got {out_dim!r}")
        if num_classes is not None and (isinstance(num_classes, bool) or not isinstance(num_classes, int)
                                        or num_classes < 1):
            raise ValueError(f"num_classes must be a positive integer or None, got {num_classes!r}")
        self.encoder = encoder
        self.head = head
        self.geometry = geometry
        self.to_manifold = manifold_head(geometry, clip_r=clip_r)
        self.classifier = nn.Linear(out_dim, num_classes) if num_classes is not None else None
        self.feature_dim = out_dim
        self.num_classes = num_classes

    def backbone_parameters(self) -> list[nn.Parameter]:
        """Encoder parameters (the "backbone" LR group of paper 01 §4.2)."""
        return list(self.encoder.parameters())

    def head_parameters(self) -> list[nn.Parameter]:
        """Projection head and classifier parameters (the 10x LR group of paper 01 §4.2)."""
        params = list(self.head.parameters())
        if self.classifier is not None:
            params += list(self.classifier.parameters())
        return params

    def forward(self, x: torch.Tensor) -> dict[str, Optional[torch.Tensor]]:
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
            ``logits``: (B, C) or (B, V, C) when ``num_classes`` was given, else ``None``.

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
        z = self.to_manifold(self.head(feats))
        logits = self.classifier(feats) if self.classifier is not None else None
        out = {
            "features": feats.reshape(*lead, feats.shape[-1]),
            "z": z.reshape(*lead, z.shape[-1]),
            "logits": None if logits is None else logits.reshape(*lead, logits.shape[-1]),
        }
        return out

    @torch.no_grad()
    def embed(self, x: torch.Tensor, use: str = "z") -> torch.Tensor:
        """Manifold embeddings for evaluation (no gradient; call ``model.eval()`` first).

        Parameters
        ----------
        x : torch.Tensor, shape (B, 3, H, W)
        use : {"z", "features"}
            ``"z"``: the projection-head output (contrastive methods); ``"features"``: the
            encoder (penultimate) features mapped into the geometry with the same
            parameter-free map (HXE, paper 01 §4.3).

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
        return self.to_manifold(out["features"])


def build_model(
    encoder: str,
    geometry,
    *,
    embed_dim: int = 128,
    hidden_dim: Optional[int] = None,
    num_classes: Optional[int] = None,
    width: int = 32,
    small_input: bool = True,
    pretrained: Optional[Union[str, Path]] = None,
    clip_r: Optional[float] = 2.0,
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
    clip_r : float, default 2.0
        Feature-clipping radius of the hyperbolic head.

    Returns
    -------
    EmbeddingModel

    Raises
    ------
    ValueError
        Unknown encoder / geometry, or non-positive sizes.
    """
    enc = build_encoder(encoder, width=width, small_input=small_input, pretrained=pretrained)
    head = ProjectionHead(enc.out_dim, hidden_dim or enc.out_dim, embed_dim)
    return EmbeddingModel(enc, head, geometry, num_classes=num_classes, clip_r=clip_r)
