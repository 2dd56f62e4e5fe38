"""`cobalt run` runs the library engine; Dagster records it: inline, by the record sensor, or not at all.

The runs are made the way a user makes them (`cobalt run` in a subprocess, in a copy of the example
Dagster project); the instance they are recorded in is the project's own `.cobalt/dagster`.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

import cobalt_dagster
from cobalt_dagster._reload import GRADING_POLLS, RELOAD_MUTATION
from cobalt_lib import Store, load_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dagster_project"
COBALT = str(Path(sys.executable).parent / "cobalt")
STAGES = ("dataset", "outputs", "scores", "aggregates")
SUPPORT = "support_bot"
GATE = "gate_exact_min_0_75"

pytestmark = pytest.mark.slow


def copy_example(tmp_path: Path, toml: str = "") -> Path:
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
    if toml:
        with (root / "cobalt.toml").open("a", encoding="utf-8") as file:
            file.write(toml)
    return root


def cobalt(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`cobalt ARGS` in `root`, in a session of its own: afterwards no process of that session may be left."""
    clean = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "COBALT_PROJECT_DIR",
                                                             "COBALT_DAGSTER_RECORD", "GITHUB_ACTIONS")}
    proc = subprocess.Popen([COBALT, *args], cwd=root, env={**clean, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = proc.communicate(timeout=120)
    with pytest.raises(ProcessLookupError):  # the session's group is empty: nothing outlived the command
        os.killpg(proc.pid, 0)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stored_runs(root: Path) -> dict[str, dict[str, Any]]:
    return {r["experiment"]: r for r in Store.for_config(load_config(root)).runs()}


def dagster_records(root: Path, run_id: str) -> list[Any]:
    with cobalt_dagster.local_instance(load_config(root)) as instance:
        return list(instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": run_id})))


def recorded_view(instance: dg.DagsterInstance, name: str, run_id: str) -> dict[str, Any]:
    """What the Dagster UI shows of one recorded cobalt run: its job run, materialisations and checks."""
    [record] = instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": run_id}))
    run = record.dagster_run
    materialised = {stage: instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey([name, stage]), asset_partitions=[run_id]), limit=5).records
        for stage in STAGES}
    checks = instance.get_records_for_run(run_id=run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    evaluations = [r.event_log_entry.dagster_event.asset_check_evaluation_data for r in checks.records
                   if r.event_log_entry.dagster_event is not None]
    return {
        "job": run.job_name,
        "status": run.status,
        "record_tag": run.tags.get(cobalt_dagster.RECORD_TAG),
        "code_location": run.tags.get("dagster/code_location"),
        "has_origin": run.remote_job_origin is not None,
        "materialised": {stage: len(found) for stage, found in materialised.items()},
        "checks": sorted((e.check_name, e.passed, e.partition, e.blocking) for e in evaluations),
        "dagster_run_id": run.run_id,
        "step_keys": sorted({e.step_key for e in instance.all_logs(run.run_id) if e.step_key}),
    }


def test_inline_records_each_run_before_the_command_exits(tmp_path: Path) -> None:
    root = copy_example(tmp_path, '\n[dagster]\nrecord = "inline"\n')
    result = cobalt(root, "run", "--ci", "--add-tag", "nightly")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""  # Dagster's own log lines stay out of the user's terminal
    runs = stored_runs(root)
    assert {r["source"] for r in runs.values()} == {"library"}  # the engine ran it, Dagster recorded it
    support = runs["support-bot"]["run_id"]
    config = load_config(root)
    with cobalt_dagster.local_instance(config) as instance:
        view = recorded_view(instance, SUPPORT, support)
        [tagged] = instance.get_run_records(dg.RunsFilter(tags={cobalt_dagster.tag_key("nightly"): "nightly"},
                                                          job_name="support_bot_eval"))
        assert instance.get_dynamic_partitions("support_bot_runs") == [support]
    assert tagged.dagster_run.run_id == view["dagster_run_id"]  # one Dagster tag per cobalt tag
    assert {k: v for k, v in view.items() if k not in ("dagster_run_id", "step_keys")} == {
        "job": "support_bot_eval",
        "status": dg.DagsterRunStatus.SUCCESS,
        "record_tag": "true",
        "code_location": "definitions.py",  # the code location `cobalt serve` loads: the UI files it there
        "has_origin": True,
        "materialised": {stage: 1 for stage in STAGES},
        "checks": [("gate_error_rate_max_0", True, support, True), ("gate_every_evaluator_scored", True, support, True),
                   (GATE, True, support, True)],
    }
    assert "support_bot__deploy" not in view["step_keys"]  # a recording never deploys
    held = Store.for_config(config).dagster_runs_of([r["run_id"] for r in runs.values()])
    assert held[support] == view["dagster_run_id"] and len(held) == 2


def test_inline_recording_of_a_failed_gate_is_a_failed_check_and_the_command_exits_1(tmp_path: Path) -> None:
    root = copy_example(tmp_path, '\n[dagster]\nrecord = "inline"\n')
    result = cobalt(root, "run", "--ci", "--filter", "support", SUPPORT_BOT_BROKEN="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "gate FAIL exact >= 0.75" in result.stdout and result.stderr == ""
    run_id = stored_runs(root)["support-bot"]["run_id"]
    with cobalt_dagster.local_instance(load_config(root)) as instance:
        view = recorded_view(instance, SUPPORT, run_id)
    assert (GATE, False, run_id, True) in view["checks"]
    assert view["status"] == dg.DagsterRunStatus.FAILURE  # a failed blocking check fails its Dagster run


def test_the_default_does_no_dagster_work_and_the_record_sensor_catches_up(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    assert cobalt(root, "run", "--ci").returncode == 0
    assert cobalt(root, "run", "--ci", "--filter", "support", "--no-dagster").returncode == 0
    config = load_config(root)
    assert not (config.output_path / "dagster").exists()  # `cobalt run` did no Dagster work at all
    store = Store.for_config(config)
    runs = store.runs()
    # runs[0] is the --no-dagster run, the newest
    recordable = {r["run_id"] for r in runs[1:]}

    defs = cobalt_dagster.build_definitions(root)
    sensor = defs.resolve_sensor_def(cobalt_dagster.SENSOR)
    with cobalt_dagster.local_instance(config) as instance:
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert isinstance(result, dg.SensorResult)
        requests = result.run_requests or []
        assert {r.partition_key for r in requests} == recordable  # never the run asked not to be recorded
        for request in requests:
            assert request.tags[cobalt_dagster.RECORD_TAG] == "true"
            assert dg.AssetKey([SUPPORT, "deploy"]) not in (request.asset_selection or [])
        # What the daemon does with the requests, done here in process.
        for partition_request in result.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(partition_request.partitions_def_name,
                                            list(partition_request.partition_keys or []))
        for request in requests:
            job = defs.resolve_job_def(request.job_name or "").get_subset(
                asset_selection=set(request.asset_selection or []),
                asset_check_selection=set(request.asset_check_keys or []))
            executed = job.execute_in_process(instance=instance, partition_key=request.partition_key,
                                              tags=request.tags, run_config=request.run_config)
            assert executed.success
        again = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    assert isinstance(again, dg.SensorResult) and not again.run_requests  # each run is recorded once
    assert set(store.dagster_runs_of([r["run_id"] for r in runs])) == recordable


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    sensor = defs.resolve_sensor_def(cobalt_dagster.SENSOR)
    result = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=cursor))
    assert isinstance(result, dg.SensorResult)
    return result


def _launch(defs: dg.Definitions, instance: dg.DagsterInstance, result: dg.SensorResult) -> dict[str, bool]:
    """What the daemon does with a tick's requests, done here in process: `{partition: succeeded}`."""
    for partition_request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(partition_request.partitions_def_name,
                                        list(partition_request.partition_keys or []))
    outcome = {}
    for request in result.run_requests or []:
        job = defs.resolve_job_def(request.job_name or "").get_subset(
            asset_selection=set(request.asset_selection or []),
            asset_check_selection=set(request.asset_check_keys or []))
        executed = job.execute_in_process(instance=instance, partition_key=request.partition_key,
                                          tags=request.tags, run_config=request.run_config, raise_on_error=False)
        outcome[str(request.partition_key)] = executed.success
    return outcome


def test_twenty_five_failing_recordings_never_block_a_good_one(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    config = load_config(root)
    store = Store.for_config(config)
    damaged = [f"damaged-{i:02d}" for i in range(25)]
    for run_id in damaged:  # failed runs older than the good one, with a summary no report can be read from
        store.start_run({"run_id": run_id, "experiment": "support-bot", "started_at": "2026-01-01T00:00:00+00:00",
                         "tags": [], "config": {}})
        store.finish_run({"run_id": run_id, "experiment": "support-bot", "status": "failed", "tags": [],
                          "started_at": "2026-01-01T00:00:00+00:00", "config": {},
                          "summary": {"total_items": "many"}}, [], [])
    assert cobalt(root, "run", "--ci", "--filter", "support").returncode == 0
    [good] = [r["run_id"] for r in store.runs() if r["run_id"] not in damaged]
    defs = cobalt_dagster.build_definitions(root)
    with cobalt_dagster.local_instance(config) as instance:
        first = _tick(defs, instance, None)
        assert _launch(defs, instance, first) == dict.fromkeys(damaged, False)  # the 25 oldest, each failing
        second = _tick(defs, instance, first.cursor)
        assert _launch(defs, instance, second) == {good: True}  # the failures wait; the good run goes on
        third = _tick(defs, instance, second.cursor)
        assert not third.run_requests  # nothing due yet: nothing asked twice
        state = json.loads(third.cursor or "")["runs"]  # the good run recorded, it is off the books
        assert set(state) == set(damaged) and {e["attempt"] for e in state.values()} == {1}
        assert all("validation error for Summary" in e["reason"] and e["retry_at"] > e["requested_at"]
                   for e in state.values())
        assert store.dagster_runs_of([good, *damaged]).keys() == {good}

        for entry in state.values():  # their backoff over: each is tried again, a Dagster run of its own
            entry["retry_at"] = 0
        retried = _tick(defs, instance, json.dumps({"runs": state}))
        assert {r.partition_key: r.tags["cobalt/record-attempt"] for r in retried.run_requests or []} == {
            run_id: f"{run_id}/2" for run_id in damaged}
        last = json.loads(retried.cursor or "")["runs"]
        last[damaged[0]].update(attempt=4, requested_at=0)  # a last attempt whose run never started: given up
        given_up = _tick(defs, instance, json.dumps({"runs": last}))
    assert damaged[0] not in json.loads(given_up.cursor or "")["runs"]
    assert store.query("SELECT how FROM dagster_runs WHERE run_id = ?", [damaged[0]]) == [{"how": "failed"}]


@pytest.mark.parametrize("how", ["config", "flag", "environment"])
def test_off_and_no_dagster_record_nothing(tmp_path: Path, how: str) -> None:
    toml = '\n[dagster]\nrecord = "off"\n' if how == "config" else '\n[dagster]\nrecord = "inline"\n'
    root = copy_example(tmp_path, toml)
    args = ["run", "--ci", "--filter", "support"] + (["--no-dagster"] if how == "flag" else [])
    env = {"COBALT_DAGSTER_RECORD": "off"} if how == "environment" else {}
    assert cobalt(root, *args, **env).returncode == 0
    config = load_config(root)
    assert not (config.output_path / "dagster").exists()
    store = Store.for_config(config)
    [run] = store.runs()
    assert store.dagster_runs_of([run["run_id"]]) == {}
    assert store.unrecorded_runs(["support-bot"]) == []  # no sensor records it later either


def test_a_bad_record_mode_in_the_environment_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    result = cobalt(root, "run", "--ci", COBALT_DAGSTER_RECORD="sometimes")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: COBALT_DAGSTER_RECORD='sometimes' is not a record mode; set it to daemon, inline or off."]
    assert not (root / ".cobalt" / "cobalt.duckdb").exists()  # nothing ran


def test_an_interrupted_run_is_left_to_the_sensor_and_recorded_again_once_resumed(tmp_path: Path) -> None:
    root = copy_example(tmp_path, '\n[dagster]\nrecord = "inline"\n')
    slow = root / "experiments" / "halting.cobalt.py"
    slow.write_text(HALTING, encoding="utf-8")
    proc = subprocess.Popen([COBALT, "run", "--ci", "--filter", "halting"], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME",)})
    assert proc.stdout is not None
    while "HALTING" not in proc.stdout.readline():
        pass
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    run_id = stored_runs(root)["halting"]["run_id"]
    # Ctrl-C means "stop now": the kept run is left to the record sensor, not recorded on the way out.
    store = Store.for_config(load_config(root))
    assert [r["run_id"] for r in store.unrecorded_runs(["halting"])] == [run_id]
    cobalt_dagster.record_runs([run_id], config=load_config(root))  # what the sensor does with it
    [first] = dagster_records(root, run_id)
    resumed = cobalt(root, "run", "--ci", "--resume", run_id, HALTING_DONE="1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = dagster_records(root, run_id)  # recorded again, now that it is complete
    assert len(records) == 2 and first.dagster_run.run_id in {r.dagster_run.run_id for r in records}
    with cobalt_dagster.local_instance(load_config(root)) as instance:
        [latest] = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(["halting", "outputs"]), asset_partitions=[run_id]),
            limit=1).records
    assert latest.asset_materialization is not None
    assert latest.asset_materialization.metadata["items"].value == 3  # the resumed run's, not the cut one's


HALTING = """
import asyncio, os
from cobalt_lib import Dataset, Evaluator, experiment


@experiment("halting", Dataset([{"input": f"q{i}"} for i in range(3)]), concurrency=1,
            evaluators=[Evaluator(name="one", type="function", fn=lambda ctx: 1.0)])
async def agent(ctx):
    if ctx.index == 2 and not os.environ.get("HALTING_DONE"):
        print("HALTING", flush=True)
        await asyncio.sleep(600)
    return "ok"
"""


GRADER = """from cobalt_lib import grader

grader = grader("tone").spec("Grade the answer.").card("Criteria", lambda c: c.spec("It is polite."))
"""


def test_a_grading_run_is_recorded_by_the_sensor_like_any_run(judged_project: Path, llm: Any) -> None:
    """`cobalt grade`'s run (the experiment `grade:tone`, which no project file defines) is a partition of the
    grading experiment's job once recorded, its checks the two every run has."""
    from fakellm import text

    from cobalt_lib.grading._grade import GradeOptions, grade

    root = judged_project
    (root / "graders").mkdir()
    (root / "graders" / "tone.py").write_text(GRADER, encoding="utf-8")
    samples = [{"id": f"s{i}", "user_message": f"q{i}", "assistant_response": f"a{i}", "score": 1} for i in range(3)]
    (root / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    llm.respond = lambda kind, body: text(json.dumps({"score": 1, "notes": "polite"}))
    config = load_config(root)
    assert not cobalt_dagster.build_definitions(root).resolve_all_asset_keys()  # no grading yet: no grading assets
    with _webserver() as asked:
        watcher = cobalt_dagster.DefinitionsWatcher(config, asked.url)  # what `cobalt serve` polls
        assert _reloads(watcher, asked, 3 * GRADING_POLLS) == 0  # no grading run: nothing to load
        outcome = grade(config, GradeOptions(input=root / "samples.jsonl", grader=Path("graders/tone.py"),
                                             models=["openai/a"]))
        # The first grading run: its assets join the Definitions, so the code location reloads, once.
        assert _reloads(watcher, asked, 3 * GRADING_POLLS) == 1
        assert asked.bodies == [{"query": RELOAD_MUTATION}]
    assert outcome.passed
    defs = cobalt_dagster.build_definitions(root)
    with cobalt_dagster.local_instance(config) as instance:
        first = _tick(defs, instance, None)
        assert [(r.job_name, r.partition_key, r.tags["cobalt.tag/grade"]) for r in first.run_requests or []] == [
            ("cobalt_grading_eval", outcome.run_id, "grade")]
        assert _launch(defs, instance, first) == {outcome.run_id: True}
        view = recorded_view(instance, "cobalt_grading", outcome.run_id)
        assert not _tick(defs, instance, first.cursor).run_requests  # recorded once
    assert (view["job"], view["status"], view["record_tag"]) == ("cobalt_grading_eval", dg.DagsterRunStatus.SUCCESS,
                                                                 "true")
    assert view["materialised"] == dict.fromkeys(STAGES, 1)
    assert [(name, passed) for name, passed, *_ in view["checks"]] == [
        ("gate_error_rate_max_100", True), ("gate_every_evaluator_scored", True)]
    assert list(Store.for_config(config).dagster_runs_of([outcome.run_id])) == [outcome.run_id]


@dataclass
class _Asked:
    """A stand-in for the Dagster webserver's GraphQL endpoint: the queries it was sent."""

    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)


@contextlib.contextmanager
def _webserver() -> Iterator[_Asked]:
    asked: list[_Asked] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked[0].bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"data": {"reloadWorkspace": {"__typename": "Workspace"}}}')

        def log_message(self, *args: Any) -> None:  # no line per request on the test's output
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    asked.append(_Asked(f"http://127.0.0.1:{server.server_address[1]}"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield asked[0]
    finally:
        server.shutdown()
        server.server_close()


def _reloads(watcher: cobalt_dagster.DefinitionsWatcher, asked: _Asked, polls: int) -> int:
    """How many reloads `polls` of the watcher's loop asked for (each answered before `poll` returns)."""
    before = len(asked.bodies)
    asks = sum(watcher.poll() for _ in range(polls))
    assert len(asked.bodies) - before == asks
    return asks


def test_materialising_a_grading_partition_from_dagster_fails_saying_to_run_cobalt_grade(
        judged_project: Path, llm: Any) -> None:
    from cobalt_lib.run import new_run_id

    root = judged_project
    store = Store.for_config(load_config(root))
    store.start_run({"run_id": "g1", "experiment": "grade:tone", "started_at": "2026-01-01T00:00:00+00:00",
                     "tags": ["grade"], "config": {}})
    defs = cobalt_dagster.build_definitions(root)
    with cobalt_dagster.local_instance(load_config(root)) as instance:
        partition = new_run_id()
        instance.add_dynamic_partitions("cobalt_grading_runs", [partition])
        result = defs.resolve_job_def("cobalt_grading_eval").execute_in_process(
            instance=instance, partition_key=partition, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "run `cobalt grade` to grade" in (failure.step_failure_data.user_failure_data.description or "")
    assert store.get_run(partition) is None  # nothing was run
