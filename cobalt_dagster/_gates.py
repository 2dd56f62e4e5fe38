"""Gates that hold across Dagster runs, and library runs reported to the instance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
from filelock import FileLock

from cobalt_lib import Config, ExperimentReport, Store

from ._assets import check_names, gate_outcome
from ._instance import local_instance
from ._metadata import (
    aggregates_metadata,
    dataset_metadata,
    outputs_metadata,
    previous_report,
    previous_run,
    scores_metadata,
)
from ._names import dagster_name
from ._project import project_config


def require_gates_passed(experiment: str, run_id: str, project_dir: str | Path | None = None) -> None:
    """Raise `dagster.Failure` unless the stored verdicts of `run_id` all passed.

    Blocking checks stop downstream steps only inside one Dagster run; call this at the top of a
    deploy asset so a deploy materialised later for a failed partition fails too. The project is
    `project_dir`, else `COBALT_PROJECT_DIR` (set by `cobalt serve`), else the working directory.
    """
    config = project_config(project_dir)
    store = Store.for_config(config)
    with store.reading():  # both reads over one connection
        status = store.run_status(run_id)
        verdicts = store.rows("verdicts", run_id) if status == "completed" else []
    if status is None:
        raise dg.Failure(description=f"cobalt run {run_id} of {experiment!r} has no stored results; run it first.")
    if status != "completed":
        raise dg.Failure(description=f"cobalt run {run_id} is {status}, not completed.")
    failed = [v for v in verdicts if not v["passed"]]
    if failed:
        lines = "; ".join(f"{v['name']}: {v['message']}" for v in failed)
        raise dg.Failure(description=f"quality gates failed for {experiment!r} run {run_id}: {lines}",
                         metadata={"failed_gates": dg.MetadataValue.int(len(failed))})


def record_run(report: ExperimentReport, *, config: Config | None = None,
               instance: dg.DagsterInstance | None = None) -> bool:
    """Report a plain-library run to the Dagster instance: its partition, four materialisations and checks.

    Returns False, recording nothing, for a run Dagster itself executed (`report.source == "dagster"`:
    its assets are already materialised) and for a run already recorded, so calling it twice is safe.
    `config` defaults to the project of `COBALT_PROJECT_DIR`, else of the working directory.
    """
    if report.source == "dagster":
        return False
    config = config or project_config()
    instance = instance or local_instance(config)
    name = dagster_name(report.name)
    # Two recorders of one run at once must not both see "not yet recorded".
    with FileLock(str(config.output_path / "record_run.lock"), timeout=60):
        if _recorded(instance, name, report.id):
            return False
        instance.add_dynamic_partitions(f"{name}_runs", [report.id])
        for stage, metadata in _stage_metadata(report, Store.for_config(config), config):
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=[name, stage], partition=report.id, tags={"cobalt/source": report.source},
                metadata=metadata))
        for evaluation in _check_evaluations(report, name):
            instance.report_runless_asset_event(evaluation)
    return True


def _recorded(instance: dg.DagsterInstance, name: str, run_id: str) -> bool:
    """`aggregates` is materialised last of the four, so its presence means the run was recorded."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey([name, "aggregates"]), asset_partitions=[run_id]), limit=1)
    return bool(records.records)


def _stage_metadata(report: ExperimentReport, store: Store, config: Config) -> list[tuple[str, dict[str, Any]]]:
    """The metadata each asset would have carried had Dagster run it (the same builders)."""
    dataset = report.config.get("dataset") or {}
    evaluators = [e["name"] for e in report.config.get("evaluators", [])]
    with store.reading():
        previous = previous_run(store, report.name, report.id)
    return [
        ("dataset", dataset_metadata(report.id, int(dataset.get("size") or report.summary.total_items),
                                     dataset.get("source"), evaluators)),
        ("outputs", outputs_metadata(report.items)),
        ("scores", scores_metadata(report.items)),
        ("aggregates", aggregates_metadata(report, config, previous_report(store, previous))),
    ]


def _check_evaluations(report: ExperimentReport, name: str) -> list[dg.AssetCheckEvaluation]:
    evaluations = []
    gates = report.config.get("assertions", [])
    for gate, check in zip(gates, check_names([g["name"] for g in gates]), strict=True):
        passed, metadata = gate_outcome(report.id, [a for a in report.assertions if a.gate == gate["name"]])
        evaluations.append(dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey([name, "aggregates"]), check_name=check,
            passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=metadata,
            description=metadata["message"].value,
            blocking=True, partition=report.id))  # as the real check: blocking, on the run's partition
    return evaluations
