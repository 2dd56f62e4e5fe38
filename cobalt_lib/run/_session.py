"""What one run shares across its items (judge, threads, limits), and who hears its progress."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .._aio import is_async_callable
from .._threads import DaemonThreads
from ..llm._judge import Judge
from ..llm._providers import import_sdks
from ..results._report import ExperimentReport, ItemResult

if TYPE_CHECKING:
    pass

from ._plan import RunPlan


class Observer(Protocol):
    """Receives progress; the terminal reporter and the MCP server implement it.

    `on_item` gets each item once, scored (or failed: an agent error or timeout is never scored).
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

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if not self.shared:
            await Parts(self.judge, self.agent_limit, self.threads, self.eval_threads).aclose()


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
        return cls(judge or Judge(plan.cache(), plan.judge_concurrency, plan.prices),
                   asyncio.Semaphore(plan.concurrency),
                   None if is_async_callable(runner) else DaemonThreads(plan.concurrency),
                   DaemonThreads(plan.concurrency + plan.judge_concurrency, name="cobalt-evaluator"))

    async def aclose(self) -> None:
        if self.threads is not None:
            self.threads.shutdown()
        self.eval_threads.shutdown()
        await self.judge.aclose()


#: The parts every Session of a run group uses (set by `run._group` around the group's runs).
SHARED: ContextVar[Parts | None] = ContextVar("cobalt_shared_session_parts", default=None)


def batch_delay(seconds: float = 1.0) -> float:
    """How often a run's rows go to the store: every `seconds`, or in a run group every `seconds` per run,
    so that the group opens the store about as often as one run does (each batch opens the file anew,
    15-60 ms of CPU that the group's runs would otherwise pay each)."""
    group = SHARED.get()
    return seconds * (group.runs if group is not None else 1)
