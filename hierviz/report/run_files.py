"""Reading the files of a run folder, naming the file in every error.

The one reader of a run folder's ``config.json``, ``result.json``, ``compare.json``,
``tree.json`` and ``embeddings.npz``. It lives in the report layer so that the report (which reads
run records, never the code that made them) and :mod:`hierviz.experiments` share it;
:func:`hierviz.experiments.records.read_run_file` raises the same failures as
:class:`hierviz.experiments.ConfigError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RECORD_KEYS", "RunFileError", "read_run_file", "require_keys"]

#: Keys every ``result.json`` run record must have (the report, tables and ``compare`` read them).
RECORD_KEYS = ("name", "method", "geometry", "seed", "metrics")

_RUN_FILE_FIX = "delete the run folder and rerun"


class RunFileError(ValueError):
    """A run-folder file that is missing, unreadable or lacks a key; the message names the file."""


def read_run_file(path: str | os.PathLike, *, required: Sequence[str] = (), what: str = "") -> Any:
    """Read one file of a run folder, naming the file in every error.

    Parameters
    ----------
    path : str or Path
        The file; ``.npz`` files are read as arrays, anything else as a JSON object.
    required : sequence of str
        Keys (JSON) or arrays (npz) that must be present.
    what : str
        What the file is, for the message (default: from the name).

    Returns
    -------
    dict
        The JSON object, or ``{name: array}`` for an npz (loaded, file closed).

    Raises
    ------
    RunFileError
        Missing/unreadable file, invalid JSON, not an object, missing keys: one line naming
        the file and the fix, never a bare ``KeyError``/``JSONDecodeError``/``BadZipFile``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "result.json"
    >>> _ = p.write_text("{}")
    >>> read_run_file(p, required=RECORD_KEYS)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hierviz.report.run_files.RunFileError: .../result.json: run record without key 'name' ...
    """
    path = Path(path)
    what = what or ("run record" if path.name == "result.json" else path.name)
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as f:
                obj = {k: f[k] for k in f.files}
        else:
            obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFileError(f"{path}: {what} not found; {_RUN_FILE_FIX}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunFileError(f"{path}: not a readable JSON {what} ({exc}); {_RUN_FILE_FIX}") from None
    except (OSError, ValueError, EOFError) as exc:  # permissions, a directory, a corrupt/truncated npz
        raise RunFileError(f"{path}: cannot read the {what} ({type(exc).__name__}: {exc}); {_RUN_FILE_FIX}") from None
    except Exception as exc:  # zipfile.BadZipFile and friends from a damaged npz
        raise RunFileError(f"{path}: cannot read the {what} ({type(exc).__name__}: {exc}); {_RUN_FILE_FIX}") from None
    if not isinstance(obj, dict):
        raise RunFileError(f"{path}: {what} must be a JSON object, got {type(obj).__name__}; {_RUN_FILE_FIX}")
    return require_keys(path, obj, required, what)


def require_keys(path: str | os.PathLike, obj: dict, required: Sequence[str], what: str) -> dict:
    """``obj`` (read from ``path`` by :func:`read_run_file`) if it has every key of ``required``.

    Raises
    ------
    RunFileError
        A missing key, naming the file, the first missing key and the fix.
    """
    missing = [k for k in required if k not in obj]
    if missing:
        more = f" (and {', '.join(repr(k) for k in missing[1:])})" if len(missing) > 1 else ""
        raise RunFileError(f"{path}: {what} without key {missing[0]!r}{more}; {_RUN_FILE_FIX}")
    return obj
