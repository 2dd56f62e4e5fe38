"""Schedules from `[schedules]` in config, and the sensor's look for ad-hoc run requests dropped as files.

(No `from __future__ import annotations`: Dagster inspects these signatures at runtime.)
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from cobalt_lib import Config, ConfigError
from cobalt_lib.links import JUDGE_BATCH_TAG, dagster_tags, variant_tags
from cobalt_lib.run import local_instance_exists, new_group_id, new_run_id, requests_dir, write_run_request

from ._assets import ExperimentDefs


def build_schedules(config: Config, defs: list[ExperimentDefs]) -> list[dg.ScheduleDefinition]:
    """One schedule per `[schedules]` entry; it adds the partition (run id) and requests the run."""
    by_name = {d.experiment.name: d for d in defs} | {d.name: d for d in defs}
    schedules = []
    for name, spec in config.schedules.items():
        target = by_name.get(name)
        if target is None:
            raise ConfigError(f"[schedules] names experiment {name!r}, which does not exist; "
                              f"experiments: {', '.join(sorted(d.experiment.name for d in defs)) or 'none'}.")
        schedules.append(_schedule(target, spec.cron, spec.timezone, spec.judge_batch))
    return schedules


def _schedule(target: ExperimentDefs, cron: str, timezone: str, judge_batch: bool | None) -> dg.ScheduleDefinition:
    parts = target.partitions
    trigger = {"cobalt/trigger": "schedule",
               **({JUDGE_BATCH_TAG: str(judge_batch).lower()} if judge_batch is not None else {})}

    # RUNNING by default: listing an experiment under [schedules] is the user's request to run it, and
    # `cobalt serve` promises that schedules run while it is up (a STOPPED default needs a UI click).
    @dg.schedule(name=f"{target.name}_schedule", job=target.job, cron_schedule=cron, execution_timezone=timezone,
                 default_status=dg.DefaultScheduleStatus.RUNNING,
                 description=f"Runs the cobalt experiment {target.experiment.name!r} on {cron} ({timezone}).")
    def schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        # A schedule cannot return dynamic-partition requests, so the partitions are added here: one per
        # variant of an experiment with variants (each its own run), under one run group.
        runs = variant_runs(target, trigger)
        context.instance.add_dynamic_partitions(parts.name, [run_id for run_id, _ in runs])  # type: ignore[arg-type]
        return [dg.RunRequest(run_key=run_id, partition_key=run_id, tags=tags) for run_id, tags in runs]

    return schedule


def variant_runs(target: ExperimentDefs, tags: dict[str, str],
                 run_id: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """`(run id, run tags)` of the partitions one request of `target` starts: the one run `run_id` (default a new
    id), or for an experiment with variants one run per variant under a new run group, each tagged with both."""
    variants = target.experiment.variants
    if not variants:
        return [(run_id or new_run_id(), tags)]
    group = new_group_id()
    return [(new_run_id(), {**tags, **variant_tags(group, v.name)}) for v in variants]


def request_run(config: Config, experiment: str, **options: Any) -> Path:
    """Ask the daemon's sensor for a run of `experiment` (what `cobalt request` does)."""
    return write_run_request(config, experiment, **options)


#: How old the sensor daemon's latest heartbeat may be for the daemon to count as running: Dagster's
#: daemons beat every 30 s, so two missed beats mean it has stopped. (A daemon never clears its last
#: heartbeat: `cobalt serve` does when it stops it; one killed outright still counts for this long.)
HEARTBEAT_SECONDS = 90.0


def daemon_running(config: Config, *, now: float | None = None) -> bool:
    """Whether a Dagster daemon (`cobalt serve`'s, or `dagster dev`'s on the same DAGSTER_HOME) is
    running the sensors of the project's local instance: its sensor daemon's heartbeat is recent.

    Never creates the instance: without one, no daemon has ever run for the project.
    """
    import time

    from ._instance import local_instance

    if not local_instance_exists(config):
        return False
    instance = local_instance(config)
    try:
        beat = instance.get_daemon_heartbeats().get("SENSOR")
    finally:
        instance.dispose()
    return beat is not None and (now if now is not None else time.time()) - beat.timestamp <= HEARTBEAT_SECONDS


def forget_daemon(config: Config) -> None:
    """After `cobalt serve` stopped its daemon: clear the heartbeats it left (a daemon never clears its
    own), so that `cobalt request` right after a stop does not take the daemon for running."""
    from ._instance import dagster_home, local_instance

    if (dagster_home(config) / "dagster.yaml").is_file():
        instance = local_instance(config)
        try:
            instance.wipe_daemon_heartbeats()
        finally:
            instance.dispose()


def request_look(config: Config,
                 defs: list[ExperimentDefs]) -> Callable[[dg.SensorEvaluationContext], dg.SensorResult]:
    """The look of cobalt's sensor (`_sensor`) that turns the request files `cobalt request` writes into runs."""
    by_name = {d.experiment.name: d for d in defs} | {d.name: d for d in defs}
    directory = requests_dir(config)

    def requests(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        runs, partitions = [], []
        for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
            try:
                target, run_id, tags = _parse_request(path, by_name)
            except ValueError as exc:
                context.log.warning(f"ignoring run request {path.name}: {exc}")
                path.replace(path.with_suffix(".rejected"))
                continue
            started = variant_runs(target, tags, run_id)
            partitions.append(target.partitions.build_add_request([key for key, _ in started]))
            runs += [dg.RunRequest(run_key=key, job_name=target.job.name, partition_key=key, tags=run_tags)
                     for key, run_tags in started]
            path.unlink()
        return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=partitions)

    return requests


def _parse_request(path: Path, by_name: dict[str, ExperimentDefs]) -> tuple[ExperimentDefs, str, dict[str, str]]:
    """The experiment, run id and run tags a request file asks for; ValueError when it is not valid."""
    request = json.loads(path.read_text(encoding="utf-8"))  # JSONDecodeError is a ValueError
    if not isinstance(request, dict):
        raise ValueError(f"expected a JSON object, got {type(request).__name__}")
    target = by_name.get(str(request.get("experiment")))
    if target is None:
        known = ", ".join(sorted({d.experiment.name for d in by_name.values()}))
        raise ValueError(f"no experiment named {request.get('experiment')!r}; known: {known}")
    tags = {"cobalt/trigger": "request"}
    concurrency = request.get("concurrency")
    if concurrency is not None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
        tags["cobalt/concurrency"] = str(concurrency)
    extra = request.get("tags") or []
    if not isinstance(extra, list) or not all(isinstance(t, str) for t in extra):
        raise ValueError(f"tags must be a list of strings, got {extra!r}")
    return target, str(request.get("run_id") or new_run_id()), {**tags, **dagster_tags(extra)}
