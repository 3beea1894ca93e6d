"""HyILR and its ablations as methods of ``hierviz compare``: a loop reference of the
objective on a toy tree, the ablations, the trainable modules, and one compare table with SupCon."""

import csv
import json
import math

import pytest
import torch

from hierviz.hierarchy import LabelTree
from hierviz.methods import METHODS, build_objective, get_method
from hierviz.methods.hyilr import HYILR_VARIANTS, leaf_label_sets

D64 = torch.float64
TREE = LabelTree.from_nested({"root": {"a": ["a1", "a2"], "b": ["b1", "b2", "b3"]}})
LABELS = [n for n in TREE.nodes if n != TREE.root]  # a, b, a1, a2, b1, b2, b3


def _dist(name, u, v):
    """Loop reference of the three spaces at c = 1 (Paper 05 Eqs. 4, 11; the ball; flat)."""
    nu, nv = math.sqrt(sum(t * t for t in u)), math.sqrt(sum(t * t for t in v))
    if name == "euclidean":
        return math.sqrt(sum((a - b) ** 2 for a, b in zip(u, v)))
    if name == "poincare":
        x = [math.tanh(nu) * t / nu for t in u]
        y = [math.tanh(nv) * t / nv for t in v]
        sq = sum((a - b) ** 2 for a, b in zip(x, y))
        return math.acosh(1 + 2 * sq / ((1 - sum(t * t for t in x)) * (1 - sum(t * t for t in y))))
    x = [math.sinh(nu) * t / nu for t in u]  # Eq. 11, space part; time from Eq. 3
    y = [math.sinh(nv) * t / nv for t in v]
    tx, ty = math.sqrt(1 + sum(t * t for t in x)), math.sqrt(1 + sum(t * t for t in y))
    return math.acosh(max(1.0, tx * ty - sum(a * b for a, b in zip(x, y))))  # -<x, y>_L


def _loop_loss(name, obj, x, labels, lam, tau):
    """BCE over the label sets + λ·Eq. 15 with the negatives of Eqs. 13-14, one sample at a time."""
    _, space, _, attention, _ = HYILR_VARIANTS[name]
    space = {"Lorentz": "lorentz", "PoincareBall": "poincare", "Euclidean": "euclidean"}[space.__name__]
    term = obj.terms["hyilr"]
    W, Wc, b = term.head.W_L.detach(), term.head.weight.detach(), term.head.bias.detach()
    a_t, a_l = term.scales.alpha_t.item(), term.scales.alpha_l.item()
    h, c = W.shape
    bce, cl = 0.0, 0.0
    for i in range(len(x)):
        leaf = TREE.leaves[int(labels[i])]
        P = [LABELS.index(n) for n in TREE.ancestors(leaf) if n != TREE.root]
        feats = [x[i] if attention else x[i] * W[:, j] for j in range(c)]  # Eq. 8 on one token / ablation
        logit = Wc @ torch.cat(feats) + b  # Eq. 9
        for j in range(c):
            p = 1 / (1 + math.exp(-float(logit[j])))
            bce -= math.log(p) if j in P else math.log(1 - p)
        d = [_dist(space, (a_t * x[i]).tolist(), (a_l * W[:, j]).tolist()) for j in range(c)]
        n1 = set()
        for p in P:
            desc = [LABELS.index(n) for n in TREE.nodes if n != TREE.root and p != LABELS.index(n)
                    and LABELS[p] in TREE.ancestors(n) and LABELS.index(n) not in P]  # fmt: skip
            if desc:
                n1.add(min(desc, key=lambda j: (d[j], j)))
        n2 = set()
        for p in P:
            same = [j for j in range(c) if j != p and TREE.depth(LABELS[j]) == TREE.depth(LABELS[p])
                    and j not in P and j not in n1]  # fmt: skip
            if same:
                n2.add(min(same, key=lambda j: (d[j], j)))
        S = set(P) | n1 | n2
        den = sum(math.exp(-d[s] / tau) for s in S)
        cl += sum(-math.log(math.exp(-d[p] / tau) / den) for p in P) / len(P)
    return bce / (len(x) * c) + lam * cl / len(x)


@pytest.mark.parametrize("name", ["hyilr", "hyilr-poincare", "hyilr-euclidean", "hyilr-no-att"])
def test_objective_matches_a_loop_reference(name):
    torch.manual_seed(0)
    obj = build_objective(name, TREE, "euclidean", tau=0.2, **{"hyilr.lambda": 0.7}).eval()  # eval: no dropout
    x = torch.randn(6, 4, dtype=D64)
    labels = torch.tensor([0, 1, 2, 3, 4, 2])
    obj(x, labels)  # the first call sets h = 4 (lazy head) and α = 1/√h
    term = obj.terms["hyilr"]
    assert term.head.W_L.shape == (4, 7) and term.scales.alpha_t.item() == pytest.approx(0.5)
    with torch.no_grad():  # away from the init, so every parameter matters
        term.scales.log_alpha_t.fill_(math.log(0.9))
        term.head.bias.add_(0.3)
    loss, terms = obj(x, labels)
    ref = _loop_loss(name, obj, x, labels, lam=0.7, tau=0.2)
    assert loss.item() == pytest.approx(ref, rel=1e-10)
    assert set(terms) == {"bce", "cl", "negatives"} and float(terms["negatives"]) > 0


def test_label_sets_and_ablations():
    assert leaf_label_sets(TREE).int().tolist() == [
        [1, 0, 1, 0, 0, 0, 0], [1, 0, 0, 1, 0, 0, 0], [0, 1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 0, 1, 0],
        [0, 1, 0, 0, 0, 0, 1]]  # fmt: skip
    assert set(HYILR_VARIANTS) <= set(METHODS.names())
    x, labels = torch.randn(5, 3, dtype=D64), torch.arange(5)
    # w/o CL: the loss is the BCE and reads no τ or λ
    assert get_method("hyilr-no-cl").hparams == () and get_method("hyilr").hparams == ("tau", "hyilr.lambda")
    loss, terms = build_objective("hyilr-no-cl", TREE, "lorentz")(x, labels)
    assert loss.item() == terms["bce"].item() and float(terms["cl"]) == 0.0
    # w/o HNS: min(2|P|, #non-positives) = min(4, 5) random negatives for every sample
    _, terms = build_objective("hyilr-no-hns", TREE, "lorentz")(x, labels)
    assert float(terms["negatives"]) == 4.0
    # views are samples: (B, 2, h) is the loss of the 2B rows, each with its leaf's label set
    obj = build_objective("hyilr", TREE, "euclidean").eval()
    x2 = torch.randn(5, 2, 3, dtype=D64)
    torch.testing.assert_close(obj(x2, labels)[0], obj(x2.reshape(10, 3), labels.repeat_interleave(2))[0])
    with pytest.raises(ValueError, match="no 'features'"):
        obj.loss_from_output({"z": x2}, labels)
    with pytest.raises(ValueError, match="hyilr.lambda"):
        build_objective("hyilr", TREE, "euclidean", **{"hyilr.lambda": -1.0})


def test_trainable_modules_and_state_round_trip():
    """W_L, the classifier and log c/α are the objective's parameters (fit trains them); a fresh objective
    loads a trained one's state before its first call (a resumed run)."""
    torch.manual_seed(1)
    obj = build_objective("hyilr", TREE, "euclidean")
    x, labels = torch.randn(8, 6), torch.arange(8) % 5
    obj(x, labels)
    names = {n for n, p in obj.named_parameters() if p.requires_grad}
    assert names == {"terms.hyilr.head.W_L", "terms.hyilr.head.weight", "terms.hyilr.head.bias",
                     "terms.hyilr.scales.log_c", "terms.hyilr.scales.log_alpha_t", "terms.hyilr.scales.log_alpha_l"}  # fmt: skip
    opt = torch.optim.Adam(obj.parameters(), lr=1e-2)
    before = obj.terms["hyilr"].scales.log_c.item()
    for _ in range(3):
        opt.zero_grad()
        obj(x, labels)[0].backward()
        opt.step()
    assert obj.terms["hyilr"].scales.log_c.item() != before  # the curvature is learned
    fresh = build_objective("hyilr", TREE, "euclidean")
    fresh.load_state_dict(obj.state_dict())
    obj.eval(), fresh.eval()
    torch.testing.assert_close(fresh(x, labels)[0], obj(x, labels)[0])


def _check_table(out, methods):
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["method"] for r in rows] == methods
    for r in rows:  # one table: the same columns, every metric filled
        for k in ("hf1", "h_acc", "top1", "macro_f1"):
            assert 0.0 <= float(r[k]) <= 1.0, (r["method"], k, r[k])
    md = (out / "results.md").read_text()
    assert "| HyILR |" in md and "| HyILR w/o CL |" in md and "| SupCon |" in md and "*Majority class*" in md
    rec = json.loads((out / "runs" / "hyilr-euclidean-s0" / "result.json").read_text())
    assert rec["eval_embedding"] == "features" and {"bce", "cl", "negatives"} <= set(rec["history"])
    assert (out / "report.html").is_file()


def test_compare_hyilr_supcon_one_table_synthetic_20news(tmp_path, monkeypatch, capsys):
    """``hierviz compare --dataset 20news --methods hyilr,hyilr-no-cl,supcon`` on a tiny synthetic corpus."""
    from test_paper04 import make_corpus

    from hierviz.cli import main

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=6, n_test=2)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    out = tmp_path / "out"
    argv = ["compare", "--preset", "quick-ham10000", "--dataset", "20news", "--methods", "hyilr,hyilr-no-cl,supcon",
            "--geometry", "euclidean", "--seeds", "1", "--set", "train.epochs=1", "--projection", "pca",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    _check_table(out, ["hyilr", "hyilr-no-cl", "supcon"])


@pytest.mark.shared_data
@pytest.mark.slow  # 20news is TF-IDF-encoded on load (~20 s on a 2-core CPU)
def test_compare_hyilr_supcon_one_table_20news(tmp_path, data_dir, capsys):
    """The issue's command on the real corpus, subsampled (``--limit 300``, one epoch)."""
    from hierviz.cli import main

    out = tmp_path / "news"
    argv = ["compare", "--preset", "quick-ham10000", "--dataset", "20news", "--methods", "hyilr,hyilr-no-cl,supcon",
            "--seeds", "1", "--limit", "300", "--set", "train.epochs=1", "--projection", "pca",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    _check_table(out, ["hyilr", "hyilr", "hyilr-no-cl", "hyilr-no-cl", "supcon", "supcon"])  # two geometries


def test_train_htc_runs_through_the_one_training_loop(monkeypatch):
    """``hierviz htc``'s run is a call of ``hierviz.training.fit`` (no loop of its own), with early stopping."""
    from hierviz.experiments import htc
    from hierviz.methods import paper05

    calls = []
    real = htc.fit

    def spy(config, model, objective, data, **kw):
        calls.append((config, objective))
        return real(config, model, objective, data, **kw)

    monkeypatch.setattr(htc, "fit", spy)
    cfg = paper05.HTCConfig.preset("smoke", dataset="synthetic-htc", methods=("hyilr",), seeds=(0,), max_train=40,
                                   epochs=3, patience=1, lam=0.5)  # fmt: skip
    res = htc.train_htc(paper05.load_data(cfg), "hyilr", cfg, 0, progress=False)
    assert not hasattr(paper05, "train_htc") and len(calls) == 1
    config, objective = calls[0]
    assert isinstance(objective, paper05.HTCObjective) and objective.lam == 0.5
    assert (config.weight_decay, config.warmup_epochs, config.grad_clip, config.lr_head) == (0.0, 0.0, 5.0, cfg.lr)
    assert 1 <= len(res["history"]) <= 3
    for row in res["history"]:  # fit's per-epoch means: loss = bce + λ·cl
        assert row["loss"] == pytest.approx(row["bce"] + 0.5 * row["cl"], rel=1e-5)
        assert {"val_micro_f1", "val_macro_f1", "c", "alpha_t", "negatives"} <= set(row)
    assert res["c"] > 0 and res["label_points"].shape[1] == res["model"].h


def test_an_interrupted_fit_resumes_to_the_same_run(tmp_path):
    """The lazy head's parameters (materialised by the checkpoint) and their optimiser state resume exactly."""
    from torch import nn
    from torch.utils.data import TensorDataset

    from hierviz.training import TrainConfig, fit, seed_everything

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc, self.head = nn.Linear(6, 8), nn.Linear(8, 4)

        def forward(self, x):
            f = torch.tanh(self.enc(x))
            return {"features": f, "z": nn.functional.normalize(self.head(f), dim=-1)}

    class Stop(Exception):
        pass

    def stop_after_first(epoch, info):
        if epoch == 0:
            raise Stop

    data = TensorDataset(torch.randn(40, 6, generator=torch.Generator().manual_seed(0)), torch.arange(40) % 5)

    def run(folder, resume, callbacks=()):
        seed_everything(0)
        obj = build_objective("hyilr", TREE, "euclidean")
        cfg = TrainConfig(epochs=3, batch_size=8, ema_decay=None, amp=False, device="cpu", warmup_epochs=0,
                          checkpoint_dir=folder, resume=resume, progress=False)  # fmt: skip
        res = fit(cfg, Tiny(), obj, data, callbacks=callbacks)
        return res.history["loss"], obj.terms["hyilr"].scales.log_c.item()

    full = run(tmp_path / "a", False)
    with pytest.raises(Stop):
        run(tmp_path / "b", False, [stop_after_first])
    assert run(tmp_path / "b", True) == full and full[1] != 0.0
