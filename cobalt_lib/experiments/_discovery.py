"""Finding and loading experiment files by path (so `*.cobalt.py` names work)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path

from .._errors import CobaltError, ConfigError
from .._tracebacks import line_in
from ..config._config import Config
from ..run._identity import EXPERIMENT_MODULE_PREFIX
from ._experiment import _RECORDINGS, Experiment


def discover_files(config: Config, refused: list[str] | None = None) -> list[Path]:
    """Experiment files under `test_dir` matching any `test_match` pattern, sorted. A file whose real path
    is outside the project (a symlink out of it) is never discovered: one sentence each goes to `refused`."""
    base = Path(config.test_dir)
    base = base if base.is_absolute() else config.root / base
    if not base.is_dir():
        return []
    matched: set[Path] = set()
    for pattern in config.test_match:
        matched.update(p for p in base.glob(pattern) if p.is_file())
        if pattern.startswith("**/"):  # glob's **/ needs at least one directory level on 3.11
            matched.update(p for p in base.glob(pattern[3:]) if p.is_file())
    root = config.root.resolve()
    found: set[Path] = set()
    for path in sorted(matched):
        real = path.resolve()
        if real.is_relative_to(root):
            found.add(real)
        elif refused is not None:
            shown = path.relative_to(config.root) if path.is_relative_to(config.root) else path
            refused.append(outside_project(shown, real, root))
    return sorted(found)


def outside_project(path: Path, real: Path, root: Path) -> str:
    """The sentence that refuses an experiment file whose real path lies outside the project."""
    return (f"{path} is a link to {real}, outside the project ({root}): it is not loaded; copy the file into the "
            "project to run it.")


def load_file(path: Path) -> list[Experiment]:
    """Execute one experiment file and return the experiments it declared."""
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"Experiment file {path} does not exist.")
    module_name = EXPERIMENT_MODULE_PREFIX + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"Experiment file {path} cannot be loaded as Python.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))
    declared: list[Experiment] = []
    _RECORDINGS.append(declared)
    try:
        spec.loader.exec_module(module)
    except CobaltError:
        raise
    except SyntaxError as exc:
        raise ConfigError(f"{path}, line {exc.lineno}: syntax error ({exc.msg}).") from None
    except Exception as exc:
        line = _user_line(exc, path)
        raise ConfigError(f"{path}{line} raised {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(str(path.parent))
        _RECORDINGS.remove(declared)
    for exp in declared:
        exp.source_file = str(path)
    _refuse_duplicate_names(declared)
    return declared


def load_experiments(config: Config, files: Iterable[Path] | None = None,
                     name_filter: str | None = None, *, problems: list[str] | None = None,
                     unloaded: list[str] | None = None) -> list[Experiment]:
    """Load the given files (or every discovered one); keep names containing `name_filter`.

    With `problems`, a discovered file that does not load (a syntax error, an import error, an exception
    at import) is reported there, one sentence each, and the others still load; with `unloaded`, its sentence
    ("PATH did not load: why") goes there instead, for the caller to decide; with neither, the first such
    file raises. A file given by name always raises. A link out of the project is never loaded (`discover_files`).
    """
    experiments: list[Experiment] = []
    paths = (discover_files(config, problems) if files is None
             else list(dict.fromkeys(Path(f).resolve() for f in files)))
    for path in paths:
        try:
            experiments.extend(load_file(path))
        except CobaltError as exc:  # a syntax error, an import error, an exception at import, a bad dataset
            if (problems is None and unloaded is None) or files is not None:
                raise
            said = str(exc).rstrip(".")
            sentence = said if str(path) in said else f"{path} did not load: {said}"
            if unloaded is not None:
                unloaded.append(sentence)
            elif problems is not None:
                problems.append(skipped(sentence))
    _refuse_duplicate_names(experiments)
    if name_filter:
        experiments = [e for e in experiments if name_filter in e.name]
    return experiments


def skipped(unloaded: str) -> str:
    """The warning for a file that did not load while the others run."""
    return f"{unloaded}; its experiments are skipped, the others run."


class FilesDidNotLoad(ConfigError):
    """Discovered experiment files that did not load, where that stops the command: every one of them failed,
    or `cobalt run --ci` (where a file skipped would be a test silently not run)."""

    def __init__(self, sentences: list[str], *, where: str | None = None) -> None:
        self.sentences = list(sentences)
        n = len(sentences)
        said = "; ".join(sentences)
        if where is not None:  # nothing loaded at all: the cause is the headline
            head = (f"{said}; it is the only experiment file in {where}, so nothing ran" if n == 1 else
                    f"None of the {n} experiment files in {where} loaded, so nothing ran: {said}")
            super().__init__(head + ".")
        else:
            head = said if n == 1 else f"{n} experiment files did not load: {said}"
            super().__init__(f"{head}; `cobalt run --ci` runs nothing while an experiment file does not load "
                             "(without --ci its experiments are skipped with a warning): fix it, or move it out "
                             "of the test directory.")


def _refuse_duplicate_names(experiments: Iterable[Experiment]) -> None:
    """Runs, history, baselines and Dagster assets are keyed by experiment name: two experiments
    under one name would mix their results (and, in Dagster, clash on asset keys)."""
    seen: dict[str, Experiment] = {}
    for exp in experiments:
        first = seen.setdefault(exp.name, exp)
        if first is not exp:
            raise ConfigError(f"Experiment name {exp.name!r} is declared twice, at {_where(first)} and at "
                              f"{_where(exp)}; give each experiment its own name.")


def _where(exp: Experiment) -> str:
    line = f", line {exp.source_line}" if exp.source_line else ""
    return f"{exp.source_file or 'an unknown file'}{line}"


def _user_line(exc: BaseException, path: Path) -> str:
    line = line_in(exc, path)
    return f", line {line}," if line else ""
