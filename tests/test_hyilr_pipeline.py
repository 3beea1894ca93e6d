"""HyILR (Paper 05) beyond the loss: text model (Eqs. 8–9), HTC data and parsers, hierviz htc, figures."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from hierviz.data.loaders.htc import (
    load_20news_htc,
    load_htc_jsonl,
    paths_to_targets,
    read_bgc,
    read_hiagm_jsonl,
    read_rcv1,
    read_wos,
    synthetic_htc,
    targets_to_labels,
    write_htc_jsonl,
)
from hierviz.hierarchy import LabelTree
from hierviz.losses.hyilr import HyperbolicScales, hyilr_loss, label_relations
from hierviz.models.text import BertTextEncoder, HyILRModel, TransformerTextEncoder, WordVocab

REPO = Path(__file__).resolve().parents[1]


class FixedEncoder(torch.nn.Module):
    """Returns a fixed X (B, s, h) whatever the ids: to check Eqs. 8–9 by hand."""

    def __init__(self, X: torch.Tensor) -> None:
        super().__init__()
        self.X, self.h = X, X.shape[-1]

    def forward(self, ids, mask):
        return self.X


# ---------------------------------------------------------------- model
def test_vocab_fit_on_train_only_and_padding():
    v = WordVocab(max_size=10).fit(["alpha beta", "beta gamma"])
    assert v.words == ["alpha", "beta", "gamma"] and len(v) == 6
    ids, mask = v.encode(["gamma delta alpha", ""], max_len=5)
    assert ids.tolist() == [[1, 5, 2, 3, 0], [1, 0, 0, 0, 0]]  # delta unseen -> [UNK] = 2
    assert mask.sum(1).tolist() == [4, 1]
    with pytest.raises(RuntimeError, match="fit"):
        WordVocab().encode(["x"])


def test_label_text_attention_eq8_by_hand():
    torch.manual_seed(0)
    X = torch.randn(2, 4, 3)
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    model = HyILRModel(FixedEncoder(X), num_labels=5, dropout=0.0).eval()
    out = model(torch.zeros(2, 4, dtype=torch.long), mask)
    W = model.W_L.detach()
    for i in range(2):
        n = int(mask[i].sum())
        A = X[i, :n] @ W  # (n, c)
        att = torch.softmax(A.T, dim=-1)  # (c, n)
        torch.testing.assert_close(out["attention"][i, :, :n], att)
        assert float(out["attention"][i, :, n:].detach().abs().sum()) == 0.0  # padding masked
        F = att @ X[i, :n]
        logit = model.classifier(F.reshape(1, -1))[0]  # Eq. 9 on vec(F), row-major
        torch.testing.assert_close(out["logits"][i], logit)
    torch.testing.assert_close(out["text"], X[:, 0])
    assert out["labels"].data_ptr() == model.W_L.data_ptr()  # W_L^T shared with the attention


def test_no_attention_ablation_is_elementwise():
    X = torch.randn(1, 3, 2)
    model = HyILRModel(FixedEncoder(X), num_labels=4, attention=False, dropout=0.0).eval()
    out = model(torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool))
    F = X[0, 0][None] * model.W_L.detach().T
    torch.testing.assert_close(out["logits"][0], model.classifier(F.reshape(1, -1))[0])
    assert "attention" not in out


def test_transformer_padding_invariant_and_cl_reaches_W_L():
    torch.manual_seed(0)
    enc = TransformerTextEncoder(20, h=8, layers=1, heads=2, max_len=10, dropout=0.0)
    model = HyILRModel(enc, num_labels=3, dropout=0.0).eval()
    ids = torch.tensor([[1, 5, 6, 7, 0, 0]])
    a = model(ids, ids != 0)["logits"]
    ids2 = torch.tensor([[1, 5, 6, 7, 0, 0, 0, 0]])
    torch.testing.assert_close(model(ids2, ids2 != 0)["logits"], a, rtol=1e-5, atol=1e-6)
    # the contrastive term alone moves W_L (label features shared with the attention)
    tree = LabelTree.from_nested({"root": {"a": ["a1"]}})
    out = model(ids, ids != 0)
    y = torch.tensor([[True, False, False]])
    loss, _ = hyilr_loss(out["logits"].detach(), out["text"], out["labels"], y, HyperbolicScales(8),
                         (torch.zeros(3, 3, dtype=torch.bool), torch.ones(3, 3, dtype=torch.bool)), lam=1.0)  # fmt: skip
    loss.backward()
    assert model.W_L.grad is not None and float(model.W_L.grad.abs().sum()) > 0
    del tree


def test_bert_needs_transformers(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match="pip install transformers"):
        BertTextEncoder("/nonexistent")


# ---------------------------------------------------------------- data
TREE = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})


def test_targets_round_trip_and_errors():
    y = paths_to_targets([["a1", "b1"], ["a"]], TREE)
    assert targets_to_labels(y, TREE) == [["a", "b", "a1", "b1"], ["a"]]
    assert targets_to_labels(y, TREE, leaves_only=True) == [["a1", "b1"], ["a"]]
    with pytest.raises(ValueError, match="document 0: label 'zz'"):
        paths_to_targets([["zz"]], TREE)


def test_20news_htc_synthetic_paths():
    d = load_20news_htc(synthetic=True, max_train=200, max_test=50)
    assert (d.split == "test").sum() == 50 and (d.split != "test").sum() == 200 and (d.split == "val").sum() == 20
    t = d.tree
    # one full path per message: its number of labels is the group's depth, all ancestors set
    leaves = [[n for n in row if t.is_leaf(n)] for row in targets_to_labels(d.targets, t)]
    assert all(len(x) == 1 for x in leaves)
    assert [int(r.sum()) for r in d.targets] == [t.depth(x[0]) for x in leaves]
    assert {t.depth(x[0]) for x in leaves} == {2, 3}


def test_synthetic_htc_is_multi_path():
    d = synthetic_htc(n_docs=60, max_paths=3, seed=1)
    leaves_per_doc = [sum(d.tree.is_leaf(n) for n in row) for row in targets_to_labels(d.targets, d.tree)]
    assert max(leaves_per_doc) > 1 and min(leaves_per_doc) >= 1


def test_jsonl_round_trip(tmp_path):
    write_htc_jsonl(tmp_path / "toy_htc.jsonl", ["x y", "z"], [["a1"], ["b1", "a2"]], ["train", "test"])
    TREE.to_json(tmp_path / "toy_tree.json")
    d = load_htc_jsonl(tmp_path / "toy_htc.jsonl")
    assert d.texts == ["x y", "z"] and d.targets.sum(1).tolist() == [2, 4]
    (tmp_path / "bad_htc.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match="bad_htc.jsonl:1"):
        load_htc_jsonl(tmp_path / "bad_htc.jsonl", TREE)
    with pytest.raises(FileNotFoundError, match="tree"):
        load_htc_jsonl(tmp_path / "bad_htc.jsonl")


def _tiny_corpora(root: Path) -> dict[str, Path]:
    wos = root / "wos"
    wos.mkdir()
    (wos / "X.txt").write_text("deep nets\nprotein folding\ngraph cuts\n")
    (wos / "YL1.txt").write_text("0\n1\n0\n")
    (wos / "YL2.txt").write_text("3\n0\n4\n")
    rcv = root / "rcv1"
    rcv.mkdir()
    (rcv / "rcv1.topics.hier.orig").write_text(
        "parent: None       child: Root    child-description: Root\n"
        "parent: Root       child: CCAT    child-description: CORPORATE/INDUSTRIAL\n"
        "parent: CCAT       child: C15     child-description: PERFORMANCE\n"
        "parent: Root       child: ECAT    child-description: ECONOMICS\n"
    )
    (rcv / "rcv1-v2.topics.qrels").write_text("CCAT 2286 1\nC15 2286 1\nECAT 2287 1\n")
    (rcv / "lyrl2004_tokens_train.dat").write_text(".I 2286\n.W\nprofit rose\n\n.I 2287\n.W\ninflation fell\n")
    nyt = root / "nyt"
    nyt.mkdir()
    (nyt / "nyt.taxonomy").write_text("Root\tNews\tArts\nNews\tWorld\n")
    (nyt / "nyt_train.json").write_text('{"token": ["war", "news"], "label": ["News", "World"]}\n')
    (nyt / "nyt_test.json").write_text('{"token": "a play", "label": ["Arts"]}\n')
    bgc = root / "bgc"
    bgc.mkdir()
    (bgc / "hierarchy.txt").write_text("Fiction\nFiction\tFantasy\nNonfiction\n")
    (bgc / "BlurbGenreCollection_EN_train.txt").write_text(
        "<book date='x'>\n<title>T</title>\n<body>Dragons fly.</body>\n<metadata>\n<topics>"
        "<d0>Fiction</d0><d1>Fantasy</d1></topics>\n</metadata>\n</book>\n"
    )
    (bgc / "BlurbGenreCollection_EN_test.txt").write_text(
        "<book>\n<body>Taxes explained.</body>\n<metadata><topics><d0>Nonfiction</d0></topics></metadata>\n</book>\n"
    )
    return {"wos": wos, "rcv1": rcv, "nyt": nyt, "bgc": bgc}


def test_corpus_parsers(tmp_path):
    c = _tiny_corpora(tmp_path)
    texts, labels, tree, split = read_wos(c["wos"])
    assert texts[1] == "protein folding" and labels[0] == ["d0.a3"] and tree.parent("d0.a3") == "d0"
    texts, labels, tree, split = read_rcv1(c["rcv1"])
    assert texts == ["profit rose", "inflation fell"] and labels[0] == ["CCAT", "C15"]
    assert tree.parent("C15") == "CCAT" and split == ["train", "train"]
    texts, labels, tree, split = read_hiagm_jsonl({"train": c["nyt"] / "nyt_train.json",
                                                   "test": c["nyt"] / "nyt_test.json"}, c["nyt"] / "nyt.taxonomy")  # fmt: skip
    assert texts == ["war news", "a play"] and tree.parent("World") == "News" and split == ["train", "test"]
    texts, labels, tree, split = read_bgc(c["bgc"])
    assert labels == [["Fiction", "Fantasy"], ["Nonfiction"]] and tree.parent("Fantasy") == "Fiction"
    with pytest.raises(FileNotFoundError, match="X.txt"):
        read_wos(tmp_path)


def test_data_scripts_convert(tmp_path, capsys):
    c = _tiny_corpora(tmp_path)
    spec = importlib.util.spec_from_file_location("wos_script", REPO / "data_scripts" / "wos.py")
    sys.path.insert(0, str(REPO / "data_scripts"))
    try:
        for name in ("wos", "rcv1", "nyt", "bgc"):
            spec = importlib.util.spec_from_file_location(f"{name}_script", REPO / "data_scripts" / f"{name}.py")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            assert mod.main(name, ["--from-dir", str(c[name]), "--out", str(tmp_path / "out")]) == 0
            d = load_htc_jsonl(tmp_path / "out" / f"{name}_htc.jsonl")
            assert len(d) >= 2 and d.targets.any(1).all()
        assert mod.main("bgc", ["--from-dir", str(tmp_path / "nope"), "--out", str(tmp_path)]) == 2
        assert "bgc.py: error:" in capsys.readouterr().err
    finally:
        sys.path.remove(str(REPO / "data_scripts"))


# ---------------------------------------------------------------- training, CLI, report
def test_htc_cli_smoke_resume_and_errors(tmp_path, capsys):
    """``hierviz htc`` (through compare): Table 4 with the frequency prior, a resume that retrains
    nothing, and one-line errors for a misspelt method, a bad option, --bert and --engine."""
    from hierviz.cli import main

    out = tmp_path / "htc"
    argv = ["htc", "--preset", "smoke", "--dataset", "synthetic-htc", "--methods", "hyilr,hyilr-no-cl",
            "--seeds", "0", "--set", "max_train=40", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    md = (out / "htc_results.md").read_text()
    assert "HyILR (`hyilr`)" in md and "w/o CL" in md
    # the frequency prior's row, scored by hand from the loaded splits (label sets as they are)
    from hierviz.methods.paper05 import HTCConfig, load_data

    data = load_data(HTCConfig.preset("smoke", dataset="synthetic-htc", max_train=40))
    Ytr, Yte = data.part("train").targets, data.part("test").targets
    from collections import Counter

    mode = np.array(Counter(map(tuple, Ytr)).most_common(1)[0][0])  # ties: the first one seen
    cols = [i for i, n in enumerate(data.tree.nodes) if n != data.tree.root]
    tp = (Yte[:, cols] & mode[cols]).sum()
    micro = 2 * tp / (Yte[:, cols].sum() + len(Yte) * mode[cols].sum())
    assert f"| *Frequency prior* | – | – | {100 * micro:.2f} |" in md
    assert "several label paths" in md  # synthetic-htc: the single-leaf rule is said under the table
    rec = json.loads((out / "runs" / "hyilr-euclidean-s0" / "result.json").read_text())
    assert set(rec["classifier_metrics"]) == {"clf_micro_f1", "clf_macro_f1", "clf_hi_micro_f1", "clf_hi_macro_f1"}
    assert rec["learned"]["c"] > 0 and rec["early_stopping"]["patience"] == 1
    assert "HyILR" in (out / "report.html").read_text()
    mtime = (out / "runs" / "hyilr-euclidean-s0" / "result.json").stat().st_mtime_ns
    assert main([*argv, "--resume"]) == 0  # resumed: nothing retrained
    assert (out / "runs" / "hyilr-euclidean-s0" / "result.json").stat().st_mtime_ns == mtime
    capsys.readouterr()
    other = [a if a != "max_train=40" else "max_train=50" for a in argv]  # other data: another corpus file
    assert main(other) == 2
    assert "made with different settings (data.path" in capsys.readouterr().err
    assert main(["htc", "--methods", "hyilr-nocl", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "hyilr-no-cl" in err and "Traceback" not in err
    assert main(["htc", "--preset", "smoke", "--set", "lam=-1", "--out", str(tmp_path / "y")]) == 2
    capsys.readouterr()
    assert main(["htc", "--preset", "smoke", "--bert", "ckpt", "--out", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--bert: hierviz htc runs through compare" in err[0] and "--preset full" in err[0]
    with pytest.raises(SystemExit):  # hierviz 0.3: the token driver and its --engine flag are gone
        main(["htc", "--engine", "compare", "--out", str(tmp_path / "w")])
    assert not (tmp_path / "z").exists() and not (tmp_path / "w").exists()


def test_figures():
    from hierviz.viz.hyilr import attention_heatmap, hyperboloid_figure, label_disk_figure, negatives_figure

    rng = np.random.default_rng(0)
    names = [n for n in TREE.nodes if n != TREE.root]
    for geo in ("lorentz", "poincare", "euclidean"):
        s = HyperbolicScales(4, geometry=geo)
        pts = s.project_labels(torch.as_tensor(rng.normal(size=(5, 4)))).detach().numpy()
        fig = label_disk_figure(pts, names, TREE, c=1.0, geometry=geo)
        assert [t.name for t in fig.data][-2:] == ["depth 1", "depth 2"]
        xy = np.concatenate([np.c_[t.x, t.y] for t in fig.data if t.name.startswith("depth")])
        assert (np.linalg.norm(xy, axis=1) < 1.0).all()
    # the geometry as an object (its own c) draws the same figure as its name and c; k= is deprecated
    from hierviz.geometry import Lorentz

    pts = HyperbolicScales(4, geometry="lorentz").project_labels(torch.as_tensor(rng.normal(size=(5, 4))))
    pts = pts.detach().numpy()
    by_name = label_disk_figure(pts, names, TREE, c=2.0, geometry="lorentz")
    by_object = label_disk_figure(pts, names, TREE, geometry=Lorentz(c=2.0))
    with pytest.warns(DeprecationWarning, match="k= is now c="):
        old = label_disk_figure(pts, names, TREE, k=2.0, geometry="lorentz")
    for other in (by_object, old):
        for a, b in zip(by_name.data, other.data):
            np.testing.assert_allclose(np.asarray(a.x, dtype=float), np.asarray(b.x, dtype=float), equal_nan=True)
    assert max(np.hypot(t.x, t.y).max() for t in by_name.data if t.name.startswith("depth")) < 1 / np.sqrt(2.0)
    f1, f2 = hyperboloid_figure(1.0), hyperboloid_figure(4.0)
    assert f1.layout.title.text != f2.layout.title.text  # distances change with k
    z = f2.data[0].z
    assert float(np.min(z)) == pytest.approx(0.5)  # the sheet's vertex at 1/sqrt(k)
    att = np.full((2, 3), 1 / 3)
    assert attention_heatmap(att, ["[CLS]", "a", "b"], ["x", "y"]).data[0].z.shape == (2, 3)
    d, same = label_relations(TREE)
    fig = negatives_figure(TREE, ["a", "a1"], ["a2"], ["b"])
    assert [t.name for t in fig.data][2] == "positive"
    del d, same
