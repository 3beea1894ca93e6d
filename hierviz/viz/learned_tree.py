"""How well a trained embedding keeps a label tree's distances: the CPCC figure of notebook 00.

The cophenetic correlation (CPCC) compares, over every pair of leaves, the tree distance
d_T (edges on the path, Paper 01 (HWC + LAM) §3) with the geodesic distance between the
leaves' prototypes (Fréchet means of their points). It is the quantity the CPCC
regulariser (:class:`hierviz.losses.CPCCLoss`) trains; here it is measured on finished
embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from scipy.stats import pearsonr, spearmanr

__all__ = ["leaf_prototype_cpcc", "cpcc_figure"]


def leaf_prototype_cpcc(z: Any, labels: Any, tree: Any, geometry: Any, steps: int = 10) -> dict[str, Any]:
    """Tree distance against prototype distance for every pair of leaves present in ``labels``.

    Parameters
    ----------
    z : array-like or Tensor, float, shape (n, D)
        Points of ``geometry`` (ambient coordinates: ``D = d + 1`` on the hyperboloid).
    labels : array-like of int, shape (n,)
        Leaf index of each point.
    tree : LabelTree
    geometry : Geometry
    steps : int, default 10
        Karcher steps of the prototypes (:meth:`Geometry.group_mean`).

    Returns
    -------
    dict
        ``leaves`` (k,) the leaf indices present; ``tree_distance`` and ``distance``, float64
        arrays (k (k - 1) / 2,) over the pairs i < j; ``pearson`` (the CPCC) and ``spearman``
        (floats in [-1, 1]).

    Raises
    ------
    ValueError
        Fewer than three leaves present (the correlation needs three pairs), or ``z`` and
        ``labels`` differ in length.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import Euclidean
    >>> from hierviz.hierarchy import LabelTree
    >>> t = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> ang = torch.tensor([0.0, 0.2, 3.0, 3.2], dtype=torch.float64)  # a1, a2 close; b1, b2 close
    >>> z = torch.stack([ang.cos(), ang.sin()], -1)                       # on the unit circle
    >>> out = leaf_prototype_cpcc(z, [0, 1, 2, 3], t, Euclidean())
    >>> out["tree_distance"].tolist()  # siblings 2 edges apart, cousins 4
    [2.0, 4.0, 4.0, 4.0, 4.0, 2.0]
    >>> round(out["pearson"], 3)  # the sphere keeps the tree's two distances apart
    1.0
    """
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    zt = torch.as_tensor(np.asarray(z) if not isinstance(z, torch.Tensor) else z).double()
    if zt.shape[0] != y.shape[0]:
        raise ValueError(f"z and labels must have the same length, got {zt.shape[0]} and {y.shape[0]}")
    leaves, inv = torch.unique(y, return_inverse=True)
    k = int(leaves.numel())
    if k < 3:
        raise ValueError(f"labels: {k} leaf/leaves present; the CPCC needs three or more")
    with torch.no_grad():
        protos = geometry.group_mean(zt, inv, k, steps=steps)
        d = geometry.dist(protos[:, None], protos[None]).double().numpy()
    dt = tree.tree_distance_matrix.double().numpy()[np.ix_(leaves.numpy(), leaves.numpy())]
    iu = np.triu_indices(k, 1)
    a, b = dt[iu], d[iu]
    return {
        "leaves": leaves.numpy(),
        "tree_distance": a,
        "distance": b,
        "pearson": float(pearsonr(a, b)[0]),
        "spearman": float(spearmanr(a, b)[0]),
    }


def cpcc_figure(z: Any, labels: Any, tree: Any, geometry: Any, title: str | None = None) -> go.Figure:
    """Scatter of prototype distance against tree distance over leaf pairs, CPCC in the title.

    Parameters
    ----------
    z, labels, tree, geometry
        As :func:`leaf_prototype_cpcc`.
    title : str, optional
        Prefix of the title (the CPCC and Spearman are appended).

    Returns
    -------
    plotly.graph_objects.Figure
        One box per tree distance (the spread of the pairs at that distance) with the pairs as points.

    Raises
    ------
    ValueError
        As :func:`leaf_prototype_cpcc`.
    """
    out = leaf_prototype_cpcc(z, labels, tree, geometry)
    fig = go.Figure()
    fig.add_box(x=out["tree_distance"], y=out["distance"], boxpoints="all", jitter=0.4, name="leaf pairs")
    head = f"{title}: " if title else ""
    fig.update_layout(
        height=380,
        showlegend=False,
        xaxis_title="tree distance d_T (edges)",
        yaxis_title=f"distance between leaf prototypes ({geometry.name})",
        title=f"{head}CPCC (Pearson) {out['pearson']:.3f}, Spearman {out['spearman']:.3f}",
    )
    return fig
