"""The committed 20 Newsgroups radius study (``docs/results/radius-20news``) as notebook tables and figures.

Every function takes the folder (``hierviz.results.results_dir() / "radius-20news"`` in a notebook).

The study (``study.py`` in that folder) trains SupCon, HWC and HWC+LAM in Euclidean space, the
Poincaré ball and the Lorentz hyperboloid, 5 seeds each, on the official by-date split, and commits
``results.csv`` (one row per run, the five radius metrics among its columns), ``prototypes.csv``
(every hyperbolic run's node prototype radii on the test split), ``embeddings/`` (seed 0's test
embeddings of the hyperbolic runs, float16) and ``sweep.csv`` (the validation-split runs the
defaults were chosen from, "off" first). Notebook 12 shows them through these functions; each
table reads the radius the one way the course reads it: prototype order only beside the clip
fraction and the spread of the test radii (:func:`hierviz.viz.capstone.radius_reading`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierviz.geometry import get_geometry
from hierviz.viz.capstone import radius_reading

__all__ = [
    "study_folder",
    "radius_study_markdown",
    "sweep_markdown",
    "radius_by_depth_figure",
    "study_disk",
    "study_embeddings",
]

#: The study's radius columns and their labels.
RADIUS_COLUMNS = (
    ("radius_depth_spearman", "Spearman"),
    ("edge_order", "Edge order"),
    ("radius_gap", "Radius gap"),
    ("clip_fraction", "Clip fraction"),
)
_NAMES = {"supcon": "SupCon", "hwc": "HWC", "hwc+lam": "HWC+LAM", "euclidean": "Euclidean", "poincare": "Poincaré",
          "lorentz": "Lorentz"}  # fmt: skip


def study_folder(folder: str | Path, needs: str = "results.csv") -> Path:
    """The study's folder (``results_dir() / "radius-20news"`` in a notebook), checked to hold ``needs``.

    Raises
    ------
    FileNotFoundError
        The folder or the file it needs is missing (the message names both).
    """
    folder = Path(folder)
    if not (folder / needs).is_file():
        raise FileNotFoundError(
            f"folder={str(folder)!r}: no {needs}; the study is committed as docs/results/radius-20news"
        )
    return folder


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _ms(v: Sequence[float], digits: int = 2) -> str:
    x = [a for a in v if math.isfinite(a)]
    if not x:
        return "–"
    if len(x) == 1:  # one seed: no spread to show
        return f"{x[0]:.{digits}f}"
    return f"{np.mean(x):.{digits}f} ± {np.std(x, ddof=1):.{digits}f}"


def _groups(rows: Sequence[dict[str, str]], keys: Sequence[str]) -> dict[tuple, list[dict[str, str]]]:
    out: dict[tuple, list[dict[str, str]]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def _reading_rows(groups: dict[tuple, list[dict[str, str]]], label) -> list[str]:
    lines = []
    for key, runs in groups.items():
        if all(not math.isfinite(_num(r.get("radius_depth_spearman"))) for r in runs):
            continue  # Euclidean: no radius
        col = {c: [_num(r.get(c)) for r in runs] for c in ("hf1", "radius_mean", "radius_std", *dict(RADIUS_COLUMNS))}
        mean, spread, clip = (float(np.nanmean(col[c])) for c in ("radius_mean", "radius_std", "clip_fraction"))
        lines.append(
            f"| {label(key)} | {len(runs)} | {_ms(col['hf1'], 3)} | "
            + " | ".join(_ms(col[c]) for c, _ in RADIUS_COLUMNS)
            + f" | {_ms(col['radius_mean'])} (spread {spread:.2f}) | {radius_reading(mean, spread, clip)} |"
        )
    return lines


def _head(first: str) -> list[str]:
    cols = [first, "Seeds", "HF1", *(lbl for _, lbl in RADIUS_COLUMNS), "Test radius d(0, z)", "Reading"]
    return ["| " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * (len(cols) - 3) + "---|"]


def radius_study_markdown(folder: str | Path) -> str:
    """Per method × hyperbolic geometry of the study: HF1, the radius metrics, the test radius and its reading.

    Means ± sample std over seeds (test split); "Test radius" is the mean over seeds of each run's mean
    geodesic radius d(0, z), with the mean of the runs' spreads; "Reading" is
    :func:`hierviz.viz.capstone.radius_reading` of those means and the clip fraction.

    Returns
    -------
    str
        A caption naming ``docs/results/<name>`` and the Markdown table.
    """
    folder = study_folder(folder)
    name = folder.name
    groups = _groups(_read(folder / "results.csv"), ("method", "geometry"))
    lines = [
        f"**Committed study** `docs/results/{name}` (test split, mean ± sample std over seeds):",
        "",
        *_head("Run"),
    ]
    lines += _reading_rows(groups, lambda k: f"{_NAMES.get(k[0], k[0])} ({_NAMES.get(k[1], k[1])})")
    return "\n".join(lines)


def sweep_markdown(folder: str | Path, labels: Sequence[str] | None = None) -> str:
    """Before and after the defaults: the study's validation-split sweep (``sweep.csv``), one row per setting × method.

    Parameters
    ----------
    labels : sequence of str, optional
        The settings to show, in this order (default: every label, in the file's order; the first,
        ``off``, is the run without depth terms).

    Raises
    ------
    FileNotFoundError
        No ``sweep.csv`` in the folder.
    ValueError
        ``labels`` names a setting the sweep does not hold (the message lists them).
    """
    folder = study_folder(folder, needs="sweep.csv")
    name = folder.name
    path = folder / "sweep.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; the study's sweep is committed beside results.csv")
    rows = _read(path)
    have = list(dict.fromkeys(r["label"] for r in rows))
    labels = list(labels) if labels is not None else have
    unknown = [x for x in labels if x not in have]
    if unknown:
        raise ValueError(f"labels: {unknown} not in {path}; it holds {have}")
    groups = _groups([r for r in rows if r["label"] in labels], ("label", "method", "geometry"))
    groups = dict(sorted(groups.items(), key=lambda kv: labels.index(kv[0][0])))
    lines = [
        f"**The defaults, before and after** (`docs/results/{name}/sweep.csv`, validation split):",
        "",
        *_head("Setting"),
    ]
    lines += _reading_rows(groups, lambda k: f"{k[0]}: {_NAMES.get(k[1], k[1])} ({_NAMES.get(k[2], k[2])})")
    return "\n".join(lines)


def radius_by_depth_figure(folder: str | Path, geometry: str = "poincare", title: str | None = None):
    """Mean prototype radius d(0, ·) per tree depth, one line per method, from ``prototypes.csv``.

    Each point is the mean over seeds of that run's mean node-prototype radius at the depth; the
    error bar is the standard deviation over seeds (ddof = 1).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import plotly.graph_objects as go  # heavy: plotly, imported when a figure is drawn

    folder = study_folder(folder, needs="prototypes.csv")
    name = folder.name
    rows = [r for r in _read(folder / "prototypes.csv") if r["geometry"] == geometry]
    if not rows:
        raise ValueError(f"geometry={geometry!r}: no prototypes of that geometry in {folder / 'prototypes.csv'}")
    fig = go.Figure()
    for method, runs in _groups(rows, ("method",)).items():
        per_seed: dict[str, dict[int, list[float]]] = {}
        for r in runs:
            per_seed.setdefault(r["seed"], {}).setdefault(int(r["depth"]), []).append(_num(r["radius"]))
        depths = sorted({d for s in per_seed.values() for d in s})
        means = [[float(np.mean(s[d])) for s in per_seed.values() if d in s] for d in depths]
        fig.add_scatter(
            x=depths,
            y=[float(np.mean(m)) for m in means],
            error_y={"type": "data", "array": [float(np.std(m, ddof=1)) if len(m) > 1 else 0.0 for m in means]},
            mode="lines+markers",
            name=f"{_NAMES.get(method[0], method[0])} ({len(per_seed)} seeds)",
        )
    fig.update_layout(
        height=380,
        xaxis_title="tree depth (0 = root)",
        yaxis_title="prototype radius d(0, ·)",
        title=title or f"docs/results/{name}: prototype radius by depth ({_NAMES.get(geometry, geometry)}, test split)",
    )
    return fig


def _seed0_file(folder: Path, method: str, geometry: str) -> Path:
    """``embeddings/<method>-<geometry>-s0.npz`` of the study, or FileNotFoundError listing what is there."""
    path = folder / "embeddings" / f"{method.replace('+', '_')}-{geometry}-s0.npz"
    if not path.is_file():
        have = sorted(p.name for p in (folder / "embeddings").glob("*.npz"))
        raise FileNotFoundError(
            f"method={method!r}, geometry={geometry!r}: no {path.name} in {folder / 'embeddings'}; it holds {have}"
        )
    return path


def study_embeddings(folder: str | Path, method: str = "supcon", geometry: str = "poincare") -> tuple:
    """Seed 0's committed test embeddings of one method and geometry of the study.

    The study keeps them in float16 (``embeddings/<method>-<geometry>-s0.npz``); they are
    read as float64 and put back on the manifold with ``proj`` (float16 rounding moves a
    hyperboloid point off ``<x, x>_L = -1/c`` by up to 0.1 at the study's radii).

    Returns
    -------
    z : numpy.ndarray, float64, shape (n, D)
    y : numpy.ndarray, int64, shape (n,)
        Leaf index of each test message.
    geometry : Geometry
        The run's geometry at its curvature.

    Raises
    ------
    FileNotFoundError
        No such file (the message lists the files there).
    """
    path = _seed0_file(study_folder(folder), method, geometry)
    with np.load(path) as f:
        geo = get_geometry(geometry, float(f["c"]) if "c" in f else 1.0)
        z = geo.proj(torch.as_tensor(f["z_test"].astype(np.float64))).numpy()
        return z, f["y_test"].astype(np.int64), geo


def study_disk(folder: str | Path, tree: Any, method: str = "supcon", title: str | None = None):
    """Seed 0's Poincaré test embeddings of one method of the study in the disk, the tree drawn over them.

    ``tree`` is the study's label tree (``hierviz.data.load_tree("20news")``).

    Raises
    ------
    FileNotFoundError
        No ``embeddings/<method>-poincare-s0.npz`` (the message lists the files there).
    """
    from hierviz.viz import plot_poincare_disk  # heavy: plotly (hierviz.viz), imported when a figure is drawn

    folder = study_folder(folder)
    name = folder.name
    path = _seed0_file(folder, method, "poincare")
    f = np.load(path)
    z = f["z_test"].astype(np.float64)
    return plot_poincare_disk(
        z,
        f["y_test"].astype(np.int64),
        tree,
        c=float(f["c"]) if "c" in f else 1.0,
        title=title or f"docs/results/{name}: {_NAMES.get(method, method)} (Poincaré, seed 0), test messages",
    )


#: The sweep's numbers the panel draws, (``sweep.csv`` column, bar label).
_SWEEP_BARS = (
    ("hf1", "HF1"),
    ("radius_depth_spearman", "Spearman"),
    ("edge_order", "edge order"),
    ("radius_gap", "radius gap"),
    ("clip_fraction", "clip fraction"),
    ("norm_auroc", "norm AUROC"),
)


def sweep_figure(folder: str | Path, label: str, method: str = "supcon", reference: str = "off"):
    """One sweep setting's HF1 and radius metrics beside a reference setting, as grouped bars.

    Parameters
    ----------
    folder : str or Path
        The study's folder (holding ``sweep.csv``).
    label : str
        The setting to show (a ``label`` of ``sweep.csv``).
    method : str, default "supcon"
        The method whose run to show.
    reference : str, default "off"
        The setting drawn beside it (``off``: no depth terms).

    Returns
    -------
    plotly.graph_objects.Figure
        Two bar groups (reference, setting); the title gives the setting's mean radius d(0, z)
        ± its spread, the numbers the bars must be read beside.

    Raises
    ------
    FileNotFoundError
        No ``sweep.csv``.
    ValueError
        ``method`` has no run at ``label`` or at ``reference`` (the message lists the settings it has).
    """
    import plotly.graph_objects as go  # heavy: plotly, imported when a figure is drawn

    folder = study_folder(folder, needs="sweep.csv")
    rows = [r for r in _read(folder / "sweep.csv") if r["method"] == method]
    by_label = {r["label"]: r for r in rows}
    missing = [x for x in (label, reference) if x not in by_label]
    if missing:
        raise ValueError(f"method={method!r} has no sweep run at {missing}; it has {list(by_label)}")
    fig = go.Figure()
    for name in dict.fromkeys((reference, label)):
        r = by_label[name]
        fig.add_bar(x=[t for _, t in _SWEEP_BARS], y=[_num(r[k]) for k, _ in _SWEEP_BARS], name=name)
    r = by_label[label]
    fig.update_layout(
        height=360,
        barmode="group",
        yaxis_title="value (validation split, seed 0)",
        title=(
            f"{_NAMES.get(method, method)}, Poincaré: {label} — d(0, z) {_num(r['radius_mean']):.2f} ± "
            f"{_num(r['radius_std']):.2f}, clip {_num(r['clip_fraction']):.3f}"
        ),
    )
    return fig


def sweep_panel(folder: str | Path):
    """A dropdown over the sweep's settings and a method toggle, redrawing :func:`sweep_figure`.

    Returns
    -------
    hierviz.viz.widgets.Panel

    Raises
    ------
    FileNotFoundError
        No ``sweep.csv``.
    ValueError
        No setting of the sweep has a run of every method.
    """
    import ipywidgets as widgets  # heavy: ipywidgets, imported when a panel is built

    from hierviz.viz.widgets import Panel  # heavy: ipywidgets, as above

    folder = study_folder(folder, needs="sweep.csv")
    rows = _read(folder / "sweep.csv")
    methods = list(dict.fromkeys(r["method"] for r in rows))
    labels = [
        x
        for x in dict.fromkeys(r["label"] for r in rows)
        if set(methods) <= {r["method"] for r in rows if r["label"] == x}
    ]
    if not labels:
        raise ValueError(f"{folder / 'sweep.csv'}: no setting has a run of every method {methods}")
    controls = {
        "label": widgets.Dropdown(
            options=labels, value=next((x for x in labels if x.startswith("tau 1,")), labels[-1]), description="setting"
        ),
        "method": widgets.ToggleButtons(options=[(_NAMES.get(m, m), m) for m in methods], value=methods[0]),
    }
    return Panel(
        controls,
        lambda label, method: sweep_figure(folder, label, method),
        title="The 20 Newsgroups sweep (validation split): each setting beside the run without depth terms",
    )
