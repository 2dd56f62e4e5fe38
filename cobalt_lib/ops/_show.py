"""One stored run's items, for reading in the terminal (`cobalt show RUN [ITEM]`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..render._export import evaluator_names, pass_marks
from ..results._evaluation_identity import EvaluationIdentity
from ..results._repeats import by_index, flaky_text, repeat_passed
from ..results._report import ItemResult
from ..results._spans import SpanRecord
from ..store._history import load_report, resolve_run
from ._refs import store_with_runs


class ShownRun(BaseModel):
    """The items of one run that were asked for, as the results file holds them."""

    run_id: str
    experiment: str
    status: str
    passed: bool
    #: Every evaluator of the run, in declaration order, and its pass mark as the run recorded it.
    evaluators: list[str] = Field(default_factory=list)
    pass_marks: dict[str, Any] = Field(default_factory=dict)
    items: list[ItemResult] = Field(default_factory=list)
    #: Repeats per item (the run's `runs`); items are labelled `3:1` (index:run_index) when it is over 1.
    repeats: int = 1
    #: Items that passed in some repeats and failed in others: `{index: "2 of 3 passed"}`, over the whole run.
    flaky: dict[int, str] = Field(default_factory=dict)
    #: With `trace`: each shown item's spans, by `INDEX:RUN_INDEX`, in the order they ended.
    traces: dict[str, list[SpanRecord]] = Field(default_factory=dict)
    #: What the run measured with (None: stored before cobalt recorded evaluation identities).
    identity: EvaluationIdentity | None = None
    warnings: list[str] = Field(default_factory=list)


def is_failure(item: ItemResult) -> bool:
    """The agent call failed or timed out, an evaluation is an eval-error, or a score is below its pass mark."""
    return not repeat_passed(item)


def show_run(config: Config, ref: str, item: str | None = None, *, experiment: str | None = None,
             failures: bool = False, trace: bool = False) -> ShownRun:
    """Run `ref`'s items (`latest`/`previous` within `experiment`): all of them, or those `item` names
    (`3`: every run of item 3; `3:1`: its run index 1); `failures`: only the failed ones; `trace`: with the
    spans each agent call emitted (one item's: `item` is then required)."""
    if trace and item is None:
        raise ConfigError("--trace shows one item's trace: name the item, e.g. `cobalt show latest 3 --trace`.")
    store = store_with_runs(config)
    report = load_report(store, resolve_run(store, ref, experiment))
    items = list(report.items) if item is None else _select(report.id, report.items, item)
    warnings = [] if report.status == "completed" else [
        f"run {report.id} is {report.status}: only its finished items are shown."]
    groups = by_index(report.items)
    flaky = {index: text for index, repeats in groups.items() if (text := flaky_text(repeats))}
    repeats = max([int(report.config.get("runs") or 1), *(len(g) for g in groups.values())])
    shown = [i for i in items if is_failure(i)] if failures else items
    traces = {}
    if trace:
        found = store.spans_of(report.id, [(i.index, i.run_index) for i in shown])
        traces = {f"{i.index}:{i.run_index}": found.get((i.index, i.run_index), []) for i in shown}
    return ShownRun(run_id=report.id, experiment=report.name, status=report.status, passed=report.passed,
                    evaluators=evaluator_names(report), pass_marks=pass_marks(report), items=shown, repeats=repeats,
                    flaky=flaky, traces=traces, identity=report.identity, warnings=warnings)


def _select(run_id: str, items: Sequence[ItemResult], ref: str) -> list[ItemResult]:
    """The items `ref` (`N` or `N:RUN_INDEX`) names; an unknown one is an error naming the range."""
    index_text, _, run_text = ref.partition(":")
    try:
        index, run_index = int(index_text), int(run_text) if run_text else None
    except ValueError:
        raise ConfigError(f"Item {ref!r} is not an item index; give N or N:RUN_INDEX, e.g. 3 or 3:1.") from None
    chosen = [i for i in items if i.index == index]
    if not chosen:
        raise ConfigError(f"Run {run_id} has no item {index}; it has {_which(sorted({i.index for i in items}))}.")
    if run_index is None:
        return chosen
    repeat = [i for i in chosen if i.run_index == run_index]
    if not repeat:
        runs = sorted(i.run_index for i in chosen)
        where = f"run indexes {runs[0]} to {runs[-1]}" if len(runs) > 1 else f"only run index {runs[0]}"
        raise ConfigError(f"Item {index} of run {run_id} has no run index {run_index}; it has {where}.")
    return repeat


def _which(indexes: list[int]) -> str:
    """`items 0 to 9`, `only item 3`, `items 1, 5, 9` (a run of some items: --only-failed), `no items`."""
    if not indexes:
        return "no items"
    if len(indexes) == 1:
        return f"only item {indexes[0]}"
    if indexes == list(range(indexes[0], indexes[-1] + 1)):
        return f"items {indexes[0]} to {indexes[-1]}"
    shown = ", ".join(map(str, indexes[:10]))
    return f"items {shown}" + (f" and {len(indexes) - 10} more" if len(indexes) > 10 else "")
