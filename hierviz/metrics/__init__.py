"""Hierarchy-faithfulness and retrieval metrics.

Classification / embedding metrics of paper 01 (§3.5, §4.4):

* :func:`hf1` -- hierarchical F1 over ancestor sets (root left out);
* :func:`h_acc` -- tree-distance-weighted accuracy ``1 - d_T / 2L``;
* :func:`parent_prototypes`, :func:`parent_violations`, :func:`pc_order` -- prototype-based
  parent-distance violations and nearest-parent top-1, in the embedding's own geometry;
* :func:`linear_probe` -- balanced multinomial logistic-regression probe (scikit-learn);
* :func:`hierarchy_report` -- all of the above as one row
  ``{"top1", "hf1", "h_acc", "violations", "pc_order"}``.

Retrieval metrics (papers 01 and 04): :func:`precision_at_k` (RP@k), :func:`recall_at_k`,
:func:`map_at_k`, :func:`ndcg` (tree-graded relevance, :func:`tree_relevance`) and
:func:`mean_normalised_rank` (MNR). Paper 04's evaluation as the authors run it (leave-one-out,
undefined terms left out): :func:`rp_at_k`, :func:`mnr`, :func:`ndcg_tree` and
:func:`ranking_report` (:mod:`hierviz.metrics.ranking`).

Labels are always leaf indices (``0 .. C-1``) in the tree's leaf order.
"""

from hierviz.metrics.hierarchy import (
    default_parent_level,
    h_acc,
    hf1,
    parent_prototypes,
    parent_violations,
    pc_order,
    violations_by_level,
)
from hierviz.metrics.htc import (  # noqa: E402  (Paper 05 (HyILR): multi-label HTC metrics)
    frequency_bucket_f1,
    hierarchical_f1,
    hierarchy_consistent,
    per_level_f1,
)
from hierviz.metrics.probe import REPORT_KEYS, hierarchy_report, linear_probe
from hierviz.metrics.radius import (
    RADIUS_METRICS,
    clip_fraction,
    edge_order,
    max_radius,
    node_prototype_radii,
    norm_auroc,
    origin_distance,
    radius_depth_spearman,
    radius_gap,
    radius_metrics,
    radius_order_interval,
    radius_report,
)
from hierviz.metrics.ranking import RANKING_KEYS, mnr, ndcg_tree, ranking_report, rp_at_k
from hierviz.metrics.registry import METRIC_INFO, MetricInfo, compute_metrics, register_metric  # noqa: E402
from hierviz.metrics.retrieval import (
    MAP_DENOMINATORS,
    flat_retrieval_report,
    map_at_k,
    mean_normalised_rank,
    ndcg,
    precision_at_k,
    r_precision,
    recall_at_k,
    tree_relevance,
)
from hierviz.metrics.tree_likeness import GROMOV_EXACT_MAX, embedding_distortion, gromov_delta

__all__ = [
    "gromov_delta",
    "embedding_distortion",
    "GROMOV_EXACT_MAX",
    "RANKING_KEYS",
    "mnr",
    "ndcg_tree",
    "ranking_report",
    "rp_at_k",
    "METRIC_INFO",
    "MetricInfo",
    "register_metric",
    "compute_metrics",
    "violations_by_level",
    "hf1",
    "h_acc",
    "default_parent_level",
    "parent_prototypes",
    "parent_violations",
    "pc_order",
    "linear_probe",
    "hierarchy_report",
    "REPORT_KEYS",
    "radius_report",
    "max_radius",
    "RADIUS_METRICS",
    "radius_metrics",
    "radius_order_interval",
    "node_prototype_radii",
    "radius_depth_spearman",
    "edge_order",
    "clip_fraction",
    "radius_gap",
    "norm_auroc",
    "origin_distance",
    "precision_at_k",
    "recall_at_k",
    "map_at_k",
    "MAP_DENOMINATORS",
    "r_precision",
    "flat_retrieval_report",
    "ndcg",
    "tree_relevance",
    "mean_normalised_rank",
    "hierarchical_f1",
    "hierarchy_consistent",
    "per_level_f1",
    "frequency_bucket_f1",
]
