"""Frozen-encoder evaluation: embed train/test images, then the paper 01 hierarchy report.

Paper 01 §4.4: "We freeze the encoder and train a balanced multinomial logistic regression
head on train embeddings; we report leaf-level top-1 on the test set", plus HF1, H-Acc,
Violations and PC-Order with parent prototypes recomputed "from the frozen training
embeddings of each method in the same ambient geometry".  The embeddings are those of
the projection head on the manifold (``use="z"``), except for HXE, whose penultimate
(encoder) features are mapped into the run's geometry by the same parameter-free map
(``use="features"``, paper 01 §4.3 "we evaluate the penultimate-layer features").
The EMA of the weights is never used here (paper 01 §4.4).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from hierviz.evaluation.protocols import PROTOCOLS, EvalContext, register_protocol
from hierviz.metrics import hierarchy_report, parent_prototypes
from hierviz.training.batches import _augment_threads

__all__ = [
    "PROTOCOLS",
    "register_protocol",
    "ClassificationRecord",
    "EvalResult",
    "embed_dataset",
    "evaluate_model",
    "classification_protocol",
]


@dataclass
class _EmbeddingsRecord:
    """The fields every protocol's record starts with, and its ``embeddings.npz`` arrays.

    A record's own fields follow these five; ``_npz_fields`` names, in order, the arrays
    :meth:`arrays` returns.
    """

    metrics: dict[str, float]
    z_train: np.ndarray
    y_train: np.ndarray
    z_test: np.ndarray
    y_test: np.ndarray

    _npz_fields = ("z_test", "y_test", "z_train", "y_train", "prototypes", "proto_nodes")

    def arrays(self) -> dict[str, np.ndarray]:
        """What a run folder's ``embeddings.npz`` keeps: the arrays named in ``_npz_fields``."""
        return {name: getattr(self, name) for name in self._npz_fields}


@dataclass
class ClassificationRecord(_EmbeddingsRecord):
    """The typed record of the classification protocol (output of :func:`evaluate_model`).

    Attributes
    ----------
    metrics : dict[str, float]
        ``{"top1", "hf1", "h_acc", "violations", "pc_order", "bal_acc", "macro_f1"}`` in [0, 1]
        (:func:`hierviz.metrics.hierarchy_report` with ``imbalance=True``).
    z_train, z_test : numpy.ndarray, shape (n, D), float32
        Frozen embeddings on the manifold (Lorentz: D = d + 1 coordinates).
    y_train, y_test : numpy.ndarray, shape (n,), int64
        Leaf indices.
    prototypes : numpy.ndarray, shape (P, D), float32
        Parent prototypes from the training embeddings (arithmetic / Karcher mean).
    proto_nodes : numpy.ndarray, shape (P,), int64
        Node index (``tree.nodes``) of each prototype.
    use : str
        "z" or "features".
    seconds : float
        Wall time of embedding + metrics.
    """

    prototypes: np.ndarray
    proto_nodes: np.ndarray
    use: str
    seconds: float


#: Alias kept from hierviz 0.1.
EvalResult = ClassificationRecord


def _uint8_batches(dataset: Any, image_size: int) -> np.ndarray | None:
    """The images as one uint8 (N, S, S, 3) array when the eval transform is only ``ToDtype`` + ``Normalize``.

    That is the case when every image already has the evaluation size (resize and centre
    crop are then the identity); any other data set takes the per-image transform.
    """
    imgs = getattr(dataset, "images", None)
    if not isinstance(imgs, np.ndarray) or imgs.dtype != np.uint8 or imgs.ndim != 4:
        return None
    if imgs.shape[-1] != 3 or imgs.shape[1] != image_size or imgs.shape[2] != image_size:
        return None
    if len(getattr(dataset, "labels", ())) != len(imgs):
        return None
    return imgs


def _embed_uint8(
    model: nn.Module, imgs: np.ndarray, labels: Any, image_size: int, use: str, batch_size: int, device: torch.device
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Batched evaluation transform on the model's device: the same ops as ``eval_transform`` per image.

    ``to_dtype`` and ``normalize`` of :mod:`torchvision.transforms.v2.functional` on a whole
    batch are elementwise, so the tensors are bit-identical to the per-image path, without a
    DataLoader or a per-image Python call; the uint8 batch is copied to the device
    (pinned, non-blocking on CUDA) and converted there.
    """
    # heavy: torchvision (hierviz.data's transforms import it), imported on first use
    from torchvision.transforms.v2 import functional as TF

    from hierviz.data.transforms import EvalTransform  # heavy: torchvision

    tf = EvalTransform(image_size)
    mean, std = list(tf.mean), list(tf.std)
    pin = device.type == "cuda"
    lab = np.asarray(labels)
    zs, ys = [], []
    for i in range(0, len(imgs), batch_size):
        x = torch.from_numpy(np.ascontiguousarray(imgs[i : i + batch_size]))
        if pin:
            x = x.pin_memory()
        # NHWC uint8 copied as it is, made NCHW-contiguous on the device (the per-image layout:
        # a channels_last input would change the convolutions' rounding)
        x = x.to(device, non_blocking=pin).permute(0, 3, 1, 2).contiguous()
        x = TF.normalize(TF.to_dtype(x, torch.float32, scale=True), mean, std)
        zs.append(model.embed(x, use=use).float().cpu())
        ys.append(torch.as_tensor(lab[i : i + batch_size]).long())
    return zs, ys


@torch.inference_mode()
def embed_dataset(
    model: nn.Module,
    dataset: Any,
    image_size: int,
    *,
    use: str = "z",
    batch_size: int = 256,
    device: str | torch.device | None = None,
    num_workers: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Embed every image of a data set with the frozen model (eval transform, ``torch.inference_mode``).

    Images already at ``image_size`` in a uint8 array (the registered datasets at their own
    size) are transformed batch-wise on ``device`` (the same ops, bit-identical embeddings,
    without a DataLoader); other data sets go through the per-image eval transform.

    Parameters
    ----------
    model : hierviz.models.EmbeddingModel
        Put in eval mode for the call (BatchNorm running statistics) and restored after.
    dataset : hierviz.data.ArrayDataset
        Images (N, H, W, 3) uint8 and labels (N,).
    image_size : int
        Side of the evaluation transform (:func:`hierviz.data.eval_transform`).
    use : {"z", "features"}
        Projection-head output, or encoder features mapped into the geometry (HXE).
    batch_size : int, default 256
    device : str or torch.device, optional
        Default: the device of the model's parameters.
    num_workers : int, default 0

    Returns
    -------
    z : numpy.ndarray, shape (N, D), float32
    y : numpy.ndarray, shape (N,), int64

    Raises
    ------
    ValueError
        Empty data set, non-positive ``batch_size`` or ``image_size``, unknown ``use``.
    """
    if use not in ("z", "features"):
        raise ValueError(f"use must be 'z' or 'features', got {use!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 1:
        raise ValueError(f"image_size must be a positive integer, got {image_size!r}")
    if len(dataset) == 0:
        raise ValueError("dataset is empty: nothing to embed")
    if device is None:
        device = next(model.parameters()).device
    device = torch.device(device)
    was_training = model.training
    model.eval()
    imgs = _uint8_batches(dataset, image_size)
    if imgs is not None:  # images already at the evaluation size: batched transform on the device
        try:
            zs, ys = _embed_uint8(model, imgs, dataset.labels, image_size, use, batch_size, device)
        finally:
            model.train(was_training)
        return _finish(zs, ys)
    from hierviz.data import (  # heavy: torchvision (hierviz.data's transforms import it), imported on first use
        TransformDataset,
        eval_transform,
    )

    ds = TransformDataset(dataset, eval_transform(image_size))
    loader = DataLoader(ds, batch_size=batch_size, shuffle=False, num_workers=num_workers)

    zs, ys = [], []
    batches = iter(loader)
    try:
        for _ in range(len(loader)):
            with _augment_threads(num_workers == 0):
                x, y = next(batches)
            x = x.to(device)
            zs.append(model.embed(x, use=use).float().cpu())
            ys.append(torch.as_tensor(y).long().cpu())
    finally:
        model.train(was_training)
    return _finish(zs, ys)


def _finish(zs: list[torch.Tensor], ys: list[torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
    z = torch.cat(zs).numpy().astype(np.float32, copy=False)
    if not np.isfinite(z).all():
        raise ValueError("the model produced non-finite embeddings; the run diverged")
    return z, torch.cat(ys).numpy().astype(np.int64, copy=False)


def evaluate_model(
    model: nn.Module,
    train_data: Any,
    test_data: Any,
    tree: Any,
    geometry: Any,
    *,
    image_size: int,
    use: str = "z",
    seed: int = 0,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    num_workers: int = 0,
    mean_steps: int = 10,
) -> ClassificationRecord:
    """Frozen encoder -> embeddings -> :func:`hierviz.metrics.hierarchy_report` (paper 01 §4.4).

    Parameters
    ----------
    model : hierviz.models.EmbeddingModel
    train_data, test_data : hierviz.data.ArrayDataset
        The probe is fit and the prototypes computed on ``train_data``; metrics are scored
        on ``test_data`` (the lesion-grouped test split).
    tree : hierviz.hierarchy.LabelTree
        Aligned with the data's classes (leaf i = class i).
    geometry : hierviz.geometry.Geometry
        The run's geometry (distances and means of the parent metrics).
    image_size : int
    use : {"z", "features"}
        The method's ``embedding`` (:class:`hierviz.methods.Method`).
    seed : int, default 0
        Probe seed.
    batch_size, device, num_workers
        See :func:`embed_dataset`.
    mean_steps : int, default 10
        Karcher steps for hyperbolic prototypes (paper 01 §4.2, T_mean = 3).

    Returns
    -------
    ClassificationRecord

    Raises
    ------
    ValueError
        From :func:`embed_dataset` or the metrics (e.g. a single class in the train split).
    """
    t0 = time.perf_counter()
    with torch.jit.optimized_execution(False):  # same float rounding in every process (see hierviz.train)
        z_tr, y_tr = embed_dataset(
            model, train_data, image_size, use=use, batch_size=batch_size, device=device, num_workers=num_workers
        )
        z_te, y_te = embed_dataset(
            model, test_data, image_size, use=use, batch_size=batch_size, device=device, num_workers=num_workers
        )
        metrics = hierarchy_report(z_tr, y_tr, z_te, y_te, tree, geometry, seed=seed, steps=mean_steps, imbalance=True)
        protos, nodes = parent_prototypes(
            torch.as_tensor(z_tr), torch.as_tensor(y_tr), tree, geometry, steps=mean_steps
        )
    return ClassificationRecord(
        metrics={k: float(v) for k, v in metrics.items()},
        z_train=z_tr,
        y_train=y_tr,
        z_test=z_te,
        y_test=y_te,
        prototypes=torch.as_tensor(protos).detach().float().cpu().numpy(),
        proto_nodes=torch.as_tensor(nodes).long().cpu().numpy(),
        use=use,
        seconds=time.perf_counter() - t0,
    )


@register_protocol("classification")
def classification_protocol(ctx: EvalContext) -> ClassificationRecord:
    """Paper 01 §4.4: a balanced linear probe on frozen embeddings + the hierarchy metrics.

    See :func:`evaluate_model` (``ctx.embedding`` is its ``use``).
    """
    return evaluate_model(
        ctx.model,
        ctx.train_data,
        ctx.test_data,
        ctx.tree,
        ctx.geometry,
        image_size=ctx.image_size,
        use=ctx.embedding,
        seed=ctx.seed,
        batch_size=ctx.batch_size,
        device=ctx.device,
        num_workers=ctx.num_workers,
        mean_steps=ctx.mean_steps,
    )
