"""A results page's tables in a notebook: the numbers of ``docs/results/paperNN.md``, from its CSVs.

:func:`results_tables` returns the generated tables of one results page, each rebuilt from the
committed CSVs by :func:`hierviz.results.tables.table_markdown`, the function
``docs/results/make_tables.py`` writes (and ``--check``-s) the page with. A course notebook that
shows them therefore shows the page's numbers by construction, at every notebook size:
it reads CSVs, it trains nothing.

.. code-block:: python

    from hierviz.results.pages import results_tables

    for t in results_tables("paper05", only="paper05-20news-medium"):
        display(t)  # Markdown: the section heading and the table, as on the page
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hierviz.results.tables import BLOCK, table_markdown

__all__ = ["RESULTS_PAGES", "ResultsTable", "page_blocks", "results_dir", "results_tables"]

_HEADING = re.compile(r"^(#{1,6}) +(.+?)\s*$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


@dataclass(frozen=True)
class ResultsTable:
    """One generated table of a results page (what :func:`results_tables` returns).

    Attributes
    ----------
    page : str
        The page's file name, e.g. ``"paper05.md"``.
    spec : str
        The block's ``SPEC`` (:mod:`hierviz.results.tables` lists the kinds), e.g.
        ``"paper05 paper05-20news-medium baseline=hyilr-no-cl"``.
    heading : str
        The section the block sits in: the page's headings above it, from ``##`` down, joined by
        `` › `` (e.g. ``"20 Newsgroups › Results (percent; ...)"``).
    markdown : str
        The block's Markdown, exactly as the page shows it between its two ``<!-- -->`` lines.
    lead : str
        The page's paragraph just above the block, when it has one (what the table shows, in the
        page's words); ``""`` when a heading, a code block or another table comes right before it.
    """

    page: str
    spec: str
    heading: str
    markdown: str = field(repr=False)
    lead: str = field(default="", repr=False)

    def rows(self) -> list[dict[str, str]]:
        """The first Markdown table of the block as ``[{column title: cell text}]`` (strings, as shown)."""
        lines = [ln for ln in self.markdown.splitlines() if ln.startswith("|")]
        if len(lines) < 2:
            return []
        head = [c.strip() for c in lines[0].strip().strip("|").split("|")]
        out = []
        for ln in lines[2:]:
            if ln.startswith("|---") or ln.startswith("| ---"):
                break
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            if len(cells) != len(head):
                break
            out.append(dict(zip(head, cells)))
        return out

    def _repr_markdown_(self) -> str:
        lead = f"{self.lead}\n\n" if self.lead else ""
        return f"**`docs/results/{self.page}` · {self.heading}**\n\n{lead}{self.markdown}"


def page_blocks(text: str, page: str = "") -> list[ResultsTable]:
    """The generated blocks of a results page's text, in page order (``markdown``: the committed body).

    Examples
    --------
    >>> text = "# Paper\\n## Results\\n\\nThree seeds.\\n\\n<!-- table: paper05 F -->\\n| a |\\n|---|\\n| 1 |\\n<!-- /table -->\\n"
    >>> b = page_blocks(text, "p.md")[0]
    >>> b.spec, b.heading, b.lead, b.rows()
    ('paper05 F', 'Results', 'Three seeds.', [{'a': '1'}])
    """
    out, prev_end = [], 0
    for m in BLOCK.finditer(text):
        chain: dict[int, str] = {}  # level -> the last heading of that level above the block
        for hashes, title in _HEADING.findall(_FENCE.sub("", text[: m.start()])):  # "# x" in code is no heading
            chain = {k: v for k, v in chain.items() if k < len(hashes)} | {len(hashes): title}
        heading = " › ".join(v for k, v in sorted(chain.items()) if k > 1)
        before = text[prev_end : m.start()].rstrip().rsplit("\n\n", 1)[-1].strip()
        prev_end = m.end()
        lead = "" if before.startswith(("#", "```", "<!--", "|")) or before.endswith("```") else before
        out.append(ResultsTable(page, m.group("spec").strip(), heading, m.group("body"), lead))
    return out


#: The results pages :func:`results_tables` reads, one per paper (``docs/results/paperNN.md``).
RESULTS_PAGES = ("paper01", "paper02", "paper03", "paper04", "paper05")


def results_dir(root: str | Path | None = None) -> Path:
    """The repository's ``docs/results/`` folder: the results pages and the CSVs their tables come from.

    Parameters
    ----------
    root : str or Path, optional
        The folder itself. ``None`` looks for ``docs/results/make_tables.py`` in the current
        directory and its parents (a notebook runs from ``notebooks/``), then beside the package
        (a clone installed with ``pip install -e .``).

    Returns
    -------
    Path
        The absolute folder.

    Raises
    ------
    FileNotFoundError
        No such folder: a ``pip install``-ed package ships without ``docs/``.

    Examples
    --------
    >>> (results_dir() / "paper05.md").is_file()
    True
    """
    if root is not None:
        found = Path(root).expanduser().resolve()
        if not (found / "make_tables.py").is_file():
            raise FileNotFoundError(
                f"root={str(root)!r} is not docs/results/ (no make_tables.py in it); pass the "
                "docs/results folder of a hierviz clone"
            )
        return found
    here = Path.cwd().resolve()
    starts = [here, *here.parents, Path(__file__).resolve().parents[2]]
    for start in starts:
        if (start / "docs" / "results" / "make_tables.py").is_file():
            return start / "docs" / "results"
    raise FileNotFoundError(
        f"docs/results/ not found above {here} nor beside the package ({starts[-1]}): the results pages "
        "ship with the hierviz repository, not the pip package; run from a clone (git clone, then "
        "pip install -e .) or pass root='path/to/hierviz/docs/results'"
    )


def results_tables(
    page: str | int, only: str | Sequence[str] | None = None, *, root: str | Path | None = None
) -> list[ResultsTable]:
    """A results page's tables, built from its committed CSVs by the code that writes the page.

    Each table is rebuilt by :func:`hierviz.results.tables.table_markdown`, the function
    ``docs/results/make_tables.py`` writes the page with (``--check`` in the tests keeps the committed
    page equal to it), so what a notebook shows is what the page shows. It reads CSVs
    only (no training), so it costs the same at every notebook size.

    Parameters
    ----------
    page : str or int
        ``"paper05"``, ``"paper05.md"`` or ``5``: one of :data:`RESULTS_PAGES`.
    only : str or sequence of str, optional
        Keep the tables that one of these keys selects: a key selects a table when it equals one
        word of its ``SPEC`` (e.g. ``"paper05-20news-medium"`` in
        ``"paper05 paper05-20news-medium baseline=hyilr-no-cl"``) or occurs in its ``heading``
        (case-insensitive, e.g. ``"20 newsgroups"``). ``None`` keeps every table of the page.
    root : str or Path, optional
        The ``docs/results/`` folder; ``None`` finds it (:func:`results_dir`).

    Returns
    -------
    list of ResultsTable
        In page order; each has ``page``, ``spec``, ``heading`` (the section it sits in),
        ``markdown`` (shown as Markdown by Jupyter's ``display``) and ``rows()`` (the cells as
        ``[{column: text}]``).

    Raises
    ------
    ValueError
        ``page`` is not one of the five, or ``only`` matches no table of the page.
    FileNotFoundError
        ``docs/results/`` is not found (see :func:`results_dir`).

    Examples
    --------
    >>> t = results_tables(5, only="paper05-20news-medium")[0]
    >>> t.rows()[0]["Micro-F1"], t.rows()[1]["Micro-F1"]  # HyILR and w/o CL, 3 seeds, medium preset
    ('38.62 ± 0.88', '40.05 ± 1.73')
    """
    name = f"paper{page:02d}" if isinstance(page, int) and not isinstance(page, bool) else str(page)
    name = name.removesuffix(".md")
    if name not in RESULTS_PAGES:
        raise ValueError(f"page must be one of {RESULTS_PAGES} (or 1-5), got {page!r}")
    root = results_dir(root)
    text = (root / f"{name}.md").read_text(encoding="utf-8")
    blocks = page_blocks(text, f"{name}.md")
    if only is not None:
        keys = [k.lower() for k in ([only] if isinstance(only, str) else only)]
        blocks = [b for b in blocks if any(k in b.spec.lower().split() or k in b.heading.lower() for k in keys)]
        if not blocks:
            raise ValueError(f"only={only!r} matches no table of {name}.md; see its <!-- table: SPEC --> lines")
    return [ResultsTable(b.page, b.spec, b.heading, table_markdown(b.spec, root), b.lead) for b in blocks]
