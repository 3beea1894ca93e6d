"""Plotly figures without plotly's per-property validation, for the figures a panel redraws.

``go.Figure(data, layout)`` validates and coerces every property of every trace: for the course's
panels (a disk of a few dozen traces beside a second plot) that was 60–80 % of a redraw's kernel
time (profiled for notebooks 01 and 04). :func:`fast_figure` builds the same figure from
plain dicts with validation switched off (plotly's own ``_validate=False`` switch, which
``plotly.express`` uses too), so a figure function costs its arithmetic plus the JSON.

The dicts must therefore be valid plotly already: ``tests/test_widgets.py`` re-validates every
panel figure (``go.Figure(fig.to_dict())``) and checks the JSON is unchanged.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["fast_figure", "merge", "subplots_layout", "validated"]


@lru_cache(maxsize=8)
def _template(name: str) -> go.layout.Template:
    return pio.templates[name]


def fast_figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> go.Figure:
    """A ``go.Figure`` of plain trace and layout dicts, built without plotly's validation.

    Parameters
    ----------
    data : list of dict
        Trace dicts, each with its ``type`` (``"scatter"``, ``"bar"``, ...) and valid plotly properties.
    layout : dict
        Layout dict; ``template`` may be a registered template's name (resolved here, as
        validation would), default plotly's default template.

    Returns
    -------
    plotly.graph_objects.Figure
        The same figure (and the same JSON) as ``go.Figure(data=data, layout=layout)``, built
        in a fraction of the time; invalid properties in ``data`` / ``layout`` are *not* caught
        (see :func:`validated`). Changes made to it afterwards are validated as usual.

    Examples
    --------
    >>> import json
    >>> import plotly.io as pio
    >>> f = fast_figure([dict(type="bar", x=["a"], y=[1.0])], dict(title=dict(text="t"), template="plotly_white"))
    >>> f.data[0].y, f.layout.title.text
    ((1.0,), 't')
    >>> json.loads(pio.to_json(f)) == json.loads(pio.to_json(validated(f)))  # same figure, key order aside
    True
    >>> f.update_layout(title="u", xaxis_title="x").layout.title.text, f.layout.xaxis.title.text  # updates coerce
    ('u', 'x')
    """
    layout = dict(layout)
    if isinstance(layout.get("template"), str):
        layout["template"] = _template(layout["template"])
    fig = go.Figure(data=data, layout=layout, _validate=False)
    # Later changes validate again, as on any figure: a caller's fig.update_layout(title="...") must still
    # become {"text": ...} (plotly.js 3 ignores a bare string title). Children created from here on
    # inherit the flag (plotly copies it when it builds a sub-object).
    fig._validate = True
    fig._layout_obj._validate = True
    for t in fig.data:
        t._validate = True
    return fig


def validated(fig: go.Figure) -> go.Figure:
    """``fig`` rebuilt with plotly's validation: raises ``ValueError`` on any invalid property (tests use it)."""
    return go.Figure(fig.to_dict())


@lru_cache(maxsize=32)
def _subplots_json(rows: int, cols: int, kw: str) -> str:
    from plotly.subplots import make_subplots  # heavy: Pillow (plotly.subplots imports it), only for subplots

    layout = make_subplots(rows, cols, **json.loads(kw)).layout.to_plotly_json()
    layout.pop("template", None)
    return pio.to_json(layout, validate=False)


def subplots_layout(rows: int, cols: int, **kwargs: Any) -> dict[str, Any]:
    """The layout dict ``make_subplots(rows, cols, **kwargs)`` makes (axes, domains, titles), cached per arguments.

    Traces of subplot (r, c) then need ``xaxis="x<k>"``, ``yaxis="y<k>"`` with k = (r−1)·cols + c
    (no suffix for k = 1). The template is left to :func:`fast_figure`.

    Examples
    --------
    >>> lay = subplots_layout(1, 2, subplot_titles=("a", "b"))
    >>> lay["xaxis2"]["anchor"], [a["text"] for a in lay["annotations"]]
    ('y2', ['a', 'b'])
    """
    titles = list(kwargs.pop("subplot_titles", None) or [])
    if titles:  # cache one layout per number of titles, then write the texts in
        kwargs["subplot_titles"] = [f"\x00{i}" for i in range(len(titles))]
    lay = json.loads(_subplots_json(rows, cols, json.dumps(kwargs, sort_keys=True)))
    for a in lay.get("annotations", []):
        t = a.get("text", "")
        if t.startswith("\x00"):
            a["text"] = titles[int(t[1:])]
    return lay


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Merge ``update`` into ``base`` in place, recursing into nested dicts (as ``fig.update_layout`` does).

    Examples
    --------
    >>> merge({"xaxis": {"a": 1, "b": 2}}, {"xaxis": {"b": 3}, "title": "t"})
    {'xaxis': {'a': 1, 'b': 3}, 'title': 't'}
    """
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base
