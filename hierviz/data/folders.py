"""Where hierviz finds data files and keeps what it derives from them.

:func:`data_search_dirs` lists the folders searched for a data file: ``$HIERVIZ_DATA``, then
``../shared/data`` beside the checkout, then the sample folder bundled with the package
(``hierviz/data/sample/``); :func:`hierviz.data.base.find_data_file` walks them. :func:`cache_dir`
is the folder of derived-data caches (``$HIERVIZ_CACHE``). Nothing here downloads anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from os import PathLike
from pathlib import Path

__all__ = ["ENV_VAR", "CACHE_ENV_VAR", "bundled_sample_dir", "data_search_dirs", "cache_dir"]

#: Environment variable naming the data folder searched first.
ENV_VAR = "HIERVIZ_DATA"


def _checkout_data_dir() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def bundled_sample_dir() -> Path:
    """The folder of data bundled inside the package (``hierviz/data/sample/``).

    Returns
    -------
    pathlib.Path
    """
    return Path(__file__).resolve().parent / "sample"


def data_search_dirs(data_dir: str | PathLike | None = None) -> list[Path]:
    """Folders searched for data files, in order.

    Parameters
    ----------
    data_dir : str or PathLike, optional
        If given, only this folder is searched.

    Returns
    -------
    list of pathlib.Path
        ``[data_dir]``, or ``[$HIERVIZ_DATA (if set), <checkout>/../shared/data,
        <package>/data/sample]``.

    Examples
    --------
    >>> data_search_dirs("/tmp/mydata")
    [PosixPath('/tmp/mydata')]
    >>> data_search_dirs()[-1].name
    'sample'
    """
    if data_dir is not None:
        return [Path(data_dir).expanduser()]
    env = os.environ.get(ENV_VAR)
    dirs = [Path(env).expanduser()] if env else []
    dirs.append(_checkout_data_dir())
    dirs.append(bundled_sample_dir())
    return dirs


#: Environment variable naming the folder of derived-data caches (``off`` disables them).
CACHE_ENV_VAR = "HIERVIZ_CACHE"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder where loaders keep what they derive from a data file (e.g. 20 Newsgroups' TF-IDF rows).

    Parameters
    ----------
    environ : mapping, optional
        The environment to read (default ``os.environ``).

    Returns
    -------
    pathlib.Path or None
        ``$HIERVIZ_CACHE`` when set; ``None`` when it is ``off``, ``0``, ``false``, ``no`` or empty
        (no cache); else ``$XDG_CACHE_HOME/hierviz`` or ``~/.cache/hierviz``. The folder may not
        exist yet; a loader that cannot write there works without it.

    Examples
    --------
    >>> cache_dir({"HIERVIZ_CACHE": "off"}) is None
    True
    >>> cache_dir({"HIERVIZ_CACHE": "/data/cache", "XDG_CACHE_HOME": "/x"})
    PosixPath('/data/cache')
    >>> cache_dir({"XDG_CACHE_HOME": "/x"})
    PosixPath('/x/hierviz')
    """
    env = os.environ if environ is None else environ
    value = env.get(CACHE_ENV_VAR)
    if value is not None:
        return None if value.strip().lower() in ("", "0", "off", "false", "no") else Path(value).expanduser()
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "hierviz"
