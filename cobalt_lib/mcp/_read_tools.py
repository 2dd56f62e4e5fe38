"""`cobalt_results`, `cobalt_compare`, `cobalt_query`: reading the stored runs, never writing them."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from .._numbers import delta, score
from ..links import run_page_url
from ..ops._details import ITEM_LIMIT, ComparedRuns, RunDetails, compare_with_reasons, run_details
from ..ops._history import HistoryEntry, run_history
from ..ops._journal import waiting_note
from ..ops._query import DEFAULT_LIMIT, MAX_LIMIT, QueryResult, run_query
from ._budget import DEFAULT_TOKENS, budget_tokens, estimate_tokens, fit_any, fit_run, size
from ._common import BudgetArg, Project, answer, budgeted, tool_errors

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class RunListing(HistoryEntry):
    """One stored run in the list: its scores' means, verdict, duration and cost, and its page."""

    run_url: str


class Results(BaseModel):
    """Either `runs` (recent runs, newest first) or `run` (one run in full)."""

    runs: list[RunListing] | None = None
    run: RunDetails | None = None


RESULTS = """Read stored cobalt runs. Without run_id: the recent runs, newest first (run_id, experiment, status,
passed, mean score per evaluator, duration, cost), at most `limit` (default 10). With run_id (an id, a unique prefix,
"latest" or "previous"; scope them with experiment): that run in the results-file shape: summary, gate verdicts,
failing_items (the index of every failing item), and items with input, output, status and every evaluator's score
and reason. Items come failures first: failed agent calls, then eval-errors, then scores by how far below their pass
mark, then the rest by index. The answer stays within `budget` tokens (default 20,000): null and default fields are
left out, long inputs, outputs and reasons are clipped (saying how much), and items that do not fit are counted.
item=N returns item N alone, whole; only_failures=true the failures alone (run_id defaults to "latest" then);
trace=true adds each shown item's trace (the OpenTelemetry spans its agent call emitted: model calls with their
messages and tokens, tool calls with their arguments and results), best with item=N. Use it after cobalt_run to see
why items failed."""

COMPARE = """Compare two stored runs as `cobalt compare` does: run_a is the baseline, every delta is B - A. Per
evaluator: both means, the paired delta with its bootstrap confidence interval and a verdict (improved, regressed, no
significant change, not comparable); latency and cost deltas; how many items regressed and improved (every one
named by index), and the `top` that moved most with both outputs and both reasons. Runs are ids, unique prefixes,
"latest" or "previous" (the newest and second-newest run of the experiment; pass experiment to choose it, else the
newest run's experiment). Use it after changing the agent: cobalt_compare(run_a="previous", run_b="latest"). For the
variants of a run group (one run per variant), cobalt_variants(group=...) compares every variant with the baseline."""

QUERY = """Read-only SQL (DuckDB dialect) over the stored run assets, for questions the other tools do not answer
(e.g. which inputs fail on every run this week). Tables: runs, outputs, scores, aggregates, verdicts, every row
keyed by run_id; read the resource cobalt://schema for every column. Exactly one SELECT (or WITH ... SELECT)
statement; anything else is refused. JSON columns (input, output, metadata, tags, config, summary) can be read with
->> (e.g. output->>'$.answer'). Returns at most `limit` rows (default 200) and at most 100 KB, within `budget`
tokens (long values clipped, then rows cut, saying so), and says when more matched. Stopped after 10 s and 1 GB of
memory: filter on run_id, aggregate, or select left(output, 200) rather than whole outputs. Only the store's tables
can be read, never another file, and the store is read in place, never blocking a run for long."""


def register(server: MCPServer, project: Project) -> None:
    @server.tool(name="cobalt_results", description=RESULTS, annotations=READ_ONLY)
    def cobalt_results(
        run_id: Annotated[str | None, Field(description="A run id, unique prefix, 'latest' or 'previous'; "
                                            "omit it to list the recent runs.")] = None,
        experiment: Annotated[str | None, Field(description="Only this experiment's runs (and the scope of "
                                                "'latest'/'previous').")] = None,
        limit: Annotated[int | None, Field(ge=1, le=1000, description="Runs listed (default 10), or items of "
                                           "one run shown at most (default 200; the budget may show fewer).")] = None,
        only_failures: Annotated[bool, Field(description="Only the failed, errored and below-pass-mark items "
                                             "of the run, worst first.")] = False,
        item: Annotated[int | None, Field(ge=0, description="One item's dataset index: that item alone (every "
                                          "repeat of it), nothing clipped that the budget can hold.")] = None,
        trace: Annotated[bool, Field(description="Add each shown item's trace (model and tool calls, by span), "
                                     "within the budget.")] = False,
        budget: BudgetArg = DEFAULT_TOKENS,
    ) -> Annotated[CallToolResult, Results]:
        with tool_errors():
            config = project.config()
            if run_id is None and not only_failures and item is None:
                entries = run_history(config, experiment=experiment, limit=limit or 10)
                listed = [RunListing(**e.model_dump(), run_url=run_page_url(config, e.run_id)) for e in entries]
                return budgeted(Results(runs=listed), _listing_summary(listed), budget,
                                "cobalt_results(run_id=...) reads one run")
            details = run_details(config, run_id or "latest", experiment=experiment, only_failures=only_failures,
                                  limit=limit or ITEM_LIMIT, item=item, trace=trace)
        text = details_summary(details, only_failures)
        if not trace:
            return answer({"run": fit_run(details, budget_tokens(budget) - estimate_tokens(text),
                                                  whole=item is not None)}, text)
        traces, details.traces = details.traces, {}
        room = budget_tokens(budget) - estimate_tokens(text)
        data = fit_run(details, room // 2, whole=item is not None)  # the traces get the other half
        shown = {f"{i['index']}:{i.get('run_index', 0)}" for i in data["items"]}
        data["traces"], notes = fit_any({k: v for k, v in traces.items() if k in shown}, room - size(data),
                                        f"cobalt_results(run_id={details.run_id!r}, item=N, trace=true) with a "
                                        "higher budget returns an item's trace whole")
        return answer({"run": data}, text, notes)

    @server.tool(name="cobalt_compare", description=COMPARE, annotations=READ_ONLY)
    def cobalt_compare(
        run_a: Annotated[str, Field(description="The baseline run: an id, a unique prefix, 'latest' or "
                                    "'previous'.")],
        run_b: Annotated[str, Field(description="The run compared with the baseline (deltas are B - A).")],
        experiment: Annotated[str | None, Field(description="The experiment 'latest'/'previous' refer to.")] = None,
        top: Annotated[int, Field(ge=0, le=100, description="How many most regressed/improved items.")] = 5,
        budget: BudgetArg = DEFAULT_TOKENS,
    ) -> Annotated[CallToolResult, ComparedRuns]:
        with tool_errors():
            compared = compare_with_reasons(project.config(), run_a, run_b, experiment=experiment, top=top)
        # The moved items appear once, with their outputs and reasons: not again inside the comparison.
        compared.outcome.comparison.regressions, compared.outcome.comparison.improvements = [], []
        return budgeted(compared, compare_summary(compared), budget,
                        "cobalt_results(run_id=<run>, item=<index>) returns an item whole")

    @server.tool(name="cobalt_query", description=QUERY, annotations=READ_ONLY)
    def cobalt_query(
        sql: Annotated[str, Field(description="One SELECT or WITH ... SELECT statement (DuckDB SQL).")],
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="At most this many rows.")] = DEFAULT_LIMIT,
        budget: BudgetArg = DEFAULT_TOKENS,
    ) -> Annotated[CallToolResult, QueryResult]:
        with tool_errors():
            result = run_query(project.config(), sql, limit)
        return _query_answer(result, budget)


def _query_answer(result: QueryResult, budget: int | None) -> CallToolResult:
    """The rows within the budget, and `row_count`, the summary and the note saying what was returned: rows the
    budget left out are counted (never reported as shown), and the note is never clipped with the values."""
    data = result.model_dump(mode="json", exclude_defaults=True, exclude={"note"})
    room = budget_tokens(budget) - 2 * estimate_tokens(result.note or "") - 400
    fitted, notes = fit_any(data, room, "select substr(column, start, length) to read the rest")
    rows = fitted.get("rows", [])
    note = result.note
    if len(rows) < result.row_count:
        fitted["truncated"] = True
        cut = f"{len(rows)} of the {result.row_count} rows the query returned fit the response budget and are shown"
        note = f"{cut} (select fewer or shorter columns, raise budget, or aggregate)" + (f"; {note}" if note else "")
    fitted["row_count"] = len(rows)
    if note:
        fitted["note"] = note
    more = " (more rows matched; see the note)" if fitted.get("truncated") else ""
    return answer(fitted, f"{len(rows)} rows{more}; columns: {', '.join(result.columns)}", notes)


def _listing_summary(runs: list[RunListing]) -> str:
    if not runs:
        return "No runs are stored yet; call cobalt_run first."
    lines = [f"{len(runs)} runs, newest first:"]
    for r in runs:
        scores = " ".join(f"{n}={score(v)}" for n, v in r.scores.items() if v is not None)
        waits = f" ({r.waiting} finished items wait in the journal: the store is held)" if r.waiting else ""
        lines.append(f"{r.run_id} {r.experiment} {r.verdict}{waits} {scores}")
    return "\n".join(lines)


def details_summary(d: RunDetails, only_failures: bool = False) -> str:
    """The run's verdict, scores and every failing item's index, in a few lines."""
    scores = " ".join(f"{n}={score(s.avg)}" for n, s in d.summary.scores.items() if s.avg is not None)
    if d.status == "completed":
        verdict = f"gates {'PASSED' if d.passed else 'FAILED'}"
    else:
        then = {"incomplete": f"; finish it with cobalt_run(resume={d.run_id!r})", "running": "; it is still going"}
        note = waiting_note(d.waiting, f"cobalt_run(resume={d.run_id!r})")
        verdict = (f"gates not judged, not passed ({d.items_total} items finished"
                   f"{f' in the store; {note}' if note else then.get(d.status, '')})")
    failed = [a.name for a in d.assertions if not a.passed]
    return "\n".join([
        f"run {d.run_id} of {d.experiment}: {d.status}, {verdict}; {scores or 'no scores'}",
        f"{d.failures_total} of {d.items_total} items failed" + (f": {d.failing_items}" if d.failing_items else "")
        + (" (failures only, worst first)" if only_failures else ""),
        *([f"failed gates: {', '.join(failed)}"] if failed else [])])


def compare_summary(compared: ComparedRuns) -> str:
    """Each evaluator's delta and verdict, and the items that regressed and improved, counted and named."""
    c = compared.outcome.comparison
    lines = [f"{c.run_b} against baseline {c.run_a}: {c.paired} paired items"]
    for e in c.evaluators:
        lines.append(f"{e.evaluator}: {delta(e.paired_delta)} ({e.verdict})")
    lines.append(f"{_count(compared.regressed_total, 'item score')} regressed"
                 + (f" (items {compared.regressed_indices})" if compared.regressed_indices else "")
                 + f", {compared.improved_total} improved"
                 + (f" (items {compared.improved_indices})" if compared.improved_indices else ""))
    lines += [f"counts as a regression: {r}" for r in compared.outcome.regressions]
    lines += [f"warning: {w}" for w in compared.outcome.warnings]
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
