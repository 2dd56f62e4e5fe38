"""`cobalt history` and `cobalt compare`."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from .._errors import ConfigError
from .._numbers import delta, duration, money, percent, score
from ._app import app
from ._common import console, print_json, project_config, warn

if TYPE_CHECKING:
    from ..ops._history import HistoryEntry
    from ..results._compare import Comparison

NO_RUNS = "No runs yet; run `cobalt run`."


_seconds = duration


def _cost(entry: HistoryEntry) -> str:
    """The total when both parts are known; else the judge's part, marked, rather than nothing."""
    if entry.cost is not None:
        return money(entry.cost)
    if entry.judge_cost:
        return f"judge {money(entry.judge_cost)}"
    return money(None)


def _history_table(entries: list[HistoryEntry], width: int = 160) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)
    # On a narrow terminal the date goes (the run id begins with the same UTC time) and tags move
    # under the experiment's name, so run ids and costs never have to be cut.
    wide = width >= 110
    with_tags = wide and any(e.tags for e in entries)
    columns = [*(["date"] if wide else []), "run id", "experiment", *(["tags"] if with_tags else []),
               "status", "scores (mean)", "time", "cost"]
    for column in columns:
        table.add_column(column, justify="right" if column in ("time", "cost") else "left",
                         no_wrap=column in ("date", "run id", "status", "time", "cost"), overflow="fold",
                         min_width={"experiment": 8, "scores (mean)": 12}.get(column))
    for e in entries:
        started = datetime.fromisoformat(e.date).astimezone() if e.date else None
        scores = "  ".join(f"{name}={score(mean)}" for name, mean in e.scores.items())
        tags = ",".join(e.tags)
        name = e.experiment if with_tags or not tags else f"{e.experiment}\n({tags})"
        name += f"\n[{e.variant}]" if e.variant else ""  # a variant's run: its variant, under its experiment
        cells = [*([started.strftime("%Y-%m-%d %H:%M") if started else "-"] if wide else []), e.run_id, name,
                 *([tags] if with_tags else []), e.verdict, scores or "-", _seconds(e.duration_ms), _cost(e)]
        table.add_row(*(Text(cell) for cell in cells))  # Text: a name or tag is never read as rich markup
    return table


def _no_runs_message(experiment: str | None, tag: str | None) -> str:
    """A real experiment with no run (tagged so) yet, or an empty store: nothing wrong, nothing to show."""
    scope = "".join(f" {what} {value!r}" for what, value in (("of experiment", experiment), ("tagged", tag))
                    if value)
    return f"No runs{scope} yet; run `cobalt run`." if scope else NO_RUNS


@app.command()
def history(
    experiment: Annotated[str | None, typer.Option("--experiment", "-e", metavar="NAME",
                                                   help="Only this experiment.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", "-t", metavar="TAG", help="Only runs with this tag.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs to show.")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="Print the runs as a JSON list.")] = False,
) -> None:
    """List past runs, newest first: date, scores, pass/fail, duration and cost.

    Example: `cobalt history --experiment qa-agent --limit 5`
    """
    from ..ops._history import run_history

    entries = run_history(project_config(), experiment=experiment, tag=tag, limit=limit)
    if json_output:
        print_json([e.model_dump(mode="json") for e in entries])
    elif not entries:
        typer.echo(_no_runs_message(experiment, tag))
    else:
        out = console()
        out.print(_history_table(entries, out.width))


def _fmt(value: float | None, sign: bool = False) -> str:
    return delta(value) if sign else score(value)


def _print_comparison(c: Comparison) -> None:
    from ..conversations import divergence_lines
    from ..render._compare import (
        change_item,
        ci_text,
        flaky_line,
        identity_lines,
        lost_text,
        metric_text,
        missing_text,
        scope_note,
        unpaired_summary,
        verdict_lines,
    )

    out = console()
    out.print(f"compare {c.run_b} ({c.experiment_b}) against baseline {c.run_a} ({c.experiment_a}): "
              f"{c.paired} paired items, {len(c.unpaired)} unpaired")
    if c.scope:
        out.print(scope_note(c))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    # A and B are whole-run means; the verdict and its CI come from the paired items only, so
    # the paired difference gets its own column (the two differ when items were added or lost).
    for column in ("evaluator", "A", "B", "B - A", "paired B - A", f"{percent(c.confidence)} CI", "pairs", "verdict"):
        table.add_column(column, justify="left" if column in ("evaluator", "verdict") else "right")
    for e in c.evaluators:
        table.add_row(e.evaluator, _fmt(e.mean_a), _fmt(e.mean_b), _fmt(e.delta, sign=True),
                      _fmt(e.paired_delta, sign=True), ci_text(e), str(e.pairs), e.verdict)
    for m in c.metrics:
        table.add_row(m.metric, metric_text(m.metric, m.a), metric_text(m.metric, m.b),
                      metric_text(m.metric, m.delta, sign=True), "", "", "", "")
    out.print(table)
    for line in identity_lines(c):
        out.print(Text(("measured differently: " if c.measured_differently else "differs: ") + line))
    if c.missing_from_b:
        out.print(Text(missing_text(c.missing_from_b)))
    for line in verdict_lines(c):
        out.print(Text(line))
    for e in c.lost_scores:
        out.print(Text(f"lost scores: {lost_text(e)}"))
    for title, rows in (("most regressed", c.regressions), ("most improved", c.improvements)):
        for r in rows:
            text = " ".join(str(r.input).split())[:60]
            out.print(Text(f"{title}: item {change_item(r)} {r.evaluator} {score(r.score_a)} -> "
                           f"{score(r.score_b)} ({delta(r.delta)})  {text}"))
    for s in c.status_changes:
        out.print(f"status changed: item {s.index} {s.status_a} -> {s.status_b}")
    for f in c.flaky:
        out.print(Text(flaky_line(f)))
    for line in divergence_lines(c):
        out.print(Text(line))
    if c.unpaired:
        out.print(unpaired_summary(c.unpaired))


@app.command()
def compare(
    run_a: Annotated[str | None, typer.Argument(
        metavar="A", help="Baseline run: an id, a unique prefix, `latest` or `previous`.")] = None,
    run_b: Annotated[str | None, typer.Argument(
        metavar="B", help="Run compared with the baseline (reported as B - A).")] = None,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", "-e", metavar="NAME", help="Resolve latest/previous within this experiment (default: the "
        "experiment of the newest run, or of the run named beside them).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the comparison as Markdown.")] = False,
    top: Annotated[int, typer.Option("--top", help="How many most regressed/improved items.")] = 5,
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression", help="Exit 1 when any evaluator's verdict is `regressed`, or when it scored "
        "fewer of the paired items in B than in A because of eval-errors or failed agent calls; also when A was "
        "measured differently (dataset, judge prompt, judge model, evaluator options) or items of A are missing "
        "from B.")] = False,
    accept_identity_change: Annotated[bool, typer.Option(
        "--accept-identity-change", help="With --fail-on-regression: compare with a baseline measured "
        "differently, or missing items of B, all the same (the differences are still shown).")] = False,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="GROUP", help="Instead of A and B: the grid of a run group (every variant against "
        "the baseline variant): its id, a prefix, `latest`, or one of its runs.")] = None,
    quality: Annotated[str | None, typer.Option(
        "--quality", metavar="EVALUATOR", help="With --group: the evaluator the frontier ranks quality by "
        "(default: the mean of the evaluators' means).")] = None,
) -> None:
    """Compare two runs: per-evaluator deltas with a bootstrap CI, and the items that moved most.
    With --group, the variants of a run group side by side against their baseline.

    Example: `cobalt compare previous latest --experiment qa-agent --fail-on-regression`,
    `cobalt compare --group latest`

    Exit codes: 0 done (or no regression with --fail-on-regression), 1 a regression (or scores lost
    to errors) with --fail-on-regression, 2 bad usage.
    """
    if json_output and markdown:
        raise ConfigError("Choose one output format: --json or --markdown, not both.")
    if group is not None or quality is not None:
        from ._grid import compare_group

        compare_group(group, (run_a, run_b), experiment=experiment, quality=quality, json_output=json_output,
                      markdown=markdown, fail_on_regression=fail_on_regression)
        return
    if run_a is None or run_b is None:
        raise ConfigError("cobalt compare takes two runs, A (the baseline) and B, or --group GROUP for the variants "
                          "of a run group.")
    from ..ops._compare import compare_runs
    from ..render._compare import comparison_markdown

    outcome = compare_runs(project_config(), run_a, run_b, experiment=experiment, top=top,
                           fail_on_regression=fail_on_regression, accept_identity_change=accept_identity_change)
    warn(outcome.warnings)
    result = outcome.comparison
    if json_output:
        print_json(result.model_dump(mode="json"))
    elif markdown:
        typer.echo(comparison_markdown(result), nl=False)
    else:
        _print_comparison(result)
    if fail_on_regression and outcome.regressions:
        print(f"{'; '.join(outcome.regressions)} (--fail-on-regression)", file=sys.stderr)
        raise typer.Exit(1)
