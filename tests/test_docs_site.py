"""The docs site and the offline HTML export.

* ``docs/scripts/build_site.py`` builds the site with ``mkdocs build --strict`` (one notebook executed
  at build_site's default size, medium, ≈ 10 s; the others render from their clean source): the pages exist, the
  notebook page carries its plotly figures, the API pages come from the docstrings, the solutions
  are collapsible, and no page loads a script, stylesheet or frame from another host.
* In chromium (Playwright, Debian's binary; ``tests/_browser.py``): a plotly figure is drawn with data
  and an equation is typeset by MathJax, on the site and in a ``jupyter nbconvert --to hierviz_html``
  export; screenshots go to ``tests/artifacts/`` (or ``$HIERVIZ_ARTIFACTS``).
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from hierviz.notebook_html import PLOTLY_MIME, WIDGET_MIME, NotebookHTMLExporter, PlotlyToHTML, WidgetNote

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXECUTED = "00_label_trees"  # the notebook the site test executes (SIZE="medium", build_site's default, ≈ 10 s)

# One xdist worker runs this file (-n N means --dist loadgroup, tests/conftest.py): the site is built
# once (the module fixture) with no worker waiting on another's build, and the executed tiny notebook
# (lru_cache) and chromium (the session's `browser`) serve every test that needs them.
pytestmark = pytest.mark.xdist_group("docs-site")


# --------------------------------------------------------------------------- helpers
class _ExternalRefs(HTMLParser):
    """Collect every script/stylesheet/image/frame reference that points to another host."""

    TAGS = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src", "embed": "src"}

    def __init__(self):
        super().__init__()
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        key = self.TAGS.get(tag)
        value = dict(attrs).get(key) or "" if key else ""
        if tag == "link" and (dict(attrs).get("rel") or "") in ("canonical", "alternate"):
            return  # a link relation, not a resource the page loads
        if re.match(r"^\s*(https?:)?//", value):
            self.external.append(f"<{tag} {key}={value!r}>")


def external_refs(html: str) -> list[str]:
    """Resources a page would fetch from another host: tags' src/href and ES-module imports."""
    parser = _ExternalRefs()
    parser.feed(html)
    imports = re.findall(r"""import\(\s*["'](https?://[^"']+)""", html)
    return parser.external + [f"import({u!r})" for u in imports]


def test_external_refs_finds_cdn_scripts():
    page = (
        '<script src="https://cdnjs.cloudflare.com/mathjax.js"></script><link rel="stylesheet" href="//fonts.x/y.css">'
        '<script src="assets/vendor/plotly.min.js"></script><script>var u = "<script src=https://no>";</script>'
        '<script type="module">const m = (await import("https://cdn.x/mermaid.mjs"));</script>'
    )
    found = external_refs(page)
    assert len(found) == 3, found
    assert "cdnjs" in found[0] and "fonts.x" in found[1] and "mermaid" in found[2]


@functools.lru_cache(maxsize=1)
def _executed_tiny_notebook() -> nbformat.NotebookNode:
    """A small notebook executed by a real kernel: markdown math, a plotly figure, an ipywidget."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Tiny\n\nThe ball's distance $d_c(x, y)$ and $$\\rho = \\frac{1}{L}$$"),
            nbformat.v4.new_code_cell(
                "import plotly.graph_objects as go\ngo.Figure(go.Scatter(y=[3, 1, 2], name='probe'))"
            ),
            nbformat.v4.new_code_cell("import ipywidgets as w\nw.IntSlider(3)"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return nb


# --------------------------------------------------------------------------- the export (fast)
def test_plotly_to_html_matches_plotly_io():
    """The HTML holds the same figure JSON that plotly.io writes for that figure."""
    import plotly.io as pio

    fig = {"data": [{"type": "bar", "x": ["a", "b"], "y": [2, 5]}], "layout": {"title": {"text": "t"}}}
    out = nbformat.v4.new_output("display_data", data={PLOTLY_MIME: fig})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[out])])
    nb, res = PlotlyToHTML().preprocess(nb, {})
    html = nb.cells[0].outputs[0].data["text/html"]
    ref = pio.to_html(fig, full_html=False, include_plotlyjs=False, validate=False)
    body = lambda h: re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", h)  # noqa: E731
    assert re.search(r'"x":\["a","b"\],"y":\[2,5\]', html)
    assert body(html).replace("525px", "100%") == body(ref)
    assert PLOTLY_MIME not in nb.cells[0].outputs[0].data and res["hierviz"]["has_plotly"]


def test_widget_note_drops_the_widget_state():
    """The saved widget state makes nbconvert's lab template load ipywidgets' manager from unpkg."""
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("a slider was here")])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert "unpkg.com" in html  # the problem
    nb, _ = WidgetNote().preprocess(nb, {})
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert "unpkg.com" not in html


def test_widget_note_leaves_other_outputs():
    text = nbformat.v4.new_output("stream", text="hello")
    widget = nbformat.v4.new_output("display_data", data={WIDGET_MIME: {"model_id": "m"}, "text/plain": "IntSlider()"})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[text, widget])])
    nb, _ = WidgetNote().preprocess(nb, {})
    assert nb.cells[0].outputs[0].text == "hello"
    assert "Live widget" in nb.cells[0].outputs[1].data["text/html"]


def test_exporter_is_registered_with_nbconvert():
    from nbconvert.exporters import get_exporter

    assert get_exporter("hierviz_html") is NotebookHTMLExporter


@pytest.mark.slow
def test_export_of_an_executed_notebook_has_figures_and_no_cdn(tmp_path):
    """``jupyter nbconvert --to hierviz_html`` of an executed notebook: the figure is there, nothing is fetched."""
    src = tmp_path / "tiny.ipynb"
    nbformat.write(_executed_tiny_notebook(), src)
    proc = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "hierviz_html", str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "tiny.html").read_text(encoding="utf-8")
    assert external_refs(html) == []
    assert "cdnjs" not in html and "unpkg.com" not in html
    assert html.count("Plotly.newPlot") == 1 and '"name":"probe"' in html
    assert "Live widget" in html and "IntSlider(value=3" not in html  # the widget's repr is replaced
    # both libraries inline, once, before the body's figure script runs
    head = html.split("</head>", 1)[0]
    assert head.count("window.MathJax = ") == 1 and "MathJax" in head and "Plotly" in head
    # nbconvert's own html export, for contrast: no figure, MathJax from a CDN (the 0.2 site's bug)
    with pytest.warns(UserWarning, match=r"application/vnd\.plotly\.v1\+json.*not able to be represented"):
        plain, _ = (
            __import__("nbconvert").HTMLExporter(template_name="lab").from_notebook_node(_executed_tiny_notebook())
        )
    assert "Plotly.newPlot" not in plain and any("mathjax" in r.lower() for r in external_refs(plain))


def _build_site_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_site", REPO / "docs" / "scripts" / "build_site.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_build_site_selects_notebooks_by_number_or_stem():
    mod = _build_site_module()
    assert [p.stem for p in mod.select(["0", "01_hyperbolic_geometry"])] == [NOTEBOOKS[0].stem, NOTEBOOKS[1].stem]
    assert mod.select(None) == NOTEBOOKS
    with pytest.raises(SystemExit, match=r"--notebooks: no notebook '99'.*have: 00_label_trees"):
        mod.select(["99"])


# --------------------------------------------------------------------------- the site (slow)
def _build_site(tmp: Path) -> Path:
    cmd = [sys.executable, str(REPO / "docs" / "scripts" / "build_site.py"), "--notebooks", EXECUTED[:2]]
    cmd += ["--notebook-dir", str(tmp / "notebooks"), "--site-dir", str(tmp / "site")]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    warnings = [ln for ln in log.splitlines() if ln.startswith(("WARNING", "ERROR"))]
    assert proc.returncode == 0, f"site build failed:\n{chr(10).join(warnings) or log[-4000:]}"
    (tmp / "built").write_text("ok")
    return tmp / "site"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``build_site.py --notebooks 00`` into a temporary folder (mkdocs build --strict), once per session.

    Under pytest-xdist the workers share the session's base folder and a file lock, so the site is
    built once however the tests are spread (the pytest-xdist recipe for session fixtures).
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _build_site(tmp_path_factory.mktemp("docs-site"))
    from filelock import FileLock  # a dependency of torch

    shared = tmp_path_factory.getbasetemp().parent / "docs-site"
    with FileLock(str(shared) + ".lock"):
        if (shared / "built").is_file():
            return shared / "site"
        shared.mkdir(exist_ok=True)
        return _build_site(shared)


@pytest.mark.slow
def test_site_has_every_page(site):
    for rel in ["index.html", "install/index.html", "course/index.html", "solutions/index.html", "widgets/index.html"]:
        assert (site / rel).is_file(), rel
    for nb in NOTEBOOKS:
        assert (site / "course" / nb.stem / "index.html").is_file(), nb.stem
    assert (site / "api" / "index.html").is_file()
    for api in (REPO / "docs" / "api").glob("*.md"):
        assert api.stem == "index" or (site / "api" / api.stem / "index.html").is_file(), api.stem
    for res in (REPO / "docs" / "results").glob("*.md"):  # README.md is the folder's index page
        page = "index.html" if res.stem == "README" else f"{res.stem}/index.html"
        assert (site / "results" / page).is_file(), res.stem
    assert (site / "references" / "index.html").is_file()
    # the vendored scripts, copied from the installed packages
    from hierviz.notebook_html import mathjax_path, plotlyjs_path

    assert (site / "assets/vendor/plotly.min.js").read_bytes() == plotlyjs_path().read_bytes()
    assert (site / "assets/vendor/mathjax/tex-svg-full.js").stat().st_size == mathjax_path().stat().st_size


@pytest.mark.slow
def test_site_loads_nothing_from_another_host(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    bad = {str(p.relative_to(site)): refs for p in pages if (refs := external_refs(p.read_text(encoding="utf-8")))}
    assert not bad, bad
    # scripts that build a <script src> at run time (ipywidgets' HTML manager, mermaid) name a CDN host
    cdn = re.compile(r"unpkg\.com|cdnjs\.|jsdelivr\.net|fonts\.googleapis|mathjax\.org/.*\.js")
    named = {str(p.relative_to(site)): m.group(0) for p in pages if (m := cdn.search(p.read_text(encoding="utf-8")))}
    assert not named, named


@pytest.mark.slow
def test_executed_notebook_page_has_its_figures(site):
    html = (site / "course" / EXECUTED / "index.html").read_text(encoding="utf-8")
    executed = nbformat.read(site.parent / "notebooks" / f"{EXECUTED}.ipynb", as_version=4)
    n_figs = sum(
        "Plotly.newPlot" in o.get("data", {}).get("text/html", "") for c in executed.cells for o in c.get("outputs", [])
    )
    assert n_figs >= 3  # tests/test_notebooks.py: notebook 00 shows at least 3 figures
    assert html.count("Plotly.newPlot") == n_figs
    # plotly.js is loaded in <head>, before the figures' inline scripts run
    head = html.split("</head>", 1)[0]
    assert re.search(r'<script src="[./]*assets/vendor/plotly\.min\.js"></script>', head)
    # a notebook not executed in this build renders its code without outputs
    other = (site / "course" / NOTEBOOKS[1].stem / "index.html").read_text(encoding="utf-8")
    assert "jp-CodeCell" in other and "Plotly.newPlot" not in other


@pytest.mark.slow
def test_api_pages_come_from_the_docstrings(site):
    html = (site / "api" / "geometry" / "index.html").read_text(encoding="utf-8")
    assert "PoincareBall" in html and "doc-heading" in html  # mkdocstrings' rendered members
    assert "Parameters" in html  # numpydoc sections parsed (docstring_style: numpy)
    assert not re.search(r":(func|class|mod|meth|data):<code>", html)  # Sphinx roles cleaned by the hook


@pytest.mark.slow
def test_solutions_are_collapsible(site):
    html = (site / "solutions" / "index.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<details class="note">\s*<summary>Solution', html)
    assert len(blocks) >= len(NOTEBOOKS), f"{len(blocks)} solution blocks for {len(NOTEBOOKS)} notebooks"
    assert "<details open" not in html  # collapsed until the reader opens them


# --------------------------------------------------------------------------- in a browser
def _serve(folder: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


_FIGURE_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(
    g => g._fullLayout && g.data && g.data.length > 0 && g.querySelector('.main-svg')).length"""
_MATH_TYPESET = "() => document.querySelectorAll('mjx-container svg').length"


def _check_page(browser, url: str, shot: Path, min_figures: int, min_math: int) -> dict:
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    errors: list[str] = []
    outside: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "request",
        lambda r: (
            outside.append(r.url) if not r.url.startswith(("http://127.0.0.1", "file:", "data:", "blob:")) else None
        ),
    )
    page.goto(url)
    if min_figures:
        page.wait_for_function(f"({_FIGURE_DRAWN})() >= {min_figures}", timeout=60_000)
    page.wait_for_function(f"({_MATH_TYPESET})() >= {min_math}", timeout=60_000)
    if min_figures:
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shot), full_page=False)
    found = {"figures": page.evaluate(_FIGURE_DRAWN), "math": page.evaluate(_MATH_TYPESET)}
    page.close()
    assert not outside, f"requests to other hosts: {outside}"
    assert not errors, f"page errors: {errors}"
    return found


@pytest.mark.slow
def test_site_renders_figures_and_math_in_chromium(site, browser):
    from _browser import artifacts_dir

    httpd, base = _serve(site)
    try:
        nb = _check_page(browser, f"{base}/course/{EXECUTED}/", artifacts_dir() / "docs_site_notebook.png", 3, 1)
        home = _check_page(browser, f"{base}/", artifacts_dir() / "docs_site_home.png", 0, 3)
    finally:
        httpd.shutdown()
    assert nb["figures"] >= 3 and nb["math"] >= 1, nb
    assert home["math"] >= 3, home


@pytest.mark.slow
def test_export_renders_figures_and_math_in_chromium(tmp_path, browser):
    from _browser import artifacts_dir

    exporter = NotebookHTMLExporter()
    html, _ = exporter.from_notebook_node(_executed_tiny_notebook())
    (tmp_path / "tiny.html").write_text(html, encoding="utf-8")
    found = _check_page(browser, (tmp_path / "tiny.html").as_uri(), artifacts_dir() / "export_tiny.png", 1, 2)
    assert found == {"figures": 1, "math": 2}


def test_nav_and_index_list_every_results_page():
    # every page of docs/results/ (paperNN.md) and every run folder's table (results.md ...) is in the
    # site's nav; docs/index.md links every paper page. A README.md is a folder's note, not a page.
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav = nav[nav.index("\nnav:") :]
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    pages = sorted(p for p in (REPO / "docs" / "results").glob("*.md") if p.name != "README.md")
    assert pages
    for page in pages:
        rel = page.relative_to(REPO / "docs").as_posix()
        assert rel in nav, f"mkdocs.yml nav lacks {rel}"
        assert f"({rel})" in index, f"docs/index.md does not link {rel}"
    for table in sorted(p for p in (REPO / "docs" / "results").glob("*/*.md") if p.name != "README.md"):
        rel = table.relative_to(REPO / "docs").as_posix()
        assert rel in nav, f"mkdocs.yml nav lacks {rel}"
