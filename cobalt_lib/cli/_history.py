"""`cobalt history` and `cobalt compare`."""

from __future__ import annotations

import difflib
import sys
from datetime import datetime
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._errors import ConfigError
from ..render._compare import ci_text, comparison_markdown, lost_text, metric_text, scope_note, unpaired_summary
from ..results._compare import Comparison, compare_reports
from ..results._history import load_report, resolve_run
from ..results._store import Store
from ._app import app
from ._common import print_json, project_config, project_store

NO_RUNS = "No runs yet; run `cobalt run`."


def console() -> Console:
    """stdout; colour only on a terminal, and wide enough that piped tables do not fold."""
    out = Console(highlight=False)
    return out if out.is_terminal else Console(highlight=False, width=max(out.width, 160), no_color=True)


def stored_runs(store: Store, experiment: str | None = None) -> list[dict[str, Any]]:
    """Every run, newest first; none when the store or its tables do not exist yet."""
    import duckdb

    if not store.path.exists():
        return []
    try:
        return store.runs(experiment=experiment)
    except duckdb.CatalogException:
        return []


def _evaluator_means(store: Store, run_ids: list[str]) -> dict[str, dict[str, float | None]]:
    if not run_ids:
        return {}
    rows = store.query("SELECT run_id, metric, mean FROM aggregates WHERE kind = 'evaluator' "
                       "AND run_id IN (SELECT unnest(?)) ORDER BY metric", [run_ids])
    means: dict[str, dict[str, float | None]] = {}
    for row in rows:
        means.setdefault(row["run_id"], {})[row["metric"]] = row["mean"]
    return means


def _duration_ms(run: dict[str, Any]) -> float | None:
    """The run's own working time: the summary's, which for a resumed run leaves out the gap between
    the crash and the resume; else the wall time from start to finish."""
    value = (run.get("summary") or {}).get("total_duration_ms")
    if isinstance(value, int | float) and value > 0:  # 0 is the default of a summary never filled in
        return float(value)
    started, finished = run.get("started_at"), run.get("finished_at")
    if isinstance(started, datetime) and isinstance(finished, datetime):
        return (finished - started).total_seconds() * 1000
    return None


def history_entry(run: dict[str, Any], means: dict[str, float | None]) -> dict[str, Any]:
    started = run.get("started_at")
    summary = run.get("summary") or {}
    return {
        "run_id": run["run_id"], "experiment": run["experiment"],
        "date": started.isoformat() if isinstance(started, datetime) else started,
        "tags": run.get("tags") or [], "status": run["status"], "passed": run.get("passed"),
        "scores": means, "duration_ms": _duration_ms(run), "cost": summary.get("estimated_cost"),
        "agent_cost": summary.get("agent_cost"), "judge_cost": summary.get("judge_cost"),
        "parent_run_id": run.get("parent_run_id"),
    }


def _verdict(entry: dict[str, Any]) -> str:
    if entry["status"] != "completed":
        return entry["status"]
    return {True: "passed", False: "FAILED"}.get(entry["passed"], "completed")


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}s"


def _cost(entry: dict[str, Any]) -> str:
    """The total when both parts are known; else the judge's part, marked, rather than nothing."""
    if entry["cost"] is not None:
        return f"${entry['cost']:.4f}"
    if entry.get("judge_cost"):
        return f"judge ${entry['judge_cost']:.4f}"
    return "unknown"


def _history_table(entries: list[dict[str, Any]], width: int = 160) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)
    # On a narrow terminal the date goes (the run id begins with the same UTC time) and tags move
    # under the experiment's name, so run ids and costs never have to be cut.
    wide = width >= 110
    with_tags = wide and any(e["tags"] for e in entries)
    columns = [*(["date"] if wide else []), "run id", "experiment", *(["tags"] if with_tags else []),
               "status", "scores (mean)", "time", "cost"]
    for column in columns:
        table.add_column(column, justify="right" if column in ("time", "cost") else "left",
                         no_wrap=column in ("date", "run id", "status", "time", "cost"), overflow="fold",
                         min_width={"experiment": 8, "scores (mean)": 12}.get(column))
    for e in entries:
        started = datetime.fromisoformat(e["date"]).astimezone() if e["date"] else None
        scores = "  ".join(f"{name}={'-' if mean is None else f'{mean:.2f}'}" for name, mean in e["scores"].items())
        tags = ",".join(e["tags"])
        name = e["experiment"] if with_tags or not tags else f"{e['experiment']}\n({tags})"
        cells = [*([started.strftime("%Y-%m-%d %H:%M") if started else "-"] if wide else []), e["run_id"], name,
                 *([tags] if with_tags else []), _verdict(e), scores or "-", _seconds(e["duration_ms"]), _cost(e)]
        table.add_row(*(Text(cell) for cell in cells))  # Text: a name or tag is never read as rich markup
    return table


def _no_runs_message(experiment: str | None, tag: str | None) -> str:
    """A real experiment with no run (tagged so) yet, or an empty store: nothing wrong, nothing to show."""
    scope = "".join(f" {what} {value!r}" for what, value in (("of experiment", experiment), ("tagged", tag))
                    if value)
    return f"No runs{scope} yet; run `cobalt run`." if scope else NO_RUNS


def check_stored_experiment(store: Store, experiment: str | None) -> None:
    """ConfigError when the store has runs but none of `experiment`: the name is more likely mistyped
    than never run, and an exit 0 with nothing listed would hide the typo from a script."""
    if experiment is None:
        return
    known = sorted({r["experiment"] for r in stored_runs(store)})
    if not known or experiment in known:  # an empty store (no run of anything yet) is reported as such
        return
    close = difflib.get_close_matches(experiment, known, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? (stored experiments: " if close else "stored experiments: "
    raise ConfigError(f"No runs of experiment {experiment!r} are stored; {hint}{', '.join(known)}"
                      + (")" if close else "."))


@app.command()
def history(
    experiment: Annotated[str | None, typer.Option("--experiment", "-e", help="Only this experiment.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", "-t", help="Only runs with this tag.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs to show.")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="Print the runs as a JSON list.")] = False,
) -> None:
    """List past runs, newest first: date, scores, pass/fail, duration and cost.

    Example: `cobalt history --experiment qa-agent --limit 5`
    """
    if limit < 1:
        raise ConfigError(f"--limit must be 1 or more, got {limit}.")
    store = project_store(project_config())
    check_stored_experiment(store, experiment)
    runs = [r for r in stored_runs(store, experiment) if tag is None or tag in (r.get("tags") or [])][:limit]
    means = _evaluator_means(store, [r["run_id"] for r in runs])
    entries = [history_entry(r, means.get(r["run_id"], {})) for r in runs]
    if json_output:
        print_json(entries)
    elif not entries:
        typer.echo(_no_runs_message(experiment, tag))
    else:
        out = console()
        out.print(_history_table(entries, out.width))


def _fmt(value: float | None, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _print_comparison(c: Comparison) -> None:
    out = console()
    out.print(f"compare {c.run_b} ({c.experiment_b}) against baseline {c.run_a} ({c.experiment_a}): "
              f"{c.paired} paired items, {len(c.unpaired)} unpaired")
    if c.scope:
        out.print(scope_note(c))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    # A and B are whole-run means; the verdict and its CI come from the paired items only, so
    # the paired difference gets its own column (the two differ when items were added or lost).
    for column in ("evaluator", "A", "B", "B - A", "paired B - A", f"{c.confidence:.0%} CI", "pairs", "verdict"):
        table.add_column(column, justify="left" if column in ("evaluator", "verdict") else "right")
    for e in c.evaluators:
        table.add_row(e.evaluator, _fmt(e.mean_a), _fmt(e.mean_b), _fmt(e.delta, sign=True),
                      _fmt(e.paired_delta, sign=True), ci_text(e), str(e.pairs), e.verdict)
    for m in c.metrics:
        table.add_row(m.metric, metric_text(m.metric, m.a, missing="-"), metric_text(m.metric, m.b, missing="-"),
                      metric_text(m.metric, m.delta, sign=True, missing="-"), "", "", "", "")
    out.print(table)
    for e in c.lost_scores:
        out.print(Text(f"lost scores: {lost_text(e)}"))
    for title, rows in (("most regressed", c.regressions), ("most improved", c.improvements)):
        for r in rows:
            text = " ".join(str(r.input).split())[:60]
            out.print(Text(f"{title}: item {r.index} run {r.run_index} {r.evaluator} {r.score_a:.3f} -> "
                           f"{r.score_b:.3f} ({r.delta:+.3f})  {text}"))
    for s in c.status_changes:
        out.print(f"status changed: item {s.index} run {s.run_index} {s.status_a} -> {s.status_b}")
    if c.unpaired:
        out.print(unpaired_summary(c.unpaired))


#: Run references that depend on which experiment's runs they are looked up in.
_RELATIVE = ("latest", "previous")


def _experiment_of(store: Store, run_id: str) -> str:
    return str(store.query("SELECT experiment FROM runs WHERE run_id = ?", [run_id])[0]["experiment"])


def resolve_pair(store: Store, refs: tuple[str, str], experiment: str | None) -> tuple[list[str], str | None]:
    """The two run ids, and the experiment `latest`/`previous` were scoped to when the user named none.

    Without --experiment, `latest` alone would be the newest run of *any* experiment, and comparing
    two experiments pairs unrelated items; so they look in the experiment of the run named outright
    beside them, else of the newest run.
    """
    if experiment or not any(ref in _RELATIVE for ref in refs):
        return [resolve_run(store, ref, experiment) for ref in refs], None
    named = [resolve_run(store, ref) for ref in refs if ref not in _RELATIVE]
    anchor = named[0] if named else str(stored_runs(store)[0]["run_id"])
    scope = _experiment_of(store, anchor)
    stored = len(stored_runs(store, scope))
    if "previous" in refs and stored < 2:
        whose = f"run {anchor}'s" if named else "the newest run's"
        raise ConfigError(f"Experiment {scope!r} ({whose}) has {stored} run, so no previous one; pass "
                          "--experiment NAME to compare another experiment's runs, or give two run ids.")
    return [resolve_run(store, ref, scope if ref in _RELATIVE else None) for ref in refs], scope


def _warn_same_run(c: Comparison, refs: tuple[str, str]) -> None:
    """Not an error: a script's `compare $BASELINE latest` may meet a baseline that is the newest run,
    and "no change" is then the true answer; but typed by hand it is a slip worth pointing out."""
    if c.run_a == c.run_b:
        named = "" if refs[0] == refs[1] else f" ({refs[0]!r} and {refs[1]!r})"
        print(f"warning: both ids name the same run {c.run_a}{named}; a run compared with itself shows no "
              "change.", file=sys.stderr)


def _warn_across_experiments(c: Comparison) -> None:
    if c.experiment_a != c.experiment_b:
        print(f"warning: run {c.run_a} is of experiment {c.experiment_a!r} and run {c.run_b} of "
              f"{c.experiment_b!r}; items are paired by index across different experiments.", file=sys.stderr)


@app.command()
def compare(
    run_a: Annotated[str, typer.Argument(help="Baseline run: an id, a unique prefix, `latest` or `previous`.")],
    run_b: Annotated[str, typer.Argument(help="Run compared with the baseline (reported as B - A).")],
    experiment: Annotated[str | None, typer.Option(
        "--experiment", "-e", help="Resolve latest/previous within this experiment (default: the experiment of "
        "the newest run, or of the run named beside them).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the comparison as Markdown.")] = False,
    top: Annotated[int, typer.Option("--top", help="How many most regressed/improved items.")] = 5,
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression", help="Exit 1 when any evaluator's verdict is `regressed`, or when it scored "
        "fewer of the paired items in B than in A because of eval-errors or failed agent calls.")] = False,
) -> None:
    """Compare two runs: per-evaluator deltas with a bootstrap CI, and the items that moved most.

    Example: `cobalt compare previous latest --experiment qa-agent --fail-on-regression`

    Exit codes: 0 done (or no regression with --fail-on-regression), 1 a regression (or scores lost
    to errors) with --fail-on-regression, 2 bad usage.
    """
    if json_output and markdown:
        raise ConfigError("Choose one output format: --json or --markdown, not both.")
    if top < 0:
        raise ConfigError(f"--top must be 0 or more, got {top}.")
    store = project_store(project_config())
    if not stored_runs(store):
        raise ConfigError(f"There are no runs to compare yet; run `cobalt run` first (store: {store.path}).")
    ids, scope = resolve_pair(store, (run_a, run_b), experiment)
    reports = [load_report(store, run_id) for run_id in ids]
    unfinished = [f"{side} ({r.id}) is {r.status}" for side, r in zip("AB", reports, strict=True)
                  if r.status != "completed"]
    if unfinished and fail_on_regression:  # a gate must not pass on half a run (another CI job's, say)
        raise ConfigError(f"Run {' and run '.join(unfinished)}; --fail-on-regression compares completed runs "
                          "only: wait for it, or finish it with `cobalt run --resume`.")
    for what in unfinished:
        print(f"warning: run {what}: only its finished items are compared.", file=sys.stderr)
    result = compare_reports(reports[0], reports[1], top=top)
    result.scope = scope
    _warn_same_run(result, (run_a, run_b))
    _warn_across_experiments(result)
    if json_output:
        print_json(result.model_dump(mode="json"))
    elif markdown:
        typer.echo(comparison_markdown(result), nl=False)
    else:
        _print_comparison(result)
    if fail_on_regression and (result.regressed or result.lost_scores):
        reasons = [f"regressed: {', '.join(result.regressed)}"] if result.regressed else []
        reasons += [f"lost scores: {lost_text(e)}" for e in result.lost_scores]
        print(f"{'; '.join(reasons)} (--fail-on-regression)", file=sys.stderr)
        raise typer.Exit(1)
