"""Exporting one stored run: CSV, Markdown, JSON, JUnit XML or a no_regression baseline."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..render._export import RENDERERS, format_for, to_junit
from ..store._history import load_report, resolve_run
from ._refs import store_with_runs


class Export(BaseModel):
    """One run rendered in one format."""

    run_id: str
    format: str
    text: str
    warnings: list[str] = Field(default_factory=list)


def export_run(config: Config, ref: str, *, format: str | None = None, output: Path | None = None,
               experiment: str | None = None, junit_items_fail: bool = False) -> Export:
    """Render run `ref` (`latest`/`previous` within `experiment`) as `format`, by default the one
    implied by the extension of `output`, the file the caller will write it to.

    `junit_items_fail`: JUnit fails every item case below its pass mark or errored (by default JUnit
    fails only what failed the run). A baseline is refused from an unfinished run or one without
    scores (an empty one would gate nothing).
    """
    chosen = export_format(format, output)
    if junit_items_fail and chosen != "junit":
        raise ConfigError(f"--junit-items-fail applies to the junit format only, not to {chosen}.")
    store = store_with_runs(config)
    report = load_report(store, resolve_run(store, ref, experiment))
    if chosen == "baseline" and (report.status != "completed" or not report.baseline()):
        why = f"is {report.status}" if report.status != "completed" else "has no evaluator scores"
        raise ConfigError(f"Run {report.id} {why}; a baseline must come from a completed run with scores "
                          "(an empty one would gate nothing).")
    warnings = [] if report.status == "completed" else [
        f"run {report.id} is {report.status}: the export holds only its finished items."]
    text = to_junit(report, items_fail=True) if junit_items_fail else RENDERERS[chosen](report)
    return Export(run_id=report.id, format=chosen, text=text, warnings=warnings)


def export_format(given: str | None, output: Path | None) -> str:
    """`given`, else what the output file's extension implies (`results.xml` is JUnit)."""
    if given is None and output is not None:
        given = format_for(output)
        if given is None:
            raise ConfigError(f"Got no --format and cannot tell one from {output.name!r}; pass --format "
                              f"{'|'.join(RENDERERS)} or name the file *.csv, *.md, *.json or *.xml.")
    if given is None or given not in RENDERERS:
        got = "no --format" if given is None else f"--format {given!r}"
        raise ConfigError(f"Got {got}; choose one of {', '.join(RENDERERS)}.")
    return given
