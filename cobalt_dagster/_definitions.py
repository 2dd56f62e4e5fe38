"""`build_definitions`: the project's experiments as Dagster Definitions a user can merge with their own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from cobalt_lib import Config, Experiment, load_experiments
from cobalt_lib.gates import experiment_gates

from ._assets import ExperimentDefs, experiment_defs
from ._automation import build_schedules, build_sensor
from ._instance import quiet_dagster_warnings
from ._names import check_unique
from ._pools import judge_pool
from ._project import project_config
from ._record import build_record_sensor
from ._resource import STORE_KEY, CobaltResource, store_resource


def build_experiment_defs(experiments: Sequence[Experiment], config: Config) -> list[ExperimentDefs]:
    check_unique(e.name for e in experiments)
    return [experiment_defs(e, experiment_gates(config, e.assertions, (v.name for v in e.evaluators)),
                            judge_pool(e, config)) for e in experiments]


def resources(config: Config) -> dict[str, object]:
    """`cobalt` (the project) and `cobalt_store` (a `dagster_duckdb.DuckDBResource` on its results store,
    which your own assets may use too: keep its connections short, cobalt's runs write to that file)."""
    return {"cobalt": CobaltResource(project_dir=str(config.root)), STORE_KEY: store_resource(config)}


def build_definitions(project_dir: str | Path | None = None, *,
                      experiments: Sequence[Experiment] | None = None,
                      executor: dg.ExecutorDefinition | None = None) -> dg.Definitions:
    """Assets, checks, jobs, schedules, the request sensor and the record sensor of every experiment in
    the project.

    `experiments` defaults to those discovered under the project's `test_dir`. `executor` spreads the
    runs Dagster launches (default: Dagster's own, processes on this machine; a deployment passes
    `celery_executor`, `k8s_job_executor`...).
    """
    quiet_dagster_warnings()
    config = project_config(project_dir)
    found = list(experiments) if experiments is not None else load_experiments(config)
    defs = build_experiment_defs(found, config)
    return dg.Definitions(
        assets=[asset for d in defs for asset in d.assets],
        asset_checks=[check for d in defs for check in d.checks],
        jobs=[d.job for d in defs],
        schedules=build_schedules(config, defs),
        sensors=[build_sensor(config, defs), build_record_sensor(config, defs, executor)] if defs else [],
        resources=resources(config),
        executor=executor or dg.multi_or_in_process_executor,
    )
