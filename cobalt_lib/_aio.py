"""Running a coroutine to completion from synchronous code."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """A coroutine function, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, with the value handed back outside the main task.

    Python 3.11's `asyncio.run` formats the main task's repr, result included, when it restores
    the SIGINT handler; for a report of 1000 items that repr alone costs 0.1 s of CPU.
    """
    box: list[T] = []

    async def main() -> None:
        box.append(await coro)

    asyncio.run(main())
    return box[0]
