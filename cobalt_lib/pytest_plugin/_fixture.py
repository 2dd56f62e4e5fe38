"""The `cobalt` fixture: run an experiment from an ordinary test and assert on its report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._failure import ExperimentFailed, explain, run_property

if TYPE_CHECKING:
    from ..config._config import Config
    from ..experiments._experiment import Experiment
    from ..results._report import ExperimentReport
    from ._session import ProjectSession


class CobaltRunner:
    """What the `cobalt` fixture gives a test.

        def test_qa_agent(cobalt):
            report = cobalt.run("qa-agent")              # stored as `cobalt run` stores it
            cobalt.assert_passed(report)                 # fails with the failed gates and worst items
            assert report.metric("relevance.p50") >= 0.8
    """

    def __init__(self, project: ProjectSession, notes: list[tuple[str, object]]) -> None:
        self._project = project
        self._notes = notes  # the test's user properties: the session's summary lists the runs noted there

    @property
    def config(self) -> Config:
        """The project's configuration (found from pytest's working directory, as `cobalt run` finds it)."""
        return self._project.config

    def experiment(self, name: str) -> Experiment:
        """The project's experiment named `name` (from its experiment files)."""
        return self._project.find(name)

    def run(self, experiment: str | Experiment, *, items: Sequence[int] | None = None,
            concurrency: int | None = None, tags: Sequence[str] = ()) -> ExperimentReport:
        """Run an experiment (its name in the project, or an `Experiment` object) and return its report.

        `items`: only the dataset items at these indices (a new run of some items, as `--only-failed` makes);
        `concurrency`: agent calls in flight; `tags`: added to the run's. A bad experiment (a missing API key,
        a template variable an item lacks) raises its `ConfigError` before any agent call."""
        exp = self._project.find(experiment) if isinstance(experiment, str) else experiment
        report = self._project.run(exp, indices=items, concurrency=concurrency, tags=tags)
        self._notes.append(run_property(report))
        return report

    def explain(self, report: ExperimentReport) -> str:
        """What the failure of `report` would say: its verdict, failed gates, evaluators' values, worst items."""
        return explain(report)

    def assert_passed(self, report: ExperimentReport) -> None:
        """Fail the test (an `AssertionError` saying `explain(report)`) unless the run completed and every
        gate passed."""
        __tracebackhide__ = True
        if not report.passed:
            raise ExperimentFailed(report)
