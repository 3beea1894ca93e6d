"""hierviz: hierarchical contrastive learning you can see.

Label trees, Euclidean / Poincaré / Lorentz geometry, hierarchy-aware losses
(SupCon, HWC, LAM, HXE, ...), hierarchy-faithfulness metrics, a small training loop
and plotly figures, for teaching and exploring representation learning that
respects a label tree.
"""

__version__ = "0.3.0.dev0"
