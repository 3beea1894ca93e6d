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
    cfg = resolve_config("quick", capstone_overrides(data, size, METHODS, ["euclidean", "poincare"], 5))
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
    assert sorted(cfg["geometries"]) == ["euclidean", "poincare"] and cfg["seeds"] == 5
    import csv

    rows = list(csv.DictReader((folder / "results.csv").open(encoding="utf-8")))
    assert {r["method"] for r in rows} == set(cfg["methods"])
    assert len(rows) == len(cfg["methods"]) * 2 * 5  # every method × geometry × seed finished


def test_radius_reading_is_the_one_rule():
    assert radius_reading(6.0, 0.0, 1.0) == "saturated sphere"  # notebook 12's 0.2 head
    assert radius_reading(3.0, 0.01, 0.0) == "saturated sphere"  # no spread: a sphere inside the bound
    assert radius_reading(0.89, 0.09, 0.0) == "flat origin"
    # notebook 12's run (b) at medium size: 1.455 ± 0.214, λ 2.46-3.90 < 4: still the flat origin
    assert radius_reading(1.455, 0.214, 0.0) == "flat origin"
    assert radius_reading(2.0, 0.3, 0.0) == "in the curved region"  # λ(2) = 2 cosh²(1) = 4.76
    assert radius_reading(float("nan"), 0.1, 0.0) == "–"
