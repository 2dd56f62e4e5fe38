"""`cobalt run` through Dagster: every run is a real Dagster run on the project's local instance."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import dagster as dg

from cobalt_lib import Config, ExperimentReport, Store
from cobalt_lib._history import load_report
from cobalt_lib._pipeline import Observer, RunPlan, finish

from ._assets import ExperimentDefs
from ._definitions import build_experiment_defs
from ._instance import QUIET_RUN_CONFIG, local_instance, quiet_dagster_warnings
from ._live import OBSERVERS
from ._resource import CobaltResource


def run_with_dagster(plans: Sequence[RunPlan], config: Config, observer: Observer | None = None, *,
                     concurrency: int | None = None, add_tags: Sequence[str] = ()) -> list[ExperimentReport]:
    """Materialise each plan's experiment for a new partition (its run id), in process, one after another."""
    quiet_dagster_warnings()
    instance = local_instance(config)
    experiment_defs = build_experiment_defs([p.experiment for p in plans], config)
    definitions = dg.Definitions(
        assets=[a for d in experiment_defs for a in d.assets],
        asset_checks=[c for d in experiment_defs for c in d.checks],
        jobs=[d.job for d in experiment_defs],
        resources={"cobalt": CobaltResource(project_dir=str(config.root))},
        executor=dg.in_process_executor,
    )
    tags = {"cobalt/trigger": "cli"}
    if concurrency:
        tags["cobalt/concurrency"] = str(concurrency)
    if add_tags:
        tags["cobalt/tags"] = ",".join(add_tags)
    return [_run_one(plan, d, definitions, instance, observer, tags) for plan, d in zip(plans, experiment_defs,
                                                                                         strict=True)]


def _run_one(plan: RunPlan, target: ExperimentDefs, definitions: dg.Definitions, instance: dg.DagsterInstance,
             observer: Observer | None, tags: dict[str, str]) -> ExperimentReport:
    instance.add_dynamic_partitions(target.partitions_name, [plan.run_id])
    store = Store(plan.config.output_path / "cobalt.duckdb")
    if observer:
        OBSERVERS[plan.run_id] = observer
    started = time.perf_counter()
    try:
        result = definitions.resolve_job_def(target.job.name).execute_in_process(
            instance=instance, partition_key=plan.run_id, tags=tags, raise_on_error=False,
            run_config=QUIET_RUN_CONFIG)
    except KeyboardInterrupt:
        _mark_incomplete(plan, store, started)
        raise
    finally:
        OBSERVERS.pop(plan.run_id, None)
    failure = _step_failure(result)
    if failure:
        print(f"cobalt: Dagster run {result.run_id} failed: {failure}", file=sys.stderr)
        if not _finished(store, plan.run_id):
            return _mark_incomplete(plan, store, started)
    return load_report(store, plan.run_id)


def _finished(store: Store, run_id: str) -> bool:
    rows = store.query("SELECT status FROM runs WHERE run_id = ?", [run_id]) if store.path.exists() else []
    return bool(rows) and rows[0]["status"] == "completed"


def _mark_incomplete(plan: RunPlan, store: Store, started: float) -> ExperimentReport:
    """Keep what finished: aggregate the stored items and mark the run incomplete."""
    stored = store.path.exists() and store.query("SELECT 1 FROM runs WHERE run_id = ?", [plan.run_id])
    items = load_report(store, plan.run_id).items if stored else []
    return finish(plan, items, (time.perf_counter() - started) * 1000, "incomplete")


def _step_failure(result: dg.ExecuteInProcessResult) -> str | None:
    """The first failed asset step's error (a failed gate check is not a failure of the run's work)."""
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE" and event.step_key and "gate_" not in event.step_key:
            data = event.step_failure_data
            error = data.error if data else None
            return f"{event.step_key}: {error.message.strip() if error else 'unknown error'}"
    return None
