"""Plotly figures for hierarchical embeddings (every function returns a ``go.Figure``).

* :func:`plot_poincare_disk` — points in the Poincaré disk, prototypes, tree edges as geodesics
* :func:`plot_projection` — t-SNE / UMAP / PCA map with centroid edges or hulls per parent
* :func:`plot_hyperboloid` — the Lorentz model in 3-D
* :func:`plot_tree`, :func:`plot_rho`, :func:`plot_omega`, :func:`plot_forces` — the tree,
  ρ (paper 01 Eq. 4), the HWC multipliers ω (Eqs. 5–6) and forces (Eq. 8)
* :func:`plot_loss_curves`, :func:`plot_metric_bars` — training curves and results

Leaf colours are consistent across figures: one colour family per parent, shades per
leaf (:func:`leaf_colors`). Interactive panels live in :mod:`hierviz.viz.widgets`
(imported on demand, since it needs ipywidgets).
"""

from hierviz.viz.curves import plot_loss_curves, plot_metric_bars
from hierviz.viz.disk import check_in_ball, geodesic, node_positions, plot_poincare_disk, reduce_to_disk
from hierviz.viz.hyperboloid import check_on_hyperboloid, hyperboloid_to_disk, plot_hyperboloid
from hierviz.viz.learned_tree import cpcc_figure, leaf_prototype_cpcc
from hierviz.viz.omega import hwc_forces, omega_matrix, plot_forces, plot_omega, plot_rho
from hierviz.viz.projection import parent_hulls, plot_projection, project_2d
from hierviz.viz.radius import plot_node_radii, plot_radius_by_depth
from hierviz.viz.tree import dfs_leaves, family_colors, leaf_colors, node_colors, plot_tree, tree_layout

__all__ = [
    "plot_node_radii",
    "plot_radius_by_depth",
    "plot_poincare_disk",
    "geodesic",
    "check_in_ball",
    "reduce_to_disk",
    "node_positions",
    "plot_projection",
    "project_2d",
    "parent_hulls",
    "plot_hyperboloid",
    "check_on_hyperboloid",
    "hyperboloid_to_disk",
    "plot_tree",
    "tree_layout",
    "dfs_leaves",
    "leaf_colors",
    "family_colors",
    "node_colors",
    "plot_rho",
    "plot_omega",
    "omega_matrix",
    "plot_forces",
    "hwc_forces",
    "cpcc_figure",
    "leaf_prototype_cpcc",
    "plot_loss_curves",
    "plot_metric_bars",
]
