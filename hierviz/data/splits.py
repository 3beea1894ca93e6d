"""Grouped, stratified, seeded train / val / test splits.

Paper 01 §4.1 splits HAM10000 at the lesion (patient) level "to avoid multiple images of
the same lesion crossing splits", and BreakHis at the patient level. :func:`grouped_split`
does this: no group ever appears in two splits, and each split keeps the class
proportions as closely as whole groups allow.

Two algorithms, chosen automatically:

* **every group has a single label** (HAM10000 lesions; ``groups=None``, where each image
  is its own group): stratification separates by class, so each class's groups are
  shuffled (seeded) and dealt largest-first to the split furthest below its target count.
  This is exact up to one group per class and split, and fast (≈ 0.1 s for the 7,470
  lesions of HAM10000, where :class:`sklearn.model_selection.StratifiedGroupKFold` takes
  7--17 s because it loops over groups in Python).
* **some group mixes labels** (e.g. a patient with lesions of several classes):
  :class:`sklearn.model_selection.StratifiedGroupKFold` (``shuffle=True``, seeded) carves
  the test part, then the validation part from the rest; each part is the union of the
  first ``m`` of ``K`` folds, with ``m/K`` the closest fraction to the request (K <= 10).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

SPLITS = ("train", "val", "test")


def _as_labels(labels: Any) -> np.ndarray:
    if hasattr(labels, "detach"):  # torch.Tensor, without importing torch here
        labels = labels.detach().cpu().numpy()
    y = np.asarray(labels)
    if y.ndim != 1:
        raise ValueError(f"labels must be 1-D (N,), got shape {y.shape}")
    if y.size == 0:
        raise ValueError("labels is empty")
    if not np.issubdtype(y.dtype, np.integer):
        if np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise TypeError(f"labels must hold integers, got dtype {y.dtype}")
    return y.astype(np.int64, copy=False)


def _check_fraction(x: Any, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a float in [0, 1), got {type(x).__name__}")
    x = float(x)
    if not (0.0 <= x < 1.0) or not np.isfinite(x):
        raise ValueError(f"{name} must be in [0, 1), got {x}")
    return x


def _pure_groups(y: np.ndarray, g_inv: np.ndarray, n_groups: int) -> bool:
    first = np.full(n_groups, -1, dtype=np.int64)
    first[g_inv] = y  # last write wins; any group whose labels differ shows a mismatch below
    return bool(np.array_equal(first[g_inv], y))


def _deal_pure(y: np.ndarray, g_inv: np.ndarray, fracs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Split id (0 train, 1 val, 2 test) per sample; every group has one label."""
    sizes = np.bincount(g_inv)
    g_label = np.empty(sizes.size, dtype=np.int64)
    g_label[g_inv] = y
    g_split = np.zeros(sizes.size, dtype=np.int64)
    for c in np.unique(y):
        gs = np.flatnonzero(g_label == c)
        gs = gs[rng.permutation(gs.size)]
        gs = gs[np.argsort(-sizes[gs], kind="stable")]  # largest first; equal sizes stay shuffled
        target = fracs * sizes[gs].sum()
        got = np.zeros(3)
        for gi in gs:
            s = int(np.argmax(target - got))
            g_split[gi] = s
            got[s] += sizes[gi]
    return g_split[g_inv]


def _n_folds(frac: float, n_groups: int, max_class: int) -> tuple[int, int]:
    best = None
    for k in range(2, min(10, n_groups, max_class) + 1):
        m = max(1, round(frac * k))
        if m >= k:
            continue
        err = abs(m / k - frac)
        if best is None or err < best[0] - 1e-12:
            best = (err, k, m)
    if best is None:
        raise ValueError(
            f"cannot carve a fraction {frac:.3f} from {n_groups} groups (largest class: {max_class} samples); "
            "too few groups for a grouped split"
        )
    return best[1], best[2]


def _carve(y: np.ndarray, g: np.ndarray, frac: float, seed: int) -> np.ndarray:
    """Boolean mask of the samples carved out as the ``frac`` part (sklearn StratifiedGroupKFold)."""
    from sklearn.model_selection import StratifiedGroupKFold  # heavy: scikit-learn, imported on first use

    k, m = _n_folds(frac, np.unique(g).size, int(np.bincount(y).max()))
    cv = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    mask = np.zeros(y.size, dtype=bool)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        for i, (_, fold) in enumerate(cv.split(np.zeros(y.size), y, g)):
            if i < m:
                mask[fold] = True
    return mask


def grouped_split(
    labels: Any,
    groups: Any = None,
    val: float = 0.15,
    test: float = 0.15,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Split sample indices into train / val / test, grouped, stratified and seeded.

    Parameters
    ----------
    labels : array-like of int, shape (N,)
        Class (leaf) index per sample; numpy array, list or torch tensor.
    groups : array-like, shape (N,), optional
        Group id per sample (e.g. HAM10000 ``lesion_id``, a patient id); all samples of a
        group land in the same split. ``None``: every sample is its own group (plain
        stratified split).
    val, test : float, default 0.15
        Fractions of the samples for validation and test, each in [0, 1) with
        ``val + test < 1``. Met as closely as whole groups allow; 0 gives an empty split.
    seed : int, default 0
        Seed; the same inputs and seed give the same split.

    Returns
    -------
    dict[str, numpy.ndarray]
        Keys ``"train"``, ``"val"``, ``"test"``: sorted int64 index arrays that partition
        ``range(N)``.

    Raises
    ------
    ValueError
        Wrong shapes (``labels`` not 1-D, ``groups`` of another length), fractions out of
        range or summing to >= 1, or too few groups for the requested parts.
    TypeError
        Non-integer labels or non-numeric fractions.

    Notes
    -----
    Paper 01 §4.1 (patient/lesion-level splits). When every group carries one label the
    split is computed per class (see the module docstring), otherwise with
    :class:`sklearn.model_selection.StratifiedGroupKFold`.

    Examples
    --------
    >>> s = grouped_split([0, 0, 0, 0, 1, 1, 1, 1], groups=[0, 0, 1, 2, 3, 3, 4, 5], val=0.25, test=0.25)
    >>> sorted(np.concatenate(list(s.values())).tolist()) == list(range(8))
    True
    """
    y = _as_labels(labels)
    val = _check_fraction(val, "val")
    test = _check_fraction(test, "test")
    if val + test >= 1.0:
        raise ValueError(f"val + test must be < 1 (something must remain for training), got {val} + {test}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if groups is None:
        g_inv = np.arange(y.size)
    else:
        g = np.asarray(groups.detach().cpu().numpy() if hasattr(groups, "detach") else groups)
        if g.shape != y.shape:
            raise ValueError(f"groups must have the shape of labels {y.shape}, got {g.shape}")
        _, g_inv = np.unique(g, return_inverse=True)
        g_inv = g_inv.reshape(-1)
    n_groups = int(g_inv.max()) + 1
    if _pure_groups(y, g_inv, n_groups):
        fracs = np.array([1.0 - val - test, val, test])
        split_id = _deal_pure(y, g_inv, fracs, np.random.default_rng(seed))
    else:
        split_id = np.zeros(y.size, dtype=np.int64)
        if test > 0:
            split_id[_carve(y, g_inv, test, seed)] = 2
        rest = np.flatnonzero(split_id == 0)
        if val > 0:
            if np.unique(g_inv[rest]).size < 2:
                raise ValueError("too few groups left after the test split to carve a validation split")
            sub = _carve(y[rest], g_inv[rest], val / (1.0 - test), seed + 1)
            split_id[rest[sub]] = 1
    return {name: np.flatnonzero(split_id == i).astype(np.int64) for i, name in enumerate(SPLITS)}


def official_split(official: Any, val: float = 0.1, seed: int = 0) -> dict[str, np.ndarray]:
    """A dataset's own train/test split (``ArrayDataset.official_split``), ``val`` of train held out at random.

    ``hierviz htc``'s split (Paper 05 runs): a ``"val"`` entry of ``official`` stays val;
    without any, a seeded random ``val`` fraction of the ``"train"`` rows becomes val.

    Parameters
    ----------
    official : array-like of str, shape (N,)
        ``"train"``, ``"val"`` or ``"test"`` per sample.
    val : float, default 0.1
        In [0, 1).
    seed : int, default 0

    Returns
    -------
    dict[str, numpy.ndarray]
        ``"train"``, ``"val"``, ``"test"``: sorted int64 indices.

    Raises
    ------
    ValueError
        Values other than train/val/test, or ``val`` outside [0, 1).

    Examples
    --------
    >>> sp = official_split(["train"] * 8 + ["test"] * 2, val=0.25)
    >>> [len(sp[k]) for k in ("train", "val", "test")], sp["test"].tolist()
    ([6, 2, 2], [8, 9])
    """
    o = np.asarray(official).astype(str)
    bad = sorted(set(o.tolist()) - {"train", "val", "test"})
    if bad:
        raise ValueError(f"official split values must be 'train'/'val'/'test', got {bad}")
    val = _check_fraction(val, "val")
    train = np.flatnonzero(o == "train")
    held = np.flatnonzero(o == "val")
    if not len(held) and val > 0 and len(train):
        held = np.sort(np.random.default_rng(seed).choice(train, size=int(round(val * len(train))), replace=False))
        train = np.setdiff1d(train, held)
    return {"train": train.astype(np.int64), "val": held.astype(np.int64), "test": np.flatnonzero(o == "test")}


def check_split(splits: dict[str, np.ndarray], n: int, groups: Any = None) -> None:
    """Assert that ``splits`` partitions ``range(n)`` and that no group crosses splits.

    Parameters
    ----------
    splits : dict[str, numpy.ndarray]
        Output of :func:`grouped_split` (any number of named index arrays).
    n : int
        Number of samples.
    groups : array-like, shape (n,), optional
        Group id per sample.

    Raises
    ------
    ValueError
        An index out of range, used twice, or missing; or a group found in two splits
        (the message names up to five such groups and their splits).
    """
    all_idx = np.concatenate([np.asarray(v, dtype=np.int64) for v in splits.values()]) if splits else np.array([], int)
    if all_idx.size and (all_idx.min() < 0 or all_idx.max() >= n):
        raise ValueError(f"splits hold indices outside 0..{n - 1}")
    counts = np.bincount(all_idx, minlength=n)
    if (counts > 1).any():
        raise ValueError(f"splits overlap: {int((counts > 1).sum())} indices are in more than one split")
    if (counts == 0).any():
        raise ValueError(f"splits miss {int((counts == 0).sum())} of the {n} indices")
    if groups is None:
        return
    g = np.asarray(groups)
    seen: dict[Any, str] = {}
    bad: list[str] = []
    for name, idx in splits.items():
        for grp in np.unique(g[np.asarray(idx, dtype=np.int64)]):
            key = grp.item() if hasattr(grp, "item") else grp
            if key in seen and seen[key] != name:
                bad.append(f"{key!r} in {seen[key]!r} and {name!r}")
            seen.setdefault(key, name)
    if bad:
        raise ValueError(f"{len(bad)} groups cross splits, e.g. " + "; ".join(bad[:5]))
