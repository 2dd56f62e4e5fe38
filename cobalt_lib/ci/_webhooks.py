"""Webhooks: the run summary POSTed to each configured URL, with retries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .._aio import run_anywhere
from ..llm._providers import retry_after_seconds
from ..results._report import ExperimentReport
from ..results._summary import run_summary

Sleep = Callable[[float], Awaitable[Any]]


def post_webhooks(urls: Sequence[str], report: ExperimentReport, *, attempts: int = 3,
                  timeout: float = 10.0, budget: float = 30.0, sleep: Sleep = asyncio.sleep) -> list[str]:
    """`apost_webhooks` from synchronous code, inside a running event loop too (a notebook, an MCP
    server): there it runs on a fresh loop in a helper thread."""
    if not urls:
        return []
    return run_anywhere(apost_webhooks(urls, report, attempts=attempts, timeout=timeout, budget=budget, sleep=sleep))


async def apost_webhooks(urls: Sequence[str], report: ExperimentReport, *, attempts: int = 3,
                         timeout: float = 10.0, budget: float = 30.0, sleep: Sleep = asyncio.sleep) -> list[str]:
    """POST the run summary to every URL at once, retrying 429, 5xx and network errors with backoff
    (0.4 s, then 0.8 s; Retry-After honoured, 0 included) within `budget` seconds in all; returns a warning
    per URL that failed. `sleep` waits between attempts (tests pass one that records the waits)."""
    if not urls:
        return []
    import httpx

    payload = run_summary(report)
    deadline = time.monotonic() + budget
    async with httpx.AsyncClient(timeout=timeout) as client:
        warnings = await asyncio.gather(*(_post(client, url, payload, attempts, deadline, sleep) for url in urls))
    return [warning for warning in warnings if warning]


async def _post(client: Any, url: str, payload: dict[str, Any], attempts: int, deadline: float,
                sleep: Sleep) -> str | None:
    import httpx

    problem = ""
    for attempt in range(1, attempts + 1):
        wait = 0.2 * 2**attempt
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                response = await client.post(url, json=payload)
            if response.status_code < 400:
                return None
            problem = f"HTTP {response.status_code}"
            if response.status_code < 500 and response.status_code != 429:
                return f"webhook {_redact(url)} failed: {problem}"
            asked = retry_after_seconds(response.headers)
            wait = wait if asked is None else asked
        except (httpx.HTTPError, TimeoutError) as exc:
            problem = type(exc).__name__
        if attempt == attempts or time.monotonic() + wait > deadline:
            return f"webhook {_redact(url)} failed after {attempt} attempt{'s' if attempt > 1 else ''}: {problem}"
        await sleep(wait)
    return None


def _redact(url: str) -> str:
    """Webhook URLs often carry a token in their path or query: show only scheme and host."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}/…" if parsed.path not in ("", "/") or parsed.query else url
