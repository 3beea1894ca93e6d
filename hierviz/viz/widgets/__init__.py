"""Interactive ipywidgets panels for the notebooks: curvature, ω (α, γ), LAM margins and weights, τ, the hyperbolic head.

Every panel is a thin shell around a **module-level plain function** that builds the
figure from the slider values (:func:`curvature_figure`, :func:`omega_figure`,
:func:`margin_figure`, :func:`tau_figure`). Tests and papermill runs call those
functions directly, so nothing waits for a browser; a panel only wires sliders to them.

How a panel shows its figure: the panel owns one ``ipywidgets.Output``, and every change
replaces that Output's ``outputs`` with a single ``display_data`` holding the figure's plotly
mimebundle (``application/vnd.plotly.v1+json``, see :func:`figure_bundle`). The front end's
own plotly renderer draws it (``jupyterlab-plotly``, shipped in the ``plotly`` wheel, in
JupyterLab 4 and Notebook 7; VS Code's built-in one), so the same code path works in all of
them, needs no ``anywidget``, and redraws from a slider callback (which runs outside any cell).
Never ``Output.append_display_data(fig)`` or ``display(fig)``: plotly's ``_ipython_display_``
then prints the figure into the *cell* (once, at creation) and later changes go nowhere.
docs/widgets.md has the troubleshooting notes and the measured redraw times.
"""

from hierviz.viz.widgets.figures import (
    curvature_figure,
    lam_figure,
    lam_hinges,
    lam_terms,
    margin_figure,
    omega_figure,
    tau_figure,
)
from hierviz.viz.widgets.panel import PLOTLY_MIME, Panel, figure_bundle, slider
from hierviz.viz.widgets.panels import curvature_panel, lam_panel, margin_panel, omega_panel, tau_panel
from hierviz.viz.widgets.radius import radius_figure, radius_panel

__all__ = [
    "Panel",
    "PLOTLY_MIME",
    "figure_bundle",
    "slider",
    "curvature_figure",
    "curvature_panel",
    "omega_figure",
    "omega_panel",
    "lam_terms",
    "lam_hinges",
    "margin_figure",
    "margin_panel",
    "lam_figure",
    "lam_panel",
    "tau_figure",
    "tau_panel",
    "radius_figure",
    "radius_panel",
]
