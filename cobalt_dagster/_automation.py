"""Schedules from `[schedules]` in config, and a sensor for ad-hoc run requests dropped as files.

(No `from __future__ import annotations`: Dagster inspects these signatures at runtime.)
"""

import json
from pathlib import Path
from typing import Any

import dagster as dg

from cobalt_lib import Config, ConfigError
from cobalt_lib._pipeline import new_run_id

from ._assets import ExperimentDefs

REQUESTS_DIR = "requests"


def build_schedules(config: Config, defs: list[ExperimentDefs]) -> list[dg.ScheduleDefinition]:
    """One schedule per `[schedules]` entry; it adds the partition (run id) and requests the run."""
    by_name = {d.experiment.name: d for d in defs} | {d.name: d for d in defs}
    schedules = []
    for name, spec in config.schedules.items():
        target = by_name.get(name)
        if target is None:
            raise ConfigError(f"[schedules] names experiment {name!r}, which does not exist; "
                              f"experiments: {', '.join(sorted(d.experiment.name for d in defs)) or 'none'}.")
        schedules.append(_schedule(target, spec.cron, spec.timezone))
    return schedules


def _schedule(target: ExperimentDefs, cron: str, timezone: str) -> dg.ScheduleDefinition:
    parts = target.partitions

    @dg.schedule(name=f"{target.name}_schedule", job=target.job, cron_schedule=cron, execution_timezone=timezone,
                 description=f"Runs the cobalt experiment {target.experiment.name!r} on {cron} ({timezone}).")
    def schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        # A schedule cannot return dynamic-partition requests, so the partition is added here.
        run_id = new_run_id()
        context.instance.add_dynamic_partitions(parts.name, [run_id])  # type: ignore[arg-type]
        return dg.RunRequest(run_key=run_id, partition_key=run_id, tags={"cobalt/trigger": "schedule"})

    return schedule


def request_run(config: Config, experiment: str, **options: Any) -> Path:
    """Ask the daemon's sensor for a run of `experiment` (what `cobalt request` does)."""
    directory = config.output_path / REQUESTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id()
    path = directory / f"{run_id}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"experiment": experiment, "run_id": run_id, **options}), encoding="utf-8")
    tmp.replace(path)
    return path


def build_sensor(config: Config, defs: list[ExperimentDefs]) -> dg.SensorDefinition:
    by_name = {d.experiment.name: d for d in defs} | {d.name: d for d in defs}
    directory = config.output_path / REQUESTS_DIR

    @dg.sensor(name="cobalt_run_requests", minimum_interval_seconds=5, jobs=[d.job for d in defs],
               default_status=dg.DefaultSensorStatus.RUNNING,
               description=f"Runs experiments requested by `cobalt request` (files in {directory}).")
    def requests(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        runs, partitions = [], []
        for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
            try:
                request = json.loads(path.read_text(encoding="utf-8"))
                target = by_name[request["experiment"]]
                run_id = str(request.get("run_id") or new_run_id())
            except (ValueError, KeyError) as exc:
                context.log.warning(f"ignoring run request {path.name}: {exc!r}")
                path.rename(path.with_suffix(".rejected"))
                continue
            tags = {"cobalt/trigger": "request"}
            if request.get("concurrency"):
                tags["cobalt/concurrency"] = str(request["concurrency"])
            partitions.append(target.partitions.build_add_request([run_id]))
            runs.append(dg.RunRequest(run_key=run_id, job_name=target.job.name, partition_key=run_id, tags=tags))
            path.unlink()
        return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=partitions)

    return requests
