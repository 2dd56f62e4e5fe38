"""`cobalt_results`, `cobalt_compare`, `cobalt_query`: reading the stored runs, never writing them."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ..links import run_page_url
from ..ops._details import ITEM_LIMIT, ComparedRuns, RunDetails, compare_with_reasons, run_details
from ..ops._history import HistoryEntry, run_history
from ..ops._query import DEFAULT_LIMIT, MAX_LIMIT, QueryResult, run_query
from ._common import Project, answer, tool_errors

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
"latest" or "previous"; scope them with experiment): that run in full, in the results-file shape: summary, gate
verdicts, and items with input, output, status and every evaluator's score and reason (at most `limit` items,
default 200). only_failures=true returns only the failed agent calls, eval-errors and scores below a pass mark,
worst first (run_id defaults to "latest" then). Use it after cobalt_run to see why items failed."""

COMPARE = """Compare two stored runs as `cobalt compare` does: run_a is the baseline, every delta is B - A. Per
evaluator: both means, the paired delta with its bootstrap confidence interval and a verdict (improved, regressed, no
significant change, not comparable); latency and cost deltas; the items that regressed and improved most, each
with both outputs and both reasons. Runs are ids, unique prefixes, "latest" or "previous" (the newest and
second-newest run of the experiment; pass experiment to choose it, else the newest run's experiment). Use it after
changing the agent: cobalt_compare(run_a="previous", run_b="latest")."""

QUERY = """Read-only SQL (DuckDB dialect) over the stored run assets, for questions the other tools do not answer
(e.g. which inputs fail on every run this week). Tables: runs, outputs, scores, aggregates, verdicts, every row
keyed by run_id; read the resource cobalt://schema for every column. Exactly one SELECT (or WITH ... SELECT)
statement; anything else is refused. JSON columns (input, output, metadata, tags, config, summary) can be read with
->> (e.g. output->>'$.answer'). Returns at most `limit` rows (default 200) and at most 100 KB (long values cut,
marked), and says when more matched. Stopped after 10 s and 1 GB of memory: filter on run_id, aggregate, or select
left(output, 200) rather than whole outputs. Only the store's tables can be read, never another file."""


def register(server: MCPServer, project: Project) -> None:
    @server.tool(name="cobalt_results", description=RESULTS, annotations=READ_ONLY)
    def cobalt_results(
        run_id: Annotated[str | None, Field(description="A run id, unique prefix, 'latest' or 'previous'; "
                                            "omit it to list the recent runs.")] = None,
        experiment: Annotated[str | None, Field(description="Only this experiment's runs (and the scope of "
                                                "'latest'/'previous').")] = None,
        limit: Annotated[int | None, Field(ge=1, le=1000, description="Runs listed (default 10), or items of "
                                           "one run shown (default 200).")] = None,
        only_failures: Annotated[bool, Field(description="Only the failed, errored and below-pass-mark items "
                                             "of the run, worst first.")] = False,
    ) -> Annotated[CallToolResult, Results]:
        with tool_errors():
            config = project.config()
            if run_id is None and not only_failures:
                entries = run_history(config, experiment=experiment, limit=limit or 10)
                listed = [RunListing(**e.model_dump(), run_url=run_page_url(config, e.run_id)) for e in entries]
                return answer(Results(runs=listed), _listing_summary(listed))
            details = run_details(config, run_id or "latest", experiment=experiment, only_failures=only_failures,
                                  limit=limit or ITEM_LIMIT)
        return answer(Results(run=details), _details_summary(details, only_failures))

    @server.tool(name="cobalt_compare", description=COMPARE, annotations=READ_ONLY)
    def cobalt_compare(
        run_a: Annotated[str, Field(description="The baseline run: an id, a unique prefix, 'latest' or "
                                    "'previous'.")],
        run_b: Annotated[str, Field(description="The run compared with the baseline (deltas are B - A).")],
        experiment: Annotated[str | None, Field(description="The experiment 'latest'/'previous' refer to.")] = None,
        top: Annotated[int, Field(ge=0, le=100, description="How many most regressed/improved items.")] = 5,
    ) -> Annotated[CallToolResult, ComparedRuns]:
        with tool_errors():
            compared = compare_with_reasons(project.config(), run_a, run_b, experiment=experiment, top=top)
        return answer(compared, _compare_summary(compared))

    @server.tool(name="cobalt_query", description=QUERY, annotations=READ_ONLY)
    def cobalt_query(
        sql: Annotated[str, Field(description="One SELECT or WITH ... SELECT statement (DuckDB SQL).")],
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="At most this many rows.")] = DEFAULT_LIMIT,
    ) -> Annotated[CallToolResult, QueryResult]:
        with tool_errors():
            result = run_query(project.config(), sql, limit)
        more = " (more rows matched; raise limit or aggregate)" if result.truncated else ""
        return answer(result, f"{result.row_count} rows{more}; columns: {', '.join(result.columns)}")


def _listing_summary(runs: list[RunListing]) -> str:
    if not runs:
        return "No runs are stored yet; call cobalt_run first."
    lines = [f"{len(runs)} runs, newest first:"]
    for r in runs:
        scores = " ".join(f"{n}={v:.2f}" for n, v in r.scores.items() if v is not None)
        lines.append(f"{r.run_id} {r.experiment} {r.verdict} {scores}")
    return "\n".join(lines)


def _details_summary(d: RunDetails, only_failures: bool) -> str:
    scores = " ".join(f"{n}={s.avg:.2f}" for n, s in d.summary.scores.items() if s.avg is not None)
    failed = [a.name for a in d.assertions if not a.passed]
    head = (f"run {d.run_id} of {d.experiment}: {d.status}, gates {'PASSED' if d.passed else 'FAILED'}; {scores}; "
            f"{d.failures_total} of {d.items_total} items failed; {len(d.items)} shown"
            + (" (failures only, worst first)" if only_failures else ""))
    return "\n".join([head, *([f"failed gates: {', '.join(failed)}"] if failed else []),
                      *([d.more] if d.more else [])])


def _compare_summary(compared: ComparedRuns) -> str:
    c = compared.outcome.comparison
    lines = [f"{c.run_b} against baseline {c.run_a}: {c.paired} paired items"]
    for e in c.evaluators:
        delta = "-" if e.paired_delta is None else f"{e.paired_delta:+.3f}"
        lines.append(f"{e.evaluator}: {delta} ({e.verdict})")
    lines += [f"warning: {w}" for w in compared.outcome.warnings]
    return "\n".join(lines)
