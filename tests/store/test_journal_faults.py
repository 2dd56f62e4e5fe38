"""The journal and the store under faults (issue 33, "Lost or doubled"): a full disk during a replay, a
segment replayed after it went in, rows the store refuses for a reason of their own, values no column can
hold, an output that ends like a cut marker, a writer that waits its lock timeout at the end, lease
renewals beside the run's own writes. Real DuckDB files, real journals on disk, a real tmpfs."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakellm import FakeLLM, answer
from stores import MakeStore, project_store
from typer.testing import CliRunner

from cobalt_lib import Dataset, Evaluator, Store, experiment
from cobalt_lib.cli import app
from cobalt_lib.run._execute import RunInterrupted
from cobalt_lib.run._plan import RunPlan
from cobalt_lib.store._journal import JOURNAL_DIR, SET_ASIDE_DIR, Journal, put_in, replay_left
from cobalt_lib.store._segment import read
from cobalt_lib.store._writer import BatchWriter

T0 = "2026-03-01T12:00:00+00:00"


def _run_row(run_id: str = "r", status: str = "completed") -> dict[str, object]:
    return {"run_id": run_id, "experiment": "qa", "status": status, "started_at": T0, "tags": [], "config": {}}


def _outputs(run_id: str, indices: range, **extra: object) -> list[dict[str, object]]:
    return [{"run_id": run_id, "item_index": i, "run_index": 0, "input": "q", "output": f"a{i}", "status": "ok",
             **extra} for i in indices]


def _left_behind(store: Store, name: str, *batches: dict[str, list[dict[str, object]]],
                 work: float | None = None, finish: bool = False) -> Path:
    """A journal as a process that died (or gave up on a held store) leaves it: sealed segments, unlocked;
    with `finish`, run "r"'s final write last (its row, completed)."""
    journal = Journal(store, name)
    for batch in batches:
        journal.add(batch, add_work=("r", work) if work is not None else None)
    if finish:
        journal.add({"runs": [_run_row()], "aggregates": [], "verdicts": []}, delete_run="r",
                    delete_tables=["runs", "aggregates", "verdicts"])
    journal.close()
    return journal.directory


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MB tmpfs (root can mount one), unmounted afterwards."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(directory: Path) -> Path:
    """Fill the disk holding `directory` to the last byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


@pytest.mark.slow  # it mounts a tmpfs
def test_a_full_disk_during_a_replay_keeps_the_journal_says_so_and_the_next_replay_puts_every_row_in(
        small_disk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # DuckDB only: the disk that fills is the store file's (a team store's disk is its server's)
    store = Store(small_disk / ".cobalt" / "cobalt.duckdb")
    store.start_run(_run_row(status="running"))
    big = "x" * 20_000  # rows that need pages of their own in the store file
    journal = _left_behind(store, "rows-died", *({"outputs": _outputs("r", range(i * 20, i * 20 + 20), error=big)}
                                                 for i in range(3)), finish=True)
    filler = _fill(small_disk)
    assert replay_left(store) == 0
    said = capsys.readouterr().err
    assert "No space left on device" in said or "is full" in said, said
    assert "ROLLBACK" not in said and "rollback" not in said.lower(), said
    assert journal.is_dir() and len(list(journal.glob("[0-9]*.json"))) >= 1  # nothing moved aside, nothing lost
    assert not [p for p in journal.parent.iterdir() if p.name.startswith(".refused")]
    filler.unlink()
    replay_left(store)
    assert not journal.exists()
    assert [o["item_index"] for o in store.rows("outputs", "r")] == list(range(60))
    assert store.run_status("r") == "completed"


def test_a_segment_replayed_after_it_went_in_adds_its_rows_and_working_time_once(make_store: MakeStore) -> None:
    store = make_store()
    store.start_run(_run_row(status="running"))
    directory = _left_behind(store, "rows-died", {"outputs": _outputs("r", range(3))}, work=500.0)
    [header] = directory.glob("[0-9]*.json")
    put_in(store, read(header), replay=True)  # it went in; then its process died before removing it
    assert store.worked_ms("r") == 500.0
    assert replay_left(store) == 1
    assert store.worked_ms("r") == 500.0  # not 1000
    assert [o["item_index"] for o in store.rows("outputs", "r")] == [0, 1, 2]


def test_a_row_the_store_refuses_is_set_aside_alone_listed_and_put_back_and_other_segments_go_in(
        project: Path, store_url: str | None, capfd: pytest.CaptureFixture[str]) -> None:
    (project / "cobalt.toml").write_text("")
    store = project_store(project)
    store.start_run(_run_row(status="running"))
    directory = _left_behind(store, "rows-old", {"outputs": _outputs("r", range(3))},
                             {"outputs": _outputs("r", range(3, 5))}, finish=True)
    first = directory / "000001.outputs.ndjson"
    lines = first.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["item_index"] = "one"  # as a journal of an older cobalt might hold it: no INTEGER takes it
    first.write_text("\n".join([lines[0], json.dumps(bad), lines[2]]) + "\n")
    replay_left(store)
    refused = ('Invalid Input Error: JSON transform error: Failed to cast value to numerical: "one"'
               if store_url is None else 'invalid input syntax for type integer: "one"')
    said = capfd.readouterr().err
    # DuckDB's error goes on with advice for a query's author ("Try setting 'auto_detect' to true..."): one
    # line of what it said reaches the user, the advice never (issue 33 item 15).
    [line] = said.splitlines()
    assert line.startswith(f"cobalt: the store refused a row of outputs of run r ({refused}); it is kept in "), said
    assert [o["item_index"] for o in store.rows("outputs", "r")] == [0, 2, 3, 4]  # only that row kept out
    assert not directory.exists()
    runner = CliRunner()
    status = runner.invoke(app, ["store", "status", "--json"], catch_exceptions=False)
    assert status.exit_code == 0, status.output
    [aside] = json.loads(status.output)["aside"]
    assert (aside["table"], aside["run_id"], aside["rows"]) == ("outputs", "r", 1)
    assert aside["errors"] == [refused]
    listed = runner.invoke(app, ["store", "status"], catch_exceptions=False).output
    assert refused.split("error: ")[-1] in listed
    assert not any(word in listed + said for word in ("auto_detect", "ignore_errors", "Try setting")), listed
    synced = runner.invoke(app, ["store", "sync"], catch_exceptions=False)
    assert synced.exit_code == 0, synced.output
    assert "1 row(s) put into the results store" in synced.output
    rows = store.rows("outputs", "r")
    assert len(rows) == 5
    [back] = [r for r in rows if r["item_index"] is None]  # kept, its index as text beside it
    assert (back["output"], back["unheld_values"]) == ("a1", {"item_index": "one"})
    assert not (project / ".cobalt" / JOURNAL_DIR / SET_ASIDE_DIR).exists()
    assert "Nothing waits" in runner.invoke(app, ["store", "status"], catch_exceptions=False).output


def test_values_no_column_can_hold_are_kept_for_their_row_alone(make_store: MakeStore) -> None:
    store = make_store()
    rows = _outputs("r", range(4))
    rows[1]["tokens"] = 2**63
    rows[2]["latency_ms"] = "slow"
    rows[2]["metadata"] = {"usage": {"prompt_tokens": 10**20}, "ratio": float("nan")}
    store.write({"runs": [_run_row()], "outputs": rows,
                 "scores": [{"run_id": "r", "item_index": 0, "run_index": 0, "evaluator": "judge", "score": 0.5,
                             "status": "ok", "tokens": 10**20 + 30, "judge_calls": float("nan")}]})
    stored = store.rows("outputs", "r")
    assert [(o["tokens"], o["unheld_values"]) for o in stored] == [
        (None, None), (None, {"tokens": str(2**63)}), (None, {"latency_ms": "slow"}), (None, None)]
    assert stored[2]["metadata"] == {"usage": {"prompt_tokens": 10**20}, "ratio": "nan"}
    [score] = store.rows("scores", "r")
    assert (score["tokens"], score["judge_calls"]) == (None, None)
    assert score["unheld_values"] == {"tokens": str(10**20 + 30), "judge_calls": "nan"}


def test_token_counts_past_2_63_from_the_agent_and_the_judge_keep_every_row(judged_project: Path, llm: FakeLLM,
                                                                            store_url: str | None) -> None:
    llm.respond = lambda kind, body: answer(0.9, prompt_tokens=10**20)
    exp = experiment("qa", Dataset([{"input": f"q{i}"} for i in range(100)]),
                     lambda ctx: {"output": "a", "metadata": {"tokens": 2**63}},
                     evaluators=[Evaluator(name="judge", prompt="Is {{output}} right for {{input}}?")])
    report = exp.run()
    store = project_store(judged_project)
    outputs, scores = store.rows("outputs", report.id), store.rows("scores", report.id)
    assert len(outputs) == 100 and len(scores) == 100
    assert {(o["tokens"], o["unheld_values"]["tokens"]) for o in outputs} == {(None, str(2**63))}
    assert {s["status"] for s in scores} == {"ok"} and {s["tokens"] for s in scores} == {None}
    assert all(int(s["unheld_values"]["tokens"]) >= 10**20 for s in scores)
    assert store.run_status(report.id) == "completed"


def test_an_output_ending_with_the_cut_marker_reads_back_as_itself(project: Path, store_url: str | None) -> None:
    (project / "cobalt.toml").write_text("[store]\nmax_value_bytes = 1024\n")
    secret = "s" * 5000
    first = experiment("qa", Dataset([{"input": "q"}]), lambda ctx: secret,
                       evaluators=[Evaluator(name="any", type="function", fn=lambda ctx: 1.0)]).run()
    [side] = (project / ".cobalt" / "values").glob("*.json")
    forged = f"hello\n[cobalt: cut at 5 of 5000 bytes; whole value in values/{side.stem}.json]"
    second = experiment("qa", Dataset([{"input": "q"}]), lambda ctx: forged,
                        evaluators=[Evaluator(name="any", type="function", fn=lambda ctx: 1.0)]).run()
    store = project_store(project)
    assert [o["output"] for o in store.rows("outputs", second.id)] == [forged]
    assert [o["output"] for o in store.rows("outputs", first.id)] == [secret]  # a real cut is still read whole


HOLDER = "import duckdb, sys\ncon = duckdb.connect(sys.argv[1])\nprint('held', flush=True)\nsys.stdin.readline()"


@pytest.mark.slow
def test_the_writer_waits_its_lock_timeout_at_the_end_even_after_a_cycle_met_the_lock(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # DuckDB only: a file's lock held by another process (Postgres has none a writer waits on)
    store = Store(tmp_path / "s.duckdb", lock_timeout=120)
    store.start_run(_run_row(status="running"))
    writer = BatchWriter(store, max_delay=0.01)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store.path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        writer.add("outputs", _outputs("r", range(1))[0])
        while writer._failures == 0:  # a cycle met the lock and gave up (after its 1 s)
            threading.Event().wait(0.05)
        result: list[float | None] = []
        closing = threading.Thread(target=lambda: result.append(writer.close(work=("r", 10.0))))
        closing.start()
        err = ""
        while closing.is_alive() and "cobalt: waiting for the results store" not in err:
            err += capfd.readouterr().err  # the close is still waiting for the lock after a few seconds
            closing.join(0.1)
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    closing.join()
    assert result == [10.0]  # it waited and wrote, rather than leaving the rows in the journal
    assert [o["item_index"] for o in store.rows("outputs", "r")] == [0]


def test_lease_renewals_never_collide_with_the_runs_own_writes(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                               store_url: str | None) -> None:
    """A lease of 30 ms is renewed every 10 ms, beside every batch and the final write of 10 runs."""
    (project / "cobalt.toml").write_text("")
    monkeypatch.setenv("COBALT_LEASE_SECONDS", "0.03")
    exp = experiment("qa", Dataset([{"input": f"q{i}"} for i in range(20)]), lambda ctx: "a",
                     evaluators=[Evaluator(name="any", type="function", fn=lambda ctx: 1.0)])
    reports = [exp.run() for _ in range(10)]
    store = project_store(project)
    assert [store.run_status(r.id) for r in reports] == ["completed"] * 10
    assert all(len(store.rows("outputs", r.id)) == 20 for r in reports)


class _StopAfter:
    """An observer that stops the run (as a monitor's budget does) once `n` items finished."""

    def __init__(self, n: int) -> None:
        self.n, self.seen, self.run_id = n, 0, ""

    def on_start(self, plan: RunPlan) -> None:
        self.run_id = plan.run_id

    def on_item(self, item: object) -> None:
        self.seen += 1
        if self.seen == self.n:
            raise RunInterrupted(self.run_id)

    def on_finish(self, report: object) -> None:
        pass


def test_lease_renewals_never_collide_with_a_resumes_own_writes(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 item 4 (3 of 10 resumes at a 6 s lease read incomplete): 10 runs stopped after 5 of 20 items,
    each resumed under a lease of 30 ms, renewed every 10 ms beside the resume's batches and its final write."""
    (project / "cobalt.toml").write_text("")
    monkeypatch.setenv("COBALT_LEASE_SECONDS", "0.03")
    exp = experiment("qa", Dataset([{"input": f"q{i}"} for i in range(20)]), lambda ctx: "a", concurrency=1,
                     evaluators=[Evaluator(name="any", type="function", fn=lambda ctx: 1.0)])
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    resumed = []
    for _ in range(10):
        stop = _StopAfter(5)
        with pytest.raises(RunInterrupted):
            exp.run(observer=stop)
        assert store.run_status(stop.run_id) == "incomplete"
        resumed.append(exp.run(resume=stop.run_id))
    assert [store.run_status(r.id) for r in resumed] == ["completed"] * 10
    assert all(sorted(o["item_index"] for o in store.rows("outputs", r.id)) == list(range(20)) for r in resumed)


def test_a_reader_puts_in_the_rows_an_ended_run_left_in_its_journal(make_store: MakeStore) -> None:
    store = make_store()
    store.start_run(_run_row(status="running"))
    _left_behind(store, "finish-r", {"outputs": _outputs("r", range(4))}, finish=True)
    reader = store.like()  # the pages, the MCP server or the sensor: a read of the runs
    assert [(r["run_id"], r["status"]) for r in reader.runs()] == [("r", "completed")]
    assert reader.live_counts("r")["done"] == 4
