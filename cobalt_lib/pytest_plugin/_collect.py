"""Experiment files as pytest collectors: each experiment a test, or (items mode) each dataset item a test
beside the experiment's `gates` test.

    experiments/qa.cobalt.py::qa-agent                      one test: the run's gates
    experiments/qa.cobalt.py::qa-agent::capital-france      items mode: one test per item (its `id`, else
    experiments/qa.cobalt.py::qa-agent::item-3              `item-<index>`), and one for the gates
    experiments/qa.cobalt.py::qa-agent::gates
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .._errors import CobaltError
from ..experiments._discovery import load_file
from ..render._export import pass_marks
from ..results._repeats import repeat_passed
from ._failure import ExperimentFailed, ItemFailed, item_problems, run_property

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr, TracebackStyle

    from ..experiments._experiment import Experiment
    from ..results._report import ExperimentReport
    from ._session import ProjectSession

#: The name of an experiment's gates test in items mode.
GATES = "gates"


def project_of(node: pytest.Item | pytest.Collector) -> ProjectSession:
    """The project session of the experiment file `node` belongs to."""
    found: pytest.Item | pytest.Collector | None = node
    while found is not None and not isinstance(found, ExperimentFile):
        found = found.parent
    assert found is not None, f"{node.nodeid} is not inside an experiment file"
    return found.project


def _said(excinfo: ExceptionInfo[BaseException]) -> str | None:
    """The message of a cobalt failure (a failed run, an item, bad input), shown without a traceback."""
    if isinstance(excinfo.value, ExperimentFailed | ItemFailed | CobaltError):
        return str(excinfo.value)
    return None


class ExperimentFile(pytest.File):
    """A file of the project's experiments (`test_dir` matching `test_match`), loaded as `cobalt run` loads it."""

    def __init__(self, *, project: ProjectSession, tags: list[str], items: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.project = project
        self.tags = tags
        self.items_mode = items

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        for exp in load_file(self.path):
            self.project.collected += 1
            self.project.tags_seen.update(exp.tags)
            if self.tags and not set(self.tags) & set(exp.tags):
                continue
            self.project.tag_matched += 1
            if self.items_mode:
                yield ExperimentItems.from_parent(self, name=exp.name, experiment=exp)
            else:
                yield ExperimentTest.from_parent(self, name=exp.name, experiment=exp)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException]) -> str | TerminalRepr:  # type: ignore[override]
        return _said(excinfo) or super().repr_failure(excinfo)


class _RunsExperiment:
    """What an experiment's tests share: the experiment, and a note of the run each reports on (the session's
    "cobalt runs" summary lists them, from any xdist worker)."""

    experiment: Experiment
    user_properties: list[tuple[str, object]]

    def note_run(self, report: ExperimentReport) -> None:
        self.user_properties.append(run_property(report))


class ExperimentTest(_RunsExperiment, pytest.Item):
    """One experiment: a fresh run, stored as `cobalt run` stores it; fails when a gate fails (or the run
    does not complete), saying which gates, the evaluators' values and the worst items."""

    def __init__(self, *, experiment: Experiment, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.experiment = experiment
        self.report: ExperimentReport | None = None

    def runtest(self) -> None:
        self.report = project_of(self).run(self.experiment)
        self.note_run(self.report)
        if not self.report.passed:
            raise ExperimentFailed(self.report)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        return _said(excinfo) or super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        line = self.experiment.source_line
        return self.path, None if line is None else line - 1, f"cobalt experiment {self.name}"


class ExperimentItems(pytest.Collector):
    """Items mode: one experiment, whose items are tests. It runs once, when its first selected test starts,
    on the items selected (all of them, unless `-k` or a node id picked some)."""

    def __init__(self, *, experiment: Experiment, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.experiment = experiment
        self.report: ExperimentReport | None = None

    def collect(self) -> Iterator[pytest.Item]:
        seen: set[str] = set()
        # With an explicit --dist loadgroup, xdist keeps a group on one worker (the plugin's own scheduler does
        # it under the default --dist load); without xdist the mark would be unknown to --strict-markers.
        group = [pytest.mark.xdist_group(self.nodeid)] if self.config.pluginmanager.hasplugin("xdist") else []
        for index, item in enumerate(self.experiment.dataset):
            name = _item_name(item, index)
            if name in seen or name == GATES:
                name = f"{name}-{index}"
            seen.add(name)
            case = ItemTest.from_parent(self, name=name, index=index)
            for mark in group:
                case.add_marker(mark)
            yield case
        gates = GatesTest.from_parent(self, name=GATES)
        for mark in group:
            gates.add_marker(mark)
        yield gates

    def setup(self) -> None:
        chosen = [node for node in self.session.items if node.parent is self]
        picked = sorted(node.index for node in chosen if isinstance(node, ItemTest))
        every = len(picked) == len(self.experiment.dataset) or not picked
        self.report = project_of(self).run(self.experiment, indices=None if every else picked)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException]) -> str | TerminalRepr:  # type: ignore[override]
        return _said(excinfo) or super().repr_failure(excinfo)


def _item_name(item: Any, index: int) -> str:
    """The item's `id` when it has a short one that fits a test name, else `item-<index>`."""
    given = item.get("id") if isinstance(item, dict) else None
    text = str(given) if isinstance(given, str | int) and not isinstance(given, bool) else ""
    if text and len(text) <= 80 and "::" not in text and not any(c.isspace() for c in text):
        return text
    return f"item-{index}"


class _ItemsChild(_RunsExperiment, pytest.Item):
    parent: ExperimentItems

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.experiment = self.parent.experiment

    @property
    def run_report(self) -> ExperimentReport:
        report = self.parent.report
        assert report is not None, "the experiment's run happens in its collector's setup"
        return report

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        return _said(excinfo) or super().repr_failure(excinfo, style=style)


class ItemTest(_ItemsChild):
    """One dataset item (every repeat of it): fails when its agent call failed or timed out, or an evaluator
    errored or scored it below the evaluator's pass mark."""

    def __init__(self, *, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    def runtest(self) -> None:
        report = self.run_report
        self.note_run(report)
        repeats = [item for item in report.items if item.index == self.index]
        failed = [item for item in repeats if not repeat_passed(item)]
        if not failed:
            return
        marks = pass_marks(report)
        lines = [f"item {self.index} [{repeats[0].item_id}] of {report.name!r} failed "
                 f"{len(failed)} of {len(repeats)} repeats (run {report.id}):" if len(repeats) > 1 else
                 f"item {self.index} [{repeats[0].item_id}] of {report.name!r} failed (run {report.id}):"]
        for item in failed:
            prefix = f"  repeat {item.run_index}: " if len(repeats) > 1 else "  "
            lines += [prefix + line for line in item_problems(item, marks)]
        raise ItemFailed("\n".join(lines))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"cobalt item {self.parent.name}::{self.name}"


class GatesTest(_ItemsChild):
    """The experiment's gates on the run its selected items made."""

    def runtest(self) -> None:
        report = self.run_report
        self.note_run(report)
        if not report.passed:
            raise ExperimentFailed(report)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"cobalt gates of {self.parent.name}"
