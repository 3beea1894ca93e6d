"""Shared command line of ``data_scripts/{wos,rcv1,nyt,bgc}.py``: parse a local corpus, write HTC files.

Each script converts files the user already has (nothing is downloaded) with the parser in
:mod:`hierviz.data.loaders.htc` and writes ``<out>/<name>_htc.jsonl`` (one
``{"text", "labels", "split"}`` per line) and ``<out>/<name>_tree.json``, which
``hierviz htc --dataset <out>/<name>_htc.jsonl`` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

from _common import default_out_dir


def convert(name: str, folder: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Parse ``folder`` as corpus ``name`` and write the two files into ``out``; returns the ``.jsonl`` path."""
    from hierviz.data.loaders import htc

    f = Path(folder)
    if name == "wos":
        texts, labels, tree, split = htc.read_wos(f)
    elif name == "rcv1":
        texts, labels, tree, split = htc.read_rcv1(f)
    elif name == "nyt":
        files = {s: f / f"nyt_{s}.json" for s in ("train", "val", "test") if (f / f"nyt_{s}.json").is_file()}
        if not files:
            raise FileNotFoundError(f"NYT: no nyt_{{train,val,test}}.json in {f}")
        texts, labels, tree, split = htc.read_hiagm_jsonl(files, f / "nyt.taxonomy", name="nyt")
    elif name == "bgc":
        texts, labels, tree, split = htc.read_bgc(f)
    else:  # pragma: no cover - the four scripts pass their own name
        raise ValueError(f"unknown corpus {name!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}_htc.jsonl"
    htc.write_htc_jsonl(path, texts, labels, split)
    tree.to_json(out / f"{name}_tree.json")
    return path


def main(name: str, argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{name}.py", description=f"convert a local {name.upper()} copy to HTC files")
    p.add_argument("--from-dir", required=True, help="folder with the corpus files")
    p.add_argument("--out", default=None, help="output folder (default: $HIERVIZ_DATA or ../shared/data)/text")
    a = p.parse_args(argv)
    out = Path(a.out) if a.out else default_out_dir() / "text"
    try:
        path = convert(name, a.from_dir, out)
    except (FileNotFoundError, ValueError) as exc:
        print(f"{name}.py: error: {exc}", file=sys.stderr)
        return 2
    with open(path, encoding="utf-8") as fh:
        n = Counter(json.loads(line)["split"] for line in fh)
    print(f"wrote {path} ({dict(n)}) and {path.with_name(name + '_tree.json')}")
    return 0
