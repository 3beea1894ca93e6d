#!/usr/bin/env python3
"""Download full-size HAM10000 from Harvard Dataverse and build ``ham10000_<size>.npz``.

Usage::

    python data_scripts/download_ham10000.py --size 64            # -> ham10000_64.npz (what hierviz loads)
    python data_scripts/download_ham10000.py --size 128 --out /data
    python data_scripts/download_ham10000.py --from-dir ~/Downloads/HAM10000 --size 64   # no network

Source: Tschandl P, Rosendahl C, Kittler H, "The HAM10000 dataset, a large collection of
multi-source dermatoscopic images of common pigmented skin lesions", Sci Data 5:180161
(2018), doi:10.1038/sdata.2018.161; data doi:10.7910/DVN/DBW86T. **Licence CC BY-NC 4.0:
non-commercial use only.** The download is about 2.6 GB.

Checksums: Dataverse publishes an MD5 for every file in the dataset's metadata
(``/api/datasets/:persistentId``); the script reads that listing over HTTPS and verifies
each downloaded file against it (resuming interrupted downloads). After building, the
result is checked against the published facts of the dataset: 10,015 images, 7,470
lesions and the class counts nv 6,705, mel 1,113, bkl 1,099, bcc 514, akiec 327,
vasc 142, df 115.

Recipe (same as the shared ``ham10000_64.npz``): each image is converted to RGB,
centre-cropped to its short side and resized to ``size x size`` with Pillow's bilinear
filter (antialiased when shrinking); rows in sorted ``image_id`` order. Keys: ``images``
(N, size, size, 3) uint8, ``label`` (N,) int64, ``dx`` (N,), ``classes`` (7,) =
nv, mel, bkl, bcc, akiec, vasc, df, ``lesion_id`` (N,), ``image_id`` (N,).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import USER_AGENT, ChecksumError, DownloadError, default_out_dir, download, save_npz  # noqa: E402

API = "https://dataverse.harvard.edu/api"
DOI = "doi:10.7910/DVN/DBW86T"
CLASSES = ["nv", "mel", "bkl", "bcc", "akiec", "vasc", "df"]
OFFICIAL_COUNTS = {"nv": 6705, "mel": 1113, "bkl": 1099, "bcc": 514, "akiec": 327, "vasc": 142, "df": 115}
OFFICIAL_LESIONS = 7470
WANTED = ("HAM10000_images_part_1", "HAM10000_images_part_2", "HAM10000_metadata")


def fetch_json(url: str, *, opener: Callable[..., Any] | None = None, timeout: float = 60.0) -> Any:
    """GET a JSON document.

    Raises
    ------
    DownloadError
        Unreachable URL, HTTP error, or a body that is not JSON.
    """
    opener = opener or urllib.request.urlopen
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
    try:
        with opener(req, timeout=timeout) as resp:
            body = resp.read()
    except OSError as e:  # URLError and HTTPError are OSErrors
        raise DownloadError(f"could not fetch {url}: {getattr(e, 'reason', e)}; check the connection") from None
    try:
        return json.loads(body)
    except json.JSONDecodeError as e:
        raise DownloadError(f"{url} did not return JSON ({e})") from None


def select_files(listing: dict, api: str = API) -> list[dict]:
    """Pick the image zips and the metadata table from a Dataverse dataset listing.

    Parameters
    ----------
    listing : dict
        JSON of ``GET {api}/datasets/:persistentId/?persistentId=<doi>``.
    api : str
        API base used to form the download URLs.

    Returns
    -------
    list of dict
        One dict per wanted file with ``filename`` (the name to save under), ``url``,
        ``md5`` and ``size`` (bytes or None).

    Raises
    ------
    ValueError
        Unexpected listing layout, a wanted file missing, or a file without an MD5.
    """
    try:
        files = listing["data"]["latestVersion"]["files"]
    except (KeyError, TypeError):
        raise ValueError("unexpected Dataverse listing: no data.latestVersion.files") from None
    out = []
    for want in WANTED:
        match = [f for f in files if str(f.get("dataFile", {}).get("filename", "")).startswith(want)]
        if not match:
            names = sorted(str(f.get("dataFile", {}).get("filename")) for f in files)
            raise ValueError(f"Dataverse listing has no file starting with {want!r} (files: {names})")
        df = match[0]["dataFile"]
        md5 = df.get("md5") or (
            df.get("checksum", {}).get("value") if df.get("checksum", {}).get("type") == "MD5" else None
        )
        if not md5:
            raise ValueError(f"Dataverse listing gives no MD5 for {df['filename']}; refusing an unverified download")
        original = "originalFileFormat" in df  # ingested tabular file: ask for the original upload
        name = df.get("originalFileName") or df["filename"]
        if original and not name.endswith(".csv") and "metadata" in name:
            name = Path(name).stem + ".csv"
        out.append(
            {
                "filename": name,
                "url": f"{api}/access/datafile/{df['id']}" + ("?format=original" if original else ""),
                "md5": md5,
                "size": df.get("originalFileSize") if original else df.get("filesize"),
            }
        )
    return out


def read_metadata(path: Path) -> list[dict[str, str]]:
    """Rows of ``HAM10000_metadata`` (CSV or tab-separated) with lesion_id, image_id, dx.

    Raises
    ------
    ValueError
        Missing columns or an unknown diagnosis.
    """
    text = path.read_text(encoding="utf-8-sig")
    first = text.splitlines()[0] if text else ""
    reader = csv.DictReader(io.StringIO(text), delimiter="\t" if "\t" in first else ",")
    rows = [{k.strip().strip('"'): (v or "").strip().strip('"') for k, v in r.items() if k} for r in reader]
    need = {"lesion_id", "image_id", "dx"}
    if not rows or not need <= set(rows[0]):
        raise ValueError(f"{path}: needs columns {sorted(need)}, has {sorted(rows[0]) if rows else 'no rows'}")
    bad = sorted({r["dx"] for r in rows} - set(CLASSES))
    if bad:
        raise ValueError(f"{path}: unknown diagnoses {bad}; expected {CLASSES}")
    return rows


def _image_index(sources: Iterable[Path]) -> dict[str, tuple[Path, str | None]]:
    """image_id -> (zip file, member) or (jpg path, None), from zips and/or folders."""
    index: dict[str, tuple[Path, str | None]] = {}
    for src in sources:
        if src.is_dir():
            for f in src.rglob("*.jpg"):
                index[f.stem] = (f, None)
        elif zipfile.is_zipfile(src):
            with zipfile.ZipFile(src) as zf:
                for m in zf.namelist():
                    if m.lower().endswith(".jpg") and not Path(m).name.startswith("."):
                        index[Path(m).stem] = (src, m)
    return index


def _square_resize(img: Any, size: int) -> np.ndarray:
    from PIL import Image

    img = img.convert("RGB")
    w, h = img.size
    s = min(w, h)
    left, top = (w - s) // 2, (h - s) // 2
    return np.asarray(img.crop((left, top, left + s, top + s)).resize((size, size), Image.BILINEAR), dtype=np.uint8)


def build_npz(
    image_sources: Iterable[Path],
    metadata: Path,
    out: Path,
    size: int = 64,
    *,
    expected_counts: dict[str, int] | None = OFFICIAL_COUNTS,
    expected_lesions: int | None = OFFICIAL_LESIONS,
) -> Path:
    """Build the HAM10000 npz from image zips/folders and the metadata table.

    Parameters
    ----------
    image_sources : iterable of Path
        ``HAM10000_images_part_*.zip`` files and/or folders of ``ISIC_*.jpg``.
    metadata : Path
        ``HAM10000_metadata`` (.csv or .tab).
    out : Path
        Output ``.npz``.
    size : int, default 64
        Output side in pixels (8..600).
    expected_counts, expected_lesions : optional
        Published facts checked after building (``None`` skips the check).

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        ``size`` out of range, images listed in the metadata but missing, or counts
        that differ from the published ones.
    """
    from PIL import Image

    if not 8 <= size <= 600:
        raise ValueError(f"size must be in 8..600, got {size}")
    rows = sorted(read_metadata(metadata), key=lambda r: r["image_id"])
    index = _image_index([Path(s) for s in image_sources])
    missing = [r["image_id"] for r in rows if r["image_id"] not in index]
    if missing:
        raise ValueError(f"{len(missing)} images listed in {metadata.name} are missing, e.g. {missing[:5]}")
    images = np.empty((len(rows), size, size, 3), dtype=np.uint8)
    zips: dict[Path, zipfile.ZipFile] = {}
    try:
        for i, r in enumerate(rows):
            src, member = index[r["image_id"]]
            if member is None:
                with Image.open(src) as img:
                    images[i] = _square_resize(img, size)
            else:
                zf = zips.setdefault(src, zipfile.ZipFile(src))
                with Image.open(io.BytesIO(zf.read(member))) as img:
                    images[i] = _square_resize(img, size)
    finally:
        for zf in zips.values():
            zf.close()
    dx = np.asarray([r["dx"] for r in rows])
    arrays = {
        "images": images,
        "label": np.asarray([CLASSES.index(d) for d in dx], dtype=np.int64),
        "dx": dx,
        "classes": np.asarray(CLASSES),
        "lesion_id": np.asarray([r["lesion_id"] for r in rows]),
        "image_id": np.asarray([r["image_id"] for r in rows]),
    }
    counts = {c: int((dx == c).sum()) for c in CLASSES}
    if expected_counts is not None and counts != expected_counts:
        raise ValueError(f"class counts {counts} differ from the published HAM10000 counts {expected_counts}")
    n_les = int(np.unique(arrays["lesion_id"]).size)
    if expected_lesions is not None and n_les != expected_lesions:
        raise ValueError(f"{n_les} lesions, the published HAM10000 has {expected_lesions}")
    out.parent.mkdir(parents=True, exist_ok=True)
    return save_npz(out, arrays)


def download_all(
    work: Path, *, api: str = API, opener: Callable[..., Any] | None = None, progress: bool = True
) -> list[Path]:
    """Download the two image zips and the metadata into ``work``, MD5-verified.

    Returns
    -------
    list of Path
        ``[part_1.zip, part_2.zip, metadata]``.
    """
    listing = fetch_json(f"{api}/datasets/:persistentId/?persistentId={DOI}", opener=opener)
    return [
        download(f["url"], work / f["filename"], md5=f["md5"], opener=opener, progress=progress)
        for f in select_files(listing, api)
    ]


def main(argv: list[str] | None = None, *, opener: Callable[..., Any] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=64, help="output side in pixels (default %(default)s)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: $HIERVIZ_DATA or ../shared/data)")
    ap.add_argument(
        "--work", type=Path, default=None, help="folder for the downloaded zips (default: <out>/ham10000_raw)"
    )
    ap.add_argument(
        "--from-dir", type=Path, default=None, help="use zips/jpgs + metadata already in this folder (no network)"
    )
    ap.add_argument("--api", default=API, help="Dataverse API base (default %(default)s)")
    ap.add_argument(
        "--no-count-check", action="store_true", help="skip the published-count check (for a modified copy)"
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    out_dir = a.out or default_out_dir()
    try:
        if a.from_dir is not None:
            if not a.from_dir.is_dir():
                raise ValueError(f"--from-dir {a.from_dir} is not a folder")
            metas = sorted(p for p in a.from_dir.rglob("HAM10000_metadata*") if p.is_file())
            if not metas:
                raise ValueError(f"no HAM10000_metadata file under {a.from_dir}")
            zips = sorted(a.from_dir.rglob("HAM10000_images_part_*.zip"))
            sources, meta = (zips or [a.from_dir]), metas[0]
        else:
            work = a.work or out_dir / "ham10000_raw"
            *sources, meta = download_all(work, api=a.api, opener=opener, progress=not a.quiet)
        check = not a.no_count_check
        path = build_npz(
            sources,
            meta,
            out_dir / f"ham10000_{a.size}.npz",
            a.size,
            expected_counts=OFFICIAL_COUNTS if check else None,
            expected_lesions=OFFICIAL_LESIONS if check else None,
        )
    except (DownloadError, ChecksumError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {path} (CC BY-NC 4.0: non-commercial use only; cite Tschandl et al. 2018)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
