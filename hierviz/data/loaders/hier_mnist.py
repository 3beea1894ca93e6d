"""Hierarchical MNIST (Paper 02 (HMLC), Fig. 3): a large central class digit and a small category digit.

Built deterministically from the MNIST test split (``mnist/t10k-images-idx3-ubyte.gz`` and
``t10k-labels-idx1-ubyte.gz`` in the data folder, LeCun et al. 1998):

* every image shows a **class** digit scaled to half the image size in the centre, and a
  **category** digit scaled to a quarter of the image size at a random place in the border
  around it (never overlapping the class digit);
* category and class are drawn independently: the source digits are cut into groups of
  :data:`GROUP_SIZE`, and inside a group every digit is the class digit of one image and,
  through a seeded random permutation, the category digit of another;
* ``groups`` holds that source group, so a grouped split (what ``hierviz compare`` does)
  never shows a source digit in two splits; ``official_split`` is such a split (80/20 by
  group, seeded) for users of the arrays;
* the label of an image is the leaf ``cat{k}_cls{c}`` (index ``10·k + c``) of the tree
  ``hier-mnist``: root → category digit ``k`` → class digit ``c``.

The default size is 64 px (CPU friendly); ``size=192`` gives the paper's size (class digit
96 px, category digit 48 px; the paper scales 32 → 192 px and uses a 32 px category digit).
When the MNIST files are absent, :func:`synthetic_digits` draws seven-segment digits with
seeded jitter instead (``ds.name`` then says so), so that everything runs without the data.
"""

from __future__ import annotations

import gzip
from os import PathLike
from pathlib import Path

import numpy as np
import torch

from hierviz.data.base import ArrayDataset, DatasetInfo, find_data_file, register_dataset

__all__ = [
    "MNIST_CITATION",
    "GROUP_SIZE",
    "read_idx",
    "load_mnist_test",
    "synthetic_digits",
    "compose_hier_mnist",
    "load_hier_mnist",
]

MNIST_CITATION = (
    "LeCun Y, Bottou L, Bengio Y, Haffner P. Gradient-based learning applied to document recognition. "
    "Proc. IEEE 86(11):2278-2324, 1998. Hierarchical MNIST after Ott J et al., Feature identification for "
    "hierarchical contrastive learning (Paper 02 (HMLC)), Fig. 3."
)
MNIST_LICENCE = "MNIST: no explicit licence on its site; commonly redistributed under CC BY-SA 3.0"
#: Source digits per group: each group's digits compose each other's images only.
GROUP_SIZE = 50

INFO = DatasetInfo(
    "mnist/t10k-images-idx3-ubyte.gz",
    "mnist",
    "copy the MNIST test split (t10k-*-idx*-ubyte.gz) into <data>/mnist/",
    "Hierarchical MNIST (paper 02 Fig. 3): central class digit + small category digit, 100 leaves, 64 px",
)


def read_idx(path: str | PathLike) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzipped or not.

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    numpy.ndarray
        uint8 array of the shape stored in the header.

    Raises
    ------
    ValueError
        Not an unsigned-byte IDX file, or a size that does not match the header (names
        the file).
    """
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{p}: not an unsigned-byte IDX file (MNIST format); re-copy it")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{p}: header says shape {dims} but the file holds {body.size} bytes; re-copy it")
    return body.reshape(dims)


def load_mnist_test(data_dir: str | PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The MNIST test split: images ``(10000, 28, 28)`` uint8 and labels ``(10000,)`` int64.

    Raises
    ------
    FileNotFoundError
        ``mnist/t10k-images-idx3-ubyte.gz`` not found in the data folders.
    ValueError
        Malformed files, or images and labels of different lengths.
    """
    images = read_idx(find_data_file(INFO.filename, data_dir))
    labels = read_idx(find_data_file("mnist/t10k-labels-idx1-ubyte.gz", data_dir)).astype(np.int64)
    if images.ndim != 3 or labels.shape != (images.shape[0],):
        raise ValueError(f"MNIST images {images.shape} and labels {labels.shape} do not match")
    return images, labels


_SEGMENTS = {  # seven-segment digits: a b c d e f g
    0: "abcdef",
    1: "bc",
    2: "abdeg",
    3: "abcdg",
    4: "bcfg",
    5: "acdfg",
    6: "acdefg",
    7: "abc",
    8: "abcdefg",
    9: "abcdfg",
}


def synthetic_digits(n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seven-segment digits with seeded jitter: a stand-in for MNIST when its files are absent.

    Parameters
    ----------
    n : int, default 2000
        Number of digits; labels cycle through 0..9 in a seeded order.
    seed : int, default 0

    Returns
    -------
    images : numpy.ndarray, uint8, shape (n, 28, 28)
    labels : numpy.ndarray, int64, shape (n,)

    Examples
    --------
    >>> im, y = synthetic_digits(20)
    >>> im.shape, im.dtype, sorted(set(y.tolist())) == list(range(10))
    ((20, 28, 28), dtype('uint8'), True)
    """
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 10).astype(np.int64)
    images = np.zeros((n, 28, 28), np.uint8)
    for i, d in enumerate(labels):  # drawing n small glyphs (data generation, not a loss)
        x0, y0 = 8 + rng.integers(-2, 3), 4 + rng.integers(-2, 3)
        w, h = 11 + rng.integers(-1, 2), 9 + rng.integers(-1, 2)
        t = int(rng.integers(2, 4))
        img = images[i]
        seg = _SEGMENTS[int(d)]
        if "a" in seg:
            img[y0 : y0 + t, x0 : x0 + w] = 255
        if "g" in seg:
            img[y0 + h : y0 + h + t, x0 : x0 + w] = 255
        if "d" in seg:
            img[y0 + 2 * h : y0 + 2 * h + t, x0 : x0 + w] = 255
        if "f" in seg:
            img[y0 : y0 + h + t, x0 : x0 + t] = 255
        if "b" in seg:
            img[y0 : y0 + h + t, x0 + w - t : x0 + w] = 255
        if "e" in seg:
            img[y0 + h : y0 + 2 * h + t, x0 : x0 + t] = 255
        if "c" in seg:
            img[y0 + h : y0 + 2 * h + t, x0 + w - t : x0 + w] = 255
    return images, labels


def _resize(digits: np.ndarray, size: int) -> np.ndarray:
    x = torch.from_numpy(digits).float()[:, None]
    y = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    return y[:, 0].round().clamp(0, 255).to(torch.uint8).numpy()


def compose_hier_mnist(
    digits: np.ndarray, digit_labels: np.ndarray, *, size: int = 64, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compose hierarchical-MNIST images from source digits (deterministic for a seed).

    Parameters
    ----------
    digits : numpy.ndarray, uint8, shape (n, h, w)
        Source digits (white on black).
    digit_labels : numpy.ndarray, int, shape (n,)
        Their values 0..9.
    size : int, default 64
        Image side, a multiple of 4 and ≥ 16: class digit ``size/2``, category digit ``size/4``.
    seed : int, default 0

    Returns
    -------
    images : uint8 (N, size, size, 3), N = n rounded down to whole groups
    category, cls : int64 (N,)
        The category (small) and class (central) digit values.
    groups : int64 (N,)
        Source group of each image (no source digit is used outside its group).
    sources : int64 (N, 2)
        Index in ``digits`` of the class digit and of the category digit.

    Raises
    ------
    ValueError
        ``size`` not a multiple of 4 or below 16; fewer than :data:`GROUP_SIZE` digits.
    """
    if not isinstance(size, (int, np.integer)) or size < 16 or size % 4:
        raise ValueError(f"size must be a multiple of 4 and >= 16 (64 default, 192 = the paper's), got {size!r}")
    n = (len(digits) // GROUP_SIZE) * GROUP_SIZE
    if n == 0:
        raise ValueError(f"need at least {GROUP_SIZE} source digits, got {len(digits)}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(digits))[:n]
    groups = np.repeat(np.arange(n // GROUP_SIZE), GROUP_SIZE)
    cls_src = order
    # inside each group: a random permutation pairs every class digit with another category digit
    perm = np.concatenate([g * GROUP_SIZE + rng.permutation(GROUP_SIZE) for g in range(n // GROUP_SIZE)])
    cat_src = order[perm]
    big, small = size // 2, size // 4
    big_digits = _resize(digits[cls_src], big)
    small_digits = _resize(digits[cat_src], small)
    canvas = np.zeros((n, size, size), np.uint8)
    lo = (size - big) // 2
    canvas[:, lo : lo + big, lo : lo + big] = big_digits
    # category digit: a random side of the border, a random offset along it (never over the centre box)
    side = rng.integers(0, 4, n)
    along = rng.integers(0, size - small + 1, n)
    across = rng.integers(0, lo - small + 1, n)
    far = size - small - across
    rows = np.select([side == 0, side == 1], [across, far], along)
    cols = np.select([side == 2, side == 3], [across, far], along)
    for i in range(n):  # paste one small digit per image (data generation, not a loss)
        r, c = rows[i], cols[i]
        np.maximum(
            canvas[i, r : r + small, c : c + small], small_digits[i], out=canvas[i, r : r + small, c : c + small]
        )
    images = np.repeat(canvas[..., None], 3, axis=-1)
    return (
        images,
        digit_labels[cat_src].astype(np.int64),
        digit_labels[cls_src].astype(np.int64),
        groups.astype(np.int64),
        np.stack([cls_src, cat_src], axis=1).astype(np.int64),
    )


@register_dataset("hier-mnist", default_tree="hier-mnist", info=INFO)
def load_hier_mnist(
    data_dir: str | PathLike | None = None, *, size: int = 64, seed: int = 0, synthetic: bool | None = None
) -> ArrayDataset:
    """Hierarchical MNIST (Paper 02 (HMLC), Fig. 3) from the MNIST test split, or synthetic digits without it.

    Parameters
    ----------
    data_dir : str or PathLike, optional
        Folder holding ``mnist/t10k-*`` instead of ``$HIERVIZ_DATA`` / ``../shared/data``.
    size : int, default 64
        Image side (multiple of 4); 192 is the paper's size.
    seed : int, default 0
        Composition seed (pairing, placement, ``official_split``).
    synthetic : bool or None, default None
        None: MNIST when its files are found, else seven-segment digits (2,000 sources).
        True: always synthetic. False: MNIST or ``FileNotFoundError``.

    Returns
    -------
    ArrayDataset
        ``name`` ``"hier-mnist"`` (``"hier-mnist (synthetic digits)"`` for the stand-in);
        images uint8 ``(N, size, size, 3)`` (N = 10,000 from MNIST); labels ``10·k + c``;
        classes ``cat{k}_cls{c}`` (the leaves of the tree ``hier-mnist``); ``groups`` = source
        group; ``official_split`` train/test (80/20 of the groups); ``ids`` =
        ``"<class source>-<category source>"``.

    Raises
    ------
    FileNotFoundError
        ``synthetic=False`` and the MNIST files are missing.
    ValueError
        Bad ``size`` or malformed MNIST files.

    Examples
    --------
    >>> ds = load_hier_mnist(synthetic=True, size=32)
    >>> ds.images.shape, ds.num_classes, ds.classes[37]
    ((2000, 32, 32, 3), 100, 'cat3_cls7')
    """
    if synthetic is None:
        try:
            digits, dl = load_mnist_test(data_dir)
            synthetic = False
        except FileNotFoundError:
            synthetic = True
    elif not synthetic:
        digits, dl = load_mnist_test(data_dir)
    if synthetic:
        digits, dl = synthetic_digits(2000, seed=seed)
    images, category, cls, groups, sources = compose_hier_mnist(digits, dl, size=size, seed=seed)
    rng = np.random.default_rng(seed + 1)
    n_groups = int(groups.max()) + 1
    test_groups = rng.permutation(n_groups)[: max(1, n_groups // 5)]
    split = np.where(np.isin(groups, test_groups), "test", "train")
    return ArrayDataset(
        images,
        10 * category + cls,
        [f"cat{k}_cls{c}" for k in range(10) for c in range(10)],
        groups=groups,
        name="hier-mnist (synthetic digits)" if synthetic else "hier-mnist",
        citation=MNIST_CITATION,
        licence="synthetic seven-segment digits (no licence needed)" if synthetic else MNIST_LICENCE,
        official_split=split,
        ids=np.array([f"{a}-{b}" for a, b in sources]),
    )
