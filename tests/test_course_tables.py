"""Issue 26: each notebook's published tables agree with its results page.

A notebook shows a results page's tables through :func:`hierviz.results.pages.results_tables`,
which rebuilds them with the builders ``docs/results/make_tables.py`` writes the pages with. These
tests check that (a) the function gives, for every page, exactly the generated blocks committed in
the page (so a notebook and its page agree by construction), that every ``results_tables`` call
of a notebook selects tables that exist, and (b) that every number a notebook's prose quotes in a
sentence citing ``docs/results/paperNN.md`` appears in that page.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from hierviz.results import pages as results_pages
from hierviz.results.pages import RESULTS_PAGES, page_blocks, results_dir, results_tables

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: The paper notebooks and the page each one shows (notebook 05 is paper 01's comparison).
PAGE_OF = {"05": "paper01", "06": "paper02", "07": "paper03", "08": "paper04", "09": "paper05"}

_REF = re.compile(r"paper0([1-5])\.md")
# a quoted result: a signed or unsigned decimal (36.9, -0.65, +1.75) or a percentage (97 %, 100.1 %)
_NUM = re.compile(r"(?<![\w.])([-+−]?\d+\.\d+|\d+(?=\s?%))(?![\d])")
_ABBREV = re.compile(r"(?:\b(?:Eq|Eqs|Fig|Figs|e\.g|i\.e|cf|vs|et al|No|Sec|resp))\.$")


def _sentences(markdown: str) -> list[str]:
    """Sentences of a Markdown cell: paragraphs and list items, split after . ! ? (not after "Eq.", "e.g.", ...)."""
    out = []
    for para in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )", markdown):
        pieces = re.split(r"(?<=[.!?])\s+", " ".join(para.split()))
        merged: list[str] = []
        for p in pieces:
            if merged and _ABBREV.search(merged[-1]):
                merged[-1] += " " + p
            else:
                merged.append(p)
        out += merged
    return out


def _in_page(number: str, page_text: str) -> bool:
    """Whether ``number`` occurs in the page as a whole number token (with its sign, when it has one)."""
    number = number.replace("−", "-")
    sign, digits = (number[0], number[1:]) if number[0] in "+-" else ("", number)
    text = page_text.replace("−", "-")
    pattern = (re.escape(sign) if sign else r"(?<![\d.])") + re.escape(digits) + r"(?![\d]|\.\d)"
    if sign:
        pattern = r"(?<![\d.])" + pattern
    return re.search(pattern, text) is not None


def quoted_numbers_missing(markdown: str, pages: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(page, number, sentence)`` for every number of a sentence citing ``paperNN.md`` that the page lacks.

    Only decimals and percentages count as quoted results; whole numbers without ``%`` (sizes,
    epochs, seeds, equation numbers) are settings, not results. Inline code is skipped.
    """
    missing = []
    for sentence in _sentences(markdown):
        cited = sorted(set(_REF.findall(sentence)))
        if not cited:
            continue
        numbers = _NUM.findall(re.sub(r"`[^`]*`", "", sentence))
        for n in numbers:
            if not any(_in_page(n, pages[f"paper0{k}"]) for k in cited):
                missing.append((",".join(f"paper0{k}.md" for k in cited), n, sentence))
    return missing


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {name: (RESULTS / f"{name}.md").read_text(encoding="utf-8") for name in RESULTS_PAGES}


# ------------------------------------------------------------------ (a) notebook == page, by construction
@pytest.mark.parametrize("page", RESULTS_PAGES)
def test_results_tables_equal_the_pages_generated_blocks(page, pages):
    committed = page_blocks(pages[page], f"{page}.md")
    built = results_tables(page, root=RESULTS)
    assert [t.spec for t in built] == [b.spec for b in committed] and committed, f"{page}: blocks differ"
    for t, b in zip(built, committed):
        assert t.markdown == b.markdown, f"{page}.md, table {t.spec!r}: the page is stale (make_tables.py)"
        assert t.heading == b.heading and t.page == f"{page}.md"


def test_results_tables_reads_the_numbers_of_the_page():
    # paper 05's table C (medium preset, 3 seeds): hand-read from docs/results/paper05.md
    c = results_tables(5, only="paper05-20news-medium", root=RESULTS)
    assert [t.spec.split()[0] for t in c] == ["paper05", "paper05-levels"]
    rows = c[0].rows()
    assert [r["method"] for r in rows] == ["HyILR (`hyilr`)", "w/o CL (`hyilr-no-cl`)", "*Frequency prior*"]
    assert rows[0]["Micro-F1"] == "38.62 ± 0.88" and rows[1]["Macro-F1"] == "29.51 ± 1.97"
    assert "| `hyilr` | 0.3 | -1.43 [-7.34, +4.48] |" in c[0].markdown
    assert c[0].heading.startswith("Results › C: the contrastive term")
    assert "docs/results/paper05.md" in c[0]._repr_markdown_()
    # a key selects by a whole word of the SPEC or by the heading, several keys by any of them
    assert len(results_tables("paper04", only="20 Newsgroups", root=RESULTS)) == 3
    assert len(results_tables("paper01.md", only=["paper01-h200-sample", "ham10000-medium-cpu"], root=RESULTS)) == 2


def test_results_tables_errors_name_the_argument_and_the_fix(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"page must be one of .*got 6"):
        results_tables(6, root=RESULTS)
    with pytest.raises(ValueError, match=r"only='nothing' matches no table of paper03\.md"):
        results_tables("paper03", only="nothing", root=RESULTS)
    with pytest.raises(FileNotFoundError, match=r"root=.* is not docs/results/ \(no make_tables\.py"):
        results_dir(tmp_path)
    # a pip-installed package: no docs/results above the working directory, none beside the package
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(results_pages, "__file__", str(tmp_path / "site-packages" / "hierviz" / "results" / "pages.py"))
    with pytest.raises(FileNotFoundError, match=r"docs/results/ not found .*pip install -e \.\) or pass root="):
        results_tables("paper05")
    monkeypatch.chdir(ROOT / "notebooks")  # where a notebook runs: found in the parent
    assert results_dir() == RESULTS


def _calls(nb) -> list[tuple[str, object]]:
    """The literal ``(page, only)`` of every ``results_tables(...)`` call in a notebook's code."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "results_tables(" not in cell.source:
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "results_tables":
                kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                out.append((ast.literal_eval(node.args[0]), kw.get("only")))
    return out


@pytest.mark.parametrize("stem", sorted(PAGE_OF))
def test_each_paper_notebook_shows_its_page(stem, pages):
    (path,) = [p for p in NOTEBOOKS if p.name.startswith(stem + "_")]
    nb = nbformat.read(path, as_version=4)
    calls = _calls(nb)
    assert calls, f"{path.name}: no results_tables(...) cell (section 'The results page's numbers')"
    assert any("### The results page's numbers" in c.source for c in nb.cells if c.cell_type == "markdown")
    for page, only in calls:
        assert page == PAGE_OF[stem], f"{path.name} shows {page}, its paper's page is {PAGE_OF[stem]}"
        assert results_tables(page, only=only, root=RESULTS), f"{path.name}: only={only!r} selects nothing"


# ------------------------------------------------------------------ (b) quoted numbers appear in the page
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_numbers_quoted_next_to_a_results_page_appear_in_it(path, pages):
    nb = nbformat.read(path, as_version=4)
    missing = [m for c in nb.cells if c.cell_type == "markdown" for m in quoted_numbers_missing(c.source, pages)]
    assert not missing, f"{path.name}: quoted number(s) not in the cited page: " + "; ".join(
        f"{n} ({p}) in {s!r}" for p, n, s in missing
    )


@pytest.mark.parametrize("doc", ["docs/solutions.md", "docs/course.md"])
def test_numbers_the_solutions_quote_from_a_results_page_appear_in_it(doc, pages):
    # the checked solutions quote the results pages as much as the notebooks do (solution 08-3 once
    # said "0.97-1.00" where paper04.md shows 97.1-100.1 %)
    missing = quoted_numbers_missing((ROOT / doc).read_text(encoding="utf-8"), pages)
    assert not missing, f"{doc}: quoted number(s) not in the cited page: " + "; ".join(
        f"{n} ({p}) in {s!r}" for p, n, s in missing
    )


def test_the_quote_check_catches_a_wrong_number(pages):
    # paper05.md's table C: HyILR 38.99, w/o CL 39.63; 38.90 is nowhere on the page
    good = "Table C of `docs/results/paper05.md` has HyILR at 38.99 against 39.63 for w/o CL (2,000 messages)."
    assert quoted_numbers_missing(good, pages) == []
    bad = good.replace("38.99", "38.90")
    assert [(p, n) for p, n, _ in quoted_numbers_missing(bad, pages)] == [("paper05.md", "38.90")]
    # the sign counts: the paired difference is -0.65, not +0.65; "Eq. 15." does not end the sentence
    assert quoted_numbers_missing("In Eq. 15. the page `paper05.md` gives -0.65 [-3.04, +1.75].", pages) == []
    assert [n for _, n, _ in quoted_numbers_missing("`paper05.md` gives +0.65.", pages)] == ["+0.65"]
    # a number in another sentence, or with no page cited, is not a quote of the page
    assert quoted_numbers_missing("HyILR scores 12.34 here. See `docs/results/paper05.md`.", pages) == []
