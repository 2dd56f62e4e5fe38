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
