#!/usr/bin/env python3
"""Convert a local copy of the Blurb Genre Collection (Aly et al. 2019) to hierviz's HTC files (Paper 05 §5.1).

Usage::

    python data_scripts/bgc.py --from-dir /path/to/BlurbGenreCollection_EN [--out DIR]

Reads ``BlurbGenreCollection_EN_{train,dev,test}.txt`` and ``hierarchy.txt`` with
:func:`hierviz.data.loaders.htc.read_bgc` (dev becomes the val split). Writes
``<out>/bgc_htc.jsonl`` and ``<out>/bgc_tree.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _htc import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("bgc", sys.argv[1:]))
