"""The live panel: sliders wired to a plain figure function, redrawing its own figure in place.

See :mod:`hierviz.viz.widgets` for how a panel shows its figure and why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["PLOTLY_MIME", "Panel", "figure_bundle", "slider"]


PLOTLY_MIME = "application/vnd.plotly.v1+json"


def figure_bundle(fig: go.Figure) -> dict[str, Any]:
    """The mimebundle a front end draws a plotly figure from (what plotly's ``plotly_mimetype`` renderer emits).

    Parameters
    ----------
    fig : plotly.graph_objects.Figure

    Returns
    -------
    dict
        ``{PLOTLY_MIME: {"data": [...], "layout": {...}}, "text/plain": str}``, JSON-safe
        (numpy arrays become lists), ready for an ``Output`` widget's ``outputs``.

    Raises
    ------
    TypeError
        ``fig`` is not a plotly figure.

    Examples
    --------
    >>> import plotly.graph_objects as go
    >>> b = figure_bundle(go.Figure(go.Bar(x=["a"], y=[1.0]), layout={"title": "t"}))
    >>> b[PLOTLY_MIME]["data"][0]["type"], b[PLOTLY_MIME]["layout"]["title"]["text"], b["text/plain"]
    ('bar', 't', 'Figure(1 trace: bar)')
    """
    if not isinstance(fig, go.Figure):
        raise TypeError(f"figure_bundle needs a plotly.graph_objects.Figure, got {type(fig).__name__}")
    spec = json.loads(pio.to_json(fig, validate=False, remove_uids=False))
    kinds = ", ".join(dict.fromkeys(t.get("type", "scatter") for t in spec.get("data", [])))
    n = len(spec.get("data", []))
    return {PLOTLY_MIME: spec, "text/plain": f"Figure({n} trace{'s' * (n != 1)}: {kinds})"}


class Panel(widgets.VBox):
    """An ``ipywidgets.VBox`` of sliders wired to a plain figure function; it redraws its own figure.

    The figure lives in the panel's own ``ipywidgets.Output`` (``panel.view``): on every
    value change the figure function runs and the Output's ``outputs`` is *replaced* by
    one ``display_data`` with the figure's plotly mimebundle (:func:`figure_bundle`). The
    front end's plotly renderer draws it in place: one figure per panel, redrawn in
    JupyterLab 4, classic Notebook 7 and VS Code alike, without ``anywidget``. (A plotly
    ``FigureWidget`` needs ``anywidget`` and a second widget model; writing the bundle
    needs nothing beyond ipywidgets and plotly, and setting ``outputs`` directly never
    routes through the kernel's display hook, which kept papermill runs from stalling.)
    Measured redraw times are in docs/widgets.md.

    Parameters
    ----------
    controls : dict of str to ipywidgets.ValueWidget
        Keyword name → widget; on every value change ``update(**{name: widget.value})``
        is called.
    update : callable returning plotly.graph_objects.Figure
        The plain figure function (with everything but the slider values bound).
    title : str
        Shown above the sliders (HTML).

    Attributes
    ----------
    controls : dict
    figure : plotly.graph_objects.Figure
        The most recent figure (rebuilt synchronously when a slider moves).
    view : ipywidgets.Output
        Holds exactly one output, the current figure's bundle.

    Raises
    ------
    TypeError
        ``update`` does not return a plotly figure.

    Notes
    -----
    The panel's DOM node carries the CSS class ``hierviz-panel`` (the browser tests find
    panels by it). Displaying a panel emits the widget view and, in the same bundle, the
    current figure's plotly JSON: live front ends draw the view (ipywidgets' renderer has
    rank −10, plotly's 0), while a notebook read without a kernel (nbconvert, the docs
    site) shows the figure. So a notebook needs no static copy of a panel's figure.

    Examples
    --------
    >>> import ipywidgets as widgets
    >>> import plotly.graph_objects as go
    >>> p = Panel({"n": widgets.IntSlider(2, 1, 5)}, lambda n: go.Figure(go.Bar(y=list(range(n)))))
    >>> p.controls["n"].value = 4  # what moving the slider does
    >>> p.figure.data[0].y, len(p.view.outputs)
    ((0, 1, 2, 3), 1)
    >>> sorted(p._repr_mimebundle_())
    ['application/vnd.jupyter.widget-view+json', 'application/vnd.plotly.v1+json', 'text/plain']
    """

    def __init__(self, controls: dict[str, Any], update: Callable[..., go.Figure], title: str = ""):
        super().__init__()
        self.controls = dict(controls)
        self._figure_fn = update
        self.view = widgets.Output()
        self.figure = update(**self.values())
        self._render_output()
        for w in self.controls.values():
            w.observe(self._on_change, names="value")
        head = [widgets.HTML(f"<b>{title}</b>")] if title else []
        self.children = head + [widgets.HBox(list(self.controls.values())), self.view]
        self.add_class("hierviz-panel")

    def values(self) -> dict[str, Any]:
        """Current slider values, keyword → value."""
        return {k: w.value for k, w in self.controls.items()}

    def refresh(self) -> go.Figure:
        """Rebuild the figure from the current slider values and show it."""
        self.figure = self._figure_fn(**self.values())
        self._render_output()
        return self.figure

    def _render_output(self) -> None:
        # Replace the Output's contents directly with the figure's mimebundle. Not
        # ``append_display_data(fig)`` (plotly's _ipython_display_ prints into the cell, not the
        # Output) and not ``with self.view: display(...)``: that routes through the kernel's
        # output hook and, under ipykernel 7 + nbclient 0.11, intermittently left papermill
        # waiting for the cell's reply (measured: 9 stalls in 26 headless runs); setting
        # ``outputs`` never stalled (0 in 8).
        self.view.outputs = ({"output_type": "display_data", "data": figure_bundle(self.figure), "metadata": {}},)

    def _repr_mimebundle_(self, **kwargs) -> dict[str, Any]:
        # The widget view, plus the current figure as a static fallback. JupyterLab, Notebook 7
        # and VS Code draw the view (ipywidgets' renderer ranks above plotly's), so a live page
        # shows one figure per panel; where no kernel or widget manager is (papermill outputs,
        # nbconvert, the docs site, GitHub) the figure is still there.
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle[PLOTLY_MIME] = self.view.outputs[0]["data"][PLOTLY_MIME]  # serialised once, in _render_output
        return bundle

    def _on_change(self, change) -> None:
        self.refresh()


def slider(description: str, value: float, lo: float, hi: float, step: float) -> widgets.FloatSlider:
    """The course's float slider: redraws on release (``continuous_update=False``), two decimals."""
    return widgets.FloatSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        continuous_update=False,
        readout_format=".2f",
        style={"description_width": "initial"},
    )
