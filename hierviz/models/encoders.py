"""Encoders: a registry of image trunks that return pooled features.

Registered: ``small_cnn`` (:class:`SmallCNN`), ``resnet18`` and ``resnet50`` (torchvision,
small-image stem), and ``mlp`` (:class:`MLPEncoder`, for vector datasets such as TF-IDF texts). A user encoder is one function registered with
:func:`register_encoder` (``inputs=`` says whether it reads images, vectors or text); it takes
``(width=, small_input=, pretrained=)`` keywords and returns a module with an integer ``out_dim``. Pretrained weights are never downloaded:
``pretrained`` is a local ``state_dict`` file.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hierviz._registry import Registry
from hierviz.data.base import INPUT_KINDS

__all__ = [
    "ENCODERS",
    "register_encoder",
    "encoder_inputs",
    "SmallCNN",
    "MLPEncoder",
    "resnet_encoder",
    "build_encoder",
]

#: Encoder registry: name -> factory ``f(*, width, small_input, pretrained) -> nn.Module``.
ENCODERS: Registry = Registry("encoder")


#: What each registered factory reads, as declared by ``register_encoder(name, inputs=...)``.
_INPUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register_encoder(name: str, *, inputs: str = "images", replace: bool = False) -> Callable[[Any], Any]:
    """Decorator registering an encoder factory under ``name`` (see :data:`ENCODERS`).

    Parameters
    ----------
    name : str
    inputs : {"images", "vectors", "text"}, default "images"
        What the encoder reads (:data:`hierviz.data.INPUT_KINDS`): image tensors, ``(N, D)``
        feature vectors or token ids. A dataset of that input kind gets it by default
        (:func:`hierviz.experiments.config.default_encoder`), and ``compare`` refuses an
        image encoder on a vector dataset. Read it back with :func:`encoder_inputs`.
    replace : bool, default False
        Allow overwriting an existing entry.

    Returns
    -------
    callable
        The decorator; it returns the factory unchanged.

    Raises
    ------
    ValueError
        ``name`` is already registered, or ``inputs`` is not an input kind.

    Examples
    --------
    >>> @register_encoder("doc-linear", inputs="vectors")
    ... def _doc_linear(*, width=32, small_input=True, pretrained=None):
    ...     return MLPEncoder(hidden=width)
    >>> encoder_inputs("doc-linear"), encoder_inputs("small_cnn")
    ('vectors', 'images')
    >>> ENCODERS.unregister("doc-linear")
    """
    if inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}, got {inputs!r}")
    register = ENCODERS.register(name, replace=replace)

    def deco(factory: Any) -> Any:
        register(factory)
        _INPUTS[factory] = inputs
        return factory

    return deco


def encoder_inputs(name: str) -> str:
    """What the registered encoder ``name`` reads: ``"images"``, ``"vectors"`` or ``"text"``.

    The kind declared by ``register_encoder(name, inputs=...)``; ``"images"`` for a factory
    registered without it (or straight through ``ENCODERS.register``). hierviz 0.3's
    attributes on the factory (``factory.vectors = True``, ``factory.text = True``) are still
    read, with a DeprecationWarning.

    Raises
    ------
    ValueError
        ``name`` is not a registered encoder (``UnknownNameError``, naming the closest names).

    Examples
    --------
    >>> encoder_inputs("mlp"), encoder_inputs("resnet18")
    ('vectors', 'images')
    """
    factory = ENCODERS.get(name)
    if factory in _INPUTS:
        return _INPUTS[factory]
    for kind in ("vectors", "text"):
        if getattr(factory, kind, False) is True:  # hierviz 0.3's way to declare it
            warnings.warn(
                f"encoder {name!r}: the factory attribute '{kind} = True' is deprecated; register it with "
                f"register_encoder({str(name)!r}, inputs={kind!r})",
                DeprecationWarning,
                stacklevel=2,
            )
            return kind
    return "images"


_RESNET_DIMS = {"resnet18": 512, "resnet50": 2048}


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


class MLPEncoder(nn.Module):
    """A two-layer MLP encoder for feature vectors (vector datasets: TF-IDF, precomputed features).

    ``Flatten -> Linear(D, h) -> LayerNorm -> ReLU -> Linear(h, h) -> LayerNorm -> ReLU``, h =
    ``hidden``. The input size D is inferred on the first call (``torch.nn.LazyLinear``), so
    the same registered encoder serves any D; run one forward pass (a "dry run") before
    copying the module or loading weights into it (:func:`hierviz.experiments.compare` does).

    Parameters
    ----------
    hidden : int, default 256
        Width h (>= 1); ``out_dim = hidden``.

    Attributes
    ----------
    out_dim : int

    Raises
    ------
    ValueError
        ``hidden`` is not a positive integer.

    Examples
    --------
    >>> enc = MLPEncoder(hidden=16)
    >>> enc(torch.zeros(4, 300, 1, 1)).shape  # vectors travel as (D, 1, 1) "images"
    torch.Size([4, 16])
    """

    def __init__(self, hidden: int = 256) -> None:
        super().__init__()
        if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
            raise ValueError(f"hidden must be a positive integer, got {hidden!r}")
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.LazyLinear(hidden),
            nn.LayerNorm(hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, hidden),
            nn.LayerNorm(hidden),
            nn.ReLU(inplace=True),
        )
        self.out_dim = int(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Encode vectors.

        Parameters
        ----------
        x : torch.Tensor, shape (B, D, 1, 1) or (B, D), float

        Returns
        -------
        torch.Tensor, shape (B, out_dim)
        """
        return self.net(x)


def _load_state_dict_file(module: nn.Module, path: str | Path) -> None:
    """Load a local state_dict into ``module``, skipping tensors whose shapes differ."""
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(  # the class callers catch for a missing file
            f"pretrained: {str(path)!r} is a folder, not a weights file; pass the torch state_dict file inside "
            "it (e.g. model.pt)"
        )
    if not path.is_file():
        raise FileNotFoundError(
            f"pretrained: weights file {str(path)!r} does not exist (hierviz never downloads weights; "
            "pass a local torch state_dict file)"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt zip, pickle with code, truncated file, ...
        raise ValueError(
            f"pretrained: could not read {str(path)!r} as a torch state_dict ({type(exc).__name__}); save one "
            "with torch.save(model.state_dict(), path)"
        ) from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise ValueError(f"pretrained: {str(path)!r} does not hold a state_dict (got {type(state).__name__})")
    own = module.state_dict()
    usable = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    if not usable:
        raise ValueError(
            f"pretrained: no tensor in {str(path)!r} matches the encoder's parameter names and shapes "
            f"(file keys e.g. {list(state)[:3]}, model keys e.g. {list(own)[:3]})"
        )
    # a file matching only some of the encoder's tensors is said (few: refused)
    n_own, n_used = len(own), len(usable)
    if n_used < MIN_PRETRAINED_FRACTION * n_own:
        raise ValueError(
            f"pretrained: only {n_used} of the encoder's {n_own} tensors match {str(path)!r} by name and shape "
            f"(at least {MIN_PRETRAINED_FRACTION:.0%} needed); is it weights of another architecture? "
            f"(file keys e.g. {list(state)[:3]}, model keys e.g. {list(own)[:3]})"
        )
    if n_used < n_own:
        skipped = [k for k in own if k not in usable]
        warnings.warn(
            f"pretrained: loaded {n_used} of the encoder's {n_own} tensors from {str(path)!r}; "
            f"{len(skipped)} keep their random initialisation (e.g. {skipped[:3]})",
            UserWarning,
            stacklevel=3,
        )
    module.load_state_dict(usable, strict=False)


#: Smallest share of an encoder's tensors a ``pretrained`` file must provide (else refused).
MIN_PRETRAINED_FRACTION = 0.5


def resnet_encoder(
    name: str = "resnet18",
    small_input: bool = True,
    pretrained: str | Path | None = None,
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
    import torchvision  # heavy: torchvision's models, imported only when a ResNet is built

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
    pretrained: str | Path | None = None,
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
        If ``name`` is unknown (``UnknownNameError``, naming the closest valid names).
    """
    factory = ENCODERS.get(name)
    return factory(width=width, small_input=small_input, pretrained=pretrained)


@register_encoder("small_cnn")
def _small_cnn(*, width: int = 32, small_input: bool = True, pretrained=None) -> nn.Module:
    enc = SmallCNN(width=width)
    if pretrained is not None:
        _load_state_dict_file(enc, pretrained)
    return enc


@register_encoder("resnet18")
def _resnet18(*, width: int = 32, small_input: bool = True, pretrained=None) -> nn.Module:
    return resnet_encoder("resnet18", small_input=small_input, pretrained=pretrained)


@register_encoder("resnet50")
def _resnet50(*, width: int = 32, small_input: bool = True, pretrained=None) -> nn.Module:
    return resnet_encoder("resnet50", small_input=small_input, pretrained=pretrained)


@register_encoder("mlp", inputs="vectors")
def _mlp(*, width: int = 32, small_input: bool = True, pretrained=None) -> nn.Module:
    """:class:`MLPEncoder` with ``hidden = 8 * width`` (the feature size of ``small_cnn`` at that width); reads vectors."""
    if pretrained is not None:
        raise ValueError(
            "pretrained: the 'mlp' encoder infers its input size on the first batch; load weights into it "
            "after a forward pass (torch.load + load_state_dict), not through model.pretrained"
        )
    return MLPEncoder(hidden=8 * int(width))
