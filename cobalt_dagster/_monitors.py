"""Monitors on Dagster: per monitor, an asset `<monitor>/window` partitioned by day (or hour), each
partition a window scored as a cobalt run (`score_window`), with a schedule scoring the window that just
ended and one drift check per evaluator on the window's partition (`drift_checks`): ERROR or WARN as
the judge's calibration allows, the ERRORs sent to the project's webhooks (docs/monitors.md).

(No `from __future__ import annotations` here: Dagster reads the context annotations at runtime.)
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from cobalt_lib.config import Config
from cobalt_lib.links import dagster_name
from cobalt_lib.monitor import Monitor, drift_checks, score_window, send_alerts

#: Dagster's hourly partition keys in the shape cobalt names hourly windows.
_HOURLY_FORMAT = "%Y-%m-%dT%H"


@dataclass(frozen=True)
class MonitorDefs:
    monitor: Monitor
    asset: dg.AssetsDefinition
    #: The job materialising the window asset's partitions (Dagster's unresolved asset job).
    job: Any
    #: Dagster's schedule from the partitioned job (resolved when the Definitions are).
    schedule: Any


def check_name(evaluator: str) -> str:
    return "drift_" + dagster_name(evaluator)


def partitions(mon: Monitor) -> dg.PartitionsDefinition[str]:
    if mon.window == "1h":
        return dg.HourlyPartitionsDefinition(start_date=mon.start, fmt=_HOURLY_FORMAT)
    return dg.DailyPartitionsDefinition(start_date=mon.start)


def monitor_defs(mon: Monitor, config: Config) -> MonitorDefs:
    """The monitor's window asset with its drift checks, its job and its schedule."""
    key = dg.AssetKey([dagster_name(mon.name), "window"])
    specs = [dg.AssetCheckSpec(check_name(e.name), asset=key, description=f"Drift of {e.name} in the window")
             for e in mon.evaluators]

    @dg.asset(key=key, partitions_def=partitions(mon), check_specs=specs, group_name="monitors",
              description=f"Monitor {mon.name}: each partition a window of sampled production traces, scored.")
    def window(context: dg.AssetExecutionContext) -> Iterator[Any]:
        window_key = context.partition_key
        result = score_window(mon, window_key, config)
        yield dg.MaterializeResult(metadata={"cobalt/run_id": result.run_id, "traces": result.traces,
                                             "status": result.status, "judge_cost_usd": result.spent_usd,
                                             **({"note": result.note} if result.note else {})})
        checks = drift_checks(mon, window_key, config)
        for warning in send_alerts(checks, list(config.webhooks)):
            context.log.warning(warning)
        for check in checks:
            severity = dg.AssetCheckSeverity.ERROR if check.severity == "ERROR" else dg.AssetCheckSeverity.WARN
            metadata: dict[str, Any] = {"worst_traces": [w["item_id"] for w in check.worst]}
            if check.test is not None:
                metadata.update(shift=check.test.shift, statistic=check.test.statistic, limit=check.test.limit)
            yield dg.AssetCheckResult(check_name=check_name(check.evaluator), passed=check.passed, severity=severity,
                                      description=check.description, metadata=metadata)

    job = dg.define_asset_job(f"{dagster_name(mon.name)}_monitor", selection=[key], partitions_def=partitions(mon))
    schedule = dg.build_schedule_from_partitioned_job(job)
    return MonitorDefs(mon, window, job, schedule)


def build_monitor_defs(monitors: Sequence[Monitor], config: Config) -> list[MonitorDefs]:
    return [monitor_defs(m, config) for m in monitors]
