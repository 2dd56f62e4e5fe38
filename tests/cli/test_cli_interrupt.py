"""Ctrl-C and SIGTERM at every moment of a default (Dagster) `cobalt run`, as a user sends them: exit 130
(143), the run stored as incomplete with its finished items or said not to have started, no gate verdict,
no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")

# STUCK=agent: items from 3 on hang in the agent; STUCK=score: in their evaluator. Each says so on stderr first.
EXPERIMENT = '''
import asyncio, os, sys
from cobalt_lib import Dataset, Evaluator, experiment, threshold

STUCK = os.environ.get("STUCK", "")

async def exact(ctx):
    if STUCK == "score" and ctx.index >= 3:
        print("cobalt-testing: paused at stuck", file=sys.stderr, flush=True)
        await asyncio.sleep(600)
    return ctx.output == ctx.item["expected_output"]

@experiment("stoppable", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(6)]),
            concurrency=2, evaluators=[Evaluator(name="exact", type="function", fn=exact)],
            assertions=[threshold("exact", 1.0)])
async def agent(ctx):
    if STUCK == "agent" and ctx.index >= 3:
        print("cobalt-testing: paused at stuck", file=sys.stderr, flush=True)
        await asyncio.sleep(600)
    return ctx.item["expected_output"]
'''


def _start(project: Path, **env: str) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "DAGSTER_HOME", "COBALT_PROJECT_DIR")}
    return subprocess.Popen([COBALT, "run", "--ci"], cwd=project, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**clean, "COBALT_TESTING": "1", **env})


def _wait_for_pause(proc: subprocess.Popen[str], moment: str) -> list[str]:
    """Read stderr up to the line a pause point (or a stuck agent or evaluator) prints: the condition, not
    a sleep."""
    assert proc.stderr is not None
    seen = []
    while True:
        line = proc.stderr.readline()
        assert line, f"the run ended before {moment}: {''.join(seen)}"
        seen.append(line)
        if f"paused at {moment}" in line:
            return seen


MOMENTS = [("before-run", {"COBALT_TEST_PAUSE": "before-run"})]
MOMENTS += [("agent", {"STUCK": "agent"}), ("score", {"STUCK": "score"})]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize(("moment", "env"), MOMENTS, ids=[m for m, _ in MOMENTS])
def test_an_interrupt_at_any_moment_is_exit_130_and_a_consistent_store(
        project: Path, moment: str, env: dict[str, str], sig: signal.Signals) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "stoppable.cobalt.py").write_text(EXPERIMENT)
    proc = _start(project, **env)
    early = _wait_for_pause(proc, moment if "COBALT_TEST_PAUSE" in env else "stuck")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    err = "".join(early) + err
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), out + err
    assert "Traceback" not in err, err
    assert "gate" not in out.lower() and "FAIL" not in out, out
    db = project / ".cobalt" / "cobalt.duckdb"
    runs = Store(db).runs() if db.exists() else []
    if moment == "before-run":  # checked, but not started: nothing to keep, and it says so
        assert runs == [], runs
        assert "interrupted before run " in err and "started; nothing was stored" in err, err
        return
    [run] = runs
    run_id = run["run_id"]
    assert run["status"] == "incomplete"
    assert (f"interrupted: finished items kept in run {run_id} (incomplete); finish it with "
            f"`cobalt run --resume {run_id}`") in err
    finished = sorted(o["item_index"] for o in Store(db).rows("outputs", run_id))
    if moment == "agent":
        # Items 0 and 1 were stored before item 3 took a slot. Item 2's agent runs beside item 3's, so the
        # signal may land between its return and its being recorded: then it is not a finished item.
        assert finished in ([0, 1], [0, 1, 2]), finished
    else:
        assert finished == list(range(6))  # every agent call, stuck in scoring: all kept


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("moment", ["import", "discovery"])
def test_an_interrupt_before_any_run_exits_cleanly_and_stores_nothing(
        project: Path, moment: str, sig: signal.Signals) -> None:
    """While Python imports the CLI, or the experiment files: nothing started, so nothing is kept; Ctrl-C
    is exit 130 with `interrupted` (not a KeyboardInterrupt traceback, nor a silent 130), and SIGTERM
    ends the process as a signal does (a shell reports 143)."""
    (project / "experiments").mkdir()
    (project / "experiments" / "stoppable.cobalt.py").write_text(EXPERIMENT)
    proc = _start(project, COBALT_TEST_PAUSE=moment)
    early = _wait_for_pause(proc, moment)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    err = "".join(early) + err
    assert "Traceback" not in err, err
    assert not (project / ".cobalt" / "cobalt.duckdb").exists()
    if sig == signal.SIGINT:
        assert (proc.returncode, err.splitlines()[-1]) == (130, "interrupted"), out + err
    else:
        assert proc.returncode in (-signal.SIGTERM, 143), out + err


def test_an_interrupt_after_the_run_is_stored_completed_says_it_completed(project: Path) -> None:
    """The Ctrl-C race: the signal lands once the run is stored `completed`, while it is being reported."""
    (project / "experiments").mkdir()
    (project / "experiments" / "stoppable.cobalt.py").write_text(EXPERIMENT)
    proc = _start(project, COBALT_TEST_PAUSE="after-finish", COBALT_DAGSTER_RECORD="off")
    early = _wait_for_pause(proc, "after-finish")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = "".join(early) + err
    [run] = Store(project / ".cobalt" / "cobalt.duckdb").runs()
    assert run["status"] == "completed" and proc.returncode == 130, err
    assert f"interrupted after run {run['run_id']} completed: every item is stored" in err, err
    assert "--resume" not in err and "(incomplete)" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_after_the_last_item_is_written_stores_and_says_the_run_completed(
        project: Path, sig: signal.Signals) -> None:
    """Issue 33 item 15 (1 of 20 Ctrl-C's): the signal lands once every item finished, while the stage closes
    (before the run row is written): every item is stored, so the run is `completed`, not `--resume`."""
    (project / "experiments").mkdir()
    (project / "experiments" / "stoppable.cobalt.py").write_text(EXPERIMENT)
    proc = _start(project, COBALT_TEST_PAUSE="stage-end", COBALT_DAGSTER_RECORD="off")
    early = _wait_for_pause(proc, "stage-end")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    err = "".join(early) + err
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    [run] = store.runs()
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), out + err
    assert run["status"] == "completed", err
    assert sorted(o["item_index"] for o in store.rows("outputs", run["run_id"])) == list(range(6))
    assert len(store.rows("scores", run["run_id"])) == 6
    assert f"interrupted after run {run['run_id']} completed: every item is stored" in err, err
    assert "--resume" not in err and "(incomplete)" not in err and "Traceback" not in err, err


VARIANTS = '''
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("grid", Dataset([{"input": f"q{i}"} for i in range(4)]),
            variants=[{"name": "one", "k": 1}, {"name": "two", "k": 2}],
            evaluators=[Evaluator(name="f", type="function", fn=lambda c: 1.0)])
def agent(ctx):
    return "a"
'''


def test_an_interrupt_after_every_run_of_a_group_is_stored_completed_says_the_group_completed(project: Path) -> None:
    """The group's Ctrl-C race: both variants' runs stored completed, then the signal; the advised `--resume GROUP`
    would be refused ("every run of group ... is completed")."""
    (project / "experiments").mkdir()
    (project / "experiments" / "grid.cobalt.py").write_text(VARIANTS)
    proc = _start(project, COBALT_TEST_PAUSE="after-finish", COBALT_DAGSTER_RECORD="off")
    early = _wait_for_pause(proc, "after-finish") + _wait_for_pause(proc, "after-finish")  # each variant's run
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = "".join(early) + err
    runs = Store(project / ".cobalt" / "cobalt.duckdb").runs()
    assert [r["status"] for r in runs] == ["completed"] * 2 and proc.returncode == 130, err
    group = runs[0]["group_id"]
    assert f"interrupted after the runs of group {group} completed: every item is stored" in err, err
    assert "--resume" not in err and "(incomplete)" not in err and "Traceback" not in err, err
