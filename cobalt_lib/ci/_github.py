"""GitHub Actions: the step summary and one `::error` annotation per failed gate."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..render._markdown import report_markdown
from ..results._report import ExperimentReport


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
