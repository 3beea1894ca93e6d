"""The layering of DESIGN.md as code: import-linter's contracts hold, the import map has
no cycle, no upward import and at most 9 floors, every import inside a function says why it waits, and
CONTRIBUTING.md's layout table is the one the code generates."""

import ast
import re
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
    assert "8 kept, 0 broken" in proc.stdout


#: The loopholes the 0.3 contracts let through: (file, the import added to it, what lint-imports must then say).
LOOPHOLES = [
    ("report/tables.py", "from hierviz.methods import build_objective", "hierviz.report is not allowed to import hierviz.methods"),
    ("report/html.py", "from hierviz.evaluation import PROTOCOLS", "hierviz.report is not allowed to import hierviz.evaluation"),
    ("report/stats.py", "from hierviz.training import fit", "hierviz.report is not allowed to import hierviz.training"),
    ("viz/curves.py", "from hierviz.training import fit", "hierviz.viz is not allowed to import hierviz.training"),
    # the module whose pair with training was ignored until 0.4 (notebook 07's HCL panel trained through fit)
    ("viz/retrieval.py", "from hierviz.training import fit", "hierviz.viz is not allowed to import hierviz.training"),
    ("viz/tree.py", "from hierviz.methods import build_objective", "hierviz.viz is not allowed to import hierviz.methods"),
    # a top-level import where the 0.1 alias was (its ignore covered the whole pair): import hierviz.losses then fails
    ("losses/objective.py", "from hierviz.methods import METHODS", "hierviz.losses is not allowed to import hierviz.methods"),
]  # fmt: skip


def test_each_former_loophole_now_fails(tmp_path):
    """A copy of the package with each loophole's import added: lint-imports breaks, naming each one."""
    import shutil

    shutil.copytree(ROOT / "hierviz", tmp_path / "hierviz", ignore=shutil.ignore_patterns("*.npz", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for rel, line, _ in LOOPHOLES:
        path = tmp_path / "hierviz" / rel
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    code = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True, no_logo=True))"
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode != 0
    text = " ".join(proc.stdout.split())  # lint-imports wraps long lines
    for rel, line, message in LOOPHOLES:
        assert message in text, f"{rel}: {line!r} was not caught"
        assert f"hierviz.{rel[:-3].replace('/', '.')} ->" in text


def test_import_map_has_no_cycle_and_no_upward_import():
    proc = _run([str(SCRIPTS / "import_map.py")])
    assert proc.returncode == 0, proc.stderr
    counts = dict(line.rsplit(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert counts["module import cycles"] == "0" and counts["package import cycles"] == "0"
    assert counts["upward imports (against LAYERS)"] == "0"
    assert int(counts["imports left out above (the deprecated aliases in ALIASES)"]) == 0
    assert int(counts["floors (package graph, cycles merged)"]) <= 9


def test_contributing_layout_table_is_current():
    proc = _run([str(SCRIPTS / "layout_table.py"), "--check"])
    assert proc.returncode == 0, proc.stdout


def test_architecture_page_is_generated_from_the_code():
    """docs/architecture.md is the output of docs/scripts/architecture.py: the layers, registries and steps of today."""
    proc = _run([str(SCRIPTS / "architecture.py"), "--check"])
    assert proc.returncode == 0, proc.stdout
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "hierviz.hierarchy" in page and "`@register_method`, `METHODS`" in page
    assert "`_run_one`: Train + evaluate one method" in page and "`fit`: Train ``model``" in page


#: The comment an import inside a function carries, on its line or the line above: why it is not at the
#: top of the module (CONTRIBUTING.md, "The direction of imports"). ``heavy``/``optional``: a dependency
#: imported on first use; ``alias``: a deprecated name resolved on first use; ``cycle``: the last resort.
IN_FUNCTION_REASON = re.compile(r"#\s*(heavy|optional|alias|cycle):")


def _unexplained_in_function_imports(path: Path, root: Path = ROOT) -> list[str]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                span = lines[max(child.lineno - 2, 0) : child.end_lineno]  # the line above, and the statement
                if not any(IN_FUNCTION_REASON.search(line) for line in span):
                    found.append(f"{path.relative_to(root)}:{child.lineno}: {lines[child.lineno - 1].strip()}")
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source, filename=str(path)), False)
    return found


def test_imports_inside_functions_say_why():
    # a function imports only an optional or heavy dependency, a deprecated alias or (last
    # resort) a module of an import cycle, and says which; every other import is at the top of its module
    found = [hit for path in sorted((ROOT / "hierviz").rglob("*.py")) for hit in _unexplained_in_function_imports(path)]
    assert not found, (
        f"{len(found)} import(s) inside a function without a '# heavy: ...', '# optional: ...', '# alias: ...' "
        "or '# cycle: ...' comment on the line or the line above; move them to the top of the module, or say "
        "why they wait:\n" + "\n".join(found)
    )


def test_in_function_import_check_finds_an_unexplained_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f():\n    import json\n\n\n"
        "def g():\n    import umap  # heavy: numba\n\n\n"
        "def h():\n    # optional: plotly (hierviz[viz])\n    from plotly import io\n\n\n"
        "import os\n",
        encoding="utf-8",
    )
    assert _unexplained_in_function_imports(sample, tmp_path) == ["sample.py:2: import json"]


def _optimiser_steps(path: Path, root: Path = ROOT) -> list[str]:
    """Lines of ``path`` that build a torch optimiser or run a backward pass (``torch.optim.*``, ``.backward(``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Attribute) and (
            node.attr == "backward" or (node.attr == "optim" and isinstance(node.value, ast.Name))
        ):
            found.append(f"{path.relative_to(root)}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch.optim"):
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return sorted(set(found), key=lambda hit: int(hit.rsplit(":", 1)[1]))


def test_figures_never_train():
    # viz and report draw what training made: a toy that has to be trained first lives in
    # hierviz.training (hierviz.training.toys) and the figure takes its result
    found = [
        hit
        for pkg in ("viz", "report")
        for path in sorted((ROOT / "hierviz" / pkg).rglob("*.py"))
        for hit in _optimiser_steps(path)
    ]
    assert not found, "an optimiser or a backward pass in a drawing module:\n" + "\n".join(found)


def test_optimiser_check_finds_a_training_loop(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import torch\nfrom torch.optim import SGD\n\n\n"
        "def f(p, loss):\n    opt = torch.optim.Adam(p)\n    loss.backward()\n    return opt, SGD\n",
        encoding="utf-8",
    )
    assert _optimiser_steps(sample, tmp_path) == ["sample.py:2", "sample.py:6", "sample.py:7"]
