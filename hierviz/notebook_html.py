"""Notebook → HTML with the plotly figures and the math, and no CDN.

``jupyter nbconvert --to html`` of an executed course notebook shows no figure: plotly writes
its figures as the ``application/vnd.plotly.v1+json`` mimetype, which only JupyterLab,
Notebook 7 and VS Code render, and nbconvert's HTML templates skip it. The page also loads
MathJax from a CDN, so it shows raw ``$...$`` offline.

This module fixes both, for the docs site and for a standalone export:

* :class:`PlotlyToHTML` (an nbconvert preprocessor) adds to every plotly output an HTML
  rendering (a ``<div>`` and a ``Plotly.newPlot`` call, made by :func:`plotly.io.to_html`)
  that needs only ``window.Plotly``;
* :class:`WidgetNote` replaces ipywidgets views (which need a live kernel) with a one-line note,
  followed by the figure a :class:`hierviz.viz.Panel` carries as its static fallback;
* :class:`NotebookHTMLExporter` (registered with nbconvert as ``hierviz_html``) runs both and
  inlines plotly.js (from the installed ``plotly`` package) and MathJax 3 (``tex-svg-full.js``
  from the ``django-static-mathjax`` package, which ships MathJax 3.2.2's files and nothing
  else) once per page, so the file works offline::

      jupyter nbconvert --to hierviz_html notebooks/00_label_trees.ipynb

  JupyterLab lists the same exporter under *File → Save and Export Notebook As → Hierviz_html*.

The docs site (``docs/scripts/build_site.py``) uses the two preprocessors and serves plotly.js
and MathJax once from its own assets instead of inlining them.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import nbformat
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode, default
from traitlets.config import Config

__all__ = [
    "MATHJAX_CONFIG",
    "NotebookHTMLExporter",
    "PLOTLY_MIME",
    "PlotlyToHTML",
    "TEMPLATES",
    "WIDGET_MIME",
    "WidgetNote",
    "head_scripts",
    "mathjax_path",
    "plotlyjs_path",
    "strip_cdn_scripts",
]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

#: MathJax 3 configuration shared by the site and the export: ``$...$`` / ``\\(...\\)`` inline,
#: ``$$...$$`` / ``\\[...\\]`` display, as in Jupyter; SVG output needs no web fonts.
MATHJAX_CONFIG = {
    "tex": {
        "inlineMath": [["$", "$"], ["\\(", "\\)"]],
        "displayMath": [["$$", "$$"], ["\\[", "\\]"]],
        "processEscapes": True,
        "processEnvironments": True,
    },
    "svg": {"fontCache": "global"},
}

WIDGET_NOTE_HTML = (
    '<div class="hierviz-widget-note"><em>Live widget: it needs a running kernel. Open the notebook in '
    "JupyterLab or Notebook 7 and run it to move this control.</em></div>"
)


def plotlyjs_path() -> Path:
    """Path of ``plotly.min.js`` inside the installed ``plotly`` package.

    Returns
    -------
    pathlib.Path
        An existing file (the plotly.js build that the installed plotly.py writes).

    Examples
    --------
    >>> plotlyjs_path().name
    'plotly.min.js'
    """
    import plotly  # heavy: plotly, imported only when a notebook is converted

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():  # pragma: no cover - a broken plotly install
        raise FileNotFoundError(
            f"{path} is missing; reinstall plotly (python3 -m pip install --force-reinstall plotly)"
        )
    return path


def mathjax_path() -> Path:
    """Path of MathJax 3's single-file ``tex-svg-full.js`` from the ``django-static-mathjax`` package.

    Returns
    -------
    pathlib.Path
        An existing file; it typesets TeX to SVG and loads nothing else.

    Raises
    ------
    FileNotFoundError
        If ``django-static-mathjax`` is not installed (it comes with ``hierviz[notebooks]``).

    Examples
    --------
    >>> mathjax_path().name
    'tex-svg-full.js'
    """
    try:
        root = resources.files("mathjax")
    except ModuleNotFoundError as exc:
        raise FileNotFoundError(
            "MathJax is not installed; install it with: python3 -m pip install django-static-mathjax "
            "(or hierviz[notebooks])"
        ) from exc
    path = Path(str(root)) / "static" / "mathjax" / "es5" / "tex-svg-full.js"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall django-static-mathjax")
    return path


def _plotly_div(spec: dict, height: int) -> str:
    import plotly.io as pio  # heavy: plotly, imported only for a notebook with figures

    return pio.to_html(
        spec,
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        validate=False,
        default_width="100%",
        default_height=height,
    )


class PlotlyToHTML(Preprocessor):
    """Give every plotly output an HTML rendering that nbconvert's templates show.

    Each ``display_data`` / ``execute_result`` output holding ``application/vnd.plotly.v1+json``
    gets a ``text/html`` entry: the figure's ``<div>`` and the ``Plotly.newPlot`` call that
    :func:`plotly.io.to_html` writes, without plotly.js (the page loads it once). The JSON is
    dropped unless ``keep_json`` is set.

    Examples
    --------
    >>> import nbformat
    >>> fig = {"data": [{"type": "scatter", "y": [1, 3, 2]}], "layout": {}}
    >>> out = nbformat.v4.new_output("display_data", data={PLOTLY_MIME: fig})
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[out])])
    >>> nb, _ = PlotlyToHTML().preprocess(nb, {})
    >>> html = nb.cells[0].outputs[0].data["text/html"]
    >>> "Plotly.newPlot" in html and "plotly-graph-div" in html and "<script src" not in html
    True
    """

    keep_json = Bool(False, help="keep the plotly JSON next to the HTML").tag(config=True)
    default_height = Unicode("525px", help="height of a figure whose layout sets none").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        for out in cell.get("outputs", []):
            data = out.get("data") if out.get("output_type") in ("display_data", "execute_result") else None
            if not data or PLOTLY_MIME not in data:
                continue
            spec = data[PLOTLY_MIME]
            if isinstance(spec, str):
                spec = json.loads(spec)
            data["text/html"] = _plotly_div(dict(spec), self.default_height)
            if not self.keep_json:
                del data[PLOTLY_MIME]
            resources.setdefault("hierviz", {})["has_plotly"] = True
        return cell, resources


class WidgetNote(Preprocessor):
    """Replace ipywidgets views (dead without a kernel) by a short note saying how to use them.

    A view whose bundle also holds a plotly figure (a :class:`hierviz.viz.Panel` puts its current
    figure there as the fallback for front ends without a kernel) keeps that figure: the note is
    followed by a ``display_data`` output with the figure, which :class:`PlotlyToHTML` then draws.

    The notebook's saved widget state (``metadata.widgets``) is dropped too: nbconvert's templates
    load ipywidgets' HTML manager from a CDN whenever it is present.

    Examples
    --------
    >>> import nbformat
    >>> data = {WIDGET_MIME: {"model_id": "x", "version_major": 2}, "text/plain": "VBox(...)"}
    >>> out = nbformat.v4.new_output("display_data", data=data)
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[out])])
    >>> nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    >>> nb, _ = WidgetNote().preprocess(nb, {})
    >>> sorted(nb.cells[0].outputs[0].data), "widgets" in nb.metadata
    (['text/html'], False)

    A panel's view keeps its figure, after the note:

    >>> fig = {"data": [{"type": "bar", "y": [1]}], "layout": {}}
    >>> out = nbformat.v4.new_output("display_data", data={**data, PLOTLY_MIME: fig})
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[out])])
    >>> nb, _ = WidgetNote().preprocess(nb, {})
    >>> [sorted(o.data) for o in nb.cells[0].outputs]
    [['text/html'], ['application/vnd.plotly.v1+json']]
    """

    def preprocess(self, nb, resources):
        # the saved widget state is what makes nbconvert's templates load ipywidgets' HTML manager
        # from a CDN (unpkg); with every view replaced it has nothing left to render
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        outputs = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data and WIDGET_MIME in data:
                figure = data.get(PLOTLY_MIME)
                out["data"] = {"text/html": WIDGET_NOTE_HTML}
                outputs.append(out)
                if figure is not None:  # a hierviz Panel's static fallback: its current figure
                    outputs.append({"output_type": "display_data", "data": {PLOTLY_MIME: figure}, "metadata": {}})
            else:
                outputs.append(out)
        if "outputs" in cell:
            cell.outputs = [nbformat.from_dict(o) for o in outputs]
        return cell, resources


TEMPLATES = Path(__file__).parent / "templates" / "nbconvert"


def head_scripts() -> str:
    """The ``<script>`` tags that make a page standalone: plotly.js, the MathJax config, MathJax.

    Returns
    -------
    str
        ≈ 7 MB of HTML: plotly.js from :func:`plotlyjs_path`, ``window.MathJax =``
        :data:`MATHJAX_CONFIG`, then MathJax from :func:`mathjax_path`, all inline.
    """
    config = json.dumps(MATHJAX_CONFIG)
    plotly_js = plotlyjs_path().read_text(encoding="utf-8")
    mathjax_js = mathjax_path().read_text(encoding="utf-8")
    return (
        f"<script type='text/javascript'>{plotly_js}</script>\n"
        f"<script type='text/javascript'>window.MathJax = {config};</script>\n"
        f"<script type='text/javascript'>{mathjax_js}</script>\n"
    )


class NotebookHTMLExporter(HTMLExporter):
    """nbconvert's JupyterLab-style HTML export, with the plotly figures and offline math.

    ``jupyter nbconvert --to hierviz_html NOTEBOOK.ipynb`` writes ``NOTEBOOK.html``: one file that
    opens offline with interactive plotly figures and typeset equations. plotly.js and MathJax 3
    are inlined once each (≈ 7 MB per page, :func:`head_scripts`); the template
    ``hierviz/templates/nbconvert/hierviz_html`` removes nbconvert's CDN scripts (MathJax 2,
    require.js, mermaid, the ipywidgets manager). Widget views become a note (:class:`WidgetNote`).

    Source: the nbconvert ``lab`` template; MathJax 3 SVG output (:data:`MATHJAX_CONFIG`).
    """

    export_from_notebook = "hierviz HTML (offline figures + math)"

    @property
    def default_config(self):
        cfg = Config(super().default_config)
        cfg.merge(Config({"NotebookHTMLExporter": {"template_name": "hierviz_html"}}))
        return cfg

    @default("extra_template_basedirs")
    def _default_extra_template_basedirs(self):
        return [str(TEMPLATES), *super()._default_extra_template_basedirs()]

    def _init_preprocessors(self):
        super()._init_preprocessors()
        self.register_preprocessor(WidgetNote, enabled=True)
        self.register_preprocessor(PlotlyToHTML, enabled=True)

    def from_notebook_node(self, nb, resources=None, **kw):
        resources = self._init_resources(resources)
        resources["hierviz_head"] = head_scripts()
        return super().from_notebook_node(nb, resources, **kw)


def strip_cdn_scripts(html: str) -> str:
    """Remove nbconvert's MathJax 2 loader block and its mermaid ES-module loader (both CDN).

    The docs site uses this on mkdocs-jupyter's pages, which load plotly.js and MathJax from
    the site's own assets instead.

    Examples
    --------
    >>> page = "<p>a</p><!-- Load mathjax --><script src='https://x/mj.js'></script><!-- End of mathjax configuration --><p>b</p>"
    >>> strip_cdn_scripts(page)
    '<p>a</p><p>b</p>'
    """
    start, end = "<!-- Load mathjax -->", "<!-- End of mathjax configuration -->"
    i = html.find(start)
    while i != -1:
        j = html.find(end, i)
        if j == -1:
            break
        html = html[:i] + html[j + len(end) :]
        i = html.find(start)
    return _MERMAID.sub("", html)


_MERMAID = re.compile(r'<script type="module">(?:(?!</script>).)*?mermaid(?:(?!</script>).)*</script>', re.S)
