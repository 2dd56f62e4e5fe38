"""What the worker imports before it serves: the modules a real Dagster-tracked run imported.

They are found by running one: a forked child of the (still cold) worker runs a tiny generated
experiment through `cobalt run` in a throwaway project (its own `.cobalt/dagster` instance) and reports
`sys.modules`. The list is kept per fingerprint, so a restarted worker skips that run.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

#: A tiny offline experiment with what a run commonly uses: a dataset, a built-in and a function
#: evaluator, a gate.
EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment, threshold

@experiment("warm-up", Dataset([{"input": "a", "expected_output": "a"}, {"input": "b", "expected_output": "b"}]),
            evaluators=[Evaluator(name="exact", type="exact-match", field="expected_output"),
                        Evaluator(name="short", type="function", fn=lambda ctx: len(ctx.output) < 5)],
            assertions=[threshold("exact", 0.5)])
def echo(ctx):
    return ctx.item["input"]
'''
#: Imported beside the measured list: what runs with an LLM judge need (the warm-up run has none).
EXTRA = ("aiohttp", "cobalt_lib.llm")
_LOCAL = ("__main__", "__mp_main__", "_cobalt_exp")


def modules_to_import(cache: Path) -> list[str]:
    """The cached list, else the one a warm-up run reports (and it is cached)."""
    with contextlib.suppress(OSError, ValueError):
        names = json.loads(cache.read_text(encoding="utf-8"))
        if isinstance(names, list) and names:
            return [str(n) for n in names]
    names = _measure()
    with contextlib.suppress(OSError):
        cache.write_text(json.dumps(names), encoding="utf-8")
    return names


def _measure() -> list[str]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 1
        try:
            names = _warm_up_run()
            with os.fdopen(write, "w", encoding="utf-8") as out:
                json.dump(names, out)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as answer:
        text = answer.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not text:
        raise RuntimeError(f"the warm-up run failed (exit status {os.waitstatus_to_exitcode(status)}); see above")
    return [str(n) for n in json.loads(text)]


def _warm_up_run() -> list[str]:
    """In the forked child: `cobalt run --ci` of the generated experiment; the modules it imported."""
    with tempfile.TemporaryDirectory(prefix="cobalt-warm-") as tmp:
        project = Path(tmp).resolve()
        (project / "experiments").mkdir()
        (project / "experiments" / "warm_up.cobalt.py").write_text(EXPERIMENT, encoding="utf-8")
        os.chdir(project)
        for name in ("DAGSTER_HOME", "COBALT_PROJECT_DIR", "COBALT_TESTING", "COBALT_TEST_PAUSE"):
            os.environ.pop(name, None)
        from cobalt_lib.cli import main

        try:
            main(["run", "--ci", "experiments/warm_up.cobalt.py"])
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise RuntimeError(f"the warm-up run exited {exc.code}") from None
        for name in EXTRA:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        return sorted(name for name, module in list(sys.modules.items()) if _importable(name, module, project))


def _importable(name: str, module: object, project: Path) -> bool:
    if name.startswith(_LOCAL) or module is None:
        return False
    origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
    return not origin.startswith(str(project))


def import_all(names: list[str]) -> list[str]:
    """Import each (a failure skips it: some are platform-specific or private to one release); the
    ones that failed."""
    failed = []
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:
            failed.append(name)
    return failed


def warm_caches() -> None:
    """First-use work that only fills caches a fork keeps and records nothing: the ABC subclass caches
    of Dagster's `MetadataValue` (a negative `issubclass` walks all its subclasses, about 2 ms each
    the first time), for the types run metadata holds."""
    try:
        from dagster._core.definitions.metadata.metadata_set import is_raw_metadata_type
        from dagster._core.definitions.metadata.metadata_value import MetadataValue
    except ImportError:  # private modules of one Dagster release: only a head start
        return
    kinds: list[type] = [str, int, float, bool, dict, list, tuple, set, bytes, type(None)]
    pending = list(MetadataValue.__subclasses__())
    while pending:
        kind = pending.pop()
        kinds.append(kind)
        pending.extend(kind.__subclasses__())
    for kind in kinds:
        is_raw_metadata_type(kind)


def thread_count() -> int:
    """Threads of this process, native ones included where the system tells (a fork keeps one)."""
    with contextlib.suppress(OSError):
        return len(os.listdir("/proc/self/task"))
    return threading.active_count()
