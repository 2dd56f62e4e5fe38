"""A Dagster run whose process was SIGKILLed is reported failed, naming the cobalt run to resume; a run whose
process still works is left alone (issue 33: Dagster's own run records stayed STARTED after a kill)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

import cobalt_dagster
from cobalt_dagster._abandoned import fail_abandoned

pytestmark = pytest.mark.slow

# A job executed in this process (as cobalt records a run, or runs one through Dagster), which says it
# started and then waits on stdin: killed there, it leaves its Dagster run STARTED.
JOB = """
import sys
import dagster as dg

@dg.op
def wait() -> None:
    print("started", flush=True)
    sys.stdin.readline()

@dg.job
def eval_job():
    wait()

eval_job.execute_in_process(instance=dg.DagsterInstance.get(), tags={"dagster/partition": sys.argv[1]})
"""


def _start(home: Path, partition: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", JOB, partition], text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env={**os.environ, "DAGSTER_HOME": str(home)})
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "started"  # the op runs: its run is STARTED
    return proc


def _sensor(root: Path) -> Any:
    """cobalt's sensor of a project of one experiment under `root`."""
    (root / "experiments").mkdir(parents=True)
    (root / "cobalt.toml").write_text("")
    (root / "experiments" / "echo.cobalt.py").write_text(
        "from cobalt_lib import Dataset, Evaluator, experiment\n\n"
        "@experiment('echo', Dataset([{'input': 'a', 'expected_output': 'a'}]),\n"
        "            evaluators=[Evaluator(name='exact', type='exact-match')])\n"
        "def echo(ctx):\n    return ctx.input\n")
    return cobalt_dagster.build_definitions(root).resolve_sensor_def(cobalt_dagster.SENSOR)


def test_a_killed_runs_dagster_run_is_failed_naming_its_resume_and_a_live_one_is_left(tmp_path: Path) -> None:
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    killed, working = _start(home, "20261202-killed"), _start(home, "20261202-working")
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        instance = dg.DagsterInstance.from_config(str(home))
        by_partition = {r.dagster_run.tags["dagster/partition"]: r.dagster_run.run_id
                        for r in instance.get_run_records()}
        assert {p: instance.get_run_by_id(i).status for p, i in by_partition.items()} == {  # type: ignore[union-attr]
            "20261202-killed": dg.DagsterRunStatus.STARTED, "20261202-working": dg.DagsterRunStatus.STARTED}

        # What cobalt's sensor does at its next tick (a daemon's, here one evaluated in process).
        with dg.build_sensor_context(instance=instance) as context:
            _sensor(tmp_path / "proj")(context)
        dead = instance.get_run_by_id(by_partition["20261202-killed"])
        assert dead is not None and dead.status == dg.DagsterRunStatus.FAILURE
        [failure] = instance.all_logs(dead.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert failure.message == (f"The run's process (pid {killed.pid}) ended without finishing the run (killed?). "
                                   "The cobalt run keeps every finished item: `cobalt run --resume 20261202-killed` "
                                   "finishes it.")
        alive = instance.get_run_by_id(by_partition["20261202-working"])
        assert alive is not None and alive.status == dg.DagsterRunStatus.STARTED
        assert fail_abandoned(instance) == []  # once: a failed run is not STARTED any more
    finally:
        working.communicate("go\n", timeout=600)
    assert working.returncode == 0
    done = dg.DagsterInstance.from_config(str(home)).get_run_by_id(by_partition["20261202-working"])
    assert done is not None and done.status == dg.DagsterRunStatus.SUCCESS  # it finished on its own
