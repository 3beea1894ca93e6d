"""The course's widget panels in a real browser: JupyterLab 4 and classic Notebook 7, headless chromium.

For every notebook that builds a panel (``Panel(`` / ``*_panel(`` in its code), a SMOKE copy is
opened in a JupyterLab server started here, run with Run > Run All Cells and saved; then every
slider (keyboard on its handle; a mouse drag in Notebook 7, which swallows arrow keys) and dropdown
of every ``.hierviz-panel`` is moved once, and the panel must show exactly one drawn plotly figure,
before and after (and its cell no other copy of it), whose traces or title changed (``data_changed`` in the record says which). The time
from the key press to the redrawn figure is recorded (``redraw_ms`` in the report and in
``browser/redraw_times.json`` under the artifacts folder); screenshots of every panel and of the
page go there too (``tests/artifacts/`` or ``$HIERVIZ_ARTIFACTS``).

One JupyterLab server, one chromium and one Lab page serve the whole session (per xdist worker):
each notebook opens in that page with Lab's ``docmanager:open`` and is closed after its test. The
saved run is handed to tests/test_notebooks.py (``_browser.EXECUTED``), which checks its outputs
instead of executing the notebook again; the two tests share an xdist group (``-n N`` runs them in
one worker, this one first). ``phases_s`` in the report says where a test's time went.

Without chromium or Playwright these tests skip with the install command; under ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import _browser as B  # tests/ is on sys.path (rootdir conftest)
import nbformat
import pytest

NOTEBOOKS = B.widget_notebooks()
# the notebook also run in classic Notebook 7: the quickest one whose panel has sliders (Notebook 7
# swallows arrow keys, so its sliders are dragged with the mouse; 03_hwc ran twice as long)
CLASSIC = "11_evaluation_pitfalls.ipynb"


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """One JupyterLab server for the session, its root holding SMOKE copies of the widget notebooks."""
    B.require_browser()
    tmp = tmp_path_factory.mktemp("jupyterlab")
    with B.jupyter_server(tmp, "lab") as server:
        B.copy_notebooks(NOTEBOOKS, server.root)
        yield server


class SharedLabPage:
    """One chromium page with JupyterLab loaded once (:func:`_browser.open_lab`), for every JupyterLab test.

    Each test opens its notebook in it and closes it at the end; a test that stops on an error closes
    the page too, and the next test gets a fresh one.
    """

    def __init__(self, server, browser):
        self.server, self.browser, self.page = server, browser, None

    def get(self):
        if self.page is None or self.page.is_closed():
            self.page = _new_page(self.browser)
            B.open_lab(self.page, self.server)
        return self.page

    def release(self, ok: bool) -> None:
        if ok:
            try:
                B.close_documents(self.page)
            except Exception:  # noqa: BLE001  (a page in an unknown state is not reused)
                ok = False
        if not ok and self.page is not None:
            self.page.close()
            self.page = None


def _new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.add_init_script(B.WS_TIMING_JS)
    return page


@pytest.fixture(scope="session")
def lab_page(lab, browser):
    shared = SharedLabPage(lab, browser)
    yield shared
    shared.release(ok=False)


@pytest.fixture(scope="session")
def classic(tmp_path_factory):
    B.require_browser()
    tmp = tmp_path_factory.mktemp("notebook7")
    with B.jupyter_server(tmp, "notebook") as server:
        B.copy_notebooks([B.NB_DIR / CLASSIC], server.root)
        yield server


def _record(name: str, app: str, rows: list[dict]) -> None:
    out = B.artifacts_dir() / "browser" / "redraw_times.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(out.read_text()) if out.is_file() else {}
    old[f"{app}:{name}"] = rows
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(old, indent=1))
    tmp.replace(out)


def check_panels(server, browser, name: str, record_property, shared: SharedLabPage | None = None) -> list[dict]:
    """Open, run and save ``name``; move every control of every panel; return one row per move.

    In ``shared``'s JupyterLab page when given (closed again at the end), else in a new page.
    """
    shots = B.artifacts_dir() / "browser" / f"{server.app}-{Path(name).stem}"
    shots.mkdir(parents=True, exist_ok=True)
    phases, t0 = {}, time.perf_counter()  # seconds per phase, in the report: where a browser test's time goes
    page = shared.get() if shared is not None else _new_page(browser)
    page_errors: list[str] = []
    on_error = lambda e: page_errors.append(str(e))  # noqa: E731
    page.on("pageerror", on_error)
    ok = False

    def lap(phase: str) -> None:
        nonlocal t0
        phases[phase] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()

    try:
        B.open_notebook(page, server, name)
        lap("open_and_kernel_s")
        state = B.run_all(page)
        record_property("run_all_s", round(state["wall_s"], 1))
        expected = B.expected_panels(B.NB_DIR / name)
        B.wait_for_panels(page, expected)
        lap("run_all_s")
        saved = B.save(page, server, name)
        page.screenshot(path=str(shots / "page.png"))
        lap("save_s")
        if server.app == "lab":  # tests/test_notebooks.py checks these outputs instead of running it again
            B.EXECUTED[name] = {
                "nb": nbformat.reads(json.dumps(saved), as_version=4),
                "wall_s": state["wall_s"],
                "kernel_peak_mib": server.kernel_peak_mib(),
            }
        errors = B.error_outputs(saved)
        assert not errors, f"{name} raised while running in {server.app}: {errors}"

        panels = page.locator(".hierviz-panel")
        assert panels.count() == expected, f"{name}: {panels.count()} panels on the page, the code makes {expected}"
        rows = []
        for i in range(expected):
            panel = panels.nth(i)
            panel.scroll_into_view_if_needed()
            s = page.evaluate(f"({B.PANEL_STATE_JS})({i})")
            assert (s["figures"], s["drawn"]) == (1, 1), (
                f"{name} panel {i}: {s['figures']} figure(s), {s['drawn']} drawn; want exactly one, drawn"
            )
            assert s["outside"] == 0, (
                f"{name} panel {i}: its cell shows {s['outside']} more figure(s) outside the panel; want only the panel's"
            )
            ctrls = B.controls(panel)
            assert ctrls, f"{name} panel {i} has no slider or dropdown"
            for j, (kind, loc) in enumerate(ctrls):
                s = page.evaluate(f"({B.PANEL_STATE_JS})({i})")
                before = {"data": s["data"][0], "title": s["titles"][0]}
                what = B.move(page, kind, loc, i, server.app)
                try:
                    got = page.wait_for_function(B.CHANGED_JS, arg=i, polling="raf", timeout=30_000)
                except Exception as e:  # noqa: BLE001  (playwright's TimeoutError: report what the panel shows)
                    got = None
                    err = type(e).__name__
                now = page.evaluate(f"({B.PANEL_STATE_JS})({i})")
                same_data = bool(now["data"]) and now["data"][0] == before["data"]
                same_title = bool(now["titles"]) and now["titles"][0] == before["title"]
                if got is None or (now["figures"], now["drawn"]) != (1, 1) or (same_data and same_title):
                    panel.screenshot(path=str(shots / f"panel{i}-control{j}-FAILED.png"))
                    pytest.fail(
                        f"{name} panel {i} control {j} ({kind}, {what}): "
                        + (f"the figure did not redraw in 30 s ({err}); " if got is None else "")
                        + f"the panel shows {now['figures']} figure(s), {now['drawn']} drawn; data "
                        f"{'unchanged' if same_data else 'changed'}, title {'unchanged' if same_title else 'changed'}",
                        pytrace=False,
                    )
                r = got.json_value()
                rows.append(
                    {"panel": i, "control": j, "kind": kind, "move": what}
                    | {k: None if r[k] is None else round(r[k], 1) for k in ("ms", "kernel_ms", "browser_ms")}
                    | {"figure_bytes": r["figure_bytes"], "data_changed": not same_data}
                )
            panel.screenshot(path=str(shots / f"panel{i}.png"))
        lap("panels_s")
        record_property("phases_s", phases)
        record_property("redraw_ms", [r["ms"] for r in rows])
        if page_errors:
            record_property("page_errors", page_errors[:5])
        _record(name, server.app, rows)
        ok = True
        return rows
    finally:
        page.remove_listener("pageerror", on_error)
        if shared is not None:
            shared.release(ok)
        else:
            page.close()
        server.shutdown_kernels(wait=False)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=B.xdist_group(p)) for p in NOTEBOOKS], ids=[p.stem for p in NOTEBOOKS]
)
def test_panels_redraw_in_jupyterlab(path, lab, browser, lab_page, record_property):
    rows = check_panels(lab, browser, path.name, record_property, shared=lab_page)
    assert rows


@pytest.mark.browser
@pytest.mark.slow
def test_panels_redraw_in_classic_notebook7(classic, browser, record_property):
    rows = check_panels(classic, browser, CLASSIC, record_property)
    assert rows


def test_widget_notebooks_are_found():
    names = {p.name for p in NOTEBOOKS}
    assert {"00_label_trees.ipynb", "03_hwc.ipynb", "04_lam.ipynb", "08_triplets_unseen.ipynb"} <= names
    assert B.expected_panels(B.NB_DIR / "03_hwc.ipynb") == 2
    assert B.expected_panels(B.NB_DIR / "02_simclr_supcon.ipynb") == 0
    assert B.PANEL_CALL.findall("p = omega_panel(t)\ndef x_panel(a):\nfrom m import tau_panel\nq = Panel({})") == [
        "omega_panel(",
        "Panel(",
    ]


def test_smoke_copy_injects_smoke(tmp_path):
    import nbformat

    dst = B.smoke_copy(B.NB_DIR / CLASSIC, tmp_path)
    nb = nbformat.read(dst, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.tags and "injected-parameters" in code[1].metadata.tags
    assert "SMOKE = True" in code[1].source and nb.metadata.kernelspec.name == "python3"


def test_missing_browser_skips_with_install_hint_and_fails_under_ci(monkeypatch, tmp_path):
    monkeypatch.setattr(B, "CHROMIUM", tmp_path / "no-chromium")
    why = B.missing_browser()
    assert "apt-get install chromium" in why and "pip install playwright" in why and "no-chromium" in why
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        B.require_browser()
    monkeypatch.setenv("CI", "true")
    t0 = time.perf_counter()
    with pytest.raises(pytest.fail.Exception, match="CI=true.*apt-get install chromium"):
        B.require_browser()
    assert time.perf_counter() - t0 < 5


# --------------------------------------------------------------------------- under load (no browser needed)
class _FlakyHandler:
    """A local HTTP server answering ``code`` (with Jupyter's JSON error body) ``fail`` times, then 200."""

    @staticmethod
    def start(fail: int, code: int = 500):
        import http.server
        import threading

        calls = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                calls.append(self.path)
                ok = len(calls) > fail
                body = json.dumps({"ok": True} if ok else {"message": "Unreadable Notebook: busy saving"}).encode()
                self.send_response(200 if ok else code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv, calls


def _server_at(srv):
    return B.Server(f"http://127.0.0.1:{srv.server_address[1]}", Path("."), "lab", None, None)


def test_api_retries_5xx_with_backoff():
    """Under load the contents API answered 500 during a save and the test failed on the first answer."""
    srv, calls = _FlakyHandler.start(fail=3)
    try:
        server = _server_at(srv)
        t0 = time.monotonic()
        assert server.api("/api/contents/x.ipynb", retry_s=30) == {"ok": True}
        assert len(calls) == 4 and time.monotonic() - t0 >= 0.25 + 0.5 + 1.0 - 0.05  # backoff 0.25, 0.5, 1 s
        assert server.last_response.startswith("GET /api/contents/x.ipynb: HTTP 200")
    finally:
        srv.shutdown()


def test_contents_read_retries_404_and_400_while_a_save_rewrites_the_file():
    """A loaded run read 404 for a notebook that existed (mid-save); 4xx are the caller's elsewhere."""
    import urllib.error

    srv, calls = _FlakyHandler.start(fail=2, code=404)
    try:
        server = _server_at(srv)
        assert server.read_contents("/api/contents/x.ipynb?content=0") == {"ok": True} and len(calls) == 3
        with pytest.raises(urllib.error.HTTPError, match="HTTP Error 404"):
            other = _FlakyHandler.start(fail=1, code=404)[0]
            try:
                _server_at(other).api("/api/contents/x.ipynb")  # api alone: no 4xx retry
            finally:
                other.shutdown()
    finally:
        srv.shutdown()


def test_api_gives_up_naming_the_last_server_response():
    import urllib.error

    srv, calls = _FlakyHandler.start(fail=10**6)
    try:
        server = _server_at(srv)
        with pytest.raises(urllib.error.HTTPError) as e:
            server.api("/api/contents/x.ipynb", retry_s=1.0)
        assert e.value.code == 500 and len(calls) >= 2
        assert "tries over" in str(e.value) and "Unreadable Notebook: busy saving" in str(e.value)
        assert "HTTP 500" in server.last_response
    finally:
        srv.shutdown()


class _FakePage:
    """A page whose Lab save stays pending: ``evaluate`` answers the save state, ``wait_for_timeout`` sleeps."""

    def __init__(self):
        self.requests = 0

    def evaluate(self, js, *args):
        if js == B._LAB_SAVE_JS:
            self.requests += 1
            return True
        if js == B._SAVE_STATE_JS:
            return {"save": {"state": "pending", "error": None, "ms": 1}, "dialog": None}
        return True  # window.jupyterapp exists

    def wait_for_timeout(self, ms):
        time.sleep(ms / 1000)


def test_save_waits_on_a_pending_save_and_names_the_last_response(monkeypatch):
    """No second save on top of a pending one; the deadline follows the load; the message names the server."""

    class Srv:
        app, last_response = "lab", "GET /api/contents/n.ipynb?content=0: HTTP 200 (312 bytes)"

        def last_modified(self, name):
            return "2026-01-01T00:00:00Z"

    monkeypatch.setattr(B, "load_factor", lambda: 2.0)
    page = _FakePage()
    t0 = time.monotonic()
    with pytest.raises(AssertionError) as e:
        B.save(page, Srv(), "n.ipynb", timeout_s=0.2, retry_s=0.05)
    took = time.monotonic() - t0
    # deadline 0.2 s × load 2 = 0.4 s, tripled while the save is pending: ~1.2 s, one request only
    assert 1.1 < took < 5 and page.requests == 1
    msg = str(e.value)
    assert "was not saved" in msg and "deadline 0.4 s at load 2.0" in msg and "1 save requests" in msg
    assert "'state': 'pending'" in msg and "last server response: GET /api/contents/n.ipynb?content=0: HTTP 200" in msg


def test_load_factor_is_at_least_one():
    assert B.load_factor() >= 1.0


def test_save_reads_the_new_copy_only_once_the_save_has_settled(monkeypatch):
    """The stamp changes when the write starts: a read then can find half a file (and made the server lose it)."""
    states = iter(["pending"] * 3 + ["saved"] * 10)
    reads = []

    class Page(_FakePage):
        def evaluate(self, js, *args):
            if js == B._SAVE_STATE_JS:
                return {"save": {"state": next(states), "error": None, "ms": 1}, "dialog": None}
            return super().evaluate(js, *args)

    class Srv:
        app, last_response, stamps = "lab", "none yet", iter(["t0", "t0"] + ["t1"] * 20)

        def last_modified(self, name):
            return next(self.stamps)

        def notebook(self, name):
            reads.append(name)
            return {"cells": [{"cell_type": "code", "execution_count": 1}]}

    monkeypatch.setattr(B, "load_factor", lambda: 1.0)
    saved = B.save(Page(), Srv(), "n.ipynb", timeout_s=30, retry_s=60)
    assert saved["cells"][0]["execution_count"] == 1 and reads == ["n.ipynb"]


def test_the_test_server_answers_400_for_a_half_written_notebook_and_keeps_it(tmp_path):
    """A read during a save must not trigger the server's atomic-writing recovery (file renamed to .invalid, then lost)."""
    import urllib.error

    pytest.importorskip("jupyterlab")
    with B.jupyter_server(tmp_path, "lab") as server:
        (server.root / "n.ipynb").write_text('{"cells": [')  # mid-write: truncated JSON
        (server.root / ".~n.ipynb").write_text(json.dumps(nbformat.v4.new_notebook()))  # a save's backup copy
        with pytest.raises(urllib.error.HTTPError) as e:
            server.api("/api/contents/n.ipynb?content=1")
        assert e.value.code == 400
        assert (server.root / "n.ipynb").read_text() == '{"cells": [' and not list(server.root.glob("*.invalid"))
