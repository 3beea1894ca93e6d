"""HAM10000 (Tschandl et al. 2018): the full 64 px file and the sample bundled in the package.

``"ham10000"`` reads ``ham10000_64.npz`` (10,015 dermoscopy images, 7 diagnoses, lesion ids;
``python data_scripts/download_ham10000.py --size 64`` makes it). ``"ham10000-sample"`` is
bundled in ``hierviz/data/sample/`` (2,003 images at 32 px, 1,513 whole lesions; CC BY-NC 4.0,
see its ``NOTICE.md``), so the defaults work with no data folder. Both default to the
``two-step`` tree; paper 01 §4.1 splits by lesion (``groups`` = ``lesion_id``).
"""

from __future__ import annotations

from importlib import resources
from os import PathLike

from hierviz.data.base import ArrayDataset, DatasetInfo, find_data_file, register_dataset
from hierviz.data.loaders._io import HAM_CITATION, HAM_CLASSES, HAM_LICENCE  # defined there; exported here
from hierviz.data.loaders.npz import load_npz

__all__ = ["HAM_CITATION", "HAM_CLASSES", "HAM_LICENCE", "load_ham10000", "load_ham10000_sample"]


SAMPLE_INFO = DatasetInfo(
    "ham10000_sample.npz",
    "bundled",
    "python data_scripts/make_ham10000_sample.py",
    "HAM10000 subset bundled in the package: 2,003 images, 32x32, 1,513 whole lesions, 7 classes",
)
FULL_INFO = DatasetInfo(
    "ham10000_64.npz",
    "npz",
    "python data_scripts/download_ham10000.py --size 64",
    "HAM10000, all 10,015 dermoscopy images at 64x64, 7 diagnoses, lesion ids (paper 01 HAM-10K)",
)


@register_dataset("ham10000-sample", default_tree="two-step", info=SAMPLE_INFO)
def load_ham10000_sample() -> ArrayDataset:
    """The HAM10000 sample bundled in the package (always available).

    Returns
    -------
    ArrayDataset
        2,003 images (32, 32, 3) uint8, 7 classes :data:`HAM_CLASSES`, ``groups`` = lesion ids.

    Raises
    ------
    FileNotFoundError
        The package was installed without its sample (names the rebuild command).

    Examples
    --------
    >>> ds = load_ham10000_sample()
    >>> ds.name, ds.images.shape, ds.classes[:2]
    ('ham10000-sample', (2003, 32, 32, 3), ['nv', 'mel'])
    """
    ref = resources.files("hierviz.data").joinpath("sample", SAMPLE_INFO.filename)
    if not ref.is_file():
        raise FileNotFoundError(
            f"the bundled sample {SAMPLE_INFO.filename!r} is missing from the package "
            f"(hierviz/data/sample/); rebuild it with `{SAMPLE_INFO.fetch}`"
        )
    with resources.as_file(ref) as p:
        ds = load_npz(p, name="ham10000-sample")
    ds.licence = HAM_LICENCE + "; see hierviz/data/sample/NOTICE.md"
    return ds


@register_dataset("ham10000", default_tree="two-step", info=FULL_INFO)
def load_ham10000(data_dir: str | PathLike | None = None, image_size: int | None = None) -> ArrayDataset:
    """HAM10000 from ``ham10000_64.npz`` in the data folder, or ``ham10000_<size>.npz`` for another size.

    Parameters
    ----------
    data_dir : str or PathLike, optional
        Folder searched instead of ``$HIERVIZ_DATA`` / ``../shared/data``.
    image_size : int, optional
        Side in pixels. ``ham10000_<image_size>.npz`` is read when the data folder has it
        (``python data_scripts/download_ham10000.py --size 32`` makes the 32 px file, 27 MB
        beside the 98 MB one); else the 64 px file is resized (Pillow bilinear, antialiased).
        None or 64: the 64 px file.

    Returns
    -------
    ArrayDataset
        10,015 images (S, S, 3) uint8 (S = ``image_size`` or 64), 7 classes, ``groups`` =
        7,470 lesion ids.

    Raises
    ------
    FileNotFoundError
        The 64 px file is missing and no file of the asked size is there (names
        ``python data_scripts/download_ham10000.py --size 64``).
    ValueError
        The file is unreadable or malformed (names the file and the fix); ``image_size`` < 1.
    """
    if image_size is not None and int(image_size) != 64:
        try:
            path = find_data_file(f"ham10000_{int(image_size)}.npz", data_dir)
        except FileNotFoundError:
            path = None
        if path is not None:
            return load_npz(path, name="ham10000").resized(int(image_size))  # resized: a no-op at that size
    ds = load_npz(find_data_file(FULL_INFO.filename, data_dir), name="ham10000")
    return ds if image_size is None else ds.resized(int(image_size))
