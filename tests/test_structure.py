"""The codebase's structural rules: module and function size, light imports, `__all__`, and the import
layers.

Every check reads the files on disk (`cobalt_lib/`, `cobalt_dagster/`), so a module added later is covered
with no edit here. A failure names what to split or untangle and by how much.

The import layers and the absence of import cycles are import-linter contracts (`[tool.importlinter]` in
pyproject.toml, also run by `.ci/run`): they see every import, inside functions too. Here they run once,
and once more on a copy of the tree with a violation planted, to show they can fail.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grimp
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


# --------------------------------------------------------------------------------------------- import contracts


def lint_imports(root: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the tree under `root`, by its pyproject.toml's contracts (those with the given ids,
    else all). No cache: a cached graph is keyed by file times, which a quick edit can leave unchanged."""
    code = (f"from importlinter.cli import lint_imports\n"
            f"raise SystemExit(lint_imports(limit_to_contracts={contracts!r}, no_cache=True, no_logo=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                          capture_output=True, text=True, check=False)


def own_package_imports(packages: Sequence[str]) -> list[str]:
    """Modules importing a package they are part of (not the root `cobalt_lib`, whose names load lazily)."""
    graph = grimp.build_graph(*packages, exclude_type_checking_imports=True)
    return [f"{module} imports {package}" for module in sorted(graph.modules)
            for package in sorted(graph.find_modules_directly_imported_by(module))
            if module.startswith(f"{package}.") and package != "cobalt_lib"]


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


def test_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, f"`lint-imports` (the contracts of pyproject.toml):\n{result.stdout}{result.stderr}"


def test_no_module_imports_its_own_package() -> None:
    """`from cobalt_lib.run import X` in `cobalt_lib/run/_x.py` imports a package that is itself still
    importing (no contract sees it: it is no import between siblings); import the sibling module instead."""
    found = own_package_imports(PACKAGES)
    assert not found, "modules importing their own package:\n" + "\n".join(found)


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


def test_size_checks_report_what_to_split(tmp_path: Path) -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(80))
    source = f"class C:\n    @staticmethod\n    def big():\n{body}"
    modules = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": source})
    assert oversized_functions(modules, tmp_path, 80) == ["pkg/m.py:3 pkg.m.C.big: 81 lines"]
    assert oversized_functions(modules, tmp_path, 81) == []
    assert oversized_modules(modules, tmp_path, 80) == ["pkg/m.py (pkg.m): 83 lines"]


#: One violation per contract, each planted inside a function (where an `ast` walk of module-level code
#: does not look): the contract's id in pyproject.toml, the file the import goes in, the import.
VIOLATIONS = [
    ("layers", "cobalt_dagster/_metadata.py", "from cobalt_lib.ops import run_history"),
    ("layers", "cobalt_lib/run/_plan.py", "from cobalt_dagster import record_run"),
    ("engine", "cobalt_lib/store/_store.py", "from cobalt_lib.run import summarise"),
    ("acyclic", "cobalt_lib/run/_plan.py", "from cobalt_lib.run._execute import execute"),
    ("adapters", "cobalt_lib/mcp/_read_tools.py", "from cobalt_lib.pages import write_report"),
    ("dagster", "cobalt_lib/results/_direction.py", "import dagster"),
    ("dagster-api", "cobalt_lib/ops/_clean.py", "from cobalt_dagster._instance import forget_runs"),
    ("lib-api", "cobalt_dagster/_metadata.py", "from cobalt_lib.store._store import Store"),
]


@pytest.fixture(scope="module")
def clean_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages and pyproject.toml copied elsewhere, where every contract holds."""
    root = tmp_path_factory.mktemp("tree")
    for top in PACKAGES:
        shutil.copytree(ROOT / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root)
    result = lint_imports(root)
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.mark.parametrize(("contract", "path", "line"), VIOLATIONS, ids=[f"{v[0]}: {v[2]}" for v in VIOLATIONS])
def test_contracts_catch_an_import_inside_a_function(clean_copy: Path, tmp_path: Path, contract: str, path: str,
                                                     line: str) -> None:
    root = tmp_path / "tree"
    shutil.copytree(clean_copy, root)
    with (root / path).open("a", encoding="utf-8") as file:
        file.write(f"\n\ndef _planted() -> None:\n    {line}  # noqa\n")
    result = lint_imports(root, contract)
    assert result.returncode == 1 and "BROKEN" in result.stdout, result.stdout + result.stderr


def test_own_package_check_reports_an_import_of_ones_package(tmp_path: Path) -> None:
    _tree(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "from ._a import A\n",
                     "pkg/sub/_a.py": "A = 1\n", "pkg/sub/_b.py": "def f():\n    from pkg.sub import A\n"})
    sys.path.insert(0, str(tmp_path))
    try:
        assert own_package_imports(["pkg"]) == ["pkg.sub._b imports pkg.sub"]
    finally:
        sys.path.remove(str(tmp_path))
