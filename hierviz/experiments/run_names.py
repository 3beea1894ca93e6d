"""Run-folder names: ``<method>-<geometry>-s<seed>``, each part a safe path component.

:func:`safe_name` is the single sanitiser; :func:`check_run_names` refuses, at config time, two
selected methods (or geometries) whose folder names would be the same, so no run overwrites
another's folder. Built-in names keep the folders they always had (``hwc+lam`` → ``hwc_lam``),
so old run folders still resume.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["safe_name", "run_name", "check_run_names"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(part: Any) -> str:
    """One path component from a user-supplied name: the single sanitiser of run-folder names.

    Every character outside ``A-Z a-z 0-9 . _ -`` (``/``, ``\\``, ``+``, spaces, ``:``, NUL …)
    becomes ``_`` and a leading ``.`` gets a ``_`` in front, so a method registered as
    ``../../evil`` (through ``--import``) names a folder *inside* ``--out/runs``, never a path
    outside it, and no run folder is hidden or ``..``.

    Examples
    --------
    >>> safe_name("../../evil"), safe_name("hwc+lam"), safe_name("")
    ('_.._.._evil', 'hwc_lam', '_')
    """
    text = _UNSAFE.sub("_", str(part))
    return "_" + text if text.startswith(".") or not text else text


def run_name(method: str, geometry: str, seed: int) -> str:
    """Folder name of a run: ``hwc_lam-poincare-s0`` (each part through :func:`safe_name`).

    Examples
    --------
    >>> run_name("hwc+lam", "poincare", 0)
    'hwc_lam-poincare-s0'
    >>> run_name("../../evil", "poincare", 0)
    '_.._.._evil-poincare-s0'
    """
    return f"{safe_name(method)}-{safe_name(geometry)}-s{safe_name(seed)}"


def check_run_names(methods: Sequence[str], geometries: Sequence[str]) -> None:
    """Raise ValueError if two (method, geometry) pairs would share one run folder.

    :func:`safe_name` maps every unsafe character to ``_``, so ``hwc+lam`` and a user's
    ``hwc_lam`` (or ``a-b`` × ``c`` and ``a`` × ``b-c``) would name the same folder: one run
    would overwrite the other, ``report`` would rebuild one row and ``--resume`` would blame
    "different settings".

    Parameters
    ----------
    methods, geometries : sequence of str
        The registered names a comparison runs.

    Raises
    ------
    ValueError
        Naming both methods (or pairs), the shared folder and the fix.

    Examples
    --------
    >>> check_run_names(["hwc+lam", "supcon"], ["euclidean", "poincare"])
    >>> check_run_names(["hwc+lam", "hwc_lam"], ["euclidean"])
    Traceback (most recent call last):
    ...
    ValueError: methods: 'hwc+lam' and 'hwc_lam' would share the run folder 'hwc_lam-euclidean-s0' (folder names keep only A-Z a-z 0-9 . _ -); register one of them under another name
    """
    seen: dict[str, tuple[str, str]] = {}
    for m in methods:
        for g in geometries:
            folder = run_name(m, g, 0)
            if folder in seen:
                m0, g0 = seen[folder]
                if g0 == g:
                    what = f"methods: {m0!r} and {m!r}"
                elif m0 == m:
                    what = f"geometries: {g0!r} and {g!r}"
                else:
                    what = f"methods × geometries: {m0!r} · {g0!r} and {m!r} · {g!r}"
                raise ValueError(
                    f"{what} would share the run folder {folder!r} (folder names keep only A-Z a-z 0-9 . _ -); "
                    "register one of them under another name"
                )
            seen[folder] = (m, g)
