"""The library's hyperbolic defaults put the 20 Newsgroups tree into the radius (a small fixed subset).

The 5-seed study on the full split is docs/results/radius-20news/; this is its seeded,
CPU-sized guard: 10,000 messages (a stratified subset of the bydate corpus, the official split
inside it), HWC+LAM on the Lorentz hyperboloid, the ``quick`` preset's regime. With the default depth
terms the test prototypes are ordered by depth; with every depth term off they are not.
"""

from __future__ import annotations

import pytest

from hierviz.experiments import compare, resolve_config

SUBSET = ["data.limit=10000", "methods=hwc+lam", "geometries=lorentz", "seeds=1", "train.epochs=12"]
OFF = ["loss.cone_weight=0", "loss.center_weight=0", "loss.order_weight=0", "loss.cpcc_weight=0", "loss.depth_weight=0"]


def _radius(tmp_path, extra):
    cfg = resolve_config("quick", [*SUBSET, *extra, f"out={tmp_path}"])
    assert cfg.data.dataset == "20news" and cfg.data.split == "official"
    res = compare(cfg, progress=False, verbose=False)
    rec = res.record("hwc+lam", "lorentz", 0)
    return rec["radius"], rec["metrics"]


@pytest.mark.shared_data
@pytest.mark.slow
def test_the_default_depth_terms_order_the_20news_prototypes_by_depth_and_fail_without_them(
    tmp_path, data_dir, monkeypatch
):
    monkeypatch.setenv("HIERVIZ_DATA", str(data_dir))
    rad, met = _radius(tmp_path / "default", [])
    assert met["top1"] > 0.5  # far above the majority line (0.05)
    assert rad["clip_fraction"] == 0.0
    assert rad["radius_depth_spearman"] >= 0.8, rad
    assert rad["edge_order"] >= 0.9, rad
    off, _ = _radius(tmp_path / "off", OFF)
    assert off["radius_depth_spearman"] < 0.8 or off["edge_order"] < 0.9, off


def test_the_committed_study_tables_are_made_from_its_csvs():
    """results.md, the table CSVs the pages embed, and the HAM10000 check are what the scripts make from the CSVs."""
    import runpy
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "docs" / "results" / "radius-20news"
    for script in ("study.py", "ham_check.py"):
        main = runpy.run_path(str(folder / script))["main"]
        assert main(["tables", "--check"]) == 0, script
