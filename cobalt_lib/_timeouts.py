"""Timeouts for calls into user code, including calls that swallow their cancellation."""

from __future__ import annotations

import asyncio
from typing import Any


class BlockedLoopTimeout(Exception):
    """An async agent answered, but after its timeout: it blocked the event loop meanwhile."""

    def __init__(self, elapsed: float) -> None:
        super().__init__(elapsed)
        self.elapsed = elapsed


def timeout_message(who: str, timeout: float, exc: TimeoutError) -> str:
    """`the agent did not answer within 30 s`, plus what `within` adds about a call left behind."""
    return f"the {who} did not answer within {timeout:g} s{exc.args[0] if exc.args else ''}"


#: How long a timed-out async call gets to unwind after its cancellation before it is left behind.
CANCEL_GRACE_SECONDS = 1.0


async def within(awaitable: Any, timeout: float) -> Any:
    """`awaitable`'s result, or TimeoutError after `timeout` s. Unlike `asyncio.wait_for`, a call that
    swallows its cancellation (a bare `except:` around an await) cannot hold the item, and the run,
    forever: after CANCEL_GRACE_SECONDS it is left behind, like a hung sync call's thread."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)
    # What asyncio.wait({task}, timeout) does, without its sets and per-call closures: this runs
    # once per agent and evaluator call.
    woken = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    timer = loop.call_later(timeout, wake)
    task.add_done_callback(wake)
    try:
        await woken
    except asyncio.CancelledError:  # the run is being stopped (Ctrl-C): stop the call too
        await _cancel(task, CANCEL_GRACE_SECONDS)
        raise
    finally:
        timer.cancel()
        task.remove_done_callback(wake)
    if task.done():
        return task.result()
    if not await _cancel(task, min(timeout, CANCEL_GRACE_SECONDS)):
        raise TimeoutError("; it ignored the cancellation and was left running")
    raise TimeoutError()


async def _cancel(task: asyncio.Task[Any], grace: float) -> bool:
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
