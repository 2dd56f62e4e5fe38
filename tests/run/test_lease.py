"""Run liveness: the lease a run's process renews in the store, read by every reader, with clocks injected."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import shifted_store
from stores import MakeStore

from cobalt_lib import ConfigError, Dataset, Evaluator, Store, experiment, load_config
from cobalt_lib.run import LeaseRenewer, lease, resume_request

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
COBALT = str(Path(sys.executable).parent / "cobalt")


class Clock:
    """A clock that moves only when told (`advance`), or by `step` on every reading."""

    def __init__(self, start: datetime = T0, step: timedelta = timedelta(0)) -> None:
        self.at = start
        self.step = step
        self.readings = 0
        self.read_enough = threading.Event()
        self.enough = 0

    def __call__(self) -> datetime:
        self.readings += 1
        if self.enough and self.readings >= self.enough:
            self.read_enough.set()
        self.at += self.step
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def _start(store: Store, run_id: str = "r") -> None:
    store.start_run({"run_id": run_id, "experiment": "qa", "started_at": T0.isoformat(), "tags": [], "config": {}})


def _seen(store: Store, run_id: str = "r") -> dict[str, object]:
    """What every reader says of the run: runs(), get_run, run_status, cobalt_query's view, unrecorded_runs."""
    from cobalt_lib.store._readonly import read_only_connection, read_only_postgres

    with (read_only_connection(store, memory_limit="256MB", threads=1) if store.backend.name == "duckdb"
          else read_only_postgres(store, seconds=30)) as con:
        [(snapshot,)] = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchall()
    return {"runs": store.runs()[0]["status"], "get_run": store.get_run(run_id)["status"],  # type: ignore[index]
            "run_status": store.run_status(run_id), "snapshot": snapshot,
            "unrecorded": [r["run_id"] for r in store.unrecorded_runs(["qa"])]}


def _all(status: str) -> dict[str, object]:
    return {"runs": status, "get_run": status, "run_status": status, "snapshot": status,
            "unrecorded": [] if status == "running" else ["r"]}


def test_a_run_whose_renewals_stop_reads_incomplete_once_its_lease_expires(make_store: MakeStore) -> None:
    clock = Clock()
    store = make_store(now=clock)
    _start(store)  # leased until T0 + 60 s
    renewer = LeaseRenewer(store, "r", seconds=60)
    clock.advance(50)
    assert renewer.renew() and renewer.renewals == 1  # until T0 + 110 s
    clock.advance(59)
    assert _seen(store) == _all("running")  # past the first lease: the renewal kept it
    clock.advance(2)  # T0 + 111 s: no renewal since T0 + 50 s
    assert _seen(store) == _all("incomplete")
    assert renewer.renew() is True and _seen(store) == _all("running")  # a late renewal: alive again


def test_a_finished_run_is_never_renewed_back_to_running(make_store: MakeStore) -> None:
    clock = Clock()
    store = make_store(now=clock)
    _start(store)
    store.finish_run({"run_id": "r", "experiment": "qa", "status": "completed", "started_at": T0.isoformat(),
                      "tags": [], "config": {}}, [], [])
    assert store.renew_lease("r", 60) is False and store.renew_lease("nope", 60) is False
    assert store.run_status("r") == "completed" and store.get_run("r")["lease_until"] is None  # type: ignore[index]


def test_a_running_renewer_keeps_the_run_running_while_time_passes(make_store: MakeStore) -> None:
    store = make_store(now=lambda: T0)
    _start(store)
    ticking = Clock(step=timedelta(seconds=30))  # each renewal reads it once: 30 s pass per renewal
    ticking.enough = 5
    with LeaseRenewer(store.like(now=ticking), "r", seconds=60, every=0.001) as renewer:
        assert ticking.read_enough.wait(60), "the renewer never renewed five times"
    assert renewer.renewals >= 5 and renewer.failures == 0
    last = ticking.at  # the renewer has stopped: this is when it last renewed
    assert last >= T0 + timedelta(seconds=150)  # far past the lease written at the start
    assert _seen(store.like(now=lambda: last + timedelta(seconds=59))) == _all("running")
    assert _seen(store.like(now=lambda: last + timedelta(seconds=61))) == _all("incomplete")


def test_nested_lease_blocks_share_one_renewer_stopped_by_the_outermost(make_store: MakeStore) -> None:
    store = make_store()
    _start(store)
    # another Store object on the same store (a DuckDB file by another spelling of its path)
    same = Store(store.path.parent / "." / store.path.name) if store.backend.name == "duckdb" else store.like()
    with lease(store, "r") as outer:
        with lease(same, "r") as inner:
            assert inner is outer and outer._thread is not None
        assert outer._thread is not None  # the outer block still holds it
        with lease(store, "other") as another:
            assert another is not outer
    assert outer._thread is None and another._thread is None


def test_a_run_row_without_a_lease_counts_as_leased_for_one_lease_from_its_start(make_store: MakeStore) -> None:
    store = make_store()
    # As a cobalt from before leases wrote it: no lease_until.
    store.write({"runs": [{"run_id": "r", "experiment": "qa", "status": "running",
                                 "started_at": T0.isoformat(), "tags": [], "config": {}}]})
    assert _seen(store.like(now=lambda: T0 + timedelta(seconds=59))) == _all("running")
    assert _seen(store.like(now=lambda: T0 + timedelta(seconds=61))) == _all("incomplete")


def test_the_lease_length_comes_from_the_environment(make_store: MakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(now=lambda: T0)
    monkeypatch.setenv("COBALT_LEASE_SECONDS", "5")
    _start(store)
    assert store.get_run("r")["lease_until"] == T0 + timedelta(seconds=5)  # type: ignore[index]
    assert LeaseRenewer(store, "r").every == pytest.approx(5 / 3)
    monkeypatch.setenv("COBALT_LEASE_SECONDS", "soon")
    with pytest.raises(ConfigError, match=r"^COBALT_LEASE_SECONDS='soon' is not a positive number of seconds"):
        _start(store, "r2")


@pytest.mark.slow
def test_a_renewal_that_meets_another_process_s_lock_fails_quietly_and_the_next_one_lands(tmp_path: Path) -> None:
    # DuckDB only: a file's lock held by another process (a team store's renewal waits on no lock)
    path = tmp_path / "s.duckdb"
    clock = Clock()
    store = Store(path, now=clock)
    _start(store)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys\ncon = duckdb.connect(sys.argv[1])\n"
                               "print('locked', flush=True)\nsys.stdin.readline()", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # a notebook, say
    assert holder.stdout is not None and holder.stdin is not None
    renewer = LeaseRenewer(store, "r", seconds=60, every=0.2)  # gives up on the lock after 0.1 s
    try:
        assert holder.stdout.readline().strip() == "locked"
        clock.advance(30)
        assert renewer.renew() is False  # no exception: the run goes on
        assert (renewer.renewals, renewer.failures) == (0, 1) and "lock" in str(renewer.last_error)
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    assert store.get_run("r")["lease_until"] == T0 + timedelta(seconds=60)  # type: ignore[index]
    clock.advance(10)
    assert renewer.renew() is True  # the next tick
    assert store.get_run("r")["lease_until"] == T0 + timedelta(seconds=100)  # type: ignore[index]


_EXPERIMENT = '''
import sys
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("stuck", Dataset([{"input": "q", "expected_output": "a"}]),
            evaluators=[Evaluator(name="exact", type="exact-match")])
def agent(ctx):
    print("AGENT CALLED", file=sys.stderr, flush=True)
    sys.stdin.readline()  # until the test kills the process
    return "a"
'''


@pytest.mark.slow
def test_a_kill_9_cobalt_run_reads_incomplete_once_its_short_lease_expires(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "stuck.cobalt.py").write_text(_EXPERIMENT)
    env = {**os.environ, "COBALT_LEASE_SECONDS": "3"}
    proc = subprocess.Popen([COBALT, "run", "--no-dagster"], cwd=project, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        for line in proc.stderr:  # the run is started and its agent called: the row says running
            if "AGENT CALLED" in line:
                break
        else:
            pytest.fail("the agent was never called")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    killed_at = datetime.now(UTC)
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    [row] = store.query("SELECT run_id, status, lease_until FROM runs")
    assert row["status"] == "running"  # as the killed process left it: it could not mark itself
    assert row["lease_until"] <= killed_at + timedelta(seconds=3)  # the environment's lease, not 60 s
    after = Store(store.path, now=lambda: killed_at + timedelta(seconds=3.5))
    assert after.run_status(row["run_id"]) == "incomplete"
    assert [r["status"] for r in after.runs()] == ["incomplete"]


def test_a_leased_run_cannot_be_resumed_and_one_whose_lease_expired_can(project: Path) -> None:
    (project / "cobalt.toml").write_text("")
    config = load_config(project)
    exp = experiment("qa", Dataset([{"input": "q", "expected_output": "a"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match")])
    path = Store.for_config(config).path
    row = {"experiment": "qa", "started_at": T0.isoformat(), "tags": [], "config": {"dataset": {"size": 1}}}
    shifted_store(path, 24).start_run({"run_id": "20260301120000-aaaaaaaa", **row})  # leased for a day
    with pytest.raises(ConfigError, match=r"^Run 20260301120000-aaaaaaaa of 'qa' is still running \(started by "
                                          r"process \d+ on .+; its lease runs until 20\d\d-[^;]+\); stop it"):
        resume_request(exp, config, "aaaaaaaa")
    shifted_store(path, -2).start_run({"run_id": "20260301120000-bbbbbbbb", **row})  # its lease ran out
    assert resume_request(exp, config, "bbbbbbbb").run_id == "20260301120000-bbbbbbbb"
