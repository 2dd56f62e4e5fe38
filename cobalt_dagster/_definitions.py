"""`build_definitions`: the project's experiments as Dagster Definitions a user can merge with their own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from cobalt_lib import Experiment, load_experiments
from cobalt_lib.monitor import Monitor

from ._automation import build_schedules
from ._datasets import dataset_specs
from ._experiments import build_experiment_defs, resources
from ._grading import GRADING_EXPERIMENT, grading_experiment, has_gradings
from ._instance import quiet_dagster_warnings
from ._logger import LOGGERS
from ._monitors import build_monitor_defs
from ._project import project_config
from ._sensor import build_sensor
from ._step_processes import forking_executor, fresh_fork_server
from ._translator import CobaltTranslator

__all__ = ["build_definitions", "build_experiment_defs", "resources"]


def build_definitions(project_dir: str | Path | None = None, *,
                      experiments: Sequence[Experiment] | None = None,
                      executor: dg.ExecutorDefinition | None = None,
                      translator: CobaltTranslator | None = None,
                      monitors: Sequence[Monitor] | None = None,
                      fork_steps: bool | None = None) -> dg.Definitions:
    """Assets, checks, jobs, schedules and cobalt's sensor (run requests, recordings, dataset versions) of
    every experiment in the project.

    `experiments` defaults to those discovered under the project's `test_dir`. `executor` spreads the
    runs Dagster launches (default: Dagster's own, processes on this machine; a deployment passes
    `celery_executor`, `k8s_job_executor`...). `translator` names the assets and checks (default:
    `CobaltTranslator()`, keys `<experiment>/<stage>` in one group per experiment). `monitors` defaults to
    those the project's files declare (`monitor(...)`): each a partitioned window asset with its drift checks
    and schedule (docs/monitors.md). `fork_steps` (default: when `executor` is Dagster's default) gives the
    experiments' jobs a default run config whose step processes fork from one process that imported
    cobalt, instead of each importing it anew (docs/dagster.md).
    """
    quiet_dagster_warnings()
    config = project_config(project_dir)
    found = list(experiments) if experiments is not None else load_experiments(config)
    if has_gradings(config) and all(e.name != GRADING_EXPERIMENT for e in found):
        found.append(grading_experiment())  # where the record sensor records `cobalt grade`'s runs
    fork = executor is None if fork_steps is None else fork_steps
    if fork:
        fresh_fork_server()  # a process that launches runs itself gives their steps its current environment
    defs = build_experiment_defs(found, config, translator, fork_steps=fork)
    datasets = dataset_specs(config, found)
    sensors = [build_sensor(config, defs, executor, datasets=bool(datasets))] if defs or datasets else []
    from cobalt_lib.monitor import MONITORS

    watched = build_monitor_defs(list(MONITORS.values()) if monitors is None else monitors, config)
    return dg.Definitions(
        assets=[*datasets, *(asset for d in defs for asset in d.assets), *(m.asset for m in watched)],
        asset_checks=[check for d in defs for check in d.checks],
        jobs=[*(d.job for d in defs), *(m.job for m in watched)],
        schedules=[*build_schedules(config, defs), *(m.schedule for m in watched)],
        sensors=sensors,
        resources=resources(config),
        executor=executor or (forking_executor() if fork else dg.multi_or_in_process_executor),
        loggers=LOGGERS,
    )
