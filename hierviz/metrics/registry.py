"""The metric registry: what each reported number is called and which way is better.

Evaluation protocols return metrics by key; the results tables and the HTML report read
their column titles and "best" direction from here, so a new metric is one function, one
registration and its tests.

Examples
--------
>>> METRIC_INFO.get("violations").higher_is_better
False
>>> [m for m in METRIC_INFO.names()][:5]
['hf1', 'h_acc', 'pc_order', 'violations', 'top1']
"""

from __future__ import annotations

from dataclasses import dataclass

from hierviz._registry import Registry

__all__ = ["MetricInfo", "METRIC_INFO", "register_metric"]


@dataclass(frozen=True)
class MetricInfo:
    """How a metric is shown.

    Attributes
    ----------
    name : str
        The key in a protocol's ``metrics`` dict and in ``results.csv``.
    label : str
        Column title.
    higher_is_better : bool
    source : str
        Where it is defined (``docs/references.md`` name and section).
    """

    name: str
    label: str
    higher_is_better: bool = True
    source: str = ""


#: name -> :class:`MetricInfo`, in table column order.
METRIC_INFO: Registry = Registry("metric")


def register_metric(
    name: str, label: str, *, higher_is_better: bool = True, source: str = "", replace: bool = False
) -> MetricInfo:
    """Declare a reported metric (its column title and best direction).

    Raises
    ------
    ValueError
        ``name`` is already registered (and ``replace`` is False).
    """
    info = MetricInfo(name, label, higher_is_better, source)
    METRIC_INFO.register(name, info, replace=replace)
    return info


for _name, _label, _hib in (
    ("hf1", "HF1", True),
    ("h_acc", "H-Acc", True),
    ("pc_order", "PC-Order", True),
    ("violations", "Violations ↓", False),
    ("top1", "Top-1", True),
):
    register_metric(_name, _label, higher_is_better=_hib, source="Paper 01 (HWC + LAM) §3.5, §4.4")

for _name, _label in (("bal_acc", "Bal-Acc"), ("macro_f1", "Macro-F1")):  # issue 24: imbalance-aware
    register_metric(_name, _label, source="scikit-learn balanced_accuracy_score / f1_score(average='macro')")

for _name, _label, _hib in (  # Paper 04: the seen/unseen protocol (hierviz.evaluation.unseen)
    ("leaf_f1", "Leaf F1", True),
    ("rp5", "Leaf RP@5", True),
    ("mnr", "MNR ↓", False),
    ("ndcg_sum", "NDCG_sum", True),
    ("ndcg_max", "NDCG_max", True),
    ("acc_blind", "Acc_blind", True),
    ("acc_aware", "Acc_aware", True),
    ("blind_over_aware", "Acc_blind / Acc_aware", True),
    ("pred_ndcg_sum", "NDCG_sum (unseen)", True),
    ("pred_ndcg_max", "NDCG_max (unseen)", True),
):
    register_metric(_name, _label, higher_is_better=_hib, source="Paper 04 (Generalised triplets) §III-D")

for _name, _label in (  # Paper 03: the retrieval protocol (hierviz.evaluation.retrieval)
    ("map@1", "MAP@1"),
    ("map@5", "MAP@5"),
    ("map@10", "MAP@10"),
    ("map@20", "MAP@20"),
    ("p@1", "P@1"),
    ("r_precision", "R-Prec"),
):
    register_metric(_name, _label, source="Paper 03 (Hyper-DINO) §3.1")

for _name, _label in (  # Paper 05: the multi-label classifier of the HyILR methods (hierviz.metrics.htc)
    ("clf_micro_f1", "Clf Micro-F1"),
    ("clf_macro_f1", "Clf Macro-F1"),
    ("clf_hi_micro_f1", "Clf Hi-MiF1"),
    ("clf_hi_macro_f1", "Clf Hi-MaF1"),
):
    register_metric(_name, _label, source="Paper 05 (HyILR) §5.3 (the classifier's thresholded label sets)")
