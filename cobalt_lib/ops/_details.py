"""One stored run in full, sized for a reader with limited room (a model), and comparisons with reasons.

`run_details` is the results file's shape (summary, gates, items with outputs, scores and reasons)
with at most `limit` items, failures first, and what was left out counted with a pointer to where the
rest is. `compare_with_reasons` is `compare_runs` plus, for each item that moved, the
outputs and the evaluator's reasons in both runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..links import compare_page_url, dagster_run_url, run_page_url
from ..render._export import pass_marks
from ..results._compare import ItemChange
from ..results._direction import lower_is_better
from ..results._report import AssertionResult, ExperimentReport, ItemResult, Summary
from ..store._history import load_report, resolve_run
from ..traces._compact import compact_trace
from ._compare import CompareOutcome, compare_runs
from ._journal import waiting_note
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
    #: Items, failures first (errors, eval-errors, then by margin below the pass mark), then the rest by index.
    items: list[ItemResult] = Field(default_factory=list)
    items_total: int = 0
    failures_total: int = 0
    #: The dataset index of every failing item, as ranges (`0-3, 7`), whether or not its item is shown.
    failing_items: str = ""
    items_omitted: int = 0
    #: What to call for the items left out, when some were.
    more: str | None = None
    results_path: str | None = None
    #: The run's page under `cobalt serve`, and its Dagster run (runs that went through Dagster or were recorded).
    run_url: str
    dagster_url: str | None = None
    #: With `trace`: each shown item's spans (`traces.compact_trace`), by `INDEX:RUN_INDEX`.
    traces: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    #: Its finished items still in an ended process's journal, the store held (`Store` rows' `waiting`).
    waiting: dict[str, Any] | None = None


def run_details(config: Config, ref: str, *, experiment: str | None = None, only_failures: bool = False,
                limit: int = ITEM_LIMIT, item: int | None = None, trace: bool = False) -> RunDetails:
    """Run `ref` (an id, a prefix, `latest`, `previous` within `experiment`) with at most `limit` items.

    `only_failures`: the failed agent calls, eval-errors and scores below a pass mark alone, worst first;
    `item`: that dataset index alone (every repeat of it); `trace`: with the shown items' traces.
    """
    store = store_with_runs(config)
    report = load_report(store, resolve_run(store, ref, experiment))
    if item is not None and not any(i.index == item for i in report.items):
        indices = [i.index for i in report.items]
        held = f"indices {min(indices)}..{max(indices)}" if indices else "no items"
        raise ConfigError(f"Run {report.id} has no item {item} (it holds {held}); pass one of its indices as item.")
    details = report_details(config, report, only_failures=only_failures, limit=limit, item=item)
    details.waiting = (store.get_run(report.id) or {}).get("waiting") if report.status != "completed" else None
    note = waiting_note(details.waiting, f"cobalt_run(resume={report.id!r})")
    if note:
        details.warnings.append(note[0].upper() + note[1:] + ".")
    if trace:
        found = store.spans_of(report.id, [(i.index, i.run_index) for i in details.items])
        details.traces = {f"{i.index}:{i.run_index}": compact_trace(found.get((i.index, i.run_index), []))
                          for i in details.items}
    return details


def report_details(config: Config, report: ExperimentReport, *, only_failures: bool = False,
                   limit: int = ITEM_LIMIT, item: int | None = None) -> RunDetails:
    """`run_details` of a report already loaded: items worst first (`failure_order`), then the rest by index."""
    marks = pass_marks(report)
    failures = sorted((i for i in report.items if is_failure(i)), key=lambda i: failure_order(i, marks))
    failing = ranges(sorted({i.index for i in failures}))
    if item is not None:
        pool: list[ItemResult] = [i for i in report.items if i.index == item]
    elif only_failures:
        pool = failures
    else:  # by key, not identity: a run's own report reads its items back from disk, a new object each time
        failed = {(i.index, i.run_index) for i in failures}
        pool = [*failures, *(i for i in report.items if (i.index, i.run_index) not in failed)]
    chosen = pool[:limit]
    omitted = len(pool) - len(chosen)
    more = None
    if omitted:
        more = (f"{omitted} more {'failed ' if only_failures else ''}items are not shown; call cobalt_results with "
                f"run_id={report.id!r} and a higher limit (or only_failures=true, or item=N for one item), or "
                f"cobalt_query over the outputs and scores tables with run_id = '{report.id}'.")
    warnings = [] if report.status == "completed" else [
        f"run {report.id} is {report.status}: only its finished items are shown, and it has not passed."]
    return RunDetails(
        run_id=report.id, experiment=report.name, status=report.status, passed=report.passed,
        timestamp=report.timestamp, tags=report.tags, summary=report.summary.model_copy(update={"per_item": []}),
        assertions=report.assertions, items=chosen, items_total=len(report.items), failures_total=len(failures),
        failing_items=failing, items_omitted=omitted, more=more, results_path=report.results_path,
        run_url=run_page_url(config, report.id),
        dagster_url=dagster_run_url(config, report.id) if report.source == "dagster" else None, warnings=warnings)


def failure_order(item: ItemResult, marks: dict[str, Any]) -> tuple[int, float, int, int]:
    """Failed or timed-out agent calls first, then eval-errors, then scores below a pass mark by how far
    below (the largest margin first), each in index order."""
    if item.status != "ok":
        return (0, 0.0, item.index, item.run_index)
    if any(ev.status != "ok" for ev in item.evaluations.values()):
        return (1, 0.0, item.index, item.run_index)
    margins = [_margin(name, ev.score, marks.get(name)) for name, ev in item.evaluations.items()
               if ev.passed is False and ev.score is not None]
    return (2, -max(margins, default=0.0), item.index, item.run_index)


def _margin(evaluator: str, score: float, mark: Any) -> float:
    """How far `score` lies on the failing side of its pass mark (0 when the mark is unknown)."""
    if not isinstance(mark, int | float):
        return 0.0
    return score - mark if lower_is_better(evaluator) else mark - score


def ranges(indices: list[int]) -> str:
    """Sorted indices as short ranges: `0-3, 7, 9-10`."""
    spans: list[list[int]] = []
    for i in indices:
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


class ChangedItem(ItemChange):
    """An item whose score moved between the runs, with both outputs and both reasons."""

    output_a: Any = None
    output_b: Any = None
    reason_a: str | None = None
    reason_b: str | None = None


class ComparedRuns(BaseModel):
    """`cobalt compare`'s comparison (A the baseline, every delta B - A) with the moved items' reasons."""

    outcome: CompareOutcome
    #: Paired item scores (item x evaluator) that moved the worse way and the better way, all of them counted.
    regressed_total: int = 0
    improved_total: int = 0
    #: The dataset index of every item with a regressed (improved) score, as ranges (`0-3, 7`).
    regressed_indices: str = ""
    improved_indices: str = ""
    #: The `top` most regressed and improved, with both outputs and both reasons.
    regressed_items: list[ChangedItem] = Field(default_factory=list)
    improved_items: list[ChangedItem] = Field(default_factory=list)
    compare_url: str


#: Enough to count every moved item (`compare_runs` keeps only the `top` it is asked for).
_EVERY = 10**9


def compare_with_reasons(config: Config, run_a: str, run_b: str, *, experiment: str | None = None,
                         top: int = 5) -> ComparedRuns:
    """`compare_runs`, every moved item counted and named, and for the `top` most regressed and improved the
    outputs and reasons of both runs."""
    outcome = compare_runs(config, run_a, run_b, experiment=experiment, top=_EVERY)
    c = outcome.comparison
    regressed, improved = c.regressions, c.improvements
    c.regressions, c.improvements = regressed[:top], improved[:top]
    store = store_with_runs(config, "runs to compare")
    items = [{i.item_id: i for i in sorted(load_report(store, run_id).items, key=lambda i: -i.run_index)}
             for run_id in (c.run_a, c.run_b)]
    return ComparedRuns(outcome=outcome, regressed_total=len(regressed), improved_total=len(improved),
                        regressed_indices=ranges(sorted({ch.index for ch in regressed})),
                        improved_indices=ranges(sorted({ch.index for ch in improved})),
                        regressed_items=[_changed(ch, *items) for ch in c.regressions],
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
