"""Shared launcher and page helpers for the browser tests (tests/test_browser.py).

A real JupyterLab 4 (or classic Notebook 7) server started by the test, driven by Playwright
for Python through Debian's ``chromium`` package (never ``playwright install``: no browser is
downloaded). Everything the server writes (settings, workspaces, runtime files, the notebook
copies) lives in a temporary folder.

Environment
-----------
``HIERVIZ_CHROMIUM``
    The chromium binary (default ``/usr/lib/chromium/chromium``, Debian's ``chromium`` package).
``HIERVIZ_ARTIFACTS``
    Where screenshots and the executed notebooks go (default ``tests/artifacts/``, gitignored).
``CI``
    ``true``: a missing browser or Playwright is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NB_DIR = REPO / "notebooks"
CHROMIUM = Path(os.environ.get("HIERVIZ_CHROMIUM", "/usr/lib/chromium/chromium"))
INSTALL_HINT = (
    "install them with `apt-get install chromium` (Debian's browser, at /usr/lib/chromium/chromium, "
    "or set HIERVIZ_CHROMIUM) and `pip install playwright` (no `playwright install` needed)"
)
# A call that makes a panel: `omega_panel(`, `Panel(`, ... (not `def x_panel(`, not an import).
PANEL_CALL = re.compile(r"(?<![\w.])(?<!def )(?:\w+_panel|Panel)\(")


def artifacts_dir() -> Path:
    """``$HIERVIZ_ARTIFACTS`` or tests/artifacts/ (created)."""
    d = Path(os.environ.get("HIERVIZ_ARTIFACTS", REPO / "tests" / "artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    reasons = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reasons.append("Playwright for Python is not installed")
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        reasons.append(f"no chromium at {CHROMIUM}")
    return "; ".join(reasons) + f": {INSTALL_HINT}" if reasons else None


def require_browser() -> None:
    """Skip (fail under ``CI=true``) with an install hint when chromium or Playwright is missing."""
    why = missing_browser()
    if why is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"browser tests cannot run under CI=true: {why}", pytrace=False)
    pytest.skip(f"browser tests skipped, {why}")


#: The notebooks this process has already run to the end at SMOKE=True in JupyterLab (Run All, then
#: saved), by file name: ``{"nb": NotebookNode, "wall_s": Run All's seconds, "kernel_peak_mib":
#: the kernel's peak resident memory}``. tests/test_notebooks.py checks these outputs instead of running
#: the notebook a second time under papermill (the two tests of a notebook share an xdist group, so
#: they run in one worker, the browser test first).
EXECUTED: dict[str, dict] = {}


def xdist_group(path: Path) -> pytest.MarkDecorator:
    """The pytest-xdist group of a notebook's tests (``--dist loadgroup`` runs them in one worker, in order)."""
    return pytest.mark.xdist_group(f"notebook-{path.stem}")


def widget_notebooks() -> list[Path]:
    """The course notebooks that build at least one panel."""
    return [p for p in sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb")) if expected_panels(p) > 0]


def expected_panels(path: Path) -> int:
    """How many panel-making calls the notebook's code cells hold."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return sum(len(PANEL_CALL.findall(c.source)) for c in nb.cells if c.cell_type == "code")


def smoke_copy(src: Path, dst_dir: Path) -> Path:
    """Copy a notebook into ``dst_dir`` with SMOKE=True injected after its parameters cell (papermill, unexecuted)."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(src)), {"SMOKE": True})
    # the stored notebooks carry no kernelspec (stripped); without one Lab asks which kernel to start
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    dst = dst_dir / src.name
    nbformat.write(nb, dst)
    return dst


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(settings: Path) -> None:
    """Lab settings for a test: every cell kept in the DOM (no windowing), no news or update checks."""
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "checkForUpdates": False,
            "fetchNews": "false",
        },
    }
    for rel, value in files.items():
        f = settings / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))


#: Seconds a REST call is retried on a 5xx answer or a timed-out read, on an idle machine (× :func:`load_factor`).
API_RETRY_S = 60.0


def load_factor() -> float:
    """The machine's 1-minute load average per CPU, at least 1 (1 where the OS does not tell).

    Deadlines of the browser tests are multiplied by it: on a 2-core machine at load 8 a Run All
    or a save takes about four times as long as on an idle one.
    """
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except (AttributeError, OSError):
        return 1.0


def _error_detail(e: urllib.error.HTTPError) -> str:
    """``": <the server's message>"`` from a Jupyter error body (JSON ``message``), at most 300 characters."""
    try:
        raw = e.read().decode(errors="replace")
    except Exception:  # noqa: BLE001  (no body, or it was read already)
        return ""
    try:
        msg = json.loads(raw).get("message") or raw
    except (ValueError, AttributeError):
        msg = raw
    msg = " ".join(str(msg).split())
    return f": {msg[:300]}" if msg else ""


class Server:
    """A running Jupyter server: ``url`` (no token), ``root`` (its root folder), ``app`` ("lab" | "notebook")."""

    def __init__(self, url: str, root: Path, app: str, proc: subprocess.Popen, log: Path):
        self.url, self.root, self.app, self.proc, self.log = url, root, app, proc, log

    #: What the server last answered, for failure messages: ``"GET /api/contents/x: HTTP 500 …"``.
    last_response: str = "none yet"

    def api(self, path: str, method: str = "GET", body: dict | None = None, retry_s: float | None = None):
        """One REST call; a 5xx answer or a timed-out read is retried with backoff for ``retry_s`` seconds.

        On a loaded machine the contents API answers 500 while a save rewrites the file, and a
        reply can take longer than the socket timeout. ``retry_s`` defaults to
        :data:`API_RETRY_S` × :func:`load_factor`. A 4xx answer (the caller's to judge) and a
        refused connection (the server not up yet) are raised at once. The error raised after the
        last try is the server's ``HTTPError`` (same code) whose reason names the tries and
        :attr:`last_response`.
        """
        data = None if body is None else json.dumps(body).encode()
        budget = API_RETRY_S * load_factor() if retry_s is None else retry_s
        t0, delay, tries = time.monotonic(), 0.25, 0
        while True:
            tries += 1
            req = urllib.request.Request(self.url + path, data=data, method=method)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    raw = r.read()
                    self.last_response = f"{method} {path}: HTTP {r.status} ({len(raw)} bytes)"
                return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                self.last_response = f"{method} {path}: HTTP {e.code} {e.reason}{_error_detail(e)}"
                if e.code < 500 or time.monotonic() - t0 + delay > budget:
                    if e.code < 500:
                        raise
                    raise urllib.error.HTTPError(
                        e.url,
                        e.code,
                        f"{e.reason} ({tries} tries over {time.monotonic() - t0:.0f} s; last response: "
                        f"{self.last_response})",
                        e.headers,
                        None,
                    ) from None
            except (TimeoutError, urllib.error.URLError) as e:
                reason = getattr(e, "reason", e)
                if not isinstance(reason, TimeoutError) or time.monotonic() - t0 + delay > budget:
                    raise
                self.last_response = f"{method} {path}: no answer within 30 s"
            time.sleep(delay)
            delay = min(2 * delay, 4.0)

    def notebook_url(self, name: str) -> str:
        # ?reset: a fresh Lab workspace, or Lab would also reopen the notebooks of the previous test
        return f"{self.url}/lab/tree/{name}?reset" if self.app == "lab" else f"{self.url}/notebooks/{name}"

    def last_modified(self, name: str, timeout_s: float = 30.0) -> str:
        """The server's ``last_modified`` stamp of ``name`` (ISO 8601); see :meth:`read_contents`."""
        return self.read_contents(f"/api/contents/{name}?content=0", timeout_s)["last_modified"]

    def read_contents(self, path: str, timeout_s: float = 30.0) -> dict:
        """A contents-API read of a file that exists, retried while a save is rewriting it.

        Jupyter Server's "atomic" writing rewrites the file in place (it keeps a backup copy, not a
        temporary one), so a read during a save answers 400 "Unreadable Notebook", and on a loaded
        machine 404 (seen while a save was under way) or 500: 4xx answers are retried here for
        ``timeout_s`` × :func:`load_factor` seconds, every 0.25 s (5xx by :meth:`api`). The error
        after the last try names :attr:`last_response`.
        """
        t0, budget = time.monotonic(), timeout_s * load_factor()
        while True:
            try:
                return self.api(path)
            except urllib.error.HTTPError as e:
                gone = e.code == 404 and not self.root.is_dir()
                invalid = [p.name for p in self.root.glob("*.invalid")] if e.code == 404 and not gone else []
                if e.code not in (400, 404) or gone or invalid or time.monotonic() - t0 > budget:
                    why = (
                        f"; the server's root folder {self.root} was deleted (on a shared machine another "
                        "pytest session's clean-up of old /tmp/pytest-of-<user> folders: pass --basetemp)"
                        if gone
                        else f"; the server renamed {', '.join(invalid)} aside (its atomic-writing recovery: a read "
                        "during a save)"
                        if invalid
                        else ""
                    )
                    raise urllib.error.HTTPError(
                        e.url,
                        e.code,
                        f"{e.reason} (read retried for {time.monotonic() - t0:.0f} s; last response: "
                        f"{self.last_response}{why})",
                        e.headers,
                        None,
                    ) from None
            time.sleep(0.25)

    def notebook(self, name: str, timeout_s: float = 30.0) -> dict:
        """The saved notebook as the server holds it (JSON), read again while a save rewrites it (:meth:`read_contents`)."""
        return self.read_contents(f"/api/contents/{name}?content=1", timeout_s)["content"]

    def start_session(self, name: str) -> None:
        """Start a fresh python3 kernel for notebook ``name`` (the REST API's session of that path).

        The page that opens the notebook next finds the session and connects to its kernel, so the
        kernel starts while the page loads instead of after.
        """
        body = {"path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}}
        self.api("/api/sessions", method="POST", body=body)

    def kernel_peak_mib(self) -> float | None:
        """The largest peak resident memory (``VmHWM``, Linux) of this server's running kernels, in MiB.

        The same quantity as the papermill runner's ``ru_maxrss`` of its children (the kernel); None
        where ``/proc`` does not tell (not Linux, or no kernel running).
        """
        ids = [k["id"] for k in self.api("/api/kernels") or []]
        peak = None
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
                if not any(f"kernel-{i}.json" in cmd for i in ids):
                    continue
                kib = re.search(r"^VmHWM:\s*(\d+) kB", (proc / "status").read_text(), re.M)
            except OSError:  # the process ended while we read
                continue
            if kib:
                peak = max(peak or 0.0, int(kib.group(1)) / 1024)
        return peak

    def shutdown_kernels(self, wait: bool = True) -> None:
        """Shut down every running kernel; ``wait=False``: those running now, in a thread (the next test need not wait)."""
        ids = [k["id"] for k in self.api("/api/kernels") or []]

        def stop() -> None:
            for i in ids:
                try:
                    self.api(f"/api/kernels/{i}", method="DELETE")
                except OSError:  # URLError (gone already: 404) or the server stopping
                    pass

        if wait:
            stop()
        else:
            threading.Thread(target=stop, daemon=True).start()


@contextmanager
def jupyter_server(tmp: Path, app: str = "lab", timeout: float = 120.0):
    """Start ``jupyter lab`` (or ``jupyter notebook``) on a free port with root ``tmp/root``; yield a :class:`Server`.

    ``timeout`` (seconds for the server to answer, on an idle machine) is multiplied by :func:`load_factor`.
    """
    root, settings = tmp / "root", tmp / "settings"
    root.mkdir(parents=True, exist_ok=True)
    _write_settings(settings)
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab" if app == "lab" else "notebook",
        "--no-browser",
        "--allow-root",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        # Saves write the file in place. With atomic writing on, a read that lands mid-write finds the
        # save's backup copy and "recovers" from it: the half-written file is renamed to .invalid and
        # the backup moved into place, which the save then deletes, so the notebook is gone (404) for
        # good. Seen under load; off, such a read answers 400 and read_contents retries it.
        "--FileContentsManager.use_atomic_writing=False",
    ]
    if app == "lab":
        cmd.append("--LabApp.expose_app_in_browser=True")  # window.jupyterapp: see open_lab
    log = tmp / f"jupyter-{app}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=root)
    server = Server(f"http://127.0.0.1:{port}", root, app, proc, log)
    timeout *= load_factor()
    try:
        t0 = time.monotonic()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter {app} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                server.api("/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() - t0 > timeout:
                    msg = f"jupyter {app} did not answer in {timeout:.0f} s:\n{log.read_text()[-3000:]}"
                    raise RuntimeError(msg) from None
                time.sleep(0.5)
        yield server
    finally:
        try:
            server.shutdown_kernels()
        except Exception:  # noqa: BLE001  (the server may already be gone)
            pass
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextmanager
def chromium():
    """A headless Playwright chromium (Debian's binary, ``--no-sandbox``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            # no GPU: WebGL (plotly 3-D traces) runs on SwiftShader, which newer chromium wants opted into
            args=["--no-sandbox", "--disable-dev-shm-usage", "--enable-unsafe-swiftshader"],
        )
        try:
            yield browser
        finally:
            browser.close()


# --------------------------------------------------------------------------- page helpers
# Cell prompts read "[*]:" while queued or running, "[12]:" once run, "[ ]:" before.
_RUN_STATE_JS = """() => {
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
  return {cells: prompts.length, busy: prompts.filter(t => t.includes('*')).length,
          done: prompts.filter(t => /\\[\\d+\\]/.test(t)).length};
}"""


# Run All is over: no cell queued or running, and the kernel idle.
_DONE_JS = f"""() => ({_RUN_STATE_JS})().busy === 0
  && !!document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']")"""


def open_lab(page, server: Server, timeout_ms: float = 120_000) -> None:
    """Load JupyterLab (a fresh workspace) in ``page``, once: :func:`open_notebook` then opens notebooks in it.

    The server exposes the app as ``window.jupyterapp`` (``--LabApp.expose_app_in_browser``, set by
    :func:`jupyter_server`), so a notebook opens with Lab's ``docmanager:open`` command instead of a
    page load (Lab's own start-up: seconds of JavaScript on a 2-core CPU, once per notebook before).
    """
    page.goto(f"{server.url}/lab?reset")
    page.wait_for_function("() => !!(window.jupyterapp && document.querySelector('.jp-LabShell'))", timeout=timeout_ms)
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")


def close_documents(page, timeout_ms: float = 30_000) -> None:
    """Close every document of the Lab in ``page`` without a save prompt (the test saved what it needs)."""
    page.evaluate("() => { for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) w.dispose(); }")
    page.wait_for_function("() => document.querySelectorAll('.jp-NotebookPanel').length === 0", timeout=timeout_ms)


def open_notebook(page, server: Server, name: str, timeout_ms: float = 120_000) -> None:
    """Open ``name`` and wait until its kernel is idle (the notebook is ready to run).

    Its kernel is started (:meth:`Server.start_session`) first, while the page loads. In a page where
    :func:`open_lab` has loaded JupyterLab, the notebook opens in that Lab (no page load); otherwise
    the page loads its URL (Notebook 7, or Lab on its own).
    """
    server.start_session(name)
    if server.app == "lab" and page.evaluate("() => !!window.jupyterapp"):
        page.evaluate("p => { window.jupyterapp.commands.execute('docmanager:open', {path: p}); }", name)
    else:
        page.goto(server.notebook_url(name))
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=timeout_ms)
    n = page.locator(".jp-NotebookPanel").count()
    assert n == 1, f"{n} notebooks open in the page, want only {name}"
    # the kernel has started once the toolbar names it and reports idle
    page.wait_for_function(
        """() => { const k = document.querySelector('.jp-KernelName, .jp-Toolbar-kernelName');
                   const s = document.querySelector('.jp-Notebook-ExecutionIndicator');
                   return k && /python/i.test(k.textContent) && s && s.dataset.status === 'idle'; }""",
        polling=100,
        timeout=timeout_ms,
    )


def run_all(page, timeout_s: float = 420.0) -> dict:
    """Run > Run All Cells, then wait until no cell is queued or running and the kernel is idle.

    The page is polled every 100 ms (in the page, not by fixed sleeps); once done it is asked again
    after 200 ms, in case the kernel was idle between two cells. ``timeout_s`` is for an idle
    machine and is multiplied by :func:`load_factor`.
    """
    factor = load_factor()
    timeout_s *= factor
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    t0 = time.monotonic()
    page.wait_for_function(f"({_RUN_STATE_JS})().busy > 0", timeout=30_000 * factor)
    while True:
        left_ms = (timeout_s - (time.monotonic() - t0)) * 1000
        try:
            page.wait_for_function(_DONE_JS, polling=100, timeout=max(left_ms, 1))
        except Exception:  # noqa: BLE001  (playwright's TimeoutError: say how far it got)
            raise AssertionError(
                f"Run All did not finish in {timeout_s:.0f} s: {page.evaluate(_RUN_STATE_JS)}"
            ) from None
        wall = time.monotonic() - t0
        page.wait_for_timeout(200)
        if page.evaluate(_DONE_JS):
            state = page.evaluate(_RUN_STATE_JS)
            state["wall_s"] = wall
            return state


# Every panel on the page holds exactly one drawn plotly figure.
_PANELS_DRAWN_JS = """(n) => {
  const panels = [...document.querySelectorAll('.hierviz-panel')];
  return panels.length >= n && panels.every(p => {
    const figs = p.querySelectorAll('.js-plotly-plot');
    return figs.length === 1 && !!figs[0]._fullLayout && !!figs[0].querySelector('.main-svg');
  });
}"""


def wait_for_panels(page, expected: int, timeout_ms: float = 30_000) -> bool:
    """Wait until ``expected`` panels each show one drawn figure (widgets render after the last reply).

    Returns False at the timeout instead of raising: the caller's assertions then say what is missing.
    """
    try:
        page.wait_for_function(_PANELS_DRAWN_JS, arg=expected, polling=100, timeout=timeout_ms)
        return True
    except Exception:  # noqa: BLE001  (playwright's TimeoutError)
        return False


# Ask Lab to save the document ``name`` (its context's save, not a key press: no focus needed). The
# promise is not awaited (a dialog would hold it); its outcome is the server's own "saved" signal
# (Lab's PUT answered), kept in window.__hvSave for the wait and the message.
_LAB_SAVE_JS = """(name) => {
  const w = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === name);
  if (!w) return false;
  const s = window.__hvSave = {state: 'pending', error: null, t0: performance.now(), t1: null};
  w.context.save().then(() => { s.state = 'saved'; s.t1 = performance.now(); },
                        e => { s.state = 'failed'; s.error = String(e); s.t1 = performance.now(); });
  return true;
}"""
_SAVE_STATE_JS = """() => { const s = window.__hvSave;
  return {save: s ? {state: s.state, error: s.error, ms: Math.round((s.t1 || performance.now()) - s.t0)} : null,
          dialog: (document.querySelector('.jp-Dialog') || {}).innerText || null}; }"""


def _request_save(page, server: Server, name: str) -> bool:
    """Ask for a save; True when Lab's save promise reports the outcome (False: Notebook 7's Ctrl+S)."""
    if server.app == "lab" and page.evaluate("() => !!window.jupyterapp"):
        if page.evaluate(_LAB_SAVE_JS, name):
            return True
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})  # Notebook 7: the key press
    page.keyboard.press("Control+s")
    return False


def save(page, server: Server, name: str, timeout_s: float = 60.0, retry_s: float = 15.0) -> dict:
    """Save ``name`` and wait until the server holds a newer copy in which every code cell has run; return it.

    Lab saves through the document's context and the wait follows the server's own signal: the
    save promise settles when the server has answered the PUT. A new save is asked for only once
    the previous one has settled (and ``retry_s`` has passed, or it failed), never on top of a
    pending one. Notebook 7 has no such promise: Ctrl+S is pressed again every ``retry_s`` seconds.
    The page's dirty mark is not enough (it clears before the server has written the file), nor is
    a changed ``last_modified`` stamp alone (a copy without outputs was once read back): the copy
    is read until each code cell has an execution count, and in Lab only once the save has settled
    (the stamp changes when the write starts).

    The deadline is ``timeout_s`` × :func:`load_factor` (the highest seen during the wait); while
    a Lab save is still pending it is extended up to three times that. The failure message names
    the save requests, the page's save state and the server's last response.
    """
    before = seen = server.last_modified(name)
    t0, last_request, tries, code, unrun, deadline = time.monotonic(), None, 0, [], 0, timeout_s
    tracked, state = False, {}
    while True:
        elapsed = time.monotonic() - t0
        deadline = max(deadline, timeout_s * load_factor())
        state = page.evaluate(_SAVE_STATE_JS) if server.app == "lab" else {}
        pending = tracked and (state.get("save") or {}).get("state") == "pending"
        failed = tracked and (state.get("save") or {}).get("state") == "failed"
        stamp = server.last_modified(name)
        if stamp != seen and not pending:  # a new copy, written: read it (once per write, never mid-save)
            seen = stamp
            saved = server.notebook(name)
            code = [c for c in saved["cells"] if c["cell_type"] == "code"]
            unrun = sum(c.get("execution_count") is None for c in code)
            if not unrun:
                return saved
        if elapsed > (3 * deadline if pending else deadline):
            what = "was not saved" if seen == before else f"was saved with {unrun} of {len(code)} code cells not run"
            raise AssertionError(
                f"{name} {what} within {elapsed:.0f} s (deadline {deadline:.3g} s at load {load_factor():.1f} per "
                f"CPU; {tries} save requests; page: {state}; last server response: {server.last_response})"
            )
        due = last_request is None or elapsed - last_request >= retry_s
        if (due and not pending) or (failed and elapsed - last_request >= 1.0):
            tracked = _request_save(page, server, name)
            tries, last_request = tries + 1, elapsed
        page.wait_for_timeout(250)


def error_outputs(nb: dict) -> list[str]:
    """``ename: evalue`` of every error output of a saved notebook."""
    return [
        f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


# The state of panel i: its figures, their data (JSON) and title, and the figures its cell shows
# outside every panel.
PANEL_STATE_JS = """(i) => {
  const panel = document.querySelectorAll('.hierviz-panel')[i];
  if (!panel) return null;
  const figs = [...panel.querySelectorAll('.js-plotly-plot')];
  const drawn = figs.filter(g => g._fullLayout && g.querySelector('.main-svg'));
  const enc = v => (ArrayBuffer.isView(v) ? Array.from(v) : v);
  const data = drawn.map(g => JSON.stringify(g.data.map(t => Object.fromEntries(
      Object.entries(t).filter(([k]) => k !== 'uid').map(([k, v]) => [k, Array.isArray(v) ? v.map(enc) : enc(v)])))));
  const titles = drawn.map(g => (g.layout.title && g.layout.title.text) || '');
  // figures in the panel's cell but in no panel: a second copy of the panel's figure would be one
  const cell = panel.closest('.jp-Cell');
  const outside = cell ? [...cell.querySelectorAll('.js-plotly-plot')].filter(g => !g.closest('.hierviz-panel')).length : 0;
  return {figures: figs.length, drawn: drawn.length, data, titles, outside};
}"""

# Resolves (in the page) at the first animation frame where panel i shows exactly one drawn figure
# that is not the one snapshotted by _ARM_CLOCK_JS (a new plot element, or new data/layout objects on
# the same element: Plotly.react). O(1) per frame, so the polling does not slow the redraw it times.
# Returns the milliseconds since the user's action (window.__hvT0: the keydown, the select's change,
# or the mouse release that ends a drag), split at the largest websocket frame received since then.
CHANGED_JS = """(i) => {
  const panel = document.querySelectorAll('.hierviz-panel')[i];
  if (!panel) return false;
  const figs = panel.querySelectorAll('.js-plotly-plot');
  if (figs.length !== 1) return false;
  const g = figs[0], p = window.__hvPrev || {};
  if (!g._fullLayout || !g.querySelector('.main-svg')) return false;
  if (g === p.gd && g.data === p.data && g.layout === p.layout) return false;
  const now = performance.now(), t0 = window.__hvT0;
  if (t0 === null) return false;
  const frames = (window.__hvRecv || []).filter(([t]) => t >= t0);
  const big = frames.reduce((a, f) => (a === null || f[1] > a[1] ? f : a), null);
  return {ms: now - t0, kernel_ms: big ? big[0] - t0 : null, browser_ms: big ? now - big[0] : null,
          figure_bytes: big ? big[1] : null};
}"""

_ARM_CLOCK_JS = """([type, i]) => {
  const panel = document.querySelectorAll('.hierviz-panel')[i];
  const g = panel && panel.querySelector('.js-plotly-plot');
  window.__hvPrev = g ? {gd: g, data: g.data, layout: g.layout} : {};
  window.__hvT0 = null;
  window.__hvRecv = [];
  document.addEventListener(type, () => { if (window.__hvT0 === null) window.__hvT0 = performance.now(); },
                            {capture: true, once: true});
}"""

# Installed before the page loads: every websocket frame the page receives is timestamped, so a redraw
# splits into the kernel's part (user action -> the largest frame, the Output's new figure) and the
# browser's (that frame -> the redrawn figure).
WS_TIMING_JS = """(() => {
  const Orig = window.WebSocket;
  window.__hvRecv = [];
  window.WebSocket = class extends Orig {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => {
        const d = e.data, n = d.byteLength !== undefined ? d.byteLength : (d.size !== undefined ? d.size : d.length);
        window.__hvRecv.push([performance.now(), n]);
      });
    }
  };
})();"""


def controls(panel) -> list[tuple[str, object]]:
    """``(kind, locator)`` for every slider handle and dropdown of a panel locator, in order."""
    out = []
    for w in panel.locator(".widget-slider, .widget-dropdown").all():
        cls = w.get_attribute("class") or ""
        if "widget-dropdown" in cls:
            out.append(("dropdown", w.locator("select")))
        else:
            out.append(("slider", w.locator(".noUi-handle")))
    return out


def move(page, kind: str, loc, panel: int, app: str = "lab") -> str:
    """Move one control of panel number ``panel`` by one step and return what was done.

    Before the move the panel's figure is snapshotted and a clock armed for :data:`CHANGED_JS`.

    A dropdown gets its next option. A slider: in JupyterLab the arrow key on its focused handle
    (one step); in classic Notebook 7 a mouse drag of the handle, since Notebook 7's key-binding
    handler cancels arrow keydowns in the capture phase before they reach the handle (seen with
    notebook 7.6: ``defaultPrevented`` at the document, the handle never sees the key).
    """
    if kind == "dropdown":
        page.evaluate(_ARM_CLOCK_JS, ["change", panel])
        options = loc.locator("option").all_text_contents()
        cur = loc.evaluate("s => s.selectedIndex")
        target = (cur + 1) % len(options)
        loc.select_option(index=target)
        return f"{options[cur]} -> {options[target]}"
    now, top = loc.get_attribute("aria-valuenow"), loc.get_attribute("aria-valuemax")
    right = not (now is not None and top is not None and float(now) >= float(top))
    if app == "lab":
        key = "ArrowRight" if right else "ArrowLeft"
        page.evaluate(_ARM_CLOCK_JS, ["keydown", panel])
        loc.focus()
        loc.press(key)
        return f"{key} from {now}"
    page.evaluate(_ARM_CLOCK_JS, ["pointerup", panel])  # the slider sends its value on release
    box = loc.bounding_box()
    track = loc.locator("xpath=ancestor::*[contains(@class, 'noUi-target')][1]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    dx = max(0.08 * track["width"], 6.0) * (1 if right else -1)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / 2, y, steps=2)
    page.mouse.move(x + dx, y, steps=2)
    page.mouse.up()
    return f"drag {'right' if right else 'left'} from {now}"


def copy_notebooks(names: list[Path], root: Path) -> list[Path]:
    """SMOKE copies of the given notebooks in ``root`` (see :func:`smoke_copy`)."""
    root.mkdir(parents=True, exist_ok=True)
    return [smoke_copy(p, root) for p in names]


def clean(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
