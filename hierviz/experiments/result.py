"""What :func:`hierviz.experiments.compare` returns: :class:`CompareResult`.

Split from :mod:`hierviz.experiments.compare` (no module over 700 lines).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.experiments.config import ExperimentConfig
from hierviz.experiments.records import (
    read_run_file,
)
from hierviz.report import read_results_csv


@dataclass
class CompareResult:
    """What :func:`compare` returns.

    Attributes
    ----------
    rows : list of dict
        One per run: ``method, geometry, seed`` and every metric (``results.csv``).
    records : list of dict
        The full run records (``result.json`` of each run).
    markdown : str
        The results table (``results.md``; paper 01 Table 1 shape, mean ± std over seeds).
    paths : dict of str to Path
        ``csv``, ``markdown``, ``html``.
    out : Path
    config : ExperimentConfig
    """

    rows: list[dict]
    records: list[dict]
    markdown: str
    paths: dict[str, Path]
    out: Path
    config: ExperimentConfig
    tree: Any = field(default=None, repr=False)

    @classmethod
    def from_tables(
        cls, paths: dict[str, Path], records: list[dict], *, out: Path, config: ExperimentConfig, tree: Any
    ) -> CompareResult:
        """The result whose rows and markdown are read back from the written tables.

        Parameters
        ----------
        paths : dict of str to Path
            :func:`hierviz.report.build_report`'s paths; ``paths["csv"]`` (``results.csv``) and
            ``paths["markdown"]`` (``results.md``, UTF-8) must exist.
        records : list of dict
            The run records the tables were built from.
        out : Path
            The comparison's folder.
        config : ExperimentConfig
        tree : LabelTree

        Raises
        ------
        OSError
            A table is missing or unreadable (``FileNotFoundError`` for a missing one).
        """
        return cls(
            rows=read_results_csv(paths["csv"]),
            records=records,
            markdown=paths["markdown"].read_text(encoding="utf-8"),
            paths=paths,
            out=out,
            config=config,
            tree=tree,
        )

    def record(self, method: str, geometry: str, seed: int = 0) -> dict:
        """The run record (``result.json``) of one method × geometry × seed.

        Raises
        ------
        KeyError
            No such run in this comparison.
        """
        for r in self.records:
            if (r["method"], r["geometry"], int(r["seed"])) == (method, geometry, int(seed)):
                return r
        raise KeyError(f"no run {method!r} · {geometry!r} · seed {seed} in this comparison")

    def arrays(self, method: str, geometry: str, seed: int = 0) -> dict[str, np.ndarray]:
        """The saved evaluation arrays of one run (``embeddings.npz``: ``z_test``, ``y_test``, …)."""
        return read_run_file(self.record(method, geometry, seed)["embeddings"], what="saved embeddings")

    def _repr_markdown_(self) -> str:  # Jupyter shows the table
        return self.markdown

    def __str__(self) -> str:
        return self.markdown
