#!/usr/bin/env python3
"""Make the HAM10000 sample bundled in the package (``hierviz/data/sample/``).

Reads the full 64x64 HAM10000 file (``ham10000_64.npz``, found through ``--src``,
``$HIERVIZ_DATA`` or ``../shared/data``), keeps a class-stratified subset made of
*whole lesions* (every image of a chosen ``lesion_id`` comes along, so lesion-grouped
splits of the sample stay leak-free), downsamples it, and writes

* ``ham10000_sample.npz`` -- same keys as the full file (``images``, ``label``, ``dx``,
  ``classes``, ``lesion_id``, ``image_id``), byte-reproducible for a given seed;
* ``NOTICE.md`` -- the CC BY-NC 4.0 licence notice, the citation, the changes made and
  how to rebuild the file.

Usage::

    python data_scripts/make_ham10000_sample.py                 # defaults below
    python data_scripts/make_ham10000_sample.py --src /data/ham10000_64.npz --n 1500

Class quotas ("stratified with a floor"): every class gets ``max(min_per_class,
share of n proportional to its frequency)`` images (all of them if it has fewer), and
the remaining budget is split over the larger classes in proportion to their counts
(water-filling), so the rare classes are usable in a small sample while the common
ones keep their natural order of frequency. Lesions are drawn in a seeded random order
inside each class until the quota is reached.

Downsampling: when the source side is a multiple of ``--size`` the image is averaged
over exact ``k x k`` blocks (integer arithmetic, round half up -- independent of the
Pillow version); otherwise ``PIL.Image.resize(..., BILINEAR)`` (antialiased).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import file_digest, repo_root, save_npz, search_dirs  # noqa: E402

SRC_NAME = "ham10000_64.npz"
OUT_NAME = "ham10000_sample.npz"
KEYS = ("images", "label", "dx", "classes", "lesion_id", "image_id")
MAX_BYTES = 6_000_000  # the package must stay small: the sample may not exceed 6 MB
DEFAULTS = {"n": 2000, "size": 32, "min_per_class": 100, "seed": 0}


def class_quotas(counts: np.ndarray, n: int, min_per_class: int) -> np.ndarray:
    """Images to draw per class: proportional to ``counts`` with a floor (water-filling).

    Parameters
    ----------
    counts : numpy.ndarray of int, shape (C,)
        Images available per class (all > 0).
    n : int
        Total sample size, ``1 <= n <= counts.sum()``.
    min_per_class : int
        Floor per class (capped at the class's own count).

    Returns
    -------
    numpy.ndarray of int64, shape (C,)
        Quotas with ``quota <= counts`` and ``quota.sum() == n`` (exactly, unless the
        floors alone exceed ``n``, in which case every class gets its floor).

    Raises
    ------
    ValueError
        ``n`` out of range, negative ``min_per_class`` or non-positive counts.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 1 or counts.size == 0 or (counts <= 0).any():
        raise ValueError(f"counts must be a non-empty 1-D array of positive ints, got {counts.tolist()}")
    if not 1 <= n <= counts.sum():
        raise ValueError(f"n must be in 1..{counts.sum()} (images available), got {n}")
    if min_per_class < 0:
        raise ValueError(f"min_per_class must be >= 0, got {min_per_class}")
    lo = np.minimum(counts, min_per_class)
    fixed = np.full(counts.size, np.nan)  # classes pinned at their floor or their cap
    quota = lo.astype(np.float64)
    while np.isnan(fixed).any():  # water-filling over the classes not pinned yet
        free = np.flatnonzero(np.isnan(fixed))
        budget = n - np.nansum(fixed)
        share = budget * counts[free] / counts[free].sum()
        below, above = share < lo[free], share > counts[free]
        if not (below | above).any():
            quota[free] = share
            break
        fixed[free[below]] = lo[free[below]]
        fixed[free[above]] = counts[free[above]]
    pinned = ~np.isnan(fixed)
    quota[pinned] = fixed[pinned]
    out = np.floor(quota).astype(np.int64)
    rest = n - out.sum()
    if rest > 0:  # hand out the rounding remainder to the largest fractional parts
        frac = np.where(out < counts, quota - out, -1.0)
        out[np.argsort(-frac, kind="stable")[:rest]] += 1
    return np.maximum(out, np.minimum(counts, min_per_class))


def select_lesions(labels: np.ndarray, groups: np.ndarray, quotas: np.ndarray, seed: int) -> np.ndarray:
    """Row indices of whole groups, drawn per class in seeded random order up to each quota.

    Parameters
    ----------
    labels : numpy.ndarray of int, shape (N,)
        Class index per image.
    groups : numpy.ndarray, shape (N,)
        Group (lesion id) per image; every group must have a single label.
    quotas : numpy.ndarray of int, shape (C,)
        Target images per class; a class stops at the first group that reaches it
        (so it may overshoot by less than one group's size).
    seed : int
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    numpy.ndarray of int64
        Sorted row indices.

    Raises
    ------
    ValueError
        A group carrying more than one label.
    """
    labels, groups = np.asarray(labels), np.asarray(groups)
    uniq, inv = np.unique(groups, return_inverse=True)
    group_label = np.full(uniq.size, -1, dtype=np.int64)
    group_label[inv] = labels
    if not np.array_equal(group_label[inv], labels):
        raise ValueError("groups: some lesion has images with different labels")
    rng = np.random.default_rng(seed)
    members = [[] for _ in range(uniq.size)]
    for row, g in enumerate(inv):
        members[g].append(row)
    chosen: list[int] = []
    for c, q in enumerate(quotas):
        cand = np.flatnonzero(group_label == c)
        got = 0
        for g in rng.permutation(cand):
            if got >= q:
                break
            chosen.extend(members[g])
            got += len(members[g])
    return np.sort(np.asarray(chosen, dtype=np.int64))


def downsample(images: np.ndarray, size: int) -> np.ndarray:
    """Resize ``(N, H, W, 3)`` uint8 square images to ``(N, size, size, 3)``.

    Exact ``k x k`` block means (round half up) when ``H`` is a multiple of ``size``,
    else Pillow bilinear (antialiased) resizing.

    Parameters
    ----------
    images : numpy.ndarray of uint8, shape (N, H, H, 3)
    size : int
        Output side, ``1 <= size <= H``.

    Returns
    -------
    numpy.ndarray of uint8, shape (N, size, size, 3)

    Raises
    ------
    ValueError
        Non-square images or ``size`` out of range.
    """
    n, h, w, ch = images.shape
    if h != w:
        raise ValueError(f"images must be square, got {h}x{w}")
    if not 1 <= size <= h:
        raise ValueError(f"size must be in 1..{h}, got {size}")
    if size == h:
        return images.copy()
    if h % size == 0:
        k = h // size
        blocks = images.reshape(n, size, k, size, k, ch).astype(np.uint32).sum(axis=(2, 4))
        return ((blocks + (k * k) // 2) // (k * k)).astype(np.uint8)
    from PIL import Image

    return np.stack([np.asarray(Image.fromarray(im).resize((size, size), Image.BILINEAR)) for im in images])


def find_src(src: str | None) -> Path:
    """The source file: ``--src`` if given, else ``ham10000_64.npz`` in the data folders.

    Raises
    ------
    FileNotFoundError
        Naming the folders searched and the command that downloads the full file.
    """
    if src is not None:
        p = Path(src)
        if not p.is_file():
            raise FileNotFoundError(f"--src {p} does not exist")
        return p
    for d in search_dirs():
        if (d / SRC_NAME).is_file():
            return d / SRC_NAME
    raise FileNotFoundError(
        f"{SRC_NAME} not found in {[str(d) for d in search_dirs()]}; fetch it with "
        "`python data_scripts/download_ham10000.py --size 64` or pass --src PATH"
    )


def make_sample(
    src: str | Path,
    out_dir: str | Path,
    *,
    n: int = DEFAULTS["n"],
    size: int = DEFAULTS["size"],
    min_per_class: int = DEFAULTS["min_per_class"],
    seed: int = DEFAULTS["seed"],
    max_bytes: int | None = MAX_BYTES,
) -> dict:
    """Build ``ham10000_sample.npz`` and ``NOTICE.md`` in ``out_dir``.

    Parameters
    ----------
    src : str or Path
        A HAM10000 npz with the keys of ``ham10000_64.npz``.
    out_dir : str or Path
        Output folder (created).
    n, size, min_per_class, seed
        Sample size, output side in pixels, per-class floor, RNG seed.
    max_bytes : int or None, default 6,000,000
        Refuse (and delete) an output larger than this.

    Returns
    -------
    dict
        ``path``, ``bytes``, ``sha256``, ``n_images``, ``n_lesions``, ``counts``
        (class -> images), ``params``, ``src_sha256``.

    Raises
    ------
    ValueError
        Missing keys in ``src``; the output exceeds ``max_bytes``.
    """
    src, out_dir = Path(src), Path(out_dir)
    with np.load(src, allow_pickle=False) as d:
        missing = [k for k in KEYS if k not in d.files]
        if missing:
            raise ValueError(f"{src}: missing keys {missing}; expected {list(KEYS)}")
        full = {k: d[k] for k in KEYS}
    classes = full["classes"]
    counts = np.bincount(full["label"], minlength=len(classes))
    quotas = class_quotas(counts, n, min_per_class)
    idx = select_lesions(full["label"], full["lesion_id"], quotas, seed)
    sample = {k: full[k][idx] for k in KEYS if k != "classes"}
    sample["images"] = downsample(sample["images"], size)
    sample["classes"] = classes
    out_dir.mkdir(parents=True, exist_ok=True)
    path = save_npz(out_dir / OUT_NAME, {k: sample[k] for k in KEYS})
    nbytes = path.stat().st_size
    if max_bytes is not None and nbytes > max_bytes:
        path.unlink()
        raise ValueError(f"sample is {nbytes:,} bytes > max_bytes={max_bytes:,}; use a smaller --n or --size")
    got = np.bincount(sample["label"], minlength=len(classes))
    summary = {
        "path": path,
        "bytes": nbytes,
        "sha256": file_digest(path),
        "n_images": int(idx.size),
        "n_lesions": int(np.unique(sample["lesion_id"]).size),
        "counts": {str(c): int(k) for c, k in zip(classes, got)},
        "params": {"n": n, "size": size, "min_per_class": min_per_class, "seed": seed},
        "src_name": src.name,
        "src_sha256": file_digest(src),
        "src_shape": tuple(full["images"].shape),
    }
    (out_dir / "NOTICE.md").write_text(notice_text(summary), encoding="utf-8")
    return summary


def _reduction(src_side: int, size: int) -> str:
    if src_side == size:
        return "(no further resizing)"
    if src_side % size == 0:
        k = src_side // size
        return f"by exact {k}x{k} block averaging"
    return "by Pillow bilinear resizing"


def notice_text(s: dict) -> str:
    """The NOTICE.md text (licence, citation, changes, provenance) for a :func:`make_sample` summary."""
    p = s["params"]
    rows = "\n".join(f"| `{c}` | {k} |" for c, k in s["counts"].items())
    return f"""# HAM10000 sample bundled with hierviz -- licence notice

`ham10000_sample.npz` is a small subset of the **HAM10000** dataset. It is **not** covered
by hierviz's MIT licence: it is distributed under the
**Creative Commons Attribution-NonCommercial 4.0 International licence (CC BY-NC 4.0)**,
<https://creativecommons.org/licenses/by-nc/4.0/>. **Do not use it commercially.**

- Copyright: ViDIR Group, Department of Dermatology, Medical University of Vienna.
- Citation (please cite when you use these images):
  Tschandl P, Rosendahl C, Kittler H. "The HAM10000 dataset, a large collection of
  multi-source dermatoscopic images of common pigmented skin lesions."
  *Scientific Data* 5:180161 (2018). doi:10.1038/sdata.2018.161
- Data: Harvard Dataverse, doi:10.7910/DVN/DBW86T (also the ISIC 2018 challenge, task 3
  training set; Codella et al., arXiv:1902.03368).

## Changes made (as CC BY-NC 4.0 requires us to say)

The images were centre-cropped to a square and downsampled: the 600x450 originals (via a
200x150 JPEG copy) were cropped to the central square, resized to 64x64 (Pillow bilinear) and
then reduced to {p["size"]}x{p["size"]} {_reduction(s["src_shape"][1], p["size"])}.
Only {s["n_images"]:,} of the 10,015 images are kept ({s["n_lesions"]:,} whole lesions: every image
of a chosen `lesion_id` is included). Labels (`dx`) and ids (`lesion_id`, `image_id`) are unchanged.

| class | images |
| --- | ---: |
{rows}

## How it was made (reproducible)

```
python data_scripts/make_ham10000_sample.py --n {p["n"]} --size {p["size"]} --min-per-class {p["min_per_class"]} --seed {p["seed"]}
```

- source: `{s["src_name"]}` (sha256 `{s["src_sha256"]}`)
- output: `ham10000_sample.npz`, {s["bytes"]:,} bytes, sha256 `{s["sha256"]}`
- keys: `images` (N, {p["size"]}, {p["size"]}, 3) uint8 RGB, `label` (N,) int64 index into `classes`,
  `dx` (N,) str, `classes` (7,) str = nv, mel, bkl, bcc, akiec, vasc, df, `lesion_id` (N,) str,
  `image_id` (N,) str.
- class quotas: proportional to the full set's counts with a floor of {p["min_per_class"]} images per
  class (water-filling); lesions drawn in seeded random order within each class.
"""


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--src", help=f"the full {SRC_NAME} (default: search $HIERVIZ_DATA, ../shared/data)")
    ap.add_argument("--out", default=str(repo_root() / "hierviz" / "data" / "sample"), help="output folder")
    ap.add_argument("--n", type=int, default=DEFAULTS["n"], help="images in the sample (default %(default)s)")
    ap.add_argument("--size", type=int, default=DEFAULTS["size"], help="output side in pixels (default %(default)s)")
    ap.add_argument(
        "--min-per-class", type=int, default=DEFAULTS["min_per_class"], help="per-class floor (default %(default)s)"
    )
    ap.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="RNG seed (default %(default)s)")
    ap.add_argument("--max-bytes", type=int, default=MAX_BYTES, help="size limit in bytes (default %(default)s)")
    a = ap.parse_args(argv)
    try:
        s = make_sample(
            find_src(a.src),
            a.out,
            n=a.n,
            size=a.size,
            min_per_class=a.min_per_class,
            seed=a.seed,
            max_bytes=a.max_bytes,
        )
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {s['path']} ({s['bytes']:,} bytes, {s['n_images']} images, {s['n_lesions']} lesions)")
    print("per class:", s["counts"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
