"""Dagster runs whose process died, marked failed: a killed run never reads STARTED for ever (issue 33).

Dagster's run monitoring cannot tell for the runs of a project's local instance: the default run launcher
has no worker health check, and a run cobalt executes in its own process (recording, `cobalt run` through
Dagster) has no launcher at all, so a SIGKILLed process leaves its run STARTED in the UI, the timeline and
the Partitions tab. Every Dagster event carries the pid of the process that sent it, and the local instance
is this machine's: a STARTED run whose RUN_START process is gone (or whose pid now names a process that
started later) is dead, and is reported failed, saying how to finish its cobalt run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

#: A process's start time is known to a clock tick; its RUN_START event comes after it started.
_SLACK_S = 1.0


def fail_abandoned(instance: dg.DagsterInstance) -> list[str]:
    """Report failed every STARTED run of `instance` whose run process died; the ids of those runs."""
    import dagster as dg

    failed = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        run = record.dagster_run
        starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_START)
        event = starts[-1].dagster_event if starts else None
        if event is None or event.pid is None or _alive(event.pid, since=starts[-1].timestamp):
            continue
        partition = run.tags.get("dagster/partition")
        finish = (f" The cobalt run keeps every finished item: `cobalt run --resume {partition}` finishes it."
                  if partition else "")
        instance.report_run_failed(run, message=f"The run's process (pid {event.pid}) ended without finishing "
                                                f"the run (killed?).{finish}")
        failed.append(run.run_id)
    return failed


def _alive(pid: int, *, since: float) -> bool:
    """Whether process `pid` of this machine runs and started by `since` (a later one reuses the pid)."""
    started = _started_at(pid)
    return started is not None and started <= since + _SLACK_S


def _started_at(pid: int) -> float | None:
    """When process `pid` started (epoch seconds), None when there is no such process or no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        boot = next(line for line in Path("/proc/stat").read_text(encoding="ascii").splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration):
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after the command name, which may hold spaces
    if len(fields) <= 19 or fields[0] == "Z":  # a zombie has ended: only its parent has not reaped it
        return None
    return int(boot.split()[1]) + int(fields[19]) / os.sysconf("SC_CLK_TCK")
