"""cobalt's pytest plugin (the `pytest11` entry point `cobalt`): experiments run as tests.

    pytest --cobalt                 every experiment of the project is a test (beside the project's tests)
    pytest --cobalt --cobalt-items  ... and each dataset item a test: `pytest --cobalt --cobalt-items -k capital`
    def test_x(cobalt): ...         the `cobalt` fixture runs an experiment from an ordinary test

Off unless asked (`--cobalt`, or `cobalt_experiments = true` in the pytest configuration): an experiment calls
agents and judges that cost time and money, so a plain `pytest` never starts one. This module loads on every
pytest start where cobalt is installed, so it imports nothing of cobalt's until it is switched on or the
fixture is used (docs/pytest.md; `benchmarks/pytest_startup.py` measures it).
"""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._collect import ExperimentFile
    from ._fixture import CobaltRunner
    from ._session import ProjectSession

__all__ = ["CobaltRunner"]

_PROJECT = pytest.StashKey["ProjectSession"]()
#: The user property a test carries each of its runs under: `experiment|run id|verdict|results file`.
RUN_PROPERTY = "cobalt_run"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cobalt", "cobalt experiments (docs/pytest.md)")
    group.addoption("--cobalt", action="store_true", dest="cobalt", default=None,
                    help="Run the project's experiments as tests, one test per experiment (its gates).")
    group.addoption("--no-cobalt", action="store_false", dest="cobalt",
                    help="Do not collect experiments, whatever cobalt_experiments says.")
    group.addoption("--cobalt-items", action="store_true", dest="cobalt_items", default=None,
                    help="Experiments as tests, one per dataset item (select them with -k) and one for the gates.")
    group.addoption("--cobalt-tag", action="append", dest="cobalt_tags", default=[], metavar="TAG",
                    help="Only experiments with this tag (repeatable), as `cobalt run --tag`.")
    group.addoption("--cobalt-add-tag", action="append", dest="cobalt_add_tags", default=[], metavar="TAG",
                    help="Add this tag to every run (repeatable), as `cobalt run --add-tag`.")
    group.addoption("--cobalt-concurrency", type=int, dest="cobalt_concurrency", default=None, metavar="N",
                    help="Agent calls in flight per run, as `cobalt run --concurrency`.")
    group.addoption("--cobalt-no-dagster", action="store_true", dest="cobalt_no_dagster", default=False,
                    help="Never record these runs in Dagster, as `cobalt run --no-dagster`.")
    parser.addini("cobalt_experiments", type="bool", default=False,
                  help="Run the project's experiments as tests (as --cobalt).")
    parser.addini("cobalt_items", type="bool", default=False,
                  help="With experiments on: one test per dataset item (as --cobalt-items).")


def pytest_configure(config: pytest.Config) -> None:
    concurrency = config.getoption("cobalt_concurrency")
    if concurrency is not None and concurrency < 1:
        raise pytest.UsageError(f"--cobalt-concurrency must be 1 or more, got {concurrency}.")
    config.pluginmanager.register(RunsSummary(config), "cobalt-runs")
    if not _enabled(config):
        return
    try:
        directory = _project(config).experiment_dir()
    except Exception as exc:
        from .._errors import CobaltError

        if isinstance(exc, CobaltError):  # a bad cobalt.toml: its one sentence, as a usage error (exit 4)
            raise pytest.UsageError(f"cobalt: {exc}") from None
        raise
    _add_experiment_dir(config, directory)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Items mode under `-n` (xdist's `--dist load`): an experiment's item tests share a worker, where its one
    run happens; every other test is spread as `load` spreads it. `--dist loadscope`, `loadfile` and
    `loadgroup` keep them together already (the items carry an `xdist_group` of their experiment)."""
    if config.getoption("dist") != "load" or not (_enabled(config) and _items(config)):
        return None
    from ._xdist import ExperimentScheduling

    root = config.rootpath.resolve()
    files = [path.relative_to(root).as_posix() for path in _project(config).experiment_files()
             if path.is_relative_to(root)]
    return ExperimentScheduling(config, log, files)


def _enabled(config: pytest.Config) -> bool:
    """`--cobalt` / `--no-cobalt`, else `--cobalt-items` (asking for item tests asks for experiments), else the
    `cobalt_experiments` ini key."""
    given = config.getoption("cobalt")
    if given is None and config.getoption("cobalt_items"):
        return True
    return bool(config.getini("cobalt_experiments")) if given is None else bool(given)


def _items(config: pytest.Config) -> bool:
    given = config.getoption("cobalt_items")
    return bool(config.getini("cobalt_items")) if given is None else bool(given)


def _project(config: pytest.Config) -> ProjectSession:
    """The session's cobalt project (created on first use; the fixture uses it without --cobalt too)."""
    if _PROJECT not in config.stash:
        from ._session import ProjectSession, RunSettings

        settings = RunSettings(concurrency=config.getoption("cobalt_concurrency"),
                               add_tags=list(config.getoption("cobalt_add_tags")),
                               dagster=not config.getoption("cobalt_no_dagster"))
        config.stash[_PROJECT] = ProjectSession(config.invocation_params.dir, settings)
    return config.stash[_PROJECT]


def _add_experiment_dir(config: pytest.Config, directory: Path) -> None:
    """With no paths on the command line, pytest collects `testpaths` (or the working directory): add the
    experiment directory when those do not hold it, so `pytest --cobalt` finds the experiments either way."""
    if config.args_source == pytest.Config.ArgsSource.ARGS or not directory.is_dir():
        return
    base = config.invocation_params.dir
    for arg in config.args:
        given = Path(arg.split("::")[0])
        given = (given if given.is_absolute() else base / given).resolve()
        if directory.is_relative_to(given):
            return
    config.args.append(str(directory))


def pytest_report_header(config: pytest.Config) -> str | None:
    if not _enabled(config):
        return None
    project = _project(config)
    files = len(project.experiment_files())
    source = project.config.source or "defaults"
    return (f"cobalt: project {project.config.root} (config: {source}), {files} experiment "
            f"file{'' if files == 1 else 's'}, store {project.config.output_path}")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ExperimentFile | None:
    if file_path.suffix != ".py" or not _enabled(parent.config) or _python_collects(file_path, parent):
        return None
    return _experiment_file(file_path, parent)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> ExperimentFile | None:
    """An experiment file pytest would import as a test module (named on the command line, or matching
    `python_files`) is collected as experiments instead, and loaded once, as `cobalt run` loads it."""
    if not _enabled(parent.config):
        return None
    return _experiment_file(module_path, parent)


def _python_collects(path: Path, parent: pytest.Collector) -> bool:
    """pytest's own python plugin collects this file (then `pytest_pycollect_makemodule` sees it)."""
    if parent.session.isinitpath(path):
        return True
    return any(fnmatch.fnmatch(path.name if "/" not in pattern else str(path), pattern)
               for pattern in parent.config.getini("python_files"))


def _experiment_file(path: Path, parent: pytest.Collector) -> ExperimentFile | None:
    project = _project(parent.config)
    if path.resolve() not in project.experiment_files():
        return None
    from ._collect import ExperimentFile

    return ExperimentFile.from_parent(parent, path=path, project=project,
                                      tags=list(parent.config.getoption("cobalt_tags")), items=_items(parent.config))


def pytest_collection_finish(session: pytest.Session) -> None:
    """`--cobalt-tag` that no experiment has is a usage error naming the tags there are, as `cobalt run --tag`
    says it, rather than a quiet "no tests ran"."""
    config = session.config
    tags = list(config.getoption("cobalt_tags"))
    if not tags or not _enabled(config) or _PROJECT not in config.stash:
        return
    project = config.stash[_PROJECT]
    if project.collected and not project.tag_matched:
        known = ", ".join(sorted(project.tags_seen)) or "none"
        raise pytest.UsageError(f"cobalt: none of the {project.collected} experiments found has the tag "
                                f"{' or '.join(tags)} (--cobalt-tag); their tags: {known}.")


@pytest.fixture
def cobalt(request: pytest.FixtureRequest) -> CobaltRunner:
    """Run the project's experiments from a test: `report = cobalt.run("qa-agent"); cobalt.assert_passed(report)`."""
    from ._fixture import CobaltRunner

    return CobaltRunner(_project(request.config), request.node.user_properties)


class RunsSummary:
    """Notes each run a test made (under xdist too: user properties travel with the report) and lists them
    after the tests: experiment, run id, verdict, results file. Under GitHub Actions, then writes the step
    summary, the HTML reports and the `::error` annotations, as `cobalt run` does."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.runs: dict[str, list[str]] = {}
        self.interrupted: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == RUN_PROPERTY and isinstance(value, str):
                fields = value.split("|")
                self.runs.setdefault(fields[1], fields)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C in a run: say which run keeps the finished items and how to finish it, as `cobalt run` does."""
        execute = sys.modules.get("cobalt_lib.run._execute")  # loaded if a run was going on
        if execute is None or not isinstance(excinfo.value, execute.RunInterrupted):
            return
        run_id, status = excinfo.value.run_id, excinfo.value.status
        if status == "not started":
            self.interrupted = f"interrupted before run {run_id} started; nothing was stored"
        elif status == "completed":  # the signal landed once the run was stored completed
            self.interrupted = (f"interrupted after run {run_id} completed: every item is stored (`cobalt show "
                                f"{run_id}`)")
        else:
            self.interrupted = (f"interrupted: finished items kept in run {run_id} ({status}); finish it with "
                                f"`cobalt run --resume {run_id}`")

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = [self.interrupted] if self.interrupted else []
        lines += [f"{name}: run {run_id} {verdict}" + (f", results {results}" if results else "")
                  for name, run_id, verdict, results in self.runs.values()]
        if not lines:
            return
        terminalreporter.section("cobalt runs")
        for line in lines:
            terminalreporter.write_line(line)
        if os.environ.get("GITHUB_ACTIONS") == "true" and self.runs:  # as after `cobalt run`
            printed, warnings = _project(self.config).github_outputs([run[3] for run in self.runs.values()])
            for line in [*printed, *(f"warning: {w}" for w in warnings)]:
                terminalreporter.write_line(line)


def __getattr__(name: str) -> object:
    """`CobaltRunner` (the fixture's type, for annotations) loads on first use, like cobalt_lib's names."""
    if name == "CobaltRunner":
        from ._fixture import CobaltRunner

        return CobaltRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
