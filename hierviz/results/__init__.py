"""The results pages' tables (``docs/results/paper0[1-5].md``), built from their committed CSVs.

* :mod:`hierviz.results.tables`: one builder per table kind (the ``<!-- table: SPEC -->`` blocks
  that ``docs/results/make_tables.py`` writes and ``--check``-s);
* :mod:`hierviz.results.pages`: :func:`results_tables`, a page's tables in a notebook, built by the
  same code, so a notebook and its results page agree by construction.
"""

from hierviz.results.pages import RESULTS_PAGES, ResultsTable, page_blocks, results_dir, results_tables

__all__ = ["RESULTS_PAGES", "ResultsTable", "page_blocks", "results_dir", "results_tables"]
