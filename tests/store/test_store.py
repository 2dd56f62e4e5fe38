"""The store (on both backends) and the results JSON: agreement with the report, batching, crashes, readers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from conftest import TEST_KEY, shifted_store
from fakellm import FakeLLM
from slowdown import deadline as deadline_in
from stores import MakeStore

from cobalt_lib import (
    ConfigError,
    Dataset,
    Evaluator,
    Store,
    StoreError,
    experiment,
    load_config,
    read_results,
    threshold,
)
from cobalt_lib.store._liveness import utc_now


def _mixed_run():
    def agent(ctx):
        if ctx.index == 2:
            raise RuntimeError("agent failed")
        return {"output": ctx.item["expected_output"], "metadata": {"tokens": 5, "cost_usd": 0.001}}

    data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(5)])
    exp = experiment("stored", data, agent, tags=["t1"], assertions=[threshold("exact", 0.9)], evaluators=[
        Evaluator(name="exact", type="exact-match"),
        Evaluator(name="judge", prompt="{{input}} {{output}}")])
    return exp.run(config=load_config())


def test_rows_and_json_agree_with_the_report(judged_project: Path, llm: FakeLLM) -> None:
    report = _mixed_run()
    store = Store(judged_project / ".cobalt" / "cobalt.duckdb")
    run = store.runs()[0]
    assert (run["run_id"], run["experiment"], run["status"], run["source"]) == (report.id, "stored", "completed",
                                                                                  "library")
    # an agent call failed, so the default error gate failed the run
    assert run["tags"] == ["t1"] and run["passed"] is False and run["results_path"] == report.results_path
    assert run["config"]["evaluators"][1]["prompt"] == "{{input}} {{output}}"

    outputs = store.rows("outputs", report.id)
    assert [(r["item_index"], r["status"], r["output"]) for r in outputs] == [
        (i.index, i.status, i.output) for i in report.items]
    assert outputs[2]["error"] == "RuntimeError: agent failed" and outputs[0]["cost_usd"] == 0.001
    assert outputs[0]["input"] == {"input": "q0", "expected_output": "a0"}

    scores = store.rows("scores", report.id)
    expected = sorted((i.index, name, ev.score, ev.status, ev.cached)
                      for i in report.items for name, ev in i.evaluations.items())
    assert sorted((r["item_index"], r["evaluator"], r["score"], r["status"], r["cached"]) for r in scores) == expected
    assert len(scores) == 8
    judge_calls = sorted((i.index, ev.judge_calls) for i in report.items for n, ev in i.evaluations.items()
                         if n == "judge")
    assert sorted((r["item_index"], r["judge_calls"]) for r in scores if r["evaluator"] == "judge") == judge_calls
    assert sum(c for _, c in judge_calls) == report.summary.judge_calls > 0

    aggregates = {r["metric"]: r for r in store.rows("aggregates", report.id)}
    assert set(aggregates) == {"exact", "judge", "latency", "cost", "tokens"}
    for name, stats in report.summary.scores.items():
        assert aggregates[name]["mean"] == pytest.approx(stats.avg)
        assert aggregates[name]["p95"] == pytest.approx(stats.p95) and aggregates[name]["count"] == stats.count
    verdicts = store.rows("verdicts", report.id)
    assert [(v["name"], v["passed"]) for v in verdicts] == [
        ("error rate <= 0%", False), ("every evaluator scored", True), ("exact >= 0.9", True)]

    on_disk = read_results(report.results_path or "")
    assert on_disk.model_dump() == report.model_dump()
    raw = json.loads(Path(report.results_path or "").read_text())
    assert raw["summary"]["scores"]["exact"]["avg"] == 1.0 and raw["items"][0]["evaluations"]["exact"]["score"] == 1
    assert Path(report.results_path or "").name.endswith(f"_stored_{report.id}.json")


def test_no_secret_reaches_results_or_store(judged_project: Path, llm: FakeLLM) -> None:
    _mixed_run()
    for path in (judged_project / ".cobalt").rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path


def test_a_batch_is_one_transaction(make_store: MakeStore) -> None:
    import psycopg

    store = make_store()
    good = {"run_id": "r1", "item_index": 0, "run_index": 0, "status": "ok"}
    bad = {"run_id": "r1", "name": "v", "passed": "not-a-bool-at-all"}
    with pytest.raises((duckdb.Error, psycopg.Error)):
        store.write({"outputs": [good], "verdicts": [bad]})
    with store.connect(read_only=True) as con:
        assert con.execute("SELECT count(*) FROM outputs").fetchone() == (0,)


def test_rows_round_trip_by_name_with_nan_as_null_and_no_files_left(make_store: MakeStore) -> None:
    store = make_store()
    rows = [{"run_id": "r", "item_index": i, "run_index": 0, "status": "ok", "latency_ms": float("nan") if i else 2.5,
             "output": {"text": f"ans {i}", "list": [1, None]}, "metadata": {"k": "ü"}, "input": {"input": i}}
            for i in range(3)]
    store.write({"outputs": list(reversed(rows))})  # order of keys and rows does not matter: columns by name
    stored = store.rows("outputs", "r")
    assert [(r["item_index"], r["latency_ms"], r["output"], r["metadata"]) for r in stored] == [
        (0, 2.5, {"text": "ans 0", "list": [1, None]}, {"k": "ü"}), (1, None, {"text": "ans 1", "list": [1, None]},
                                                                      {"k": "ü"}),
        (2, None, {"text": "ans 2", "list": [1, None]}, {"k": "ü"})]
    assert [p.name for p in store.home.iterdir() if p != store.path] == []  # the batch file is gone


def test_reading_a_missing_store_says_what_to_do(make_store: MakeStore) -> None:
    with pytest.raises(StoreError, match="run an experiment first"):
        make_store().runs()


_CHILD = textwrap.dedent("""
    import asyncio, sys
    from cobalt_lib import Dataset, Evaluator, experiment, load_config

    class Progress:
        def on_start(self, plan): print("START", plan.run_id, flush=True)
        def on_item(self, item): print("DONE", item.index, flush=True)
        def on_finish(self, report): print("FINISH", flush=True)

    async def agent(ctx):
        if ctx.index >= 5:
            await asyncio.sleep(600)
        return ctx.item["expected_output"]

    data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(40)])
    exp = experiment("interrupted", data, agent, concurrency=5,
                     evaluators=[Evaluator(name="exact", type="exact-match")])
    exp.run(config=load_config(), observer=Progress())
""")


def _start_child(project: Path) -> tuple[subprocess.Popen[str], str]:
    script = project / "child.py"
    script.write_text(_CHILD)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=project, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().split()[1]
    done = [proc.stdout.readline() for _ in range(5)]
    assert all(line.startswith("DONE") for line in done), done
    return proc, run_id


@pytest.mark.slow
def test_ctrl_c_keeps_finished_items_and_marks_the_run_incomplete(project: Path) -> None:
    proc, run_id = _start_child(project)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    run = store.runs()[0]
    assert (run["run_id"], run["status"], run["passed"]) == (run_id, "incomplete", False)
    assert [r["item_index"] for r in store.rows("outputs", run_id)] == [0, 1, 2, 3, 4]
    assert len(store.rows("scores", run_id)) == 5
    report = read_results(run["results_path"])
    assert report.status == "incomplete" and len(report.items) == 5
    assert report.summary.scores["exact"].avg == 1.0
    assert any(a.name == "run completed" and not a.passed for a in report.assertions)


@pytest.mark.slow
def test_a_killed_run_keeps_its_written_batches_and_reads_as_incomplete(project: Path) -> None:
    proc, run_id = _start_child(project)
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    deadline = deadline_in(30)
    rows: list[dict] = []
    while time.monotonic() < deadline:  # wait for the writer thread's batch (a condition, not a fixed sleep)
        rows = store.rows("outputs", run_id)
        if len(rows) == 5:
            break
    assert len(rows) == 5, "the batch of finished items was never written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    # Its last renewal was before the kill: a minute and a second on, its lease has run out.
    later = Store(store.path, now=lambda: utc_now() + timedelta(seconds=61))
    run = later.runs()[0]
    assert run["status"] == "incomplete"
    assert len(store.rows("scores", run_id)) == 5


_READER = textwrap.dedent("""
    import sys, time
    from cobalt_lib import Store
    store = Store(sys.argv[1], lock_timeout=30)
    reads = 0
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        try:
            store.runs()
            reads += 1
        except Exception as exc:
            if "run an experiment first" not in str(exc):
                raise
    print(reads)
""")


@pytest.mark.slow
def test_a_concurrent_reader_never_breaks_a_run(project: Path) -> None:
    Store(project / ".cobalt" / "cobalt.duckdb").ensure_schema()
    reader = project / "reader.py"
    reader.write_text(_READER)
    proc = subprocess.Popen([sys.executable, str(reader), str(project / ".cobalt" / "cobalt.duckdb"), "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    async def agent(ctx):
        return ctx.item["input"]

    data = Dataset([{"input": f"q{i}"} for i in range(300)])
    report = experiment("busy", data, agent, concurrency=20,
                        evaluators=[Evaluator(name="f", type="function", fn=lambda c: 1.0)]).run()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert int(out) > 0
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    assert len(store.rows("outputs", report.id)) == 300 and len(store.rows("scores", report.id)) == 300


@pytest.mark.slow
def test_a_batch_that_meets_a_held_lock_is_kept_and_written_once_the_lock_goes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from cobalt_lib.store import _duckdb
    from cobalt_lib.store._writer import BatchWriter

    monkeypatch.setattr(_duckdb, "WAIT_NOTICE_SECONDS", 0.0)
    path = tmp_path / "s.duckdb"
    Store(path).ensure_schema()
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys\ncon = duckdb.connect(sys.argv[1])\n"
                               "print('locked', flush=True)\nsys.stdin.readline()", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # a notebook, say
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        writer = BatchWriter(Store(path, lock_timeout=0.3), max_delay=0.01)
        writer.add("outputs", {"run_id": "r1", "item_index": 0, "run_index": 0, "status": "ok"})
        deadline = deadline_in(30)
        while writer._failures == 0:  # the first attempt gave up on the lock (the condition, polled)
            assert time.monotonic() < deadline, "the write never met the lock"
            time.sleep(0.01)
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    writer.close()  # no error: the kept batch went in on a later attempt
    with Store(path).connect(read_only=True) as con:
        assert con.execute("SELECT run_id, item_index FROM outputs").fetchall() == [("r1", 0)]
    notice = capsys.readouterr().err
    assert "which another process holds (" in notice and f"(PID {holder.pid})" in notice


def _run_row(run_id: str, started: str, **extra: object) -> dict[str, object]:
    return {"run_id": run_id, "experiment": "qa", "started_at": started, "tags": [], "config": {}, **extra}


def test_the_store_answers_for_runs_by_id(make_store: MakeStore) -> None:
    store = make_store()
    assert (store.get_run("r1"), store.run_status("r1"), store.runs(missing_ok=True)) == (None, None, [])
    for run_id, day in (("r1", 1), ("r2", 2), ("r3", 3)):
        store.start_run(_run_row(run_id, f"2026-01-0{day}T00:00:00+00:00"))
        store.finish_run(_run_row(run_id, f"2026-01-0{day}T00:00:00+00:00", status="completed"),
                         [{"run_id": run_id, "metric": "exact", "kind": "evaluator", "mean": day / 10},
                          {"run_id": run_id, "metric": "latency", "kind": "metric", "mean": 5.0}], [])
    shifted_store(store, -2).start_run(_run_row("r4", "2026-01-04T00:00:00+00:00"))  # its lease expired
    assert (store.run_status("r2"), store.run_status("r4"), store.experiment_of("r3")) == (
        "completed", "incomplete", "qa")
    assert store.evaluator_means(["r1", "r3", "nope"]) == {"r1": {"exact": 0.1}, "r3": {"exact": 0.3}}
    assert (store.previous_completed_run("qa", "r3"), store.previous_completed_run("qa", "r1")) == ("r2", None)
    with pytest.raises(ConfigError, match="No run has id 'nope'"):
        store.experiment_of("nope")
    store.delete_runs(["r1", "r2"])
    assert [r["run_id"] for r in store.runs()] == ["r4", "r3"] and store.rows("aggregates", "r1") == []


def test_the_project_store_is_the_duckdb_file_unless_a_url_is_set(tmp_path: Path) -> None:
    assert Store.for_config(load_config(tmp_path)).path == tmp_path / ".cobalt" / "cobalt.duckdb"


def test_working_time_adds_up_and_survives_the_run_row_being_written_again(make_store: MakeStore) -> None:
    store = make_store()
    row = _run_row("r", "2026-01-01T00:00:00+00:00")
    store.start_run(row)
    store.add_work("r", 100.0)
    store.add_work("r", 50.0)
    store.start_run(row)  # resumed, in another process say
    store.add_work("r", 25.0)
    assert store.worked_ms("r") == 175.0
    store.finish_run({**row, "status": "completed"}, [], [])
    assert (store.worked_ms("r"), store.worked_ms("nope")) == (175.0, 0.0)


def test_a_store_from_before_working_time_starts_from_its_summary(tmp_path: Path) -> None:
    # DuckDB only: stores from before the column are DuckDB files (a team store was born with it)
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as con:  # the runs table as it was, without worked_ms
        con.execute("CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, experiment VARCHAR, status VARCHAR, "
                    "started_at TIMESTAMPTZ, summary JSON, pid INTEGER)")
        con.execute("INSERT INTO runs VALUES ('r', 'qa', 'incomplete', '2026-01-01 00:00:00+00', "
                    "'{\"total_duration_ms\": 1200.0}', 0)")
    store = Store(path)
    assert store.worked_ms("r") == 0.0  # nothing stored under the new name yet
    store.start_run(_run_row("r", "2026-01-01T00:00:00+00:00"))  # the resume of an old run
    store.add_work("r", 300.0)
    assert store.worked_ms("r") == 1500.0


def test_reads_in_a_reading_block_share_one_connection_and_writes_wait_for_its_end(make_store: MakeStore) -> None:
    store = make_store()
    with store.reading():  # no store yet: the reads say so as they would outside a block
        assert store.get_run("r1") is None
    store.start_run({"run_id": "r1", "experiment": "e", "started_at": "2026-01-01T00:00:00+00:00",
                     "tags": [], "config": {}})
    store.write({"outputs": [{"run_id": "r1", "item_index": 0, "run_index": 0, "status": "ok", "output": "x"}]})
    other = store.like()  # another Store object on the same store
    if store.backend.name == "duckdb":  # and by another spelling of the file's path
        other = Store(store.path.parent / "." / store.path.name)
    opened = Store.connections_opened()
    with store.reading():
        run = store.get_run("r1")
        with other.reading():
            outputs = other.rows("outputs", "r1")
        with pytest.raises(RuntimeError, match=r"inside Store\.reading\(\)"):
            store.write({"verdicts": [{"run_id": "r1", "name": "g", "passed": True}]})
        assert store.rows("verdicts", "r1") == []
    # DuckDB's opens are what is counted (each costs 9-20 ms); Postgres's connections are pooled, uncounted
    duckdb_opens = 1 if store.backend.name == "duckdb" else 0
    assert Store.connections_opened() - opened == duckdb_opens
    assert run is not None and run["experiment"] == "e" and [o["output"] for o in outputs] == ["x"]
    store.write({"verdicts": [{"run_id": "r1", "name": "g", "passed": True}]})  # the block released the file
    assert [v["name"] for v in store.rows("verdicts", "r1")] == ["g"]
    assert Store.connections_opened() - opened == 3 * duckdb_opens  # the write, and that read's own connection
