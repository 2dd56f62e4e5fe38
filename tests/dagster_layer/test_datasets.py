"""Stored datasets in Dagster, on a real instance and store: each dataset an asset materialised once per
version with its content hash as data version, upstream of the experiment that reads it, and a new version
launching the experiment set to evaluate on it."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

import cobalt_dagster
from cobalt_lib import Store, load_config
from cobalt_lib.datasets import push_dataset
from cobalt_lib.experiments._discovery import load_experiments
from cobalt_lib.store._history import load_report

pytestmark = pytest.mark.slow

QA = '''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("qa", Dataset.from_store("qa"), lambda ctx: ctx.item["expected_output"],
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''
KEY = dg.AssetKey(["datasets", "qa"])


def push(project: Path, n: int) -> str:
    file = project / f"qa{n}.jsonl"
    file.write_text("".join(json.dumps({"id": f"q{i}", "input": f"question {i}", "expected_output": f"a{i}"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return push_dataset(Store(project / ".cobalt" / "cobalt.duckdb"), "qa", file).version.hash


def test_dataset_versions_are_materialisations_upstream_of_the_experiment_and_launch_it(
        project: Path, instance: dg.DagsterInstance) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(QA, encoding="utf-8")
    (project / "cobalt.toml").write_text('[datasets]\nevaluate_on_new_version = ["qa"]\n', encoding="utf-8")
    first = push(project, 3)
    config = load_config()
    defs = cobalt_dagster.build_definitions(project)
    graph = defs.resolve_asset_graph()
    assert KEY in graph.get(dg.AssetKey(["qa", "dataset"])).parent_keys
    sensor = defs.resolve_sensor_def(cobalt_dagster.SENSOR)

    result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    assert isinstance(result, dg.SensorResult)
    [request] = result.run_requests or []
    assert request.tags["cobalt/dataset"] == "qa@1" and request.job_name == "qa_eval"
    second = push(project, 4)
    result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    assert isinstance(result, dg.SensorResult)
    [request] = result.run_requests or []
    assert request.tags["cobalt/dataset"] == "qa@2"
    again = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    assert isinstance(again, dg.SensorResult) and not again.run_requests  # each version is recorded once

    records = instance.fetch_materializations(KEY, limit=10).records
    events = [r.asset_materialization for r in reversed(records)]
    assert [(e.metadata["ref"].value, e.tags["dagster/data_version"]) for e in events if e is not None] == [
        ("qa@1", first), ("qa@2", second)]

    # The requested run, as the daemon would launch it: it reads the new version and records it.
    [experiment] = load_experiments(config)
    assert request.partition_key is not None
    instance.add_dynamic_partitions("qa_runs", [request.partition_key])
    run = cobalt_dagster.build_definitions(project, experiments=[experiment]).resolve_job_def("qa_eval")
    outcome = run.execute_in_process(instance=instance, partition_key=request.partition_key, tags=request.tags)
    assert outcome.success
    report = load_report(Store.for_config(config), request.partition_key)
    assert report.identity is not None and report.identity.dataset.ref == "qa@2" and len(report.items) == 4
    [materialised] = [r.asset_materialization for r in instance.fetch_materializations(
        dg.AssetKey(["qa", "dataset"]), limit=1).records]
    assert materialised is not None and materialised.metadata["dataset_version"].value == "qa@2"
