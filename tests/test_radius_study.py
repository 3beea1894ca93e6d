"""The radius study's notebook tables and figures (hierviz.report.radius_study) on a hand-made folder."""

from __future__ import annotations

import numpy as np
import pytest

from hierviz.report.radius_study import (
    radius_by_depth_figure,
    radius_study_markdown,
    study_disk,
    study_folder,
    sweep_markdown,
)

HEAD = "method,geometry,seed,hf1,top1,violations,radius_mean,radius_std,clip_fraction,radius_depth_spearman,edge_order,radius_gap,norm_auroc"


def _folder(tmp_path):
    rows = [HEAD]
    for s in range(3):
        rows.append(f"supcon,euclidean,{s},0.80,0.7,0.2,1,0,,,,,")
        rows.append(f"supcon,poincare,{s},{0.80 + s / 100},0.7,0.2,0.5,0.1,0,{0.5 + s / 10},0.9,0.1,0.7")  # flat origin
        rows.append(f"hwc+lam,poincare,{s},0.81,0.7,0.2,2.5,0.3,0,0.95,1.0,1.2,0.7")  # curved region
    (tmp_path / "results.csv").write_text("\n".join(rows) + "\n")
    sweep = ["label,overrides," + HEAD]
    for label, r in (("off", "0.4,0.1,0,0.2,0.5,0.0,0.6"), ("cone+centre", "1.9,0.3,0,0.9,1.0,1.1,0.7")):
        sweep.append(f'{label},"loss.cone_weight=0",supcon,poincare,0,0.8,0.7,0.2,{r}')
    (tmp_path / "sweep.csv").write_text("\n".join(sweep) + "\n")
    protos = ["method,geometry,seed,node,depth,parent,is_leaf,radius"]
    for s in range(2):
        for d, rad in ((0, 0.1), (1, 0.5 + s / 10), (2, 1.0)):
            protos.append(f"supcon,poincare,{s},n{d},{d},,{d == 2},{rad}")
    (tmp_path / "prototypes.csv").write_text("\n".join(protos) + "\n")
    return tmp_path


def test_the_study_tables_read_the_radius_beside_clip_and_spread(tmp_path):
    folder = _folder(tmp_path)
    md = radius_study_markdown(folder)
    assert "SupCon (Poincaré) | 3 | 0.810 ± 0.010 | 0.60 ± 0.10 |" in md  # HF1 and Spearman over 3 seeds
    assert md.count("flat origin") == 1 and md.count("in the curved region") == 1 and "Euclidean" not in md
    sw = sweep_markdown(folder)
    assert sw.index("off: SupCon") < sw.index("cone+centre: SupCon") and "in the curved region" in sw
    assert "off: SupCon" not in sweep_markdown(folder, labels=["cone+centre"])
    with pytest.raises(ValueError, match=r"labels: \['tau'\] not in"):
        sweep_markdown(folder, labels=["tau"])
    with pytest.raises(FileNotFoundError, match="no results.csv"):
        study_folder(tmp_path / "none")


def test_the_radius_by_depth_figure_averages_seeds(tmp_path):
    fig = radius_by_depth_figure(_folder(tmp_path))
    (trace,) = fig.data
    assert list(trace.x) == [0, 1, 2] and trace.y[1] == pytest.approx(0.55)  # seeds 0.5 and 0.6
    assert trace.error_y.array[1] == pytest.approx(np.std([0.5, 0.6], ddof=1))
    with pytest.raises(ValueError, match="geometry='lorentz'"):
        radius_by_depth_figure(tmp_path, geometry="lorentz")


def test_the_study_disk_reads_seed_0(tmp_path):
    from hierviz.data.trees import load_tree

    folder = _folder(tmp_path)
    (folder / "embeddings").mkdir()
    tree = load_tree("20news")
    rng = np.random.default_rng(0)
    z = rng.normal(size=(40, 4)) * 0.1
    np.savez(
        folder / "embeddings" / "supcon-poincare-s0.npz",
        z_test=z.astype(np.float16),
        y_test=rng.integers(0, 20, 40).astype(np.int16),
        c=1.0,
    )
    fig = study_disk(folder, tree, "supcon")
    assert fig.data and "SupCon (Poincaré, seed 0)" in fig.layout.title.text
    with pytest.raises(FileNotFoundError, match=r"method='hwc'.*supcon-poincare-s0.npz"):
        study_disk(folder, tree, "hwc")


def test_study_embeddings_put_float16_hyperboloid_points_back_on_it(tmp_path):
    import torch

    from hierviz.geometry import get_geometry
    from hierviz.report.radius_study import study_embeddings

    folder = _folder(tmp_path)
    (folder / "embeddings").mkdir()
    lorentz = get_geometry("lorentz", 1.0)
    v = torch.randn(50, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x = lorentz.expmap0(2.5 * v / v.norm(dim=-1, keepdim=True))  # radius 2.5, as the study's runs
    z16 = x.numpy().astype(np.float16)

    def minkowski(a):  # <a, a>_L = -a_0^2 + sum a_i^2, -1/c on the hyperboloid
        return -(a[:, 0] ** 2) + (a[:, 1:] ** 2).sum(-1)

    off = np.abs(minkowski(z16.astype(np.float64)) + 1)
    assert off.max() > 1e-3  # float16 leaves the points off <x, x>_L = -1
    np.savez(folder / "embeddings" / "hwc_lam-lorentz-s0.npz", z_test=z16, y_test=np.arange(50) % 20, c=1.0)
    z, y, geo = study_embeddings(folder, "hwc+lam", "lorentz")
    assert geo.name == "lorentz" and z.dtype == np.float64 and y.dtype == np.int64
    assert np.allclose(minkowski(z), -1.0, atol=1e-9)
    assert np.allclose(
        lorentz.dist(torch.as_tensor(z), lorentz.origin(8, dtype=torch.float64)).numpy(), 2.5, atol=0.05
    )  # the radius survives the rounding
    with pytest.raises(FileNotFoundError, match="hwc_lam-lorentz-s0.npz"):
        study_embeddings(folder, "supcon", "lorentz")


def test_cpcc_of_a_tree_embedding_and_of_random_points():
    """Sarkar's embedding of a tree keeps d_T (CPCC near 1); random points do not (near 0)."""
    import torch

    from hierviz.data.trees import load_tree
    from hierviz.geometry import get_geometry
    from hierviz.geometry.tree_embedding import sarkar_embedding
    from hierviz.viz.learned_tree import cpcc_figure, leaf_prototype_cpcc

    tree = load_tree("20news")
    ball = get_geometry("poincare", 1.0)
    gen = torch.Generator().manual_seed(0)
    y = np.repeat(np.arange(tree.num_leaves), 10)
    nodes = sarkar_embedding(tree, c=1.0, edge=2.0)  # every edge 2 long: distances follow d_T
    leaf_nodes = torch.tensor([tree.node_index[leaf] for leaf in tree.leaves])
    z = ball.expmap(nodes[leaf_nodes[y]], 0.05 * torch.randn(len(y), 2, generator=gen, dtype=torch.float64))
    kept = leaf_prototype_cpcc(z, y, tree, ball)
    noise = leaf_prototype_cpcc(ball.expmap0(torch.randn(len(y), 2, generator=gen, dtype=torch.float64)), y, tree, ball)
    assert kept["pearson"] > 0.8 and abs(noise["pearson"]) < 0.3
    assert len(kept["distance"]) == tree.num_leaves * (tree.num_leaves - 1) // 2
    fig = cpcc_figure(z, y, tree, ball, title="toy")
    assert fig.layout.title.text.startswith(f"toy: CPCC (Pearson) {kept['pearson']:.3f}")
    with pytest.raises(ValueError, match="three or more"):
        leaf_prototype_cpcc(z[:20], y[:20], tree, ball)


def test_sweep_figure_and_panel_read_each_setting(tmp_path):
    from hierviz.report.radius_study import sweep_figure, sweep_panel

    head = "label,overrides," + HEAD
    rows = [head]
    for label, hf1, rad in (("off", 0.80, 0.5), ("tau 1, cone+centre+cpcc 1", 0.82, 2.4), ("only supcon", 0.7, 1.0)):
        for method in ("supcon", "hwc+lam") if label != "only supcon" else ("supcon",):
            rows.append(f'"{label}","",{method},poincare,0,{hf1},0.7,0.2,{rad},0.3,0.01,0.9,1.0,1.2,0.7')
    (tmp_path / "sweep.csv").write_text("\n".join(rows) + "\n")
    fig = sweep_figure(tmp_path, "tau 1, cone+centre+cpcc 1", "hwc+lam")
    assert [b.name for b in fig.data] == ["off", "tau 1, cone+centre+cpcc 1"]
    assert fig.data[1].y[0] == pytest.approx(0.82) and fig.data[0].y[0] == pytest.approx(0.80)
    assert "d(0, z) 2.40 ± 0.30, clip 0.010" in fig.layout.title.text
    with pytest.raises(ValueError, match=r"method='hwc\+lam' has no sweep run at \['only supcon'\]"):
        sweep_figure(tmp_path, "only supcon", "hwc+lam")
    panel = sweep_panel(tmp_path)
    assert list(panel.controls["label"].options) == ["off", "tau 1, cone+centre+cpcc 1"]  # both methods only
    assert panel.controls["label"].value == "tau 1, cone+centre+cpcc 1"
    panel.controls["label"].value = "off"
    assert panel.figure.data[0].name == "off" and len(panel.figure.data) == 1  # the reference alone
