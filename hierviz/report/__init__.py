"""Results tables and the self-contained HTML report of ``hierviz compare``.

Three outputs per comparison:

* ``results.csv`` - one row per method x geometry x seed with every metric and the timings;
* ``results.md`` - a Markdown table shaped like paper 01 Table 1/2: one row per method, for
  each geometry the columns HF1, H-Acc, PC-Order, Violations and Top-1 as "mean ± std" over
  seeds, best per column in bold;
* ``report.html`` - one file with no external resources (plotly.js is inlined once).

:mod:`.tables` holds the tables, :mod:`.html` the page, :mod:`.run_record` the typed run record
(:class:`RunRecord`, one ``result.json``); run records are read by
:func:`hierviz.experiments.load_records`.
"""

from hierviz.report.html import build_report, collapsed_note, write_report_html
from hierviz.report.run_record import RunRecord
from hierviz.report.tables import (
    GEOMETRY_LABELS,
    LOWER_IS_BETTER,
    METHOD_LABELS,
    METRIC_LABELS,
    METRICS,
    geometry_label,
    method_label,
    read_results_csv,
    results_html_table,
    results_markdown,
    summarise,
    write_results_csv,
)

__all__ = [
    "METRICS",
    "METRIC_LABELS",
    "GEOMETRY_LABELS",
    "METHOD_LABELS",
    "LOWER_IS_BETTER",
    "method_label",
    "geometry_label",
    "write_results_csv",
    "read_results_csv",
    "summarise",
    "results_markdown",
    "results_html_table",
    "write_report_html",
    "build_report",
    "collapsed_note",
    "RunRecord",
]
