"""GitHub Actions: the step summary, each run's HTML report beside it, and one `::error` annotation
per failed gate."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..ops._pr_comment import ci_report_dir, clear_stopped, record_stopped
from ..render._markdown import report_markdown
from ..results._report import ExperimentReport

if TYPE_CHECKING:
    from ..config._config import Config



def _escape_data(text: str) -> str:
    """Workflow-command escaping of a message: the runner decodes only %25, %0D and %0A there."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """Workflow-command escaping of a property such as `title`, where `:` and `,` are separators."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_outputs(reports: Sequence[ExperimentReport], config: Config | None = None) -> list[str]:
    """Under GitHub Actions: append a Markdown summary, write each run's HTML report (with `config`;
    the summary says where, for an upload-artifact step) and print one ::error per failed gate.

    Returns warnings (a step summary or report that cannot be written does not fail the run)."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return []
    warnings: list[str] = []
    if config is not None:
        clear_stopped(config)
    written = html_reports(reports, config, warnings) if config is not None else {}
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        try:
            with Path(summary_path).open("a", encoding="utf-8") as fh:
                for report in reports:
                    fh.write(report_markdown(report) + "\n")
                    if report.id in written:
                        fh.write(f"HTML report: `{written[report.id]}` (the run page, self-contained; upload it "
                                 "with actions/upload-artifact)\n\n")
                if any(report.group_id is not None for report in reports):  # the variants of a run group
                    from ..variants import group_markdowns

                    for grid in group_markdowns(reports):
                        fh.write(grid + "\n")
        except OSError as exc:
            warnings.append(f"could not append to GITHUB_STEP_SUMMARY ({summary_path}): {exc.strerror or exc}")
    for report in reports:
        if report.status != "completed":
            title = _escape_property(f"cobalt run {report.status}: {report.name}")
            print(f"::error title={title}::{_escape_data(f'run {report.id} is {report.status}; it has not passed.')}",
                  flush=True)
        for gate in report.assertions:
            if not gate.passed:
                title = _escape_property(f"cobalt gate failed: {report.name}")
                print(f"::error title={title}::{_escape_data(gate.name + ': ' + gate.message)}", flush=True)
    return warnings


def html_reports(reports: Sequence[ExperimentReport], config: Config, warnings: list[str]) -> dict[str, Path]:
    """Each run's page as one HTML file (`cobalt report`), under `$COBALT_REPORT_DIR` or the output
    directory's `reports/`: `{run id: path}`; a file that cannot be written is a warning."""
    from .._errors import CobaltError
    from ..pages import write_report

    directory = ci_report_dir(config)
    written = {}
    for report in reports:
        path = directory / f"{report.name}-{report.id}.html".replace("/", "_")
        try:
            written[report.id] = write_report(config, report.id, path)
        except (OSError, CobaltError) as exc:
            warnings.append(f"could not write the HTML report {path}: {getattr(exc, 'strerror', None) or exc}")
    return written


def github_stopped(sentences: Sequence[str], config: Config, tags: Sequence[str]) -> list[str]:
    """Under GitHub Actions, when `cobalt run --ci` ran nothing because experiment files did not load: one
    `::error` per file, a section of the step summary, and a note `cobalt ci comment --tag` puts on the pull
    request. Returns warnings (what could not be written)."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return []
    warnings: list[str] = []
    for sentence in sentences:
        print(f"::error title={_escape_property('cobalt: an experiment file did not load')}::{_escape_data(sentence)}",
              flush=True)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        files = "an experiment file" if len(sentences) == 1 else f"{len(sentences)} experiment files"
        section = [f"### cobalt: no experiment ran, {files} did not load", "", *(f"- {s}" for s in sentences), ""]
        try:
            with Path(summary_path).open("a", encoding="utf-8") as fh:
                fh.write("\n".join(section) + "\n")
        except OSError as exc:
            warnings.append(f"could not append to GITHUB_STEP_SUMMARY ({summary_path}): {exc.strerror or exc}")
    try:
        record_stopped(config, list(tags), list(sentences))
    except OSError as exc:
        warnings.append(f"could not leave the note for `cobalt ci comment` in {ci_report_dir(config)}: "
                        f"{exc.strerror or exc}")
    return warnings
