"""hierviz.report: results tables by hand, the collapsed-embedding note, and build_report without t-SNE crashes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hierviz.methods  # noqa: F401  (registers the display names the report shows: "SupCon", not "supcon")
from hierviz.report import (
    METRICS,
    build_report,
    collapsed_note,
    read_results_csv,
    results_html_table,
    results_markdown,
    summarise,
    write_results_csv,
)


def _row(method, geometry, seed, hf1, h_acc, pc_order, violations, top1):
    return dict(
        method=method,
        geometry=geometry,
        seed=seed,
        hf1=hf1,
        h_acc=h_acc,
        pc_order=pc_order,
        violations=violations,
        top1=top1,
    )


# two seeds of SupCon and HWC on Euclidean, one seed of SupCon on Poincaré
ROWS = [
    _row("supcon", "euclidean", 0, 0.5, 0.6, 0.7, 0.3, 0.4),
    _row("supcon", "euclidean", 1, 0.7, 0.8, 0.9, 0.1, 0.6),
    _row("hwc", "euclidean", 0, 0.4, 0.5, 0.6, 0.15, 0.45),
    _row("hwc", "euclidean", 1, 0.4, 0.5, 0.6, 0.15, 0.45),
    _row("supcon", "poincare", 0, 0.25, 0.35, 0.45, 0.55, 0.65),
]
SD = math.sqrt(2 * 0.1**2)  # sample std (ddof=1) of {m - 0.1, m + 0.1}


# --------------------------------------------------------------------------- tables


def test_summarise_by_hand():
    s = summarise(ROWS)
    assert list(s) == [("supcon", "euclidean"), ("hwc", "euclidean"), ("supcon", "poincare")]
    want = {"hf1": 0.6, "h_acc": 0.7, "pc_order": 0.8, "violations": 0.2, "top1": 0.5}
    for m, mean in want.items():
        got_mean, got_std, n = s[("supcon", "euclidean")][m]
        assert got_mean == pytest.approx(mean, abs=1e-12) and got_std == pytest.approx(SD, abs=1e-12) and n == 2
    assert s[("hwc", "euclidean")]["violations"] == (pytest.approx(0.15), 0.0, 2)
    assert s[("supcon", "poincare")]["top1"] == (0.65, 0.0, 1)  # one seed: std 0
    assert summarise(ROWS, metrics=["hf1"])[("hwc", "euclidean")] == {"hf1": (pytest.approx(0.4), 0.0, 2)}


def test_results_markdown_cells_and_bold_best():
    md = results_markdown(ROWS, title="T")
    lines = md.splitlines()
    assert lines[0] == "T" and lines[1] == ""
    assert lines[2] == (
        "| Method | HF1 (Euclidean) | H-Acc (Euclidean) | PC-Order (Euclidean) | Violations ↓ (Euclidean) | "
        "Top-1 (Euclidean) | HF1 (Poincaré) | H-Acc (Poincaré) | PC-Order (Poincaré) | Violations ↓ (Poincaré) | "
        "Top-1 (Poincaré) |"
    )
    assert lines[3] == "|---|" + "|".join(["---:"] * 10) + "|"
    # higher is better except Violations (lowest bold); one seed shows the mean only; a missing cell is "–";
    # a column with a single method has no bold
    assert lines[4] == (
        "| SupCon | **0.600 ± 0.141** | **0.700 ± 0.141** | **0.800 ± 0.141** | 0.200 ± 0.141 | **0.500 ± 0.141** "
        "| 0.250 | 0.350 | 0.450 | 0.550 | 0.650 |"
    )
    assert lines[5] == (
        "| HWC | 0.400 ± 0.000 | 0.500 ± 0.000 | 0.600 ± 0.000 | **0.150 ± 0.000** | 0.450 ± 0.000 "
        "| – | – | – | – | – |"
    )
    assert lines[7] == (
        "Mean ± sample std over 1/2 seed(s); best per column in **bold**. "
        "Violations: lower is better; all other metrics: higher is better."
    )


def test_results_markdown_order_ties_and_html():
    rows = [
        _row("hwc", "euclidean", 0, 0.5, 0.5, 0.5, 0.5, 0.5),
        _row("supcon", "euclidean", 0, 0.5, 0.4, 0.5, 0.6, 0.5),
    ]
    md = results_markdown(rows, metrics=["hf1", "violations"], methods=["supcon", "hwc"])
    body = [line for line in md.splitlines() if line.startswith("| S") or line.startswith("| H")]
    assert body == ["| SupCon | **0.500** | 0.600 |", "| HWC | **0.500** | **0.500** |"]  # ties are both bold
    html = results_html_table(rows, metrics=["hf1"], methods=["supcon", "hwc"])
    assert html == (
        "<table class='results'><thead><tr><th>Method</th><th>HF1 (Euclidean)</th></tr></thead><tbody>"
        "<tr><td>SupCon</td><td><b>0.500</b></td></tr><tr><td>HWC</td><td><b>0.500</b></td></tr></tbody></table>"
    )


def test_table_input_errors():
    with pytest.raises(ValueError, match=r"^rows is empty: there are no finished runs to report$"):
        summarise([])
    with pytest.raises(TypeError, match=r"^rows must be a sequence of dicts \(one per run\), got dict$"):
        results_markdown(ROWS[0])
    with pytest.raises(ValueError, match=r"^rows\[0\] lacks the column\(s\) \['seed'\]$"):
        summarise([{"method": "supcon", "geometry": "euclidean", "hf1": 0.5}])
    with pytest.raises(ValueError, match=r"^rows: metric 'top1' is missing for method='supcon', geometry='euclidean'$"):
        summarise([{k: v for k, v in ROWS[0].items() if k != "top1"}])


def test_results_csv_round_trip(tmp_path):
    rows = [{**r, "train_seconds": 1.25, "eval_embedding": "z"} for r in ROWS]
    path = write_results_csv(rows, tmp_path / "sub" / "results.csv")
    header = path.read_text(encoding="utf-8").splitlines()[0]
    assert header == "method,geometry,seed,hf1,h_acc,pc_order,violations,top1,train_seconds,eval_embedding"
    back = read_results_csv(path)
    assert back == rows and isinstance(back[0]["seed"], int)


def test_results_csv_round_trip_with_a_classifier_on_some_rows_only(tmp_path):
    # HyILR has classifier columns, SupCon none: the CSV's empty cells read back as absent, so the
    # table rebuilt from the CSV shows "–" where the one written from the records does
    clf = {"clf_micro_f1": 0.8, "clf_macro_f1": 0.7, "clf_hi_micro_f1": 0.81, "clf_hi_macro_f1": 0.71}
    rows = [{**ROWS[0], "method": "hyilr", **clf}, ROWS[1]]
    path = write_results_csv(rows, tmp_path / "results.csv")
    assert path.read_text(encoding="utf-8").splitlines()[2].endswith(",,,,")
    back = read_results_csv(path)
    assert back == rows
    assert results_markdown(back) == results_markdown(rows)
    assert "| 0.800 | 0.700 | 0.810 | 0.710 |" in results_markdown(back) and "| – | – | – | – |" in results_markdown(
        back
    )


# --------------------------------------------------------------------------- collapsed embeddings


def test_collapsed_note_on_constant_and_near_constant_embeddings():
    const = collapsed_note(np.ones((30, 4)))
    assert const == (
        "the test embeddings are collapsed: all 30 points lie within 1e-06 of 1 point(s) "
        "(the encoder learned a constant map)"
    )
    near = np.ones((30, 4)) + np.random.default_rng(0).normal(scale=1e-9, size=(30, 4))
    assert collapsed_note(near) == const
    two = np.repeat(np.eye(4)[:2], 15, axis=0)
    assert "collapsed: all 30 points lie within 1e-06 of 2 point(s)" in collapsed_note(two)
    assert collapsed_note(np.eye(4)[:3]) == ""  # three distinct points can be laid out
    assert collapsed_note(np.random.default_rng(0).normal(size=(30, 4))) == ""
    assert collapsed_note(np.full((5, 2), np.nan)) == "the test embeddings contain NaN or inf"
    assert collapsed_note(np.zeros((0, 4))) == "there are no test embeddings"


@pytest.fixture
def no_real_tsne(monkeypatch):
    """Replace scikit-learn's TSNE by a recorder (instant, and it fails the test on a collapsed input)."""
    calls = []

    class FakeTSNE:
        def __init__(self, **kw):
            self.kw = kw

        def fit_transform(self, X):
            X = np.asarray(X)
            assert collapsed_note(X) == "", "t-SNE was called on collapsed embeddings"
            calls.append(X.shape)
            return X[:, :2].astype(np.float64)

    import sklearn.manifold

    monkeypatch.setattr(sklearn.manifold, "TSNE", FakeTSNE)
    return calls


def test_build_report_notes_collapsed_embeddings_and_skips_tsne(tmp_path, no_real_tsne):
    from hierviz.data import load_tree

    tree = load_tree("two-step")
    y = np.arange(40) % 7
    const = tmp_path / "const.npz"
    np.savez(
        const,
        z_test=np.ones((40, 8), np.float32),
        y_test=y,
        prototypes=np.zeros((0, 8), np.float32),
        proto_nodes=np.zeros(0, np.int64),
    )
    good = tmp_path / "good.npz"
    z = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    np.savez(
        good,
        z_test=z / np.linalg.norm(z, axis=1, keepdims=True),
        y_test=y,
        prototypes=np.zeros((0, 8), np.float32),
        proto_nodes=np.zeros(0, np.int64),
    )
    metrics = {"top1": 0.1, "hf1": 0.2, "h_acc": 0.2, "violations": 0.5, "pc_order": 0.5}
    recs = [
        {
            "method": "supcon",
            "geometry": "euclidean",
            "seed": 0,
            "embeddings": str(const),
            "metrics": metrics,
            "step_history": {"loss": [2.0, 1.5]},
        },
        {"method": "hwc", "geometry": "euclidean", "seed": 0, "embeddings": str(good), "metrics": metrics},
    ]
    paths = build_report(tmp_path / "out", recs, tree, header={"Dataset": "toy"}, projection="tsne")
    assert set(paths) == {"csv", "markdown", "html"} and all(p.is_file() for p in paths.values())
    html = paths["html"].read_text(encoding="utf-8")
    assert (
        "SupCon (Euclidean, seed 0): the test embeddings are collapsed: all 40 points lie within 1e-06 of "
        "1 point(s) (the encoder learned a constant map); its disk and TSNE map are not drawn."
    ) in html
    assert "HWC (Euclidean, seed 0): TSNE of test embeddings with the tree drawn over it" in html
    assert no_real_tsne == [(40, 8)]  # t-SNE ran once: for the healthy run only
    assert "could not be drawn" not in html
    assert [r["method"] for r in read_results_csv(paths["csv"])] == ["supcon", "hwc"]


def test_build_report_input_errors(tmp_path):
    from hierviz.data import load_tree

    tree = load_tree("two-step")
    with pytest.raises(ValueError, match=r"^records is empty"):
        build_report(tmp_path, [], tree, header={})
    with pytest.raises(ValueError, match=r"^projection must be one of \[.*'pca'.*\], got 'tnse'$"):
        build_report(tmp_path, [{"method": "supcon"}], tree, header={}, projection="tnse")


def test_metrics_constant():
    assert METRICS == ("hf1", "h_acc", "pc_order", "violations", "top1")


def test_build_report_bars_show_paper04_columns_for_unseen_protocol_runs(tmp_path, no_real_tsne):
    """Unseen-protocol runs: the bar chart, like the tables, shows paper 04 Table I's columns, not paper 01's."""
    import json
    import re

    from hierviz.data import load_tree
    from hierviz.report.tables import METRICS, UNSEEN_METRICS

    tree = load_tree("two-step")
    emb = tmp_path / "e.npz"
    z = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    np.savez(emb, z_test=z, y_test=np.arange(40) % 7, prototypes=np.zeros((0, 8), np.float32),
             proto_nodes=np.zeros(0, np.int64))  # fmt: skip
    paper01 = {"top1": 0.1, "hf1": 0.2, "h_acc": 0.2, "violations": 0.5, "pc_order": 0.5}
    unseen = {m: 0.1 * (i + 1) for i, m in enumerate(UNSEEN_METRICS)}
    recs = [
        {"method": m, "geometry": "euclidean", "seed": s, "embeddings": str(emb), "metrics": {**paper01, **unseen}}
        for m in ("t+pl", "pl")
        for s in (0, 1)
    ]
    html = build_report(tmp_path / "out", recs, tree, header={"Dataset": "toy"}, projection="pca")["html"]
    text = html.read_text(encoding="utf-8")
    assert "paper 04 Table I columns; MNR: lower is better" in text
    bars = [json.loads(m) for m in re.findall(r'"x":\s*(\[[^\]]*\])', text)]
    assert list(UNSEEN_METRICS) in bars and list(METRICS) not in bars
