"""Notebook 10, the capstone: one table per dataset with baselines and paired CIs, a "which method when" guide.

Everything here reads what :func:`hierviz.experiments.compare` returned (its ``records``, ``arrays``
and ``tree``; any object with those works), so the notebook holds no library code:

* :func:`chance_report` -- the exact expected score of a uniformly random leaf (the *Chance* row);
* :func:`capstone_rows` / :func:`capstone_markdown` -- per method × geometry the mean ± std over seeds
  of HF1, H-Acc, Top-1 and Violations, the paired difference to a baseline method with its 95 % CI
  (:func:`hierviz.report.stats`' Student-t interval, here through :func:`hierviz.course.paired_ci`'s
  formula), and the Majority-class and Chance rows;
* :func:`method_guide` -- the closing guide, written from those rows (so it says what the numbers
  of *this* run say, at whatever size it ran);
* :func:`run_disk_panel` -- dropdowns (dataset, method) over the Poincaré disk of every hyperbolic run;
* :func:`capstone_overrides` -- the ``compare`` settings of both tables (one protocol, one split);
* :func:`table_setting` -- refuses a table whose runs mix protocols or splits;
* :func:`capstone_rows_from_folder` -- the same rows from a committed ``docs/results/`` folder;
* :func:`radius_reading` -- the one reading of the radius: prototype radii only beside clip fraction and spread.

The package, one idea a module: :mod:`.setting` (what one table is: metrics, protocol, settings,
checks, the radius reading, the Chance row), :mod:`.rows` (the rows), :mod:`.guide` (the Markdown
tables and the guide), :mod:`.figures` (the bar chart and the disk panel).
"""

from hierviz.viz.capstone.figures import capstone_figure, run_disk_panel
from hierviz.viz.capstone.guide import capstone_markdown, method_guide, radius_table_markdown
from hierviz.viz.capstone.rows import capstone_rows, capstone_rows_from_folder, write_chance_csv
from hierviz.viz.capstone.setting import (
    CAPSTONE_METRICS,
    CAPSTONE_PROTOCOL,
    FLAT_RADIUS,
    SATURATED_CLIP,
    capstone_overrides,
    chance_report,
    radius_reading,
    table_setting,
)

__all__ = [
    "CAPSTONE_METRICS",
    "CAPSTONE_PROTOCOL",
    "capstone_overrides",
    "FLAT_RADIUS",
    "SATURATED_CLIP",
    "capstone_rows_from_folder",
    "write_chance_csv",
    "radius_reading",
    "radius_table_markdown",
    "table_setting",
    "capstone_figure",
    "capstone_markdown",
    "capstone_rows",
    "chance_report",
    "method_guide",
    "run_disk_panel",
]
