"""A run's summary without its items: what `cobalt run --json` prints and webhooks receive."""

from __future__ import annotations

from typing import Any

from ._report import ExperimentReport


def run_summary(report: ExperimentReport) -> dict[str, Any]:
    """The JSON a webhook receives and `cobalt run --json` prints: everything but the items."""
    return {
        "id": report.id, "name": report.name, "status": report.status, "passed": report.passed,
        "timestamp": report.timestamp, "tags": report.tags, "source": report.source,
        "summary": report.summary.model_dump(mode="json", exclude={"per_item"}),
        "assertions": [a.model_dump(mode="json") for a in report.assertions],
        "results_path": report.results_path,
        **({"variant": report.variant, "group_id": report.group_id} if report.variant is not None else {}),
    }
