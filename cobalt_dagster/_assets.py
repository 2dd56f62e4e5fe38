"""One experiment as four partitioned assets (dataset, outputs, scores, aggregates) plus blocking checks.

`dataset` plans and starts the run; `outputs` and `scores` are one graph-backed multi-asset that runs
the items in shards over Dagster's executor (`_shards`); `aggregates` finishes the run from the store.
They write the same DuckDB tables as the library through cobalt's store module; the partition key is
the cobalt run id.
(No `from __future__ import annotations` here: Dagster reads the context annotations at runtime.)
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from cobalt_lib import AssertionResult, Experiment, ExperimentReport, Store
from cobalt_lib.gates import Assertion
from cobalt_lib.links import dagster_check_names as check_names
from cobalt_lib.links import dagster_tags
from cobalt_lib.run import RunPlan, finish_from_store, start_run
from cobalt_lib.store import streamed_report

from ._metadata import (
    aggregates_metadata,
    dataset_metadata,
    num,
    previous_report,
    previous_run,
)
from ._names import dagster_name
from ._replay import EXECUTED, RECORDED, is_recording, stage_metadata, stored_report
from ._resource import CobaltResource, checked_store
from ._shards import shard_assets


@dataclass
class ExperimentDefs:
    """Everything Dagster needs for one experiment."""

    experiment: Experiment
    name: str
    partitions: dg.DynamicPartitionsDefinition
    assets: list[dg.AssetsDefinition]
    checks: list[dg.AssetChecksDefinition]
    job: Any

    @property
    def partitions_name(self) -> str:
        return f"{self.name}_runs"

    @property
    def aggregates_key(self) -> dg.AssetKey:
        return dg.AssetKey([self.name, "aggregates"])


def _partition(context: dg.AssetExecutionContext) -> str:
    return context.partition_key


def _replayed(stage: str, context: dg.AssetExecutionContext, cobalt: CobaltResource,
              cobalt_store: DuckDBResource) -> dg.MaterializeResult:
    """`stage` of a recording (`cobalt/record`): the stored run's metadata, no agent or judge call."""
    store = checked_store(cobalt, cobalt_store)
    run_id = _partition(context)
    report = stored_report(store, run_id)
    metadata = stage_metadata(stage, report, store, cobalt.config())
    if stage == "aggregates":
        store.mark_in_dagster(run_id, context.run.run_id, RECORDED)
    return dg.MaterializeResult(metadata=metadata)


def _finish_from_store(plan: RunPlan, worked_ms: float | None) -> ExperimentReport:
    """The run's report from its stored rows, saved (aggregates, verdicts, results JSON, run row); the
    items stream through a disk spill, so memory stays flat in the number of items."""
    return finish_from_store(plan, "completed", worked_ms=worked_ms)


def _gate_verdicts(store: Store, run: dict[str, Any], gate: str) -> list[AssertionResult]:
    """The stored verdicts of one gate of the run: its verdict rows, without reading any item (a run
    stored before verdicts named their gate: from its report)."""
    rows = store.rows("verdicts", run["run_id"])
    if rows and all(r.get("gate") is None for r in rows):
        return [a for a in streamed_report(store, run["run_id"], run=run).assertions if a.gate == gate]
    return [AssertionResult(name=r["name"], gate=r["gate"] or "", passed=bool(r["passed"]), message=r["message"] or "",
                            actual=r["actual"], expected=r["expected"]) for r in rows if r.get("gate") == gate]


def _description(stage: str, experiment: Experiment) -> str:
    """The stage's sentence, then the experiment's own description as its own paragraph."""
    own = (experiment.description or "").strip()
    head = f"{stage} (cobalt experiment {experiment.name!r})."
    return f"{head}\n\n{own}" if own else head


def experiment_defs(experiment: Experiment, gates: list[Assertion], pool: str | None = None) -> ExperimentDefs:
    """Build the assets, checks and job of one experiment; `gates` are its assertions plus config's, `pool`
    the concurrency pool its shards claim (`_pools.judge_pool`)."""
    name = dagster_name(experiment.name)
    parts = dg.DynamicPartitionsDefinition(name=f"{name}_runs")
    common: dict[str, Any] = {"key_prefix": [name], "group_name": name, "partitions_def": parts}

    @dg.asset(name="dataset", description=_description("The dataset items of each run", experiment), **common)
    def dataset(context: dg.AssetExecutionContext, cobalt: CobaltResource,
                cobalt_store: DuckDBResource) -> dg.MaterializeResult:
        if is_recording(context.run.tags):
            return _replayed("dataset", context, cobalt, cobalt_store)
        store = checked_store(cobalt, cobalt_store)
        plan = cobalt.plan(experiment, _partition(context), context.run.tags)
        start_run(plan)
        store.mark_in_dagster(plan.run_id, context.run.run_id, EXECUTED)  # the pages link this run to Dagster
        return dg.MaterializeResult(metadata=dataset_metadata(
            plan.run_id, len(experiment.dataset), experiment.dataset.source, [e.name for e in plan.evaluators]))

    stages = shard_assets(experiment, name, parts, dataset.key, pool, {
        "outputs": _description("The agent's output for every item", experiment),
        "scores": _description("Every evaluator's score of every output", experiment)})

    @dg.asset(name="aggregates", deps=[dg.AssetKey([name, "scores"])], description=_description(
        "Statistics per evaluator, run metrics and the gates' verdicts", experiment), **common)
    def aggregates(context: dg.AssetExecutionContext, cobalt: CobaltResource,
                   cobalt_store: DuckDBResource) -> dg.MaterializeResult:
        if is_recording(context.run.tags):
            return _replayed("aggregates", context, cobalt, cobalt_store)
        store = checked_store(cobalt, cobalt_store)
        run_id = _partition(context)
        with store.reading():  # the step's reads over one connection (finishing the run leaves the previous one)
            run = store.get_run(run_id)
            previous = previous_run(store, experiment.name, run_id)
        plan = cobalt.plan_for_run(experiment, run_id, context.run.tags, run)
        # Its duration: the working time the shards stored (merge set it), read with the run row above.
        report = _finish_from_store(plan, float(run.get("worked_ms") or 0.0) if run else None)
        return dg.MaterializeResult(metadata=aggregates_metadata(report, plan.config,
                                                                 previous_report(store, previous, run_id)))

    checks = [_gate_check(gate, aggregates, check, parts)
              for gate, check in zip(gates, check_names([g.name for g in gates]), strict=True)]
    job = dg.define_asset_job(f"{name}_eval", selection=dg.AssetSelection.groups(name),
                              description=f"Run the cobalt experiment {experiment.name!r}.",
                              run_tags=dagster_tags(experiment.tags) or None)
    return ExperimentDefs(experiment, name, parts, [dataset, stages, aggregates], checks, job)


#: Metadata key on the `Failure` a failed gate raises: how `cobalt run` tells a verdict from a crash.
GATE_FAILURE_KEY = "cobalt_gate"


def _gate_check(gate: Assertion, aggregates: dg.AssetsDefinition, check_id: str,
                parts: dg.DynamicPartitionsDefinition) -> dg.AssetChecksDefinition:
    # Partitioned like the asset (a preview feature in Dagster 1.13): each verdict sits on its run's
    # partition, and the check's own "Execute" in the UI re-reads the stored verdict of the partition
    # chosen there, as a job run does.
    # A generator, so the check result is recorded before the step fails (Dagster's stubs type only
    # a returned result).
    @dg.asset_check(asset=aggregates, name=check_id, blocking=True, partitions_def=parts,  # type: ignore[arg-type]
                    description=f"Quality gate `{gate.name}`: the verdict cobalt stored for the run "
                                "(the partition). A failed gate blocks what is downstream of `aggregates`.")
    def check(context: dg.AssetCheckExecutionContext, cobalt: CobaltResource,
              cobalt_store: DuckDBResource) -> Iterator[dg.AssetCheckResult]:
        run_id = context.partition_key
        store = checked_store(cobalt, cobalt_store)
        run = store.get_run(run_id)
        if run is None:
            passed, metadata = False, {"cobalt_run_id": dg.MetadataValue.text(run_id)}
            verdict = f"no stored results for cobalt run {run_id}: run it (materialise the partition) first"
        elif not gate.applies_to(run.get("variant")):  # a gate naming one variant, on another variant's partition
            verdict = f"applies to variant {gate.variant} only; this run is variant {run.get('variant')}"
            passed, metadata = True, {"message": dg.MetadataValue.text(verdict),
                                      "cobalt_run_id": dg.MetadataValue.text(run_id)}
        else:
            passed, metadata = gate_outcome(run_id, _gate_verdicts(store, run, gate.name))
            verdict = metadata["message"].value
        yield dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=metadata,
                                  description=verdict)
        if not passed:
            # Dagster would end the step on its own error with a stack trace; the verdict, said plainly,
            # is what a person needs to read there. Still a failed blocking check: downstream is skipped.
            raise dg.Failure(description=f"Quality gate {gate.name} failed for run {run_id}: {verdict}",
                             metadata={GATE_FAILURE_KEY: dg.MetadataValue.text(gate.name), **metadata},
                             allow_retries=False)

    return check


def gate_outcome(run_id: str, results: list[AssertionResult]) -> tuple[bool, dict[str, Any]]:
    """A gate's check verdict and metadata; the same for an executed run and a recorded one.

    A gate with no results (nothing to evaluate) does not pass; the first failure is the one shown.
    """
    failed = [r for r in results if not r.passed]
    shown = failed[0] if failed else (results[0] if results else None)
    verdict = "; ".join(r.message for r in results) or "nothing to evaluate: the gate has no result"
    metadata: dict[str, Any] = {"message": dg.MetadataValue.text(verdict),
                                "cobalt_run_id": dg.MetadataValue.text(run_id)}
    if shown is not None and shown.actual is not None:
        metadata["actual"] = dg.MetadataValue.float(num(shown.actual, 4))
    if shown is not None and shown.expected is not None:
        metadata["expected"] = dg.MetadataValue.float(num(shown.expected, 4))
    return not failed and bool(results), metadata
