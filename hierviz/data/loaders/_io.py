"""Reading ``.npz`` files so that every failure is one line naming the file and the fix.

``numpy.load`` reports a bad file in many ways (``zipfile.BadZipFile``, ``zlib.error``,
``EOFError``, ``ValueError`` about pickles, a bare ``ndarray`` for a ``.npy`` file, raw
``bytes`` for a zip member that is not an array ...). :func:`open_npz` turns each into a
``ValueError`` ``"could not read <file>: <what>; re-create it with numpy.savez_compressed(...)"``.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "HAM_CITATION",
    "HAM_CLASSES",
    "HAM_LICENCE",
    "NPZ_FIX",
    "NpzArrays",
    "check_labels",
    "data_error",
    "open_npz",
    "to_rgb",
]

# HAM10000's provenance: here (not in ham10000.py) so that the npz loader can recognise the file
# without importing a loader module that imports it.
HAM_CLASSES = ["nv", "mel", "bkl", "bcc", "akiec", "vasc", "df"]
HAM_CITATION = (
    "Tschandl P, Rosendahl C, Kittler H. The HAM10000 dataset, a large collection of multi-source "
    "dermatoscopic images of common pigmented skin lesions. Sci Data 5:180161 (2018). "
    "doi:10.1038/sdata.2018.161. Data: Harvard Dataverse doi:10.7910/DVN/DBW86T."
)
HAM_LICENCE = "CC BY-NC 4.0 (non-commercial; copyright ViDIR Group, Medical University of Vienna)"

#: The fix named by every "could not read" error.
NPZ_FIX = "re-create it with numpy.savez_compressed(path, images=uint8 (N, H, W, 3), labels=int (N,))"
OBJECT_FIX = (
    "re-create it with numpy.savez_compressed(path, images=..., labels=...) using plain arrays "
    "(strings as numpy.array(names, dtype=str), not dtype=object)"
)


def data_error(path: str | PathLike, what: str, fix: str = NPZ_FIX) -> ValueError:
    """``ValueError("could not read <path>: <what>; <fix>")`` (one line).

    Examples
    --------
    >>> str(data_error("x.npz", "truncated", "re-download it"))
    'could not read x.npz: truncated; re-download it'
    """
    return ValueError(f"could not read {path}: {what}; {fix}")


def _reason(e: BaseException) -> str:
    msg = " ".join(str(e).split()) or type(e).__name__
    if "allow_pickle" in msg or "pickled" in msg:
        return "it holds pickled Python objects, which hierviz never loads"
    return f"{type(e).__name__}: {msg}"


class NpzArrays:
    """The members of an open ``.npz``; reading one turns any failure into a one-line ValueError.

    Parameters
    ----------
    path : pathlib.Path
        The file (for messages).
    npz : numpy.lib.npyio.NpzFile
        The open archive.
    """

    def __init__(self, path: Path, npz: Any) -> None:
        self.path = path
        self._npz = npz
        self.files: list[str] = list(npz.files)

    def __contains__(self, key: object) -> bool:
        return key in self.files

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.files:
            raise data_error(self.path, f"no array {key!r} (has {sorted(self.files)})")
        try:
            arr = self._npz[key]
        except MemoryError:
            raise
        except Exception as e:  # BadZipFile (bad CRC), zlib.error, EOFError, pickle refusal ...
            what = _reason(e)
            if what.startswith("it holds pickled"):
                what = f"array {key!r} holds Python objects (dtype=object, pickled), which hierviz never loads"
            else:
                what = f"array {key!r} is corrupt ({what})"
            raise data_error(self.path, what, OBJECT_FIX if "objects" in what else NPZ_FIX) from None
        if not isinstance(arr, np.ndarray):
            raise data_error(self.path, f"member {key!r} is not a numpy array (got {type(arr).__name__})")
        return arr


class open_npz:  # noqa: N801 (a context manager used like a function)
    """Open an ``.npz`` for reading: ``with open_npz(path) as z: z["images"]``.

    Parameters
    ----------
    path : str or PathLike
        The file; it must exist.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a file.
    ValueError
        ``could not read <path>: ...; re-create it with numpy.savez_compressed(...)`` for random
        bytes, an empty or truncated file, a single ``.npy`` array, a pickle, or (on reading a
        member) a corrupt or object member.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.npz")
    >>> np.savez_compressed(p, images=np.zeros((1, 2, 2, 3), np.uint8), labels=np.zeros(1, int))
    >>> with open_npz(p) as z:
    ...     z.files, z["images"].shape
    (['images', 'labels'], (1, 2, 2, 3))
    >>> _ = open(p, "wb").write(b"junk")
    >>> with open_npz(p) as z:
    ...     pass
    Traceback (most recent call last):
    ...
    ValueError: could not read ...x.npz: not an .npz archive (neither a zip archive nor a .npy array); re-create it with numpy.savez_compressed(path, images=uint8 (N, H, W, 3), labels=int (N,))
    """

    def __init__(self, path: str | PathLike) -> None:
        self.path = Path(path)
        self._npz: Any = None

    def __enter__(self) -> NpzArrays:
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path} does not exist (expected a .npz file)")
        try:
            obj = np.load(self.path, allow_pickle=False)
        except MemoryError:
            raise
        except PermissionError as e:
            raise data_error(self.path, f"permission denied ({e.strerror})", "check the file's permissions") from None
        except EOFError:
            raise data_error(self.path, "the file is empty") from None
        except Exception as e:  # BadZipFile, ValueError (pickle), OSError ...
            with open(self.path, "rb") as fh:
                head = fh.read(2)
            if head[:1] == b"\x80" or head == b"PK":  # a pickle, or a damaged zip: numpy's reason is right
                raise data_error(self.path, f"not an .npz archive ({_reason(e)})") from None
            raise data_error(self.path, "not an .npz archive (neither a zip archive nor a .npy array)") from None
        if isinstance(obj, np.ndarray):
            raise data_error(
                self.path, f"a single .npy array of shape {obj.shape}, not an .npz archive of named arrays"
            )
        self._npz = obj
        return NpzArrays(self.path, obj)

    def __exit__(self, *exc: Any) -> None:
        if self._npz is not None:
            self._npz.close()


def to_rgb(images: np.ndarray, where: str, fix: str = NPZ_FIX) -> np.ndarray:
    """uint8 ``(N, H, W)`` / ``(N, H, W, 1)`` / ``(N, H, W, 3)`` → ``(N, H, W, 3)`` (grey replicated).

    Parameters
    ----------
    images : numpy.ndarray
    where : str
        Prefix of error messages (file and array name).
    fix : str
        Appended to error messages.

    Raises
    ------
    ValueError
        Not uint8, or a shape other than the three above.

    Examples
    --------
    >>> import numpy as np
    >>> to_rgb(np.zeros((2, 4, 4), np.uint8), "x").shape
    (2, 4, 4, 3)
    """
    if images.dtype != np.uint8:
        raise ValueError(
            f"{where}: images must be uint8 (0..255), got dtype {images.dtype}; "
            f"convert with numpy.clip(images, 0, 255).astype(numpy.uint8) and {fix}"
        )
    if images.ndim == 3:
        return np.repeat(images[..., None], 3, axis=-1)
    if images.ndim == 4 and images.shape[-1] == 1:
        return np.repeat(images, 3, axis=-1)
    if images.ndim == 4 and images.shape[-1] == 3:
        return images
    raise ValueError(f"{where}: images must be (N, H, W), (N, H, W, 1) or (N, H, W, 3), got {images.shape}; {fix}")


def check_labels(labels: np.ndarray, n_images: int, where: str, fix: str = NPZ_FIX) -> np.ndarray:
    """Flatten ``(N,)`` / ``(N, 1)`` integer labels; refuse anything else with a one-line ValueError.

    Parameters
    ----------
    labels : numpy.ndarray
    n_images : int
        N, the number of images they must match.
    where : str
        Prefix of error messages (file and array name).

    Returns
    -------
    numpy.ndarray, shape (N,)
        ``labels.reshape(-1)`` (same dtype).

    Examples
    --------
    >>> import numpy as np
    >>> check_labels(np.array([[0], [2]]), 2, "x").tolist()
    [0, 2]
    """
    if labels.ndim == 2 and labels.shape[1] != 1:
        raise ValueError(
            f"{where} has shape {labels.shape}: multi-label data is not supported "
            f"(hierviz needs one leaf label per image); {fix}"
        )
    if labels.ndim > 2:
        raise ValueError(f"{where} must have shape (N,) or (N, 1), got {labels.shape}; {fix}")
    labels = labels.reshape(-1)
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{where} must be integers, got dtype {labels.dtype}; {fix}")
    if labels.shape[0] != n_images:
        raise ValueError(f"{where}: {labels.shape[0]} labels for {n_images} images; {fix}")
    if labels.size and labels.min() < 0:
        raise ValueError(f"{where}: negative label {int(labels.min())}; labels must be 0..C-1; {fix}")
    return labels


#: Most classes a file without class names may imply (its largest label + 1): each gets a
#: ``class_<i>`` name, so a stray label of 2e12 would otherwise build 2e12 names (MemoryError).
MAX_UNNAMED_CLASSES = 100_000


def placeholder_classes(labels: np.ndarray, where: str, fix: str = NPZ_FIX) -> list[str]:
    """``["class_0", ..., "class_{max label}"]`` for labels without names; refuse absurd label values.

    Parameters
    ----------
    labels : numpy.ndarray of int, shape (N,)
        Checked labels (:func:`check_labels`), ``>= 0``.
    where : str
        Prefix of the message (file and array name).

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        The largest label implies more than :data:`MAX_UNNAMED_CLASSES` classes (one line,
        naming the file, the largest label and the fix).

    Examples
    --------
    >>> placeholder_classes(np.array([0, 2]), "x")
    ['class_0', 'class_1', 'class_2']
    """
    if not labels.size:
        return []
    top = int(labels.max())
    if top >= MAX_UNNAMED_CLASSES:
        raise ValueError(
            f"{where} go up to {top} but the file names no classes: that would be {top + 1} classes "
            f"(at most {MAX_UNNAMED_CLASSES} without names); labels must be class indices 0..C-1 "
            f"(re-number them, e.g. np.unique(labels, return_inverse=True)) or add a 'classes' array"
        )
    return [f"class_{i}" for i in range(top + 1)]
