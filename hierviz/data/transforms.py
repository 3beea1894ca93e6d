"""Two-view augmentation for contrastive training, sized for small images.

Paper 01 §3.4: "We adopt two views per image, standard color/blur/crop augmentations,
and in-batch negatives." :class:`TwoViewTransform` draws ``V`` independent views with
the SimCLR recipe (Chen et al. 2020) in :mod:`torchvision.transforms.v2`, scaled for
28--64 px images: a milder crop (scale 0.5--1 instead of 0.08--1, which would leave a few
pixels of a 32 px image) and a blur kernel of about 10 % of the image side (odd, >= 3).

Inputs are uint8 ``(H, W, 3)`` numpy arrays (what :class:`~hierviz.data.ArrayDataset`
holds), PIL images or uint8 ``(3, H, W)`` tensors; outputs are float32 ``(3, S, S)``
tensors normalised with ``mean`` / ``std``.

Vector datasets (float ``(N, D)`` features, :attr:`ArrayDataset.is_vector`) use
:class:`FeatureViews` for training views (feature dropout) and pass through
:class:`EvalTransform` unchanged; either way a vector becomes a ``(D, 1, 1)`` tensor (a 1 x 1
image with D channels), so the model's ``(B, V, C, H, W)`` layout holds for both kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset
from torchvision.transforms import v2

from hierviz.data.text import is_tokens, token_tensor

#: ImageNet channel statistics (torchvision's pretrained models expect them).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _check_size(size: Any, name: str = "size") -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"{name} must be an int (output side in pixels), got {type(size).__name__}")
    if size < 8:
        raise ValueError(f"{name} must be >= 8 pixels, got {size}")
    return int(size)


def _check_stats(mean: Sequence[float], std: Sequence[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    mean, std = tuple(float(m) for m in mean), tuple(float(s) for s in std)
    if len(mean) != 3 or len(std) != 3:
        raise ValueError(f"mean and std need 3 values (RGB), got {len(mean)} and {len(std)}")
    if any(s <= 0 or not np.isfinite(s) for s in std):
        raise ValueError(f"std must be positive and finite, got {std}")
    return mean, std


def blur_kernel_size(size: int) -> int:
    """Gaussian-blur kernel for an image side: odd, about 10 % of ``size``, at least 3.

    SimCLR uses 10 % of the (224 px) image side; for 32 px that gives 3, for 64 px 7.

    Parameters
    ----------
    size : int
        Image side in pixels (>= 8).

    Returns
    -------
    int
        Odd kernel size in ``[3, size]``.
    """
    size = _check_size(size)
    k = int(round(0.1 * size))
    k = k if k % 2 == 1 else k + 1
    return max(3, min(k, size if size % 2 == 1 else size - 1))


def _to_image(x: Any) -> Any:
    """numpy HWC uint8 / PIL / CHW tensor -> tv_tensors.Image (CHW uint8)."""
    if isinstance(x, np.ndarray):
        if x.dtype != np.uint8:
            raise TypeError(f"image must be uint8 (0..255), got dtype {x.dtype}")
        if x.ndim == 2:
            x = np.repeat(x[..., None], 3, axis=-1)
        if x.ndim != 3 or x.shape[-1] not in (1, 3):
            raise ValueError(f"image must be (H, W, 3) or (H, W), got shape {x.shape}")
        if x.shape[-1] == 1:
            x = np.repeat(x, 3, axis=-1)
    return v2.functional.to_image(x)


class _Base:
    def _tail(self) -> list[Any]:
        return [v2.ToDtype(torch.float32, scale=True), v2.Normalize(list(self.mean), list(self.std))]


class TwoViewTransform(_Base):
    """``V`` independent random views of an image, stacked: ``(V, 3, size, size)`` float32.

    Each view is, in order (SimCLR, Chen et al. 2020; paper 01 §3.4 "standard
    color/blur/crop augmentations", sized for small images):

    1. ``RandomResizedCrop(size, scale=scale)`` (antialiased),
    2. ``RandomHorizontalFlip(0.5)`` and, if ``vertical_flip``, ``RandomVerticalFlip(0.5)``
       (dermoscopy, histology and cell images have no canonical orientation),
    3. ``ColorJitter(0.4*s, 0.4*s, 0.4*s, 0.1*s)`` with probability ``p_jitter``,
       where ``s = jitter``,
    4. ``RandomGrayscale(p_gray)``,
    5. ``GaussianBlur(k, sigma=(0.1, 2.0))`` with probability ``p_blur``, ``k`` =
       :func:`blur_kernel_size` (``size``),
    6. ``Normalize(mean, std)`` (the uint8 image is converted to float32 in [0, 1] first,
       before step 1).

    Parameters
    ----------
    size : int
        Output side in pixels, >= 8.
    views : int, default 2
        Number of views V >= 1.
    scale : (float, float), default (0.5, 1.0)
        Area range of the random crop, ``0 < lo <= hi <= 1``.
    jitter : float, default 1.0
        Colour-jitter strength ``s`` >= 0 (0 disables jitter).
    p_jitter, p_gray, p_blur : float, default 0.8, 0.1, 0.5
        Probabilities in [0, 1].
    vertical_flip : bool, default True
        Also flip vertically (set False for natural images such as CIFAR-100).
    mean, std : 3 floats
        Normalisation (default ImageNet statistics).

    Raises
    ------
    ValueError
        ``size`` < 8, ``views`` < 1, bad ``scale``, negative ``jitter``, probabilities
        outside [0, 1], wrong-length or non-positive ``std``.
    TypeError
        Non-integer ``size`` / ``views``.

    Notes
    -----
    The object is picklable (DataLoader workers with any start method); randomness comes
    from torch's global RNG, which DataLoader seeds per worker.

    Examples
    --------
    >>> t = TwoViewTransform(32)
    >>> t(np.zeros((32, 32, 3), np.uint8)).shape
    torch.Size([2, 3, 32, 32])
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
    ) -> None:
        self.size = _check_size(size)
        if isinstance(views, bool) or not isinstance(views, (int, np.integer)):
            raise TypeError(f"views must be an int, got {type(views).__name__}")
        if views < 1:
            raise ValueError(f"views must be >= 1, got {views}")
        self.views = int(views)
        lo, hi = (float(s) for s in scale)
        if not 0.0 < lo <= hi <= 1.0:
            raise ValueError(f"scale must satisfy 0 < lo <= hi <= 1, got {scale}")
        if jitter < 0:
            raise ValueError(f"jitter must be >= 0, got {jitter}")
        for name, p in (("p_jitter", p_jitter), ("p_gray", p_gray), ("p_blur", p_blur)):
            if not 0.0 <= float(p) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {p}")
        self.mean, self.std = _check_stats(mean, std)
        self.scale, self.jitter = (lo, hi), float(jitter)
        self.kernel_size = blur_kernel_size(self.size)
        ops: list[Any] = [
            v2.ToDtype(torch.float32, scale=True),  # float first: each op below is ~10 % faster on float
            v2.RandomResizedCrop(self.size, scale=self.scale, antialias=True),
            v2.RandomHorizontalFlip(0.5),
        ]
        if vertical_flip:
            ops.append(v2.RandomVerticalFlip(0.5))
        if self.jitter > 0 and p_jitter > 0:
            s = self.jitter
            ops.append(
                v2.RandomApply([v2.ColorJitter(0.4 * s, 0.4 * s, 0.4 * s, min(0.5, 0.1 * s))], p=float(p_jitter))
            )
        if p_gray > 0:
            ops.append(v2.RandomGrayscale(float(p_gray)))
        if p_blur > 0:
            ops.append(v2.RandomApply([v2.GaussianBlur(self.kernel_size, sigma=(0.1, 2.0))], p=float(p_blur)))
        self.pipeline = v2.Compose(ops + [v2.Normalize(list(self.mean), list(self.std))])

    def __call__(self, image: Any) -> torch.Tensor:
        """Views of one image.

        Parameters
        ----------
        image : numpy.ndarray uint8 (H, W, 3) | PIL.Image | torch.Tensor uint8 (3, H, W)

        Returns
        -------
        torch.Tensor
            float32, shape (V, 3, size, size).
        """
        img = _to_image(image)
        return torch.stack([self.pipeline(img) for _ in range(self.views)])

    def __repr__(self) -> str:
        return f"TwoViewTransform(size={self.size}, views={self.views}, pipeline={self.pipeline})"


class EvalTransform(_Base):
    """Deterministic transform for evaluation: resize + centre crop + normalise.

    Parameters
    ----------
    size : int
        Output side, >= 8.
    mean, std : 3 floats
        Normalisation (default ImageNet statistics); use the training transform's.

    Raises
    ------
    ValueError, TypeError
        As :class:`TwoViewTransform`.
    """

    def __init__(self, size: int, mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD) -> None:
        self.size = _check_size(size)
        self.mean, self.std = _check_stats(mean, std)
        self.pipeline = v2.Compose([v2.Resize(self.size, antialias=True), v2.CenterCrop(self.size)] + self._tail())

    def __call__(self, image: Any) -> torch.Tensor:
        """``(3, size, size)`` float32 tensor of one image (inputs as :class:`TwoViewTransform`).

        A float feature vector ``(D,)`` (a vector dataset) is returned as it is, as a
        ``(D, 1, 1)`` float32 tensor.
        """
        if _is_vector(image):
            return _vector_tensor(image)
        if is_tokens(image):  # a text sample (s, 2): ids and mask as they are (hierviz.data.text)
            return token_tensor(image)
        return self.pipeline(_to_image(image))

    def __repr__(self) -> str:
        return f"EvalTransform(size={self.size})"


def _is_vector(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.ndim == 1 and np.issubdtype(x.dtype, np.floating)


def _vector_tensor(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).reshape(-1, 1, 1)


class FeatureViews:
    """One random view of a feature vector: inverted feature dropout, ``(D,)`` -> ``(D, 1, 1)``.

    Each feature is zeroed with probability ``p`` and the others are scaled by
    ``1 / (1 - p)`` (inverted dropout, Srivastava et al. 2014), so a view keeps the
    vector's expected value. It is the "augmentation" of vector datasets (TF-IDF texts,
    precomputed features), where image crops and colour jitter do not apply;
    :class:`ContrastiveDataset` calls it once per view.

    Parameters
    ----------
    p : float, default 0.2
        Drop probability in [0, 1). ``p = 0`` returns the vector unchanged.

    Raises
    ------
    ValueError
        ``p`` outside [0, 1).
    TypeError
        An input that is not a 1-D float numpy array.

    Notes
    -----
    Randomness comes from torch's global RNG (seeded per DataLoader worker), as for
    :class:`TwoViewTransform`. Picklable.

    Examples
    --------
    >>> v = FeatureViews(0.0)(np.array([1.0, 2.0], np.float32))
    >>> v.shape, v.flatten().tolist()
    (torch.Size([2, 1, 1]), [1.0, 2.0])
    """

    def __init__(self, p: float = 0.2) -> None:
        if not 0.0 <= float(p) < 1.0:
            raise ValueError(f"p (feature dropout) must be in [0, 1), got {p}")
        self.p = float(p)

    def __call__(self, x: Any) -> torch.Tensor:
        """A ``(D, 1, 1)`` float32 view of the vector ``x`` (D,)."""
        if not _is_vector(x):
            raise TypeError(
                f"FeatureViews takes a 1-D float feature vector, got {type(x).__name__} "
                f"{getattr(x, 'shape', '')}; use TwoViewTransform for images"
            )
        v = _vector_tensor(x)
        if self.p > 0:
            keep = (torch.rand(v.shape) >= self.p).to(v.dtype)
            v = v * keep / (1.0 - self.p)
        return v

    def __repr__(self) -> str:
        return f"FeatureViews(p={self.p})"


def eval_transform(
    size: int, mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD
) -> EvalTransform:
    """The evaluation transform (resize, centre crop, normalise) -> ``(3, size, size)`` float32.

    Parameters
    ----------
    size : int
        Output side, >= 8.
    mean, std : 3 floats
        Normalisation, default ImageNet statistics.

    Returns
    -------
    EvalTransform
        A picklable callable.
    """
    return EvalTransform(size, mean=mean, std=std)


def view_seeds(seed: int, epoch: int, index: int, views: int) -> list[int]:
    """The torch seeds of the ``views`` random views of sample ``index`` in ``epoch``.

    A function of ``(seed, epoch, index, view)`` only (numpy's ``SeedSequence``, whose
    hashing makes nearby tuples give unrelated streams), so a view does not depend on which
    process, rank or DataLoader worker draws it, nor on the order of the samples.

    Parameters
    ----------
    seed, epoch, index : int >= 0
        The run's seed, the 0-based epoch and the dataset index.
    views : int >= 1

    Returns
    -------
    list of int
        ``views`` seeds in ``[0, 2**64)``, view order.

    Raises
    ------
    ValueError
        A negative or non-integer argument.

    Examples
    --------
    >>> view_seeds(0, 0, 5, 2) == view_seeds(0, 0, 5, 2), view_seeds(0, 0, 5, 2) == view_seeds(0, 1, 5, 2)
    (True, False)
    """
    for name, v in (("seed", seed), ("epoch", epoch), ("index", index), ("views", views)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (1 if name == "views" else 0):
            raise ValueError(f"view_seeds: {name} must be an integer >= {1 if name == 'views' else 0}, got {v!r}")
    words = np.random.SeedSequence([int(seed), int(epoch), int(index)]).generate_state(2 * int(views), np.uint32)
    return [(int(words[2 * v]) << 32) | int(words[2 * v + 1]) for v in range(int(views))]


def _check_ds(ds: Any) -> None:
    if not (hasattr(ds, "images") and hasattr(ds, "labels")):
        raise TypeError(f"ds must be an ArrayDataset (with .images and .labels), got {type(ds).__name__}")


class ContrastiveDataset(Dataset):
    """A torch Dataset of multi-view items ``(x (V, 3, H, W) float32, label int)``.

    Parameters
    ----------
    ds : ArrayDataset
        Images (N, H, W, 3) uint8 and labels (N,).
    transform : callable
        A :class:`TwoViewTransform` (its ``views`` must equal ``views``) or any callable
        image -> (3, H, W) tensor, which is then called ``views`` times.
    views : int, default 2
        V >= 1.
    seed : int or None, default None
        None: the views come from torch's global RNG stream (seeded by
        :func:`hierviz.training.fit` and per DataLoader worker), so they depend on the
        order in which a process draws the samples.  An int: *per-sample seeds*, view ``v``
        of sample ``i`` in epoch ``e`` is drawn with torch's RNG seeded by
        :func:`view_seeds` ``(seed, e, i, V)[v]`` (the global stream is left as it was), so the
        views are the same whichever rank, worker or process draws them -- what makes a
        ``torchrun`` run equal one process (``docs/distributed.md``).  :meth:`set_epoch`
        (called by :func:`~hierviz.training.fit`) sets ``e``.
    label_sets : bool, default False
        When ``ds`` has ``leaf_sets`` (:class:`hierviz.data.text.LabelSetDataset`: samples on
        several label paths), an item's label is its row of them, a bool tensor ``(C,)``
        (collated to ``(B, C)``), for a multi-label objective; else the leaf ``labels[i]``.

    Raises
    ------
    ValueError
        ``views`` < 1, a TwoViewTransform with a different number of views, or a negative
        ``seed``.
    TypeError
        ``ds`` lacks ``images`` / ``labels`` or ``transform`` is not callable.

    Notes
    -----
    Picklable (holds numpy arrays and a picklable transform), so it works with
    ``DataLoader(num_workers > 0)``; the default collate gives ``x`` (B, V, 3, H, W) and
    labels (B,) int64 -- the ``(B, V, d)`` layout the contrastive losses expect after
    the encoder.  With ``seed`` a transform must draw its randomness from torch's global
    RNG (torchvision v2 transforms and :class:`FeatureViews` do).

    Examples
    --------
    >>> from hierviz.data import ArrayDataset
    >>> ds = ArrayDataset(np.arange(2 * 16 * 16 * 3, dtype=np.uint8).reshape(2, 16, 16, 3), np.array([0, 1]), ["a", "b"])
    >>> views = ContrastiveDataset(ds, TwoViewTransform(16), seed=7)
    >>> torch.equal(views[1][0], views[1][0]), torch.equal(views[1][0][0], views[1][0][1])
    (True, False)
    """

    def __init__(
        self,
        ds: Any,
        transform: Callable[[Any], torch.Tensor],
        views: int = 2,
        *,
        seed: int | None = None,
        label_sets: bool = False,
    ) -> None:
        _check_ds(ds)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be None or an integer >= 0 (per-sample augmentation seeds), got {seed!r}")
        self.seed = None if seed is None else int(seed)
        # in shared memory: DataLoader workers (persistent ones included) see set_epoch
        self._epoch = torch.zeros((), dtype=torch.int64).share_memory_()
        if not callable(transform):
            raise TypeError(f"transform must be callable, got {type(transform).__name__}")
        if isinstance(views, bool) or not isinstance(views, (int, np.integer)) or views < 1:
            raise ValueError(f"views must be an int >= 1, got {views!r}")
        if isinstance(transform, TwoViewTransform) and transform.views != views:
            raise ValueError(f"views={views} but the TwoViewTransform makes {transform.views} views")
        self.images, self.labels = ds.images, np.asarray(ds.labels, dtype=np.int64)
        self.transform, self.views = transform, int(views)
        self.leaf_sets = getattr(ds, "leaf_sets", None) if label_sets else None

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def set_epoch(self, epoch: int) -> None:
        """The epoch ``e`` of the per-sample seeds (no effect without ``seed``); workers already started see it too."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
        self._epoch.fill_(int(epoch))

    @property
    def epoch(self) -> int:
        """The epoch ``e`` of the per-sample seeds (shared with the DataLoader's worker processes)."""
        return int(self._epoch)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, Any]:
        img = self.images[i]
        label = int(self.labels[i]) if self.leaf_sets is None else torch.from_numpy(self.leaf_sets[i])
        if self.seed is not None:
            return self._seeded_views(img, int(i)), label
        if isinstance(self.transform, TwoViewTransform):
            x = self.transform(img)
        else:
            x = torch.stack([self.transform(img) for _ in range(self.views)])
        return x, label

    def _seeded_views(self, img: Any, i: int) -> torch.Tensor:
        """The views of sample ``i``, each drawn under its own seed; torch's global RNG state is restored."""
        if isinstance(self.transform, TwoViewTransform):
            one, img = self.transform.pipeline, _to_image(img)  # what TwoViewTransform.__call__ does per view
        else:
            one = self.transform
        gen = torch.default_generator  # its own manual_seed: torch.manual_seed also seeds CUDA (~0.3 ms)
        saved = gen.get_state()
        try:
            out = []
            for s in view_seeds(self.seed, self.epoch, i, self.views):  # type: ignore[arg-type]
                gen.manual_seed(s)
                out.append(one(img))
        finally:
            gen.set_state(saved)
        return torch.stack(out)


class TransformDataset(Dataset):
    """A torch Dataset of single-view items ``(x (3, H, W) float32, label int)`` for evaluation.

    Parameters
    ----------
    ds : ArrayDataset
    transform : callable, optional
        image -> (3, H, W) tensor; default :func:`eval_transform` at the images' own size.

    Raises
    ------
    TypeError
        ``ds`` lacks ``images`` / ``labels`` or ``transform`` is not callable.
    """

    def __init__(self, ds: Any, transform: Callable[[Any], torch.Tensor] | None = None) -> None:
        _check_ds(ds)
        if transform is None:
            transform = eval_transform(int(ds.images.shape[1]))
        if not callable(transform):
            raise TypeError(f"transform must be callable, got {type(transform).__name__}")
        self.images, self.labels, self.transform = ds.images, np.asarray(ds.labels, dtype=np.int64), transform

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.transform(self.images[i]), int(self.labels[i])
