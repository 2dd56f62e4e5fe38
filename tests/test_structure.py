"""The codebase's structural rules: module and function size, no import cycles, light imports, `__all__`.

Every check reads the files on disk (`cobalt_lib/`, `cobalt_dagster/`), so a module added later is covered
with no edit here. A failure names what to split or untangle and by how much.

The import graph is built from source with `ast`, from the imports that run when a module is imported:
module level, including class bodies and `try`/`if` blocks, but not function bodies nor
`if TYPE_CHECKING:` blocks. Its nodes are modules; a package's `__init__` is the node named after the
package. Edges:

- `import a.b.c` and `from a.b.c import name` are edges to `a.b.c`; `from a.b import c`, where `c` is a
  submodule, is an edge to `a.b.c`, otherwise to `a.b` (its `__init__`). Relative imports resolve first.
- Importing `a.b.c` imports the packages `a` and `a.b` first, so it is also an edge to each of them, unless
  it is a package the importing module lives in (already in `sys.modules` by the time the module runs).
  This is the edge behind the import-time cycles that go through an `__init__`'s re-exports. An *explicit*
  import of one's own package (`from cobalt_lib.run import X` in `cobalt_lib/run/_stages.py`) stays an
  edge, and closes a cycle with the package's re-export of that module.
- A package whose import-time code imports every submodule found by `pkgutil.iter_modules(__path__)`
  (commands registering themselves on import) has an edge to each of its direct submodules. Other
  dynamic imports (`importlib.import_module` of a computed name) are not seen.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cobalt_lib", "cobalt_dagster")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

#: What `import cobalt_lib` must not load, and what the CLI module (`cobalt --help`) must not load.
HEAVY_FOR_LIBRARY = ("dagster", "openai", "anthropic", "duckdb", "pandas", "mcp", "rich", "typer", "numpy",
                     "httpx", "aiohttp")
HEAVY_FOR_CLI = ("dagster", "openai", "anthropic", "duckdb", "pandas", "mcp", "numpy")


# --------------------------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class Module:
    name: str  # dotted; a package's `__init__` is the package's name
    path: Path
    is_package: bool

    @property
    def package(self) -> str:
        """The package relative imports resolve against."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def rel(self, root: Path) -> str:
        return self.path.relative_to(root).as_posix()


def discover(root: Path, packages: Sequence[str]) -> dict[str, Module]:
    """Every `.py` file under the given top-level packages, by dotted module name."""
    modules: dict[str, Module] = {}
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join(parts)
            modules[name] = Module(name, path, is_package)
    return modules


def parse(module: Module) -> ast.Module:
    return ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))


# --------------------------------------------------------------------------------------------- sizes


def oversized_modules(modules: dict[str, Module], root: Path, limit: int) -> list[str]:
    found: list[tuple[int, str]] = []
    for module in modules.values():
        lines = len(module.path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append((lines, f"{module.rel(root)} ({module.name}): {lines} lines"))
    return [text for _, text in sorted(found, reverse=True)]


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method, nested ones included, with a qualified name (`Class.method`, `f.inner`)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """From the `def` line (decorators excluded) to the last line of the body."""
    assert node.end_lineno is not None
    return node.end_lineno - node.lineno + 1


def oversized_functions(modules: dict[str, Module], root: Path, limit: int) -> list[str]:
    found: list[tuple[int, str]] = []
    for module in modules.values():
        for qualname, node in functions(parse(module)):
            lines = function_lines(node)
            if lines > limit:
                found.append((lines, f"{module.rel(root)}:{node.lineno} {module.name}.{qualname}: {lines} lines"))
    return [text for _, text in sorted(found, reverse=True)]


# --------------------------------------------------------------------------------------------- import graph


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_time_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported: module level, and on into class bodies and
    `if`/`try`/`with`/loop blocks, but not into functions nor `if TYPE_CHECKING:` blocks. A compound
    statement comes before the statements of its blocks."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        yield node
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from import_time_statements(node.body)
            yield from import_time_statements(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from import_time_statements(block)
        elif isinstance(node, ast.ClassDef | ast.With | ast.AsyncWith):
            yield from import_time_statements(node.body)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While):
            yield from import_time_statements(node.body)
            yield from import_time_statements(node.orelse)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                yield from import_time_statements(case.body)


def _evaluated(node: ast.stmt) -> list[ast.AST]:
    """What a statement itself evaluates, leaving out the blocks of a compound statement."""
    if isinstance(node, ast.If | ast.While):
        return [node.test]
    if isinstance(node, ast.For | ast.AsyncFor):
        return [node.iter]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [item.context_expr for item in node.items]
    if isinstance(node, ast.Match):
        return [node.subject]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    if isinstance(node, ast.Try | ast.TryStar):
        return []
    return [node]


def _scans_own_path(node: ast.AST) -> bool:
    """Calls `pkgutil.iter_modules(__path__)`: a package finding its submodules, to import them all."""
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Name) \
                and call.args[0].id == "__path__":
            func = call.func
            if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "iter_modules":
                return True
    return False


def discovery_line(tree: ast.Module) -> int | None:
    """Where a package's import-time code imports every submodule it finds on `__path__`, directly or
    through a function of the module called at import time (commands or kinds registering themselves)."""
    local = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    for statement in import_time_statements(tree.body):
        for expr in _evaluated(statement):
            if _scans_own_path(expr):
                return statement.lineno
            for call in ast.walk(expr):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in local \
                        and _scans_own_path(local[call.func.id]):
                    return call.lineno
    return None


def _resolve(module: Module, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = module.package.split(".")
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


#: module -> imported module -> line of the (first) import statement
Graph = dict[str, dict[str, int]]


def import_graph(modules: dict[str, Module], implied_parents: bool = True) -> Graph:
    graph: Graph = {name: {} for name in modules}
    for module in modules.values():
        tree = parse(module)
        targets: list[tuple[str, int]] = []
        line = discovery_line(tree) if module.is_package else None
        if line is not None:  # every direct submodule, imported by discovery
            targets.extend((name, line) for name in modules if name.rpartition(".")[0] == module.name)
        for node in import_time_statements(tree.body):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                targets.extend((alias.name, node.lineno) for alias in node.names)
                continue
            base = _resolve(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append((sub if sub in modules else base, node.lineno))
        own_packages = set(_ancestors(module.name)) | ({module.name} if module.is_package else set())
        edges = graph[module.name]
        for target, line in targets:
            implied = [p for p in _ancestors(target) if p not in own_packages] if implied_parents else []
            for name in (*implied, target):
                if name in modules:
                    edges.setdefault(name, line)
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components with a cycle only (more than one node, or a self-loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return sorted(found)


def shortest_cycle(graph: Graph, start: str, within: set[str]) -> list[str]:
    """The shortest cycle through `start` inside one component, as `[start, ..., start]`."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node]):
            if child not in within:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"{start} is in a component but on no cycle")


def cycles(graph: Graph) -> list[list[str]]:
    """For each cyclic component, the shortest cycle through each of its members, without repeats."""
    result: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for component in strongly_connected(graph):
        for member in component:
            cycle = shortest_cycle(graph, member, set(component))
            ring = cycle[:-1]
            pivot = ring.index(min(ring))
            canonical = (*ring[pivot:], *ring[:pivot])
            if canonical not in seen:
                seen.add(canonical)
                result.append([*canonical, canonical[0]])
    return result


def describe_cycle(graph: Graph, modules: dict[str, Module], root: Path, cycle: list[str]) -> str:
    where = ", ".join(f"{modules[a].rel(root)}:{graph[a][b]}" for a, b in pairwise(cycle))
    return f"{' -> '.join(cycle)}  (imports at {where})"


# --------------------------------------------------------------------------------------------- import weight


#: What the `cobalt` console script runs for `cobalt --help`, up to the exit.
HELP = ("import sys\nsys.argv = ['cobalt', '--help']\nfrom cobalt_lib.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass")


def loaded_modules(statement: str) -> list[str]:
    code = f"{statement}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, f"`python -c {statement!r}` failed:\n{result.stderr}"
    names: list[str] = json.loads(result.stdout.splitlines()[-1])
    return names


def import_chain(statement: str, target: str) -> str:
    """Who first imported `target`, from `python -X importtime`: `cobalt_lib -> cobalt_lib.x -> target`."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True,
                            cwd=ROOT, check=False)
    rows: list[tuple[int, str]] = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "imported package" in line:
            continue
        field = line.rsplit("|", 1)[1]
        name = field.strip()
        rows.append(((len(field) - len(field.lstrip()) - 1) // 2, name))
    for i, (depth, name) in enumerate(rows):
        if name.split(".")[0] != target:
            continue
        chain = [name]
        for parent_depth, parent in rows[i + 1:]:  # a parent is printed after its children
            if parent_depth < depth:
                chain.append(parent)
                depth = parent_depth
        outermost = max(k for k, module in enumerate(chain) if module.split(".")[0] == target)
        return " -> ".join(reversed(chain[outermost:]))  # up to the target package's outermost module
    return f"{target} (importer not found)"


def heavy_report(statement: str, heavy: Sequence[str]) -> list[str]:
    loaded = {name.split(".")[0] for name in loaded_modules(statement)}
    return [import_chain(statement, name) for name in heavy if name in loaded]


# --------------------------------------------------------------------------------------------- the rules


MODULES = discover(ROOT, PACKAGES)
SUBPACKAGES = sorted(m.name for m in MODULES.values() if m.is_package and m.name.split(".")[0] == "cobalt_lib")


def test_the_tree_is_found() -> None:
    assert "cobalt_lib" in MODULES and "cobalt_dagster" in MODULES
    assert "cobalt_lib.run._plan" in MODULES and "cobalt_lib.run" in SUBPACKAGES


def test_no_module_over_600_lines() -> None:
    offenders = oversized_modules(MODULES, ROOT, MAX_MODULE_LINES)
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines; split them:\n" + "\n".join(offenders)


def test_no_function_over_80_lines() -> None:
    offenders = oversized_functions(MODULES, ROOT, MAX_FUNCTION_LINES)
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines; split them:\n" + "\n".join(offenders)


def test_no_import_cycle() -> None:
    graph = import_graph(MODULES)
    found = [describe_cycle(graph, MODULES, ROOT, cycle) for cycle in cycles(graph)]
    assert not found, "module-level import cycles:\n" + "\n".join(found)


def test_import_cobalt_lib_is_light() -> None:
    found = heavy_report("import cobalt_lib", HEAVY_FOR_LIBRARY)
    assert not found, "`import cobalt_lib` loads heavy packages (first importer chain):\n" + "\n".join(found)


def test_cli_import_is_light() -> None:
    found = heavy_report("import cobalt_lib.cli", HEAVY_FOR_CLI)
    assert not found, "`import cobalt_lib.cli` loads heavy packages:\n" + "\n".join(found)


def test_cli_help_is_light() -> None:
    found = heavy_report(HELP, HEAVY_FOR_CLI)
    assert not found, "`cobalt --help` (the console script's main) loads heavy packages:\n" + "\n".join(found)


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_package_all_is_importable(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{MODULES[package].rel(ROOT)} ({package}) defines no __all__"
    assert all(isinstance(name, str) for name in names), f"{package}.__all__ holds a non-string"
    duplicates = sorted({name for name in names if list(names).count(name) > 1})
    assert not duplicates, f"{package}.__all__ lists names twice: {duplicates}"
    missing: list[str] = []
    for name in names:
        try:
            exec(f"from {package} import {name}", {})
        except ImportError:
            missing.append(name)
    assert not missing, f"{package}.__all__ names that `from {package} import ...` cannot import: {missing}"


# --------------------------------------------------------------------------------------------- the checks can fail


def _tree(root: Path, files: dict[str, str]) -> dict[str, Module]:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return discover(root, ["pkg"])


#: A package re-exporting its private modules, a private module importing a sibling, and imports of the
#: package's own `__init__` only under TYPE_CHECKING and inside a function: no cycle.
CLEAN = {
    "pkg/__init__.py": "from .sub import A\n",
    "pkg/sub/__init__.py": "from ._a import A\nfrom ._b import B\n",
    "pkg/sub/_a.py": "from ._b import B\nfrom pkg.sub import _b\nA = 1\n",
    "pkg/sub/_b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import A\n"
                      "def f():\n    from pkg.sub import A\n    return A\nB = 2\n"),
}


def test_cycle_check_passes_a_clean_tree(tmp_path: Path) -> None:
    assert cycles(import_graph(_tree(tmp_path, CLEAN))) == []


def test_cycle_check_reports_a_module_importing_its_own_package(tmp_path: Path) -> None:
    modules = _tree(tmp_path, {**CLEAN, "pkg/sub/_c.py": "from pkg.sub import A\n",
                               "pkg/sub/__init__.py": "from ._a import A\nfrom ._c import A as C\n"})
    graph = import_graph(modules)
    assert cycles(graph) == [["pkg.sub", "pkg.sub._c", "pkg.sub"]]
    assert describe_cycle(graph, modules, tmp_path, cycles(graph)[0]) == (
        "pkg.sub -> pkg.sub._c -> pkg.sub  (imports at pkg/sub/__init__.py:2, pkg/sub/_c.py:1)")


def test_cycle_check_follows_the_implied_parent_package(tmp_path: Path) -> None:
    modules = _tree(tmp_path, {
        **CLEAN,
        "pkg/sub/_a.py": "from pkg.other._y import Y\nA = 1\n",
        "pkg/other/__init__.py": "from ._x import X\n",
        "pkg/other/_x.py": "from pkg.sub._b import B\nX = 1\n",
        "pkg/other/_y.py": "Y = 1\n",
    })
    assert cycles(import_graph(modules, implied_parents=False)) == []
    assert cycles(import_graph(modules)) == [["pkg.other", "pkg.other._x", "pkg.sub", "pkg.sub._a", "pkg.other"]]


def test_cycle_check_sees_submodules_imported_by_discovery(tmp_path: Path) -> None:
    register = ("import importlib, pkgutil\n"
                "def _register():\n    for m in pkgutil.iter_modules(__path__):\n"
                "        importlib.import_module(f'{__name__}.{m.name}')\n"
                "_register()\n")
    modules = _tree(tmp_path, {**CLEAN, "pkg/cli/__init__.py": register, "pkg/cli/_app.py": "app = 1\n",
                               "pkg/cli/_run.py": "from ._app import app\n"})
    graph = import_graph(modules)
    assert set(graph["pkg.cli"]) == {"pkg.cli._app", "pkg.cli._run"}
    assert cycles(graph) == []
    (tmp_path / "pkg/cli/_run.py").write_text("from pkg.cli import main\n", encoding="utf-8")
    assert cycles(import_graph(modules)) == [["pkg.cli", "pkg.cli._run", "pkg.cli"]]


def test_size_checks_report_what_to_split(tmp_path: Path) -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(80))
    source = f"class C:\n    @staticmethod\n    def big():\n{body}"
    modules = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": source})
    assert oversized_functions(modules, tmp_path, 80) == ["pkg/m.py:3 pkg.m.C.big: 81 lines"]
    assert oversized_functions(modules, tmp_path, 81) == []
    assert oversized_modules(modules, tmp_path, 80) == ["pkg/m.py (pkg.m): 83 lines"]


def test_cobalt_dagster_imports_only_public_cobalt_lib_namespaces() -> None:
    """The Dagster layer builds on the declared stage API (`cobalt_lib.run`, `.results`, `.gates`...),
    never on a private module, so the library can rearrange its insides freely."""
    private = []
    for path in sorted((Path(__file__).resolve().parents[1] / "cobalt_dagster").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            if module.startswith("cobalt_lib") and any(part.startswith("_") for part in module.split(".")):
                private.append(f"{path.name}:{node.lineno} {module}")
    assert private == [], private
