"""CI integration: GitHub Actions step summary and annotations, and webhooks after a run."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._markdown import report_markdown
from ._providers import retry_after_seconds
from ._report import ExperimentReport


def run_summary(report: ExperimentReport) -> dict[str, Any]:
    """The JSON a webhook receives and `cobalt run --json` prints: everything but the items."""
    return {
        "id": report.id, "name": report.name, "status": report.status, "passed": report.passed,
        "timestamp": report.timestamp, "tags": report.tags, "source": report.source,
        "summary": report.summary.model_dump(mode="json", exclude={"per_item"}),
        "assertions": [a.model_dump(mode="json") for a in report.assertions],
        "results_path": report.results_path,
    }


def _escape_data(text: str) -> str:
    """Workflow-command escaping of a message: the runner decodes only %25, %0D and %0A there."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """Workflow-command escaping of a property such as `title`, where `:` and `,` are separators."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_outputs(reports: Sequence[ExperimentReport]) -> list[str]:
    """Under GitHub Actions: append a Markdown summary and print one ::error per failed gate.

    Returns warnings (a step summary that cannot be written does not fail the run)."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return []
    warnings = []
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        try:
            with Path(summary_path).open("a", encoding="utf-8") as fh:
                for report in reports:
                    fh.write(report_markdown(report) + "\n")
        except OSError as exc:
            warnings.append(f"could not append to GITHUB_STEP_SUMMARY ({summary_path}): {exc.strerror or exc}")
    for report in reports:
        for gate in report.assertions:
            if not gate.passed:
                title = _escape_property(f"cobalt gate failed: {report.name}")
                print(f"::error title={title}::{_escape_data(gate.name + ': ' + gate.message)}", flush=True)
    return warnings


def post_webhooks(urls: Sequence[str], report: ExperimentReport, *, attempts: int = 3,
                  timeout: float = 10.0, budget: float = 30.0) -> list[str]:
    """POST the run summary to every URL at once, retrying 429, 5xx and network errors with backoff
    (honouring Retry-After) within `budget` seconds in all; returns a warning per URL that failed."""
    if not urls:
        return []
    import httpx

    payload = run_summary(report)
    deadline = time.monotonic() + budget

    async def post_all() -> list[str | None]:
        async with httpx.AsyncClient(timeout=timeout) as client:
            return list(await asyncio.gather(*(_post(client, url, payload, attempts, deadline) for url in urls)))

    return [warning for warning in asyncio.run(post_all()) if warning]


async def _post(client: Any, url: str, payload: dict[str, Any], attempts: int, deadline: float) -> str | None:
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
            wait = retry_after_seconds(response.headers) or wait
        except (httpx.HTTPError, TimeoutError) as exc:
            problem = type(exc).__name__
        if attempt == attempts or time.monotonic() + wait > deadline:
            return f"webhook {_redact(url)} failed after {attempt} attempt{'s' if attempt > 1 else ''}: {problem}"
        await asyncio.sleep(wait)
    return None


def _redact(url: str) -> str:
    """Webhook URLs often carry a token in their path or query: show only scheme and host."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}/…" if parsed.path not in ("", "/") or parsed.query else url
