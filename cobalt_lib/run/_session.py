"""What one run shares across its items (judge, threads, limits), and who hears its progress."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .._aio import is_async_callable
from .._threads import DaemonThreads
from ..llm._batch import BatchJudging
from ..llm._judge import Judge
from ..llm._providers import import_sdks
from ..results._report import ExperimentReport, ItemResult
from ..results._spans import SpanRecord
from ..traces._collect import install, wanted
from ..traces._export import EvaluationExporter

if TYPE_CHECKING:
    from ..llm._wire import Clients

from ._ledger import StoreLedger
from ._plan import RunPlan
from ._requests import RescoreRun


class Observer(Protocol):
    """Receives progress; the terminal reporter and the MCP server implement it.

    `on_item` gets each item once, scored (or failed: an agent error or timeout is never scored). An
    observer with a method `on_judge_calls(in_flight, answered)` also hears each judge call start and end
    (the terminal's live line counts them: an item's line waits for its judge calls).
    """

    def on_start(self, plan: RunPlan) -> None: ...
    def on_item(self, item: ItemResult) -> None: ...
    def on_finish(self, report: ExperimentReport) -> None: ...


class Session:
    """What one run shares across items: the judge's clients and cache, the agent's threads and limit.

    Inside `shared_parts(...)` (the runs of every variant at once) those come from the group instead,
    and the group closes them: the variants share one limit, one judge and its cache."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan
        import_sdks(plan.endpoints[e.name] for e in plan.evaluators if e.name in plan.scored)
        group = SHARED.get()
        self.shared = group is not None
        parts = group or Parts.for_plan(plan)
        self.judge, self.agent_limit, self.threads, self.eval_threads = (
            parts.judge, parts.agent_limit, parts.threads, parts.eval_threads)
        #: Where an agent output goes the moment it exists (the store, when the stage writes outputs).
        self.output_sink: Callable[[ItemResult], None] = lambda item: None
        #: Where each item's evaluations go as OpenTelemetry events, when exporting them is on.
        self._stored_spans: dict[tuple[int, int], list[SpanRecord]] | None = None
        self.exporter = (EvaluationExporter.for_run(plan.run_id, plan.experiment.name)
                         if plan.config.traces.exporting() else None)
        #: The most spans kept per agent call, or None when no spans are collected (`traces`): none when
        #: nothing in the process imported OpenTelemetry by now (no agent code can emit a span).
        collect = plan.config.traces.collect and wanted()
        self.trace_limit = plan.config.traces.max_spans if collect and install() else None

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
        if not self.shared:
            await Parts(self.judge, self.agent_limit, self.threads, self.eval_threads).aclose()
        if self.exporter is not None:  # sends what is still batched: a short run's events go out before it returns
            await asyncio.to_thread(self.exporter.close)


@dataclass
class Parts:
    """The judge, the agent's limit and threads, and the evaluators' threads: one run's, or a group's."""

    judge: Judge
    agent_limit: asyncio.Semaphore
    threads: DaemonThreads | None
    #: For sync function evaluators; threads start on first use.
    eval_threads: DaemonThreads
    #: How many runs share these parts (a run group's variants).
    runs: int = 1

    @classmethod
    def for_plan(cls, plan: RunPlan, judge: Judge | None = None) -> Parts:
        runner = plan.experiment.runner
        return cls(judge or Judge(plan.cache(), plan.judge_concurrency, plan.prices, batch=judge_batches(plan)),
                   asyncio.Semaphore(plan.concurrency),
                   None if is_async_callable(runner) else DaemonThreads(plan.concurrency),
                   DaemonThreads(plan.concurrency + plan.judge_concurrency, name="cobalt-evaluator"))

    async def aclose(self) -> None:
        if self.threads is not None:
            self.threads.shutdown()
        self.eval_threads.shutdown()
        await self.judge.aclose()


def judge_batches(plan: RunPlan, group: Sequence[RunPlan] = ()) -> Callable[[Clients], BatchJudging] | None:
    """How the run's judge sends its calls through batches, when the run asked for it (a resumed run asks
    when it started so, a retried Dagster run by its tag), waiting on the batches an earlier attempt left
    open. A run group's judge (`group`: its plans) notes its batches under the first run and waits on any
    of the group's."""
    plans = group or [plan]
    if not any(p.judge_batch for p in plans):
        return None  # no store read: a run that never asked for batches has none open
    ledger = StoreLedger(plan.store, plan.run_id, also=[p.run_id for p in plans])
    judge = plan.config.judge
    deadline, window = judge.batch_deadline_seconds, judge.batch_window_seconds
    return lambda clients: BatchJudging(clients, deadline=deadline, window=window, ledger=ledger,
                                        run_id=plan.run_id, say=lambda news: print(f"cobalt: {news}", file=sys.stderr))


#: The parts every Session of a run group uses (set by `run._group` around the group's runs).
SHARED: ContextVar[Parts | None] = ContextVar("cobalt_shared_session_parts", default=None)


def batch_delay(seconds: float = 1.0) -> float:
    """How often a run's rows go to the store: every `seconds`, or in a run group every `seconds` per run,
    so that the group opens the store about as often as one run does (each batch opens the file anew,
    15-60 ms of CPU that the group's runs would otherwise pay each)."""
    group = SHARED.get()
    return seconds * (group.runs if group is not None else 1)
