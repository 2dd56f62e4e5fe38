"""One retry rule set for the judge's calls and the webhooks: the openai and anthropic SDKs' rules
(`_base_client.py`: `_should_retry`, `_calculate_retry_timeout`, `_parse_retry_after_header`), kept
within a time budget.

    Failure                 a failed attempt; `retryable`, `retry_after` (what the server asked)
    retryable_status()      x-should-retry true/false first; else 408, 409, 429 and 5xx
    retry_after_seconds()   retry-after-ms, retry-after seconds or date; 0 or past is None
    retrying()              the loop: backoff or Retry-After, at most `retries` more, within `budget`
    Timing                  the backoff and the clock, which tests replace to wait no real time
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import NoReturn, TypeVar

from .._numbers import seconds

T = TypeVar("T")

#: The SDKs' backoff: 0.5 s doubled per retry, at most 8 s, less up to 25% jitter.
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0


class Failure(Exception):
    """A failed attempt. `retryable` when another may succeed; `retry_after` the seconds the server
    asked to wait (None: the backoff applies); `out_of_time` when the attempt hit the budget's end."""

    retryable: bool = False
    retry_after: float | None = None
    out_of_time: bool = False


def sdk_backoff(retry: int) -> float:
    """The wait before retry number `retry` (0 for the first), as the SDKs compute it."""
    return min(INITIAL_RETRY_DELAY * 2.0 ** min(retry, 60), MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


@dataclass(frozen=True)
class Timing:
    """The backoff and the clock of the retries (tests pass their own: no real waiting)."""

    backoff: Callable[[int], float] = sdk_backoff
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


DEFAULT_TIMING = Timing()


def retryable_status(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an error status is worth another attempt: the server's `x-should-retry: true/false`
    decides when present; else 408 (request timeout), 409 (lock timeout), 429 and 5xx."""
    should = headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return status in (408, 409, 429) or status >= 500


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait an answer asks for (`retry-after-ms`, `retry-after` in seconds or as an HTTP date).
    None when it asks for none, for 0 or a time already past, or says something unreadable: the
    backoff applies then (an immediate retry would be a storm)."""
    if headers is None:
        return None
    wait = _header_seconds(headers)
    return wait if wait is not None and wait > 0 else None


def _header_seconds(headers: Mapping[str, str]) -> float | None:
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) else math.inf
    value = headers.get("retry-after")
    try:
        parsed = email.utils.parsedate_tz(value) if value else None
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def attempts(count: int) -> str:
    return f"{count} attempt{'' if count == 1 else 's'}"


async def retrying(call: Callable[[float], Awaitable[T]], *, retries: int, budget: float, budget_name: str,
                   timing: Timing = DEFAULT_TIMING) -> T:
    """`call(deadline)`, retried while it raises a retryable `Failure`: at most `retries` more times,
    after what the server's Retry-After asks or the backoff, all within `budget` seconds (calls
    included) ending at `deadline`, a `timing.monotonic()` value the call must keep to. The last
    failure is raised with why it was not retried added to its message."""
    deadline = timing.monotonic() + budget
    made = 0
    while True:
        made += 1
        try:
            return await call(deadline)
        except Failure as exc:
            if exc.out_of_time:
                _explain(exc, f"gave up after {attempts(made)}: the retry budget of {seconds(budget)} ({budget_name}) "
                              "ran out")
            if not exc.retryable:
                raise
            left = deadline - timing.monotonic()
            wait = exc.retry_after
            if wait is not None and wait > left:
                _explain(exc, f"not retried: the server asked to wait {seconds(wait)}, more than the "
                              f"{seconds(max(left, 0))} left of the retry budget ({budget_name})")
            if made > retries:
                _explain(exc, f"gave up after {attempts(made)}" if made > 1 else "not retried: no retries are allowed")
            wait = timing.backoff(made - 1) if wait is None else wait
            if wait >= left:
                _explain(exc, f"gave up after {attempts(made)}: the retry budget of {seconds(budget)} ({budget_name}) "
                              "ran out")
            await timing.sleep(wait)


def _explain(exc: Failure, why: str) -> NoReturn:
    exc.args = (f"{exc} ({why})",)
    raise exc from None
