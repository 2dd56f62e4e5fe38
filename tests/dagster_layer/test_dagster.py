"""The Dagster layer against real components: the example project, a real instance, the real DuckDB file."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import write_judge_config
from dagster_jobs import execute_job

import cobalt_dagster
from cobalt_lib import Config, ConfigError, Dataset, Evaluator, Experiment, Store, experiment, load_config
from cobalt_lib.experiments._discovery import load_experiments
from cobalt_lib.run._plan import new_run_id, prepare
from cobalt_lib.store._history import load_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dagster_project"
BIN = Path(sys.executable).parent
STAGES = ("dataset", "outputs", "scores", "aggregates")
SUPPORT, SUMMARIZER = "support_bot", "my_summarizer_agent"
AGGREGATES = dg.AssetKey([SUPPORT, "aggregates"])
DEPLOY = dg.AssetKey([SUPPORT, "deploy"])
GATE = "gate_exact_min_0_75"
CHECK = dg.AssetCheckKey(AGGREGATES, GATE)
#: The check every experiment has (`every evaluator scored`), besides its own gates.
SCORED = "gate_every_evaluator_scored"
#: The error-rate check every experiment has too (`error rate <= 0%` by default).
ERRORS = "gate_error_rate_max_0"


@dataclass
class Project:
    root: Path
    defs: dg.Definitions

    @property
    def config(self) -> Config:
        return load_config(self.root)

    @property
    def store(self) -> Store:
        return Store(self.config.output_path / "cobalt.duckdb")

    def experiment(self, name: str) -> Experiment:
        return next(e for e in load_experiments(self.config) if e.name == name)


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
    return dest


def load_project(root: Path) -> Project:
    """Import the copied project's definitions.py (the user's code location) under a unique name."""
    spec = importlib.util.spec_from_file_location(f"cobalt_example_{uuid.uuid4().hex}", root / "definitions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Project(root, module.defs)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """One copy and one Definitions for the tests whose assertions are keyed by their own run ids."""
    return load_project(copy_example(tmp_path_factory.mktemp("shared") / "proj"))


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project copy of its own (an empty store), made the working directory."""
    root = copy_example(tmp_path / "proj")
    monkeypatch.chdir(root)
    return load_project(root)


def run_job(project: Project, instance: dg.DagsterInstance, experiment: str = SUPPORT, *,
            partition: str | None = None, only: list[dg.AssetKey] | None = None) -> tuple[str, Any]:
    """Execute the experiment's job in process for a new partition (a new cobalt run id)."""
    if partition is None:
        partition = new_run_id()
        instance.add_dynamic_partitions(f"{experiment}_runs", [partition])
    result = project.defs.resolve_job_def(f"{experiment}_eval").execute_in_process(
        instance=instance, partition_key=partition, raise_on_error=False, asset_selection=only)
    return partition, result



def materialisations(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str) -> list[dg.AssetMaterialization]:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=10).records
    return [r.asset_materialization for r in records if r.asset_materialization is not None]


def check_evaluations(instance: dg.DagsterInstance, run_id: str, check: str = GATE) -> list[Any]:
    """The evaluations of the check named `check` (the support bot's `exact` gate by default) in a run."""
    records = instance.get_records_for_run(run_id=run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
    evaluations = [r.event_log_entry.dagster_event.asset_check_evaluation_data for r in records
                   if r.event_log_entry.dagster_event is not None]
    return [e for e in evaluations if e.check_name == check]


def comparable(store: Store, run_id: str) -> dict[str, Any]:
    """A run's stored rows without what legitimately differs between two runs (ids, latency, times)."""
    [summary] = [r["summary"] for r in store.query("SELECT summary FROM runs WHERE run_id = ?", [run_id])]
    return {
        "outputs": [(r["item_index"], r["run_index"], r["input"], r["output"], r["status"], r["error"])
                    for r in store.rows("outputs", run_id)],
        "scores": [(r["item_index"], r["run_index"], r["evaluator"], r["score"], r["status"], r["passed"])
                   for r in store.rows("scores", run_id)],
        "aggregates": {r["metric"]: (r["kind"], r["mean"], r["count"], r["pass_rate"], r["errors"])
                       for r in store.rows("aggregates", run_id) if r["metric"] != "latency"},
        "verdicts": [(r["name"], r["passed"], r["actual"], r["expected"], r["message"])
                     for r in store.rows("verdicts", run_id)],
        "summary": {k: summary[k] for k in ("judge_calls", "judge_cost", "total_tokens")},
    }


# 1. Definitions --------------------------------------------------------------------------------------


def test_definitions_of_the_two_experiment_project(shared: Project) -> None:
    defs = shared.defs
    keys = {key.to_user_string() for key in defs.resolve_all_asset_keys()}
    assert keys == {f"{name}/{stage}" for name in (SUPPORT, SUMMARIZER) for stage in STAGES} | {"support_bot/deploy"}
    graph = defs.resolve_asset_graph()
    # one gate (exact >= 0.75), the summarizer none; both have the check that every evaluator scored
    assert graph.asset_check_keys == {CHECK, dg.AssetCheckKey(AGGREGATES, SCORED), dg.AssetCheckKey(AGGREGATES, ERRORS),
                                      dg.AssetCheckKey(dg.AssetKey([SUMMARIZER, "aggregates"]), SCORED),
                                      dg.AssetCheckKey(dg.AssetKey([SUMMARIZER, "aggregates"]), ERRORS)}
    assert graph.get(DEPLOY).parent_keys == {AGGREGATES}
    assert graph.get(dg.AssetKey([SUPPORT, "outputs"])).parent_keys == {dg.AssetKey([SUPPORT, "dataset"])}
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"support_bot_eval", "my_summarizer_agent_eval"}
    assert defs.resolve_job_def("support_bot_eval").partitions_def == dg.DynamicPartitionsDefinition(
        name="support_bot_runs")
    schedule = defs.resolve_schedule_def("support_bot_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone, schedule.job_name) == (
        "0 2 * * *", "UTC", "support_bot_eval")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING  # runs under `cobalt serve` untouched
    sensor = defs.resolve_sensor_def(cobalt_dagster.SENSOR)
    assert {t.job_name for t in sensor.targets} == {"support_bot_eval", "my_summarizer_agent_eval"}
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    checks = defs.get_repository_def().asset_checks_defs_by_key
    assert checks[CHECK].check_specs_by_output_name and all(
        spec.blocking for spec in checks[CHECK].check_specs_by_output_name.values())


def test_dagster_cli_validates_the_code_location(tmp_path: Path) -> None:
    root = copy_example(tmp_path / "proj")
    with cobalt_dagster.local_instance(load_config(root)):  # the instance `cobalt serve` and `cobalt run` use
        pass
    env = {**os.environ, "DAGSTER_HOME": str(root / ".cobalt" / "dagster")}
    env.pop("COBALT_PROJECT_DIR", None)
    result = subprocess.run([str(BIN / "dagster"), "definitions", "validate", "-m", "definitions"], cwd=root,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No dagster instance configuration file" not in result.stderr  # cobalt wrote its dagster.yaml
    # The module workspace.yaml loads finds the same project from COBALT_PROJECT_DIR.
    result = subprocess.run([str(BIN / "dagster"), "definitions", "validate", "-m", "cobalt_dagster.definitions"],
                            cwd=tmp_path, env={**env, "COBALT_PROJECT_DIR": str(root)}, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


# 2. A run through Dagster equals a library run ---------------------------------------------------------


def test_a_dagster_run_materialises_the_four_assets_like_the_library(shared: Project,
                                                                    instance: dg.DagsterInstance) -> None:
    partition, result = run_job(shared, instance)
    assert result.success
    for stage in (*STAGES, "deploy"):
        assert len(materialisations(instance, dg.AssetKey([SUPPORT, stage]), partition)) == 1, stage
    assert {r.dagster_run.run_id for r in instance.get_run_records(
        dg.RunsFilter(tags={"dagster/partition": partition}))} == {result.run_id}

    store = shared.store
    run = store.query("SELECT * FROM runs WHERE run_id = ?", [partition])[0]
    assert (run["experiment"], run["status"], run["source"], run["passed"]) == (
        "support-bot", "completed", "dagster", True)
    library = shared.experiment("support-bot").run(config=shared.config)
    assert library.source == "library" and library.passed
    assert store.query("SELECT source FROM runs WHERE run_id = ?", [library.id]) == [{"source": "library"}]
    ours, theirs = comparable(store, partition), comparable(store, library.id)
    assert ours == theirs
    assert len(ours["outputs"]) == 4 and len(ours["scores"]) == 8
    assert ours["aggregates"]["exact"][1] == 1.0 and ours["verdicts"][0][1] is True

    metadata = materialisations(instance, AGGREGATES, partition)[0].metadata
    assert metadata["exact_mean"].value == 1.0
    assert metadata["actionable_mean"].value == 1.0
    assert metadata["exact_pass_rate_pct"].value == 100.0
    # exact >= 0.75, every evaluator scored, error rate <= 0%
    assert (metadata["gates_passed"].value, metadata["gates_failed"].value, metadata["errors"].value) == (3, 0, 0)
    assert metadata["cobalt_run_id"].value == partition
    assert metadata["run_page"].value == f"http://127.0.0.1:4001/runs/{partition}"
    assert f"cobalt report {partition} -o report.html" in metadata["run_page_note"].value
    assert "results_path" not in metadata and "items_flipped" not in metadata  # first run: nothing to flip
    assert metadata["worst_items"].value == "_every item passed every evaluator_"
    assert isinstance(metadata["diff_with_previous"], dg.MarkdownMetadataValue)
    scores_metadata = materialisations(instance, dg.AssetKey([SUPPORT, "scores"]), partition)[0].metadata
    assert scores_metadata["exact_mean"].value == 1.0 and scores_metadata["exact_eval_errors"].value == 0
    table = scores_metadata["items"].records
    assert [c.name for c in scores_metadata["items"].schema.columns][:5] == [
        "item", "status", "input", "expected", "output"]
    assert len(table) == 4 and table[0].data["input"] == "How do I reset password?"
    assert table[0].data["expected"] == table[0].data["output"] and table[0].data["exact"] == 1.0
    outputs_metadata = materialisations(instance, dg.AssetKey([SUPPORT, "outputs"]), partition)[0].metadata
    assert (outputs_metadata["items"].value, outputs_metadata["ok"].value) == (4, 4)


def test_second_dagster_run_diffs_with_the_previous_one(fresh: Project, instance: dg.DagsterInstance) -> None:
    first, _ = run_job(fresh, instance, SUMMARIZER)
    second, result = run_job(fresh, instance, SUMMARIZER)
    assert result.success
    first_md = materialisations(instance, dg.AssetKey([SUMMARIZER, "aggregates"]), first)[0].metadata
    assert "first run" in first_md["diff_with_previous"].value
    diff = materialisations(instance, dg.AssetKey([SUMMARIZER, "aggregates"]), second)[0].metadata
    lines = diff["diff_with_previous"].value.splitlines()
    assert lines[0] == f"Compared with run `{first}`"
    assert "| short | 1.000 | 1.000 | +0.000 | 0 |" in lines
    assert diff["short_mean"].value == 1.0


# 3. Gates --------------------------------------------------------------------------------------------


def test_a_failing_gate_blocks_deploy_now_and_later(shared: Project, instance: dg.DagsterInstance,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPPORT_BOT_BROKEN", "1")
    partition, result = run_job(shared, instance)
    assert not result.success
    record = instance.get_run_record_by_id(result.run_id)
    assert record is not None and record.dagster_run.status == dg.DagsterRunStatus.FAILURE
    [evaluation] = check_evaluations(instance, result.run_id)
    assert evaluation.check_name == GATE and evaluation.asset_key == AGGREGATES
    assert evaluation.passed is False and evaluation.blocking is True
    assert evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["actual"].value == 0.0 and evaluation.metadata["expected"].value == 0.75
    assert evaluation.metadata["cobalt_run_id"].value == partition
    assert len(materialisations(instance, AGGREGATES, partition)) == 1  # the results are kept
    assert materialisations(instance, DEPLOY, partition) == []
    assert sorted((v["name"], v["passed"], v["actual"]) for v in shared.store.rows("verdicts", partition)) == [
        ("error rate <= 0%", True, 0.0), ("every evaluator scored", True, None), ("exact >= 0.75", False, 0.0)]

    # A later run of deploy alone re-reads the stored verdict (the agent is fine again by now).
    monkeypatch.delenv("SUPPORT_BOT_BROKEN")
    _, later = run_job(shared, instance, partition=partition, only=[DEPLOY])
    assert not later.success
    [failure] = [e for e in later.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "support_bot__deploy"
    message = failure.step_failure_data.error.message
    assert f"quality gates failed for 'support-bot' run {partition}" in message
    assert "exact >= 0.75" in message
    assert materialisations(instance, DEPLOY, partition) == []
    assert {e.event_type_value for e in later.all_events} & {"ASSET_MATERIALIZATION", "ASSET_CHECK_EVALUATION"} \
        == set()


def test_a_passing_gate_lets_deploy_materialise(shared: Project, instance: dg.DagsterInstance) -> None:
    partition, result = run_job(shared, instance)
    assert result.success
    [evaluation] = check_evaluations(instance, result.run_id)
    assert evaluation.passed is True and evaluation.severity == dg.AssetCheckSeverity.ERROR
    [deployed] = materialisations(instance, DEPLOY, partition)
    assert deployed.metadata["deployed_run"].value == partition
    # Deploying that partition again later succeeds: its stored verdict passed.
    _, later = run_job(shared, instance, partition=partition, only=[DEPLOY])
    assert later.success
    assert len(materialisations(instance, DEPLOY, partition)) == 2


def test_executing_a_gate_check_alone_re_reads_the_stored_verdict_of_the_partition(
        shared: Project, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    """The UI's "Execute" on a check: the check alone, for the partition picked there."""
    monkeypatch.setenv("SUPPORT_BOT_BROKEN", "1")
    failed, _ = run_job(shared, instance)
    monkeypatch.delenv("SUPPORT_BOT_BROKEN")
    check_only = shared.defs.resolve_job_def(f"{SUPPORT}_eval").get_subset(
        asset_selection=set(), asset_check_selection={dg.AssetCheckKey(AGGREGATES, GATE)})
    result = check_only.execute_in_process(instance=instance, partition_key=failed, raise_on_error=False)
    [evaluation] = check_evaluations(instance, result.run_id)
    assert (evaluation.passed, evaluation.partition) == (False, failed)  # still the stored verdict, not a crash
    assert evaluation.description == "exact = 0, must be at least 0.75"
    nothing = new_run_id()
    instance.add_dynamic_partitions(f"{SUPPORT}_runs", [nothing])
    result = check_only.execute_in_process(instance=instance, partition_key=nothing, raise_on_error=False)
    [evaluation] = check_evaluations(instance, result.run_id)
    assert (evaluation.passed, evaluation.partition) == (False, nothing)
    assert evaluation.description.startswith(f"no stored results for cobalt run {nothing}")


def test_deploy_of_a_partition_without_results_fails(shared: Project, instance: dg.DagsterInstance) -> None:
    partition = new_run_id()
    instance.add_dynamic_partitions("support_bot_runs", [partition])
    _, result = run_job(shared, instance, partition=partition, only=[DEPLOY])
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "has no stored results" in failure.step_failure_data.error.message


# 4. Schedule and request sensor ------------------------------------------------------------------------


def test_schedule_adds_a_partition_and_requests_its_run(shared: Project, instance: dg.DagsterInstance) -> None:
    schedule = shared.defs.resolve_schedule_def("support_bot_schedule")
    context = dg.build_schedule_context(instance=instance, repository_def=shared.defs.get_repository_def())
    data = schedule.evaluate_tick(context)
    [request] = data.run_requests or []
    assert request.partition_key and request.run_key == request.partition_key
    assert request.tags["cobalt/trigger"] == "schedule"
    assert instance.get_dynamic_partitions("support_bot_runs") == [request.partition_key]
    # The requested run is runnable as is.
    _, result = run_job(shared, instance, partition=request.partition_key)
    assert result.success
    assert shared.store.query("SELECT status FROM runs WHERE run_id = ?", [request.partition_key]) == [
        {"status": "completed"}]


def _requested(result: dg.SensorResult) -> list[dg.RunRequest]:
    """The run requests of the sensor's request look (its recording look records the module's earlier runs)."""
    return [r for r in result.run_requests or []
            if isinstance(r, dg.RunRequest) and r.tags.get("cobalt/trigger") != "record"]


def test_request_sensor_turns_a_request_file_into_a_run(shared: Project, instance: dg.DagsterInstance) -> None:
    path = cobalt_dagster.request_run(shared.config, "support-bot", concurrency=2)
    assert path.is_file() and path.parent == shared.config.output_path / "requests"
    sensor = shared.defs.resolve_sensor_def(cobalt_dagster.SENSOR)
    result = sensor(dg.build_sensor_context(instance=instance))
    assert isinstance(result, dg.SensorResult)
    [request] = _requested(result)
    [add] = [a for a in result.dynamic_partitions_requests or [] if path.stem in getattr(a, "partition_keys", [])]
    assert isinstance(add, dg.AddDynamicPartitionsRequest)
    assert (add.partitions_def_name, list(add.partition_keys)) == ("support_bot_runs", [path.stem])
    assert (request.job_name, request.partition_key, request.run_key) == ("support_bot_eval", path.stem, path.stem)
    assert request.tags == {"cobalt/trigger": "request", "cobalt/concurrency": "2"}
    assert not path.exists()
    # Nothing left: the next tick requests nothing.
    again = sensor(dg.build_sensor_context(instance=instance))
    assert isinstance(again, dg.SensorResult) and not _requested(again)


def test_request_sensor_sets_aside_bad_requests(shared: Project, instance: dg.DagsterInstance) -> None:
    directory = shared.config.output_path / "requests"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "a-garbled.json").write_text("{not json")
    (directory / "b-unknown.json").write_text('{"experiment": "nope"}')
    (directory / "c-list.json").write_text('["support-bot"]')
    (directory / "d-concurrency.json").write_text('{"experiment": "support-bot", "concurrency": "many"}')
    good = cobalt_dagster.request_run(shared.config, "my-summarizer-agent")
    result = shared.defs.resolve_sensor_def(cobalt_dagster.SENSOR)(dg.build_sensor_context(instance=instance))
    assert isinstance(result, dg.SensorResult)
    assert [(r.job_name, r.partition_key) for r in _requested(result)] == [("my_summarizer_agent_eval", good.stem)]
    assert sorted(p.name for p in directory.iterdir()) == ["a-garbled.rejected", "b-unknown.rejected",
                                                           "c-list.rejected", "d-concurrency.rejected"]
    for path in directory.iterdir():
        path.unlink()


# 5. record_runs: a library run recorded as a run of its experiment's job -------------------------------


def _cobalt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "COBALT_PROJECT_DIR",
                                                           "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([str(BIN / "cobalt"), *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)


def test_record_runs_records_a_library_run_once(fresh: Project) -> None:
    report = fresh.experiment("support-bot").run(config=fresh.config)
    [(run_id, dagster_run_id)] = cobalt_dagster.record_runs([report.id], config=fresh.config).items()
    assert run_id == report.id
    assert cobalt_dagster.record_runs([report.id], config=fresh.config) == {}  # already recorded: nothing twice
    with cobalt_dagster.local_instance(fresh.config) as instance:
        assert instance.get_dynamic_partitions("support_bot_runs") == [report.id]
        for stage in STAGES:
            key = dg.AssetKey([SUPPORT, stage])
            assert len(materialisations(instance, key, report.id)) == 1, stage
            assert instance.get_materialized_partitions(key) == {report.id}
        metadata = materialisations(instance, AGGREGATES, report.id)[0].metadata
        assert metadata["exact_mean"].value == 1.0 and metadata["cobalt_run_id"].value == report.id
        outputs = materialisations(instance, dg.AssetKey([SUPPORT, "outputs"]), report.id)[0].metadata
        assert (outputs["items"].value, outputs["ok"].value, outputs["errors"].value) == (4, 4, 0)
        [check] = instance.event_log_storage.get_asset_check_execution_history(CHECK, limit=10)
        assert check.evaluation is not None and check.evaluation.passed is True
        [record] = instance.get_run_records()
        assert record.dagster_run.run_id == dagster_run_id and record.dagster_run.job_name == "support_bot_eval"
    assert fresh.store.dagster_runs_of([report.id]) == {report.id: dagster_run_id}


def test_recording_leaves_a_handler_that_spares_only_stderr_its_stream(fresh: Project) -> None:
    """absl's logging handler (TensorFlow, rouge-score) closes its stream on close unless that stream is the
    current sys.stderr, and a Dagster run's dictConfig closes every handler: recording must not swap
    sys.stderr meanwhile, or the process's own stderr is closed under it."""
    import contextlib
    import io
    import logging
    import sys

    class SparesOnlyStderr(logging.StreamHandler):  # type: ignore[type-arg]
        def close(self) -> None:
            if self.stream not in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__):
                self.stream.close()
            super().close()

    stderr = io.StringIO()
    handler = SparesOnlyStderr(stderr)
    logger = logging.getLogger("cobalt-test-absl-like")
    logger.addHandler(handler)
    try:
        with contextlib.redirect_stderr(stderr):  # this process's stderr, as absl found it when imported
            report = fresh.experiment("support-bot").run(config=fresh.config)
            recorded = cobalt_dagster.record_runs([report.id], config=fresh.config)
            assert not stderr.closed
        assert list(recorded) == [report.id]
    finally:
        logger.removeHandler(handler)


def test_recorded_checks_look_like_the_executed_checks(fresh: Project, instance: dg.DagsterInstance,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPPORT_BOT_BROKEN", "1")
    _, result = run_job(fresh, instance)
    [real] = check_evaluations(instance, result.run_id)
    library = fresh.experiment("support-bot").run(config=fresh.config)
    [dagster_run_id] = cobalt_dagster.record_runs([library.id], config=fresh.config, instance=instance).values()
    [recorded] = check_evaluations(instance, dagster_run_id)

    def values(metadata: Any) -> dict[str, Any]:
        return {k: v.value for k, v in metadata.items() if k != "cobalt_run_id"}

    assert (recorded.passed, recorded.blocking, recorded.severity) == (False, True, dg.AssetCheckSeverity.ERROR)
    assert recorded.partition == library.id
    assert values(recorded.metadata) == values(real.metadata)
    assert values(real.metadata) == {"actual": 0.0, "expected": 0.75,
                                     "message": "exact = 0, must be at least 0.75"}


def test_record_runs_leaves_a_run_dagster_executed(fresh: Project, instance: dg.DagsterInstance) -> None:
    partition, result = run_job(fresh, instance)
    assert result.success
    report = load_report(fresh.store, partition)
    assert report.source == "dagster"
    assert fresh.store.dagster_runs_of([partition]) == {partition: result.run_id}  # the pages' link
    assert cobalt_dagster.record_runs([partition], config=fresh.config, instance=instance) == {}
    for stage in STAGES:
        assert len(materialisations(instance, dg.AssetKey([SUPPORT, stage]), partition)) == 1, stage
    assert len(instance.event_log_storage.get_asset_check_execution_history(CHECK, limit=10)) == 1


def test_gates_find_the_project_from_cobalt_project_dir(
        fresh: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = fresh.experiment("support-bot").run(config=fresh.config)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # as a code server started from another directory
    monkeypatch.setenv("COBALT_PROJECT_DIR", str(fresh.root))
    cobalt_dagster.require_gates_passed("support-bot", report.id)  # found, completed and passed: no error
    with pytest.raises(dg.Failure, match="has no stored results"):
        cobalt_dagster.require_gates_passed("support-bot", "no-such-run")
    assert not (elsewhere / ".cobalt").exists()


# 6. Dagster-launched runs: failures and judge calls ------------------------------------------------------


class AgentCrash(BaseException):
    """Gets past cobalt's per-item error handling (which catches Exception), so the outputs step fails."""


def bare_config(root: Path, toml: str = "") -> Config:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cobalt.toml").write_text(toml, encoding="utf-8")
    return load_config(root)


def test_a_failed_step_fails_the_dagster_run_even_when_the_experiment_is_named_like_a_gate(tmp_path: Path) -> None:
    config = bare_config(tmp_path / "proj")

    async def crash(ctx: Any) -> str:
        raise AgentCrash("the agent's process died")

    keeper = experiment("gate-keeper", Dataset([{"input": "x"}]), crash,
                        evaluators=[Evaluator(name="one", type="function", fn=lambda ctx: 1.0)])
    report, result = execute_job(config, keeper)
    assert not result.success
    # Its shard's last attempt ended the run's lease: every reader sees it incomplete, resumable, at once.
    assert report is not None and report.status == "incomplete"
    failed = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failed and all("gate_keeper_run_shard" in (e.step_key or "") for e in failed)
    messages = " ".join(e.step_failure_data.error.message for e in failed
                        if e.step_failure_data and e.step_failure_data.error)
    assert "the agent's process died" in messages


def test_dagster_and_library_runs_agree_on_judge_calls_cost_and_tokens(judged_project: Path, llm: Any) -> None:
    write_judge_config(judged_project, llm, extra="[cache]\nenabled = false\n")  # both runs really call
    config = load_config(judged_project)
    judged = experiment("judged", Dataset([{"input": f"q{i}"} for i in range(3)]), lambda ctx: "an answer",
                        evaluators=[Evaluator(name="relevance", prompt="Does {{output}} answer {{input}}?")])
    dagster_report, result = execute_job(config, judged)
    assert result.success and dagster_report is not None
    library = judged.run(config=config)
    store = Store(config.output_path / "cobalt.duckdb")
    ours, theirs = comparable(store, dagster_report.id), comparable(store, library.id)
    assert ours == theirs
    assert ours["summary"]["judge_calls"] == 3 and ours["summary"]["total_tokens"] == 3 * 30
    assert ours["summary"]["judge_cost"] is not None and ours["summary"]["judge_cost"] > 0
    assert llm.count() == 6


# 7. The local instance and `cobalt serve` ------------------------------------------------------------


def test_local_instance_has_a_dagster_yaml_and_migrates_again_after_a_dagster_upgrade(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = bare_config(tmp_path / "proj")
    upgrades: list[str] = []
    real_upgrade = dg.DagsterInstance.upgrade

    def counting_upgrade(self: dg.DagsterInstance, *args: Any, **kwargs: Any) -> Any:
        upgrades.append(dg.__version__)
        return real_upgrade(self, *args, **kwargs)

    monkeypatch.setattr(dg.DagsterInstance, "upgrade", counting_upgrade)
    home = cobalt_dagster.dagster_home(config)
    with cobalt_dagster.local_instance(config) as instance:
        assert instance.telemetry_enabled is False  # from the dagster.yaml cobalt wrote
    marker = home / ".cobalt-migrated"
    assert (home / "dagster.yaml").is_file() and marker.read_text() == f"{dg.__version__}\n"
    assert len(upgrades) == 1
    with cobalt_dagster.local_instance(config):
        pass
    assert len(upgrades) == 1  # same Dagster: no second migration
    marker.write_text("1.12.0\n")  # migrated by an older Dagster
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")  # the user's own settings
    with cobalt_dagster.local_instance(config) as instance:
        assert instance.telemetry_enabled is True  # never overwritten
    assert len(upgrades) == 2 and marker.read_text() == f"{dg.__version__}\n"


def test_serve_loads_the_projects_own_definitions(tmp_path: Path) -> None:
    from cobalt_lib.cli._serve import DEFAULT_MODULE, dagster_commands, dagster_target

    root = copy_example(tmp_path / "proj")
    assert dagster_target(root) == ["-f", str(root / "definitions.py")]  # the example's deploy asset too
    assert dagster_target(root, "definitions") == ["-m", "definitions"]  # --module wins
    (root / "workspace.yaml").write_text("load_from:\n  - python_file: definitions.py\n")
    assert dagster_target(root) == ["-w", str(root / "workspace.yaml")]  # workspace.yaml beats definitions.py
    empty = tmp_path / "empty"
    empty.mkdir()
    assert dagster_target(empty) == ["-m", DEFAULT_MODULE]
    assert dagster_target(empty, DEFAULT_MODULE) == ["-m", DEFAULT_MODULE]  # an installed module is fine
    webserver, daemon = dagster_commands(["-f", "defs.py"])
    # on a Unix socket, no port
    assert webserver[1:] == ["-c", "from cobalt_dagster._webserver import main; main()", "-f", "defs.py"]
    # Dagster's own command, asking the code server for its id every 10 s rather than every second
    assert daemon[1:] == ["-c", "from cobalt_dagster._code_server import daemon_main; daemon_main()", "run", "-f",
                          "defs.py"]

    result = _cobalt(root, "serve", "--module", "no_such_defs", "--no-open")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: No Python module 'no_such_defs' in {root} or the environment; pass --module a module "
        "importable from the project root, such as `definitions`."]
    assert not (root / ".cobalt").exists()  # nothing started

    configured = root.parent / "configured"
    configured.mkdir()
    (configured / "cobalt.toml").write_text('[dashboard]\nmodule = "missing_cfg_defs"\n')
    result = _cobalt(configured, "serve", "--no-open")
    assert result.returncode == 2 and "'missing_cfg_defs'" in result.stderr  # [dashboard] module is used


# 8. Names ----------------------------------------------------------------------------------------------


def test_dagster_names() -> None:
    assert cobalt_dagster.dagster_name("my-summarizer-agent") == "my_summarizer_agent"
    assert cobalt_dagster.dagster_name("support bot.v2") == "support_bot_v2"
    assert cobalt_dagster.dagster_name("already_fine_1") == "already_fine_1"
    assert cobalt_dagster.dagster_name("2024 eval") == "x_2024_eval"  # a Dagster name cannot start with a digit
    assert cobalt_dagster.check_name("exact >= 0.75") == GATE
    # named by content, not position: reordering keeps each check (and its history); repeats get a suffix
    assert cobalt_dagster.check_names(["latency.p95 <= 5000", "exact >= 0.75", "exact >= 0.75"]) == [
        "gate_latency_p95_max_5000", GATE, GATE + "_2"]
    long = cobalt_dagster.check_name("x" * 80 + " >= 1")
    assert len(long) == 60 and long != cobalt_dagster.check_name("x" * 80 + " >= 2")


def test_colliding_experiment_names_are_a_config_error(tmp_path: Path) -> None:
    data = Dataset([{"input": "x"}])
    scorer = [Evaluator(name="len", type="function", fn=lambda ctx: 1.0)]
    both = [experiment("a-b", data, lambda ctx: "x", evaluators=scorer),
            experiment("a_b", data, lambda ctx: "x", evaluators=scorer)]
    with pytest.raises(ConfigError) as error:
        cobalt_dagster.build_definitions(tmp_path, experiments=both)
    assert "'a-b'" in str(error.value) and "'a_b'" in str(error.value)


def test_experiment_display_names_stay_as_written(shared: Project, instance: dg.DagsterInstance) -> None:
    partition, result = run_job(shared, instance, SUMMARIZER)
    assert result.success
    assert shared.store.query("SELECT experiment FROM runs WHERE run_id = ?", [partition]) == [
        {"experiment": "my-summarizer-agent"}]
    assert len(materialisations(instance, dg.AssetKey([SUMMARIZER, "aggregates"]), partition)) == 1


# 9. History read back from the instance agrees with the store --------------------------------------------


def test_instance_history_agrees_with_cobalt_history(fresh: Project, instance: dg.DagsterInstance,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    good, _ = run_job(fresh, instance)
    monkeypatch.setenv("SUPPORT_BOT_BROKEN", "1")
    bad, _ = run_job(fresh, instance)
    monkeypatch.delenv("SUPPORT_BOT_BROKEN")
    library = fresh.experiment("support-bot").run(config=fresh.config)
    assert list(cobalt_dagster.record_runs([library.id], config=fresh.config, instance=instance)) == [library.id]

    listed = _cobalt(fresh.root, "history", "--experiment", "support-bot", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert set(runs) == {good, bad, library.id}
    assert {k: r["passed"] for k, r in runs.items()} == {good: True, bad: False, library.id: True}

    assert instance.get_materialized_partitions(AGGREGATES) == set(runs)
    records = instance.fetch_materializations(AGGREGATES, limit=100).records
    by_partition = {r.partition_key: r.asset_materialization for r in records}
    assert set(by_partition) == set(runs)
    for run_id, materialisation in by_partition.items():
        assert materialisation is not None
        metadata = materialisation.metadata
        assert metadata["cobalt_run_id"].value == run_id
        assert metadata["exact_mean"].value == runs[run_id]["scores"]["exact"]
        assert metadata["actionable_mean"].value == runs[run_id]["scores"]["actionable"]
        assert metadata["gates_failed"].value == (0 if runs[run_id]["passed"] else 1)

    history = instance.event_log_storage.get_asset_check_execution_history(CHECK, limit=100)
    checked = {}
    for execution in history:
        assert execution.evaluation is not None
        checked[str(execution.evaluation.metadata["cobalt_run_id"].value)] = execution.evaluation.passed
    assert checked == {k: r["passed"] for k, r in runs.items()}


def test_config_thresholds_become_checks_only_where_the_metric_exists() -> None:
    from cobalt_dagster._definitions import build_experiment_defs
    from cobalt_lib import Dataset, Evaluator, define_config, experiment

    data = Dataset([{"expected_output": "a"}])
    judged = experiment("with-exact", data, lambda ctx: "a", evaluators=[Evaluator(name="exact", type="exact-match")])
    other = experiment("without", data, lambda ctx: "a", evaluators=[Evaluator(name="f", type="function", fn=len)])
    config = define_config(ci={"thresholds": {"exact": {"min": 0.9}}})
    defs = {d.experiment.name: d for d in build_experiment_defs([judged, other], config)}
    names = {name: sorted(spec.name for check in d.checks for spec in check.check_specs) for name, d in defs.items()}
    assert names == {"with-exact": [ERRORS, SCORED, "gate_exact_min_0_9"], "without": [ERRORS, SCORED]}


def test_clean_removes_the_runs_it_deletes_from_the_dagster_instance(tmp_path: Path) -> None:
    from cobalt_lib.ops import clean_up, plan_cleanup

    config = bare_config(tmp_path / "proj")
    kept_exp = experiment("kept-one", Dataset([{"input": "x"}]), lambda ctx: "x",
                          evaluators=[Evaluator(name="one", type="function", fn=lambda ctx: 1.0)])
    gone_exp = experiment("gone-one", Dataset([{"input": "y"}]), lambda ctx: "y",
                          evaluators=[Evaluator(name="one", type="function", fn=lambda ctx: 1.0)])
    kept, _ = execute_job(config, kept_exp)
    gone, _ = execute_job(config, gone_exp)
    assert kept is not None and gone is not None
    with cobalt_dagster.local_instance(config) as instance:
        assert instance.get_dynamic_partitions("gone_one_runs") == [gone.id]
        assert instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": gone.id}))
    plan = plan_cleanup(config, cache=False, results=True)
    plan.run_ids = [gone.id]  # clean one run of the two
    clean_up(config, plan)
    with cobalt_dagster.local_instance(config) as instance:
        assert instance.get_dynamic_partitions("gone_one_runs") == []
        assert instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": gone.id})) == []
        assert materialisations(instance, dg.AssetKey(["gone_one", "aggregates"]), gone.id) == []
        assert instance.get_dynamic_partitions("kept_one_runs") == [kept.id]
        assert materialisations(instance, dg.AssetKey(["kept_one", "aggregates"]), kept.id)


def test_clean_creates_no_dagster_instance(tmp_path: Path) -> None:
    from cobalt_lib.ops import clean_up, plan_cleanup

    config = bare_config(tmp_path / "proj")
    exp = experiment("plain", Dataset([{"input": "x"}]), lambda ctx: "x",
                     evaluators=[Evaluator(name="one", type="function", fn=lambda ctx: 1.0)])
    from cobalt_lib.ops import run_plan

    run_plan(prepare(exp, config))
    clean_up(config, plan_cleanup(config, cache=False, results=True))
    assert Store(config.output_path / "cobalt.duckdb").runs() == []
    assert not (config.output_path / "dagster").exists()


def test_a_run_on_cobalts_instance_prints_dagsters_info_and_above_only(shared: Project,
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    """What `cobalt serve`'s terminal shows of the runs its daemon launches: no DEBUG event lines.
    (Last in the file: it adds a run to the shared project.)"""
    with cobalt_dagster.local_instance(shared.config) as own:
        _, result = run_job(shared, own)
    assert result.success
    printed = capfd.readouterr().err
    assert " - INFO - support_bot_eval - " in printed and " - DEBUG - " not in printed


def test_a_failed_gate_prints_as_one_line_and_a_crash_keeps_its_stack_trace(
        fresh: Project, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """What `cobalt serve`'s terminal shows of a run whose gate fails: the verdict on the step's line, no
    stack trace; the run's failure on one line too. Both through the job's own default run config."""
    monkeypatch.setenv("SUPPORT_BOT_BROKEN", "1")
    with cobalt_dagster.local_instance(fresh.config) as own:
        partition, result = run_job(fresh, own)
    assert not result.success
    printed = capfd.readouterr().err
    assert "Traceback" not in printed and "Stack Trace" not in printed and 'File "' not in printed
    [step] = [line for line in printed.splitlines() if " - STEP_FAILURE - " in line]
    assert " - ERROR - support_bot_eval - " in step
    assert step.endswith(f'failed. Quality gate exact >= 0.75 failed for run {partition}: exact = 0, must be '
                         "at least 0.75")
    [run] = [line for line in printed.splitlines() if " - RUN_FAILURE - " in line]
    assert run.endswith("Steps failed: ['support_bot__aggregates_gate_exact_min_0_75'].")
    assert " - DEBUG - " not in printed
    # Written to the terminal directly, not through the step's log capture: its `tail` copying the captured
    # file back is killed as the step ends and loses what it had not copied (in CI, this very line).
    captured = [path.read_text() for path in Path(own.root_directory).rglob("compute_logs/*.err")]
    assert captured and not [text for text in captured if " - STEP_FAILURE - " in text]


def test_a_crashed_step_still_prints_its_stack_trace(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    async def crash(ctx: Any) -> str:
        raise AgentCrash("the agent's process died")

    crashy = experiment("crashy", Dataset([{"input": "x"}]), crash,
                        evaluators=[Evaluator(name="one", type="function", fn=lambda ctx: 1.0)])
    _, result = execute_job(bare_config(tmp_path / "proj"), crashy)
    assert not result.success
    printed = capfd.readouterr().err
    [step, *_] = [line for line in printed.splitlines() if " - STEP_FAILURE - " in line]
    assert "crashy_run_shard" in step and "Stack Trace:" in printed and "the agent's process died" in printed


@pytest.mark.parametrize(("tags", "trigger"), [({}, "launch"), ({"dagster/backfill": "abcdefgh"}, "backfill")])
def test_a_partition_materialised_from_the_asset_graph_gets_the_experiment_jobs_tags(
        shared: Project, instance: dg.DagsterInstance, tags: dict[str, str], trigger: str) -> None:
    """The asset graph's "Materialize" (one partition) and an asset backfill launch Dagster's `__ASSET_JOB`, with
    none of the experiment job's tags: the run gets them as it starts, and cobalt stores it as any run."""
    partition = new_run_id()
    instance.add_dynamic_partitions(f"{SUPPORT}_runs", [partition])
    own = [dg.AssetKey([SUPPORT, stage]) for stage in STAGES]
    result = shared.defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, partition_key=partition, asset_selection=own, tags=tags, raise_on_error=False)
    assert result.success and result.dagster_run.job_name == "__ASSET_JOB"
    record = instance.get_run_record_by_id(result.run_id)
    assert record is not None
    carried = record.dagster_run.tags
    assert carried["cobalt.tag/dagster-example"] == "dagster-example" and carried["cobalt/trigger"] == trigger
    stored = shared.store.get_run(partition)
    assert stored is not None and "dagster-example" in stored["tags"] and stored["status"] == "completed"
    assert shared.store.dagster_runs_of([partition]) == {partition: result.run_id}
