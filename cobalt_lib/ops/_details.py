"""One stored run in full, sized for a reader with limited room (a model), and comparisons with reasons.

`run_details` is the results file's shape (summary, gates, items with outputs, scores and reasons)
with at most `limit` items: failures are kept first, and what was left out is counted with a pointer
to where the rest is. `compare_with_reasons` is `compare_runs` plus, for each item that moved, the
outputs and the evaluator's reasons in both runs.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from pydantic import BaseModel, Field

from ..config._config import Config
from ..links import compare_page_url, dagster_run_url, run_page_url
from ..results._compare import ItemChange
from ..results._history import load_report, resolve_run
from ..results._report import AssertionResult, ExperimentReport, ItemResult, Summary
from ._compare import CompareOutcome, compare_runs
from ._refs import store_with_runs
from ._show import is_failure

#: Items a run's details hold by default; the rest is counted and pointed to.
ITEM_LIMIT = 200


class RunDetails(BaseModel):
    """One run as its results file holds it, with at most `limit` items (failures kept first)."""

    run_id: str
    experiment: str
    status: str
    passed: bool
    timestamp: str
    tags: list[str] = Field(default_factory=list)
    summary: Summary
    #: Every gate's verdict: name, passed, message, actual and expected values.
    assertions: list[AssertionResult] = Field(default_factory=list)
    #: Items (in index order unless `only_failures`, then worst first), each with output, status and evaluations.
    items: list[ItemResult] = Field(default_factory=list)
    items_total: int = 0
    failures_total: int = 0
    items_omitted: int = 0
    #: What to call for the items left out, when some were.
    more: str | None = None
    results_path: str | None = None
    #: The run's page under `cobalt serve`, and its Dagster run (runs that went through Dagster or were recorded).
    run_url: str
    dagster_url: str | None = None
    warnings: list[str] = Field(default_factory=list)


def run_details(config: Config, ref: str, *, experiment: str | None = None, only_failures: bool = False,
                limit: int = ITEM_LIMIT) -> RunDetails:
    """Run `ref` (an id, a prefix, `latest`, `previous` within `experiment`) with at most `limit` items.

    `only_failures`: the failed agent calls, eval-errors and scores below a pass mark alone, worst first.
    """
    store = store_with_runs(config)
    return report_details(config, load_report(store, resolve_run(store, ref, experiment)),
                          only_failures=only_failures, limit=limit)


def report_details(config: Config, report: ExperimentReport, *, only_failures: bool = False,
                   limit: int = ITEM_LIMIT) -> RunDetails:
    """`run_details` of a report already loaded."""
    failures = [i for i in report.items if is_failure(i)]
    if only_failures:
        chosen = sorted(failures, key=_badness)[:limit]
    else:  # the failures are what a reader needs most: keep them, then fill up in index order
        # By key, not by identity: a run's own report reads its items back from disk, a new object each time.
        keep = {(i.index, i.run_index) for i in sorted(failures, key=_badness)[:limit]}
        rest = ((i.index, i.run_index) for i in report.items if (i.index, i.run_index) not in keep)
        keep |= set(islice(rest, max(0, limit - len(keep))))
        chosen = [i for i in report.items if (i.index, i.run_index) in keep]
    pool = len(failures) if only_failures else len(report.items)
    omitted = pool - len(chosen)
    more = None
    if omitted:
        more = (f"{omitted} more {'failed ' if only_failures else ''}items are not shown; call cobalt_results with "
                f"run_id={report.id!r} and a higher limit (or only_failures=true), or cobalt_query over the "
                f"outputs and scores tables with run_id = '{report.id}'.")
    warnings = [] if report.status == "completed" else [
        f"run {report.id} is {report.status}: only its finished items are shown."]
    return RunDetails(
        run_id=report.id, experiment=report.name, status=report.status, passed=report.passed,
        timestamp=report.timestamp, tags=report.tags, summary=report.summary.model_copy(update={"per_item": []}),
        assertions=report.assertions, items=chosen, items_total=len(report.items), failures_total=len(failures),
        items_omitted=omitted, more=more, results_path=report.results_path, run_url=run_page_url(config, report.id),
        dagster_url=dagster_run_url(config, report.id) if report.source == "dagster" else None, warnings=warnings)


def _badness(item: ItemResult) -> tuple[int, float, int, int]:
    """Agent failures first, then eval-errors, then the lowest score below its pass mark."""
    if item.status != "ok":
        return (0, 0.0, item.index, item.run_index)
    if any(ev.status != "ok" for ev in item.evaluations.values()):
        return (1, 0.0, item.index, item.run_index)
    lowest = min((ev.score for ev in item.evaluations.values() if ev.score is not None), default=1.0)
    return (2, lowest, item.index, item.run_index)


class ChangedItem(ItemChange):
    """An item whose score moved between the runs, with both outputs and both reasons."""

    output_a: Any = None
    output_b: Any = None
    reason_a: str | None = None
    reason_b: str | None = None


class ComparedRuns(BaseModel):
    """`cobalt compare`'s comparison (A the baseline, every delta B - A) with the moved items' reasons."""

    outcome: CompareOutcome
    regressed_items: list[ChangedItem] = Field(default_factory=list)
    improved_items: list[ChangedItem] = Field(default_factory=list)
    compare_url: str


def compare_with_reasons(config: Config, run_a: str, run_b: str, *, experiment: str | None = None,
                         top: int = 5) -> ComparedRuns:
    """`compare_runs`, and for the most regressed and improved items the outputs and reasons of both runs."""
    outcome = compare_runs(config, run_a, run_b, experiment=experiment, top=top)
    c = outcome.comparison
    store = store_with_runs(config, "runs to compare")
    items = [{i.item_id: i for i in sorted(load_report(store, run_id).items, key=lambda i: -i.run_index)}
             for run_id in (c.run_a, c.run_b)]
    return ComparedRuns(outcome=outcome, regressed_items=[_changed(ch, *items) for ch in c.regressions],
                        improved_items=[_changed(ch, *items) for ch in c.improvements],
                        compare_url=compare_page_url(config, c.run_a, c.run_b))


def _changed(change: ItemChange, a: dict[str, ItemResult], b: dict[str, ItemResult]) -> ChangedItem:
    """The change with the outputs and reasons of the item's first repeat in each run (paired by identity)."""
    item_a, item_b = a.get(change.item_id), b.get(change.item_id)

    def reason(item: ItemResult | None) -> str | None:
        ev = item.evaluations.get(change.evaluator) if item else None
        return ev.reason if ev else None

    return ChangedItem(**change.model_dump(), output_a=item_a.output if item_a else None,
                       output_b=item_b.output if item_b else None, reason_a=reason(item_a), reason_b=reason(item_b))
