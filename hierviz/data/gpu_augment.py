"""Batched two-view augmentation on device tensors (the GPU input pipeline).

:class:`TwoViewTransform` augments one image at a time on the CPU, in DataLoader workers;
on a GPU that per-sample work, not the model, sets the pace (~10 steps/s against
30 for the model alone, HAM10000 at 64 px, resnet18, batch 256). :class:`BatchTwoViewAugment`
applies the same recipe to a whole batch of uint8 images that already sit on the device
(or come from pinned memory), with **per-sample** random parameters:

1. random resized crop (torchvision's ``RandomResizedCrop.get_params`` rule, ten tries then
   the whole image) resampled with :func:`torchvision.ops.roi_align` (bilinear, averaging
   ``ceil(crop/size)`` samples per output pixel when shrinking, i.e. antialiased);
2. horizontal (and vertical) flips;
3. colour jitter with probability ``p_jitter``: brightness, contrast, saturation and hue in
   a random order per sample, with torchvision's formulas (``adjust_*`` of
   :mod:`torchvision.transforms.v2.functional`; hue through its RGB↔HSV conversion);
4. grayscale with probability ``p_gray`` (ITU-R 601 weights, 3 channels kept);
5. Gaussian blur with probability ``p_blur``, σ ~ U(0.1, 2), torchvision's kernel and
   reflect padding, as one grouped separable convolution;
6. normalisation.

Every random number comes from one ``torch.Generator`` seeded per batch (``seed``), so a
batch's views are a function of ``(seed, images)``: reproducible, and resumable without
saving generator state (:func:`hierviz.training.fit` passes ``(config.seed, global_step)``
hashed into ``seed``). The CPU path (:class:`TwoViewTransform` in workers) stays the default
on a CPU; ``train.augment_on = "device"`` (or ``"auto"`` on CUDA) selects this one.
Tested on CPU tensors against torchvision's per-image functions (tests/test_gpu_augment.py);
the same code runs on CUDA.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torchvision.ops import roi_align
from torchvision.transforms.v2.functional._color import _hsv_to_rgb, _rgb_to_hsv

from .transforms import IMAGENET_MEAN, IMAGENET_STD, TwoViewTransform, _check_stats, blur_kernel_size

__all__ = [
    "AUGMENT_ON",
    "BatchTwoViewAugment",
    "UInt8Images",
    "batch_seed",
    "crop_boxes",
    "resized_crop_batch",
    "adjust_brightness_batch",
    "adjust_contrast_batch",
    "adjust_saturation_batch",
    "adjust_hue_batch",
    "grayscale_batch",
    "gaussian_blur_batch",
]

#: Values of ``train.augment_on``: where the training views are drawn.
AUGMENT_ON = ("auto", "cpu", "device")

_GRAY = (0.2989, 0.587, 0.114)  # torchvision's rgb_to_grayscale weights


def batch_seed(seed: int, step: int) -> int:
    """A 63-bit seed for the views of global step ``step`` of a run seeded ``seed`` (SplitMix64 mix).

    Examples
    --------
    >>> batch_seed(0, 0) != batch_seed(0, 1) != batch_seed(1, 0)
    True
    """
    z = (int(seed) * 0x9E3779B97F4A7C15 + int(step) + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFF


# --------------------------------------------------------------------------- batched ops


def crop_boxes(
    n: int,
    height: int,
    width: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    generator: torch.Generator,
    device: Any = None,
) -> Tensor:
    """Per-sample ``RandomResizedCrop`` boxes ``(n, 4)`` as ``(x1, y1, x2, y2)`` in pixels (float).

    torchvision's rule, vectorised: ten tries of area fraction ~ U(scale) and log aspect
    ~ U(log ratio), rounded sides; the first try that fits is taken, at an offset uniform
    over the valid positions; a sample with no fitting try gets the whole image clipped to
    ``ratio`` (centred).
    """
    dev = torch.device("cpu") if device is None else torch.device(device)
    tries = 10
    area = height * width
    u = torch.rand(n, tries, 4, generator=generator, device=dev, dtype=torch.float64)
    target = area * (scale[0] + (scale[1] - scale[0]) * u[..., 0])
    log_r = math.log(ratio[0]) + (math.log(ratio[1]) - math.log(ratio[0])) * u[..., 1]
    aspect = torch.exp(log_r)
    w = torch.round(torch.sqrt(target * aspect))
    h = torch.round(torch.sqrt(target / aspect))
    ok = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = torch.argmax(ok.to(torch.int8), dim=1)  # first fitting try (0 if none fits)
    any_ok = ok.any(dim=1)
    pick = first[:, None]
    w, h = w.gather(1, pick)[:, 0], h.gather(1, pick)[:, 0]
    top = torch.floor(u[..., 2].gather(1, pick)[:, 0] * (height - h + 1))
    left = torch.floor(u[..., 3].gather(1, pick)[:, 0] * (width - w + 1))
    # fallback (torchvision): the whole image, clipped to the ratio range, centred
    in_ratio = width / height
    if in_ratio < ratio[0]:
        fw, fh = width, round(width / ratio[0])
    elif in_ratio > ratio[1]:
        fh, fw = height, round(height * ratio[1])
    else:
        fw, fh = width, height
    w = torch.where(any_ok, w, torch.full_like(w, fw))
    h = torch.where(any_ok, h, torch.full_like(h, fh))
    top = torch.where(any_ok, top, torch.full_like(top, (height - fh) // 2))
    left = torch.where(any_ok, left, torch.full_like(left, (width - fw) // 2))
    return torch.stack([left, top, left + w, top + h], dim=1)


def resized_crop_batch(images: Tensor, boxes: Tensor, size: int) -> Tensor:
    """Crop ``boxes`` (n, 4) ``(x1, y1, x2, y2)`` out of ``images`` (n, C, H, W) float and resize to ``size``.

    :func:`torchvision.ops.roi_align` with ``aligned=True``: bilinear at the output pixel
    centres, as ``F.resized_crop`` when enlarging; when shrinking it averages
    ``ceil(crop/size)``² bilinear samples per pixel (an antialiasing box filter where
    torchvision uses a triangle filter). Near the crop border it may read the pixels just
    outside the crop (torchvision clamps to the crop's edge).
    """
    n = images.shape[0]
    idx = torch.arange(n, device=images.device, dtype=images.dtype)[:, None]
    rois = torch.cat([idx, boxes.to(device=images.device, dtype=images.dtype)], dim=1)
    return roi_align(images, rois, output_size=(size, size), spatial_scale=1.0, sampling_ratio=-1, aligned=True)


def _per_sample(v: Tensor, x: Tensor) -> Tensor:
    return v.to(device=x.device, dtype=x.dtype).reshape(-1, *([1] * (x.dim() - 1)))


def grayscale_batch(x: Tensor) -> Tensor:
    """``(n, 1, H, W)`` luma of float RGB images in [0, 1] (torchvision's weights)."""
    r, g, b = x.unbind(dim=-3)
    return (r * _GRAY[0] + g * _GRAY[1] + b * _GRAY[2]).unsqueeze(-3)


def _blend(x: Tensor, other: Tensor, ratio: Tensor) -> Tensor:
    return (x * ratio + other * (1.0 - ratio)).clamp_(0.0, 1.0)


def adjust_brightness_batch(x: Tensor, factor: Tensor) -> Tensor:
    """Per-sample ``v2.functional.adjust_brightness`` of float images in [0, 1]; ``factor`` (n,)."""
    return (x * _per_sample(factor, x)).clamp_(0.0, 1.0)


def adjust_contrast_batch(x: Tensor, factor: Tensor) -> Tensor:
    """Per-sample ``v2.functional.adjust_contrast``: blend with the image's mean luma."""
    mean = grayscale_batch(x).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(x, mean, _per_sample(factor, x))


def adjust_saturation_batch(x: Tensor, factor: Tensor) -> Tensor:
    """Per-sample ``v2.functional.adjust_saturation``: blend with the luma image."""
    return _blend(x, grayscale_batch(x), _per_sample(factor, x))


def adjust_hue_batch(x: Tensor, factor: Tensor) -> Tensor:
    """Per-sample ``v2.functional.adjust_hue`` (``factor`` in [−0.5, 0.5]) through torchvision's RGB↔HSV."""
    hsv = _rgb_to_hsv(x)
    h, s, v = hsv.unbind(dim=-3)
    h = (h + _per_sample(factor, h)).remainder_(1.0)
    return _hsv_to_rgb(torch.stack((h, s, v), dim=-3))


def gaussian_blur_batch(x: Tensor, kernel_size: int, sigma: Tensor) -> Tensor:
    """Per-sample ``v2.functional.gaussian_blur`` (square kernel, σ (n,)) as one grouped separable conv."""
    n, c, hgt, wid = x.shape
    half = (kernel_size - 1) * 0.5
    t = torch.linspace(-half, half, kernel_size, device=x.device, dtype=x.dtype)
    k = torch.exp(-0.5 * (t[None, :] / sigma.to(device=x.device, dtype=x.dtype)[:, None]) ** 2)
    k = k / k.sum(dim=1, keepdim=True)  # (n, k)
    k = k.repeat_interleave(c, dim=0)  # (n*c, k)
    p = kernel_size // 2
    y = F.pad(x.reshape(1, n * c, hgt, wid), [p, p, p, p], mode="reflect")
    y = F.conv2d(y, k[:, None, None, :], groups=n * c)
    y = F.conv2d(y, k[:, None, :, None], groups=n * c)
    return y.reshape(n, c, hgt, wid)


# --------------------------------------------------------------------------- the transform


class BatchTwoViewAugment(torch.nn.Module):
    """``V`` random views of every image of a uint8 batch, on the batch's device: ``(B, V, 3, S, S)``.

    The recipe and the parameters of :class:`~hierviz.data.TwoViewTransform` (SimCLR,
    paper 01 §3.4), applied to whole batches with per-sample random parameters (see the
    module docstring for each step and where it differs from torchvision's per-image ops).

    Parameters
    ----------
    size, views, scale, jitter, p_jitter, p_gray, p_blur, vertical_flip, mean, std
        As :class:`~hierviz.data.TwoViewTransform`.
    channels_last : bool, default False
        Return the views in ``torch.channels_last`` memory format (after flattening to
        ``(B·V, 3, S, S)``; the 5-D result is a view of it).

    Raises
    ------
    ValueError, TypeError
        As :class:`~hierviz.data.TwoViewTransform`; at call time, images that are not uint8
        ``(B, 3, H, W)`` (or ``(B, H, W, 3)``, moved to channels first).

    Examples
    --------
    >>> aug = BatchTwoViewAugment(16)
    >>> x = torch.randint(0, 256, (4, 3, 20, 20), dtype=torch.uint8)
    >>> v = aug(x, seed=0)
    >>> v.shape, torch.equal(v, aug(x, seed=0)), torch.equal(v[:, 0], v[:, 1])
    (torch.Size([4, 2, 3, 16, 16]), True, False)
    """

    def __init__(
        self,
        size: int,
        views: int = 2,
        *,
        scale: tuple[float, float] = (0.5, 1.0),
        jitter: float = 1.0,
        p_jitter: float = 0.8,
        p_gray: float = 0.1,
        p_blur: float = 0.5,
        vertical_flip: bool = True,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        channels_last: bool = False,
    ) -> None:
        super().__init__()

        ref = TwoViewTransform(  # the same validation and the same derived settings
            size, views, scale=scale, jitter=jitter, p_jitter=p_jitter, p_gray=p_gray, p_blur=p_blur,
            vertical_flip=vertical_flip, mean=mean, std=std,
        )  # fmt: skip
        self.size, self.views, self.scale, self.jitter = ref.size, ref.views, ref.scale, ref.jitter
        self.kernel_size = blur_kernel_size(self.size)
        self.p_jitter, self.p_gray, self.p_blur = float(p_jitter), float(p_gray), float(p_blur)
        self.vertical_flip = bool(vertical_flip)
        self.ratio = (3.0 / 4.0, 4.0 / 3.0)
        self.mean, self.std = _check_stats(mean, std)
        self.channels_last = bool(channels_last)
        s = self.jitter
        self.jitter_ranges = (
            (max(0.0, 1 - 0.4 * s), 1 + 0.4 * s),
            (max(0.0, 1 - 0.4 * s), 1 + 0.4 * s),
            (max(0.0, 1 - 0.4 * s), 1 + 0.4 * s),
            (-min(0.5, 0.1 * s), min(0.5, 0.1 * s)),
        )

    def extra_repr(self) -> str:
        return (
            f"size={self.size}, views={self.views}, scale={self.scale}, jitter={self.jitter}, "
            f"p_jitter={self.p_jitter}, p_gray={self.p_gray}, p_blur={self.p_blur}, vertical_flip={self.vertical_flip}"
        )

    @staticmethod
    def _images(x: Any) -> Tensor:
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(x)
        if not isinstance(x, Tensor) or x.dtype != torch.uint8 or x.dim() != 4:
            raise ValueError(
                "images must be a uint8 tensor (B, 3, H, W) (or (B, H, W, 3)); got "
                f"{getattr(x, 'dtype', type(x).__name__)} {tuple(getattr(x, 'shape', ()))}"
            )
        if x.shape[1] != 3 and x.shape[-1] == 3:
            x = x.permute(0, 3, 1, 2)
        if x.shape[1] != 3:
            raise ValueError(f"images must have 3 channels (B, 3, H, W); got shape {tuple(x.shape)}")
        return x

    def forward(self, images: Tensor, seed: int | None = None, generator: torch.Generator | None = None) -> Tensor:
        """Views of a batch.

        Parameters
        ----------
        images : torch.Tensor, uint8, shape (B, 3, H, W) or (B, H, W, 3)
            On any device; the views are drawn there.
        seed : int, optional
            Seeds a fresh generator on that device (reproducible views).
        generator : torch.Generator, optional
            Used as is (on the images' device) when ``seed`` is None; neither: torch's
            default generator of that device.

        Returns
        -------
        torch.Tensor, float32, shape (B, V, 3, size, size)
        """
        x = self._images(images)
        B, _, H, W = x.shape
        dev = x.device
        if seed is not None:
            generator = torch.Generator(device=dev).manual_seed(int(seed))
        n = B * self.views
        # view-major inside each image: row b*V + v is view v of image b
        img = x.unsqueeze(1).expand(B, self.views, 3, H, W).reshape(n, 3, H, W).float().div_(255.0)

        def rand(*shape: int) -> Tensor:
            return torch.rand(*shape, generator=generator, device=dev)

        boxes = crop_boxes(n, H, W, self.scale, self.ratio, generator, dev)
        out = resized_crop_batch(img, boxes, self.size)
        hflip = rand(n) < 0.5
        out = torch.where(hflip[:, None, None, None], out.flip(-1), out)
        if self.vertical_flip:
            vflip = rand(n) < 0.5
            out = torch.where(vflip[:, None, None, None], out.flip(-2), out)
        if self.jitter > 0 and self.p_jitter > 0:
            out = self._jitter(out, rand)
        if self.p_gray > 0:
            gray = rand(n) < self.p_gray
            out = torch.where(gray[:, None, None, None], grayscale_batch(out).expand_as(out), out)
        if self.p_blur > 0:
            blur = rand(n) < self.p_blur
            sigma = 0.1 + 1.9 * rand(n)
            out = torch.where(blur[:, None, None, None], gaussian_blur_batch(out, self.kernel_size, sigma), out)
        mean = torch.tensor(self.mean, device=dev).view(1, 3, 1, 1)
        std = torch.tensor(self.std, device=dev).view(1, 3, 1, 1)
        out = (out - mean) / std
        if self.channels_last:
            out = out.contiguous(memory_format=torch.channels_last)
        return out.unflatten(0, (B, self.views))

    def _jitter(self, out: Tensor, rand) -> Tensor:
        """ColorJitter with probability ``p_jitter``: the four adjustments in a random order per sample."""
        n = out.shape[0]
        apply = rand(n) < self.p_jitter
        u = rand(n, 4)
        factors = [lo + (hi - lo) * u[:, k] for k, (lo, hi) in enumerate(self.jitter_ranges)]
        order = torch.argsort(rand(n, 4), dim=1)  # a random permutation of the four per sample
        ops = (adjust_brightness_batch, adjust_contrast_batch, adjust_saturation_batch, adjust_hue_batch)
        for slot in range(4):
            for k, op in enumerate(ops):
                sel = apply & (order[:, slot] == k)
                out = torch.where(sel[:, None, None, None], op(out, factors[k]), out)
        return out


class UInt8Images(torch.utils.data.Dataset):
    """Items ``(uint8 image (3, H, W), label)`` from an :class:`~hierviz.data.ArrayDataset`, for device augmentation.

    The images are converted once to one uint8 tensor ``(N, 3, H, W)`` (HAM10000 at 64 px:
    123 MB), pinned when ``pin`` (CUDA present), so a batch is a gather and one
    non-blocking copy; :class:`BatchTwoViewAugment` then draws the views on the device.

    Parameters
    ----------
    ds : ArrayDataset-like
        ``images`` (N, H, W, 3) or (N, H, W) uint8 and ``labels`` (N,).
    pin : bool or None, default None
        Pin the tensor in page-locked memory; None = when CUDA is available.

    Raises
    ------
    ValueError
        Images that are not uint8 (N, H, W[, 3]) (e.g. a vector dataset).
    """

    def __init__(self, ds: Any, pin: bool | None = None) -> None:
        imgs = np.asarray(ds.images)
        if imgs.dtype != np.uint8 or imgs.ndim not in (3, 4):
            raise ValueError(
                f"device augmentation needs uint8 images (N, H, W[, 3]); got {imgs.dtype} {imgs.shape}: "
                "use train.augment_on='cpu' for this dataset"
            )
        if imgs.ndim == 3:
            imgs = np.repeat(imgs[..., None], 3, axis=-1)
        t = torch.from_numpy(np.ascontiguousarray(imgs.transpose(0, 3, 1, 2)))
        if pin if pin is not None else torch.cuda.is_available():
            t = t.pin_memory()
        self.images = t
        self.labels = np.asarray(ds.labels)

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def __getitem__(self, i: int) -> tuple[Tensor, int]:
        return self.images[i], int(self.labels[i])
