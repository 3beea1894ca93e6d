"""Per-level linear evaluation of finished hier-mnist runs (docs/results/paper02.md).

For every run folder of a ``hierviz compare`` output on ``hier-mnist``, fit a multinomial
logistic regression (scikit-learn) on the saved frozen train embeddings and score the test
embeddings at three label granularities: the leaf (category, class) pair (100 classes, what
``top1`` of the results table measures), the central class digit (10) and the small category
digit (10). Prints a Markdown table of mean ± sample std over seeds.

Usage
-----
    python3 docs/results/paper02_level_probe.py runs/paper02 [runs/paper02_category_first ...]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits


def probe(z_tr: np.ndarray, y_tr: np.ndarray, z_te: np.ndarray, y_te: np.ndarray) -> float:
    """Test accuracy of a logistic regression fitted on standardised train embeddings."""
    sc = StandardScaler().fit(z_tr)
    clf = LogisticRegression(max_iter=2000, C=1.0).fit(sc.transform(z_tr), y_tr)
    return float((clf.predict(sc.transform(z_te)) == y_te).mean())


def main(folders: list[str]) -> None:
    rows: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for folder in folders:
        cfg = json.loads((Path(folder) / "config.json").read_text())
        order = cfg.get("loss", {}).get("level_order") or "class"
        for run in sorted((Path(folder) / "runs").iterdir()):
            rec = json.loads((run / "result.json").read_text())
            e = np.load(run / "embeddings.npz")
            key = (rec["method_display"], f"{order} first", rec["geometry"])
            for name, f in (("leaf (100)", lambda y: y), ("class digit (10)", lambda y: y % 10),
                            ("category digit (10)", lambda y: y // 10)):  # fmt: skip
                with threadpool_limits(1):
                    rows[key][name].append(probe(e["z_train"], f(e["y_train"]), e["z_test"], f(e["y_test"])))
    cols = ["leaf (100)", "class digit (10)", "category digit (10)"]
    print("| method | level order | geometry | seeds | " + " | ".join(cols) + " |")
    print("|---|---|---|---:|" + "---:|" * len(cols))
    for (method, order, geometry), v in rows.items():
        cells = []
        for c in cols:
            a = np.array(v[c])
            cells.append(f"{a.mean():.3f} ± {a.std(ddof=1) if len(a) > 1 else 0.0:.3f}")
        print(f"| {method} | {order} | {geometry} | {len(v[cols[0]])} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:] or ["runs/paper02"])
