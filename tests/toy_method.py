"""A user module for ``hierviz compare --import tests.toy_method`` (registers a toy method)."""

import torch

from hierviz.losses import Objective
from hierviz.methods import METHODS, register_method


class ToyPull(torch.nn.Module):
    """Pull same-label embeddings together: mean squared distance of same-label pairs × scale."""

    input_kind = "embeddings"

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, z, labels):
        flat = z.reshape(-1, z.shape[-1])
        y = labels.repeat_interleave(z.shape[1])
        same = (y[:, None] == y[None, :]).to(flat.dtype)
        d2 = torch.cdist(flat, flat).pow(2)
        return self.scale * (d2 * same).sum() / same.sum()


if "toy-l2" not in METHODS:

    @register_method("toy-l2", display_name="Toy L2", hparams={"toy_scale": 1.0})
    def toy_l2(tree, geometry, hp):
        return Objective("toy-l2", {"pull": ToyPull(hp["toy_scale"])})
