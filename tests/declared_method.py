"""A user module for ``hierviz compare --import tests.declared_method``: a method with its own optimiser.

It registers ``adam-pull`` through the public :func:`hierviz.methods.register_method` only, declaring
what it needs beyond its loss as typed fields: Adam at a constant learning rate with no weight decay
(:class:`hierviz.methods.TrainOverrides`).
"""

import torch

import hierviz.methods
from hierviz.losses import Objective
from hierviz.methods import TrainOverrides

#: What ``adam-pull`` fixes for its runs.
ADAM_CONSTANT = TrainOverrides(optimizer="adam", schedule="constant", weight_decay=0.0)


class Pull(torch.nn.Module):
    """Mean squared distance of same-label embeddings: z (B, V, d) float, labels (B,) int64 → a scalar ≥ 0."""

    input_kind = "embeddings"

    def forward(self, z, labels):
        flat = z.reshape(-1, z.shape[-1])
        y = labels.repeat_interleave(z.shape[1])
        same = (y[:, None] == y[None, :]).to(flat.dtype)
        return (torch.cdist(flat, flat).pow(2) * same).sum() / same.sum()


# replace=True: importing this module again (tests drop it from sys.modules) rebinds the method
@hierviz.methods.register_method("adam-pull", display_name="Adam pull", train=ADAM_CONSTANT, replace=True)
def adam_pull(tree, geometry, hp):
    return Objective("adam-pull", {"pull": Pull()})
