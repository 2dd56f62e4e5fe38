"""The per-item stages (agent call, scoring) and the report with its verdicts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from ..evaluators._context import EvalContext
from ..results._report import AssertionResult, ExperimentReport, ItemResult
from ._agent import AgentContext, call_agent

if TYPE_CHECKING:
    pass

from ._aggregate import summarise
from ._plan import RunPlan
from ._session import Session


async def produce(session: Session, index: int, run_index: int) -> ItemResult:
    """Stage 1 for one item: call the agent."""
    plan = session.plan
    ctx = AgentContext(item=plan.experiment.dataset[index], index=index, run_index=run_index)
    return await call_agent(plan.experiment.runner, ctx, timeout=plan.timeout, limit=session.agent_limit,
                            threads=session.threads, prices=plan.prices)


async def score(session: Session, item: ItemResult) -> ItemResult:
    """Stage 2 for one item: every evaluator on an ok output, concurrently."""
    if item.status != "ok":
        return item
    plan = session.plan
    evaluators = [e for e in plan.evaluators if e.name in plan.scored]
    ctx = EvalContext(item=item.item, output=item.output, metadata=item.metadata, index=item.index,
                      run_index=item.run_index, latency_ms=item.latency_ms, tokens=item.tokens, cost_usd=item.cost_usd)
    calls = [e.evaluate(ctx, session.judge, plan.endpoints[e.name], threads=session.eval_threads,
                        timeout=plan.timeout) for e in evaluators]
    # gather wraps each call in a task of its own: one evaluator is awaited in place
    results = [await calls[0]] if len(calls) == 1 else await asyncio.gather(*calls)
    fresh = {e.name: r for e, r in zip(evaluators, results, strict=True)}
    kept = item.evaluations
    item.evaluations = {e.name: fresh.get(e.name) or kept[e.name] for e in plan.evaluators
                        if e.name in fresh or e.name in kept}
    return item


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


def build_report(plan: RunPlan, items: list[ItemResult], duration_ms: float,
                 status: Literal["completed", "incomplete", "failed"]) -> ExperimentReport:
    items = sorted(items, key=lambda i: (i.index, i.run_index))
    report = ExperimentReport(
        id=plan.run_id, name=plan.experiment.name, timestamp=plan.timestamp, status=status, source=plan.source,
        parent_run_id=plan.parent_run_id, tags=plan.tags, config=plan.describe(),
        summary=summarise(plan, items, duration_ms), items=items,
    )
    report.assertions = judge_verdicts(plan, report)
    return report
