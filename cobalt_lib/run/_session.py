"""What one run shares across its items (judge, threads, limits), and who hears its progress."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .._aio import is_async_callable
from .._threads import DaemonThreads
from ..llm._batch import BatchJudging
from ..llm._judge import Judge
from ..llm._providers import import_sdks
from ..results._report import ExperimentReport, ItemResult
from ..results._spans import SpanRecord
from ..traces._collect import install
from ..traces._export import EvaluationExporter

if TYPE_CHECKING:
    from ..llm._wire import Clients

from ._ledger import StoreLedger
from ._plan import RunPlan
from ._requests import FailedItemsRun, FreshRun, RescoreRun


class Observer(Protocol):
    """Receives progress; the terminal reporter and the MCP server implement it.

    `on_item` gets each item once, scored (or failed: an agent error or timeout is never scored).
    """

    def on_start(self, plan: RunPlan) -> None: ...
    def on_item(self, item: ItemResult) -> None: ...
    def on_finish(self, report: ExperimentReport) -> None: ...


class Session:
    """What one run shares across items: the judge's clients and cache, the agent's threads and limit."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan
        import_sdks(plan.endpoints[e.name] for e in plan.evaluators if e.name in plan.scored)
        self.judge = Judge(plan.cache(), plan.judge_concurrency, plan.prices, batch=judge_batches(plan))
        self.agent_limit = asyncio.Semaphore(plan.concurrency)
        runner = plan.experiment.runner
        self.threads = None if is_async_callable(runner) else DaemonThreads(plan.concurrency)
        #: For sync function evaluators; threads start on first use.
        self.eval_threads = DaemonThreads(plan.concurrency + plan.judge_concurrency, name="cobalt-evaluator")
        #: Where an agent output goes the moment it exists (the store, when the stage writes outputs).
        self.output_sink: Callable[[ItemResult], None] = lambda item: None
        #: The most spans kept per agent call, or None when no spans are collected (`traces`).
        self.trace_limit = plan.config.traces.max_spans if plan.config.traces.collect and install() else None
        #: Where each item's evaluations go as OpenTelemetry events, when exporting them is on.
        self._stored_spans: dict[tuple[int, int], list[SpanRecord]] | None = None
        self.exporter = (EvaluationExporter.for_run(plan.run_id, plan.experiment.name)
                         if plan.config.traces.exporting() else None)

    def stored_spans(self, item: ItemResult) -> list[SpanRecord]:
        """The stored spans of an item this run scores again without calling the agent (a rescore reads its
        parent run's, a resume its own), read once per stage for every item."""
        if self._stored_spans is None:
            request = self.plan.request
            source = request.parent_run_id if isinstance(request, RescoreRun) else self.plan.run_id
            self._stored_spans = self.plan.store.spans_of(source)
        return self._stored_spans.get((item.index, item.run_index), [])

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.threads is not None:
            self.threads.shutdown()
        self.eval_threads.shutdown()
        await self.judge.aclose()
        if self.exporter is not None:  # sends what is still batched: a short run's events go out before it returns
            await asyncio.to_thread(self.exporter.close)


def judge_batches(plan: RunPlan) -> Callable[[Clients], BatchJudging] | None:
    """How the run's judge sends its calls through batches, when it does: the run asked for it, or an
    earlier attempt of the run left batches open (a resumed run waits on them)."""
    ledger = StoreLedger(plan.store, plan.run_id)
    # Only a run that ran before (resumed, or a retried Dagster partition) can have batches open.
    if not plan.judge_batch and (isinstance(plan.request, FreshRun | RescoreRun | FailedItemsRun)
                                 or not ledger.open_batches()):
        return None
    judge = plan.config.judge
    deadline, window = judge.batch_deadline_seconds, judge.batch_window_seconds
    return lambda clients: BatchJudging(clients, deadline=deadline, window=window, ledger=ledger,
                                        run_id=plan.run_id, say=lambda news: print(f"cobalt: {news}", file=sys.stderr))
