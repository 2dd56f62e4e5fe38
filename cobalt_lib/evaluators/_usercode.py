"""Calling a user's scoring function: async awaited, sync on the run's worker threads, timed out."""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from .._aio import is_async_callable
from .._threads import UserExit
from .._timeouts import timeout_message, within
from ..results._report import Evaluation
from ._context import EvalContext, Scoring


async def call_user(fn: Callable[..., Any], ctx: EvalContext, scoring: Scoring, **options: Any) -> Any:
    """What `fn(ctx, **options)` returned, or an `eval-error` Evaluation when it raised or outlived
    `scoring.timeout`. A sync `fn` runs on `scoring.threads`: a slow one must not stall the event
    loop, and with it every agent timeout and judge call of the run."""
    call: Awaitable[Any]
    try:
        if is_async_callable(fn):
            call = _exits_as_errors(fn(ctx, **options))
        elif scoring.threads is not None:
            call = scoring.threads.submit(lambda: fn(ctx, **options))
        else:
            call = asyncio.get_running_loop().run_in_executor(None, lambda: fn(ctx, **options))
        value = await (within(lambda: call, scoring.timeout) if scoring.timeout else call)
        if inspect.isawaitable(value):
            value = await value
    except TimeoutError as exc:
        if scoring.threads is not None and not is_async_callable(fn):
            scoring.threads.abandon()  # its thread is stuck: let another take its place
        return Evaluation(status="eval-error", error=timeout_message("evaluator", scoring.timeout or 0.0, exc))
    except Exception as exc:
        what = "SystemExit" if isinstance(exc, UserExit) else type(exc).__name__
        return Evaluation(status="eval-error", error=f"{what}: {exc}", raw_response=traceback.format_exc(limit=8))
    return value


async def _exits_as_errors(call: Awaitable[Any]) -> Any:
    """`await call`, a `sys.exit()` in it raised as UserExit: out of a task, it would stop the run's loop."""
    try:
        return await call
    except SystemExit as exc:
        raise UserExit(exc.code) from None
