"""`within`: a call in a task of its own, timed out, holding a slot of a limit only while it runs."""

from __future__ import annotations

import asyncio

import pytest

from cobalt_lib._timeouts import within


def test_the_timeout_counts_from_when_the_call_has_its_slot() -> None:
    async def main() -> list[str]:
        limit = asyncio.Semaphore(1)
        release_first = asyncio.Event()
        order: list[str] = []

        async def first() -> str:
            order.append("first started")
            await release_first.wait()
            return "first"

        async def second() -> str:
            order.append("second started")
            return "second"

        clock = [0.0]
        a = asyncio.ensure_future(within(first, 5.0, limit=limit))
        b = asyncio.ensure_future(within(second, 0.05, limit=limit, clock=clock))
        await asyncio.sleep(0.2)  # longer than b's timeout: b waits for the slot, and is not timed out for it
        assert order == ["first started"] and not b.done()
        release_first.set()
        assert await a == "first" and await b == "second"
        assert clock[0] > 0
        return order

    assert asyncio.run(main()) == ["first started", "second started"]


def test_the_slot_is_free_when_the_caller_resumes_and_after_a_timeout() -> None:
    async def main() -> None:
        limit = asyncio.Semaphore(1)

        async def quick() -> int:
            return 1

        assert await within(quick, 1.0, limit=limit) == 1
        assert not limit.locked()

        async def slow() -> None:
            await asyncio.sleep(10)

        with pytest.raises(TimeoutError):
            await within(slow, 0.01, limit=limit)
        assert not limit.locked()

        async def stubborn() -> None:  # swallows its cancellation once: left behind, without its slot
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                await asyncio.sleep(10)

        with pytest.raises(TimeoutError, match="ignored the cancellation"):
            await within(stubborn, 0.01, limit=limit)
        assert not limit.locked()

        async def failing() -> None:
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            await within(failing, 1.0, limit=limit)
        assert not limit.locked()

    asyncio.run(main())


async def _cancel_after_the_call_answered(outer: asyncio.Future[object]) -> None:
    """Cancel `outer` once its inner call has returned but before `outer` resumes: the moment a
    Ctrl-C can land on. asyncio runs ready callbacks in order, so three turns of the loop get there:
    the caller starts the call's task, the task returns, its done-callbacks wake the caller."""
    for _ in range(3):
        await asyncio.sleep(0)
    assert not outer.done()
    outer.cancel()


def test_a_call_that_answered_as_its_caller_was_cancelled_hands_over_its_answer() -> None:
    from cobalt_lib._timeouts import FinishedWhileCancelled

    async def main() -> object:
        limit = asyncio.Semaphore(1)

        async def answer() -> int:
            return 42

        outer = asyncio.ensure_future(within(answer, 5.0, limit=limit))
        await _cancel_after_the_call_answered(outer)
        with pytest.raises(FinishedWhileCancelled) as stopped:
            await outer
        assert outer.cancelled()  # still a cancellation: the run stops as asked
        assert not limit.locked()
        return stopped.value.value

    assert asyncio.run(main()) == 42


def test_an_agent_output_that_arrived_with_the_interrupt_travels_with_it() -> None:
    from cobalt_lib._timeouts import FinishedWhileCancelled
    from cobalt_lib.run._agent import AgentContext, call_agent

    async def main() -> object:
        async def agent(ctx: AgentContext) -> dict[str, object]:
            return {"output": f"answer to {ctx.input}", "metadata": {"tokens": 7}}

        ctx = AgentContext(item={"input": "q3"}, index=3)
        outer = asyncio.ensure_future(call_agent(agent, ctx, timeout=5.0, limit=asyncio.Semaphore(2),
                                                 threads=None, prices={}))
        await _cancel_after_the_call_answered(outer)
        with pytest.raises(FinishedWhileCancelled) as stopped:
            await outer
        return stopped.value.item

    item = asyncio.run(main())
    assert (item.index, item.status, item.output, item.tokens) == (3, "ok", "answer to q3", 7)
