"""Shared helpers for the ``data_scripts``: checksum-verified, resume-safe downloads.

Nothing here runs at import time and nothing touches the network unless
:func:`download` is called. The scripts in this folder import it as ``_common``
(``python data_scripts/<script>.py`` puts this folder on ``sys.path``).

Functions
---------
default_out_dir
    Where a script writes by default: ``$HIERVIZ_DATA``, else ``../shared/data`` beside
    the checkout -- the two folders :func:`hierviz.data.find_data_file` searches.
file_digest, verify_file
    Hash a file in chunks and compare with the expected sha256 / md5.
download
    ``urllib`` download into ``<dest>.part`` (resumed with an HTTP ``Range`` request
    when a partial file is left over), verified, then atomically renamed to ``dest``.
extract
    Unpack a zip or tar archive, refusing members that would land outside the target.
save_npz
    Byte-reproducible compressed ``.npz`` (fixed zip timestamps, fixed key order).
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

CHUNK = 1 << 20  # 1 MiB read/hash chunks
USER_AGENT = "hierviz-data-scripts/0.1 (+https://github.com/; urllib)"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed member timestamp -> byte-identical archives


class ChecksumError(ValueError):
    """A file's digest differs from the expected one (message names file, expected, got)."""


class DownloadError(RuntimeError):
    """The URL could not be fetched (message names the URL, the reason and what to do)."""


def repo_root() -> Path:
    """The checkout this script lives in (the parent of ``data_scripts/``).

    Returns
    -------
    pathlib.Path
    """
    return Path(__file__).resolve().parents[1]


def default_out_dir() -> Path:
    """Default output folder: ``$HIERVIZ_DATA`` if set, else ``<checkout>/../shared/data``.

    These are the folders :func:`hierviz.data.find_data_file` searches, in that order,
    so a file written here is found without further configuration.

    Returns
    -------
    pathlib.Path
        Not created here.
    """
    env = os.environ.get("HIERVIZ_DATA")
    if env:
        return Path(env).expanduser()
    return repo_root().parent / "shared" / "data"


def search_dirs() -> list[Path]:
    """Folders searched for input data, in order: ``$HIERVIZ_DATA``, ``<checkout>/../shared/data``.

    Returns
    -------
    list of pathlib.Path
        Existing or not.
    """
    env = os.environ.get("HIERVIZ_DATA")
    dirs = [Path(env).expanduser()] if env else []
    dirs.append(repo_root().parent / "shared" / "data")
    return dirs


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB chunks.

    Parameters
    ----------
    path : str or PathLike
        The file.
    algorithm : str, default "sha256"
        Any :func:`hashlib.new` name ("sha256", "md5", ...).

    Returns
    -------
    str
        Lower-case hex digest.

    Raises
    ------
    ValueError
        Unknown ``algorithm``.
    FileNotFoundError
        ``path`` does not exist.
    """
    try:
        h = hashlib.new(algorithm)
    except ValueError as e:
        raise ValueError(f"algorithm: unknown hash {algorithm!r} ({e})") from None
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _expected(sha256: str | None, md5: str | None) -> list[tuple[str, str]]:
    out = []
    for algo, value, length in (("sha256", sha256, 64), ("md5", md5, 32)):
        if value is None:
            continue
        if not isinstance(value, str) or len(value) != length or any(c not in "0123456789abcdefABCDEF" for c in value):
            raise ValueError(f"{algo}: expected a {length}-character hex digest, got {value!r}")
        out.append((algo, value.lower()))
    return out


def verify_file(path: str | os.PathLike, *, sha256: str | None = None, md5: str | None = None) -> None:
    """Check a file against an expected sha256 and/or md5 digest.

    Parameters
    ----------
    path : str or PathLike
        The file to check.
    sha256, md5 : str, optional
        Expected hex digests; at least one is required. Both are checked when both are given.

    Raises
    ------
    ValueError
        Neither digest given, or a digest that is not hex of the right length.
    ChecksumError
        A digest differs; the message names the file, the algorithm, expected and actual value.
    FileNotFoundError
        ``path`` does not exist.
    """
    checks = _expected(sha256, md5)
    if not checks:
        raise ValueError("verify_file needs sha256= or md5= (no checksum given)")
    for algo, want in checks:
        got = file_digest(path, algo)
        if got != want:
            raise ChecksumError(f"{path}: {algo} mismatch: expected {want}, got {got}")


def _progress(total: int | None, initial: int, desc: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a hierviz dependency, but the scripts must not need it
        return None
    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc=desc, file=sys.stderr)


def _status(resp: Any) -> int | None:
    code = getattr(resp, "status", None)
    if code is None and hasattr(resp, "getcode"):
        code = resp.getcode()
    return code


def download(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    md5: str | None = None,
    opener: Callable[..., Any] | None = None,
    timeout: float = 60.0,
    chunk_size: int = CHUNK,
    progress: bool = True,
) -> Path:
    """Download ``url`` to ``dest`` and verify its checksum; resume a left-over partial file.

    The bytes go to ``<dest>.part``; only a file whose digest matches is renamed to
    ``dest`` (``os.replace``, atomic on one file system), so ``dest`` is never a
    truncated or corrupt file. If ``<dest>.part`` exists from an interrupted run, the
    download asks for the rest with ``Range: bytes=<size>-``; a server that answers
    with the whole file (status 200, or a ``file://`` URL) restarts it. A resumed file
    with a wrong digest is fetched once more from scratch before giving up.

    Parameters
    ----------
    url : str
        ``https://``, ``http://`` or ``file://`` URL.
    dest : str or PathLike
        Final path; its folder is created.
    sha256, md5 : str, optional
        Expected digest(s); at least one is required (downloads are always verified).
    opener : callable, optional
        ``opener(request, timeout=...) -> response`` with ``read(n)``, ``headers`` and
        ``status``/``getcode()``; default :func:`urllib.request.urlopen` (tests pass a fake).
    timeout : float, default 60
        Socket timeout in seconds.
    chunk_size : int, default 1 MiB
        Bytes per read.
    progress : bool, default True
        Show a tqdm progress bar on stderr.

    Returns
    -------
    pathlib.Path
        ``dest``. If ``dest`` already exists with the right digest nothing is fetched.

    Raises
    ------
    ValueError
        No checksum given, or a malformed one.
    DownloadError
        The URL cannot be reached or answers with an HTTP error (message names the URL
        and the reason, and says where to put a file fetched by hand).
    ChecksumError
        The downloaded bytes do not match (the partial file is deleted).
    """
    checks = _expected(sha256, md5)
    if not checks:
        raise ValueError(f"download({url!r}): pass sha256= or md5=; unverified downloads are refused")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        try:
            verify_file(dest, sha256=sha256, md5=md5)
            print(f"{dest}: present, checksum OK", file=sys.stderr)
            return dest
        except ChecksumError as e:
            print(f"{e}; downloading it again", file=sys.stderr)
            dest.unlink()
    opener = opener or urllib.request.urlopen
    part = dest.with_name(dest.name + ".part")
    for attempt in range(2):
        start = part.stat().st_size if part.exists() else 0
        _fetch(url, part, start, opener, timeout, chunk_size, progress, dest)
        try:
            verify_file(part, sha256=sha256, md5=md5)
        except ChecksumError as e:
            part.unlink(missing_ok=True)
            if start and attempt == 0:
                print(f"{e}; the resumed file is bad, downloading from scratch", file=sys.stderr)
                continue
            raise ChecksumError(
                f"{url}: downloaded file is corrupt or not the expected version ({e}); "
                "the partial file was deleted, run the script again"
            ) from None
        os.replace(part, dest)
        return dest
    raise AssertionError("unreachable")  # pragma: no cover


def _fetch(
    url: str,
    part: Path,
    start: int,
    opener: Callable[..., Any],
    timeout: float,
    chunk_size: int,
    progress: bool,
    dest: Path,
) -> None:
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if start:
        req.add_header("Range", f"bytes={start}-")
    hint = f"check the connection, or fetch it by hand and save it as {dest}"
    try:
        resp = opener(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and start:  # range beyond the end: the .part is already complete
            return
        raise DownloadError(f"could not download {url}: HTTP {e.code} {e.reason}; {hint}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise DownloadError(f"could not reach {url}: {reason}; {hint}") from None
    with resp:
        resumed = bool(start) and _status(resp) == 206
        length = resp.headers.get("Content-Length") if getattr(resp, "headers", None) is not None else None
        total = int(length) + (start if resumed else 0) if length is not None else None
        bar = _progress(total, start if resumed else 0, dest.name, progress)
        try:
            with open(part, "ab" if resumed else "wb") as f:
                while True:
                    try:
                        block = resp.read(chunk_size)
                    except OSError as e:
                        raise DownloadError(
                            f"connection to {url} broke after {f.tell()} bytes ({e}); "
                            f"run the script again to resume from {part}"
                        ) from None
                    if not block:
                        break
                    f.write(block)
                    if bar is not None:
                        bar.update(len(block))
        finally:
            if bar is not None:
                bar.close()


def _safe_target(root: Path, name: str) -> Path:
    target = (root / name).resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"archive member {name!r} would be written outside {root}; refusing to extract")
    return target


def extract(archive: str | os.PathLike, dest_dir: str | os.PathLike) -> list[Path]:
    """Unpack a ``.zip`` or ``.tar[.gz|.bz2|.xz]`` archive into ``dest_dir``.

    Parameters
    ----------
    archive : str or PathLike
        The archive (type detected from content, not the name).
    dest_dir : str or PathLike
        Target folder (created).

    Returns
    -------
    list of pathlib.Path
        Paths of the extracted regular files, in archive order.

    Raises
    ------
    ValueError
        Not a zip/tar archive, or a member with an absolute path / ``..`` / link that
        would escape ``dest_dir`` (nothing is written in that case).
    """
    archive, root = Path(archive), Path(dest_dir)
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for info in infos:
                _safe_target(root, info.filename)
            zf.extractall(root)
            return [root / i.filename for i in infos if not i.is_dir()]
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            members = tf.getmembers()
            for m in members:
                _safe_target(root, m.name)
                if m.issym() or m.islnk():
                    _safe_target(root, os.path.join(os.path.dirname(m.name), m.linkname))
                if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
                    raise ValueError(f"archive member {m.name!r} is a special file; refusing to extract")
            if hasattr(tarfile, "data_filter"):
                tf.extractall(root, filter="data")
            else:  # pragma: no cover - Python < 3.11.4; members were checked above
                tf.extractall(root)
            return [root / m.name for m in members if m.isfile()]
    raise ValueError(f"archive: {archive} is neither a zip nor a tar file")


def save_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray], *, level: int = 9) -> Path:
    """Write a compressed ``.npz`` whose bytes depend only on the arrays (reproducible).

    ``np.savez_compressed`` stamps each member with the current time, so two runs
    differ byte-wise; here every member gets the fixed 1980-01-01 timestamp and keys are
    written in the given order. The file is written to ``<path>.tmp`` and renamed.
    ``np.load`` reads it like any other ``.npz``.

    Parameters
    ----------
    path : str or PathLike
        Output file (``.npz``); its folder must exist.
    arrays : Mapping[str, numpy.ndarray]
        Key -> array; object arrays are refused (they would need pickle).
    level : int, default 9
        zlib compression level 0..9.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        An object-dtype array, or ``level`` outside 0..9.
    """
    if not 0 <= int(level) <= 9:
        raise ValueError(f"level must be in 0..9, got {level}")
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=int(level)) as zf:
        for key, arr in arrays.items():
            arr = np.asanyarray(arr)
            if arr.dtype == object:
                raise ValueError(f"arrays[{key!r}] has dtype object; store strings as a fixed-width str array")
            info = zipfile.ZipInfo(f"{key}.npy", date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr, allow_pickle=False)
            zf.writestr(info, buf.getvalue(), compresslevel=int(level))
    os.replace(tmp, path)
    return path
