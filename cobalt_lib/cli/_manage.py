"""`cobalt clean`, `cobalt export` and `cobalt rescore`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._errors import ConfigError
from ._app import app
from ._common import announce, project_config, warn

if TYPE_CHECKING:
    from ..ops._clean import Cleanup


def human_size(size: float) -> str:
    """1536 -> '1.5KB'."""
    from .._numbers import data_size

    return data_size(size)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def describe(plan: Cleanup) -> str:
    """`3 cache entries (1.2 KB) and 2 runs from the store and 2 results files (10.0 KB)`."""
    parts = []
    if plan.cache_files:
        parts.append(f"{_count(len(plan.cache_files), 'cache entry', 'cache entries')} "
                     f"({human_size(plan.cache_bytes)})")
    if plan.result_files or plan.run_ids:
        parts.append(f"{_count(len(plan.run_ids), 'run')} from the store and "
                     f"{_count(len(plan.result_files), 'results file')} ({human_size(plan.result_bytes)})")
    return " and ".join(parts)


def _confirm(yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        raise ConfigError("Refusing to delete without confirmation: stdin is not a terminal; pass --yes.")
    return typer.confirm("Delete them?", default=False)


@app.command()
def clean(
    cache: Annotated[bool, typer.Option("--cache", help="Delete judge and embedding cache entries.")] = False,
    results: Annotated[bool, typer.Option("--results", help="Delete results files and their runs' rows.")] = False,
    older_than: Annotated[str | None, typer.Option("--older-than", metavar="AGE",
                                                   help="Only what is older than this, e.g. 30d or 12h.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete cached judge answers and/or stored runs (both when neither flag is given).

    Example: `cobalt clean --results --older-than 30d --yes`
    """
    from ..ops._clean import clean_up, plan_cleanup

    config = project_config()
    if not cache and not results:
        cache = results = True
    plan = plan_cleanup(config, cache=cache, results=results, older_than=older_than)
    if plan.skipped_live:
        typer.echo(f"Keeping {plan.skipped_live} run(s) still in progress.")
    if plan.empty():
        typer.echo("Nothing to delete" + (f" older than {older_than}." if older_than else "."))
        return
    what = describe(plan)
    typer.echo(f"Will delete {what}.")
    if not _confirm(yes):
        typer.echo("Nothing deleted.")
        return
    clean_up(config, plan)
    typer.echo(f"Deleted {what}.")


@app.command()
def export(
    run: Annotated[str, typer.Argument(metavar="RUN", help="Run id, unique prefix, `latest` or `previous`.")],
    format: Annotated[str | None, typer.Option("--format", metavar="FORMAT",
                                               help="csv, markdown, json, junit, baseline, every-eval-ever or inspect "
                                               "(default: from the -o file's extension: .csv, .md, .json, "
                                               ".xml = junit). "
                                               "`baseline` writes the evaluator means for no_regression.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
                      ] = None,
    experiment: Annotated[str | None, typer.Option("--experiment", "-e", metavar="NAME",
                                                   help="Resolve latest/previous within this experiment.")] = None,
    junit_items_fail: Annotated[bool, typer.Option(
        "--junit-items-fail", help="JUnit: fail every item case below its pass mark or errored (default: "
        "item cases fail only when they failed the run, so JUnit's failures are 0 exactly when it passed).")
    ] = False,
) -> None:
    """Export one run as CSV, Markdown, JSON (the results file), JUnit XML or a no_regression baseline.

    Example: `cobalt export latest -o cobalt-junit.xml` (the format follows the extension);
    `cobalt export latest --format baseline -o baseline.json`
    """
    from ..ops._export import export_run

    result = export_run(project_config(), run, format=format, output=output, experiment=experiment,
                        junit_items_fail=junit_items_fail)
    warn(result.warnings)
    if output is None:
        sys.stdout.write(result.text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(result.text, encoding="utf-8")
    typer.echo(f"Wrote run {result.run_id} as {result.format} to {output}")


@app.command()
def rescore(
    run: Annotated[str, typer.Argument(metavar="RUN", help="Run id, unique prefix, `latest` or `previous`.")],
    evaluator: Annotated[list[str] | None, typer.Option(
        "--evaluator", metavar="NAME", help="Only this evaluator (repeatable).")] = None,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", "-e", metavar="NAME",
        help="Where `latest`/`previous` look (default: every experiment).")] = None,
    ci: Annotated[bool, typer.Option("--ci", help="Compact output without colour.")] = False,
) -> None:
    """Re-run the evaluators over a stored run's outputs, without calling the agent, as a new run.

    Example: `cobalt rescore latest --evaluator relevance`

    Exit codes: 0 all gates passed, 1 a gate failed, 2 bad usage or config.
    """
    from ..ops._resume import rescore_run
    from ..render._terminal import TerminalReporter

    config = project_config()
    result = rescore_run(config, run, evaluators=evaluator or (), experiment=experiment,
                         observer=TerminalReporter(ci=ci))
    typer.echo(f"Rescored run {result.parent_run_id} as new run {result.report.id}.")
    announce([result.report], config)
    raise typer.Exit(0 if result.report.passed else 1)
