"""A user module for ``hierviz compare --import tests.toy_method``: registers the method ``toy-l2``.

It touches no package file: it only calls the public :func:`hierviz.methods.register_method`.
``SEEN_SCALES`` records the ``loss.toy_scale`` of every objective built, so a test can check
that ``--set loss.toy_scale=2`` reached the loss.
"""

import torch

import hierviz.methods
from hierviz.losses import Objective

#: ``toy_scale`` of every :class:`ToyPull` built (in order).
SEEN_SCALES: list[float] = []


class ToyPull(torch.nn.Module):
    """Pull same-label embeddings together: mean squared distance of same-label pairs × scale.

    ``forward(z, labels)``: z (B, V, d) float, labels (B,) int64 → a scalar ≥ 0.
    """

    input_kind = "embeddings"

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = float(scale)
        SEEN_SCALES.append(self.scale)

    def forward(self, z, labels):
        flat = z.reshape(-1, z.shape[-1])
        y = labels.repeat_interleave(z.shape[1])
        same = (y[:, None] == y[None, :]).to(flat.dtype)
        d2 = torch.cdist(flat, flat).pow(2)
        return self.scale * (d2 * same).sum() / same.sum()


# replace=True: importing this module again (tests drop it from sys.modules) rebinds the method
@hierviz.methods.register_method("toy-l2", hparams={"toy_scale": 1.0}, display_name="Toy L2", replace=True)
def toy_l2(tree, geometry, hp):
    return Objective("toy-l2", {"pull": ToyPull(hp["toy_scale"])})
