"""Dagster-launched runs in tests: an experiment's job executed in process on the project's instance,
as the daemon would launch it for a schedule, a sensor or `cobalt request` (minus the subprocess)."""

from __future__ import annotations

from typing import Any

import dagster as dg

import cobalt_dagster
from cobalt_lib import Config, Experiment, ExperimentReport, Store
from cobalt_lib.store import load_report


def execute_job(config: Config, experiment: Experiment, *, run_id: str | None = None,
                instance: dg.DagsterInstance | None = None, tags: dict[str, str] | None = None,
                ) -> tuple[ExperimentReport | None, Any]:
    """Execute `experiment`'s job for a new partition (`run_id`, default a new cobalt run id) and return the
    stored report (None when nothing was stored) with Dagster's result."""
    from cobalt_lib.run import new_run_id

    run_id = run_id or new_run_id()
    defs = cobalt_dagster.build_definitions(config.root, experiments=[experiment])
    name = cobalt_dagster.dagster_name(experiment.name)
    own = instance is None
    instance = instance or cobalt_dagster.local_instance(config, capture_logs=False)
    try:
        instance.add_dynamic_partitions(f"{name}_runs", [run_id])
        result = defs.resolve_job_def(f"{name}_eval").execute_in_process(
            instance=instance, partition_key=run_id, raise_on_error=False, tags=tags)
    finally:
        if own:
            instance.dispose()
    store = Store.for_config(config)
    return (load_report(store, run_id) if store.get_run(run_id) else None), result
