"""The part of a terminal reporter that shows run groups too: every event of a plain run passed to the plain
reporter. Imports nothing at run time, so `cobalt run` loads `rich` only when it reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..results._report import ExperimentReport, ItemResult
    from ..run._plan import RunPlan
    from ._terminal import TerminalReporter


class ForwardingReporter:
    """An observer that passes every event of a plain run to its `TerminalReporter` (`plain`); the reporters
    that also show run groups (`cli._run`'s, the variants wing's) add `for_plan` on top."""

    plain: TerminalReporter

    def on_start(self, plan: RunPlan) -> None:
        self.plain.on_start(plan)

    def on_item(self, item: ItemResult) -> None:
        self.plain.on_item(item)

    def on_finish(self, report: ExperimentReport) -> None:
        self.plain.on_finish(report)

    def on_judge_calls(self, in_flight: int, answered: int) -> None:
        self.plain.on_judge_calls(in_flight, answered)
