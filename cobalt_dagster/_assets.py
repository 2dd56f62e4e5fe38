"""One experiment as four partitioned assets (dataset, outputs, scores, aggregates) plus blocking checks.

The assets call the library's stage functions (`start_run`, `stream`, `finish`) and write the same
DuckDB tables through cobalt's store module; the partition key is the cobalt run id.
(No `from __future__ import annotations` here: Dagster reads the context annotations at runtime.)
"""

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from cobalt_lib import AssertionResult, Experiment
from cobalt_lib.gates import Assertion
from cobalt_lib.results import load_report, stored_items
from cobalt_lib.run import agent_step, finish, item_keys, pause_point, rescore_step, start_run, stream

from ._live import OBSERVERS, stage_observer
from ._metadata import aggregates_metadata, dataset_metadata, outputs_metadata, scores_metadata
from ._names import dagster_name
from ._resource import CobaltResource, run_async


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


def experiment_defs(experiment: Experiment, gates: list[Assertion]) -> ExperimentDefs:
    """Build the assets, checks and job of one experiment; `gates` are its assertions plus config's."""
    name = dagster_name(experiment.name)
    parts = dg.DynamicPartitionsDefinition(name=f"{name}_runs")
    common: dict[str, Any] = {"key_prefix": [name], "group_name": name, "partitions_def": parts}
    desc = experiment.description or f"cobalt experiment {experiment.name!r}"

    @dg.asset(name="dataset", description=f"The dataset of {desc}.", **common)
    def dataset(context: dg.AssetExecutionContext, cobalt: CobaltResource) -> dg.MaterializeResult:
        pause_point("first-step")
        plan = cobalt.plan(experiment, _partition(context), context.run.tags)
        start_run(plan)
        observer = OBSERVERS.get(plan.run_id)
        if observer:
            observer.on_start(plan)
        return dg.MaterializeResult(metadata=dataset_metadata(
            plan.run_id, len(experiment.dataset), experiment.dataset.source, [e.name for e in plan.evaluators]))

    @dg.asset(name="outputs", deps=[dataset], description="The agent's output for every item.", **common)
    def outputs(context: dg.AssetExecutionContext, cobalt: CobaltResource) -> dg.MaterializeResult:
        plan = cobalt.plan(experiment, _partition(context), context.run.tags)
        plan.store.write({}, delete_run=plan.run_id, delete_tables=["outputs", "scores"])  # re-materialisation
        items = run_async(stream(plan, item_keys(plan), agent_step, tables=("outputs",),
                                 observer=stage_observer(plan.run_id, "outputs")))
        return dg.MaterializeResult(metadata=outputs_metadata(items))

    @dg.asset(name="scores", deps=[outputs], description="Every evaluator's score of every output.", **common)
    def scores(context: dg.AssetExecutionContext, cobalt: CobaltResource) -> dg.MaterializeResult:
        plan = cobalt.plan(experiment, _partition(context), context.run.tags)
        stored = stored_items(plan.store, plan.run_id, with_scores=False)
        plan.store.write({}, delete_run=plan.run_id, delete_tables=["scores"])
        items = run_async(stream(plan, stored, rescore_step, tables=("scores",),
                                 observer=stage_observer(plan.run_id, "scores")))
        return dg.MaterializeResult(metadata=scores_metadata(items))

    @dg.asset(name="aggregates", deps=[scores], description="Statistics per evaluator and verdicts.", **common)
    def aggregates(context: dg.AssetExecutionContext, cobalt: CobaltResource) -> dg.MaterializeResult:
        plan = cobalt.plan(experiment, _partition(context), context.run.tags)
        items = stored_items(plan.store, plan.run_id)
        report = finish(plan, items, "completed")  # its duration: the working time the stages stored
        observer = OBSERVERS.get(plan.run_id)
        if observer:
            observer.on_finish(report)
        return dg.MaterializeResult(metadata=aggregates_metadata(report, plan.store))

    checks = [_gate_check(experiment, gate, aggregates, check)
              for gate, check in zip(gates, check_names([g.name for g in gates]), strict=True)]
    job = dg.define_asset_job(f"{name}_eval", selection=dg.AssetSelection.groups(name),
                              description=f"Run the cobalt experiment {experiment.name!r}.")
    return ExperimentDefs(experiment, name, parts, [dataset, outputs, scores, aggregates], checks, job)


def check_name(gate_name: str) -> str:
    """The Dagster check name of a gate, from its name rather than its position, so reordering or
    adding gates keeps each check's history: `exact >= 0.75` -> `gate_exact_min_0_75`."""
    words = gate_name.replace(">=", " min ").replace("<=", " max ")
    name = "gate_" + re.sub(r"_+", "_", dagster_name(words)).strip("_")
    if len(name) > 60:  # Dagster's limit is generous, the UI's columns are not; a hash keeps long names apart
        name = f"{name[:51].rstrip('_')}_{hashlib.sha1(gate_name.encode()).hexdigest()[:8]}"
    return name


def check_names(gate_names: Sequence[str]) -> list[str]:
    """`check_name` of each gate; a name that repeats gets `_2`, `_3`... in order of declaration."""
    seen: dict[str, int] = {}
    names = []
    for gate_name in gate_names:
        base = check_name(gate_name)
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}_{seen[base]}")
    return names


def _gate_check(experiment: Experiment, gate: Assertion, aggregates: dg.AssetsDefinition,
                check_id: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=aggregates, name=check_id, blocking=True,
                    description=f"Quality gate: {gate.name}")
    def check(context: dg.AssetCheckExecutionContext, cobalt: CobaltResource) -> dg.AssetCheckResult:
        run_id = context.run.tags.get("dagster/partition", "")
        report = load_report(cobalt.store(), run_id)
        passed, metadata = gate_outcome(run_id, gate.evaluate(report, cobalt.config()))
        return dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR,
                                   metadata=metadata, description=gate.name)

    return check


def gate_outcome(run_id: str, results: list[AssertionResult]) -> tuple[bool, dict[str, Any]]:
    """A gate's check verdict and metadata; shared with `record_run` so both look the same in the UI.

    A gate with no results (nothing to evaluate) does not pass; the first failure is the one shown.
    """
    failed = [r for r in results if not r.passed]
    shown = failed[0] if failed else (results[0] if results else None)
    metadata: dict[str, Any] = {"cobalt_run_id": dg.MetadataValue.text(run_id),
                                "message": dg.MetadataValue.text("; ".join(r.message for r in results))}
    if shown is not None and shown.actual is not None:
        metadata["actual"] = dg.MetadataValue.float(shown.actual)
    if shown is not None and shown.expected is not None:
        metadata["expected"] = dg.MetadataValue.float(shown.expected)
    return not failed and bool(results), metadata
