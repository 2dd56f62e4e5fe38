"""The pull request comment's content: each of a CI job's runs with its gates, and compared with its baseline
(the newest run of the base branch that completed and passed its gates)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..render._pr_comment import MAX_ITEMS, CommentSection, comment_markdown, stopped_markdown
from ..results._compare import Comparison
from ..results._report import ExperimentReport
from ..results._rows import item_from_rows
from ..store._history import streamed_report
from ..store._store import Store
from ._baselines import baseline_run, check_tag, named_runs, tagged_runs
from ._compare import compare_stored, regression_reasons
from ._refs import store_with_runs

#: Where the HTML reports and the CI notes go under GitHub Actions (default: `reports/` under the output directory).
REPORT_DIR_VARIABLE = "COBALT_REPORT_DIR"
#: What `cobalt run --ci` leaves there when it stopped before any run (files that did not load), for the comment.
STOPPED_FILE = "cobalt-stopped.json"
#: The hidden first line that finds the comment again; a key tells several workflows' comments apart.
MARKER = "<!-- cobalt:pr-comment{key} -->"


class CommentOutcome(BaseModel):
    """The comment's body, and per experiment why it regressed against its baseline (empty: it did not)."""

    body: str
    marker: str
    runs: list[str]
    #: `{experiment: [reasons]}` for the experiments that regressed (`regression_reasons`).
    regressions: dict[str, list[str]] = Field(default_factory=dict)
    #: Experiments whose run failed a gate (or did not complete).
    failed: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def ci_report_dir(config: Config) -> Path:
    return Path(os.environ.get(REPORT_DIR_VARIABLE) or config.output_path / "reports")


def record_stopped(config: Config, tags: list[str], sentences: list[str]) -> Path:
    """Note why `cobalt run --ci` ran nothing, under the tags its runs would have carried, so that
    `cobalt ci comment --tag TAG` says it on the pull request (there is no run to comment on)."""
    path = ci_report_dir(config) / STOPPED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"tags": tags, "problems": sentences}), encoding="utf-8")
    return path


def clear_stopped(config: Config) -> None:
    """After runs that did run: a note left by an earlier stopped run (a restored cache) no longer holds."""
    (ci_report_dir(config) / STOPPED_FILE).unlink(missing_ok=True)


def read_stopped(config: Config, tag: str) -> list[str] | None:
    """The sentences of a stopped `cobalt run --ci` whose runs would have carried `tag`; None: none stopped."""
    try:
        note = json.loads((ci_report_dir(config) / STOPPED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict) or tag not in note.get("tags", []):
        return None
    return [str(p) for p in note.get("problems", [])]


def marker_for(key: str | None) -> str:
    """`<!-- cobalt:pr-comment -->`, or with `key`: `<!-- cobalt:pr-comment:KEY -->`."""
    if key is not None and (not key.strip() or "--" in key or ">" in key):
        raise ConfigError(f"--comment-key {key!r} must be a plain word (no `--` or `>`), e.g. `nightly`.")
    return MARKER.format(key=f":{key.strip()}" if key else "")


def pr_comment(config: Config, *, baseline_tag: str, tag: str | None = None, runs: list[str] | None = None,
               report_url: str | None = None, commit: str | None = None, baseline_branch: str | None = None,
               accept_identity_change: bool = False, comment_key: str | None = None) -> CommentOutcome:
    """The comment for the runs `tag` marks (the newest of each experiment) or `runs` names, each compared with
    the newest passing run of its experiment tagged `baseline_tag`."""
    if (tag is None) == (not runs):
        raise ConfigError("Say which runs to comment on: --tag TAG (the newest run of each experiment with it) "
                          "or --run RUN, not both and not neither.")
    marker = marker_for(comment_key)
    stopped = read_stopped(config, tag) if tag is not None else None
    if stopped is not None:
        return CommentOutcome(body=stopped_markdown(stopped, marker=marker, report_url=report_url, commit=commit),
                              marker=marker, runs=[], failed=[])
    store = store_with_runs(config, "runs to comment on")
    chosen = tagged_runs(store, check_tag(tag, "--tag")) if tag is not None else named_runs(store, runs or [])
    if not chosen:
        raise ConfigError(f"No stored run carries the tag {tag!r}; run the experiments with "
                          f"`cobalt run --add-tag {tag}` first.")
    check_tag(baseline_tag, "--baseline-tag")
    exclude = {str(r["run_id"]) for r in chosen}
    sections, outcome = [], CommentOutcome(body="", marker=marker, runs=sorted(exclude))
    for run in chosen:
        report = streamed_report(store, str(run["run_id"]), run=run)
        base = baseline_run(store, report.name, baseline_tag, exclude=exclude)
        section = _section(store, report, base, baseline_tag, accept_identity_change)
        sections.append(section)
        if section.regressions:
            outcome.regressions[report.name] = section.regressions
        if not report.passed:
            outcome.failed.append(report.name)
        if report.status != "completed":
            outcome.warnings.append(f"run {report.id} of {report.name!r} is {report.status}: the comment shows "
                                    "its finished items only.")
    outcome.body = comment_markdown(sections, marker=marker, report_url=report_url, commit=commit,
                                    baseline_branch=baseline_branch)
    return outcome


def _section(store: Store, report: ExperimentReport, base: dict[str, Any] | None, baseline_tag: str,
             accept_identity_change: bool) -> CommentSection:
    if base is None:
        note = (f"no baseline: no run tagged `{baseline_tag}` has completed and passed its gates yet (the base "
                "branch's next passing run becomes it)")
        return CommentSection(report=report, comparison=None, baseline_note=note)
    baseline = streamed_report(store, str(base["run_id"]), run=base)
    comparison = compare_stored(baseline, report, top=MAX_ITEMS, store=store)
    accept = "--accept-identity-change compares them anyway"
    reasons = regression_reasons(comparison, accept_identity_change=accept_identity_change, accept=accept)
    note = f"baseline run `{baseline.id}` (tagged `{baseline_tag}`, passed its gates)"
    return CommentSection(report=report, comparison=comparison, baseline_note=note, regressions=reasons,
                          reasons=_reasons(store, report.id, comparison))


def _reasons(store: Store, run_id: str, comparison: Comparison) -> dict[tuple[int, str], str]:
    """The first stated reason per evaluator (its first repeat that has one) of each item the comment
    shows (its largest drops), read from the store item by item: never the whole run."""
    found: dict[tuple[int, str], str] = {}
    shown = dict.fromkeys(r.index for r in comparison.regressions[:MAX_ITEMS])
    for item in (item_from_rows(row, row["scores"]) for index in shown for row in store.item_records(run_id, index)):
        for name, ev in item.evaluations.items():
            text = ev.reason or ev.error
            if text and (item.index, name) not in found:
                found[(item.index, name)] = text
    return found
