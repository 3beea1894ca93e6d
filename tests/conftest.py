"""Shared fixtures: the BreakHis tree of paper 01 Fig. 1 and a small unbalanced tree."""

from __future__ import annotations

import os
from pathlib import Path

# One torch/OpenMP thread per test process: the suite runs under pytest-xdist (-n 2) on a
# 2-core machine, and oversubscribed threads make small tensor ops 10x slower.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402  (after the thread-count variables are set)

REPO = Path(__file__).resolve().parents[1]

# tests/toy_method.py registers a user method (and loss.toy_scale) when imported: under
# --doctest-modules collection would import it in every worker, and every run config would then
# carry loss.toy_scale until a test that cleans it up ran (a torchrun child, which never imports it,
# then refused --resume). The tests that need it import it themselves.
collect_ignore = ["toy_method.py", "declared_method.py", "declared_protocol.py", "user_metric.py"]


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``-n N`` without ``--dist`` schedules with ``--dist loadgroup`` (pytest-xdist), not ``load``.

    The tests of one ``xdist_group`` then run in one worker, in collection order: a notebook's browser
    test (tests/test_browser.py) runs it in JupyterLab, then tests/test_notebooks.py checks those
    outputs instead of executing it again. xdist sends the groups first (the longest tests). Not in
    ``addopts``: there ``--dist`` would also be set without ``-n``, and pytest-benchmark would then
    believe xdist active. Runs before xdist's own hook, which turns ``-n`` into ``--dist load``.
    """
    opt = config.option
    if (
        getattr(opt, "numprocesses", None)
        and getattr(opt, "dist", None) == "no"
        and not getattr(opt, "distload", False)
    ):
        opt.dist = "loadgroup"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """Tell each xdist worker that the controller schedules by group (set above, not by ``--dist``).

    A worker reads ``--dist`` from the command line before any conftest hook runs; without this its
    test ids would carry no ``@group`` and the groups would be split.
    """
    node.workerinput["hierviz_loadgroup"] = node.config.getoption("dist") == "loadgroup"


def pytest_configure(config):
    if getattr(config, "workerinput", {}).get("hierviz_loadgroup"):
        config.option.loadgroup = True  # what xdist's worker sets from --dist loadgroup
    # One cache folder per test session (hierviz.data.cache_dir), unless the caller named one: the
    # processes a session starts (xdist workers, notebook kernels, Jupyter servers, CLI runs) inherit
    # it, so 20 Newsgroups is vectorised once per session, and no user cache is read or written.
    if "HIERVIZ_CACHE" not in os.environ and not hasattr(config, "workerinput"):
        import tempfile

        config._hierviz_cache = tempfile.mkdtemp(prefix="hierviz-test-cache-")
        os.environ["HIERVIZ_CACHE"] = config._hierviz_cache


def pytest_unconfigure(config):
    folder = getattr(config, "_hierviz_cache", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("HIERVIZ_CACHE", None)


_SHARED_SCOPES = ("module", "class", "package")


@pytest.hookimpl(tryfirst=True)  # before xdist's worker hook, which turns the groups into "@group" test ids
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup``: the tests of a module that use a module- or class-scoped fixture form one group.

    The fixture (a two-rank torchrun spawn, a trained model, a built site) is then made once per run,
    not once in each worker that happens to draw one of its tests; the other tests spread one by one.
    A test that already names its group keeps it.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or any(True for _ in item.iter_markers("xdist_group")):
            continue
        defs = (info.name2fixturedefs.get(name) for name in info.names_closure)
        if any(d and d[-1].scope in _SHARED_SCOPES for d in defs):
            item.add_marker(pytest.mark.xdist_group(f"fixtures-of-{item.nodeid.split('::')[0]}"))


def shared_data_dir() -> Path | None:
    """The real-data folder if present: $HIERVIZ_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get("HIERVIZ_DATA")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data"]:
        if cand.is_dir():
            return cand
    return None


BREAKHIS = {
    "root": {
        "benign": ["adenosis", "fibroadenoma", "phyllodes_tumor", "tubular_adenoma"],
        "malignant": ["ductal_carcinoma", "lobular_carcinoma", "mucinous_carcinoma", "papillary_carcinoma"],
    }
}

# Unbalanced: leaf "c" sits at depth 1, leaves under "a" at depth 3 (L = 3).
UNBALANCED = {"root": {"a": {"a1": ["x", "y"], "a2": ["z"]}, "b": ["u", "v"], "c": None}}


@pytest.fixture(scope="session")
def browser():
    """One headless chromium per session (per xdist worker), for tests/test_browser.py and tests/test_docs_site.py.

    Skips with the install command without chromium or Playwright (fails under ``CI=true``).
    """
    import _browser  # tests/_browser.py: imports Playwright only here

    _browser.require_browser()
    with _browser.chromium() as br:
        yield br


@pytest.fixture
def breakhis_tree():
    from hierviz.hierarchy import LabelTree

    return LabelTree.from_nested(BREAKHIS)


@pytest.fixture
def unbalanced_tree():
    from hierviz.hierarchy import LabelTree

    return LabelTree.from_nested(UNBALANCED)


@pytest.fixture
def data_dir():
    d = shared_data_dir()
    if d is None:
        pytest.skip("real data not present: put it in ../shared/data or set HIERVIZ_DATA (data_scripts/README.md)")
    return d


def pytest_terminal_summary(terminalreporter):
    """Print each notebook's run time, kernel peak memory and runner (recorded by test_notebooks)."""
    rows = []
    for rep in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        props = dict(getattr(rep, "user_properties", []))
        if "notebook_wall_s" in props and rep.when == "call":
            name = rep.nodeid.split("[")[-1].split("]")[0]  # the notebook (not the xdist "@group" after it)
            by = props.get("notebook_run_by", "papermill")
            rows.append((name, props["notebook_wall_s"], props["notebook_kernel_peak_mib"], by))
    if rows:
        terminalreporter.section("notebook run time and peak memory (SMOKE=True)")
        for name, wall, mib, by in sorted(rows):
            terminalreporter.write_line(f"{name:<28} {wall:7.1f} s   kernel peak {mib:8.1f} MiB   {by}")
        terminalreporter.write_line(f"{'total':<28} {sum(r[1] for r in rows):7.1f} s")
