"""Gates that hold across Dagster runs, and library runs reported to the instance."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from cobalt_lib import Config, ExperimentReport, Store, load_config

from ._assets import check_name
from ._instance import local_instance
from ._metadata import aggregates_metadata
from ._names import dagster_name


def require_gates_passed(experiment: str, run_id: str, project_dir: str | Path | None = None) -> None:
    """Raise `dagster.Failure` unless the stored verdicts of `run_id` all passed.

    Blocking checks stop downstream steps only inside one Dagster run; call this at the top of a
    deploy asset so a deploy materialised later for a failed partition fails too.
    """
    config = load_config(Path(project_dir) if project_dir else None)
    store = Store(config.output_path / "cobalt.duckdb")
    runs = store.query("SELECT status, experiment FROM runs WHERE run_id = ?", [run_id])
    if not runs:
        raise dg.Failure(description=f"cobalt run {run_id} of {experiment!r} has no stored results; run it first.")
    if runs[0]["status"] != "completed":
        raise dg.Failure(description=f"cobalt run {run_id} is {runs[0]['status']}, not completed.")
    failed = [v for v in store.rows("verdicts", run_id) if not v["passed"]]
    if failed:
        lines = "; ".join(f"{v['name']}: {v['message']}" for v in failed)
        raise dg.Failure(description=f"quality gates failed for {experiment!r} run {run_id}: {lines}",
                         metadata={"failed_gates": dg.MetadataValue.int(len(failed))})


def record_run(report: ExperimentReport, *, config: Config | None = None,
               instance: dg.DagsterInstance | None = None) -> None:
    """Report a plain-library run to the Dagster instance: its partition, four materialisations and checks."""
    config = config or load_config()
    instance = instance or local_instance(config)
    name = dagster_name(report.name)
    instance.add_dynamic_partitions(f"{name}_runs", [report.id])
    store = Store(config.output_path / "cobalt.duckdb")
    tags = {"cobalt/source": report.source}
    for stage in ("dataset", "outputs", "scores"):
        instance.report_runless_asset_event(dg.AssetMaterialization(
            asset_key=[name, stage], partition=report.id, tags=tags,
            metadata={"cobalt_run_id": dg.MetadataValue.text(report.id)}))
    instance.report_runless_asset_event(dg.AssetMaterialization(
        asset_key=[name, "aggregates"], partition=report.id, tags=tags,
        metadata=aggregates_metadata(report, store)))
    gates = report.config.get("assertions", [])
    for index, gate in enumerate(gates):
        results = [a for a in report.assertions if a.gate == gate["name"]]
        instance.report_runless_asset_event(dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey([name, "aggregates"]), check_name=check_name(gate["name"], index),
            passed=bool(results) and all(a.passed for a in results), severity=dg.AssetCheckSeverity.ERROR,
            metadata={"cobalt_run_id": report.id}, partition=None))
