#!/usr/bin/env python3
"""Convert the HiAGM/HGCLR-preprocessed NYT corpus to hierviz's HTC files (Paper 05 §5.1).

Usage::

    python data_scripts/nyt.py --from-dir /path/to/nyt [--out DIR]

The New York Times Annotated Corpus (Sandhaus 2008) is an LDC corpus; this script reads the
preprocessed form most HTC code uses: ``nyt_train.json``, ``nyt_val.json``, ``nyt_test.json``
(JSON lines ``{"token": ..., "label": [...]}``) and ``nyt.taxonomy`` (``parent<TAB>child...``,
root ``Root``), with :func:`hierviz.data.loaders.htc.read_hiagm_jsonl`. Writes
``<out>/nyt_htc.jsonl`` and ``<out>/nyt_tree.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _htc import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("nyt", sys.argv[1:]))
