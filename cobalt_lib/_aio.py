"""Running a coroutine to completion from synchronous code."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ._errors import ConfigError
from ._signals import forwarding_sigterm

T = TypeVar("T")


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """A coroutine function, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, with the value handed back outside the main task, and Ctrl-C always
    cancelling the whole coroutine at once before anyone else hears of it.

    Python 3.11's `asyncio.run` formats the main task's repr, result included, when it restores
    the SIGINT handler; for a report of 1000 items that repr alone costs 0.1 s of CPU.
    """
    with forwarding_sigterm():  # SIGTERM under `cobalt run` stops the coroutine as Ctrl-C does
        return _run(coro)


#: `COBALT_EVENT_LOOP=uvloop` runs cobalt's event loop on uvloop (`pip install cobalt-evals[speed]`):
#: about 7% less CPU per LLM call at 100-200 calls in flight (benchmarks/RESULTS.md).
EVENT_LOOP_VARIABLE = "COBALT_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop `run` uses: asyncio's (None), or uvloop's when COBALT_EVENT_LOOP asks for it."""
    choice = os.environ.get(EVENT_LOOP_VARIABLE, "").strip().lower()
    if choice in ("", "asyncio"):
        return None
    if choice != "uvloop":
        raise ConfigError(f"{EVENT_LOOP_VARIABLE}={choice!r} is not an event loop cobalt knows; use 'asyncio' or "
                          "'uvloop'.")
    try:
        import uvloop
    except ImportError:
        raise ConfigError(f"{EVENT_LOOP_VARIABLE}=uvloop, but uvloop is not installed; install it with "
                          "`pip install 'cobalt-evals[speed]'` or unset the variable.") from None
    return uvloop.new_event_loop


def _asyncio_run(main: Coroutine[Any, Any, None], factory: Callable[[], asyncio.AbstractEventLoop] | None) -> None:
    # asyncio.run, on the chosen loop: the same SIGINT handling (asyncio.Runner is what asyncio.run uses)
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        factory = loop_factory()
    except ConfigError:
        coro.close()  # never started: no "never awaited" warning on top of the error
        raise
    box: list[T] = []

    async def main() -> None:
        box.append(await coro)

    handler = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not callable(handler) or handler is signal.default_int_handler:
        # asyncio's own SIGINT handler cancels the main task, then raises KeyboardInterrupt
        _asyncio_run(main(), factory)
        return box[0]
    # A foreign handler (Dagster's, inside a step) raises wherever the main thread happens to be, which
    # can be inside one item's task: that task dies, frees its slot, and the next queued agent call
    # starts after the user pressed Ctrl-C. asyncio's handler cancels every task at once instead; the
    # foreign one hears of the interrupt afterwards, and raises its own error.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _asyncio_run(main(), factory)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, handler)
        handler(signal.SIGINT, None)
        raise
    finally:
        signal.signal(signal.SIGINT, handler)
    return box[0]


def loop_running() -> bool:
    """Whether this thread is inside a running event loop (a notebook cell, an MCP server's handler)."""
    # Answered outside any `except` block of the caller, so an error raised after this check is not
    # chained to its "no running event loop" RuntimeError in the user's traceback.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_anywhere(coro: Coroutine[Any, Any, T]) -> T:
    """`run(coro)` from synchronous code, also when called inside a running event loop (where
    `asyncio.run` refuses): then on a fresh loop in a helper thread, this thread waiting for it."""
    if not loop_running():
        return run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cobalt-run") as pool:
        return pool.submit(run, coro).result()
