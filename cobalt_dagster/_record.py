"""Runs Dagster did not launch, recorded as runs of their experiment's job (docs/dagster.md).

Two ways, one replay (`_replay`): the record sensor (`[dagster] record = "daemon"`, the default) finds
finished runs the store says Dagster does not hold and requests a recording of each; `record_runs`
(`"inline"`) records in the calling process before a command exits. Either way the Dagster run carries
the code location's origin, the partition, one tag per cobalt tag, the four materialisations and the
gate checks, and makes no agent or judge call.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg

from cobalt_lib import Config, Experiment, Store, load_experiments
from cobalt_lib.grading.calibration import EXPERIMENT_PREFIX
from cobalt_lib.links import dagster_tags, variant_tags

from ._abandoned import fail_abandoned
from ._experiments import build_experiment_defs, resources
from ._grading import GRADING_EXPERIMENT, is_grading
from ._instance import QUIET_RUN_CONFIG, local_instance, quiet_dagster_warnings, tick_instance
from ._logger import LOGGER_RUN_CONFIG
from ._origin import job_origin
from ._private import execute_created_run
from ._record_sensor import attempt_tag, choose, dump_state, load_state, settle
from ._replay import RECORD_TAG, RECORDED

if TYPE_CHECKING:
    from ._assets import ExperimentDefs


def record_tags(run: Mapping[str, Any]) -> dict[str, str]:
    """The Dagster run tags of the recording of the stored cobalt run `run` (a `runs` row)."""
    return {RECORD_TAG: "true", "cobalt/trigger": "record", **dagster_tags(run.get("tags") or []),
            **variant_tags(run.get("group_id"), run.get("variant"))}


def record_run_config(executor: dg.ExecutorDefinition | None) -> dict[str, Any]:
    """A recording is a few reads: in process, when the executor that spreads the job's real runs lets a
    run choose (Dagster's default executor does; None stands for it). A run's config replaces its job's
    default, so it names cobalt's console logger again: a recorded failed gate prints one line, not a stack."""
    if executor is None or executor.name == dg.multi_or_in_process_executor.name:
        return {**LOGGER_RUN_CONFIG, "execution": {"config": {"in_process": {}}}}
    return dict(LOGGER_RUN_CONFIG)


def own_assets(target: ExperimentDefs) -> list[dg.AssetKey]:
    """The keys of an experiment's own assets (dataset, outputs, scores, aggregates)."""
    return [key for asset in target.assets for key in asset.keys]


def own_checks(target: ExperimentDefs) -> list[dg.AssetCheckKey]:
    """The keys of an experiment's gate checks."""
    return [key for check in target.checks for key in check.check_keys]


def record_runs(run_ids: Iterable[str], *, config: Config, experiments: Sequence[Experiment] | None = None,
                instance: dg.DagsterInstance | None = None) -> dict[str, str]:
    """Record finished cobalt runs in the project's Dagster instance now, each as a run of its experiment's
    job for its partition; returns `{run_id: dagster_run_id}` of those recorded.

    What `[dagster] record = "inline"` does when a command ends. A run Dagster already holds is left as
    it is. `experiments` defaults to the project's own; `instance` to the local one (`.cobalt/dagster`,
    or `DAGSTER_HOME`'s when the project's `[dashboard]` says so).
    """
    quiet_dagster_warnings()
    store = Store.for_config(config)
    held = store.dagster_runs_of(list(run_ids))
    wanted = [r for r in dict.fromkeys(run_ids) if r not in held]
    runs = [run for run in (store.get_run(r) for r in wanted) if run is not None]
    if not runs:
        return {}
    found = list(experiments) if experiments is not None else load_experiments(config)
    names = {run["experiment"] for run in runs}
    defs = build_experiment_defs([e for e in found if e.name in names], config)
    by_name = {d.experiment.name: d for d in defs}
    definitions = dg.Definitions(assets=[a for d in defs for a in d.assets],
                                 asset_checks=[c for d in defs for c in d.checks],
                                 jobs=[d.job for d in defs], resources=resources(config))
    own = instance is None
    instance = instance or local_instance(config, capture_logs=False)
    recorded: dict[str, str] = {}
    try:
        for run in runs:
            target = by_name.get(run["experiment"])
            if target is None or run["status"] == "running":
                continue
            job = definitions.resolve_job_def(target.job.name)
            instance.add_dynamic_partitions(target.partitions_name, [run["run_id"]])
            dagster_run = instance.create_run_for_job(
                job, run_config={**record_run_config(job.executor_def), **QUIET_RUN_CONFIG},
                tags={**job.run_tags, **record_tags(run), "dagster/partition": run["run_id"]},
                remote_job_origin=job_origin(config, job.name))
            # Noted before it executes: a record sensor ticking meanwhile must not record the run again.
            store.mark_in_dagster(run["run_id"], dagster_run.run_id, RECORDED)
            # Quiet through its console logger (QUIET_RUN_CONFIG), never by swapping sys.stderr: the run's
            # dictConfig closes every logging handler, and a handler that spares only the current sys.stderr
            # (absl's, which TensorFlow and rouge-score bring) would close the process's real stderr.
            execute_created_run(job, dagster_run, instance)
            recorded[run["run_id"]] = dagster_run.run_id
    finally:
        if own:
            instance.dispose()
    return recorded


def record_look(config: Config, defs: list[ExperimentDefs],
                executor: dg.ExecutorDefinition | None) -> Callable[[dg.SensorEvaluationContext], dg.SensorResult]:
    """The look of cobalt's sensor (`_sensor`) that records, as runs of their experiment's job, the finished runs
    Dagster does not hold (`executor`: the Definitions' own, None for Dagster's default); its state is the
    sensor's cursor."""
    by_name = {d.experiment.name: d for d in defs}
    grading = by_name.get(GRADING_EXPERIMENT)  # the grading runs' experiment, once there are any
    run_config = record_run_config(executor)

    def record(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        store, now, instance = Store.for_config(config), time.time(), tick_instance(context)
        for failed in fail_abandoned(instance):  # killed: not STARTED for ever in the UI
            context.log.warning(f"Dagster run {failed}: its process died; reported failed")
        state = load_state(context.cursor)
        # `context.log` only when there is something to say: the first use opens an instance of its own
        # (checking the storage's schema), most of an idle code server's CPU when taken every tick.
        settle(state, store, instance, now, lambda message: context.log.warning(message))
        chosen = choose(state, store, list(by_name), now, prefix=EXPERIMENT_PREFIX if grading else None)
        requests, partitions = [], []
        for run, attempt in chosen:
            target = grading if grading and is_grading(run["experiment"]) else by_name[run["experiment"]]
            partitions.append(target.partitions.build_add_request([run["run_id"]]))
            # Only cobalt's own assets and checks: a recording never materialises what a project put
            # downstream in the experiment's group (a `deploy` asset runs when Dagster runs the evaluation).
            # One run key per attempt: a retry is a run of its own, not a duplicate Dagster drops.
            requests.append(dg.RunRequest(
                run_key=f"record-{run['run_id']}-{attempt}", job_name=target.job.name, partition_key=run["run_id"],
                tags={**record_tags(run), **attempt_tag(run["run_id"], attempt)}, run_config=run_config,
                asset_selection=own_assets(target), asset_check_keys=own_checks(target)))
        if chosen:
            context.log.info("recording cobalt run(s): " + ", ".join(
                run["run_id"] + (f" (attempt {attempt})" if attempt > 1 else "") for run, attempt in chosen))
        return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=partitions,
                               cursor=dump_state(state))

    return record


def print_unrecorded(why: str, run_ids: Sequence[str]) -> None:
    """An inline recording that failed (`why`, one line): the runs are kept and the daemon's sensor records
    them later."""
    print(f"cobalt: could not record run(s) {', '.join(run_ids)} in Dagster ({why}); they are kept, and the "
          "record sensor records them when a Dagster daemon runs (`cobalt serve`).", file=sys.stderr)
