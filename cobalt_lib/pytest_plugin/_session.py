"""The cobalt project a pytest session runs experiments of, and how it runs them: as `cobalt run` does."""

from __future__ import annotations

import contextlib
import difflib
import io
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import ConfigError
from ..config._config import Config, load_config
from ..experiments._discovery import discover_files, load_experiments
from ..experiments._experiment import Experiment
from ..ops._project import config_warnings
from ..ops._run import run_plan
from ..results._report import ExperimentReport
from ..run._plan import prepare
from ..run._requests import FreshRun


class CobaltWarning(UserWarning):
    """Something about the cobalt project pytest should say but not fail on (a shadowed config file, an
    experiment file linking out of the project, a webhook that did not answer)."""


@dataclass
class RunSettings:
    """How experiments run under pytest (the `--cobalt-*` options)."""

    #: Agent calls in flight (None: the experiment's, else the config's).
    concurrency: int | None = None
    #: Tags added to every run (`cobalt run --add-tag`).
    add_tags: list[str] = field(default_factory=list)
    #: Recorded in Dagster as `[dagster] record` says (False: `--no-dagster`, never recorded).
    dagster: bool = True


class ProjectSession:
    """The project found from `start` (as `cobalt run` finds it from its working directory), loaded once."""

    def __init__(self, start: Path, settings: RunSettings) -> None:
        self.start = start
        self.settings = settings
        self._config: Config | None = None
        self._files: frozenset[Path] | None = None
        self._experiments: dict[str, Experiment] | None = None
        #: What `--cobalt-tag` collection saw: how many experiments, how many had a tag asked for, and their tags.
        self.collected = 0
        self.tag_matched = 0
        self.tags_seen: set[str] = set()

    @property
    def config(self) -> Config:
        """The project's configuration; rows an earlier run left in a journal go into the store first, as
        every cobalt command does before reading it."""
        if self._config is None:
            from ..store._journal import left, replay_left
            from ..store._store import Store

            config = load_config(self.start)
            for warning in config_warnings(config):
                warnings.warn(warning, CobaltWarning, stacklevel=2)
            store = Store.for_config(config)
            if left(store):
                replay_left(store, wait=2.0)
            self._config = config
        return self._config

    def experiment_files(self) -> frozenset[Path]:
        """The project's experiment files (real paths), as `cobalt run` discovers them."""
        if self._files is None:
            refused: list[str] = []
            self._files = frozenset(discover_files(self.config, refused))
            for sentence in refused:
                warnings.warn(sentence, CobaltWarning, stacklevel=2)
        return self._files

    def experiment_dir(self) -> Path:
        test_dir = Path(self.config.test_dir)
        return (test_dir if test_dir.is_absolute() else self.config.root / test_dir).resolve()

    def find(self, name: str) -> Experiment:
        """The project's experiment named `name`, from the discovered files (loaded once per session)."""
        if self._experiments is None:
            problems: list[str] = []
            found = load_experiments(self.config, problems=problems)
            for problem in problems:
                warnings.warn(problem, CobaltWarning, stacklevel=2)
            self._experiments = {exp.name: exp for exp in found}
        if name not in self._experiments:
            known = sorted(self._experiments)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"found: {', '.join(known) or 'none'}."
            raise ConfigError(f"No experiment named {name!r} in {self.config.test_dir}/ matching "
                              f"{', '.join(self.config.test_match)}; {hint}")
        return self._experiments[name]

    def run(self, experiment: Experiment, *, indices: Sequence[int] | None = None,
            concurrency: int | None = None, tags: Sequence[str] = ()) -> ExperimentReport:
        """One fresh run of `experiment` (of the items at `indices` only, when given), stored and recorded in
        Dagster exactly as `cobalt run` does; then the config's webhooks, as after `cobalt run`."""
        from ..ci._webhooks import post_webhooks

        config = self.config
        config.dagster.record_mode()  # a bad COBALT_DAGSTER_RECORD is a usage error before anything runs
        request = FreshRun(concurrency=concurrency or self.settings.concurrency,
                           tags=[*self.settings.add_tags, *tags],
                           indices=None if indices is None else tuple(indices))
        report = run_plan(prepare(experiment, config, request), record=self.settings.dagster)
        for warning in post_webhooks(config.webhooks, report):
            warnings.warn(warning, CobaltWarning, stacklevel=2)
        return report

    def github_outputs(self, results_files: Sequence[str]) -> tuple[list[str], list[str]]:
        """Under GitHub Actions, what `cobalt run` adds after its runs, for the runs whose results files are
        given: the step summary, each run's HTML report, one `::error` per failed gate. Returns the workflow
        command lines to print and the warnings (a summary or report that cannot be written)."""
        from ..ci._github import github_outputs
        from ..results._results_file import read_results

        reports = [read_results(path) for path in results_files if path]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            warnings = github_outputs(reports, self.config)
        return printed.getvalue().splitlines(), warnings
