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
        import torch  # heavy: torch (~2 s); hierviz.course stays import-light for a notebook's first cell

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


def paired_ci(a: Any, b: Any, confidence: float = 0.95) -> dict[str, float]:
    r"""Confidence interval of the mean difference ``a - b`` over paired runs (Student's t).

    ``a[i]`` and ``b[i]`` must come from the same seed / fold / split (a *pair*). With
    :math:`\delta_i = a_i - b_i`, :math:`\bar\delta` their mean and :math:`s` their sample standard
    deviation over :math:`n` pairs, the interval is
    :math:`\bar\delta \pm t_{n-1,\,(1+\text{confidence})/2}\; s/\sqrt n`, and ``p`` is the two-sided
    p-value of ``scipy.stats.ttest_rel`` (the paired t-test paper 05 reports, there one-sided).
    For contrast, the same interval computed as if the runs were *unpaired* (Welch's t, what
    "mean ± std of each method" invites) is returned as ``unpaired_low`` / ``unpaired_high``.

    Parameters
    ----------
    a, b : array-like of float, shape (n,)
        The metric of the two methods, one value per pair, ``n >= 2``.
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    dict
        ``mean_diff``, ``low``, ``high``, ``p`` (paired), ``unpaired_low``, ``unpaired_high``, ``n``.

    Raises
    ------
    ValueError
        Different lengths, fewer than 2 pairs, non-finite values, or ``confidence`` outside (0, 1).

    Examples
    --------
    >>> r = paired_ci([0.61, 0.63, 0.60, 0.62], [0.58, 0.61, 0.57, 0.60])
    >>> round(r["mean_diff"], 4), round(r["low"], 4), round(r["high"], 4)
    (0.025, 0.0158, 0.0342)
    >>> r["unpaired_low"] < 0 < r["low"]  # the pairing is what makes the difference clear
    True
    """
    import numpy as np  # heavy: numpy and scipy.stats, imported only when a CI is asked for
    from scipy import stats  # heavy: scipy.stats (hierviz.course imports nothing heavy at its top)

    x = np.asarray(a, dtype=float).ravel()
    y = np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same length (one value per pair), got {x.size} and {y.size}")
    if x.size < 2:
        raise ValueError(f"a and b need at least 2 pairs for a t interval, got {x.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("a and b must be finite numbers; drop the failed runs (of both methods) first")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1), e.g. 0.95, got {confidence!r}")
    d = x - y
    n = d.size
    q = (1.0 + float(confidence)) / 2.0
    half = stats.t.ppf(q, n - 1) * d.std(ddof=1) / np.sqrt(n)
    va, vb = x.var(ddof=1) / n, y.var(ddof=1) / n
    se = np.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (n - 1)) if se > 0 else n - 1
    half_u = stats.t.ppf(q, dof) * se
    p = float(stats.ttest_rel(x, y).pvalue) if d.std(ddof=1) > 0 else (0.0 if d.mean() != 0 else 1.0)
    return {
        "mean_diff": float(d.mean()),
        "low": float(d.mean() - half),
        "high": float(d.mean() + half),
        "p": p,
        "unpaired_low": float(d.mean() - half_u),
        "unpaired_high": float(d.mean() + half_u),
        "n": int(n),
    }


__all__ = ["SIZES", "by_size", "paired_ci", "published_size", "resolve_size"]


def published_size(nb: Any) -> str | None:
    """The size an executed notebook was run at, read from papermill's record of its parameters.

    The docs site must publish medium (or full / GPU) outputs, never SMOKE ones (a reader would take smoke-size noise for results):
    ``docs/scripts/mkdocs_hooks.py`` refuses an executed copy whose size is ``"smoke"``.

    Parameters
    ----------
    nb : dict or nbformat.NotebookNode
        A notebook executed by papermill (``metadata.papermill.parameters`` holds what was
        injected, e.g. ``{"SMOKE": False, "SIZE": "medium"}``).

    Returns
    -------
    str or None
        ``"smoke"``, ``"medium"``, ``"full"``, ``"auto"`` (``SIZE="auto"`` was kept: medium on a CPU,
        full on CUDA, either way not smoke), or ``None`` when papermill did not run it (no record).
        Parameters papermill did not inject keep the notebook's defaults (``SMOKE = False``,
        ``SIZE = "auto"``).

    Raises
    ------
    ValueError
        The recorded ``SMOKE`` / ``SIZE`` are not valid (as :func:`resolve_size`).

    Examples
    --------
    >>> published_size({"metadata": {"papermill": {"parameters": {"SMOKE": True}}}})
    'smoke'
    >>> published_size({"metadata": {"papermill": {"parameters": {"SMOKE": False, "SIZE": "medium"}}}})
    'medium'
    >>> published_size({"metadata": {"papermill": {"parameters": {}}}}), published_size({"metadata": {}})
    ('auto', None)
    """
    pm = (nb.get("metadata") or {}).get("papermill")
    if pm is None:
        return None
    params = pm.get("parameters") or {}
    smoke, size = params.get("SMOKE", False), params.get("SIZE", "auto")
    if isinstance(size, str) and size.lower() == "auto" and smoke is False:
        return "auto"
    return resolve_size(smoke, size, cuda=False)
