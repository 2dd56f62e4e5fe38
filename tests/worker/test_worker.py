"""The run worker end to end: `cobalt worker start`, then `cobalt run` as a user runs it (a subprocess),
served by a forked child of the worker, against what the same run records in process."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef  # not exported by `dagster`
from worker_fixtures import COBALT, Workers, example, own_worker, workers

from cobalt_lib import Store
from cobalt_lib.worker import wants_worker

__all__ = ["example", "own_worker", "workers"]  # fixtures, imported for pytest

SUPPORT = "experiments/support_bot.cobalt.py"
CHECKS = ("gate_exact_min_0_75", "gate_every_evaluator_scored")


def _recorded(project: Path, run_id: str) -> dict[str, Any]:
    """What the project's Dagster instance holds about cobalt run `run_id`, less what differs per run."""
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(project / ".cobalt" / "dagster"))) as instance:
        [record] = instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": run_id}))
        run = record.dagster_run
        events = instance.get_records_for_run(run_id=run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        checks = sorted((e.event_log_entry.dagster_event.asset_check_evaluation_data.check_name,
                         e.event_log_entry.dagster_event.asset_check_evaluation_data.passed)
                        for e in events.records if e.event_log_entry.dagster_event is not None)
        origin = run.remote_job_origin
        return {"job": run.job_name, "status": run.status,
                "tags": {k: v for k, v in run.tags.items() if k.startswith(("cobalt", "dagster/code_location"))},
                "origin": (origin.location_name, origin.repository_origin.repository_name, origin.job_name)
                if origin else None, "checks": checks}


def _bad_file(project: Path) -> None:
    (project / "experiments" / "bad.cobalt.py").write_text("from cobalt_lib import experiment\nexperiment(\n")


def _exits(pid: int) -> bool:
    """The process ends (or is a zombie nobody reaps, in a container without an init) within 10 s:
    waited on through a pidfd, which turns readable when the process exits."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], 10)
        return bool(readable)
    finally:
        os.close(fd)


def _run_id(stdout: str) -> str:
    return next(line.split()[-1] for line in stdout.splitlines() if line.startswith("run id:"))


def test_a_run_through_the_worker_records_what_an_in_process_run_records(workers: Workers, example: Path) -> None:
    project = example
    here = workers.cobalt("run", "--ci", SUPPORT, "--add-tag", "nightly", cwd=project, COBALT_WORKER="off")
    assert here.returncode == 0, here.stdout + here.stderr
    there = workers.cobalt("run", "--ci", SUPPORT, "--add-tag", "nightly", cwd=project)
    assert there.returncode == 0, there.stdout + there.stderr
    assert workers.served(there.pid) and not workers.served(here.pid)
    assert "gate PASS exact >= 0.75" in there.stdout and "items 4 (4 ok" in there.stdout, there.stdout
    in_process, worker = _recorded(project, _run_id(here.stdout)), _recorded(project, _run_id(there.stdout))
    assert worker == in_process
    assert worker["job"] == "support_bot_eval" and worker["tags"]["cobalt.tag/nightly"] == "nightly"
    assert worker["origin"] == ("definitions.py", "__repository__", "support_bot_eval")
    assert worker["checks"] == sorted((c, True) for c in CHECKS)


def test_exit_codes_and_errors_are_the_in_process_ones(workers: Workers, example: Path) -> None:
    project = example
    _bad_file(project)
    failed = workers.cobalt("run", "--ci", SUPPORT, cwd=project, SUPPORT_BOT_BROKEN="1")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "gate FAIL exact >= 0.75" in failed.stdout
    bad = workers.cobalt("run", "--ci", "experiments/bad.cobalt.py", cwd=project)
    bad_here = workers.cobalt("run", "--ci", "experiments/bad.cobalt.py", cwd=project, COBALT_WORKER="off")
    assert (bad.returncode, bad.stderr, bad.stdout) == (2, bad_here.stderr, bad_here.stdout)
    assert bad.stderr.startswith("error: ") and "bad.cobalt.py" in bad.stderr and len(bad.stderr.splitlines()) == 1
    assert workers.served(failed.pid) and workers.served(bad.pid) and not workers.served(bad_here.pid)


EDITABLE = '''
from cobalt_lib import Dataset, Evaluator, experiment, threshold

@experiment("edited", Dataset([{"input": "q", "expected_output": "v2"}]),
            evaluators=[Evaluator(name="exact", type="exact-match", field="expected_output")],
            assertions=[threshold("exact", 1.0)])
def agent(ctx):
    return "v2"
'''


def test_an_edit_to_the_experiment_between_two_runs_is_seen(workers: Workers, example: Path) -> None:
    project = example
    path = project / "experiments" / "edited.cobalt.py"
    path.write_text('raise ValueError("version one of the file")\n')
    first = workers.cobalt("run", "--ci", str(path), cwd=project)
    path.write_text(EDITABLE)
    second = workers.cobalt("run", "--ci", str(path), cwd=project)
    assert workers.served(first.pid) and workers.served(second.pid)
    assert first.returncode == 2 and "raised ValueError: version one of the file" in first.stderr, first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    [output] = Store(project / ".cobalt" / "cobalt.duckdb").rows("outputs", _run_id(second.stdout))
    assert output["output"] == "v2"


STOPPABLE = '''
import asyncio, sys
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("stoppable", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(6)]),
            concurrency=2, evaluators=[Evaluator(name="exact", type="exact-match", field="expected_output")])
async def agent(ctx):
    if ctx.index >= 3:
        print("cobalt-testing: paused at stuck", file=sys.stderr, flush=True)
        await asyncio.sleep(600)
    return ctx.item["expected_output"]
'''


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGKILL, -9)],
                         ids=["ctrl-c", "client-killed"])
def test_a_signal_to_the_client_stops_the_run_and_keeps_finished_items(
        workers: Workers, example: Path, sig: signal.Signals, code: int) -> None:
    """Ctrl-C is passed on to the run (exit 130; SIGTERM and SIGHUP the same way); a killed client's run is
    terminated."""
    project = example
    (project / "experiments" / "stoppable.cobalt.py").write_text(STOPPABLE)
    proc = subprocess.Popen([COBALT, "run", "--ci", "experiments/stoppable.cobalt.py"], cwd=project,
                            env=workers.env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    early = []
    while "paused at stuck" not in (line := proc.stderr.readline()):  # the child writes to our pipe
        assert line, "".join(early)
        early.append(line)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)  # EOF once the run's process has exited too
    assert proc.returncode == code, out + err
    assert "Traceback" not in err, err
    assert workers.served(proc.pid)
    [run_id] = re.findall(r"interrupted: finished items kept in run (\S+) \(incomplete\)", err)
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    assert store.run_status(run_id) == "incomplete"
    assert sorted(o["item_index"] for o in store.rows("outputs", run_id)) in ([0, 1], [0, 1, 2])


def test_another_fingerprint_is_not_served(workers: Workers, example: Path) -> None:
    _bad_file(example)
    # Another locale is another fingerprint: the run (a bad file, which fails fast) stays in process.
    other_locale = workers.cobalt("run", "--ci", "experiments/bad.cobalt.py", cwd=example, LANG="C.UTF-8",
                                  LC_ALL="C.UTF-8")
    assert other_locale.returncode == 2 and other_locale.stderr.startswith("error: "), other_locale.stderr
    assert [w["matches"] for w in workers.status(LANG="C.UTF-8", LC_ALL="C.UTF-8")] == [False]
    assert not workers.served(other_locale.pid)


def test_stop_and_then_a_stale_socket_runs_in_process_and_starts_a_worker(own_worker: Workers,
                                                                           example: Path) -> None:
    [worker] = own_worker.status()
    assert worker["matches"] and worker["served"] == 0
    stopped = own_worker.cobalt("worker", "stop")
    assert stopped.returncode == 0 and f"stopped cobalt worker pid {worker['pid']}" in stopped.stdout
    assert not Path(worker["socket"]).exists()
    assert _exits(worker["pid"])
    assert own_worker.status() == []

    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(worker["socket"])  # a socket file nobody listens on, as a killed worker leaves
    stale.close()
    # A person at a terminal (stdout a TTY, no --ci, not CI): it runs in process, then starts a worker.
    env = {k: v for k, v in own_worker.env().items() if k not in ("COBALT_TESTING", "CI")}
    code, shown = _on_a_terminal([COBALT, "run", SUPPORT], example, env)
    assert code == 0, shown
    assert "PASS" in shown and "run id:" in shown and "\x1b[" in shown, shown  # in colour, as on a terminal
    # A process that outlives the command is announced, with how to stop it and turn it off.
    [announced] = re.findall(r"cobalt: started a warm run worker \(pid (\d+)\)", shown)
    started = int(announced)
    assert started != worker["pid"]
    assert b"cobalt_lib.worker" in Path(f"/proc/{started}/cmdline").read_bytes()  # it is a worker, running
    os.kill(started, signal.SIGTERM)  # no need to wait for it to warm up
    assert "`cobalt worker stop` stops it, COBALT_WORKER=off keeps runs in process." in shown.replace("\r\n", " ")


def _on_a_terminal(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run `command` with stdout and stderr on a pseudo-terminal; its exit code and what it showed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.wait(timeout=60), shown.decode(errors="replace")


def test_only_dagster_tracked_runs_are_handed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COBALT_WORKER", raising=False)
    assert wants_worker(["run", "--ci", "experiments/a.cobalt.py"])
    assert not wants_worker(["run", "--no-dagster"])
    assert not wants_worker(["show", "latest"]) and not wants_worker([])
    for off in ("off", "0", "no", "False"):
        monkeypatch.setenv("COBALT_WORKER", off)
        assert not wants_worker(["run"])
