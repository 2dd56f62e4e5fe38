"""Recording a run Dagster did not launch: the experiment's own job replays what the store holds.

A Dagster run tagged `cobalt/record` calls no agent and no judge. Each asset reports, for the
partition's cobalt run, the metadata it would have carried had it done the work, read from the
stored results; the gate checks read the stored verdicts, as they always do. So a recorded run is a
real run of the experiment's job: its Runs tab, the timeline, the Partitions tab and the checks per
partition show it as they show a run Dagster executed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cobalt_lib import Config, ConfigError, ExperimentReport, Store
from cobalt_lib.store import streamed_report

from ._metadata import (
    aggregates_metadata,
    dataset_metadata,
    previous_report,
    previous_run,
    stored_counts_metadata,
)

#: The Dagster run tag that makes a run of an experiment's job a recording of a finished cobalt run.
RECORD_TAG = "cobalt/record"
#: How the store notes a run Dagster executed, and one Dagster only recorded.
EXECUTED, RECORDED = "executed", "recorded"


def is_recording(tags: Mapping[str, str]) -> bool:
    """Whether the Dagster run carrying `tags` records a finished run (no agent or judge call)."""
    return tags.get(RECORD_TAG) == "true"


def stored_report(store: Store, run_id: str) -> ExperimentReport:
    """The finished run a recording replays, its header read and its items streamed from the store (a run
    of any size in bounded memory); a run not stored, or still running, is an error that says so."""
    run = store.get_run(run_id)
    if run is None:
        raise ConfigError(f"cobalt run {run_id} has no stored results, so there is nothing to record; "
                          "run the experiment first (or materialise the partition without the cobalt/record tag).")
    if run["status"] == "running":
        raise ConfigError(f"cobalt run {run_id} is still running; it is recorded once it ends.")
    return streamed_report(store, run_id, run=run)


def stage_metadata(stage: str, report: ExperimentReport, store: Store, config: Config) -> dict[str, Any]:
    """What the asset `stage` (dataset, outputs, scores or aggregates) reports for the stored `report`:
    the same builders the executing assets use, so a recorded run reads like an executed one."""
    if stage == "dataset":
        dataset = report.config.get("dataset") or {}
        evaluators = [e["name"] for e in report.config.get("evaluators", [])]
        return dataset_metadata(report.id, int(dataset.get("size") or report.summary.total_items),
                                dataset.get("source"), evaluators,
                                report.identity.dataset.ref if report.identity is not None else None)
    if stage in ("outputs", "scores"):  # counted in SQL: no item read but the table's first rows
        outputs, scores = stored_counts_metadata(store, report.id)
        return outputs if stage == "outputs" else scores
    with store.reading():
        previous = previous_run(store, report.name, report.id)
    return aggregates_metadata(report, config, previous_report(store, previous, report.id))
