"""How ``pytest -n N`` schedules this suite: the hooks of tests/conftest.py (pytest-xdist's ``--dist loadgroup``)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import _browser as B  # tests/ is on sys.path (rootdir conftest)
import conftest
import pytest


def test_n_workers_schedule_a_notebooks_tests_as_one_group():
    """``-n N`` without ``--dist`` means ``--dist loadgroup``, on the controller and in every worker (conftest hooks)."""

    def cmdline(**opt):
        cfg = NS(option=NS(**{"dist": "no", "distload": False} | opt))
        conftest.pytest_cmdline_main(cfg)
        return cfg.option.dist

    assert cmdline(numprocesses=2) == "loadgroup"
    assert cmdline(numprocesses="auto") == "loadgroup"
    assert cmdline(numprocesses=2, dist="load") == "load"  # an explicit --dist wins
    assert cmdline(numprocesses=2, distload=True) == "no"  # --distload: xdist's own hook makes it "load"
    assert cmdline(numprocesses=None) == cmdline(numprocesses=0) == "no"  # no workers: nothing to schedule

    for dist in ("loadgroup", "load"):
        node = NS(workerinput={}, config=NS(getoption={"dist": dist}.get))
        conftest.pytest_configure_node(node)
        worker = NS(workerinput=node.workerinput, option=NS(loadgroup=False))
        conftest.pytest_configure(worker)
        assert worker.option.loadgroup is (dist == "loadgroup")
    serial = NS(option=NS(loadgroup=False))  # not an xdist worker: no workerinput
    conftest.pytest_configure(serial)
    assert serial.option.loadgroup is False
    # and the two tests of a widget notebook carry the same group
    nb = B.widget_notebooks()[0]
    assert B.xdist_group(nb).args == (f"notebook-{nb.stem}",)


def _item(nodeid: str, scopes: tuple[str, ...], group: str | None = None):
    """A stand-in test item: its fixtures' scopes and its xdist_group marks."""
    defs = {f"fixture{i}": [NS(scope=s)] for i, s in enumerate(scopes)}
    item = NS(nodeid=nodeid, _fixtureinfo=NS(names_closure=[*defs, "request"], name2fixturedefs=defs), marks=[])
    if group:
        item.marks.append(pytest.mark.xdist_group(group).mark)
    item.iter_markers = lambda name: iter([m for m in item.marks if m.name == name])
    item.add_marker = lambda m: item.marks.append(m.mark)
    return item


def test_tests_sharing_a_module_fixture_form_one_group():
    items = [
        _item("tests/test_a.py::test_spawned[x]", ("module", "function")),
        _item("tests/test_a.py::test_spawned_too", ("class",)),
        _item("tests/test_a.py::test_plain", ("function",)),
        _item("tests/test_a.py::test_session_only", ("session",)),  # one per worker anyway: spread
        _item("tests/test_b.py::test_spawned", ("module",)),
        _item("tests/test_b.py::test_named", ("module",), group="docs-site"),
    ]
    conftest.pytest_collection_modifyitems(NS(option=NS(loadgroup=True)), items)
    groups = [[m.args[0] for m in it.marks] for it in items]
    assert groups == [
        ["fixtures-of-tests/test_a.py"],
        ["fixtures-of-tests/test_a.py"],
        [],
        [],
        ["fixtures-of-tests/test_b.py"],
        ["docs-site"],
    ]
    plain = [_item("tests/test_a.py::test_spawned", ("module",))]
    conftest.pytest_collection_modifyitems(NS(option=NS(loadgroup=False)), plain)  # --dist load, or no xdist
    assert plain[0].marks == []
