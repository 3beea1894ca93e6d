r"""Paper 05 (HyILR): ``hierviz htc``'s config and presets, its data and tokenizer, and the token model.

:data:`HTC_METHODS`, :class:`HTCConfig` and its presets, :func:`load_data` and
:func:`build_tokenizer` are what ``hierviz htc`` reads; it runs the methods as ``hierviz
compare`` plans (:func:`hierviz.experiments.htc.run_htc`; the methods themselves are registered
for ``compare`` by :mod:`hierviz.methods.hyilr`). The token model of one in-memory run, the model
(:func:`build_model`, :class:`PackedTokens`) and the objective (:class:`HTCObjective`) of
HyILR and the ablations of Table 4 on token sequences (label–text attention over the tokens,
Eq. 8), is what :func:`hierviz.experiments.htc.train_htc` trains with the one training loop,
:func:`hierviz.training.fit` (notebook 09, and the step-by-step reference of the compare path in
``tests/test_htc_engines.py``).

=====================  ==============================================================
name                   what changes (Paper 05 (HyILR) §5.4, Table 4)
=====================  ==============================================================
``hyilr``              BCE + λ·CL, Lorentz (Eqs. 11–15), hierarchy negatives
``hyilr-no-cl``        w/o CL: BCE only
``hyilr-euclidean``    CL-Euclidean (Distance): Euclidean distance of the scaled features
``hyilr-poincare``     CL-Poincaré: Poincaré ball of learnable curvature −c
``hyilr-no-hns``       w/o HNS: random negatives (2 per positive) on the Lorentz model
``hyilr-no-att``       w/o label–text att.: ``F = X_[CLS] ⊙ W_Lᵀ``
=====================  ==============================================================

Examples
--------
>>> HTC_METHODS.names()
['hyilr', 'hyilr-no-cl', 'hyilr-euclidean', 'hyilr-poincare', 'hyilr-no-hns', 'hyilr-no-att']
>>> cfg = HTCConfig.preset("smoke", dataset="synthetic-htc", methods=("hyilr",), seeds=(0,), max_train=40)
>>> data = load_data(cfg)
>>> model, objective = build_htc_run(cfg, "hyilr", data, vocab_size=50)
>>> ids, mask = torch.randint(3, 50, (4, 8)), torch.ones(4, 8, dtype=torch.bool)
>>> out = model(PackedTokens.pack(ids, mask))
>>> y = torch.from_numpy(data.part("train").targets[:4, label_columns(data.tree)])
>>> loss, terms = objective.loss_from_output(out, y)
>>> sorted(terms)
['bce', 'cl', 'negatives']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch
from torch import nn

from hierviz._registry import Registry
from hierviz.data.loaders.htc import HTCData, load_htc
from hierviz.geometry import get_geometry
from hierviz.geometry._checks import scalar
from hierviz.losses.hyilr import HyperbolicScales, hyilr_loss, label_relations
from hierviz.metrics.baselines import frequency_prior_targets
from hierviz.metrics.htc import frequency_bucket_f1, hierarchical_f1, label_columns, per_level_f1
from hierviz.models.text import BertTextEncoder, BertTokenizerAdapter, HyILRModel, TransformerTextEncoder, WordVocab

__all__ = [
    "HTCVariant",
    "HTC_METHODS",
    "HTCConfig",
    "HTC_PRESETS",
    "load_data",
    "build_tokenizer",
    "build_model",
    "build_htc_run",
    "PackedTokens",
    "HTCObjective",
    "summarise",
    "markdown_table",
]

_PAPER = "Paper 05 (HyILR)"


@dataclass(frozen=True)
class HTCVariant:
    """One HTC method: HyILR or an ablation (see the module table)."""

    name: str
    display_name: str
    geometry: str = "lorentz"
    negatives: str = "hierarchy"
    attention: bool = True
    contrastive: bool = True
    paper: str = _PAPER


#: name -> :class:`HTCVariant` (``hierviz htc --methods``).
HTC_METHODS: Registry = Registry("htc method")
for _v in (
    HTCVariant("hyilr", "HyILR"),
    HTCVariant("hyilr-no-cl", "w/o CL", contrastive=False),
    HTCVariant("hyilr-euclidean", "CL-Euclidean (Distance)", geometry="euclidean"),
    HTCVariant("hyilr-poincare", "CL-Poincaré", geometry="poincare"),
    HTCVariant("hyilr-no-hns", "w/o HNS CL-Lorentz", negatives="random"),
    HTCVariant("hyilr-no-att", "w/o Label-text att.", attention=False),
):
    HTC_METHODS.register(_v.name, _v)


@dataclass(frozen=True)
class HTCConfig:
    """Everything an ``hierviz htc`` run reads (:data:`HTC_PRESETS` holds the named sizes).

    Attributes
    ----------
    dataset : str
        ``"20news"``, ``"synthetic-htc"`` or a ``<name>_htc.jsonl`` file.
    methods, seeds : tuple
    lam, tau : float
        λ (weight of CL; paper: 0.3–0.6) and τ (0.07).
    epochs, batch_size, lr, patience : training (Adam; early stop on val micro+macro F1).
    h, layers, heads, max_len, vocab : the from-scratch encoder and tokenizer.
    bert : str or None
        A local BERT checkpoint folder (needs ``transformers``); replaces the encoder.
    max_train, max_test : int or None
        Subsample 20news (``None``: all).
    threshold : float
        Decision threshold on ``sigmoid(ℓ)``.
    threads : int or None
        ``torch.set_num_threads`` during training.
    """

    dataset: str = "20news"
    methods: tuple[str, ...] = (
        "hyilr",
        "hyilr-no-cl",
        "hyilr-euclidean",
        "hyilr-poincare",
        "hyilr-no-hns",
        "hyilr-no-att",
    )
    seeds: tuple[int, ...] = (0,)
    lam: float = 0.3
    tau: float = 0.07
    epochs: int = 10
    batch_size: int = 32
    lr: float = 1e-3
    patience: int = 3
    h: int = 128
    layers: int = 2
    heads: int = 4
    max_len: int = 128
    vocab: int = 20000
    bert: str | None = None
    max_train: int | None = None
    max_test: int | None = None
    threshold: float = 0.5
    threads: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.methods, str):
            raise ValueError(
                f"methods must be a tuple of names, got the string {self.methods!r}; pass ({self.methods!r},)"
            )
        for m in self.methods:
            HTC_METHODS.get(m)  # UnknownNameError naming the nearest
        for name in ("lam", "tau", "lr", "threshold"):  # NaN/inf named here, not later as a bad lr
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam}")
        if not self.tau > 0:
            raise ValueError(f"tau must be > 0, got {self.tau}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 < self.threshold < 1:  # sigmoid outputs lie in (0, 1): 2 would predict nothing
            raise ValueError(f"threshold must lie in (0, 1) (a cut on sigmoid probabilities), got {self.threshold!r}")
        for name in ("epochs", "batch_size", "h", "layers", "heads", "max_len", "vocab"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        for name in ("max_train", "max_test"):  # 0 was read as "no limit"
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{name} must be a positive integer or null (all documents), got {v!r}")

    @classmethod
    def preset(cls, name: str = "medium", **overrides: Any) -> HTCConfig:
        """A named size (:data:`HTC_PRESETS`) with field overrides.

        Raises
        ------
        ValueError
            Unknown preset or field (names the valid ones).
        """
        if name not in HTC_PRESETS:
            raise ValueError(f"unknown htc preset {name!r}; valid: {sorted(HTC_PRESETS)}")
        valid = {f.name for f in fields(cls)}
        bad = sorted(set(overrides) - valid)
        if bad:
            raise ValueError(f"unknown htc option(s) {bad}; valid: {sorted(valid)}")
        kw = {**HTC_PRESETS[name], **overrides}
        if isinstance(kw.get("methods"), str):  # --set methods=hyilr,hyilr-no-cl: names, not letters
            kw["methods"] = tuple(m.strip() for m in kw["methods"].split(",") if m.strip())
        if "seeds" in kw and (isinstance(kw["seeds"], (str, bytes)) or not hasattr(kw["seeds"], "__iter__")):
            raise ValueError(
                f"seeds must be a list of the seeds 0 … n−1, got {kw['seeds']!r}; use --seeds 0,1,2 "
                "(or --set seeds=[0,1,2])"
            )
        for k in ("methods", "seeds"):
            if k in kw:
                kw[k] = tuple(kw[k])
        return cls(**kw)


#: Named sizes. ``medium``: 20news subsampled (2000 train / 1000 test messages), 6 epochs; one run takes
#: 1-4 min on a loaded 2-core CPU (docs/results/paper05.md).
HTC_PRESETS: dict[str, dict[str, Any]] = {
    "smoke": dict(epochs=1, h=16, layers=1, heads=2, max_len=32, vocab=2000, max_train=200, max_test=100,
                  batch_size=16, patience=1, threads=1),
    "medium": dict(epochs=6, h=64, layers=1, heads=4, max_len=64, vocab=8000, max_train=2000, max_test=1000,
                   batch_size=32, lr=2e-3, patience=2, threads=1),
    "full": dict(epochs=20, h=128, layers=2, heads=4, max_len=256, vocab=30000, seeds=(0, 1, 2), patience=6),
    # HyILR against w/o CL, five seeds of the whole 20news corpus, for the GPU machine; through
    # compare (train.device auto, AMP) it trains on that machine's GPU (not measured there)
    "paper05-gpu": dict(epochs=12, h=128, layers=2, heads=4, max_len=256, vocab=30000, seeds=(0, 1, 2, 3, 4),
                        methods=("hyilr", "hyilr-no-cl"), batch_size=64, patience=4, threads=16),
}  # fmt: skip


def load_data(cfg: HTCConfig, data_dir: str | None = None) -> HTCData:
    """The dataset of ``cfg`` (:func:`hierviz.data.loaders.htc.load_htc`)."""
    kw: dict[str, Any] = {}
    if cfg.dataset == "20news":
        kw = {"max_train": cfg.max_train, "max_test": cfg.max_test}
    elif cfg.dataset == "synthetic-htc" and cfg.max_train:
        kw = {"n_docs": max(30, int(cfg.max_train * 1.4))}
    return load_htc(cfg.dataset, data_dir=data_dir, **kw)


def build_tokenizer(cfg: HTCConfig, data: HTCData) -> Any:
    """A :class:`WordVocab` fitted on the training split, or the BERT checkpoint's tokenizer."""
    if cfg.bert:
        return BertTokenizerAdapter(cfg.bert)
    return WordVocab(cfg.vocab).fit(data.part("train").texts)


def build_model(cfg: HTCConfig, variant: HTCVariant, vocab_size: int, num_labels: int) -> HyILRModel:
    """The encoder (from scratch, or ``cfg.bert``) and the HyILR head for one variant."""
    if cfg.bert:
        enc: torch.nn.Module = BertTextEncoder(cfg.bert)
    else:
        enc = TransformerTextEncoder(vocab_size, h=cfg.h, layers=cfg.layers, heads=cfg.heads, max_len=cfg.max_len)
    return HyILRModel(enc, num_labels, attention=variant.attention)


def _predict(model: HyILRModel, ids: torch.Tensor, mask: torch.Tensor, bs: int) -> np.ndarray:
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(ids), bs * 4):
            out.append(torch.sigmoid(model(ids[i : i + bs * 4], mask[i : i + bs * 4])["logits"]))
    return torch.cat(out).numpy() if out else np.zeros((0, model.num_labels), np.float32)


def _full(pred_labels: np.ndarray, tree: Any) -> np.ndarray:
    """(N, c) label columns -> (N, num_nodes) with a False root column."""
    out = np.zeros((len(pred_labels), tree.num_nodes), dtype=bool)
    out[:, label_columns(tree)] = pred_labels
    return out


class PackedTokens(nn.Module):
    """A :class:`HyILRModel` on one tensor per batch: ``x = stack([ids, mask], 1)``, shape ``(B, 2, s)`` long.

    The training loop (:func:`hierviz.training.fit`) feeds the model one tensor; token ids and
    their padding mask travel together in it. Outputs are :meth:`HyILRModel.forward`'s.
    """

    def __init__(self, net: HyILRModel) -> None:
        super().__init__()
        self.net = net
        self.shared_outputs = net.shared_outputs

    @staticmethod
    def pack(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(B, s)`` ids and bool mask → ``(B, 2, s)`` long."""
        return torch.stack([ids.long(), mask.long()], 1)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.net(x[:, 0], x[:, 1].bool())


class HTCObjective(nn.Module):
    """HyILR's loss on a :class:`HyILRModel`'s outputs and multi-hot targets (what ``fit`` calls).

    ``loss_from_output(out, y)`` is :func:`hierviz.losses.hyilr.hyilr_loss` of ``out["logits"]``,
    ``out["text"]``, ``out["labels"]`` and ``y`` (B, c) 0/1; ``scales`` (``log c``, ``log α``) are
    its trainable parameters.

    Parameters
    ----------
    scales : HyperbolicScales
    relations : (desc, same_level)
        :func:`hierviz.losses.hyilr.label_relations`.
    lam, tau : float
        λ (0: BCE only) and τ.
    negatives : {"hierarchy", "random"}
    """

    def __init__(self, scales: HyperbolicScales, relations, lam: float, tau: float, negatives: str) -> None:
        super().__init__()
        self.scales = scales
        self.register_buffer("desc", relations[0], persistent=False)
        self.register_buffer("same_level", relations[1], persistent=False)
        self.lam, self.tau, self.negatives = float(lam), float(tau), negatives

    def loss_from_output(self, out: dict[str, torch.Tensor], y: torch.Tensor):
        return hyilr_loss(
            out["logits"].float(), out["text"], out["labels"], y.bool(), self.scales, (self.desc, self.same_level),
            lam=self.lam, tau=self.tau, negatives=self.negatives,
        )  # fmt: skip


def build_htc_run(cfg: HTCConfig, method: str, data: HTCData, vocab_size: int) -> tuple[PackedTokens, HTCObjective]:
    """The model (classifier bias at the training label log-odds) and the objective of one HTC run.

    Seed before calling it (the weights are drawn from the global generator).
    """
    variant = HTC_METHODS.get(method)
    cols = label_columns(data.tree)
    model = build_model(cfg, variant, vocab_size, len(cols))
    with torch.no_grad():  # classifier bias at the training label log-odds: fewer all-negative epochs
        prior = torch.from_numpy(data.part("train").targets[:, cols]).float().mean(0).clamp(1e-3, 1 - 1e-3)
        model.classifier.bias.copy_(torch.log(prior / (1 - prior)))
    scales = HyperbolicScales(model.h, geometry=get_geometry(variant.geometry))
    lam = cfg.lam if variant.contrastive else 0.0
    return PackedTokens(model), HTCObjective(scales, label_relations(data.tree), lam, cfg.tau, variant.negatives)


def _evaluate(model, scales, encoded, Y, data: HTCData, cfg: HTCConfig) -> dict[str, Any]:
    tree = data.tree
    p_val = _predict(model, *encoded["val"], cfg.batch_size) >= cfg.threshold
    p_test = _predict(model, *encoded["test"], cfg.batch_size) >= cfg.threshold
    yt, pt = _full(Y["test"].numpy(), tree), _full(p_test, tree)
    counts = _full(Y["train"].numpy(), tree).sum(0)
    model.eval()
    with torch.no_grad():
        ids, mask = encoded["test"]
        texts = torch.cat([model(ids[i : i + 256], mask[i : i + 256])["text"] for i in range(0, len(ids), 256)])
        T = scales.project_text(texts)
        L = scales.project_labels(model.label_features())
        rt, rl = scales.radius(T), scales.radius(L)
    return {
        "test": hierarchical_f1(yt, pt, tree),
        "val": hierarchical_f1(_full(Y["val"].numpy(), tree), _full(p_val, tree), tree),
        "levels": per_level_f1(yt, pt, tree),
        "buckets": frequency_bucket_f1(yt, pt, tree, counts, buckets=min(4, tree.num_nodes - 1)),
        **{k: float(getattr(scales, k).detach()) for k in ("c", "alpha_t", "alpha_l")},
        "radius": {
            "text_mean": float(rt.mean()) if len(rt) else float("nan"),
            "text_max": float(rt.max()) if len(rt) else float("nan"),
            "label_mean": float(rl.mean()),
            "label_max": float(rl.max()),
        },
        # the labels as points of scales.geometry (its own c): space parts where its points carry one
        # coordinate more than the features (Lorentz's time, first), as hierviz.viz.hyilr reads them
        "label_points": L[..., L.shape[-1] - model.h :].numpy(),
        "points_c": float(scalar(scales.geometry.c)) if scales.geometry.hyperbolic else 1.0,
    }


# ------------------------------------------------------------------ experiment: runs, table, report
METRIC_KEYS = ("micro_f1", "macro_f1", "hi_micro_f1", "hi_macro_f1")


def summarise(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ± std (sample std, ddof=1; 0 for one seed) per method and λ over seeds.

    Parameters
    ----------
    records : sequence of dict
        Run records (``method``, ``lam``, ``seed``, ``test``, ``c``, ``alpha_t``, ``alpha_l``, ``radius``).

    Returns
    -------
    list of dict
        One row per (method, λ) in first-seen order: ``method``, ``display_name``, ``lam``,
        ``seeds``, ``<metric>_mean``/``_std`` in percent, and the mean ``c``, ``alpha_t``,
        ``alpha_l``, ``label_radius``, ``text_radius``.
    """
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["method"], float(r["lam"])), []).append(r)
    rows = []
    for (m, lam), rs in groups.items():
        row: dict[str, Any] = {"method": m, "display_name": HTC_METHODS.get(m).display_name, "lam": lam}
        row["seeds"] = len(rs)
        for k in METRIC_KEYS:
            v = np.array([100 * r["test"][k] for r in rs])
            row[f"{k}_mean"] = float(v.mean())
            row[f"{k}_std"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
        for k in ("c", "alpha_t", "alpha_l"):  # runs written before 0.3 call c "k"
            row[k] = float(np.mean([r[k] if k in r else r["k"] for r in rs]))
        row["label_radius"] = float(np.mean([r["radius"]["label_mean"] for r in rs]))
        row["text_radius"] = float(np.mean([r["radius"]["text_mean"] for r in rs]))
        rows.append(row)
    return rows


def frequency_prior_scores(data: HTCData) -> dict[str, float]:
    """Micro/macro F1 and Hi-MiF1/Hi-MaF1 (fractions) of the frequency prior on the test split: the floor a model must beat.

    Every test document gets the train split's most frequent label set
    (:func:`hierviz.metrics.baselines.frequency_prior_targets`), scored by
    :func:`hierviz.metrics.htc.hierarchical_f1`: the multi-label table's chance line.
    """
    test = data.part("test").targets
    pred = frequency_prior_targets(data.part("train").targets, len(test))
    return hierarchical_f1(test, pred, data.tree)


def markdown_table(rows: Sequence[dict[str, Any]], title: str) -> str:
    """The results table (markdown) of :func:`summarise` rows: mean ± std per metric, c, α_t, α_l, radii."""
    head = "| method | λ | seeds | Micro-F1 | Macro-F1 | Hi-MiF1 | Hi-MaF1 | c | α_t | α_l | label r | text r |"
    lines = [f"### {title}", "", head, "|" + "---|" * 12]
    for r in rows:
        cells = [f"{r[f'{k}_mean']:.2f} ± {r[f'{k}_std']:.2f}" for k in METRIC_KEYS]
        lines.append(
            f"| {r['display_name']} (`{r['method']}`) | {r['lam']:g} | {r['seeds']} | "
            + " | ".join(cells)
            + f" | {r['c']:.3g} | {r['alpha_t']:.3g} | {r['alpha_l']:.3g} | {r['label_radius']:.2f} "
            f"| {r['text_radius']:.2f} |"
        )
    return "\n".join(lines) + "\n"
