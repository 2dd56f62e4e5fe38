"""Cobalt's one sensor, `cobalt_sensor`: each tick it records the runs Dagster did not launch (`_record`),
records new versions of stored datasets (`_datasets`) and starts the runs `cobalt request` asked for
(`_automation`).

One sensor, not one per look: Dagster writes every tick to the instance whatever the sensor returns (the
tick, the sensor's state twice, the tick purge: SQLite transactions), most of an idle `cobalt serve`'s CPU;
three sensors ticking every 15-30 s cost it 10 ticks a minute, this one 4 at the same or shorter latencies.
A look that fails is logged and the others go ahead: a broken recording never holds up a requested run.
(No `from __future__ import annotations`: Dagster inspects the sensor's signature at runtime.)
"""

from collections.abc import Callable, Sequence

import dagster as dg

from cobalt_lib import Config

from ._assets import ExperimentDefs
from ._automation import request_look
from ._datasets import dataset_look
from ._record import record_look

SENSOR_NAME = "cobalt_sensor"
#: Seconds between two ticks: a `cobalt request` starts within about this long, a finished `cobalt run` is
#: recorded within two of them (30 s at most), a pushed dataset version is in Dagster within one.
INTERVAL_SECONDS = 15


def build_sensor(config: Config, defs: list[ExperimentDefs], executor: dg.ExecutorDefinition | None, *,
                 datasets: bool) -> dg.SensorDefinition:
    """The sensor of the project: the record and request looks when it has experiments, the dataset look
    when it has stored datasets (`executor`: the Definitions' own, None for Dagster's default)."""
    looks: list[tuple[str, Callable[[dg.SensorEvaluationContext], dg.SensorResult]]] = []
    said = []
    if defs:
        looks.append(("recording", record_look(config, defs, executor)))
        said.append("records the finished cobalt runs Dagster did not launch (`cobalt run`, `experiment.run()`) "
                    "as runs of their experiment's job")
    if datasets:
        looks.append(("dataset versions", dataset_look(config, defs)))
        said.append("records new versions of stored datasets and runs the experiments that evaluate on them")
    if defs:  # last: it deletes the request files it turns into runs, which a later failure would lose
        looks.append(("run requests", request_look(config, defs)))
        said.append("starts the runs `cobalt request` asks for")

    @dg.sensor(name=SENSOR_NAME, minimum_interval_seconds=INTERVAL_SECONDS, jobs=[d.job for d in defs] or None,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description=f"cobalt's sensor, every {INTERVAL_SECONDS} s: " + "; ".join(said) + ".")
    def cobalt_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return combine(context, looks)

    return cobalt_sensor


def combine(context: dg.SensorEvaluationContext,
            looks: Sequence[tuple[str, Callable[[dg.SensorEvaluationContext], dg.SensorResult]]]) -> dg.SensorResult:
    """Every look's run requests and partitions in one result; the cursor is the recording look's (kept as
    it was when that look failed)."""
    runs: list[dg.RunRequest] = []
    partitions: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    cursor = context.cursor
    for name, look in looks:
        try:
            result = look(context)
        except Exception:  # one look's fault (a store it cannot read) must not stop the others
            context.log.exception(f"cobalt_sensor: the {name} look failed; the other looks went ahead")
            continue
        runs += [r for r in result.run_requests or [] if isinstance(r, dg.RunRequest)]
        partitions += result.dynamic_partitions_requests or []
        if result.cursor is not None:
            cursor = result.cursor
    return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=partitions, cursor=cursor)
