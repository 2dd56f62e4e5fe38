"""CI integration: GitHub Actions step summary and annotations, and webhooks after a run."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._markdown import report_markdown
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


def _escape(text: str) -> str:
    """GitHub workflow-command escaping for annotation properties and messages."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def github_outputs(reports: Sequence[ExperimentReport]) -> None:
    """Under GitHub Actions: append a Markdown summary and print one ::error per failed gate."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with Path(summary_path).open("a", encoding="utf-8") as fh:
            for report in reports:
                fh.write(report_markdown(report) + "\n")
    for report in reports:
        for gate in report.assertions:
            if not gate.passed:
                title = _escape(f"cobalt gate failed: {report.name}")
                print(f"::error title={title}::{_escape(gate.name + ': ' + gate.message)}", flush=True)


def post_webhooks(urls: Sequence[str], report: ExperimentReport, *, attempts: int = 3,
                  timeout: float = 10.0) -> list[str]:
    """POST the run summary to each URL (bounded retries); returns warnings for those that failed."""
    if not urls:
        return []
    import httpx

    payload = run_summary(report)
    warnings = []
    with httpx.Client(timeout=timeout) as client:
        for url in urls:
            problem = ""
            for attempt in range(attempts):
                try:
                    response = client.post(url, json=payload)
                    if response.status_code < 400:
                        problem = ""
                        break
                    problem = f"HTTP {response.status_code}"
                    if response.status_code < 500 and response.status_code != 429:
                        break
                except httpx.HTTPError as exc:
                    problem = type(exc).__name__
                if attempt + 1 < attempts:
                    time.sleep(0.2 * 2**attempt)
            if problem:
                warnings.append(f"webhook {_redact(url)} failed after retries: {problem}")
    return warnings


def _redact(url: str) -> str:
    """Webhook URLs often carry a token in their path or query: show only scheme and host."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}/…" if parsed.path not in ("", "/") or parsed.query else url
