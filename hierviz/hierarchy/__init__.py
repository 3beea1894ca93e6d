"""Label trees: the hierarchy every hierarchy-aware loss, metric and figure reads.

* :mod:`.label_tree` — :class:`LabelTree`: validated construction, vectorised LCA / ρ / d_T /
  level-ancestor / lowest-seen-ancestor queries (paper 01 Eq. 4, paper 04 §III-D);
* :mod:`.io` — tree JSON in four forms (parent map, nested dict, paths list, full form), told
  apart without flags, read strictly (UTF-8, no repeated keys, JSON booleans) and written back;
* :mod:`.dag` — the DAG → tree projection of paper 01 §4.1.

Every traversal is iterative, so trees thousands of levels deep work. Nothing here imports
plotting: draw a tree with :func:`hierviz.viz.plot_tree`.

Examples
--------
>>> t = tree_from_obj({"x": "a", "y": "a", "a": "root", "z": "root"})
>>> t.leaves, t.height, t.ancestors("y")
(['x', 'y', 'z'], 2, ['root', 'a', 'y'])
"""

from hierviz.hierarchy.dag import ProjectionChoice, project_dag
from hierviz.hierarchy.io import (
    FULL_FORM_KEYS,
    TREE_FORMS,
    WRITE_FORMS,
    as_tree_object,
    detect_tree_form,
    dumps_tree_json,
    parse_tree_json,
    read_tree_file,
    tree_to_obj,
    write_tree_file,
)
from hierviz.hierarchy.label_tree import LabelTree, dfs_leaves, leaf_parent, tree_from_obj
from hierviz.hierarchy.levels import LEVEL_ORDERS, level_groups, level_label_matrix, level_labels, level_names

__all__ = [
    "LabelTree",
    "dfs_leaves",
    "leaf_parent",
    "LEVEL_ORDERS",
    "level_labels",
    "level_groups",
    "level_label_matrix",
    "level_names",
    "ProjectionChoice",
    "project_dag",
    "parse_tree_json",
    "read_tree_file",
    "detect_tree_form",
    "as_tree_object",
    "tree_from_obj",
    "tree_to_obj",
    "dumps_tree_json",
    "write_tree_file",
    "TREE_FORMS",
    "FULL_FORM_KEYS",
    "WRITE_FORMS",
]
