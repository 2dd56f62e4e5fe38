"""What each asset and gate check of an experiment does, behind `CobaltResource.materialize` and
`CobaltResource.check`: the asset bodies are one line each.

A step either executes its stage (the library's stage functions, rows to the store) or, in a recording
(`cobalt/record`, `_replay`), reports what the store already holds; `Mode` is that choice, made once
per step from the run's tags.
(No `from __future__ import annotations` here: Dagster reads the context annotations at runtime.)
"""

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

import dagster as dg

from cobalt_lib import AssertionResult, Experiment, Store
from cobalt_lib.gates import Assertion
from cobalt_lib.links import dagster_tags
from cobalt_lib.run import finish_from_exchange, start_run
from cobalt_lib.store import Exchange, streamed_report

from ._grading import GRADING_EXPERIMENT
from ._metadata import aggregates_metadata, dataset_metadata, num, previous_report, previous_run
from ._replay import EXECUTED, RECORDED, is_recording, stage_metadata, stored_report

if TYPE_CHECKING:
    from ._resource import CobaltResource

#: Whether a step does its stage's work or reports the stored run's.
Mode = Literal["execute", "replay"]

#: Metadata key on the `Failure` a failed gate raises: how `cobalt run` tells a verdict from a crash.
GATE_FAILURE_KEY = "cobalt_gate"
#: The run tag that says how a run started (`request`, `schedule`, `record`, `launch`...).
TRIGGER_TAG = "cobalt/trigger"


def mode_of(tags: Mapping[str, str]) -> Mode:
    """The run's one decision: a recording (`cobalt/record`) replays, every other run executes."""
    return "replay" if is_recording(tags) else "execute"


def materialize(cobalt: "CobaltResource", context: dg.AssetExecutionContext, experiment: Experiment,
                stage: str) -> dg.MaterializeResult:
    """The materialisation of `stage` (dataset or aggregates) of the partition's cobalt run."""
    if mode_of(context.run.tags) == "replay":
        return _replayed(cobalt, context, stage)
    if experiment.name == GRADING_EXPERIMENT:
        raise dg.Failure(description="The grading assets only record the runs of `cobalt grade`: run `cobalt grade` "
                                     "to grade, and it is recorded here.", allow_retries=False)
    return _EXECUTE[stage](cobalt, context, experiment)


def _replayed(cobalt: "CobaltResource", context: dg.AssetExecutionContext, stage: str) -> dg.MaterializeResult:
    """`stage` of a recording: the stored run's metadata, no agent or judge call."""
    store, run_id = cobalt.store(), context.partition_key
    metadata = stage_metadata(stage, stored_report(store, run_id), store, cobalt.config())
    if stage == "aggregates":
        store.mark_in_dagster(run_id, context.run.run_id, RECORDED)
    return dg.MaterializeResult(metadata=metadata)


def _dataset(cobalt: "CobaltResource", context: dg.AssetExecutionContext,
             experiment: Experiment) -> dg.MaterializeResult:
    """Plan and start the run."""
    plan = cobalt.plan(experiment, context.partition_key, job_tags(context, experiment))
    start_run(plan)
    plan.store.mark_in_dagster(plan.run_id, context.run.run_id, EXECUTED)  # the pages link this run to Dagster
    stored = experiment.dataset.stored  # the stored dataset version the run read, if it read one
    return dg.MaterializeResult(metadata=dataset_metadata(
        plan.run_id, len(experiment.dataset), experiment.dataset.source, [e.name for e in plan.evaluators],
        stored.ref if stored is not None else None))


def _aggregates(cobalt: "CobaltResource", context: dg.AssetExecutionContext,
                experiment: Experiment) -> dg.MaterializeResult:
    """Finish the run (aggregates, verdicts, results JSON, run row) from its shards' partials, merged
    exactly (`finish_from_exchange`: no item read back from the store; from the store when the parts do
    not hold the whole run); the items stream through a disk spill, so memory stays flat in their number."""
    store, run_id = cobalt.store(), context.partition_key
    with store.reading():  # the step's reads over one connection (finishing the run leaves the previous one)
        run = store.get_run(run_id)
        previous = previous_run(store, experiment.name, run_id)
    plan = cobalt.plan_for_run(experiment, run_id, context.run.tags, run)
    # Its duration: the working time the shards stored (merge set it), read with the run row above.
    report = finish_from_exchange(plan, Exchange.for_config(plan.config), "completed",
                                  worked_ms=float(run.get("worked_ms") or 0.0) if run else None)
    return dg.MaterializeResult(metadata=aggregates_metadata(report, plan.config,
                                                             previous_report(store, previous, run_id)))


def job_tags(context: dg.AssetExecutionContext, experiment: Experiment) -> Mapping[str, str]:
    """The run's tags, completed with those a run of the experiment's job carries.

    The asset graph's "Materialize" and an asset backfill launch Dagster's own asset job (`__ASSET_JOB`,
    which Dagster picks for every launch from the graph), with none of the job's tags: the run gets them
    here, before cobalt stores it, so the Runs filter, the pages and `cobalt history` see it as any run
    of the experiment; `cobalt/trigger` says how it started.
    """
    tags = context.run.tags
    trigger = "backfill" if "dagster/backfill" in tags else "launch"
    missing = {key: value for key, value in {**dagster_tags(experiment.tags), TRIGGER_TAG: trigger}.items()
               if key not in tags}
    if missing:
        context.instance.add_run_tags(context.run.run_id, missing)
    return {**tags, **missing}


_EXECUTE: dict[str, Callable[["CobaltResource", dg.AssetExecutionContext, Experiment], dg.MaterializeResult]] = {
    "dataset": _dataset, "aggregates": _aggregates}


def check(cobalt: "CobaltResource", context: dg.AssetCheckExecutionContext,
          gate: Assertion) -> Iterator[dg.AssetCheckResult]:
    """The stored verdict of `gate` for the partition's run (the same for an executed run and a recorded
    one), then, when it failed, a `Failure` saying so in one sentence."""
    run_id = context.partition_key
    store = cobalt.store()
    passed, metadata, verdict = _verdict(store, store.get_run(run_id), run_id, gate)
    yield dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=metadata,
                              description=verdict)
    if not passed:
        # Dagster would end the step on its own error with a stack trace; the verdict, said plainly,
        # is what a person needs to read there. Still a failed blocking check: downstream is skipped.
        raise dg.Failure(description=f"Quality gate {gate.name} failed for run {run_id}: {verdict}",
                         metadata={GATE_FAILURE_KEY: dg.MetadataValue.text(gate.name), **metadata},
                         allow_retries=False)


def _verdict(store: Store, run: dict[str, Any] | None, run_id: str,
             gate: Assertion) -> tuple[bool, dict[str, Any], str]:
    if run is None:
        return (False, {"cobalt_run_id": dg.MetadataValue.text(run_id)},
                f"no stored results for cobalt run {run_id}: run it (materialise the partition) first")
    if not gate.applies_to(run.get("variant")):  # a gate naming one variant, on another variant's partition
        verdict = f"applies to variant {gate.variant} only; this run is variant {run.get('variant')}"
        metadata = {"message": dg.MetadataValue.text(verdict), "cobalt_run_id": dg.MetadataValue.text(run_id)}
        return True, metadata, verdict
    passed, metadata = gate_outcome(run_id, _gate_verdicts(store, run, gate.name))
    return passed, metadata, metadata["message"].value


def _gate_verdicts(store: Store, run: dict[str, Any], gate: str) -> list[AssertionResult]:
    """The stored verdicts of one gate of the run: its verdict rows, without reading any item (a run
    stored before verdicts named their gate: from its report)."""
    rows = store.rows("verdicts", run["run_id"])
    if rows and all(r.get("gate") is None for r in rows):
        return [a for a in streamed_report(store, run["run_id"], run=run).assertions if a.gate == gate]
    return [AssertionResult(name=r["name"], gate=r["gate"] or "", passed=bool(r["passed"]), message=r["message"] or "",
                            actual=r["actual"], expected=r["expected"]) for r in rows if r.get("gate") == gate]


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
