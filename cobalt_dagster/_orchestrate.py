"""`cobalt run` through Dagster: every run is a real Dagster run on the project's local instance."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import dagster as dg
from dagster._core.errors import DagsterExecutionInterruptedError  # not exported by `dagster` in 1.13
from dagster._utils import interrupts  # not exported by `dagster`: see `_sigterm_kept`

from cobalt_lib import Config, ExperimentReport, Store
from cobalt_lib.results import load_report
from cobalt_lib.run import TERMINATED, Observer, RunInterrupted, RunPlan, finish, pause_point, rearm

from ._assets import GATE_FAILURE_KEY, ExperimentDefs
from ._definitions import build_experiment_defs, resources
from ._instance import QUIET_RUN_CONFIG, local_instance, quiet_dagster_warnings
from ._live import OBSERVERS
from ._origin import job_origin
from ._resource import CobaltResource
from ._tags import dagster_tags

if TYPE_CHECKING:
    from dagster._core.remote_origin import RemoteJobOrigin
    from dagster._core.storage.dagster_run import DagsterRun

#: Error classes of failed steps: a blocking gate that failed, and Ctrl-C inside a step.
GATE_FAILED = "DagsterAssetCheckFailedError"
INTERRUPTED = "DagsterExecutionInterruptedError"
#: `RunInterrupted.status` of a run Ctrl-C stopped before it was created (nothing stored).
NOT_STARTED = "not started"
_INTERRUPT_CLASSES = {INTERRUPTED, "KeyboardInterrupt", "RunInterrupted"}

#: Modules a step imports on first use (measured on Dagster 1.13), imported by `_warm_up` beforehand.
_STEP_MODULES = ("dagster._core.execution.execute_in_process", "dagster._core.executor.in_process",
                 "dagster._core.execution.plan.active", "dagster._core.instance.runs.run_domain",
                 "dagster._core.storage.noop_compute_log_manager", "dagster._core.system_config.composite_descent",
                 "dagster._core.definitions.external_asset",
                 "dagster._core.definitions.repository_definition.repository_data_builder",
                 "pytz", "cobalt_lib.ci", "cobalt_lib.render._terminal")


def run_with_dagster(plans: Sequence[RunPlan], config: Config, observer: Observer | None = None, *,
                     concurrency: int | None = None, add_tags: Sequence[str] = ()) -> list[ExperimentReport]:
    """Materialise each plan's experiment for a new partition (its run id), in process, one after another."""
    quiet_dagster_warnings()
    try:
        pause_point("setup")
        _warm_up()
        instance = local_instance(config, capture_logs=False)
        experiment_defs = build_experiment_defs([p.experiment for p in plans], config)
    except KeyboardInterrupt:  # before the first run was created: there is nothing to keep or resume
        if not plans:
            raise
        raise RunInterrupted(plans[0].run_id, NOT_STARTED) from None
    definitions = dg.Definitions(
        assets=[a for d in experiment_defs for a in d.assets],
        asset_checks=[c for d in experiment_defs for c in d.checks],
        jobs=[d.job for d in experiment_defs],
        resources=resources(config),
        executor=dg.in_process_executor,
    )
    tags = {"cobalt/trigger": "cli", **dagster_tags(add_tags)}
    if concurrency:
        tags["cobalt/concurrency"] = str(concurrency)
    return [_run_one(plan, d, definitions, instance, observer, tags) for plan, d in zip(plans, experiment_defs,
                                                                                         strict=True)]


@contextmanager
def _with_origin(instance: dg.DagsterInstance, origin: RemoteJobOrigin | None) -> Iterator[None]:
    """Runs the instance creates meanwhile carry `origin` (and so the `dagster/code_location` tag and the
    `repository@location` label the UI's job views filter on). `execute_in_process` takes no origin, and
    executing in process is what keeps a CLI run fast, so the instance's run factory adds it."""
    if origin is None:
        yield
        return
    create = instance.create_run_for_job

    def create_with_origin(*args: Any, **kwargs: Any) -> DagsterRun:
        return create(*args, **{**kwargs, "remote_job_origin": origin})

    instance.create_run_for_job = create_with_origin  # type: ignore[method-assign]
    try:
        yield
    finally:
        del instance.create_run_for_job  # the class's method again


def _run_one(plan: RunPlan, target: ExperimentDefs, definitions: dg.Definitions, instance: dg.DagsterInstance,
             observer: Observer | None, tags: dict[str, str]) -> ExperimentReport:
    store = Store.for_config(plan.config)
    if observer:
        OBSERVERS[plan.run_id] = observer
    try:
        with _sigterm_kept():
            instance.add_dynamic_partitions(target.partitions_name, [plan.run_id])
            pause_point("before-run")
            with _with_origin(instance, job_origin(plan.config, target.job.name)):
                result = definitions.resolve_job_def(target.job.name).execute_in_process(
                    instance=instance, partition_key=plan.run_id, tags=tags, raise_on_error=False,
                    run_config=QUIET_RUN_CONFIG)
    except (KeyboardInterrupt, DagsterExecutionInterruptedError):  # Ctrl-C outside a step
        raise _interrupted(plan, store, tags) from None
    finally:
        OBSERVERS.pop(plan.run_id, None)
        rearm()  # Dagster left SIGTERM on its idea of a SIGINT handler
    failures = _step_failures(result)
    # Inside a step Dagster turns Ctrl-C into a step failure (its own error, or the KeyboardInterrupt as the
    # cause of another); between steps it ends the run without one. Either way it is the user stopping the
    # run, never a verdict: a run with no failed step stops short of completion only that way.
    interrupted = TERMINATED.is_set() or any(_INTERRUPT_CLASSES & set(classes) for _, classes, _ in failures)
    run = None if interrupted else store.get_run(plan.run_id)  # read once: whether it finished, and its report
    finished = run is not None and run["status"] == "completed"
    if interrupted or (not failures and not finished):
        raise _interrupted(plan, store, tags)
    if failures:
        step, _, message = failures[0]
        print(f"cobalt: Dagster run {result.run_id} failed: {step}: {message}", file=sys.stderr)
        if not finished:
            report = _mark_incomplete(plan, store, tags)
            if observer:  # the aggregates asset never ran to print the summary: show what was kept
                observer.on_finish(report)
            return report
    return load_report(store, plan.run_id, run=run)


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """While Dagster executes, its every signal-handler swap points SIGTERM at its SIGINT handler, which
    would lose that the run was terminated (exit 143, not 130): keep SIGTERM on cobalt's forwarding,
    which sets `TERMINATED` and then raises SIGINT for whichever handler Dagster has installed."""
    original = interrupts.setup_interrupt_handlers

    def setup() -> None:
        original()
        rearm()

    interrupts.setup_interrupt_handlers = setup
    try:
        yield
    finally:
        interrupts.setup_interrupt_handlers = original


def _warm_up() -> None:
    """Import before the run what its steps would import on first use: Ctrl-C landing in the middle of
    an import (duckdb's native module, pytz reading a zone file) left half-initialised modules that
    failed later with errors that were not an interrupt (even a nanobind abort)."""
    import duckdb

    for name in _STEP_MODULES:
        with suppress(ImportError):  # private Dagster modules and pytz: only a head start, never required
            importlib.import_module(name)
    if "pytz" in sys.modules:
        sys.modules["pytz"].timezone("Etc/UTC")  # reads the zone file duckdb asks for
    with duckdb.connect() as con:  # a TIMESTAMPTZ value: duckdb converts it through pytz
        con.execute("select now()").fetchall()


def _finished(store: Store, run_id: str) -> bool:
    return store.run_status(run_id) == "completed"


def _mark_incomplete(plan: RunPlan, store: Store, tags: dict[str, str]) -> ExperimentReport:
    """Keep what finished: aggregate the stored items and mark the run incomplete."""
    # Finish it as the assets would have: source "dagster" and the stored start time, not the CLI's plan.
    run = store.get_run(plan.run_id)
    plan = CobaltResource(project_dir=str(plan.config.root)).plan_for_run(plan.experiment, plan.run_id, tags, run)
    items = load_report(store, plan.run_id, run=run).items if run else []
    return finish(plan, items, "incomplete")


def _interrupted(plan: RunPlan, store: Store, tags: dict[str, str]) -> RunInterrupted:
    """Mark the interrupted run incomplete (unless it had already completed) and say so to the caller."""
    status = "completed" if _finished(store, plan.run_id) else _mark_incomplete(plan, store, tags).status
    return RunInterrupted(plan.run_id, status)


def _step_failures(result: dg.ExecuteInProcessResult) -> list[tuple[str, list[str], str]]:
    """(step key, error classes along its causes, message) of each failed step, failed gates left out: a
    failed gate is a verdict cobalt reports itself, not a failure of the run's work. Decided by the error's
    class, as a step key cannot tell a check from an asset (an experiment may well be named `gate-keeper`)."""
    failures = []
    for event in result.all_events:
        if event.event_type_value != "STEP_FAILURE":
            continue
        error = event.step_failure_data.error if event.step_failure_data else None
        classes: list[str] = []
        link = error
        while link is not None and len(classes) < 20:
            classes.append(link.cls_name or "")
            link = link.cause or link.context
        user = event.step_failure_data.user_failure_data if event.step_failure_data else None
        if user is not None and GATE_FAILURE_KEY in (user.metadata or {}):
            continue  # a failed gate: the verdict cobalt reports itself
        if not classes or classes[0] != GATE_FAILED:
            failures.append((event.step_key or "?", classes, error.message.strip() if error else "unknown error"))
    return failures
