#!/usr/bin/env python3
"""Download MedMNIST v2 (28x28, 2-D, single-label) ``.npz`` files, checksum-verified.

Usage::

    python data_scripts/download_medmnist.py breastmnist dermamnist bloodmnist
    python data_scripts/download_medmnist.py --all --out /data/medmnist
    python data_scripts/download_medmnist.py --list

Files come from the MedMNIST v2 Zenodo record (doi:10.5281/zenodo.6496656) and are
checked against the MD5 sums published in MedMNIST's own ``INFO`` table
(``medmnist/info.py``, v2.1.0); BreastMNIST also against a sha256 we computed on the
official file. After download the split sizes are checked against the official ones.
Output: ``<out>/<flag>.npz`` (default ``$HIERVIZ_DATA``, else ``../shared/data``), which
``hierviz.data.load_dataset("<flag>")`` then finds.

Licences: CC BY 4.0, except DermaMNIST (derived from HAM10000: CC BY-NC 4.0).
Cite MedMNIST v2 (Yang et al., Sci Data 10:41, 2023, doi:10.1038/s41597-022-01721-8)
and the source dataset (see ``hierviz.data.MEDMNIST_INFO``).
ChestMNIST (multi-label) and the 3-D sets are not offered: hierviz needs one leaf label
per 2-D image.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ChecksumError, DownloadError, default_out_dir, download  # noqa: E402

RECORD = "https://zenodo.org/record/6496656/files/{flag}.npz?download=1"

#: flag -> (md5 from MedMNIST INFO v2.1.0, sha256 or None, official (train, val, test) sizes)
FILES: dict[str, tuple[str, str | None, tuple[int, int, int]]] = {
    "breastmnist": (
        "750601b1f35ba3300ea97c75c52ff8f6",
        "3a22d2a4625e7dd8903f0f59030e81a3d0c222bece2e5e10927456cb50efdec1",
        (546, 78, 156),
    ),
    "dermamnist": ("0744692d530f8e62ec473284d019b0c7", None, (7007, 1003, 2005)),
    "bloodmnist": ("7053d0359d879ad8a5505303e11de1dc", None, (11959, 1712, 3421)),
    "pathmnist": ("a8b06965200029087d5bd730944a56c1", None, (89996, 10004, 7180)),
    "pneumoniamnist": ("28209eda62fecd6e6a2d98b1501bb15f", None, (4708, 524, 624)),
    "octmnist": ("c68d92d5b585d8d81f7112f81e2d0842", None, (97477, 10832, 1000)),
    "retinamnist": ("bd4c0672f1bba3e3a89f0e4e876791e4", None, (1080, 120, 400)),
    "tissuemnist": ("ebe78ee8b05294063de985d821c1c34b", None, (165466, 23640, 47280)),
    "organamnist": ("866b832ed4eeba67bfb9edee1d5544e6", None, (34581, 6491, 17778)),
    "organcmnist": ("0afa5834fb105f7705a7d93372119a21", None, (13000, 2392, 8268)),
    "organsmnist": ("e5c39f1af030238290b9557d9503af9d", None, (13940, 2452, 8829)),
}


def check_split_sizes(path: Path, sizes: tuple[int, int, int]) -> None:
    """Check a MedMNIST npz has the official train/val/test sizes.

    Parameters
    ----------
    path : Path
        The downloaded file.
    sizes : (int, int, int)
        Expected numbers of train, val and test images.

    Raises
    ------
    ValueError
        Missing keys or different sizes (names the split, expected and found).
    """
    with np.load(path, allow_pickle=False) as z:
        for split, want in zip(("train", "val", "test"), sizes):
            for kind in ("images", "labels"):
                key = f"{split}_{kind}"
                if key not in z.files:
                    raise ValueError(f"{path}: key {key!r} missing (has {sorted(z.files)})")
                got = z[key].shape[0]
                if got != want:
                    raise ValueError(f"{path}: {key} has {got} rows, the official split has {want}")


def fetch(flag: str, out_dir: Path, *, opener: Callable[..., Any] | None = None, progress: bool = True) -> Path:
    """Download and verify one MedMNIST file.

    Parameters
    ----------
    flag : str
        A key of :data:`FILES`.
    out_dir : Path
        Output folder (created).
    opener : callable, optional
        Passed to :func:`_common.download` (tests use a fake).
    progress : bool, default True

    Returns
    -------
    Path
        ``out_dir / f"{flag}.npz"``.

    Raises
    ------
    ValueError
        Unknown flag (lists the valid ones) or wrong split sizes.
    DownloadError, ChecksumError
        See :func:`_common.download`.
    """
    if flag not in FILES:
        raise ValueError(f"unknown MedMNIST flag {flag!r}; valid: {', '.join(FILES)}")
    md5, sha256, sizes = FILES[flag]
    path = download(
        RECORD.format(flag=flag),
        Path(out_dir) / f"{flag}.npz",
        md5=md5,
        sha256=sha256,
        opener=opener,
        progress=progress,
    )
    check_split_sizes(path, sizes)
    return path


def main(argv: list[str] | None = None, *, opener: Callable[..., Any] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("flags", nargs="*", help=f"datasets to fetch: {', '.join(FILES)}")
    ap.add_argument("--all", action="store_true", help="fetch every 2-D single-label MedMNIST set (about 1 GB)")
    ap.add_argument("--list", action="store_true", help="list the available flags and exit")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: $HIERVIZ_DATA or ../shared/data)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    if a.list:
        for flag, (md5, _, sizes) in FILES.items():
            print(f"{flag:15s} train/val/test {sizes[0]}/{sizes[1]}/{sizes[2]}  md5 {md5}")
        return 0
    flags = list(FILES) if a.all else a.flags
    if not flags:
        ap.error("name at least one dataset (or --all / --list)")
    unknown = [f for f in flags if f not in FILES]
    if unknown:
        ap.error(f"unknown dataset(s) {unknown}; valid: {', '.join(FILES)}")
    out = a.out or default_out_dir()
    for flag in flags:
        try:
            path = fetch(flag, out, opener=opener, progress=not a.quiet)
        except (DownloadError, ChecksumError, ValueError) as e:
            print(f"error: {flag}: {e}", file=sys.stderr)
            return 1
        print(f"{flag}: {path} OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
