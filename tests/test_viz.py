"""Tests for hierviz.viz figures: traces, geometry of the drawn objects, values, bad input."""

from __future__ import annotations

import colorsys
import warnings

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.viz import (
    check_on_hyperboloid,
    dfs_leaves,
    family_colors,
    geodesic,
    hwc_forces,
    hyperboloid_to_disk,
    leaf_colors,
    node_colors,
    omega_matrix,
    parent_hulls,
    plot_forces,
    plot_hyperboloid,
    plot_loss_curves,
    plot_metric_bars,
    plot_omega,
    plot_poincare_disk,
    plot_projection,
    plot_rho,
    plot_tree,
    project_2d,
    reduce_to_disk,
    tree_layout,
)

BREAKHIS_LEAVES = [
    "adenosis",
    "fibroadenoma",
    "phyllodes_tumor",
    "tubular_adenoma",
    "ductal_carcinoma",
    "lobular_carcinoma",
    "mucinous_carcinoma",
    "papillary_carcinoma",
]


# ----------------------------------------------------------------------------- helpers
def poincare_dist(x, y, c=1.0):
    """Paper 01 Eq. 2 in float64 numpy (independent of geoopt / hierviz.geometry)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    num = 2 * c * np.sum((x - y) ** 2, -1)
    den = (1 - c * np.sum(x**2, -1)) * (1 - c * np.sum(y**2, -1))
    return np.arccosh(1 + num / den) / np.sqrt(c)


def toy_disk_points(tree, n_per_leaf=12, c=1.0, seed=0, dim=2):
    """Clusters per leaf inside the ball of radius 1/sqrt(c): benign right, malignant left."""
    rng = np.random.default_rng(seed)
    C = tree.num_leaves
    zs, ys = [], []
    for i, leaf in enumerate(dfs_leaves(tree)):
        ang = 2 * np.pi * (i + 0.5) / C
        centre = np.zeros(dim)
        centre[:2] = 0.6 * np.array([np.cos(ang), np.sin(ang)])
        pts = centre + 0.05 * rng.standard_normal((n_per_leaf, dim))
        zs.append(pts / np.sqrt(c))
        ys.append(np.full(n_per_leaf, tree.leaf_index[leaf]))
    return np.concatenate(zs), np.concatenate(ys).astype(np.int64)


def trace_names(fig):
    return [t.name for t in fig.data]


def n_segments(trace):
    return sum(v is None for v in trace.x)


# ----------------------------------------------------------------------------- colours & tree
def test_leaf_colors_one_family_per_parent(breakhis_tree):
    col = leaf_colors(breakhis_tree)
    assert set(col) == set(BREAKHIS_LEAVES)
    assert len(set(col.values())) == 8  # every leaf distinct

    def hue(h):
        hh = colorsys.rgb_to_hls(*(int(h[i : i + 2], 16) / 255 for i in (1, 3, 5)))[0]
        return (hh + 0.1) % 1.0  # red sits at the 0/1 wrap-around

    benign = {round(hue(col[x]), 2) for x in BREAKHIS_LEAVES[:4]}
    malignant = {round(hue(col[x]), 2) for x in BREAKHIS_LEAVES[4:]}
    assert len(benign) == 1 and len(malignant) == 1 and benign != malignant
    fam = family_colors(breakhis_tree)
    assert list(fam) == ["benign", "malignant"]
    assert leaf_colors(breakhis_tree) == col  # deterministic
    assert node_colors(breakhis_tree)["benign"] == fam["benign"]


def test_tree_layout_parent_is_mean_of_children(unbalanced_tree):
    pos = tree_layout(unbalanced_tree, "rows")
    for node in unbalanced_tree.nodes:
        kids = unbalanced_tree.children(node)
        assert pos[node][1] == -unbalanced_tree.depth(node)
        if kids:
            assert pos[node][0] == pytest.approx(np.mean([pos[k][0] for k in kids]))
    assert pos["c"][1] == -1  # shallow leaf keeps its own depth
    rad = tree_layout(unbalanced_tree, "radial")
    assert np.hypot(*rad["x"]) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="layout"):
        tree_layout(unbalanced_tree, "spiral")


def test_plot_tree_traces(breakhis_tree):
    fig = plot_tree(breakhis_tree)
    assert trace_names(fig) == ["edges", "level 0", "level 1", "level 2"]
    assert n_segments(fig.data[0]) == breakhis_tree.num_nodes - 1
    assert list(fig.data[3].text) == BREAKHIS_LEAVES
    assert "height L = 2" in fig.layout.title.text


# ----------------------------------------------------------------------------- geodesics
def _circle_through(a, b, c):
    """Centre and radius of the circle through three 2-D points."""
    A = 2 * np.array([b - a, c - a])
    rhs = np.array([b @ b - a @ a, c @ c - a @ a])
    o = np.linalg.solve(A, rhs)
    return o, np.linalg.norm(a - o)


@pytest.mark.parametrize("c", [1.0, 2.5])
def test_geodesic_is_orthogonal_arc_and_shortest(c):
    R = 1 / np.sqrt(c)
    p, q = np.array([0.5, 0.1]) * R, np.array([-0.2, 0.7]) * R
    g = geodesic(p, q, c, n=50)
    assert g.shape == (50, 2)
    np.testing.assert_allclose(g[0], p, atol=1e-12)
    np.testing.assert_allclose(g[-1], q, atol=1e-12)
    assert np.all(np.linalg.norm(g, axis=1) < R)
    dpq = poincare_dist(p, q, c)
    np.testing.assert_allclose(poincare_dist(p, g, c) + poincare_dist(g, q, c), dpq, atol=1e-6)
    # equal spacing in hyperbolic arc length
    steps = poincare_dist(g[:-1], g[1:], c)
    np.testing.assert_allclose(steps, dpq / 49, rtol=1e-5)
    # all samples on one circle orthogonal to the boundary: |o|^2 = R^2 + r^2
    o, r = _circle_through(g[0], g[20], g[-1])
    np.testing.assert_allclose(np.linalg.norm(g - o, axis=1), r, rtol=1e-7)
    assert o @ o == pytest.approx(R**2 + r**2, rel=1e-7)


def test_geodesic_through_origin_is_a_diameter():
    g = geodesic([0.0, 0.0], [0.3, 0.4], 1.0, n=7)
    cross = g[:, 0] * 0.4 - g[:, 1] * 0.3
    np.testing.assert_allclose(cross, 0.0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.2, 5.0), st.lists(st.floats(-0.69, 0.69), min_size=6, max_size=6))
def test_geodesic_property_any_dim(c, coords):
    R = 1 / np.sqrt(c)
    p, q = np.array(coords[:3]), np.array(coords[3:])
    p, q = (v * min(1.0, 0.95 / max(np.linalg.norm(v), 1e-12)) * R for v in (p, q))
    g = geodesic(p, q, c, n=9)
    assert np.all(np.linalg.norm(g, axis=1) < R)
    np.testing.assert_allclose(poincare_dist(p, g, c) + poincare_dist(g, q, c), poincare_dist(p, q, c), atol=1e-6)


def test_geodesic_bad_input():
    with pytest.raises(ValueError, match="outside"):
        geodesic([0.0, 0.0], [1.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="outside"):
        geodesic([0.0, 0.0], [0.6, 0.0], 4.0)  # radius 0.5
    with pytest.raises(ValueError, match="c must"):
        geodesic([0.0, 0.0], [0.1, 0.0], 0.0)
    with pytest.raises(ValueError, match="n must"):
        geodesic([0.0, 0.0], [0.1, 0.0], 1.0, n=1)
    with pytest.raises(ValueError, match="same dimension"):
        geodesic([0.0, 0.0], [0.1, 0.0, 0.0], 1.0)


# ----------------------------------------------------------------------------- Poincaré disk
def test_disk_traces_and_edges(breakhis_tree):
    z, y = toy_disk_points(breakhis_tree)
    fig = plot_poincare_disk(z, y, breakhis_tree)
    assert trace_names(fig) == ["boundary"] + BREAKHIS_LEAVES + ["tree edges", "leaf centroids", "prototypes", "root"]
    assert sum(len(fig.data[i + 1].x) for i in range(8)) == len(z)
    # one geodesic per tree edge: root→2 parents, parents→8 leaves
    edges = fig.data[9]
    assert n_segments(edges) == breakhis_tree.num_nodes - 1
    xy = np.array([(a, b) for a, b in zip(edges.x, edges.y) if a is not None])
    assert np.all(np.hypot(xy[:, 0], xy[:, 1]) < 1.0)
    assert list(fig.data[11].text) == ["benign", "malignant"]
    assert fig.layout.yaxis.scaleanchor == "x"
    assert fig.data[1].legendgroup == "benign" and fig.data[5].legendgroup == "malignant"
    assert "adenosis" in fig.data[1].hovertemplate and "benign" in fig.data[1].hovertemplate
    assert fig.layout.meta["reduced"] is False


def test_disk_centroid_is_frechet_mean(breakhis_tree):
    # two points of one leaf: their Fréchet mean is the geodesic midpoint
    p, q = np.array([0.40, 0.05]), np.array([0.44, -0.02])
    rest, yr = toy_disk_points(breakhis_tree, n_per_leaf=3)
    keep = yr != 0
    z = np.vstack([p, q, rest[keep]])
    y = np.concatenate([[0, 0], yr[keep]])
    fig = plot_poincare_disk(z, y, breakhis_tree)
    cent = fig.data[10]
    i = list(cent.text).index("adenosis")
    mid = geodesic(p, q, 1.0, n=3)[1]
    np.testing.assert_allclose([cent.x[i], cent.y[i]], mid, atol=1e-4)


@pytest.mark.parametrize("c", [0.5, 4.0])
def test_disk_radius_follows_c(breakhis_tree, c):
    z, y = toy_disk_points(breakhis_tree, c=c)
    fig = plot_poincare_disk(torch.tensor(z, dtype=torch.float32), torch.tensor(y), breakhis_tree, c=c)
    bnd = fig.data[0]
    np.testing.assert_allclose(np.hypot(bnd.x, bnd.y), 1 / np.sqrt(c), rtol=1e-12)
    assert fig.layout.xaxis.range[1] == pytest.approx(1.06 / np.sqrt(c))
    assert fig.layout.meta["radius"] == pytest.approx(1 / np.sqrt(c))
    edges = fig.data[9]
    xy = np.array([(a, b) for a, b in zip(edges.x, edges.y) if a is not None])
    assert np.all(np.hypot(xy[:, 0], xy[:, 1]) < 1 / np.sqrt(c))


def test_disk_given_prototypes_by_name_and_index(breakhis_tree):
    z, y = toy_disk_points(breakhis_tree)
    protos = np.array([[0.3, 0.3], [-0.3, -0.3]])
    fig = plot_poincare_disk(z, y, breakhis_tree, prototypes=protos, proto_nodes=["benign", "malignant"])
    pr = fig.data[11]
    np.testing.assert_allclose(np.column_stack([pr.x, pr.y]), protos)
    assert list(pr.customdata) == ["prototype", "prototype"]
    ids = torch.tensor([breakhis_tree.node_index["benign"], breakhis_tree.node_index["malignant"]])
    fig2 = plot_poincare_disk(z, y, breakhis_tree, prototypes=torch.tensor(protos), proto_nodes=ids)
    np.testing.assert_allclose(np.column_stack([fig2.data[11].x, fig2.data[11].y]), protos)
    # the edge from the root starts at the origin and ends at the given prototype
    e = fig.data[9]
    first = np.array([(a, b) for a, b in zip(e.x, e.y)][: e.x.index(None)])
    np.testing.assert_allclose(first[0], [0, 0], atol=1e-12)
    assert any(np.allclose(first[-1], pp) for pp in protos)


def test_disk_high_dim_is_reduced_and_norms_shrink(breakhis_tree):
    z, y = toy_disk_points(breakhis_tree, dim=6)
    z2, (p2,) = reduce_to_disk(z, 1.0, [z[:5]])
    assert z2.shape == (len(z), 2)
    np.testing.assert_allclose(p2, z2[:5], atol=1e-12)
    assert np.all(np.linalg.norm(z2, axis=1) <= np.linalg.norm(z, axis=1) + 1e-12)
    fig = plot_poincare_disk(z, y, breakhis_tree)
    assert fig.layout.meta["reduced"] is True
    assert "PCA" in fig.layout.title.text and "d = 6" in fig.layout.title.text
    pts = np.concatenate([np.column_stack([t.x, t.y]) for t in fig.data[1:9]])
    assert np.all(np.linalg.norm(pts, axis=1) < 1)


def test_disk_subsamples(breakhis_tree):
    z, y = toy_disk_points(breakhis_tree, n_per_leaf=40)
    fig = plot_poincare_disk(z, y, breakhis_tree, max_points=100)
    assert sum(len(t.x) for t in fig.data[1:9]) == 100
    assert fig.layout.meta["n_shown"] == 100 and fig.layout.meta["n_points"] == 320
    assert "100 of 320" in fig.layout.title.text


def test_disk_unbalanced_and_leaf_names(unbalanced_tree):
    z, y = toy_disk_points(unbalanced_tree)
    names = [unbalanced_tree.leaves[i] for i in y]
    fig = plot_poincare_disk(z, names, unbalanced_tree, show_tree=True)
    assert n_segments(fig.data[trace_names(fig).index("tree edges")]) == unbalanced_tree.num_nodes - 1
    protos = fig.data[trace_names(fig).index("prototypes")]
    assert set(protos.text) == {"a", "b", "a1", "a2"}


def test_disk_bad_input(breakhis_tree):
    z, y = toy_disk_points(breakhis_tree)
    with pytest.raises(ValueError, match="labels has length"):
        plot_poincare_disk(z, y[:-1], breakhis_tree)
    with pytest.raises(ValueError, match="outside the Poincaré ball"):
        plot_poincare_disk(z * 2, y, breakhis_tree)
    with pytest.raises(ValueError, match="outside the Poincaré ball"):
        plot_poincare_disk(z, y, breakhis_tree, c=4.0)  # radius 0.5 < 0.6
    with pytest.raises(ValueError, match="c must"):
        plot_poincare_disk(z, y, breakhis_tree, c=-1.0)
    with pytest.raises(ValueError, match="leaf indices in"):
        plot_poincare_disk(z, y + 1, breakhis_tree)
    with pytest.raises(TypeError, match="labels"):
        plot_poincare_disk(z, y.astype(float), breakhis_tree)
    zn = z.copy()
    zn[3, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        plot_poincare_disk(zn, y, breakhis_tree)
    with pytest.raises(ValueError, match="proto_nodes"):
        plot_poincare_disk(z, y, breakhis_tree, prototypes=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="not a node"):
        plot_poincare_disk(z, y, breakhis_tree, prototypes=np.zeros((1, 2)), proto_nodes=["cat"])
    with pytest.raises(ValueError, match="dimension"):
        plot_poincare_disk(z, y, breakhis_tree, prototypes=np.zeros((1, 3)), proto_nodes=["benign"])
    with pytest.raises(ValueError, match="shape"):
        plot_poincare_disk(z[:, 0], y, breakhis_tree)


# ----------------------------------------------------------------------------- projections
def toy_features(tree, n_per_leaf=8, d=6, seed=0):
    rng = np.random.default_rng(seed)
    C = tree.num_leaves
    centres = rng.standard_normal((C, d)) * 3
    y = np.repeat(np.arange(C), n_per_leaf)
    return centres[y] + 0.3 * rng.standard_normal((len(y), d)), y


def test_projection_pca_values_and_traces(breakhis_tree):
    from sklearn.decomposition import PCA

    X, y = toy_features(breakhis_tree)
    fig, xy, idx = plot_projection(X, y, breakhis_tree, method="pca", return_coords=True)
    np.testing.assert_array_equal(idx, np.arange(len(X)))
    np.testing.assert_allclose(xy, PCA(2, random_state=0).fit_transform(X), atol=1e-10)
    assert trace_names(fig) == BREAKHIS_LEAVES + ["tree edges", "node centroids"]
    cent = fig.data[9]
    j = list(cent.text).index("benign")
    np.testing.assert_allclose([cent.x[j], cent.y[j]], xy[y < 4].mean(0), atol=1e-10)
    # edges parent -> leaf only (root not drawn): 8 segments
    assert n_segments(fig.data[8]) == 8
    assert fig.layout.meta["method"] == "pca"


def test_projection_tsne_finite(breakhis_tree):
    X, y = toy_features(breakhis_tree, n_per_leaf=5)
    fig, xy, _ = plot_projection(
        torch.tensor(X),
        torch.tensor(y),
        breakhis_tree,
        method="tsne",
        overlay=None,
        return_coords=True,
        options={"max_iter": 250},
    )
    assert xy.shape == (40, 2) and np.all(np.isfinite(xy))
    assert trace_names(fig) == BREAKHIS_LEAVES


@pytest.mark.slow  # numba compiles UMAP on first use: ~10 s idle, up to a minute on a busy 2-core CPU
def test_projection_umap_once(breakhis_tree):
    X, y = toy_features(breakhis_tree, n_per_leaf=6)
    xy = project_2d(X, "umap", seed=0)
    assert xy.shape == (48, 2) and np.all(np.isfinite(xy))


def test_projection_hyperbolic_uses_logmap0(breakhis_tree):
    import geoopt
    from sklearn.decomposition import PCA

    from hierviz.geometry import PoincareBall

    X, y = toy_features(breakhis_tree)
    ball = geoopt.PoincareBall(c=2.0)
    Z = ball.projx(ball.expmap0(torch.tensor(X / 20)))
    fig, xy, _ = plot_projection(Z, y, breakhis_tree, method="pca", geometry=PoincareBall(c=2.0), return_coords=True)
    ref = PCA(2, random_state=0).fit_transform(ball.logmap0(Z).numpy())
    np.testing.assert_allclose(xy, ref, atol=1e-6)
    assert "logmap₀" in fig.layout.title.text and fig.layout.meta["tangent"] is True
    # the geometry's capability decides, not its name: a subclass under another name is hyperbolic
    # too, and the Euclidean geometry (by name, as an object, under another name) is not
    from hierviz.geometry import Euclidean

    class Renamed(PoincareBall):
        name = "my-ball"

    fig2 = plot_projection(Z, y, breakhis_tree, method="pca", geometry=Renamed(c=2.0))
    assert fig2.layout.meta["tangent"] is True
    unit = torch.nn.functional.normalize(torch.tensor(X), dim=1)

    class Sphere(Euclidean):
        name = "my-sphere"

    for g in ("euclidean", Euclidean(), Sphere()):
        assert plot_projection(unit, y, breakhis_tree, method="pca", geometry=g).layout.meta["tangent"] is False
    # curvature is c; a name with c=2 maps as the c=2 object does (logmap0 depends on c)
    _, xy_c, _ = plot_projection(Z, y, breakhis_tree, method="pca", geometry="poincare", c=2.0, return_coords=True)
    np.testing.assert_allclose(xy_c, ref, atol=1e-6)
    _, xy_1, _ = plot_projection(Z, y, breakhis_tree, method="pca", geometry="poincare", return_coords=True)
    assert np.abs(xy_1 - ref).max() > 1e-3  # c = 1 reads the same points differently
    with pytest.raises(ValueError, match="disagrees with the geometry's own c=2"):
        plot_projection(Z, y, breakhis_tree, method="pca", geometry=PoincareBall(c=2.0), c=1.0)


def test_projection_hulls(breakhis_tree, unbalanced_tree):
    sq = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]], float)
    coords = np.vstack([sq, sq + 5])
    y = np.array([0, 1, 2, 3, 0, 4, 5, 6, 7, 4])
    hulls = parent_hulls(coords, y, breakhis_tree)
    assert set(hulls) == {"benign", "malignant"}
    h = hulls["benign"]
    np.testing.assert_allclose(h[0], h[-1])
    assert {tuple(v) for v in h[:-1]} == {(0, 0), (1, 0), (1, 1), (0, 1)}
    X, yy = toy_features(breakhis_tree)
    fig = plot_projection(X, yy, breakhis_tree, method="pca", overlay="hulls")
    assert trace_names(fig)[8:] == ["hull: benign", "hull: malignant"]
    # unbalanced: leaf "c" hangs from the root -> no root hull; "a2" has one collinear-free cluster
    Xu, yu = toy_features(unbalanced_tree)
    assert set(parent_hulls(project_2d(Xu, "pca"), yu, unbalanced_tree)) == {"a1", "a2", "b"}


def test_projection_bad_input(breakhis_tree):
    X, y = toy_features(breakhis_tree)
    with pytest.raises(ValueError, match="labels has length"):
        plot_projection(X, y[:10], breakhis_tree, method="pca")
    with pytest.raises(ValueError, match="method"):
        plot_projection(X, y, breakhis_tree, method="mds")
    with pytest.raises(ValueError, match="overlay"):
        plot_projection(X, y, breakhis_tree, method="pca", overlay="boxes")
    with pytest.raises(ValueError, match="at least 4"):
        project_2d(X[:3], "pca")
    with pytest.raises(TypeError, match="options"):
        project_2d(X, "pca", options=[("n_components", 3)])
    with pytest.raises(ValueError):
        plot_projection(X * 10, y, breakhis_tree, method="pca", geometry="poincare")  # off the ball


# ----------------------------------------------------------------------------- ρ, ω, forces
def test_omega_matrix_breakhis_hand_values(breakhis_tree):
    a, g = 0.3, 0.7
    W = omega_matrix(breakhis_tree, a, g)
    assert W.shape == (8, 8)
    np.testing.assert_allclose(np.diag(W), 1 + a * 1.0)  # a_ii = 1 + α·ρ, ρ = 1
    assert W[0, 1] == pytest.approx(1 + g * (1 - 0.5))  # siblings, ρ = 1/2
    assert W[0, 4] == pytest.approx(1 + g * (1 - 0.0))  # cross-branch, ρ = 0
    assert W[5, 6] == pytest.approx(1.35) and W[7, 2] == pytest.approx(1.7)
    Wc = omega_matrix(breakhis_tree, a, g, alpha_max=0.5)
    assert Wc[0, 4] == pytest.approx(1.5) and Wc[0, 1] == pytest.approx(1.35) and Wc[0, 0] == pytest.approx(1.3)
    np.testing.assert_allclose(omega_matrix(breakhis_tree, 0, 0), 1.0)  # SupCon limit
    fig = plot_omega(breakhis_tree, a, g)
    assert trace_names(fig) == ["omega"]
    np.testing.assert_allclose(np.asarray(fig.data[0].z), W)
    assert list(fig.data[0].x) == BREAKHIS_LEAVES
    assert fig.data[0].zmin == 1 and fig.data[0].zmax == pytest.approx(1.7)


def test_omega_unbalanced_shallow_leaf(unbalanced_tree):
    W = omega_matrix(unbalanced_tree, 0.6, 0.0)
    c = unbalanced_tree.leaf_index["c"]
    assert W[c, c] == pytest.approx(1 + 0.6 / 3)  # ρ(c, c) = depth(c)/L = 1/3


def test_omega_bad_input(breakhis_tree):
    with pytest.raises(ValueError, match="alpha"):
        omega_matrix(breakhis_tree, -0.1, 0.5)
    with pytest.raises(ValueError, match="gamma"):
        plot_omega(breakhis_tree, 0.1, float("nan"))


def test_plot_rho(breakhis_tree):
    fig = plot_rho(breakhis_tree)
    np.testing.assert_allclose(np.asarray(fig.data[0].z), breakhis_tree.rho_matrix.numpy())
    assert fig.data[0].customdata[0][1] == "benign" and fig.data[0].customdata[0][4] == "root"


def test_hwc_forces_match_autograd():
    rng = np.random.default_rng(1)
    K, tau = 7, 0.2
    s = rng.uniform(-1, 1, K)
    w = rng.uniform(1, 2, K)
    pos = np.array([1, 0, 1, 0, 0, 1, 0], bool)
    f = hwc_forces(s, w, pos, tau)
    st_ = torch.tensor(s / tau, dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(torch.tensor(w) * st_, 0)
    loss = -logp[torch.tensor(pos)].mean()
    (grad,) = torch.autograd.grad(loss, st_)
    # autograd of L_i = (1/|P|) Σ_j −log softmax(ω s)_j  w.r.t. s: −ω_q[q∈P]/|P| + ω_q π_q  (Eq. 8)
    np.testing.assert_allclose(f["grad"], grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(f["pi"].sum(), 1.0)
    f1 = hwc_forces(s, np.ones(K), pos, tau)
    assert f1["grad"].sum() == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="at least one"):
        hwc_forces(s, w, np.zeros(K, bool))
    with pytest.raises(ValueError, match="same shape"):
        hwc_forces(s, w[:3], pos)
    with pytest.raises(ValueError, match="tau"):
        hwc_forces(s, w, pos, tau=0)


def test_forces_and_omega_agree_with_hierviz_losses(breakhis_tree):
    from hierviz.losses import hwc_logit_gradient, hwc_omega

    rho = breakhis_tree.rho_matrix.double()
    W = hwc_omega(rho, torch.eye(8, dtype=torch.bool), 0.4, 0.9, alpha_max=0.8)
    np.testing.assert_allclose(omega_matrix(breakhis_tree, 0.4, 0.9, alpha_max=0.8), W.numpy(), atol=1e-12)
    # one anchor (row 0) against 5 candidates, as a 6x6 logit matrix for the peer
    rng = np.random.default_rng(3)
    s = rng.uniform(-1, 1, 5)
    w = rng.uniform(1, 1.8, 5)
    pos = np.array([True, False, True, False, False])
    S = torch.zeros(6, 6, dtype=torch.float64)
    S[0, 1:] = torch.tensor(s)
    Om = torch.ones(6, 6, dtype=torch.float64)
    Om[0, 1:] = torch.tensor(w)
    P = torch.zeros(6, 6, dtype=torch.bool)
    P[0, 1:] = torch.tensor(pos)
    peer = hwc_logit_gradient(S, Om, P)[0, 1:].numpy()
    np.testing.assert_allclose(hwc_forces(s, w, pos, tau=1.0)["grad"], peer, atol=1e-12)


def test_plot_forces_distant_negatives_pushed_harder(breakhis_tree):
    cands = ["adenosis", "fibroadenoma", "ductal_carcinoma"]
    fig = plot_forces(breakhis_tree, "adenosis", cands, [0.5, 0.5, 0.5], alpha=0.5, gamma=0.5, tau=0.1)
    assert trace_names(fig) == ["push ω·π", "pull −a/|P|", "HWC ∂L/∂s", "SupCon ∂L/∂s (ω≡1)"]
    push = np.asarray(fig.data[0].y)
    assert push[2] > push[1] > 0  # cross-branch negative (b=1.5) > sibling (b=1.25)
    assert fig.data[1].y[0] == pytest.approx(-1.5) and fig.data[1].y[1] == 0
    sup = np.asarray(fig.data[3].y)
    assert sup[1] == pytest.approx(sup[2])  # SupCon: no tree, equal push
    with pytest.raises(ValueError, match="positive"):
        plot_forces(breakhis_tree, "adenosis", ["fibroadenoma"], [0.5])
    with pytest.raises(ValueError, match="not a leaf"):
        plot_forces(breakhis_tree, "benign", cands, [0.5] * 3)
    with pytest.raises(ValueError, match="candidates"):
        plot_forces(breakhis_tree, "adenosis", cands, [0.5] * 2)


# ----------------------------------------------------------------------------- hyperboloid
def lift(v, k):
    v = np.asarray(v, float)
    return np.column_stack([np.sqrt(1 / k + np.sum(v**2, 1)), v])


@pytest.mark.parametrize("k", [1.0, 3.0])
def test_hyperboloid_traces_and_disk_isometry(breakhis_tree, k):
    rng = np.random.default_rng(0)
    v = rng.standard_normal((16, 2))
    x = lift(v, k)
    y = np.repeat(np.arange(8), 2)
    fig = plot_hyperboloid(x, y, breakhis_tree, c=k, show_disk=True)
    assert trace_names(fig) == ["hyperboloid"] + BREAKHIS_LEAVES + ["disk boundary", "disk points"]
    s = fig.data[0]
    np.testing.assert_allclose(np.asarray(s.z) ** 2 - np.asarray(s.x) ** 2 - np.asarray(s.y) ** 2, 1 / k, atol=1e-9)
    # stereographic image is an isometry onto the disk of radius 1/√k (curvature −k)
    p = hyperboloid_to_disk(x, k)
    assert np.all(np.linalg.norm(p, axis=1) < 1 / np.sqrt(k))
    lor = np.arccosh(np.clip(k * (x[0, 0] * x[1:, 0] - x[0, 1:] @ x[1:, 1:].T), 1, None)) / np.sqrt(k)
    np.testing.assert_allclose(poincare_dist(p[0], p[1:], k), lor, rtol=1e-7)


def test_hyperboloid_matches_lorentz_geometry():
    from hierviz.geometry import Lorentz

    g = Lorentz(c=4.0)
    x = g.expmap0(torch.randn(20, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)))
    check_on_hyperboloid(x, c=4.0)
    np.testing.assert_allclose(hyperboloid_to_disk(x, 4.0), g.to_ball(x).numpy(), atol=1e-12)


def test_hyperboloid_without_tree_and_bad_input():
    x = lift(np.random.default_rng(0).standard_normal((6, 2)), 1.0)
    assert trace_names(plot_hyperboloid(x)) == ["hyperboloid", "points"]
    assert trace_names(plot_hyperboloid(x, np.array([0, 0, 1, 1, 2, 2]))) == [
        "hyperboloid",
        "label 0",
        "label 1",
        "label 2",
    ]
    with pytest.raises(ValueError, match="off the hyperboloid"):
        check_on_hyperboloid(x, c=2.0)
    with pytest.raises(ValueError, match="upper sheet"):
        plot_hyperboloid(-x)
    with pytest.raises(ValueError, match="3 columns"):
        plot_hyperboloid(x[:, :2])
    with pytest.raises(ValueError, match="c must"):
        plot_hyperboloid(x, c=0)


def test_hyperboloid_curvature_is_c_and_k_is_deprecated():
    from hierviz.geometry import Lorentz

    x = Lorentz(c=4.0).expmap0(torch.randn(10, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1)))
    with pytest.warns(DeprecationWarning, match=r"hyperboloid_to_disk\(k=\.\.\.\) is deprecated; the curvature is c"):
        old = hyperboloid_to_disk(x, k=4.0)
    np.testing.assert_array_equal(old, hyperboloid_to_disk(x, c=4.0))
    with pytest.warns(DeprecationWarning, match="plot_hyperboloid"):
        fig = plot_hyperboloid(x, k=4.0)
    assert "curvature −4" in fig.layout.title.text
    with pytest.warns(DeprecationWarning, match="check_on_hyperboloid"):
        check_on_hyperboloid(x, k=4.0)


# ----------------------------------------------------------------------------- curves
def test_loss_curves():
    fig = plot_loss_curves({"train": [3.0, 2.0, 1.5], "val": [3.2, 2.5]})
    assert trace_names(fig) == ["train", "val"]
    assert list(fig.data[1].x) == [1, 2] and list(fig.data[0].y) == [3.0, 2.0, 1.5]
    with pytest.warns(UserWarning, match="non-finite"):
        f2 = plot_loss_curves({"hwc": [1.0, float("nan")]})
    assert f2.data[0].y[1] is None and "non-finite" in f2.layout.title.text
    with pytest.raises(ValueError, match="empty"):
        plot_loss_curves({})
    with pytest.raises(TypeError, match="dict"):
        plot_loss_curves([1.0, 2.0])
    with pytest.raises(ValueError, match="log_y"):
        plot_loss_curves({"a": [1.0, -1.0]}, log_y=True)


def test_metric_bars():
    rows = [
        {"method": "supcon", "top1": 0.7, "hf1": 0.8, "top1_std": 0.02},
        {"method": "hwc", "top1": 0.75, "hf1": 0.85, "top1_std": 0.01},
    ]
    fig = plot_metric_bars(rows)
    assert trace_names(fig) == ["supcon", "hwc"]
    assert list(fig.data[0].x) == ["top1", "hf1"] and list(fig.data[1].y) == [0.75, 0.85]
    assert list(fig.data[0].error_y.array) == [0.02, 0.0]
    with pytest.raises(ValueError, match="lacks"):
        plot_metric_bars(rows, metrics=["top1", "violations"])
    with pytest.raises(ValueError, match="method"):
        plot_metric_bars([{"top1": 0.5}])


def test_all_figures_are_plotly(breakhis_tree):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fig in (plot_tree(breakhis_tree), plot_rho(breakhis_tree), plot_omega(breakhis_tree, 0.5, 0.5)):
            assert isinstance(fig, go.Figure)
            fig.to_json()  # serialisable for the HTML report


def test_node_positions_skip_and_singletons_match_the_full_karcher_means():
    """Skipped nodes are absent, the rest unchanged; a one-point group is that point (no Karcher step)."""
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.viz import node_positions

    tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z", "w"]}})
    rng = np.random.default_rng(0)
    z = rng.uniform(-0.4, 0.4, size=(12, 2))
    y = np.repeat(np.arange(4), 3)
    ball = get_geometry("poincare", c=1.0)
    full = node_positions(z, y, tree, ball)
    part = node_positions(z, y, tree, ball, skip={"a", "x"})
    assert set(full) == {"a", "b", "x", "y", "z", "w"} and set(part) == {"b", "y", "z", "w"}
    for k in part:
        np.testing.assert_allclose(part[k], full[k], atol=1e-12)
    one = node_positions(z[::3], y[::3], tree, ball)  # one point per leaf
    for i, leaf in enumerate(["x", "y", "z", "w"]):
        np.testing.assert_array_equal(one[leaf], z[3 * i])


def test_plot_poincare_disk_reuses_positions_only_for_the_same_points():
    """The panels' position cache is keyed by content: new points give new centroids, the same give the same."""
    from hierviz.hierarchy import LabelTree
    from hierviz.viz import plot_poincare_disk

    tree = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": ["z"]}})
    z = np.array([[0.3, 0.1], [0.2, 0.4], [-0.5, 0.0], [-0.1, -0.6]])
    y = np.array([0, 1, 2, 2])

    def centroids(fig):
        t = next(t for t in fig.data if t.name == "leaf centroids")
        return np.column_stack([t.x, t.y])

    first = centroids(plot_poincare_disk(z, y, tree))
    np.testing.assert_array_equal(centroids(plot_poincare_disk(z.copy(), y, tree)), first)
    moved = z.copy()
    moved[2] = [-0.3, 0.2]
    assert not np.allclose(centroids(plot_poincare_disk(moved, y, tree)), first)
    z[2] = [-0.3, 0.2]  # the caller's array changed in place: the cache must not return the old means
    np.testing.assert_allclose(centroids(plot_poincare_disk(z, y, tree)), centroids(plot_poincare_disk(moved, y, tree)))
