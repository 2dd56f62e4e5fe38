"""Observers (the terminal reporter) of in-process Dagster runs, keyed by cobalt run id.

On the library path each item reaches `on_item` once, after its scores. On the Dagster path the
agent calls (the `outputs` asset) all finish before any scoring starts (the `scores` asset), so a
reporter told only at scoring time would sit silent while the agent runs. `StageObserver` keeps
"each item reaches `on_item` once" and still reports during the outputs stage:

- an observer with an optional `on_output(item)` hook gets every output as it arrives, and every
  item again through `on_item` once scored, as on the library path;
- any other observer gets a failed agent call (error, timeout) through `on_item` the moment it
  happens (it will never be scored, so this is its only report) and the ok items once scored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from cobalt_lib.run import Observer

if TYPE_CHECKING:
    from cobalt_lib import ExperimentReport, ItemResult
    from cobalt_lib.run import RunPlan

OBSERVERS: dict[str, Observer] = {}


class StageObserver:
    """What one stage asset (`outputs` or `scores`) passes to `stream()` for the run's observer."""

    def __init__(self, observer: Observer, stage: Literal["outputs", "scores"]) -> None:
        self.observer = observer
        self.stage = stage
        self.on_output = getattr(observer, "on_output", None)

    def on_start(self, plan: RunPlan) -> None:
        """The `dataset` asset starts the run; a stage does not."""

    def on_item(self, item: ItemResult) -> None:
        if self.stage == "outputs":
            if self.on_output is not None:
                self.on_output(item)
            elif item.status != "ok":
                self.observer.on_item(item)
        elif self.on_output is not None or item.status == "ok":
            self.observer.on_item(item)

    def on_finish(self, report: ExperimentReport) -> None:
        """The `aggregates` asset finishes the run; a stage does not."""


def stage_observer(run_id: str, stage: Literal["outputs", "scores"]) -> StageObserver | None:
    observer = OBSERVERS.get(run_id)
    return StageObserver(observer, stage) if observer is not None else None
