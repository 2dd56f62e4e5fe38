"""`cobalt run` through Dagster: every run is a real Dagster run on the project's local instance."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import dagster as dg
from dagster._core.errors import DagsterExecutionInterruptedError  # not exported by `dagster` in 1.13

from cobalt_lib import Config, ExperimentReport, Store
from cobalt_lib._signals import rearm
from cobalt_lib.results import load_report
from cobalt_lib.run import Observer, RunInterrupted, RunPlan, finish

from ._assets import ExperimentDefs
from ._definitions import build_experiment_defs
from ._instance import QUIET_RUN_CONFIG, local_instance, quiet_dagster_warnings
from ._live import OBSERVERS
from ._resource import CobaltResource

#: Error classes of failed steps: a blocking gate that failed, and Ctrl-C inside a step.
GATE_FAILED = "DagsterAssetCheckFailedError"
INTERRUPTED = "DagsterExecutionInterruptedError"


def run_with_dagster(plans: Sequence[RunPlan], config: Config, observer: Observer | None = None, *,
                     concurrency: int | None = None, add_tags: Sequence[str] = ()) -> list[ExperimentReport]:
    """Materialise each plan's experiment for a new partition (its run id), in process, one after another."""
    quiet_dagster_warnings()
    instance = local_instance(config, capture_logs=False)
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
    store = Store.for_config(plan.config)
    if observer:
        OBSERVERS[plan.run_id] = observer
    try:
        result = definitions.resolve_job_def(target.job.name).execute_in_process(
            instance=instance, partition_key=plan.run_id, tags=tags, raise_on_error=False,
            run_config=QUIET_RUN_CONFIG)
    except (KeyboardInterrupt, DagsterExecutionInterruptedError):  # Ctrl-C outside a step
        raise _interrupted(plan, store, tags) from None
    finally:
        OBSERVERS.pop(plan.run_id, None)
        rearm()  # Dagster left SIGTERM on its idea of a SIGINT handler
    failures = _step_failures(result)
    # Inside a step Dagster turns Ctrl-C into a step failure; it is still the user stopping the run.
    if any(cls == INTERRUPTED for _, cls, _ in failures):
        raise _interrupted(plan, store, tags)
    if failures:
        step, _, message = failures[0]
        print(f"cobalt: Dagster run {result.run_id} failed: {step}: {message}", file=sys.stderr)
        if not _finished(store, plan.run_id):
            report = _mark_incomplete(plan, store, tags)
            if observer:  # the aggregates asset never ran to print the summary: show what was kept
                observer.on_finish(report)
            return report
    return load_report(store, plan.run_id)


def _finished(store: Store, run_id: str) -> bool:
    return store.run_status(run_id) == "completed"


def _mark_incomplete(plan: RunPlan, store: Store, tags: dict[str, str]) -> ExperimentReport:
    """Keep what finished: aggregate the stored items and mark the run incomplete."""
    # Finish it as the assets would have: source "dagster" and the stored start time, not the CLI's plan.
    plan = CobaltResource(project_dir=str(plan.config.root)).plan(plan.experiment, plan.run_id, tags)
    items = load_report(store, plan.run_id).items if store.get_run(plan.run_id) else []
    return finish(plan, items, "incomplete")


def _interrupted(plan: RunPlan, store: Store, tags: dict[str, str]) -> RunInterrupted:
    """Mark the interrupted run incomplete (unless it had already completed) and say so to the caller."""
    status = "completed" if _finished(store, plan.run_id) else _mark_incomplete(plan, store, tags).status
    return RunInterrupted(plan.run_id, status)


def _step_failures(result: dg.ExecuteInProcessResult) -> list[tuple[str, str, str]]:
    """(step key, error class, message) of each failed step, failed gates left out: a failed gate is a
    verdict cobalt reports itself, not a failure of the run's work. Decided by the error's class, as a
    step key cannot tell a check from an asset (an experiment may well be named `gate-keeper`)."""
    failures = []
    for event in result.all_events:
        if event.event_type_value != "STEP_FAILURE":
            continue
        error = event.step_failure_data.error if event.step_failure_data else None
        cls = error.cls_name if error else ""
        if cls != GATE_FAILED:
            failures.append((event.step_key or "?", cls or "", error.message.strip() if error else "unknown error"))
    return failures
