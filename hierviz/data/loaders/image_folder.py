"""Image folders with one sub-folder per class (torchvision ``ImageFolder`` layout).

``load_dataset("my_images/")`` reads every image below each class folder, converts it to
RGB, centre-crops it to a square and resizes it (Pillow bilinear, antialiased). Pillow is
imported on first use.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import numpy as np

from hierviz.data.base import ArrayDataset, _check_size, _square_resize

__all__ = ["IMAGE_EXTENSIONS", "load_image_folder"]

#: File suffixes read as images (case-insensitive).
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif", ".webp", ".ppm", ".pgm")

_FOLDER_FIX = "put the images in one sub-folder per class (e.g. root/cat/1.png, root/dog/2.jpg)"


def _image_files(folder: Path) -> list[Path]:
    return sorted(
        f for f in folder.rglob("*")
        if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS and not f.name.startswith(".")
    )  # fmt: skip


def load_image_folder(path: str | PathLike, image_size: int = 64, *, name: str | None = None) -> ArrayDataset:
    """Load an image folder with one sub-folder per class.

    Parameters
    ----------
    path : str or PathLike
        Folder whose sub-folders (sorted by name; hidden ones skipped) are the classes;
        images anywhere below a class folder belong to it (extensions
        ``.png .jpg .jpeg .bmp .tif .tiff .gif .webp .ppm .pgm``, case-insensitive).
    image_size : int, default 64
        Every image is converted to RGB, centre-cropped to a square and resized to
        ``image_size x image_size`` (Pillow bilinear, antialiased).
    name : str, optional
        Dataset name; default the folder name.

    Returns
    -------
    ArrayDataset
        ``classes`` = sub-folder names, ``groups=None``, ``ids`` = paths relative to ``path``.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a folder.
    ValueError
        One line naming the folder or file and the fix: no class sub-folders, a class
        folder without images (the first one is named), or an unreadable image (the first
        bad file is named).

    Examples
    --------
    >>> import numpy as np, tempfile, pathlib
    >>> from PIL import Image
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for c in ("cat", "dog"):
    ...     (root / c).mkdir()
    ...     Image.fromarray(np.zeros((10, 12, 3), np.uint8)).save(root / c / "1.png")
    >>> ds = load_image_folder(root, image_size=8)
    >>> ds.classes, ds.images.shape, ds.ids.tolist()
    (['cat', 'dog'], (2, 8, 8, 3), ['cat/1.png', 'dog/1.png'])
    """
    from PIL import Image  # heavy: Pillow, imported when a folder is read

    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder (expected an image folder with one sub-folder per class)")
    size = _check_size(image_size)
    class_dirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not class_dirs:
        loose = [f for f in root.iterdir() if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS]
        found = f"; found {len(loose)} images directly in it" if loose else ""
        raise ValueError(
            f"{root}: no class sub-folders (expected one sub-folder of images per class){found}; {_FOLDER_FIX}"
        )
    images, labels, ids = [], [], []
    for c, d in enumerate(class_dirs):
        files = _image_files(d)
        if not files:
            raise ValueError(
                f"{root}: class folder {d.name!r} holds no images ({', '.join(IMAGE_EXTENSIONS)}); "
                "add images to it or remove the folder"
            )
        for f in files:
            try:
                with Image.open(f) as img:
                    images.append(_square_resize(img, size))
            except MemoryError:
                raise
            except Exception as e:  # UnidentifiedImageError, OSError (truncated), SyntaxError (broken PNG) ...
                reason = " ".join(str(e).split()) or type(e).__name__
                raise ValueError(
                    f"{f}: cannot read image ({reason}); delete or re-save this file (the first unreadable one)"
                ) from None
            labels.append(c)
            ids.append(str(f.relative_to(root)))
    return ArrayDataset(
        images=np.stack(images),
        labels=np.asarray(labels, dtype=np.int64),
        classes=[d.name for d in class_dirs],
        groups=None,
        name=name or root.name,
        citation="",
        licence="",
        ids=np.asarray(ids),
    )
