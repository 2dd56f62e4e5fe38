"""A run group: the runs of every variant of an experiment at once, sharing one agent limit, one judge
and its cache. Each variant is still its own run (own rows, lease, results file and gates)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._aio import run_anywhere
from .._errors import CobaltError
from ..llm._cache import cache_key
from ..llm._judge import Answer, Judge
from ..llm._providers import Endpoint
from ..results._report import ExperimentReport
from ._execute import RunInterrupted, execute
from ._plan import RunPlan, new_run_id
from ._session import SHARED, Observer, Parts, judge_batches

T = TypeVar("T")


class SharedJudge(Judge):
    """The group's judge: a request another variant has in flight waits for that one's answer, then
    reads it from the cache, so two variants that answer alike pay one judge call, not two."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_flight: dict[str, asyncio.Future[None]] = {}

    async def ask(self, endpoint: Endpoint, prompt: str, parse: Callable[[str], T | str], *, system: str,
                  retry: str, salt: Mapping[str, Any] | None = None, purpose: str = "judge") -> Answer[T]:
        if not self.cache.enabled:  # nothing to share an answer through
            return await super().ask(endpoint, prompt, parse, system=system, retry=retry, salt=salt, purpose=purpose)
        params = {**endpoint.sampling(), "system": system, **(salt or {})}
        key = cache_key(purpose, endpoint.provider, endpoint.model, prompt, params, endpoint.base_url)
        while (leader := self._in_flight.get(key)) is not None:
            await asyncio.shield(leader)  # its answer is in the cache now (a failed call is not: ask again)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = done
        try:
            return await super().ask(endpoint, prompt, parse, system=system, retry=retry, salt=salt, purpose=purpose)
        finally:
            del self._in_flight[key]
            done.set_result(None)


def new_group_id() -> str:
    """`g-20261126183000-1a2b3c4d`: a run group's id, never mistaken for a run's."""
    return "g-" + new_run_id()


async def execute_group(plans: Sequence[RunPlan], observer: Observer | None = None) -> list[ExperimentReport]:
    """Run `plans` (one per variant) at once under the first plan's limits; every run is saved, even when
    another fails or the group is interrupted, and the first failure is raised after all have ended."""
    first = plans[0]
    judge = SharedJudge(first.cache(), first.judge_concurrency, first.prices, batch=judge_batches(first, plans))
    parts = Parts.for_plan(first, judge)
    parts.runs = len(plans)
    token = SHARED.set(parts)
    try:
        results = await asyncio.gather(*(execute(plan, _observer_for(observer, plan)) for plan in plans),
                                       return_exceptions=True)
    finally:
        SHARED.reset(token)
        await parts.aclose()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, ExperimentReport)]


def _observer_for(observer: Observer | None, plan: RunPlan) -> Observer | None:
    """The observer of one run of the group: its own when `observer` hands them out (`for_plan`), as the
    runs' progress interleaves; else `observer` itself."""
    split = getattr(observer, "for_plan", None)
    return split(plan) if split is not None else observer


def is_group_id(ref: str) -> bool:
    """Whether `ref` names a run group (`g-...`) rather than a run."""
    return ref.startswith("g-")


def run_group(plans: Sequence[RunPlan], observer: Observer | None = None) -> list[ExperimentReport]:
    """The plans of one run group at once on the library engine; Ctrl-C is a `RunInterrupted` naming the group
    (`cobalt run --resume GROUP` finishes its runs)."""
    try:
        return run_anywhere(execute_group(plans, observer))
    except KeyboardInterrupt as exc:
        group = plans[0].group_id or plans[0].run_id
        # Ctrl-C may land once every run of the group is stored completed: say so, not that it waits for a
        # --resume that would be refused
        if all(_stored_status(plan) == "completed" for plan in plans):
            raise RunInterrupted(group, "completed") from exc
        if isinstance(exc, RunInterrupted):
            raise
        raise RunInterrupted(group) from exc


def _stored_status(plan: RunPlan) -> str | None:
    try:
        return plan.store.run_status(plan.run_id)
    except CobaltError:  # the store's trouble is said elsewhere; the group reads as interrupted
        return None
