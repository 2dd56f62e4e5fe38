"""`cobalt worker start|status|stop`: this user's warm run worker for Dagster-tracked runs."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from .._errors import CobaltError
from ._app import Command, Group, app
from ._common import print_json, warn

if TYPE_CHECKING:
    from ..worker import WorkerInfo

worker_app = typer.Typer(
    name="worker", cls=Group, no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
    help="A warm process that runs Dagster-tracked `cobalt run`s without paying for Dagster's imports "
         "(about 2 s less each; docs/worker.md). Off with COBALT_WORKER=off.")
app.add_typer(worker_app)


@worker_app.command("start", cls=Command)
def start(idle_timeout: Annotated[float | None, typer.Option(
        "--idle-timeout", metavar="SECONDS", min=1,
        help="Exit after this long without a run (default 1800, or COBALT_WORKER_IDLE_TIMEOUT).")] = None,
          ) -> None:
    """Start the worker in the background (or find it running); return once it is warm.

    Example: `cobalt worker start --idle-timeout 3600`
    """
    from ..worker import WorkerError
    from ..worker import start as start_worker
    from ..worker._paths import switched_off

    try:
        info = start_worker(idle_timeout)
    except WorkerError as exc:
        raise CobaltError(str(exc)) from None
    print(f"cobalt worker running: pid {info.pid}, idle timeout {info.idle_timeout:g} s, log {info.log}")
    if switched_off():
        warn(["COBALT_WORKER=off is set: `cobalt run` in this environment will not use the worker"])


@worker_app.command("status", cls=Command)
def status(json_output: Annotated[bool, typer.Option("--json", help="Print the workers as JSON.")] = False) -> None:
    """Each worker of this Python: pid, uptime, runs served, and whether it serves this cobalt.

    Exit codes: 0 a worker serves this cobalt's runs, 1 none does.
    """
    from dataclasses import asdict

    from ..worker import workers

    found = workers()
    if json_output:
        print_json([{**asdict(w), "uptime": round(w.uptime, 3)} for w in found])
    elif not found:
        print("no cobalt worker running: `cobalt run` runs in process (start one with `cobalt worker start`)")
    else:
        for info in found:
            print(_line(info))
    raise typer.Exit(0 if any(w.matches for w in found) else 1)


@worker_app.command("stop", cls=Command)
def stop() -> None:
    """Stop this Python's workers (each finishes the runs it is serving first)."""
    from ..worker import stop as stop_workers

    stopped = stop_workers()
    for info in stopped:
        if info.running:
            print(f"cobalt worker pid {info.pid} takes no new run and exits when its {info.running} running "
                  f"run(s) finish ({info.served} runs served)")
        else:
            print(f"stopped cobalt worker pid {info.pid} ({info.served} runs served)")
    if not stopped:
        print("no cobalt worker was running", file=sys.stderr)


def _line(info: WorkerInfo) -> str:
    match = "serves this cobalt" if info.matches else "stale: another cobalt or Python (exits when idle)"
    running = f", {info.running} running" if info.running else ""
    return (f"pid {info.pid}: up {_duration(info.uptime)}, {info.served} runs served{running}, {match}; "
            f"idle timeout {info.idle_timeout:g} s, log {info.log}")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
