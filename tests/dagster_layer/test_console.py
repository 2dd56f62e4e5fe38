"""What `cobalt serve` prints of a Dagster process's stderr: every line as it came, but a step that failed on
a cobalt gate as one line (the block Dagster's own console logger prints for an `__ASSET_JOB` run)."""

from __future__ import annotations

import io
import os

from cobalt_dagster._console import pump

HEAD = ('2026-12-03 08:10:01 +0000 - dagster - ERROR - __ASSET_JOB - 5f0c - 4242 - late_bot__aggregates'
        '_gate_exact_min_0_75 - STEP_FAILURE - Execution of step "late_bot__aggregates_gate_exact_min_0_75" failed.')
VERDICT = "Quality gate exact >= 0.75 failed for run 20261203-081000-ab12: exact = 0, must be at least 0.75"
#: The block as Dagster's default console logger prints it (one record: the error and its stack below).
GATE_BLOCK = f"""{HEAD}

dagster._core.errors.DagsterExecutionStepExecutionError: Error occurred while executing op "late_bot__aggregates_gate":

  File "/site-packages/dagster/_core/execution/plan/utils.py", line 57, in op_execution_error_boundary
    yield

dagster._core.definitions.events.Failure: {VERDICT}

Stack Trace:
  File "/cobalt_dagster/_stages.py", line 141, in check
    raise dg.Failure(description=f"Quality gate {{gate.name}} failed for run {{run_id}}: {{verdict}}",
"""
CRASH_BLOCK = """2026-12-03 08:10:02 +0000 - dagster - ERROR - __ASSET_JOB - 5f0c - 4243 - support_bot__dataset \
- STEP_FAILURE - Execution of step "support_bot__dataset" failed.

dagster._core.errors.DagsterExecutionStepExecutionError: Error occurred while executing op "support_bot__dataset":

ValueError: the agent crashed

Stack Trace:
  File "/experiments/support_bot.cobalt.py", line 40, in support_bot
"""
RUN_HEAD = ("2026-12-03 08:10:02 +0000 - dagster - ERROR - __ASSET_JOB - 5f0c - 4240 - RUN_FAILURE - Execution of run "
            "for \"__ASSET_JOB\" failed. Steps failed: ['late_bot__aggregates_gate_exact_min_0_75'].")
#: The run's failure repeats the step's error and its stack below it.
RUN_BLOCK = f"""{RUN_HEAD}

dagster._core.definitions.events.Failure: {VERDICT}

Stack Trace:
  File "/site-packages/dagster/_core/execution/plan/execute_plan.py", line 243, in dagster_event_sequence_for_step
"""
AROUND = "2026-12-03 08:10:03 +0000 - dagster - INFO - __ASSET_JOB - 5f0c - RUN_FAILURE - Execution of run failed.\n"


def test_a_failed_gate_and_its_runs_failure_are_a_line_each_a_crash_keeps_its_stack_trace() -> None:
    read, write = os.pipe()
    out = io.StringIO()
    with os.fdopen(read, "rb") as source:
        thread = pump(source, out)
        with os.fdopen(write, "wb") as child:
            for record in ("Serving dagster-webserver on http://127.0.0.1:4000\n", GATE_BLOCK, RUN_BLOCK, AROUND,
                           CRASH_BLOCK):
                child.write(record.encode())  # each record one write, as a logger's handler makes it
                child.flush()
        thread.join()  # the pipe's end: everything is printed
    assert out.getvalue() == (f"Serving dagster-webserver on http://127.0.0.1:4000\n{HEAD} {VERDICT}\n"
                              f"{RUN_HEAD} {VERDICT}\n{AROUND}{CRASH_BLOCK}")
