"""Deprecated alias of :mod:`hierviz.hierarchy`; will be removed in 0.3.

Import from :mod:`hierviz.hierarchy` instead (``from hierviz.hierarchy import LabelTree``).
"""

from hierviz.hierarchy import *  # noqa: F403
from hierviz.hierarchy import (  # noqa: F401
    LabelTree,
    ProjectionChoice,
    __all__,
    as_tree_object,
    parse_tree_json,
    project_dag,
    read_tree_file,
    tree_from_obj,
)
