"""`cobalt run`: discover experiments, run them live through the reporter, apply the gates."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, TextIO

import typer

from .._aio import run as run_coroutine
from .._errors import ConfigError
from ..ci._github import github_outputs
from ..ci._webhooks import post_webhooks
from ..config._config import Config
from ..experiments._discovery import load_experiments
from ..experiments._experiment import Experiment
from ..gates._assertions import NoRegression, Threshold
from ..render._terminal import TerminalReporter
from ..results._history import resolve_run
from ..results._report import ExperimentReport
from ..results._summary import run_summary
from ..run._execute import execute
from ..run._plan import RunPlan, prepare
from ._app import app
from ._common import print_json, project_config, project_store


@app.command()
def run(
    files: Annotated[list[Path] | None, typer.Argument(help="Experiment files (default: discover them).")] = None,
    filter: Annotated[str | None, typer.Option("--filter", "-f", help="Only names containing this.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Only experiments with this tag.")] = None,
    add_tag: Annotated[list[str] | None, typer.Option("--add-tag", help="Add a tag to the runs.")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c", min=1, help="Calls in flight.")] = None,
    ci: Annotated[bool, typer.Option("--ci", help="Compact output without colour; exit 1 when a gate fails.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the run summaries as JSON instead.")] = False,
    ui: Annotated[bool, typer.Option("--ui", help="Open the dashboard after the run.")] = False,
    no_dagster: Annotated[bool, typer.Option("--no-dagster", help="Run the plain library path.")] = False,
    resume: Annotated[str | None, typer.Option(
        "--resume", help="Finish an interrupted run (its id, a prefix or `latest`; with --filter, `latest` "
        "of that experiment): only what is missing runs.")
    ] = None,
    update_baselines: Annotated[bool, typer.Option(
        "--update-baselines", help="Skip the no_regression gates and, when the other gates pass, write "
        "their baseline files from this run (first run, or an accepted change in quality).")] = False,
) -> None:
    """Run experiments and report each item as it finishes.

    Example: `cobalt run experiments/qa.cobalt.py --ci --concurrency 20`

    Exit codes: 0 all gates passed, 1 a gate failed, 2 bad usage, config or input (nothing runs).
    """
    config = project_config()
    if resume and update_baselines:
        raise ConfigError("--update-baselines writes baselines from a whole new run; run it without --resume.")
    if resume:
        reports = [_resume(config, resume, files, filter, tag, ci=ci, quiet=json_output, concurrency=concurrency,
                           record=not no_dagster)]
    else:
        experiments = select_experiments(config, files, filter, tag)
        # Validate every experiment before running any: a usage error means nothing runs.
        plans = [prepare(exp, config, concurrency=concurrency, tags=add_tag or (), update_baselines=update_baselines)
                 for exp in experiments]
        for warning in unused_thresholds(config, plans):
            print(f"warning: {warning}", file=sys.stderr)
        if no_dagster or update_baselines:
            # The Dagster path's asset checks are every declared gate; without the no_regression ones
            # the run goes the library way, then into the Dagster history as a recorded run.
            reports = [_run_one(plan, ci=ci, quiet=json_output, record=update_baselines and not no_dagster)
                       for plan in plans]
        else:
            reports = _run_dagster(plans, config, ci=ci, quiet=json_output, concurrency=concurrency,
                                   add_tags=add_tag or ())
        if update_baselines:
            out = sys.stderr if json_output else sys.stdout  # --json keeps stdout for the JSON
            for plan, report in zip(plans, reports, strict=True):
                _write_baselines(plan, report, config, out)
            if not any(isinstance(g, NoRegression) for plan in plans for g in plan.experiment.assertions):
                print("warning: --update-baselines: none of the experiments run has a no_regression gate, so "
                      "no baseline was written.", file=sys.stderr)
    if json_output:
        print_json([run_summary(r) for r in reports])
    announce(reports, config)
    code = 0 if all(r.passed for r in reports) else 1
    if ui:
        from ._serve import serve_dashboard

        serve_dashboard(config, open_browser=True)
    raise typer.Exit(code)


def select_experiments(config: Config, files: list[Path] | None, name_filter: str | None,
                       tags: list[str] | None) -> list[Experiment]:
    """The experiments to run: those found whose name contains `name_filter` and that have one of `tags`.

    Selecting nothing is an error that says what was found, so a mistyped filter or tag is plain.
    """
    found = load_experiments(config, files or None)
    if not found:
        where = ", ".join(map(str, files)) if files else f"{config.test_dir}/ matching {', '.join(config.test_match)}"
        raise ConfigError(f"No experiments found in {where}; create one with `cobalt init` or pass a file.")
    named = [e for e in found if not name_filter or name_filter in e.name]
    if not named:
        raise ConfigError(f"No experiment name contains {name_filter!r} (--filter); found: "
                          f"{', '.join(sorted({e.name for e in found}))}.")
    chosen = [e for e in named if not tags or set(tags) & set(e.tags)]
    if not chosen:
        known = sorted({t for e in named for t in e.tags})
        raise ConfigError(f"None of the {len(named)} experiments found has the tag {' or '.join(tags or [])}; "
                          f"their tags: {', '.join(known) or 'none'}.")
    return chosen


def unused_thresholds(config: Config, plans: list[RunPlan]) -> list[str]:
    """A warning per `[ci] thresholds` path that gates none of these runs: no experiment produces
    that metric, so the threshold is a no-op (likely a typo or a missing evaluator)."""
    used = {gate.path for plan in plans for gate in plan.assertions if isinstance(gate, Threshold)}
    return [f"[ci] thresholds {path!r} applies to none of the experiments run (none produces {path!r}); "
            "it gates nothing." for path in config.ci.thresholds if path not in used]


def announce(reports: list[ExperimentReport], config: Config) -> None:
    """After runs: GitHub Actions outputs and webhooks; their failures are warnings, never failures."""
    warnings = github_outputs(reports)
    for report in reports:
        warnings += post_webhooks(config.webhooks, report)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _resume_scope(config: Config, files: list[Path] | None, name_filter: str | None,
                  tags: list[str] | None) -> tuple[list[Experiment], str | None]:
    """The experiments `--resume` may finish a run of, and the one experiment whose runs `latest` and
    `previous` then mean when --filter/--tag pick it (None: every experiment's runs)."""
    if not name_filter and not tags:
        return load_experiments(config, files or None), None
    chosen = select_experiments(config, files, name_filter, tags)
    if len(chosen) > 1:
        raise ConfigError(f"--resume finishes one run, but --filter/--tag match {len(chosen)} experiments "
                          f"({', '.join(e.name for e in chosen)}); narrow them to one.")
    return chosen, chosen[0].name


def _resume(config: Config, ref: str, files: list[Path] | None, name_filter: str | None,
            tags: list[str] | None, *, ci: bool, quiet: bool, concurrency: int | None,
            record: bool) -> ExperimentReport:
    """Finish a stored run on the library path: its rows say which agent calls and scores are done."""
    candidates, scope = _resume_scope(config, files, name_filter, tags)
    store = project_store(config)
    run_id = resolve_run(store, ref, scope)
    name = store.query("SELECT experiment FROM runs WHERE run_id = ?", [run_id])[0]["experiment"]
    found = [e for e in candidates if e.name == name]
    if not found:
        raise ConfigError(f"Run {run_id} belongs to experiment {name!r}, which no experiment file under "
                          f"{config.test_dir}/ declares; pass its file to resume it.")
    reporter = None if quiet else TerminalReporter(ci=ci)
    overrides = {"concurrency": concurrency} if concurrency else {}
    try:
        report = run_coroutine(found[-1].arun(config=config, observer=reporter, resume=run_id, **overrides))
    except KeyboardInterrupt:
        _say_interrupted(run_id)
        raise
    if record:
        _record(report, config)
    return report


def _run_one(plan: RunPlan, *, ci: bool, quiet: bool, record: bool = False) -> ExperimentReport:
    reporter = None if quiet else TerminalReporter(ci=ci)
    try:
        report = run_coroutine(execute(plan, reporter))
    except KeyboardInterrupt:
        _say_interrupted(plan.run_id)
        raise
    if record:
        _record(report, plan.config)
    return report


def _record(report: ExperimentReport, config: Config) -> None:
    """A run made on the library path, added to the Dagster history as a Dagster-executed run would be."""
    from cobalt_dagster import record_run

    record_run(report, config=config)


def _write_baselines(plan: RunPlan, report: ExperimentReport, config: Config, out: TextIO) -> None:
    """`--update-baselines`: each no_regression gate's file from this run, unless another gate failed."""
    gates = [g for g in plan.experiment.assertions if isinstance(g, NoRegression)]
    if not gates:
        return
    if not report.passed or report.status != "completed":
        why = "it failed a gate" if report.status == "completed" else f"it is {report.status}"
        for gate in gates:
            print(f"warning: baseline {gate.path(config)} not updated: run {report.id} of {plan.experiment.name!r} "
                  f"{why}.", file=sys.stderr)
        return
    for gate in gates:
        path = gate.update(report, config)
        print(f"baseline {path} updated from run {report.id} ({plan.experiment.name})", file=out)


def _run_dagster(plans: list[RunPlan], config: Config, *, ci: bool, quiet: bool, concurrency: int | None,
                 add_tags: Sequence[str]) -> list[ExperimentReport]:
    from cobalt_dagster._orchestrate import RunInterrupted, run_with_dagster

    reporter = None if quiet else TerminalReporter(ci=ci)
    try:
        return run_with_dagster(plans, config, reporter, concurrency=concurrency, add_tags=add_tags)
    except RunInterrupted as exc:
        _say_interrupted(exc.run_id, exc.status)
        raise  # the entry point turns it into exit code 130, as on the library path


def _say_interrupted(run_id: str, status: str = "incomplete") -> None:
    print(f"interrupted: finished items kept in run {run_id} ({status}); finish it with "
          f"`cobalt run --resume {run_id}`", file=sys.stderr)
