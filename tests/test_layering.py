"""The layering of DESIGN.md as code (issue 23): import-linter's contracts hold, the import map has
no cycle and no upward import, and CONTRIBUTING.md's layout table is the one the code generates."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "docs" / "scripts"


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_import_linter_contracts_are_kept():
    code = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True, no_logo=True))"
    proc = _run(["-c", code])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "7 kept, 0 broken" in proc.stdout


def test_import_map_has_no_cycle_and_no_upward_import():
    proc = _run([str(SCRIPTS / "import_map.py")])
    assert proc.returncode == 0, proc.stderr
    counts = dict(line.rsplit(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert counts["module import cycles"] == "0" and counts["package import cycles"] == "0"
    assert counts["upward imports (against LAYERS)"] == "0"
    assert int(counts["imports left out above (the deprecated aliases in ALIASES)"]) <= 5
    assert int(counts["floors (package graph, cycles merged)"]) <= 9


def test_contributing_layout_table_is_current():
    proc = _run([str(SCRIPTS / "layout_table.py"), "--check"])
    assert proc.returncode == 0, proc.stdout
