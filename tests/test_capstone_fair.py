"""The capstone's tables are fair: one protocol and one split per table, and compare says when they are not.

Notebook 10 builds both of its ``compare`` calls with :func:`hierviz.viz.capstone.capstone_overrides`;
these tests check, on the configuration those overrides resolve to (every size, both datasets), that
every method of a table is scored under one protocol, that ``capstone_rows`` refuses runs that mix
protocols or splits, and that ``compare`` warns (:class:`MixedProtocolWarning`) when one call mixes them.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from hierviz.experiments import resolve_config
from hierviz.experiments.compare import MixedProtocolWarning, table_protocols, warn_mixed_protocols
from hierviz.viz.capstone import CAPSTONE_PROTOCOL, capstone_overrides, radius_reading, table_setting

ROOT = Path(__file__).resolve().parents[1]
METHODS = ["supcon", "hwc+lam", "g-hmlc", "a-hmlc", "hcl", "t+pl", "hyilr"]  # notebook 10's list


@pytest.mark.parametrize("size", ["smoke", "medium", "full"])
@pytest.mark.parametrize("data", ["images", "text"])
def test_every_capstone_table_shares_one_protocol_and_split(size, data):
    preset = "quick-ham10000" if data == "images" else "quick"
    cfg = resolve_config(preset, capstone_overrides(data, size, METHODS, ["euclidean", "poincare"], 5))
    protocols = table_protocols(cfg)
    assert set(protocols) == set(METHODS)
    assert set(protocols.values()) == {CAPSTONE_PROTOCOL}, protocols  # t+pl too: not its own "unseen"
    assert cfg.geometries == ["euclidean", "poincare"] and cfg.seeds == 5
    if data == "text":
        assert cfg.data.split == "official" and cfg.model.encoder == "mlp" and cfg.data.dataset == "20news"
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixedProtocolWarning)
        assert warn_mixed_protocols(cfg) is None


def test_notebook_10_builds_its_calls_with_capstone_overrides():
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "10_capstone.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert 'capstone_overrides("images"' in code and 'capstone_overrides("text"' in code
    assert "capstone_rows_from_folder(committed" in code


def test_t_plus_pl_alone_would_mix_protocols_and_compare_warns():
    cfg = resolve_config("quick", ["methods=supcon,t+pl"])
    assert table_protocols(cfg) == {"supcon": "classification", "t+pl": "unseen"}
    said = []
    with pytest.warns(
        MixedProtocolWarning, match=r"mixes evaluation protocols \(classification: supcon; unseen: t\+pl\)"
    ):
        msg = warn_mixed_protocols(cfg, say=lambda *a, **k: said.append(a[0]))
    assert said == [msg] and "eval.protocol=classification" in msg


def _rec(method, protocol, split="official", limit=None):
    cfg = {
        "data": {"dataset": "20news", "split": split, "limit": limit, "split_seed": 0},
        "eval": {"split": "test", "fold": 0},
    }
    return {"method": method, "protocol": protocol, "config": cfg}


def test_table_setting_refuses_mixed_protocols_or_splits():
    ok = table_setting([_rec("supcon", "classification"), _rec("t+pl", "classification")])
    assert ok["protocol"] == "classification"
    with pytest.raises(
        ValueError,
        match=r"mixes evaluation protocols \(classification: supcon; unseen: t\+pl\).*eval.protocol=classification",
    ):
        table_setting([_rec("supcon", "classification"), _rec("t+pl", "unseen")])
    with pytest.raises(ValueError, match="mixes 2 data splits"):
        table_setting([_rec("supcon", "classification"), _rec("hcl", "classification", limit=600)])
    with pytest.raises(ValueError, match="records is empty"):
        table_setting([])


def test_the_committed_capstone_run_is_one_protocol_one_split():
    folder = ROOT / "docs" / "results" / "capstone-20news"
    if not (folder / "config.json").is_file():
        pytest.skip("docs/results/capstone-20news is not committed in this checkout")
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert cfg["eval"]["protocol"] == CAPSTONE_PROTOCOL
    assert cfg["data"]["split"] == "official" and cfg["data"]["dataset"] == "20news"
    assert {"euclidean", "poincare"} <= set(cfg["geometries"]) and cfg["seeds"] >= 5  # a paired interval each
    import csv

    rows = list(csv.DictReader((folder / "results.csv").open(encoding="utf-8")))
    assert {r["method"] for r in rows} == set(cfg["methods"])
    assert len(rows) == len(cfg["methods"]) * len(cfg["geometries"]) * cfg["seeds"]  # every run finished
    assert {r["geometry"] for r in rows} == set(cfg["geometries"])


def test_radius_reading_is_the_one_rule():
    assert radius_reading(6.0, 0.0, 1.0) == "saturated sphere"  # notebook 12's 0.2 head
    assert radius_reading(3.0, 0.01, 0.0) == "saturated sphere"  # no spread: a sphere inside the bound
    assert radius_reading(0.89, 0.09, 0.0) == "flat origin"
    # notebook 12's run (b) at medium size: 1.455 ± 0.214, λ 2.46-3.90 < 4: still the flat origin
    assert radius_reading(1.455, 0.214, 0.0) == "flat origin"
    assert radius_reading(2.0, 0.3, 0.0) == "in the curved region"  # λ(2) = 2 cosh²(1) = 4.76
    assert radius_reading(float("nan"), 0.1, 0.0) == "–"


def test_rows_from_a_committed_folder_equal_the_rows_from_records(tmp_path):
    """capstone_rows_from_folder (results.csv) gives the paired CI of capstone_rows (records), scipy's peer."""
    from scipy import stats

    from hierviz.viz.capstone import capstone_markdown, capstone_rows_from_folder

    sup, hcl = [0.50, 0.55, 0.52], [0.56, 0.60, 0.59]
    lines = [
        "method,geometry,seed,hf1,h_acc,top1,violations,radius_mean,radius_std,clip_fraction,radius_depth_spearman,radius_gap"
    ]
    for s in range(3):
        lines.append(f"supcon,poincare,{s},{sup[s]},{sup[s]},0.4,0.5,0.44,0.08,0,0.5,0.1")
        lines.append(f"hcl,poincare,{s},{hcl[s]},{hcl[s]},0.45,0.3,2.5,0.3,0,0.9,0.4")
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "baselines.csv").write_text("baseline,top1,hf1,h_acc,violations\nmajority,0.2,0.3,0.4,\n")
    (tmp_path / "chance.csv").write_text("baseline,hf1,h_acc,top1,violations\nchance,0.1,0.2,0.05,nan\n")
    (tmp_path / "config.json").write_text(json.dumps({"eval": {"protocol": "classification"}}))
    rows = capstone_rows_from_folder(tmp_path)
    by = {r["method"]: r for r in rows}
    ci = stats.ttest_rel(hcl, sup).confidence_interval(0.95)
    assert (by["hcl"]["low"], by["hcl"]["high"]) == pytest.approx((ci.low, ci.high))
    assert by["majority"]["hf1"] == pytest.approx(0.3) and by["chance"]["top1"] == pytest.approx(0.05)
    assert by["hcl"]["radius_mean"] == pytest.approx(2.5) and "*Chance (uniform leaf)*" in capstone_markdown(rows)
    # a folder whose config leaves eval.protocol unset mixed protocols: refused
    (tmp_path / "config.json").write_text(json.dumps({"eval": {"protocol": None}}))
    with pytest.raises(ValueError, match="eval.protocol is unset"):
        capstone_rows_from_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match="has no results.csv"):
        capstone_rows_from_folder(tmp_path / "nothing")


def test_committed_table_reads_a_results_folder():
    from hierviz.results.committed import committed_table

    md = committed_table("paper01-h200-sample", methods=["supcon", "hwc"], metrics=["hf1"])
    # docs/results/paper01-h200-sample/results.csv, Euclidean SupCon over 5 seeds (hand-read from results.md)
    assert "`docs/results/paper01-h200-sample`" in md and "0.742 ± 0.015" in md and "*Majority class*" in md
    with pytest.raises(ValueError, match=r"methods: \['hcl'\] not in"):
        committed_table("paper01-h200-sample", methods=["hcl"])
    with pytest.raises(FileNotFoundError, match="folder='nope'"):
        committed_table("nope")
