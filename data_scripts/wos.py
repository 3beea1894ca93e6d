#!/usr/bin/env python3
"""Convert a local copy of WOS-46985 (Kowsari et al. 2017) to hierviz's HTC files (Paper 05 (HyILR) §5.1).

Usage::

    python data_scripts/wos.py --from-dir /path/to/WebOfScience/WOS46985 [--out DIR]

Reads ``X.txt`` (one abstract per line), ``YL1.txt`` (domain id) and ``YL2.txt`` (area id within
the domain) with :func:`hierviz.data.loaders.htc.read_wos`; the tree is domain → area. WOS has no
official split: 20 % of the documents (seed 0) are the test split. Writes ``<out>/wos_htc.jsonl``
and ``<out>/wos_tree.json``; then::

    hierviz htc --dataset <out>/wos_htc.jsonl --methods hyilr,hyilr-no-cl
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _htc import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("wos", sys.argv[1:]))
