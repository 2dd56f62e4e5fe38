"""The live reporter for a run group: every variant's items as they finish (named by variant), then each
variant's summary and the grid. Runs of experiments without variants go to the plain reporter."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from rich.text import Text

from ..render._forwarding import ForwardingReporter
from ..render._terminal import LINE_LIMIT, TerminalReporter
from ..results._report import ExperimentReport, ItemResult
from ..store._history import load_report
from ..store._store import Store
from ._figures import build_grid
from ._render import grid_console, grid_notes, grid_table

if TYPE_CHECKING:
    from ..config._config import Config
    from ..run._plan import RunPlan
    from ..run._session import Observer


class _VariantLines(TerminalReporter):
    """One variant's part of the group's output: no header box nor progress bar (the group shares the
    terminal), each item line led by the variant's name; past LINE_LIMIT calls, only the items with a problem."""

    def __init__(self, variant: str, file: IO[str] | None, *, ci: bool, width: int | None) -> None:
        super().__init__(file, ci=ci, width=width)
        self.live = False
        self.variant = variant

    def on_start(self, plan: RunPlan) -> None:
        self._thresholds = {e.name: e.threshold for e in plan.evaluators}
        self._total = plan.total_items * plan.runs
        self._repeats = plan.runs

    def on_item(self, item: ItemResult) -> None:
        if self._total > LINE_LIMIT and item.status == "ok" and not self._low(item):
            return
        super().on_item(item)

    def item_line(self, item: ItemResult) -> Text:
        return Text(f"{self.variant} ", style="cyan") + super().item_line(item)


class GroupReporter(ForwardingReporter):
    """An Observer for `cobalt run`: the plain `TerminalReporter` for a run without variants; for a run
    group (`for_plan` gives each variant's run its own observer), one header, item lines named by
    variant, and, once every variant has finished, each variant's summary and the grid."""

    def __init__(self, file: IO[str] | None = None, *, ci: bool = False, width: int | None = None,
                 plain: TerminalReporter | None = None) -> None:
        self.plain = plain or TerminalReporter(file, ci=ci, width=width)
        self.file, self.ci, self.width = file, ci, width
        self._started: dict[str, list[_VariantLines]] = {}  # group id -> its variants' reporters
        self._finished: dict[str, list[ExperimentReport]] = {}
        self._configs: dict[str, Config] = {}

    def for_plan(self, plan: RunPlan) -> Observer:
        """The observer of one variant's run in a group."""
        if plan.group_id is None or plan.variant is None:
            return self
        started = self._started.setdefault(plan.group_id, [])
        self._configs[plan.group_id] = plan.config
        if not started:
            self.plain.console.print(f"cobalt {plan.experiment.name}: variants side by side (group {plan.group_id}), "
                                     f"{plan.total_items} items x {plan.runs} runs each, concurrency "
                                     f"{plan.concurrency} shared")
        lines = _VariantLines(plan.variant.name, self.file, ci=self.ci, width=self.width)
        started.append(lines)
        return _Member(self, lines)

    def finished(self, report: ExperimentReport, lines: _VariantLines) -> None:
        assert report.group_id is not None
        done = self._finished.setdefault(report.group_id, [])
        done.append(report)
        if len(done) == len(self._started.get(report.group_id, [])):
            self.print_group(report.group_id, done)

    def print_group(self, group_id: str, reports: list[ExperimentReport]) -> None:
        console = self.plain.console
        by_name = {lines.variant: lines for lines in self._started.get(group_id, [])}
        ordered = sorted(reports, key=_position)
        for report in ordered:
            console.rule(f"variant {report.variant}", style="dim")
            by_name[str(report.variant)].print_summary(report)
        grid = build_grid(group_id, self._whole_group(group_id, ordered))
        wide = grid_console(console, ci=self.ci)
        wide.print(grid_table(grid, ci=self.ci))
        for note in grid_notes(grid):
            wide.print(Text(note, style="dim"))
        console.print(f"group:   {group_id}  (`cobalt compare --group {group_id}` shows this grid again)")


    def _whole_group(self, group_id: str, reports: list[ExperimentReport]) -> list[ExperimentReport]:
        """`reports`, with the group's other runs from the store (a resumed group ran only its unfinished ones)."""
        config = self._configs.get(group_id)
        if config is None:
            return reports
        store = Store.for_config(config)
        mine = {r.id: r for r in reports}
        rows = store.group_runs(group_id)
        if {row["run_id"] for row in rows} <= set(mine):
            return reports
        return [mine.get(row["run_id"]) or load_report(store, row["run_id"], run=row) for row in rows]


class _Member:
    """One variant's run's observer: its items to its own lines, its end to the group."""

    def __init__(self, group: GroupReporter, lines: _VariantLines) -> None:
        self.group, self.lines = group, lines

    def on_start(self, plan: RunPlan) -> None:
        self.lines.on_start(plan)

    def on_item(self, item: ItemResult) -> None:
        self.lines.on_item(item)

    def on_judge_calls(self, in_flight: int, answered: int) -> None:
        self.lines.on_judge_calls(in_flight, answered)

    def on_finish(self, report: ExperimentReport) -> None:
        self.group.finished(report, self.lines)


def _position(report: ExperimentReport) -> int:
    variant = report.config.get("variant")
    return int(variant.get("position", 0)) if isinstance(variant, dict) else 0
