"""The `cobalt` console script: a Ctrl-C while Python is still importing the CLI is a clean exit 130
too, not a KeyboardInterrupt traceback (the CLI's own handler is not installed yet).

A Dagster-tracked `cobalt run` first offers itself to this user's warm run worker (docs/worker.md),
before the CLI is imported; when none answers it runs here, and an interactive one starts a worker in
the background for next time.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType


def main() -> None:
    args = sys.argv[1:]
    worker = _worker_module(args)
    if worker is not None:
        try:
            code = worker.hand_over(args)
        except KeyboardInterrupt:  # before the run was handed over (after, Ctrl-C is passed on to it)
            print("interrupted", file=sys.stderr)
            sys.exit(130)
        if code is not None:
            sys.exit(code)
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    try:
        cli_main()
    except SystemExit as exc:
        if worker is not None and exc.code in (0, 1, None) and _interactive(args):
            pid = worker.start_in_background()
            if pid is not None:  # a process that outlives the command is said, never left unannounced
                minutes = worker.default_idle_timeout() / 60
                print(f"cobalt: started a warm run worker (pid {pid}) so your next Dagster-tracked runs start "
                      f"about 2 s sooner; it exits after {minutes:g} minutes without a run. `cobalt worker stop` "
                      "stops it, COBALT_WORKER=off keeps runs in process.", file=sys.stderr)
        raise


def _worker_module(args: list[str]) -> ModuleType | None:
    if not args or args[0] != "run":
        return None  # every other command: not even the worker package is imported
    from . import worker

    return worker if worker.wants_worker(args) else None


def _interactive(args: list[str]) -> bool:
    """A person at a terminal: stdout a TTY, not `--ci`, not in CI, not under cobalt's tests."""
    if "--ci" in args or "--json" in args or any(os.environ.get(n) for n in ("CI", "COBALT_TESTING")):
        return False
    try:
        return os.isatty(1)
    except OSError:
        return False
