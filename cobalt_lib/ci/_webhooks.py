"""Webhooks: the run summary POSTed to each configured URL, retried by the judge's rules (`llm/_retry`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .._aio import run_anywhere
from .._numbers import seconds
from .._secrets import safe_url
from ..llm._retry import DEFAULT_TIMING, Failure, Timing, retry_after_seconds, retryable_status, retrying
from ..results._report import ExperimentReport
from ..results._summary import run_summary


class WebhookFailure(Failure):
    """One failed POST of a webhook."""

    def __init__(self, problem: str, *, retryable: bool, retry_after: float | None = None,
                 out_of_time: bool = False) -> None:
        super().__init__(problem)
        self.retryable, self.retry_after, self.out_of_time = retryable, retry_after, out_of_time


def post_webhooks(urls: Sequence[str], report: ExperimentReport, *, attempts: int = 3,
                  timeout: float = 10.0, budget: float = 30.0, timing: Timing = DEFAULT_TIMING) -> list[str]:
    """`apost_webhooks` from synchronous code, inside a running event loop too (a notebook, an MCP
    server): there it runs on a fresh loop in a helper thread."""
    if not urls:
        return []
    return run_anywhere(apost_webhooks(urls, report, attempts=attempts, timeout=timeout, budget=budget,
                                       timing=timing))


async def apost_webhooks(urls: Sequence[str], report: ExperimentReport, *, attempts: int = 3,
                         timeout: float = 10.0, budget: float = 30.0, timing: Timing = DEFAULT_TIMING) -> list[str]:
    """POST the run summary to every URL at once, at most `attempts` times each, retried as the judge's
    calls are (408, 409, 429, 5xx and network errors; `x-should-retry`; `Retry-After`) within `budget`
    seconds in all; returns a warning per URL that failed, naming it without user info, path or query."""
    if not urls:
        return []
    import httpx

    payload = run_summary(report)
    async with httpx.AsyncClient(timeout=timeout) as client:
        warnings = await asyncio.gather(*(_post(client, url, payload, attempts=attempts, timeout=timeout,
                                                budget=budget, timing=timing) for url in urls))
    return [warning for warning in warnings if warning]


async def _post(client: Any, url: str, payload: dict[str, Any], *, attempts: int, timeout: float, budget: float,
                timing: Timing) -> str | None:
    import httpx

    async def attempt(deadline: float) -> None:
        left = deadline - timing.monotonic()
        try:
            async with asyncio.timeout(max(0.0, min(timeout, left))):
                response = await client.post(url, json=payload)
        except TimeoutError:
            raise WebhookFailure(f"no answer within {seconds(min(timeout, left))}", retryable=True,
                                 out_of_time=left <= timeout) from None
        except httpx.HTTPError as exc:
            raise WebhookFailure(type(exc).__name__, retryable=True) from None
        status = response.status_code
        if status >= 300:  # a redirect is not followed: the summary was not delivered
            retryable = status >= 400 and retryable_status(status, response.headers)
            raise WebhookFailure(f"HTTP {status}", retryable=retryable,
                                 retry_after=retry_after_seconds(response.headers))

    try:
        await retrying(attempt, retries=attempts - 1, budget=budget, budget_name="the webhooks' budget", timing=timing)
    except WebhookFailure as exc:
        return f"webhook {safe_url(url, path=False)} failed: {exc}"
    return None
