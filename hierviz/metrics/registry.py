"""The metric registry: one registration per reported number (its function, title and direction).

A metric is one :class:`MetricInfo`: the key a run records it under, its column title, which
way is better and, for a metric that no protocol computes itself, the function that computes it
from a protocol's arrays (the arrays a run folder's ``embeddings.npz`` keeps: ``z_test``,
``y_test``, ``z_train``, ``y_train``, ``prototypes``, ``proto_nodes``; ``clf_true_test`` and
``clf_pred_test`` for a method with a classifier; see each protocol's ``arrays()``). After its
protocol, every run computes each registered function whose ``needs`` its arrays hold
(:func:`compute_metrics`), records the values with the protocol's, and the results tables show
the metric keys the records hold, in registration order, titled from here. So a new metric is
one function, one :func:`register_metric` line and its tests, in a user module too
(``hierviz compare --import MODULE``).

Examples
--------
>>> METRIC_INFO.get("violations").higher_is_better
False
>>> [m for m in METRIC_INFO.names()][:5]
['hf1', 'h_acc', 'pc_order', 'violations', 'top1']

A metric of the test embeddings and labels, computed by every run that has them:

>>> import numpy as np
>>> def mean_norm(arrays, tree):
...     return float(np.linalg.norm(arrays["z_test"], axis=1).mean())
>>> _ = register_metric("mean_norm", "Mean ‖z‖", fn=mean_norm, needs=("z_test",), higher_is_better=False)
>>> compute_metrics({"z_test": np.array([[3.0, 4.0], [0.0, 1.0]])}, tree=None)
{'mean_norm': 3.0}
>>> compute_metrics({"y_test": np.array([0, 1])}, tree=None)  # no z_test: not computed
{}
>>> METRIC_INFO.unregister("mean_norm")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hierviz._registry import Registry

__all__ = ["MetricInfo", "METRIC_INFO", "register_metric", "compute_metrics"]


@dataclass(frozen=True)
class MetricInfo:
    """One reported metric.

    Attributes
    ----------
    name : str
        The key in a run's ``metrics`` and in ``results.csv``.
    label : str
        Column title.
    higher_is_better : bool
        The direction: which mean is bold in a table.
    source : str
        Where it is defined (``docs/references.md`` name and section).
    fn : callable or None
        ``fn(arrays, tree) -> float``: the metric of a protocol's arrays (a mapping of name to
        NumPy array) and the run's :class:`~hierviz.hierarchy.LabelTree`. None: a protocol
        computes it (HF1 and the other built-in metrics).
    needs : tuple of str
        The array names ``fn`` reads; a run whose arrays lack one does not compute it.
    table : bool, default True
        Shown as a column of the results tables when the records hold it (False: kept in
        ``results.csv`` and ``result.json`` only).
    optional : bool, default False
        Some methods have it and others do not (a classifier's scores): the tables show it
        when any run holds it, "–" for the others; otherwise only when every run holds it.
    hides : tuple of str
        Columns the tables leave out when they show this metric (paper 04's Table I columns
        replace the classification probe's, which the unseen protocol also records).
    """

    name: str
    label: str
    higher_is_better: bool = True
    source: str = ""
    fn: Callable[[Mapping[str, Any], Any], float] | None = None
    needs: tuple[str, ...] = ()
    table: bool = True
    optional: bool = False
    hides: tuple[str, ...] = ()


#: name -> :class:`MetricInfo`, in table column order.
METRIC_INFO: Registry = Registry("metric")


def register_metric(
    name: str,
    label: str,
    *,
    higher_is_better: bool = True,
    source: str = "",
    fn: Callable[[Mapping[str, Any], Any], float] | None = None,
    needs: tuple[str, ...] | list[str] = (),
    table: bool = True,
    optional: bool = False,
    hides: tuple[str, ...] | list[str] = (),
    replace: bool = False,
) -> MetricInfo:
    """Register a reported metric: its title, its direction and, optionally, its function of a protocol's arrays.

    Parameters
    ----------
    name : str
        The record key (``results.csv`` column).
    label : str
        Column title in the tables and the report.
    higher_is_better : bool, default True
    source : str, optional
    fn : callable, optional
        ``fn(arrays, tree) -> float``; see :class:`MetricInfo`.
    needs : sequence of str
        Array names ``fn`` reads (required with ``fn``).
    table, optional, hides
        See :class:`MetricInfo`.
    replace : bool, default False
        Overwrite an existing registration.

    Returns
    -------
    MetricInfo

    Raises
    ------
    ValueError
        ``name`` already registered (and ``replace`` is False), ``fn`` not callable, or ``fn``
        without ``needs``.
    """
    if fn is not None and not callable(fn):
        raise ValueError(f"metric {name!r}: fn must be callable fn(arrays, tree) -> float, got {fn!r}")
    needs = tuple(needs)
    if fn is not None and not needs:
        raise ValueError(f"metric {name!r}: name the arrays fn reads, e.g. needs=('z_test', 'y_test')")
    info = MetricInfo(name, label, bool(higher_is_better), source, fn, needs, bool(table), bool(optional), tuple(hides))
    METRIC_INFO.register(name, info, replace=replace)
    return info


def compute_metrics(arrays: Mapping[str, Any], tree: Any, skip: Any = ()) -> dict[str, float]:
    """The registered metric functions whose ``needs`` ``arrays`` holds, in registration order.

    Parameters
    ----------
    arrays : mapping of str to ndarray
        A protocol's arrays (``ev.arrays()``, with a classifier's).
    tree : LabelTree
    skip : container of str
        Keys already computed (a protocol's own metrics): not computed again.

    Returns
    -------
    dict of str to float

    Raises
    ------
    ValueError
        A metric function that returns something other than a real number (naming the metric).
    """
    out: dict[str, float] = {}
    for name in METRIC_INFO.names():
        info = METRIC_INFO.get(name)
        if info.fn is None or name in skip or not all(k in arrays for k in info.needs):
            continue
        value = info.fn(arrays, tree)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"metric {name!r}: fn returned {value!r}, not a real number") from None
        out[name] = value
    return out


for _name, _label, _hib in (
    ("hf1", "HF1", True),
    ("h_acc", "H-Acc", True),
    ("pc_order", "PC-Order", True),
    ("violations", "Violations ↓", False),
    ("top1", "Top-1", True),
):
    register_metric(_name, _label, higher_is_better=_hib, source="Paper 01 (HWC + LAM) §3.5, §4.4")

for _name, _label in (("bal_acc", "Bal-Acc"), ("macro_f1", "Macro-F1")):  # imbalance-aware
    register_metric(_name, _label, source="scikit-learn balanced_accuracy_score / f1_score(average='macro')")

for _name, _label, _hib in (  # Paper 04: the seen/unseen protocol (hierviz.evaluation.unseen)
    ("leaf_f1", "Leaf F1", True),
    ("rp5", "Leaf RP@5", True),
    ("mnr", "MNR ↓", False),
    ("ndcg_sum", "NDCG_sum", True),
    ("ndcg_max", "NDCG_max", True),
    ("acc_blind", "Acc_blind", True),
    ("acc_aware", "Acc_aware", True),
):
    register_metric(
        _name,
        _label,
        higher_is_better=_hib,
        source="Paper 04 (Generalised triplets) §III-D",
        hides=("hf1", "h_acc", "pc_order", "violations", "top1", "bal_acc", "macro_f1"),  # Table I's columns only
    )
for _name, _label in (  # in results.csv, not in the tables' Table I columns
    ("blind_over_aware", "Acc_blind / Acc_aware"),
    ("pred_ndcg_sum", "NDCG_sum (unseen)"),
    ("pred_ndcg_max", "NDCG_max (unseen)"),
):
    register_metric(_name, _label, source="Paper 04 (Generalised triplets) §III-D", table=False)

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
    register_metric(
        _name, _label, source="Paper 05 (HyILR) §5.3 (the classifier's thresholded label sets)", optional=True
    )
