"""Label trees: the hierarchy every hierarchy-aware loss, metric and figure reads.

* :mod:`.label_tree` — :class:`LabelTree`: validated construction, vectorised LCA / ρ / d_T /
  level-ancestor / lowest-seen-ancestor queries (paper 01 Eq. 4, paper 04 §III-D);
* :mod:`.io` — tree JSON in four forms, read strictly (UTF-8, no repeated keys);
* :mod:`.dag` — the DAG → tree projection of paper 01 §4.1.

Nothing here imports plotting: draw a tree with :func:`hierviz.viz.plot_tree`.
"""

from hierviz.hierarchy.dag import ProjectionChoice, project_dag
from hierviz.hierarchy.io import TREE_FORMS, as_tree_object, parse_tree_json, read_tree_file, tree_from_obj
from hierviz.hierarchy.label_tree import LabelTree

__all__ = [
    "LabelTree",
    "ProjectionChoice",
    "project_dag",
    "parse_tree_json",
    "read_tree_file",
    "as_tree_object",
    "tree_from_obj",
    "TREE_FORMS",
]
