"""mkdocs hooks for the hierviz site (named in ``mkdocs.yml``; run by ``docs/scripts/build_site.py``).

* ``on_config``: fills the *Course* section of the nav with one entry per ``notebooks/NN_*.ipynb``, and
  appends to *Results* every ``docs/results/**/*.md`` that ``mkdocs.yml`` does not list.
* ``on_files``: adds the course notebooks as pages ``course/NN_*.ipynb`` — the executed copies in
  ``$HIERVIZ_SITE_NOTEBOOKS`` (written by ``build_site.py``) where one exists, else the clean source
  (rendered without outputs); a copy executed at SMOKE size stops the build (the site shows
  medium or GPU results, never SMOKE noise) unless ``HIERVIZ_SITE_ALLOW_SMOKE=1`` (``build_site.py --size
  smoke``, a test build) — and the vendored scripts: plotly.js from the installed ``plotly``
  package and MathJax 3 from ``django-static-mathjax``, served once under ``assets/vendor/``.
* ``on_page_content``: removes the CDN scripts (MathJax 2, mermaid) that mkdocs-jupyter's
  nbconvert template writes into every notebook page, and the Sphinx roles (``:func:``) that the
  docstrings carry from the API pages.

Nothing is fetched from the internet: every script the site loads is one of its own files.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

import mkdocs.plugins
from mkdocs.structure.files import File

from hierviz.course import published_size
from hierviz.notebook_html import MATHJAX_CONFIG, mathjax_path, plotlyjs_path, strip_cdn_scripts

log = logging.getLogger("mkdocs.hooks.hierviz")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
COURSE_SECTION = "Course"
RESULTS_SECTION = "Results"
_STAGE: Path | None = None

# MathJax 3 for both the Markdown pages (pymdownx.arithmatex writes \( \) and \[ \]) and the
# notebook pages ($ $ and $$ $$ in markdown cells, as Jupyter writes them).
MATHJAX_CONFIG_JS = "window.MathJax = " + json.dumps(MATHJAX_CONFIG, indent=2) + ";\n"


def check_published(path: Path) -> str | None:
    """The size ``path`` (an executed course notebook) was run at; raises if it is SMOKE and SMOKE is not allowed.

    Raises
    ------
    mkdocs.exceptions.PluginError
        The copy was executed with ``SMOKE=True`` (or ``SIZE="smoke"``) and ``HIERVIZ_SITE_ALLOW_SMOKE``
        is not set: its numbers are noise and must not be published.
    """
    import nbformat
    from mkdocs.exceptions import PluginError

    size = published_size(nbformat.read(path, as_version=4))
    if size == "smoke" and os.environ.get("HIERVIZ_SITE_ALLOW_SMOKE", "") not in ("1", "true", "yes"):
        raise PluginError(
            f"{path} was executed at SMOKE size: its numbers are noise and the site publishes medium or GPU "
            "results only; rerun it with `python3 docs/scripts/build_site.py --notebooks "
            f"{path.stem[:2]}` (medium), or set HIERVIZ_SITE_ALLOW_SMOKE=1 for a test build"
        )
    return size


def _notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _extend_section(nav, title: str, pages: list[str]) -> None:
    for item in nav or []:
        if isinstance(item, dict) and title in item:
            entries = item[title]
            have = {e if isinstance(e, str) else next(iter(e.values())) for e in entries}
            entries.extend(p for p in pages if p not in have)


def on_config(config, **kwargs):
    _extend_section(config.nav, COURSE_SECTION, [f"course/{p.name}" for p in _notebooks()])
    # every results page, also those added after mkdocs.yml was written (listed ones keep their titles)
    docs = Path(config.docs_dir)
    results = sorted(p.relative_to(docs).as_posix() for p in (docs / "results").rglob("*.md"))
    _extend_section(config.nav, RESULTS_SECTION, results)
    return config


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter wraps the .ipynb files
def on_files(files, config, **kwargs):
    executed = Path(os.environ.get("HIERVIZ_SITE_NOTEBOOKS", ROOT / "build" / "site-notebooks"))
    # mkdocs-jupyter's wrapper needs a file with a src_dir (not File.generated): stage the copies
    global _STAGE
    _STAGE = stage = Path(tempfile.mkdtemp(prefix="hierviz-site-"))  # one per build: builds may run side by side
    (stage / "course").mkdir()
    for src in _notebooks():
        path = executed / src.name
        if not path.is_file():
            log.info("course/%s: no executed copy in %s; rendering the source without outputs", src.name, executed)
            path = src
        else:
            log.info("course/%s: executed copy at size %s", src.name, check_published(path))
        shutil.copyfile(path, stage / "course" / src.name)
        files.append(File(f"course/{src.name}", str(stage), config.site_dir, config.use_directory_urls))
    files.append(File.generated(config, "assets/vendor/plotly.min.js", abs_src_path=str(plotlyjs_path())))
    files.append(File.generated(config, "assets/vendor/mathjax/tex-svg-full.js", abs_src_path=str(mathjax_path())))
    files.append(File.generated(config, "assets/vendor/mathjax-config.js", content=MATHJAX_CONFIG_JS))
    return files


# Sphinx cross-reference roles in the docstrings (:func:`x`, :class:`~a.b.C`) have no meaning in
# Markdown: mkdocstrings shows ":func:" before the code span. Keep the code span (the last dotted
# part for a ~ reference, as Sphinx would show it).
_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|exc|obj|term|ref):<code>(~[\w.]*\.)?")


def on_page_content(html, page, config, files, **kwargs):
    if page.file.src_uri.endswith(".ipynb"):
        return strip_cdn_scripts(html)
    if page.file.src_uri.startswith("api/"):
        return _ROLE.sub("<code>", html)
    return html


def _drop_stage(**kwargs):
    global _STAGE
    if _STAGE is not None:
        shutil.rmtree(_STAGE, ignore_errors=True)
        _STAGE = None


def on_post_build(config, **kwargs):
    _drop_stage()


def on_build_error(error, **kwargs):
    _drop_stage()
