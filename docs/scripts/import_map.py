"""Print hierviz's import map: floors, cycles, upward imports and imports inside functions.

Reads every ``hierviz/**/*.py`` with :mod:`ast` (nothing is imported, so it runs without torch)
and counts the imports of ``hierviz`` modules, at the top of a module and inside functions
(``import-linter`` sees both, so both count here).

- **floors**: the packages of ``hierviz`` (``hierviz.losses``, ``hierviz.cli``, ...; ``__main__``
  counts as ``cli``) as nodes,
  an edge for each import between two of them, import cycles between packages merged into one
  node; a floor is one step of the longest chain of imports (a package that imports no other
  package is on floor 1).
- **cycles**: module-level strongly connected components of the import graph (each one a set of
  modules that import each other, directly or through others).
- **upward**: imports from a package to a package above it in :data:`LAYERS` (the order of
  DESIGN.md's arrows, the same order as the ``layers`` contract in ``pyproject.toml``).
- **in functions**: imports of ``hierviz`` modules inside a function, and of other packages.

Run from the repository root::

    python3 docs/scripts/import_map.py            # the summary
    python3 docs/scripts/import_map.py --verbose  # and every floor, cycle, upward and in-function import
    python3 docs/scripts/import_map.py --with-aliases  # the 0.1 aliases' imports counted too
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "hierviz"

# DESIGN.md's arrows, top (may import everything below) to bottom (imports nothing of hierviz).
# Packages on one line are siblings. Keep in step with [tool.importlinter] in pyproject.toml.
LAYERS: list[tuple[str, ...]] = [
    ("cli", "results"),
    ("retrieval",),
    ("experiments",),
    ("features",),
    ("report",),
    ("viz",),
    ("evaluation",),
    ("training", "methods"),
    ("losses", "samplers", "models"),
    ("metrics", "data"),
    ("geometry", "hierarchy"),
    ("_registry",),
]
# Imports left out of the map (module, target): none. The deprecated aliases that reached up (0.1's
# losses.build_objective, report.load_records; 0.2's features.export_run) went in 0.4.
ALIASES: set[tuple[str, str]] = set()
# Not in a layer: the entry point and two helpers that import no hierviz.
UNLAYERED = {"__init__", "course", "notebook_html"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def resolve(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class Imports(ast.NodeVisitor):
    """Collect ``(target, lineno, in_function)`` for every import of a module."""

    def __init__(self, current: str, is_package: bool, modules: dict[str, Path]):
        self.current, self.is_package, self.modules = current, is_package, modules
        self.depth = 0
        self.found: list[tuple[str, int, bool]] = []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If):
        # ``if TYPE_CHECKING:`` imports are for annotations only (import-linter is told to skip them too)
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import):
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom):
        # one import per statement and imported module (``from a import b, c`` is one import of a,
        # unless b or c is itself a module)
        target = resolve(node, self.current, self.is_package)
        seen = []
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            module = sub if sub in self.modules else target
            if module not in seen:
                seen.append(module)
        for module in seen:
            self.found.append((module, node.lineno, self.depth > 0))


def package_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == "__main__":  # ``python -m hierviz``: the CLI's two-line entry point
        return "cli"
    return parts[1] if len(parts) > 1 else "__init__"


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one node only."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def floors(graph: dict[str, set[str]]) -> tuple[int, dict[str, int]]:
    """Longest import chain of the package graph with cycles merged (a floor per step)."""
    merged = {}
    for component in strongly_connected(graph):
        for member in component:
            merged[member] = "+".join(component)
    dag: dict[str, set[str]] = defaultdict(set)
    for node, targets in graph.items():
        a = merged.get(node, node)
        dag[a]
        for t in targets:
            b = merged.get(t, t)
            if a != b:
                dag[a].add(b)
                dag[b]
    level: dict[str, int] = {}

    def depth(node: str) -> int:
        if node not in level:
            level[node] = 0  # cycles were merged, so this is never read before it is set
            level[node] = 1 + max((depth(t) for t in dag[node]), default=0)
        return level[node]

    sys.setrecursionlimit(10_000)
    return max((depth(n) for n in dag), default=0), level


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", "-v", action="store_true", help="list every finding")
    parser.add_argument("--with-aliases", action="store_true", help="count the deprecated 0.1 aliases' imports too")
    args = parser.parse_args(argv)
    left_out = set() if args.with_aliases else ALIASES

    modules = all_modules()
    module_graph: dict[str, set[str]] = defaultdict(set)
    package_graph: dict[str, set[str]] = defaultdict(set)
    internal = in_function_internal = in_function_external = aliases = 0
    in_function: list[str] = []
    upward: list[str] = []
    rank = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
    for name, path in modules.items():
        visitor = Imports(name, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        module_graph[name]
        package_graph[package_of(name)]
        for target, lineno, in_fn in visitor.found:
            where = f"{path.relative_to(ROOT)}:{lineno}"
            if not (target == PACKAGE or target.startswith(PACKAGE + ".")):
                if in_fn:
                    in_function_external += 1
                    in_function.append(f"{where} -> {target} (outside hierviz)")
                continue
            internal += 1
            if in_fn:
                in_function_internal += 1
                in_function.append(f"{where} -> {target}")
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target == name:
                continue
            if (name, target) in left_out:
                aliases += 1
                continue
            module_graph[name].add(target)
            source_pkg, target_pkg = package_of(name), package_of(target)
            if source_pkg != target_pkg:
                package_graph[source_pkg].add(target_pkg)
                if source_pkg in rank and target_pkg in rank and rank[target_pkg] < rank[source_pkg]:
                    upward.append(f"{where}: {source_pkg} -> {target_pkg} ({'in function' if in_fn else 'top'})")
    cycles = strongly_connected(module_graph)
    package_cycles = strongly_connected(package_graph)
    n_floors, level = floors(package_graph)
    unlisted = sorted(p for p in package_graph if p not in rank and p not in UNLAYERED)

    print(f"modules: {len(modules)}")
    print(f"imports of hierviz modules: {internal} ({in_function_internal} inside functions)")
    print(f"imports of other packages inside functions: {in_function_external}")
    print(f"floors (package graph, cycles merged): {n_floors}")
    print(f"module import cycles: {len(cycles)}")
    print(f"package import cycles: {len(package_cycles)}")
    print(f"upward imports (against LAYERS): {len(upward)}")
    print(f"imports left out above (the deprecated aliases in ALIASES): {aliases}")
    if unlisted:
        print(f"packages missing from LAYERS: {', '.join(unlisted)}")
    if args.verbose:
        by_floor: dict[int, list[str]] = defaultdict(list)
        for node, lvl in level.items():
            by_floor[lvl].append(node)
        floor_rows = [f"{lvl}: {', '.join(sorted(by_floor[lvl]))}" for lvl in sorted(by_floor, reverse=True)]
        for title, rows in (
            ("floors (top first)", floor_rows),
            ("module cycles", [" <-> ".join(c) for c in cycles]),
            ("package cycles", [" <-> ".join(c) for c in package_cycles]),
            ("upward imports", upward),
            ("imports inside functions", in_function),
        ):
            print(f"\n{title}:")
            for row in rows:
                print(f"  {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
