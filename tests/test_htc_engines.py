"""``hierviz htc`` through ``compare``: the same documents, split, tokens, weights and
training steps as the token driver it replaces, checked against that driver's loop."""

import json

import numpy as np
import pytest

from hierviz.methods.paper05 import HTCConfig, build_tokenizer, load_data


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    from test_paper04 import make_corpus

    make_corpus(tmp_path / "20news-bydate.tar.gz", n_train=8, n_test=3)
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    return tmp_path


def _cfg(**kw):
    kw = {"methods": ("hyilr",), "seeds": (0,), "max_len": 16, "max_train": 120, "max_test": 40, "epochs": 3,
          "patience": 3, **kw}  # fmt: skip
    return HTCConfig.preset("smoke", **kw)


def test_write_corpus_keeps_the_drivers_split_and_tokens(corpus):
    """The written corpus holds load_data's documents and split (train ≤ max_train, test ≤ max_test,
    val cut from train) and build_tokenizer's ids, each document at the leaf of its path."""
    from hierviz.data import load_dataset
    from hierviz.data.splits import official_split
    from hierviz.experiments.htc import write_corpus

    cfg = _cfg()
    c = write_corpus(cfg, corpus / "out")
    data = load_data(cfg)
    assert c.sizes == {"train": 108, "val": 12, "test": 40}
    assert c.sizes == {s: int((data.split == s).sum()) for s in ("train", "val", "test")}
    ds = load_dataset(str(c.path))
    assert ds.is_text and ds.classes == data.tree.leaves
    sp = official_split(ds.official_split, val=0.1, seed=0)
    for s in ("train", "val", "test"):  # the val rows are kept as they are, not drawn again
        assert sp[s].tolist() == np.flatnonzero(data.split == s).tolist()
    ids, mask = build_tokenizer(cfg, data).encode(data.texts, cfg.max_len)
    assert np.array_equal(ds.images[..., 0], ids.numpy()) and np.array_equal(ds.images[..., 1], mask.numpy())
    leaves = [data.tree.leaves[y] for y in ds.labels]
    paths = [[n for n in data.tree.ancestors(leaf) if n != data.tree.root] for leaf in leaves]
    for row, path in zip(data.targets, paths, strict=True):
        assert sorted(np.flatnonzero(row).tolist()) == sorted(data.tree.node_index[n] for n in path)
    assert c.encoder == f"hyilr-text-h16-l1-a2-v{len(build_tokenizer(cfg, data))}-s16"


@pytest.mark.parametrize(
    ("dataset", "method"), [("20news", "hyilr"), ("synthetic-htc", "hyilr-no-hns"), ("jsonl", "hyilr-poincare")]
)
def test_compare_engine_trains_the_drivers_steps(corpus, dataset, method):
    """Same seed: every training step's loss, the learned c and α, the early-stopping scores and
    the test F1s of the compare engine equal those of the token driver (train_htc), on 20news
    (one path per document), synthetic-htc and a ``.jsonl`` file (documents on one to three paths,
    its own train/val/test)."""
    from hierviz.data.loaders.htc import synthetic_htc, write_htc_jsonl
    from hierviz.experiments.htc import run_htc, train_htc
    from hierviz.training import loop

    if dataset == "jsonl":  # a data_scripts/ file: {"text", "labels", "split"} per line and its tree beside it
        d = synthetic_htc(n_docs=150, max_paths=3, seed=4)
        labels = [[n for n in d.tree.leaves if row[d.tree.node_index[n]]] for row in d.targets]
        write_htc_jsonl(corpus / "toy_htc.jsonl", d.texts, labels, d.split)
        d.tree.to_json(corpus / "toy_tree.json")
        dataset = str(corpus / "toy_htc.jsonl")
    cfg = _cfg(dataset=dataset, methods=(method,))
    data = load_data(cfg)
    multi = int((data.targets[:, [data.tree.node_index[n] for n in data.tree.leaves]].sum(1) > 1).sum())
    assert (multi > 20) == (dataset != "20news") and (multi == 0) == (dataset == "20news")
    steps = {}
    real_fit = loop.fit

    def fit(config, model, objective, data, callbacks=(), **kw):
        def keep(epoch, info):
            steps["loss"] = list(info["step_history"]["loss"])

        return real_fit(config, model, objective, data, callbacks=[keep, *callbacks], **kw)

    import hierviz.experiments.htc as driver

    driver.fit = fit
    try:
        ref = train_htc(data, method, cfg, seed=0, progress=False)
    finally:
        driver.fit = real_fit
    run_htc(cfg, corpus / "out", progress=False)
    rec = json.loads((corpus / "out" / "runs" / f"{method}-euclidean-s0" / "result.json").read_text())
    assert len(steps["loss"]) == 3 * (int((data.split == "train").sum()) // 16)
    assert rec["step_history"]["loss"] == pytest.approx(steps["loss"], abs=1e-6)
    assert rec["learned"] == pytest.approx({k: ref[k] for k in ("c", "alpha_t", "alpha_l")}, abs=1e-6)
    val = [h["val_micro_f1"] + h["val_macro_f1"] for h in ref["history"]]
    assert rec["early_stopping"]["val_scores"] == pytest.approx(val, abs=1e-9)
    assert rec["classifier_metrics"] == pytest.approx({f"clf_{k}": v for k, v in ref["test"].items()}, abs=1e-9)


def test_write_corpus_multi_path_and_refusals(corpus):
    """synthetic-htc: leaf_sets hold every leaf, labels the first (tree order); a path that ends
    above the leaves and a BERT checkpoint are refused with one line naming the fix."""
    from hierviz.data import load_dataset
    from hierviz.data.loaders.htc import synthetic_htc, write_htc_jsonl
    from hierviz.experiments.config import ConfigError
    from hierviz.experiments.htc import write_corpus

    cfg = _cfg(dataset="synthetic-htc")
    c = write_corpus(cfg, corpus / "syn")
    data, ds = load_data(cfg), load_dataset(str(c.path))
    assert c.multi_path and ds.leaf_sets.shape == (len(data), data.tree.num_leaves)
    leaf_cols = [data.tree.node_index[n] for n in data.tree.leaves]
    assert np.array_equal(ds.leaf_sets, data.targets[:, leaf_cols])
    assert ds.labels.tolist() == [int(np.flatnonzero(r)[0]) for r in ds.leaf_sets]
    assert ds.subset(np.flatnonzero(ds.official_split == "test")).leaf_sets.shape[0] == c.sizes["test"]
    d = synthetic_htc(n_docs=12, seed=1)
    inner = next(n for n in d.tree.nodes if n != d.tree.root and not d.tree.is_leaf(n))
    write_htc_jsonl(corpus / "x_htc.jsonl", d.texts, [[inner]] + [[d.tree.leaves[0]]] * 11, d.split)
    d.tree.to_json(corpus / "x_tree.json")
    with pytest.raises(ConfigError, match=r"^dataset: document 0 of .* ends above the leaves \(1 such"):
        write_corpus(_cfg(dataset=str(corpus / "x_htc.jsonl")), corpus / "x")
    with pytest.raises(ConfigError, match="^bert: .*unset bert"):
        write_corpus(_cfg(bert="some/folder"), corpus / "b")


def test_resumed_run_keeps_the_best_epoch_before_the_interruption(corpus):
    """A run killed after epoch 2 and resumed (its training checkpoint and early_stopping.pt) ends
    with the scores, best epoch and test F1s of the run that was never interrupted."""
    import hierviz.experiments.htc as htc

    cfg = _cfg(dataset="synthetic-htc", epochs=4, patience=4, lr=0.1)
    htc.run_htc(cfg, corpus / "ref", progress=False)
    ref = json.loads((corpus / "ref" / "runs" / "hyilr-euclidean-s0" / "result.json").read_text())
    es = ref["early_stopping"]
    assert len(es["val_scores"]) == 4 and es["best_epoch"] <= 1 and max(es["val_scores"]) > 0.1  # best: before the cut

    class Killed(Exception):
        pass

    def kill(epoch, info):
        if epoch == 1:
            raise Killed

    real = htc.compare
    htc.compare = lambda c, **kw: real(c, callbacks={"hyilr-euclidean-s0": [kill]}, **kw)
    try:
        with pytest.raises(Killed):
            htc.run_htc(cfg, corpus / "cut", progress=False)
    finally:
        htc.compare = real
    run = corpus / "cut" / "runs" / "hyilr-euclidean-s0"
    assert (run / "early_stopping.pt").is_file() and not (run / "result.json").exists()
    htc.run_htc(cfg, corpus / "cut", progress=False)  # resumes from the checkpoint of epoch 2
    got = json.loads((run / "result.json").read_text())
    assert got["early_stopping"] == ref["early_stopping"]
    assert got["classifier_metrics"] == pytest.approx(ref["classifier_metrics"], abs=1e-12)


def test_label_points_are_the_drivers_and_labels_html(corpus):
    """The label embeddings read back from a compare run equal train_htc's (same seed, same best
    epoch), and run_htc draws them on the disk in <out>/labels.html."""
    from hierviz.experiments.htc import label_points, run_htc, train_htc

    cfg = _cfg(dataset="synthetic-htc", methods=("hyilr", "hyilr-euclidean"))
    data = load_data(cfg)
    run_htc(cfg, corpus / "out", progress=False)
    from hierviz.hierarchy import LabelTree

    tree = LabelTree.from_json(corpus / "out" / "tree.json")
    for method in cfg.methods:
        ref = train_htc(data, method, cfg, seed=0, progress=False)
        pts, c, g = label_points(corpus / "out" / "runs" / f"{method}-euclidean-s0", tree)
        assert pts.shape == ref["label_points"].shape == (tree.num_nodes - 1, 16)
        np.testing.assert_allclose(pts, ref["label_points"], atol=1e-9)
        assert c == ref["points_c"] and g.hyperbolic == (method == "hyilr")
    html = (corpus / "out" / "labels.html").read_text()
    assert "label embeddings: hyilr" in html and "label embeddings: hyilr-euclidean" in html and "depth 1" in html
