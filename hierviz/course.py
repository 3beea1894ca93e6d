"""The course notebooks' size convention: one helper every notebook calls.

Every notebook in ``notebooks/`` opens with a papermill ``parameters`` cell holding

.. code-block:: python

    SMOKE = False   # True: seconds on a CPU (the tests run this)
    SIZE = "auto"   # "smoke" | "medium" | "full" | "auto"

and resolves the two with :func:`resolve_size`. The three sizes:

``"smoke"``
    tiny data and one epoch; well under a minute on a CPU (``tests/test_notebooks.py``).
``"medium"``
    a CPU in at most 15 minutes per notebook (run times in ``docs/course.md``).
``"full"``
    the sizes the prose discusses; meant for a GPU.

``"auto"`` picks ``"full"`` when CUDA is available and ``"medium"`` otherwise, so "Run All"
at the default parameters never trains for hours on a laptop.
"""

from __future__ import annotations

from typing import Any

SIZES = ("smoke", "medium", "full")
"""The concrete sizes :func:`resolve_size` returns."""


def resolve_size(SMOKE: bool = False, SIZE: str = "auto", *, cuda: bool | None = None) -> str:  # noqa: N803
    """Resolve a notebook's ``SMOKE`` / ``SIZE`` parameters to one concrete size.

    Parameters
    ----------
    SMOKE : bool, default False
        The notebooks' historic smoke switch; ``True`` forces ``"smoke"`` whatever ``SIZE`` says
        (``papermill -p SMOKE True`` keeps working).
    SIZE : {"auto", "smoke", "medium", "full"}, default "auto"
        The requested size, case-insensitive. ``"auto"`` means ``"full"`` on CUDA and ``"medium"``
        on a CPU.
    cuda : bool, optional
        Whether a CUDA device is available; ``None`` asks ``torch.cuda.is_available()``. Given
        explicitly by tests and by callers that already know.

    Returns
    -------
    str
        One of :data:`SIZES`: ``"smoke"``, ``"medium"`` or ``"full"``.

    Raises
    ------
    ValueError
        If ``SIZE`` is not one of the four names, or ``SMOKE`` is not a bool.

    Examples
    --------
    >>> resolve_size(True, "full")
    'smoke'
    >>> resolve_size(False, "Medium")
    'medium'
    >>> resolve_size(False, "auto", cuda=False), resolve_size(False, "auto", cuda=True)
    ('medium', 'full')
    """
    if not isinstance(SMOKE, bool):
        raise ValueError(f"SMOKE must be True or False, got {SMOKE!r}")
    if not isinstance(SIZE, str) or SIZE.lower() not in (*SIZES, "auto"):
        raise ValueError(f"SIZE must be one of 'auto', 'smoke', 'medium', 'full'; got {SIZE!r}")
    if SMOKE:
        return "smoke"
    size = SIZE.lower()
    if size != "auto":
        return size
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    return "full" if cuda else "medium"


def by_size(size: str, smoke: Any, medium: Any, full: Any) -> Any:
    """Pick the value for a resolved size: a notebook's one-line size table.

    Parameters
    ----------
    size : {"smoke", "medium", "full"}
        A size returned by :func:`resolve_size`.
    smoke, medium, full : Any
        The value at each size.

    Returns
    -------
    Any
        The argument named by ``size``.

    Raises
    ------
    ValueError
        If ``size`` is not one of :data:`SIZES` (``"auto"`` must be resolved first).

    Examples
    --------
    >>> EPOCHS = by_size("medium", 1, 5, 50)
    >>> EPOCHS
    5
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES} (resolve 'auto' with resolve_size first), got {size!r}")
    return {"smoke": smoke, "medium": medium, "full": full}[size]


__all__ = ["SIZES", "by_size", "resolve_size"]
