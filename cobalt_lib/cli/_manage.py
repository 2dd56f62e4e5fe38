"""`cobalt clean`, `cobalt export` and `cobalt rescore`."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from .._aio import run as run_coroutine
from .._errors import ConfigError
from ..config._config import Config, parse_duration
from ..experiments._discovery import load_experiments
from ..render._export import RENDERERS, format_for
from ..render._terminal import TerminalReporter
from ..results._history import load_report, resolve_run
from ..results._report import ExperimentReport
from ..results._store import TABLES, Store
from ..run._execute import execute
from ..run._plan import prepare
from ._app import app
from ._common import project_config, project_store
from ._history import stored_runs
from ._run import announce


def human_size(size: float) -> str:
    """1536 -> '1.5 KB'."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


@dataclass
class Cleanup:
    """What `cobalt clean` would delete."""

    cache_files: list[Path] = field(default_factory=list)
    result_files: list[Path] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    skipped_live: int = 0

    @staticmethod
    def size(paths: list[Path]) -> int:
        return sum(p.stat().st_size for p in paths if p.exists())

    def empty(self) -> bool:
        return not (self.cache_files or self.result_files or self.run_ids)

    def describe(self) -> str:
        parts = []
        if self.cache_files:
            parts.append(f"{_count(self.cache_files, 'cache entry', 'cache entries')} "
                         f"({human_size(self.size(self.cache_files))})")
        if self.result_files or self.run_ids:
            parts.append(f"{_count(self.run_ids, 'run')} from the store and "
                         f"{_count(self.result_files, 'results file')} ({human_size(self.size(self.result_files))})")
        return " and ".join(parts)


def _count(things: list[Any], one: str, many: str | None = None) -> str:
    return f"{len(things)} {one if len(things) == 1 else many or one + 's'}"


#: A temporary file younger than this may belong to a write in progress: leave it.
TMP_GRACE_SECONDS = 3600.0


def _older(path: Path, cutoff: float) -> bool:
    if path.name.startswith(".tmp-"):
        cutoff = min(cutoff, time.time() - TMP_GRACE_SECONDS)
    try:
        return path.stat().st_mtime < cutoff
    except FileNotFoundError:
        return False


def _plan_results(config: Config, store: Store, cutoff: float, plan: Cleanup) -> None:
    """Runs started before `cutoff` and results files modified before it, each with the other."""
    files = {p.resolve() for p in (config.output_path / "results").glob("*.json") if _older(p, cutoff)}
    chosen: set[str] = set()
    for run in stored_runs(store):
        path = Path(run["results_path"]).resolve() if run.get("results_path") else None
        started = run.get("started_at")
        old = (path in files) or (isinstance(started, datetime) and started.timestamp() < cutoff)
        if not old:
            continue
        if run["status"] == "running":  # still alive (dead ones read as incomplete): never pull its rows
            plan.skipped_live += 1
        else:
            chosen.add(run["run_id"])
            if path is not None and path.is_file():
                files.add(path)
    plan.result_files = sorted(files)
    plan.run_ids = sorted(chosen)


def plan_cleanup(config: Config, *, cache: bool, results: bool, older_than: str | None) -> Cleanup:
    cutoff = time.time() - parse_duration(older_than, field="--older-than") if older_than else float("inf")
    plan = Cleanup()
    if cache:
        cache_dir = config.output_path / "cache"
        plan.cache_files = sorted(p for p in cache_dir.rglob("*") if p.is_file() and _older(p, cutoff))
    if results:
        _plan_results(config, project_store(config), cutoff, plan)
    return plan


def delete_runs(store: Store, run_ids: list[str]) -> None:
    """Every row of these runs, in all five tables, in one transaction."""
    if not run_ids or not store.path.exists():
        return
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            for table in TABLES:
                con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT unnest(?))", [run_ids])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise


def _remove_empty_dirs(directory: Path) -> None:
    for sub in sorted((p for p in directory.rglob("*") if p.is_dir()), reverse=True):
        if not any(sub.iterdir()):
            sub.rmdir()


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
    config = project_config()
    if not cache and not results:
        cache = results = True
    plan = plan_cleanup(config, cache=cache, results=results, older_than=older_than)
    if plan.skipped_live:
        typer.echo(f"Keeping {plan.skipped_live} run(s) still in progress.")
    if plan.empty():
        typer.echo("Nothing to delete" + (f" older than {older_than}." if older_than else "."))
        return
    what = plan.describe()
    typer.echo(f"Will delete {what}.")
    if not _confirm(yes):
        typer.echo("Nothing deleted.")
        return
    delete_runs(project_store(config), plan.run_ids)
    for path in [*plan.result_files, *plan.cache_files]:
        path.unlink(missing_ok=True)
    if plan.cache_files:
        _remove_empty_dirs(config.output_path / "cache")
    typer.echo(f"Deleted {what}.")


@app.command()
def export(
    run: Annotated[str, typer.Argument(help="Run id, unique prefix, `latest` or `previous`.")],
    format: Annotated[str | None, typer.Option("--format", "-f", metavar="csv|markdown|json|junit|baseline",
                                               help="Output format (default: from the -o file's extension: "
                                               ".csv, .md, .json, .xml = junit). `baseline` writes the "
                                               "evaluator means for no_regression.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
                      ] = None,
    experiment: Annotated[str | None, typer.Option("--experiment", "-e",
                                                   help="Resolve latest/previous within this experiment.")] = None,
) -> None:
    """Export one run as CSV, Markdown, JSON (the results file), JUnit XML or a no_regression baseline.

    Example: `cobalt export latest -o cobalt-junit.xml` (the format follows the extension);
    `cobalt export latest -f baseline -o baseline.json`
    """
    format = _export_format(format, output)
    store = _existing_store(project_config())
    report = load_report(store, resolve_run(store, run, experiment))
    if format == "baseline" and (report.status != "completed" or not report.baseline()):
        why = f"is {report.status}" if report.status != "completed" else "has no evaluator scores"
        raise ConfigError(f"Run {report.id} {why}; a baseline must come from a completed run with scores "
                          "(an empty one would gate nothing).")
    if report.status != "completed":
        print(f"warning: run {report.id} is {report.status}: the export holds only its finished items.",
              file=sys.stderr)
    text = RENDERERS[format](report)
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    typer.echo(f"Wrote run {report.id} as {format} to {output}")


def _export_format(given: str | None, output: Path | None) -> str:
    """`--format`, else what the output file's extension implies (`-o results.xml` is JUnit)."""
    if given is None and output is not None:
        given = format_for(output)
        if given is None:
            raise ConfigError(f"Got no --format and cannot tell one from {output.name!r}; pass --format "
                              f"{'|'.join(RENDERERS)} or name the file *.csv, *.md, *.json or *.xml.")
    if given is None or given not in RENDERERS:
        got = "no --format" if given is None else f"--format {given!r}"
        raise ConfigError(f"Got {got}; choose one of {', '.join(RENDERERS)}.")
    return given


def _existing_store(config: Config) -> Store:
    store = project_store(config)
    if not stored_runs(store):
        raise ConfigError(f"There are no stored runs yet; run `cobalt run` first (store: {store.path}).")
    return store


def _stored_items(report: ExperimentReport) -> list[dict[str, Any]]:
    """One item dict per distinct index, ordered by index."""
    by_index: dict[int, dict[str, Any]] = {}
    for item in sorted(report.items, key=lambda i: (i.index, i.run_index)):
        by_index.setdefault(item.index, item.item)
    return [by_index[i] for i in sorted(by_index)]


@app.command()
def rescore(
    run: Annotated[str, typer.Argument(help="Run id, unique prefix, `latest` or `previous`.")],
    evaluator: Annotated[list[str] | None, typer.Option("--evaluator", help="Only this evaluator (repeatable).")
                         ] = None,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", "-e", help="Where `latest`/`previous` look (default: every experiment).")] = None,
    ci: Annotated[bool, typer.Option("--ci", help="Compact output without colour.")] = False,
) -> None:
    """Re-run the evaluators over a stored run's outputs, without calling the agent, as a new run.

    Example: `cobalt rescore latest --evaluator relevance`

    Exit codes: 0 all gates passed, 1 a gate failed, 2 bad usage or config.
    """
    config = project_config()
    store = _existing_store(config)
    old_id = resolve_run(store, run, experiment=experiment)
    stored = load_report(store, old_id)
    found = [e for e in load_experiments(config) if e.name == stored.name]
    if not found:
        raise ConfigError(f"Run {old_id} belongs to experiment {stored.name!r}, which no experiment file under "
                          f"{config.test_dir}/ declares any more; restore it to rescore this run.")
    items = _stored_items(stored)
    runs = max((i.run_index for i in stored.items), default=0) + 1
    plan = prepare(found[-1], config, evaluators=evaluator or None, items=items, runs=runs, parent_run_id=old_id)
    report = run_coroutine(execute(plan, TerminalReporter(ci=ci), outputs=stored.items))
    typer.echo(f"Rescored run {old_id} as new run {report.id}.")
    announce([report], config)
    raise typer.Exit(0 if report.passed else 1)
