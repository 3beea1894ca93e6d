#!/usr/bin/env python3
"""Convert a local copy of RCV1-V2 (Lewis et al. 2004, LYRL2004 files) to hierviz's HTC files (Paper 05 §5.1).

Usage::

    python data_scripts/rcv1.py --from-dir /path/to/rcv1 [--out DIR]

Needs ``rcv1.topics.hier.orig``, ``rcv1-v2.topics.qrels`` and ``lyrl2004_tokens_*.dat`` in the
folder (RCV1 is licensed by NIST/Reuters; nothing is downloaded). Read with
:func:`hierviz.data.loaders.htc.read_rcv1`; the official LYRL2004 train/test split is kept.
Writes ``<out>/rcv1_htc.jsonl`` and ``<out>/rcv1_tree.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _htc import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("rcv1", sys.argv[1:]))
