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
* :class:`HyperbolicHead` - a learned feature scale (initialised from the data), a smooth
  radius bound ``ρ·tanh(‖v‖/ρ)`` (or, ``bound="clip"``, the hard feature clipping of Guo et
  al., CVPR 2022, the 0.2 head) followed by ``expmap0`` and projection (paper 03 §2.2, the
  "Hyperbolic Mapper"), always computed in float32/float64; a learnable c is clamped
  into [0.1, 10] (:func:`clamp_curvature`).
* :class:`HyperbolicMapper` - paper 03 §2.2's MLP from frozen features into the Poincaré
  ball with a radius cap and its ``clip_fraction`` (``mapper.py``).
* :class:`EmbeddingModel` - ties them together and returns
  ``dict(features=..., z=..., logits=...)``.

Pretrained weights are never downloaded: pass a local ``state_dict`` file.
"""

from hierviz.models import text as text  # registers the "hyilr-text" encoder
from hierviz.models.encoders import (
    ENCODERS,
    SmallCNN,
    build_encoder,
    encoder_inputs,
    register_encoder,
    resnet_encoder,
)
from hierviz.models.heads import (
    CURVATURE_RANGE,
    HEAD_BOUNDS,
    HyperbolicHead,
    L2Normalize,
    ProjectionHead,
    clamp_curvature,
    manifold_head,
)
from hierviz.models.mapper import HyperbolicMapper
from hierviz.models.model import EmbeddingModel, build_model

__all__ = [
    "ENCODERS",
    "register_encoder",
    "encoder_inputs",
    "SmallCNN",
    "resnet_encoder",
    "build_encoder",
    "ProjectionHead",
    "L2Normalize",
    "HyperbolicHead",
    "manifold_head",
    "clamp_curvature",
    "HEAD_BOUNDS",
    "CURVATURE_RANGE",
    "EmbeddingModel",
    "build_model",
    "HyperbolicMapper",
]
