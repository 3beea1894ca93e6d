"""Paper 04 Table I in shape from the fold folders of ``hierviz compare --protocol unseen``.

Usage::

    python docs/results/paper04_table.py /tmp/p04/fold0 /tmp/p04/fold1 ...
    python docs/results/paper04_table.py --prior docs/results/paper04/20news_folds0-3.md 4 /tmp/p04/fold4
    python docs/results/paper04_table.py --seed-spread /tmp/p04/fold0 /tmp/p04/fold1 ...

prints the Markdown table of ``docs/results/paper04.md``: mean (standard error of the mean over
folds) of each metric, in percent, as the paper's Table I. Several seeds in a fold are averaged
first, so the error is the folds' (which leaves are held out); ``--seed-spread`` prints the mean
over folds of the standard deviation over seeds instead.

``--prior FILE N`` adds N earlier folds known only by such a table (mean and standard error,
rounded to 0.1): the pooled mean and standard error over N + len(folders) folds are computed
from the summary statistics (for each cell: sum = N * mean, sum of squared deviations =
(N - 1) * N * SE^2). Rounding the prior cells to 0.1 moves a pooled mean by at most
0.05 * N / (N + k) and the pooled standard error by a comparable amount.

The functions live in :mod:`hierviz.results.tables` (``folds_table``, ``seed_spread``,
``read_prior``), which ``make_tables.py`` and the course notebooks call too, so both show the same numbers.
"""

from __future__ import annotations

import sys

from hierviz.results.tables import PAPER04_COLUMNS as COLUMNS  # noqa: F401 (the columns, for readers of the tables)
from hierviz.results.tables import fold_means, read_prior, seed_spread, seed_values  # noqa: F401
from hierviz.results.tables import folds_table as table

if __name__ == "__main__":
    args = sys.argv[1:]
    prior, n_prior = None, 0
    if args[:1] == ["--prior"]:
        prior, n_prior, args = read_prior(args[1]), int(args[2]), args[3:]
    if args[:1] == ["--seed-spread"]:
        print(seed_spread(args[1:]))
        sys.exit(0)
    print(table(args, prior, n_prior))
