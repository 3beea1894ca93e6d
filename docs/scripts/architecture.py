"""docs/architecture.md, generated from the code: the layers, the registries and the run core's steps.

Three parts, each read from the source so that the page cannot drift from it:

* **Layers**: the ``layers`` contract of ``[tool.importlinter]`` in ``pyproject.toml`` (what
  ``lint-imports`` enforces in CI), drawn top to bottom, each package with the first line of its
  docstring, and the names of the other contracts.
* **Registries**: every registry a contributor extends, with its decorator, how many entries it
  holds and the files its built-in entries live in (``layout_table.files_rows``, the table of
  CONTRIBUTING.md), plus the metric and preset registries.
* **The run core**: the steps of :func:`hierviz.experiments.compare` and of one run, read from the
  bodies of ``_compare`` and ``_run_one`` with :mod:`ast` (the helpers they call, in order, each with
  the first line of its docstring).

Run from the repository root::

    python3 docs/scripts/architecture.py            # print the page
    python3 docs/scripts/architecture.py --write    # write docs/architecture.md
    python3 docs/scripts/architecture.py --check    # exit 1 if docs/architecture.md is stale
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from layout_table import files_rows

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "hierviz"


def _doc_line(node_or_path: ast.AST | Path) -> str:
    node = ast.parse(node_or_path.read_text(encoding="utf-8")) if isinstance(node_or_path, Path) else node_or_path
    doc = ast.get_docstring(node) or ""  # type: ignore[arg-type]
    return doc.strip().splitlines()[0].replace("|", "\\|") if doc.strip() else ""


def _module_path(name: str) -> Path:
    rel = Path(*name.split(".")[1:])
    pkg = PACKAGE / rel / "__init__.py"
    return pkg if pkg.is_file() else PACKAGE / rel.with_suffix(".py")


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def layers_part() -> list[str]:
    contracts = _contracts()
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    lines = [
        "## Layers",
        "",
        "A package imports only the packages below it; packages on one line are siblings that do not import",
        "each other. `lint-imports` checks this in CI (the `layers` contract of `pyproject.toml`).",
        "",
        "```text",
    ]
    width = max(len(p.strip()) for layer in layers for p in layer.split("|"))
    for i, layer in enumerate(layers):
        names = [p.strip() for p in layer.split("|")]
        for name in names:
            lines.append(f"{name:<{width}}  {_doc_line(_module_path(name))}")
        if i < len(layers) - 1:
            lines.append(f"{'│':>3}")
            lines.append(f"{'▼':>3}")
    lines += ["```", "", "The other contracts:", ""]
    lines += [f"- `{c['id']}`: {c['name']}" for c in contracts if c["id"] != "layers"]
    return lines


def registries_part() -> list[str]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # this checkout's hierviz
    from hierviz.experiments.preset_files import PRESETS
    from hierviz.metrics.registry import METRIC_INFO

    lines = [
        "## Registries",
        "",
        "Everything a user adds is one registration; `--import my_module` loads a module that registers it,",
        "and `report`, `--resume` and `features` find it again by name.",
        "",
        "| to add | decorator, registry | where the built-in ones live |",
        "|---|---|---|",
    ]
    lines += [f"| {what} | {how} | {files} |" for what, how, files in files_rows()]
    lines += [
        f"| a metric | `register_metric`, `METRIC_INFO` ({len(METRIC_INFO)} entries) | `hierviz/metrics/registry.py` |",
        f"| a preset | a TOML file, `PRESETS` ({len(PRESETS)} presets) | `hierviz/experiments/presets/*.toml` |",
    ]
    return lines


def _steps(path: Path, function: str) -> list[str]:
    """The calls of ``function``'s body to hierviz's own functions, in order, with their docstrings' first lines.

    A callee is defined in the same file, or imported from a ``hierviz`` module (then imported here
    to read its docstring); classes (errors, records), builtins and other libraries are left out.
    """
    import importlib

    tree = ast.parse(path.read_text(encoding="utf-8"))
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    imported = {
        (a.asname or a.name): n.module
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("hierviz")
        for a in n.names
    }
    seen, out = set(), []
    for node in ast.walk(defs[function]):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name):
            name = node.func.id
        elif (
            isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
        ):
            name = node.func.attr  # a method of the same class (``_Runs``)
        else:
            continue
        if name == function or name in seen or name[:1].isupper() or not (name in defs or name in imported):
            continue
        seen.add(name)
        if name in defs:
            doc = _doc_line(defs[name])
        else:
            obj = getattr(importlib.import_module(imported[name]), name.split(".")[-1], None)
            doc = ((getattr(obj, "__doc__", None) or "").strip().splitlines() or [""])[0].replace("|", "\\|")
        out.append((node.lineno, node.col_offset, name, doc))
    return [f"{i}. `{name}`: {doc}" for i, (_, _, name, doc) in enumerate(sorted(out), 1)]


def run_core_part() -> list[str]:
    compare_py = PACKAGE / "experiments" / "compare.py"
    run_one_py = PACKAGE / "experiments" / "run_one.py"
    lines = [
        "## The run core",
        "",
        "`hierviz compare` (and every notebook's `compare(cfg)`) validates the config, loads the data once and",
        "then trains and evaluates each method × geometry × seed. The steps of `_compare`, in the order its",
        "body calls them (`hierviz/experiments/compare.py`):",
        "",
        *_steps(compare_py, "_compare"),
        "",
        "The runs, in plan order (`_Runs.run_all`):",
        "",
        *_steps(compare_py, "run_all"),
        "",
        "Each run not reused under `--resume` (`_Runs._train`):",
        "",
        *_steps(compare_py, "_train"),
        "",
        "One run (`_run_one`, `hierviz/experiments/run_one.py`): the method's declared fields (a",
        "`hierviz.methods.Method`) give the model, the objective, the views, the training overrides and the",
        "protocol, read as typed fields, never probed:",
        "",
        *_steps(run_one_py, "_run_one"),
    ]
    return lines


def page() -> str:
    parts = [
        "# Architecture",
        "",
        "<!-- generated by docs/scripts/architecture.py from the code; edit the code or the script, not this page -->",
        "",
        "Read this before `CONTRIBUTING.md`: where each package sits, what you extend by registering, and what one",
        "`compare` call does. `python3 docs/scripts/architecture.py --write` regenerates the page;",
        "`tests/test_layering.py` fails when it is stale.",
        "",
        *layers_part(),
        "",
        *registries_part(),
        "",
        *run_core_part(),
    ]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write docs/architecture.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/architecture.md is stale")
    args = ap.parse_args(argv)
    text = page()
    if args.check:
        ok = PAGE.is_file() and PAGE.read_text(encoding="utf-8") == text
        print(
            "up to date"
            if ok
            else f"{PAGE.relative_to(ROOT)} is stale: run python3 docs/scripts/architecture.py --write"
        )
        return 0 if ok else 1
    if args.write:
        PAGE.write_text(text, encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)}")
        return 0
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
