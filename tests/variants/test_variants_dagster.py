"""Variants in Dagster, on a real temporary instance: each variant's run is its own partition (keyed by its run
id, tagged with its variant and group), recorded after a library run and launched by a schedule."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from fakellm import FakeLLM
from variant_project import sweep_project

import cobalt_dagster
from cobalt_lib import Store, load_config, load_experiments
from cobalt_lib.links import GROUP_TAG, VARIANT_TAG
from cobalt_lib.ops import RunOptions, Selection, run_experiments

pytestmark = pytest.mark.slow

NAMED = "gate_quality_min_0_75_model_large_prompt_v1"


def _checks(instance: dg.DagsterInstance, dagster_run_id: str) -> dict[str, tuple[bool, str]]:
    records = instance.get_records_for_run(run_id=dagster_run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    found = {}
    for record in records.records:
        event = record.event_log_entry.dagster_event
        assert event is not None
        data = event.asset_check_evaluation_data
        found[data.check_name] = (data.passed, data.metadata["message"].value)
    return found


def test_a_library_group_is_recorded_as_one_partition_per_variant(project: Path, llm: FakeLLM,
                                                                  instance: dg.DagsterInstance) -> None:
    config = sweep_project(project, llm)
    reports = run_experiments(config, Selection(), RunOptions(dagster=False)).reports
    recorded = cobalt_dagster.record_runs([r.id for r in reports], config=config, instance=instance)
    assert sorted(instance.get_dynamic_partitions("sweep_runs")) == sorted(r.id for r in reports)
    by_variant = {}
    for report in reports:
        [record] = instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": report.id}))
        run = record.dagster_run
        assert (run.tags[VARIANT_TAG], run.tags[GROUP_TAG]) == (report.variant, report.group_id)
        assert run.run_id == recorded[report.id]
        by_variant[report.variant] = (run.status, _checks(instance, run.run_id))
    # every variant's threshold on its own partition; the named gate passes on the others, saying why
    status, checks = by_variant["model=large,prompt=v2"]
    assert status == dg.DagsterRunStatus.FAILURE and checks["gate_quality_min_0_4"][0] is False
    assert checks[NAMED] == (True, "applies to variant model=large,prompt=v1 only; this run is variant "
                                   "model=large,prompt=v2")
    status, checks = by_variant["model=large,prompt=v1"]
    assert status == dg.DagsterRunStatus.SUCCESS and checks[NAMED][0] is True
    assert "must be at least 0.75" in checks[NAMED][1]
    group = instance.get_run_records(dg.RunsFilter(tags={GROUP_TAG: str(reports[0].group_id)}))
    assert len(group) == 4  # the Runs filter finds the group
    [materialised] = instance.fetch_materializations(dg.AssetRecordsFilter(
        asset_key=dg.AssetKey(["sweep", "aggregates"]), asset_partitions=[reports[2].id]), limit=1).records
    metadata = materialised.asset_materialization.metadata  # type: ignore[union-attr]
    assert (metadata["cobalt_variant"].value, metadata["cobalt_group"].value) == (reports[2].variant,
                                                                                 reports[2].group_id)


def test_a_schedule_requests_one_partition_per_variant_and_each_runs_its_variant(
        project: Path, llm: FakeLLM, instance: dg.DagsterInstance) -> None:
    sweep_project(project, llm)
    with (project / "cobalt.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[schedules]\nsweep = { cron = "0 2 * * *" }\n')
    config = load_config(project)
    defs = cobalt_dagster.build_definitions(config.root, experiments=load_experiments(config))
    schedule = defs.resolve_schedule_def("sweep_schedule")
    context = dg.build_schedule_context(instance=instance, repository_def=defs.get_repository_def())
    data = schedule.evaluate_tick(context)
    requests = data.run_requests or []
    assert [r.tags[VARIANT_TAG] for r in requests] == ["model=small,prompt=v1", "model=small,prompt=v2",
                                                        "model=large,prompt=v1", "model=large,prompt=v2"]
    assert len({r.tags[GROUP_TAG] for r in requests}) == 1
    assert sorted(instance.get_dynamic_partitions("sweep_runs")) == sorted(str(r.partition_key) for r in requests)
    large = requests[2]
    result = defs.resolve_job_def("sweep_eval").execute_in_process(
        instance=instance, partition_key=large.partition_key, tags=large.tags, raise_on_error=False)
    assert result.success
    run = Store.for_config(config).get_run(str(large.partition_key))
    assert run is not None and (run["variant"], run["group_id"], run["source"]) == (
        "model=large,prompt=v1", large.tags[GROUP_TAG], "dagster")
    outputs = Store.for_config(config).rows("outputs", str(large.partition_key))
    assert [o["output"] for o in outputs][:2] == ["SCORE=0.80 answer 0 (large)", "SCORE=0.82 answer 1 (large)"]


def test_a_run_request_starts_one_partition_per_variant(project: Path, llm: FakeLLM,
                                                        instance: dg.DagsterInstance) -> None:
    config = sweep_project(project, llm)
    defs = cobalt_dagster.build_definitions(config.root, experiments=load_experiments(config))
    cobalt_dagster.request_run(config, "sweep", tags=["nightly"])
    result = defs.resolve_sensor_def(cobalt_dagster.SENSOR)(dg.build_sensor_context(instance=instance))
    assert isinstance(result, dg.SensorResult)
    requests = result.run_requests or []
    [add] = result.dynamic_partitions_requests or []
    assert [r.tags[VARIANT_TAG] for r in requests] == ["model=small,prompt=v1", "model=small,prompt=v2",
                                                        "model=large,prompt=v1", "model=large,prompt=v2"]
    assert list(add.partition_keys or []) == [r.partition_key for r in requests]
    assert {r.tags[cobalt_dagster.tag_key("nightly")] for r in requests} == {"nightly"}
    assert len({r.tags[GROUP_TAG] for r in requests}) == 1
