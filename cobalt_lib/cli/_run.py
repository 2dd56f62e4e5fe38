"""`cobalt run`: discover experiments, run them live through the reporter, apply the gates."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

from .._errors import ConfigError
from ..experiments._discovery import FilesDidNotLoad
from ..render._forwarding import ForwardingReporter
from ._app import app
from ._common import announce, print_json, project_config, warn

if TYPE_CHECKING:
    from ..config._config import Config
    from ..ops._run import RunOptions, RunOutcome
    from ..ops._select import Selection
    from ..run._execute import RunInterrupted
    from ..run._plan import RunPlan
    from ..run._session import Observer
    from ..variants import GroupReporter


Resume = Annotated[str | None, typer.Option(
    "--resume", metavar="RUN", help="Finish an interrupted run (its id, a prefix or `latest`; with --filter, "
    "`latest` of that experiment; or a run group's id, for its unfinished runs): only what is missing runs.")]
OnlyFailed = Annotated[str | None, typer.Option(
    "--only-failed", metavar="RUN", help="Run again, as a new run, the items that failed in this run (its id, "
    "a prefix, its random suffix or `latest`): agent errors, timeouts, eval-errors, scores below a pass mark.")]
UpdateBaselines = Annotated[bool, typer.Option(
    "--update-baselines", help="Skip the no_regression gates and, when the other gates pass, write "
    "their baseline files from this run (first run, or an accepted change in quality).")]
JudgeBatch = Annotated[bool | None, typer.Option(
    "--judge-batch/--no-judge-batch", help="Send the judge calls through the provider's batch API (half "
    "price, answers within hours; resumable with --resume) or online; default: [judge] batch.")]
VariantOption = Annotated[list[str] | None, typer.Option(
    "--variant", metavar="VARIANT", help="Only this variant of experiments with variants (its name, or "
    "key=value of its parameters; repeatable); the baseline variant always runs too.")]
ProgressJsonl = Annotated[Path | None, typer.Option(
    "--progress-jsonl", metavar="FILE", help="Also write one JSON line per started run, finished item and "
    "finished run to FILE (a file, or a pipe such as /dev/fd/3), flushed as each happens.")]


@app.command()
def run(
    files: Annotated[list[Path] | None, typer.Argument(
        metavar="FILE", help="Experiment files (default: discover them).")] = None,
    filter: Annotated[str | None, typer.Option("--filter", "-f", help="Only names containing this.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", metavar="TAG",
                                                  help="Only experiments with this tag.")] = None,
    add_tag: Annotated[list[str] | None, typer.Option("--add-tag", metavar="TAG",
                                                      help="Add a tag to the runs.")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c", min=1, help="Calls in flight.")] = None,
    ci: Annotated[bool, typer.Option("--ci", help="Compact output without colour; exit 1 when a gate fails.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the run summaries as JSON instead.")] = False,
    ui: Annotated[bool, typer.Option("--ui", help="Open the dashboard after the run.")] = False,
    no_dagster: Annotated[bool, typer.Option("--no-dagster", help="Run the plain library path.")] = False,
    resume: Resume = None,
    only_failed: OnlyFailed = None,
    update_baselines: UpdateBaselines = False,
    judge_batch: JudgeBatch = None,
    variant: VariantOption = None,
    progress_jsonl: ProgressJsonl = None,
) -> None:
    """Run experiments and report each item as it finishes.

    Example: `cobalt run experiments/qa.cobalt.py --ci --concurrency 20`

    Exit codes: 0 all gates passed, 1 a gate failed, 2 bad usage, config or input (nothing runs).
    """
    from .._signals import sigterm_as_interrupt
    from ..ops._run import RunOptions
    from ..ops._select import Selection
    from ..results._summary import run_summary
    from ..run._execute import RunInterrupted

    config = project_config()
    if resume and update_baselines:
        raise ConfigError("--update-baselines writes baselines from a whole new run; run it without --resume.")
    if only_failed and (resume or update_baselines):
        other = "--resume" if resume else "--update-baselines"
        raise ConfigError(f"--only-failed starts a new run of some items, which {other} cannot be combined with.")
    selection = Selection(files=files or [], name_filter=filter, tags=tag or [])
    progress = None if progress_jsonl is None else open(progress_jsonl, "w", encoding="utf-8")  # noqa: SIM115
    reporter = _observer(json_output, ci, progress)
    options = RunOptions(concurrency=concurrency, add_tags=add_tag or [], dagster=not no_dagster,
                         update_baselines=update_baselines, judge_batch=judge_batch, variants=variant or [],
                         strict_loading=ci)
    if variant and (resume or only_failed):
        raise ConfigError("--variant picks the variants of a new run; a resumed or re-run run keeps its own variant.")
    try:
        # With --json, stdout carries the JSON alone: what the experiment files and agents print goes to stderr.
        user_output = contextlib.redirect_stdout(sys.stderr) if json_output else contextlib.nullcontext()
        with sigterm_as_interrupt(), user_output:
            outcome = _start(config, resume, only_failed, selection, options, reporter)
    except RunInterrupted as exc:
        _say_interrupted(exc)
        raise  # the entry point turns it into exit code 130 (143 after SIGTERM, 129 after SIGHUP)
    except FilesDidNotLoad as exc:
        if ci:  # the workflow's annotations, step summary and pull request comment say it too
            from ..ci._github import github_stopped

            warn(github_stopped(exc.sentences, config, add_tag or []))
        raise  # exit code 2, the sentence on stderr
    finally:
        if progress is not None:
            progress.close()
    _print_baselines(outcome, json_output)
    if json_output:
        print_json([run_summary(r) for r in outcome.reports])
    announce(outcome.reports, config)
    if ui:
        from ._serve import serve_dashboard

        serve_dashboard(config, open_browser=True)
    raise typer.Exit(0 if outcome.passed else 1)


def _say_interrupted(exc: RunInterrupted) -> None:
    """What was kept of an interrupted run (or run group) and how to finish it, on stderr."""
    from .._signals import EXPLAINED

    EXPLAINED.set()
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) has nowhere to say it
        if exc.status == "not started":
            print(f"interrupted before run {exc.run_id} started; nothing was stored", file=sys.stderr)
        elif exc.status == "completed" and exc.run_id.startswith("g-"):
            print(f"interrupted after the runs of group {exc.run_id} completed: every item is stored (`cobalt "
                  f"compare --group {exc.run_id}`)", file=sys.stderr)
        elif exc.status == "completed":
            print(f"interrupted after run {exc.run_id} completed: every item is stored (`cobalt show "
                  f"{exc.run_id}`)", file=sys.stderr)
        elif exc.run_id.startswith("g-"):
            print(f"interrupted: finished items kept in the runs of group {exc.run_id} (incomplete); finish "
                  f"them with `cobalt run --resume {exc.run_id}`", file=sys.stderr)
        else:
            print(f"interrupted: finished items kept in run {exc.run_id} ({exc.status}); finish it with "
                  f"`cobalt run --resume {exc.run_id}`", file=sys.stderr)


def _observer(json_output: bool, ci: bool, progress: IO[str] | None) -> Observer | None:
    """The terminal reporter (none with --json), wrapped by the JSON-lines writer of --progress-jsonl."""
    reporter = None if json_output else _RunReporter(ci)
    if progress is None:
        return reporter
    from ..render._progress import ProgressLines

    return ProgressLines(progress, reporter)


class _RunReporter(ForwardingReporter):
    """The terminal reporter: the plain one, and for the runs of a run group the variants wing's group reporter,
    imported when the group's first run starts (a run of an experiment without variants loads no variant module)."""

    def __init__(self, ci: bool) -> None:
        from ..render._terminal import TerminalReporter

        self.plain, self.ci = TerminalReporter(ci=ci), ci
        self._groups: GroupReporter | None = None

    def for_plan(self, plan: RunPlan) -> Observer:
        """The observer of one variant's run in a group (`run._group` asks)."""
        if plan.group_id is None or plan.variant is None:
            return self
        if self._groups is None:
            from ..variants import GroupReporter

            self._groups = GroupReporter(ci=self.ci, plain=self.plain)
        return self._groups.for_plan(plan)


def _start(config: Config, resume: str | None, only_failed: str | None, selection: Selection,
           options: RunOptions, reporter: Observer | None) -> RunOutcome:
    """Resume the run `resume` names, or re-run the failed items of `only_failed`, else start fresh runs."""
    if resume or only_failed:
        from ..ops._resume import rerun_failed, resume_run
    if resume:
        return resume_run(config, resume, selection, concurrency=options.concurrency, record=options.dagster,
                          observer=reporter, judge_batch=options.judge_batch)
    if only_failed:
        return rerun_failed(config, only_failed, selection, concurrency=options.concurrency,
                            add_tags=options.add_tags, record=options.dagster, observer=reporter,
                            judge_batch=options.judge_batch)
    return _fresh_runs(config, selection, options, reporter)


def _fresh_runs(config: Config, selection: Selection, options: RunOptions,
                reporter: Observer | None) -> RunOutcome:
    """Every experiment checked before any runs; a threshold that gates nothing is said before the runs."""
    from ..ops._run import execute_runs, prepare_runs

    prepared = prepare_runs(config, selection, options)
    warn(prepared.warnings)
    return execute_runs(prepared, reporter)


def _print_baselines(outcome: RunOutcome, json_output: bool) -> None:
    """`--update-baselines`: each file written (on stderr with --json, which keeps stdout for the JSON),
    each one not written and why, as warnings."""
    for update in outcome.baselines:
        if update.written:
            print(update.message, file=sys.stderr if json_output else sys.stdout)
        else:
            warn([update.message])
    warn(outcome.warnings)
