"""The per-item stages (agent call, scoring) and the report with its verdicts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from ..conversations._spec import conversation_of
from ..evaluators._context import EvalContext
from ..evaluators._turns import evaluate_item
from ..results._report import AssertionResult, ExperimentReport, ItemResult
from ..results._spill import ItemSpill, StoredItems
from ._agent import NO_VARIANT, AgentContext, call_agent
from ._aggregate import Tally, summarise
from ._conversation import converse
from ._plan import RunPlan
from ._session import Session


class FinishedItems:
    """A run's finished items as they finish: on disk (`ItemSpill`), with their `Tally` in memory.

    What the library path collects instead of a list, so its memory stays flat in the number of items.
    """

    def __init__(self, directory: Path) -> None:
        self.spill = ItemSpill(directory)
        self.tally = Tally()

    def __len__(self) -> int:
        return len(self.tally)

    def append(self, item: ItemResult) -> None:
        self.spill.append(item)  # first: it writes all of the item or nothing
        self.tally.add(item)


async def produce(session: Session, index: int, run_index: int) -> ItemResult:
    """Stage 1 for one item: call the agent."""
    plan = session.plan
    ctx = AgentContext(item=plan.experiment.dataset[index], index=index, run_index=run_index,
                       variant=plan.variant.params if plan.variant is not None else NO_VARIANT)
    if (conversation := conversation_of(ctx.item, f"dataset item {index}")) is not None:
        return await converse(session, ctx, conversation)  # the agent once per turn
    return await call_agent(plan.experiment.runner, ctx, timeout=plan.timeout, limit=session.agent_limit,
                            threads=session.threads, prices=plan.prices, trace_limit=session.trace_limit)


async def score(session: Session, item: ItemResult) -> ItemResult:
    """Stage 2 for one item: every evaluator on an ok output, concurrently."""
    if item.status != "ok":
        return item
    plan = session.plan
    evaluators = [e for e in plan.evaluators if e.name in plan.scored]
    ctx = EvalContext(item=item.item, output=item.output, metadata=item.metadata, index=item.index,
                      run_index=item.run_index, latency_ms=item.latency_ms, tokens=item.tokens, cost_usd=item.cost_usd,
                      spans=tuple(item.spans))
    calls = [evaluate_item(e, ctx, session.judge, plan.endpoints[e.name], threads=session.eval_threads,
                           timeout=plan.timeout) for e in evaluators]
    # gather wraps each call in a task of its own: one evaluator is awaited in place
    results = [await calls[0]] if len(calls) == 1 else await asyncio.gather(*calls)
    fresh = {e.name: r for e, r in zip(evaluators, results, strict=True)}
    if session.exporter is not None:
        session.exporter.emit(item, fresh)
    kept = item.evaluations
    merged = {e.name: fresh.get(e.name) or kept[e.name] for e in plan.evaluators if e.name in fresh or e.name in kept}
    # a copy, not an assignment: a rescore's item may be a stored run's (read-only) item
    return item.model_copy(update={"evaluations": merged})


def item_keys(plan: RunPlan) -> Iterable[tuple[int, int]]:
    indices = range(len(plan.experiment.dataset)) if plan.indices is None else plan.indices
    return ((index, run_index) for index in indices for run_index in range(plan.runs))


def judge_verdicts(plan: RunPlan, report: ExperimentReport) -> list[AssertionResult]:
    """Stage 4: every assertion over the aggregates; an unfinished run fails its gates."""
    verdicts = [result.model_copy(update={"gate": gate.name}) for gate in plan.assertions
                for result in gate.evaluate(report, plan.config)]
    if report.status != "completed":
        verdicts.append(AssertionResult(name="run completed", passed=False,
                                        message=f"the run is {report.status}: only finished items were scored"))
    return verdicts


def build_report(plan: RunPlan, items: Sequence[ItemResult] | FinishedItems, duration_ms: float,
                 status: Literal["completed", "incomplete", "failed"]) -> ExperimentReport:
    """The report of `items` (a list, or a run's `FinishedItems`, whose report reads them from disk)."""
    ordered: Sequence[ItemResult]
    if isinstance(items, FinishedItems):
        tally, ordered = items.tally, items.spill.items()
    else:
        ordered = sorted(items, key=lambda i: (i.index, i.run_index))
        tally = Tally.of(ordered)
    report = ExperimentReport(
        id=plan.run_id, name=plan.experiment.name, timestamp=plan.timestamp, status=status, source=plan.source,
        parent_run_id=plan.parent_run_id, tags=plan.tags, config=plan.describe(),
        variant=plan.variant.name if plan.variant else None, group_id=plan.group_id,
        summary=summarise(plan, tally, duration_ms), identity=plan.identity,
    )
    if isinstance(ordered, StoredItems):
        ordered.scored_counts = {name: verdicts.given_and_scored() for name, verdicts in tally.verdicts.items()}
    report.items = ordered  # assigned, not validated: validation would read a disk-backed sequence into a list
    report.assertions = judge_verdicts(plan, report)
    return report
