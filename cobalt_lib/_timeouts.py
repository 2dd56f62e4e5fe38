"""Timeouts for calls into user code, including calls that swallow their cancellation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._numbers import seconds


class BlockedLoopTimeout(Exception):
    """An async agent answered, but after its timeout: it blocked the event loop meanwhile."""

    def __init__(self, elapsed: float) -> None:
        super().__init__(elapsed)
        self.elapsed = elapsed


class FinishedWhileCancelled(asyncio.CancelledError):
    """The call under `within` had returned `value` when the caller was cancelled (Ctrl-C): still a
    cancellation, but one that carries what was already paid for, so the caller can keep it.
    `item` is for whoever builds a record from `value` on the way out."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value
        self.item: Any = None


def timeout_message(who: str, timeout: float, exc: TimeoutError) -> str:
    """`the agent did not answer within 30s`, plus what `within` adds about a call left behind."""
    return f"the {who} did not answer within {seconds(timeout)}{exc.args[0] if exc.args else ''}"


#: How long a timed-out async call gets to unwind after its cancellation before it is left behind.
CANCEL_GRACE_SECONDS = 1.0


async def within(start: Callable[[], Awaitable[Any]], timeout: float, *, limit: asyncio.Semaphore | None = None,
                 clock: list[float] | None = None, timer: Callable[[], float] = time.perf_counter) -> Any:
    """The result of the awaitable `start()` makes, or TimeoutError after `timeout` s. Unlike
    `asyncio.wait_for`, a call that swallows its cancellation (a bare `except:` around an await)
    cannot hold the item, and the run, forever: after CANCEL_GRACE_SECONDS it is left behind, like
    a hung sync call's thread.

    The call runs in a task of its own. With `limit`, that task takes a slot of it first (the
    timeout counts from then, read off `timer` into `clock[0]`) and gives it back the moment the call
    ends or is left behind: no slot sits idle while the task starts, or while the caller's task waits its
    turn to resume. At 100 agent calls in flight those two hops left about 7% of the slots idle
    (benchmarks/RESULTS.md).
    """
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()
    timers: list[asyncio.TimerHandle] = []
    held = [False]

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    def release() -> None:
        if held[0] and limit is not None:
            held[0] = False
            limit.release()

    async def call() -> Any:
        if limit is not None:
            await limit.acquire()
            held[0] = True
        if clock is not None:
            clock[0] = timer()
        timers.append(loop.call_later(timeout, wake))
        return await start()

    task = loop.create_task(call())
    task.add_done_callback(wake)
    # Released from a done-callback, after `wake`: the caller's task is scheduled to resume before the
    # next holder of the slot, so what the caller records of this call (the agent's output) is
    # stored before another call can start, which an interrupt at that moment relies on.
    task.add_done_callback(lambda _: release())
    try:
        await woken
    except asyncio.CancelledError:  # the run is being stopped (Ctrl-C): stop the call too
        if task.done() and not task.cancelled() and task.exception() is None:
            raise FinishedWhileCancelled(task.result()) from None  # it had answered: keep the answer
        await cancel_within(task, CANCEL_GRACE_SECONDS)
        release()
        raise
    finally:
        for handle in timers:
            handle.cancel()
        task.remove_done_callback(wake)
    if task.done():
        return task.result()
    left = not await cancel_within(task, min(timeout, CANCEL_GRACE_SECONDS))
    release()  # a call left behind keeps running, without its slot
    if left:
        raise TimeoutError("; it ignored the cancellation and was left running")
    raise TimeoutError()


async def cancel_within(task: asyncio.Task[Any], grace: float) -> bool:
    """Cancel `task` and wait up to `grace` s for it to end; one that does not is left behind."""
    task.cancel()
    await asyncio.wait({task}, timeout=grace)
    if not task.done():
        leave_behind(task)
        return False
    if not task.cancelled():
        task.exception()  # retrieved: an error raised while unwinding is not logged as "never retrieved"
    return True


def leave_behind(task: asyncio.Task[Any]) -> None:
    """Stop tracking a task that will not finish, so that closing the event loop does not wait for it
    forever (asyncio.run cancels and awaits every task it knows). It stays referenced until exit."""
    _LEFT_BEHIND.append(task)
    task._log_destroy_pending = False  # type: ignore[attr-defined]  # it is pending on purpose
    unregister = getattr(asyncio.tasks, "_unregister_task", None)
    if unregister is not None:
        unregister(task)


_LEFT_BEHIND: list[asyncio.Task[Any]] = []
