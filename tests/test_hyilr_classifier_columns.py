"""HyILR's own classifier in ``compare``'s table: Paper 05's micro/macro F1 and Hi-MiF1/Hi-MaF1
of the thresholded label sets, a typed record field, beside the probe columns, with the Majority row."""

import csv
import json

import numpy as np
import pytest
import torch

from hierviz.hierarchy import LabelTree
from hierviz.metrics.htc import (
    CLASSIFIER_METRICS,
    frequency_prior_scores,
    hierarchical_f1,
    leaf_path_targets,
)
from hierviz.report.run_files import RunFileError
from hierviz.report.run_record import RunRecord

TREE = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1"]}})  # root, a, b, a1, a2, b1


def test_frequency_prior_by_hand():
    """Train leaves a1, a1, b1: the prior predicts {a, a1} for each test sample (a1, a2, b1, b1).

    TP 3 (a, a1 | a), FP 5 (a1 | a, a1 | a, a1), FN 5 (a2 | b, b1 | b, b1): micro F1 = 6/16.
    Per label: a 2·2/(2·2+2) = 2/3, a1 2/(2+3) = 0.4, b, a2, b1 0: macro (2/3 + 0.4)/5. The prior
    is a path, so the Hi- scores equal the plain ones.
    """
    assert leaf_path_targets([0, 2], TREE).astype(int).tolist() == [[0, 1, 0, 1, 0, 0], [0, 0, 1, 0, 0, 1]]
    r = frequency_prior_scores([0, 0, 2], [0, 1, 2, 2], TREE)
    assert list(r) == list(CLASSIFIER_METRICS)
    assert r["clf_micro_f1"] == pytest.approx(6 / 16) and r["clf_hi_micro_f1"] == pytest.approx(6 / 16)
    assert r["clf_macro_f1"] == pytest.approx((2 / 3 + 0.4) / 5) and r["clf_hi_macro_f1"] == pytest.approx(
        (2 / 3 + 0.4) / 5
    )
    with pytest.raises(ValueError, match="leaf indices in"):
        leaf_path_targets([3], TREE)


def test_run_record_field_old_and_bad():
    base = {"name": "x-euclidean-s0", "method": "x", "geometry": "euclidean", "seed": 0, "metrics": {"hf1": 0.5}}
    old = RunRecord.from_dict(base)  # a record written before the field: None, not written back
    assert old.classifier_metrics is None and "classifier_metrics" not in old.to_dict()
    new = RunRecord.from_dict({**base, "classifier_metrics": {"clf_micro_f1": 0.25}})
    assert new.classifier_metrics == {"clf_micro_f1": 0.25} and new.extra == {}
    assert new.to_dict()["classifier_metrics"] == {"clf_micro_f1": 0.25}
    with pytest.raises(RunFileError, match="'classifier_metrics' must be a JSON object"):
        RunRecord.from_dict({**base, "classifier_metrics": [0.25]})


def _records(tmp_path):
    """Two HyILR seeds with classifier scores, one SupCon run without; y_train a1 a1 b1, y_test a1 a2 b1 b1."""
    emb = tmp_path / "emb.npz"
    rng = np.random.default_rng(0)
    np.savez(emb, z_test=rng.normal(size=(4, 2)).astype(np.float32), y_test=np.array([0, 1, 2, 2]),
             z_train=rng.normal(size=(3, 2)).astype(np.float32), y_train=np.array([0, 0, 2]),
             prototypes=np.zeros((0, 2), np.float32), proto_nodes=np.zeros(0, np.int64))  # fmt: skip
    probe = {"hf1": 0.5, "h_acc": 0.5, "pc_order": 0.5, "violations": 0.1, "top1": 0.5, "bal_acc": 0.5, "macro_f1": 0.4}
    recs = []
    for method, seed, clf in (("hyilr", 0, (0.5, 0.2, 0.4, 0.1)), ("hyilr", 1, (0.7, 0.4, 0.6, 0.3)),
                              ("supcon", 0, None)):  # fmt: skip
        d = {"name": f"{method}-euclidean-s{seed}", "method": method, "geometry": "euclidean", "seed": seed,
             "metrics": probe, "method_display": {"hyilr": "HyILR", "supcon": "SupCon"}[method],
             "geometry_config": {"name": "euclidean", "c": 0.0}, "embeddings": str(emb)}  # fmt: skip
        if clf is not None:
            d["classifier_metrics"] = dict(zip(CLASSIFIER_METRICS, clf))
        recs.append(RunRecord.from_dict(d).to_dict())
    return recs


def test_record_to_table_by_hand(tmp_path):
    """The record field reaches results.csv, results.md and report.html; SupCon shows "–"; the Majority
    row carries the frequency prior (3/8 micro, (2/3 + 0.4)/5 macro)."""
    from hierviz.report import build_report

    paths = build_report(tmp_path, _records(tmp_path), TREE, header={}, geometries=["euclidean"], projection="pca")
    with open(paths["csv"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(rows[i]["clf_micro_f1"]) for i in (0, 1)] == [0.5, 0.7] and rows[2]["clf_micro_f1"] == ""
    cols = list(rows[0])
    assert cols.index("clf_micro_f1") > cols.index("macro_f1")  # beside (after) the probe's columns
    md = paths["markdown"].read_text()
    head = next(ln for ln in md.splitlines() if ln.startswith("| Method |"))
    assert head.endswith("Macro-F1 (Euclidean) | Clf Micro-F1 (Euclidean) | Clf Macro-F1 (Euclidean) | "
                         "Clf Hi-MiF1 (Euclidean) | Clf Hi-MaF1 (Euclidean) |")  # fmt: skip
    hyilr = next(ln for ln in md.splitlines() if ln.startswith("| HyILR |"))
    # means 0.6, 0.3, 0.5, 0.2; sample std of two values 0.1 apart: 0.1·√2 = 0.141; not bold: one method
    assert hyilr.endswith("| 0.600 ± 0.141 | 0.300 ± 0.141 | 0.500 ± 0.141 | 0.200 ± 0.141 |")
    supcon = next(ln for ln in md.splitlines() if ln.startswith("| SupCon |"))
    assert supcon.endswith("| – | – | – | – |")
    major = next(ln for ln in md.splitlines() if ln.startswith("| *Majority class* |"))
    macro = (2 / 3 + 0.4) / 5
    assert major.endswith(f"| 0.375 | {macro:.3f} | 0.375 | {macro:.3f} |") and "Clf columns" in md
    with open(paths["baselines"], newline="") as fh:
        base = next(csv.DictReader(fh))
    assert float(base["clf_micro_f1"]) == pytest.approx(0.375) and float(base["clf_hi_macro_f1"]) == pytest.approx(
        macro, abs=1e-6
    )
    assert "Clf Hi-MaF1 (Euclidean)" in paths["html"].read_text()


def test_predict_proba_is_the_trained_classifier():
    from hierviz.methods import build_objective

    torch.manual_seed(0)
    obj = build_objective("hyilr-no-att", TREE, "euclidean")
    with pytest.raises(ValueError, match="never trained"):
        obj.predict_proba(torch.randn(2, 3))
    x = torch.randn(4, 3)
    obj(x, torch.tensor([0, 1, 2, 0]))
    head = obj.terms["hyilr"].head
    ref = torch.sigmoid((x[:, None, :] * head.W_L.t()[None]).flatten(1) @ head.weight.t() + head.bias)  # Eq. 9, §5.4
    torch.testing.assert_close(obj.predict_proba(x), ref.detach())
    assert head.training  # restored after the call


def test_compare_writes_the_classifier_columns_synthetic_20news(tmp_path, monkeypatch, capsys):
    """End to end on a tiny 20news corpus: hyilr's columns equal hierviz.metrics.htc on the saved label sets."""
    from test_paper04 import make_corpus

    from hierviz.cli import main

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=6, n_test=2)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    out = tmp_path / "out"
    argv = ["compare", "--preset", "quick-ham10000", "--dataset", "20news", "--methods", "hyilr,supcon",
            "--geometry", "euclidean", "--seeds", "1", "--set", "train.epochs=2", "--projection", "pca",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    tree = LabelTree.from_json(out / "tree.json")
    rec = json.loads((out / "runs" / "hyilr-euclidean-s0" / "result.json").read_text())
    with np.load(out / "runs" / "hyilr-euclidean-s0" / "embeddings.npz") as f:
        y_true, y_pred, y_test, y_train = f["clf_true_test"], f["clf_pred_test"], f["y_test"], f["y_train"]
    assert y_pred.shape == (len(y_test), tree.num_nodes) and not y_pred[:, 0].any()
    np.testing.assert_array_equal(y_true, leaf_path_targets(y_test, tree))
    ref = {f"clf_{k}": v for k, v in hierarchical_f1(y_true, y_pred, tree).items()}
    assert rec["classifier_metrics"] == pytest.approx(ref)
    sup = json.loads((out / "runs" / "supcon-euclidean-s0" / "result.json").read_text())
    assert "classifier_metrics" not in sup
    with open(out / "results.csv", newline="") as fh:
        rows = {r["method"]: r for r in csv.DictReader(fh)}
    for k in CLASSIFIER_METRICS:
        assert float(rows["hyilr"][k]) == pytest.approx(ref[k], abs=1e-6) and rows["supcon"][k] == ""
    md = (out / "results.md").read_text()
    prior = frequency_prior_scores(y_train, y_test, tree)
    major = next(ln for ln in md.splitlines() if ln.startswith("| *Majority class* |"))
    assert major.endswith(" | ".join(f"{prior[k]:.3f}" for k in CLASSIFIER_METRICS) + " |")
    assert next(ln for ln in md.splitlines() if ln.startswith("| SupCon |")).endswith("| – | – | – | – |")


def test_head_on_tokens_equals_the_htc_model():
    """HyILRHead on a text encoder's tokens is HyILRModel's classifier (Eq. 8 over the tokens, Eq. 9)."""
    from hierviz.models.text import HyILRHead, HyILRModel, TokenEncoder

    torch.manual_seed(0)
    enc = TokenEncoder(h=8, heads=2, vocab_size=30)
    for attention in (True, False):
        model = HyILRModel(enc.net, num_labels=5, attention=attention, dropout=0.0).eval()
        head = HyILRHead(5, attention=attention, dropout=0.0)
        ids = torch.tensor([[1, 5, 7, 0], [1, 9, 0, 0]])
        mask = ids != 0
        X, m = enc(torch.stack([ids, mask.long()], -1)[:, None])
        head(X[:, 0], X, m)  # materialise, then copy the HTC model's weights
        with torch.no_grad():
            (
                head.W_L.copy_(model.W_L),
                head.weight.copy_(model.classifier.weight),
                head.bias.copy_(model.classifier.bias),
            )
        torch.testing.assert_close(head(X[:, 0], X, m), model(ids, mask)["logits"])
        if attention:  # the padding matters: attending over the padded tokens too gives other logits
            assert not torch.allclose(head(X[:, 0], X, None), model(ids, mask)["logits"])


def test_compare_on_token_sequences_synthetic_20news(tmp_path, monkeypatch, capsys):
    """``--dataset 20news-text`` (inputs="text"): the hyilr-text encoder without naming it, attention over tokens."""
    from test_paper04 import make_corpus

    from hierviz.cli import main

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=6, n_test=2)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    out = tmp_path / "out"
    argv = ["compare", "--preset", "quick-ham10000", "--dataset", "20news-text", "--methods", "hyilr", "--image-size", "16",
            "--geometry", "lorentz", "--seeds", "1", "--set", "train.epochs=1", "--projection", "pca",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model"]["encoder"] == "hyilr-text" and cfg["data"]["image_size"] == 16
    tree = LabelTree.from_json(out / "tree.json")
    rec = json.loads((out / "runs" / "hyilr-lorentz-s0" / "result.json").read_text())
    with np.load(out / "runs" / "hyilr-lorentz-s0" / "embeddings.npz") as f:
        ref = {f"clf_{k}": v for k, v in hierarchical_f1(f["clf_true_test"], f["clf_pred_test"], tree).items()}
    assert rec["classifier_metrics"] == pytest.approx(ref)
    assert "Clf Hi-MaF1 (Lorentz)" in (out / "results.md").read_text()


def test_htc_runs_compare_plans_and_writes_table4(tmp_path, monkeypatch, capsys):
    """``hierviz htc``: one compare plan (and one per other λ), Table 4 from the typed records."""
    from test_paper04 import make_corpus

    from hierviz.cli import main
    from hierviz.experiments.records import load_records

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=6, n_test=2)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    out = tmp_path / "htc"
    argv = ["htc", "--preset", "smoke", "--methods", "hyilr,hyilr-no-cl", "--seeds", "0",
            "--lams", "0.3,1.0", "--set", "max_len=16", "--set", "max_train=100", "--set", "max_test=50",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    recs = load_records(out)
    assert [r["method"] for r in recs] == ["hyilr", "hyilr-no-cl"]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model"]["encoder"].startswith("hyilr-text-h16-l1-a2-v") and cfg["model"]["encoder"].endswith("-s16")
    assert cfg["data"]["split"] == "official" and cfg["data"]["path"].startswith(str(out / "htc_corpus_"))
    header = json.loads((out / "compare.json").read_text())["header"]["Split"]
    assert header.startswith("the dataset's official train/test")
    assert recs[0]["hparams"] == {"tau": 0.07, "hyilr.lambda": 0.3}
    swept = load_records(out / "lam1")
    assert [(r["method"], r["hparams"]["hyilr.lambda"]) for r in swept] == [("hyilr", 1.0)]
    md = (out / "htc_results.md").read_text().splitlines()
    for rec, lam in ((recs[0], "0.3"), (recs[1], "–"), (swept[0], "1")):
        m = rec["classifier_metrics"]
        row = next(ln for ln in md if ln.startswith(f"| {rec['method_display']} (`{rec['method']}`) | {lam} |"))
        cells = " | ".join(f"{100 * m[k]:.2f} ± 0.00" for k in CLASSIFIER_METRICS)
        cells += " | " + " | ".join(f"{rec['learned'][k]:.3g}" for k in ("c", "alpha_t", "alpha_l"))
        assert row == f"| {rec['method_display']} (`{rec['method']}`) | {lam} | 1 | {cells} |"
        assert rec["early_stopping"]["patience"] == 1 and rec["early_stopping"]["epochs"] == 1
    with open(out / "htc_results.csv", newline="") as fh:
        assert [r["lam"] for r in csv.DictReader(fh)] == ["0.3", "", "1.0"]
    with open(out / "seeds.csv", newline="") as fh:  # one row per run, what the paired tables read
        per_run = list(csv.DictReader(fh))
    assert [(r["method"], r["lam"], r["seed"]) for r in per_run] == [
        ("hyilr", "0.3", "0"),
        ("hyilr-no-cl", "", "0"),
        ("hyilr", "1.0", "0"),
    ]
    for r, rec in zip(per_run, [*recs, swept[0]], strict=True):
        assert [float(r[k[4:]]) for k in CLASSIFIER_METRICS] == [
            rec["classifier_metrics"][k] for k in CLASSIFIER_METRICS
        ]
        assert [float(r[k]) for k in ("c", "alpha_t", "alpha_l")] == [
            rec["learned"][k] for k in ("c", "alpha_t", "alpha_l")
        ]
    with np.load(out / "runs" / "hyilr-euclidean-s0" / "embeddings.npz") as f:
        prior = frequency_prior_scores(f["y_train"], f["y_test"], LabelTree.from_json(out / "tree.json"))
    assert (
        f"| *Frequency prior* | – | – | {' | '.join(f'{100 * prior[k]:.2f}' for k in CLASSIFIER_METRICS)} | – | – | – |"
        in md
    )
    from hierviz.metrics.htc import per_level_f1

    with np.load(out / "lam1" / "runs" / "hyilr-euclidean-s0" / "embeddings.npz") as f:
        ref = per_level_f1(f["clf_true_test"], f["clf_pred_test"], LabelTree.from_json(out / "tree.json"))
    with open(out / "levels.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["lam"] == "1.0"]
    assert [int(r["level"]) for r in rows] == [1, 2, 3]
    assert [float(r["micro_f1"]) for r in rows] == pytest.approx([x["micro_f1"] for x in ref])
    with open(out / "buckets.csv", newline="") as fh:
        assert [r["bucket"] for r in csv.DictReader(fh)][:4] == ["C1", "C2", "C3", "C4"]


def test_fit_stops_when_a_callback_raises_stop_training():
    from torch import nn
    from torch.utils.data import TensorDataset

    from hierviz.methods import build_objective
    from hierviz.training import StopTraining, TrainConfig, fit

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 8)

        def forward(self, x):
            return {"features": torch.tanh(self.enc(x)), "z": None}

    def stop_at_second(epoch, info):
        if epoch == 1:
            raise StopTraining

    seen = []
    data = TensorDataset(torch.randn(40, 6, generator=torch.Generator().manual_seed(0)), torch.arange(40) % 3)
    cfg = TrainConfig(epochs=5, batch_size=8, ema_decay=None, amp=False, device="cpu", warmup_epochs=0, progress=False)
    res = fit(cfg, Tiny(), build_objective("hyilr", TREE, "euclidean"), data,
              callbacks=[stop_at_second, lambda e, info: seen.append(e)])  # fmt: skip
    assert res.epochs_done == 2 and len(res.history["loss"]) == 2 and seen == [0, 1]  # the others still ran


def test_early_stopping_keeps_the_best_epoch(monkeypatch):
    """Scores 0.5, 0.7, 0.6, 0.65 with patience 2: stop after the 4th epoch, restore the 2nd epoch's weights."""
    from torch import nn

    from hierviz.evaluation import multilabel
    from hierviz.methods import build_objective
    from hierviz.training import StopTraining

    obj = build_objective("hyilr", TREE, "euclidean")
    obj(torch.randn(3, 4), torch.tensor([0, 1, 2]))
    model = nn.Linear(4, 4)
    scores = iter([0.5, 0.7, 0.6, 0.65])

    def fake(model, objective, data, tree, **kw):
        s = next(scores)
        return multilabel.ClassifierRecord({"clf_micro_f1": s, "clf_macro_f1": s}, None, None, 0.5, 0.0)

    monkeypatch.setattr(multilabel, "evaluate_classifier", fake)
    stop = multilabel.EarlyStopping(obj, None, TREE, 2, image_size=8)
    for epoch in range(4):
        with torch.no_grad():
            model.weight.fill_(float(epoch))
            obj.terms["hyilr"].head.bias.fill_(float(epoch))
        if epoch < 3:
            stop(epoch, {"model": model})
        else:
            with pytest.raises(StopTraining):
                stop(epoch, {"model": model})
    stop.restore(model)
    assert stop.best_epoch == 1 and model.weight[0, 0].item() == 1.0
    assert obj.terms["hyilr"].head.bias[0].item() == 1.0
    assert stop.record() == {"best_epoch": 1, "epochs": 4, "val_scores": [1.0, 1.4, 1.2, 1.3], "patience": 2}
    with pytest.raises(ValueError, match="patience"):
        multilabel.EarlyStopping(obj, None, TREE, 0, image_size=8)


def test_official_split_key():
    """``data.split=official``: the dataset's own train/test, 10 % of train as val; a bad value is named."""
    from hierviz.data.splits import official_split
    from hierviz.experiments.config import ConfigError, resolve_config

    sp = official_split(np.array(["train"] * 20 + ["test"] * 5), val=0.1, seed=3)
    assert (len(sp["train"]), len(sp["val"]), sp["test"].tolist()) == (18, 2, [20, 21, 22, 23, 24])
    assert set(sp["train"]) | set(sp["val"]) == set(range(20)) and not set(sp["train"]) & set(sp["val"])
    assert official_split(np.array(["train", "val", "test"]))["val"].tolist() == [1]  # a given val stays
    with pytest.raises(ConfigError, match="data.split"):
        resolve_config("quick-ham10000", {"data.split": "random"})


def test_label_prior_sets_the_bias_on_tokens_only():
    """On tokens the classifier bias starts at the training label log-odds (htc's init); on vectors it does not."""
    from hierviz.methods import build_objective

    labels = [0, 0, 1, 2]  # a1, a1, a2, b1: label frequencies a 3/4, b 1/4, a1 1/2, a2 1/4, b1 1/4
    freq = torch.tensor([0.75, 0.25, 0.5, 0.25, 0.25])
    for tokens in (True, False):
        torch.manual_seed(0)
        obj = build_objective("hyilr", TREE, "euclidean")
        obj.set_label_prior(np.array(labels))
        x = torch.randn(4, 6)
        kw = {"tokens": torch.randn(4, 3, 6), "mask": torch.ones(4, 3, dtype=torch.bool)} if tokens else {}
        obj(x, torch.tensor(labels), **kw)
        bias = obj.terms["hyilr"].head.bias.detach()
        assert torch.allclose(bias, torch.log(freq / (1 - freq))) == tokens
