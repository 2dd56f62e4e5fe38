"""Grader files: a Python module holding one grader, in a variable named `grader` or as its only one."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..._errors import ConfigError
from ..._tracebacks import line_in
from ._deck import Grader


def resolve_grader_path(path: str | Path, root: Path | None = None) -> Path:
    """`path` as given when absolute or present from the working directory, else under `root`."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute() or root is None or candidate.exists():
        return candidate.resolve()
    return (root / candidate).resolve()


def load_grader(path: str | Path, root: Path | None = None) -> Grader:
    """The grader defined by the Python file at `path` (relative paths also tried under `root`).

    The module's variable `grader` wins when it holds a grader; otherwise the module must hold
    exactly one grader. Anything else is one ConfigError naming the file and what to change.
    """
    file = resolve_grader_path(path, root)
    if not file.is_file():
        raise ConfigError(f"Grader file {path} does not exist{f' (looked in {root})' if root else ''}; "
                          "pass the path of a .py file that defines grader = grader('name').spec(...).")
    if file.suffix != ".py":
        raise ConfigError(f"Grader file {file} is not a Python file; a grader is a .py module holding "
                          "grader = grader('name').spec(...).")
    namespace = _execute(file)
    found = _pick(namespace, file)
    return dataclasses.replace(found, source=str(file))


def _execute(file: Path) -> dict[str, Any]:
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:10]
    name = f"cobalt_grader_{file.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"Grader file {file} cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up while it runs
    try:
        spec.loader.exec_module(module)
    except ConfigError as exc:
        raise ConfigError(f"Grader file {file}: {exc}") from None
    except Exception as exc:
        where = _user_line(exc, file)
        raise ConfigError(f"Grader file {file} failed to load{where}: {type(exc).__name__}: {exc}") from None
    finally:
        sys.modules.pop(name, None)
    return vars(module)


def _user_line(exc: BaseException, file: Path) -> str:
    line = line_in(exc, file)
    return f" (line {line})" if line else ""


def _pick(namespace: dict[str, Any], file: Path) -> Grader:
    named = namespace.get("grader")
    if isinstance(named, Grader):
        return named
    graders = {name: value for name, value in namespace.items()
               if isinstance(value, Grader) and not name.startswith("_")}
    if len(graders) == 1:
        return next(iter(graders.values()))
    if not graders:
        raise ConfigError(f"Grader file {file} defines no grader; add grader = grader('name').spec('...') "
                          "(from cobalt_lib import grader).")
    raise ConfigError(f"Grader file {file} defines {len(graders)} graders ({', '.join(sorted(graders))}); "
                      "name the one to use `grader`.")
