"""Read-only SQL over the run assets: one SELECT (or WITH ... SELECT), bounded in time, memory and size.

- **Only reading**: the statement is parsed by DuckDB (`json_serialize_sql`) and refused before
  anything is read unless it is one SELECT whose every query node is a SELECT, a set operation or a
  CTE: a `DELETE`, `INSERT` or `UPDATE` inside a CTE or subquery is refused too.
- **Only the store**: it runs on views over the store file attached read-only, with external access
  off (`store._readonly`): no other file can be read, nothing is copied per query.
- **Bounded**: `memory_limit` and `threads` are set for the query; one time limit covers running it
  and fetching its rows (a timer interrupts the connection); the answer stops at `limit` rows or
  `MAX_ANSWER_BYTES` of JSON, whichever comes first, and a value too big for that is cut with a
  marker; the note says which. The file is held only while the query runs (at most the time limit):
  a run writing meanwhile waits and retries (its retry window is longer than the limit).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from .._errors import ConfigError
from .._numbers import seconds as as_seconds
from ..config._config import Config
from ..store._readonly import read_only_connection, read_only_postgres
from ..store._store import TABLES, Store

#: Rows returned when the caller gives no limit, and the most it may ask for.
DEFAULT_LIMIT = 200
MAX_LIMIT = 5000
#: A query still running (or fetching) after this many seconds is stopped (a runaway cross join, say);
#: it is also the longest the store file is held.
QUERY_SECONDS = 10.0
#: The answer's rows stop at this many bytes of JSON (Claude Code refuses a tool result over 25,000 tokens).
MAX_ANSWER_BYTES = 100_000
#: DuckDB's memory and threads for one query (its default memory limit is 80% of the machine's RAM).
QUERY_MEMORY = "1GB"
QUERY_THREADS = min(2, os.cpu_count() or 1)
#: Query nodes a read may hold; anything else (DELETE, INSERT, UPDATE...) is a write, wherever it sits.
READ_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})

#: One line per table and column, for `cobalt://schema`; tests check that every stored column has one.
TABLE_NOTES = {
    "runs": "one row per run: which experiment, when, its status, gates and summary",
    "outputs": "one row per agent call (item x repetition): input, output, status, latency, cost",
    "scores": "one row per evaluator per agent call: score 0..1, reason, status, judge cost",
    "aggregates": "one row per metric per run: statistics of an evaluator's scores or of latency/cost/tokens",
    "verdicts": "one row per quality gate per run: passed, message, actual and expected values",
    "dagster_runs": "one row per run Dagster holds (executed or recorded) or must never record (skipped)",
    "judge_batches": "one row per provider batch a run's judge calls went out in ([judge] batch)",
    "spans": "one row per OpenTelemetry span an agent call emitted: its trace (model and tool calls)",
    "identities": "one row per run: what it measured with (dataset hash and size, evaluators, agent, cobalt)",
}
COLUMN_NOTES: dict[str, dict[str, str]] = {
    "runs": {
        "run_id": "the run's id, `<UTC time>-<8 hex>`; every table's rows carry it",
        "experiment": "the experiment's name as declared",
        "status": "running | completed | incomplete (interrupted, or its lease expired) | failed",
        "started_at": "when the run started (UTC)", "finished_at": "when it finished (NULL while running)",
        "tags": "JSON list of the run's tags", "config": "JSON: runs, concurrency, timeout, evaluators, gates",
        "source": "library or dagster: the path that ran it", "parent_run_id": "the run it re-ran or rescored",
        "pid": "process id of the process that started it", "host": "host name of that process",
        "results_path": "the results JSON file of the run",
        "summary": "JSON: totals, latency, tokens, cost and per-evaluator statistics",
        "passed": "every gate passed; FALSE for a run that did not complete, NULL until the run finishes",
        "worked_ms": "milliseconds the stages worked on the run",
        "lease_until": "until when the process working on a running run holds it; past it, the run is incomplete",
        "group_id": "the run group: the runs of every variant started together (docs/variants.md); null without",
        "variant": "the variant this run is (its name; its parameters are config.variant); null without",
    },
    "outputs": {
        "run_id": "the run", "item_index": "the dataset item's index", "run_index": "repetition (0 unless runs > 1)",
        "input": "JSON: the whole dataset item (`input`, `expected_output` and any other field): the agent's "
                 "input is input->>'$.input'", "output": "JSON: the agent's output",
        "metadata": "JSON: metadata the agent returned", "status": "ok | error | timeout",
        "error": "the agent's error message", "traceback": "the agent's traceback",
        "latency_ms": "agent call time in ms", "tokens": "tokens the agent reported",
        "cost_usd": "the agent call's cost in US dollars", "input_hash": "hash of the whole item's content",
        "item_id": "the item's identity: its `id` field, else input_hash; compare pairs runs' items by it",
    },
    "scores": {
        "run_id": "the run", "item_index": "the dataset item's index", "run_index": "repetition",
        "evaluator": "the evaluator's name", "score": "0..1 (NULL for an eval-error)",
        "raw_score": "the grader's raw -3..3 score, else NULL", "reason": "the judge's or function's reason",
        "status": "ok | eval-error", "passed": "score reached the evaluator's pass mark (NULL for an eval-error)",
        "error": "why the evaluation failed", "raw_response": "the judge's raw answer",
        "cached": "answer came from the judge cache", "judge_model": "provider/model of the judge",
        "latency_ms": "evaluation time in ms", "tokens": "judge tokens", "cost_usd": "judge cost in US dollars",
        "judge_calls": "model calls made for this score",
        "turns": "JSON: a conversation item's per-turn verdicts [{turn, score, reason, status, passed, error}], "
                 "else NULL",
    },
    "aggregates": {
        "run_id": "the run", "metric": "an evaluator's name, or latency / cost / tokens",
        "kind": "evaluator or metric", "mean": "mean", "median": "median", "p95": "95th percentile",
        "p99": "99th percentile", "min": "minimum", "max": "maximum", "stddev": "standard deviation",
        "count": "values counted", "errors": "eval-errors (evaluators)", "coverage": "share of items scored",
        "pass_rate": "share of scored items at or above the pass mark",
    },
    "verdicts": {
        "run_id": "the run", "name": "the gate, e.g. `relevance >= 0.8`", "passed": "the gate passed",
        "message": "what the gate found", "actual": "the measured value", "expected": "the bound",
        "gate": "the gate that produced it (a no_regression gate yields one verdict per metric)",
    },
    "dagster_runs": {
        "run_id": "the cobalt run", "dagster_run_id": "its Dagster run (NULL when skipped)",
        "how": "executed (Dagster launched it) | recorded (replayed into Dagster afterwards) | skipped (--no-dagster)",
        "recorded_at": "when this row was written (UTC)",
    },
    "judge_batches": {
        "run_id": "the run whose judge calls it holds", "batch_id": "the provider's batch id",
        "endpoint": "provider/model @ server", "status": "submitted | the provider's final status (completed, "
        "ended, expired, failed, cancelled)", "requests": "the custom_ids of its requests (hashes of each request)",
        "counts": "the provider's request counts when it ended", "created_at": "when it was sent (UTC)",
        "ended_at": "when its answers were handed out (UTC)",
    },
    "spans": {
        "run_id": "the run", "item_index": "the item's dataset index", "run_index": "the repetition (0-based)",
        "seq": "the span's place in the order the item's spans ended",
        "span_id": "the span's id (16 hex)", "parent_id": "its parent span's id (NULL or absent: a root)",
        "trace_id": "the OpenTelemetry trace id (32 hex)", "name": "the span's name, e.g. 'chat gpt-4o'",
        "kind": "model | embeddings | tool | agent | other (from gen_ai.operation.name)",
        "start_ns": "when it started, Unix nanoseconds", "duration_ms": "how long it took",
        "status": "ok | error | unset", "status_message": "the error's description",
        "attributes": "its attributes (gen_ai.* per the GenAI conventions: model, usage, messages, tool call)",
        "events": "its events: [{name, time_ns, attributes}]",
    },
    "identities": {
        "run_id": "the run",
        "identity": "JSON: dataset {hash, items, source}, evaluators [{name, kind, options, prompt_hash, "
                    "judge_model}], agent {module, qualname, source_file, source_hash, git_commit}, cobalt_version",
    },
}


TABLE_NOTES["segments"] = "one row per journal segment the store took in: a replayed segment goes in once"
COLUMN_NOTES["segments"] = {"segment_id": "the journal segment's id", "run_id": "the run its rows belong to",
                            "applied_at": "when its rows went into the store (UTC)"}
COLUMN_NOTES["runs"] |= {
    "lease_token": "the claim of the process working on the run (a running run has one worker)",
    "lease_epoch": "how many times the run was claimed: rows written under an older claim are refused",
    "holder": "the holding process's start time, boot id and pid namespace: a dead holder frees the run on its host",
}
TABLE_NOTES["trace_spans"] = ("one row per production span `cobalt collect` received or `cobalt traces import` "
                              "read (docs/monitors.md), grouped by trace_id; no run's")
COLUMN_NOTES["trace_spans"] = {
    **{k: v for k, v in COLUMN_NOTES["spans"].items() if k not in ("item_index", "run_index", "seq")},
    "run_id": "always NULL: production spans belong to no run (a monitor's window run reads them)",
    "service": "the sending resource's service.name", "received_at": "when cobalt received it (UTC)",
}
TABLE_NOTES["trace_summaries"] = ("one row per production trace as received (docs/monitors.md): what a monitor's "
                                  "window scores it by, read from its spans once")
COLUMN_NOTES["trace_summaries"] = {
    "run_id": "always NULL: production traces belong to no run", "trace_id": "the OpenTelemetry trace id (32 hex)",
    "service": "the sending resource's service.name", "start_ns": "when its first span started, Unix nanoseconds",
    "spans": "how many spans it was read from (it stands for the trace while the trace has that many)",
    "failed": "a span of it ended in error", "input": "the user's request", "output": "the agent's answer",
    "conversation": "the last model call's messages: [{role, content}]", "llm_calls": "model calls with tokens",
    "model_tokens": "JSON: {model: [input tokens, output tokens]}",
    "tool_calls": "[{name, arguments, result, call_id}]",
    "received_at": "when cobalt received its spans (UTC)",
}
for _table in ("outputs", "scores", "spans", "trace_spans", "trace_summaries"):
    COLUMN_NOTES[_table] |= {
        "cut_values": "JSON: each column stored cut to max_value_bytes (whole in a side file), with its digest",
        "unheld_values": "JSON: each column whose value its type cannot hold (NULL there), that value as text",
    }


#: Queries that answer common questions; `<run id>` stands for a run's id.
EXAMPLES = {
    "failed items of a run (a failed or timed-out agent call, an eval-error, or a score below its pass mark)":
        "SELECT o.item_index, o.run_index, o.status, o.error, s.evaluator, s.score, s.status AS eval_status, "
        "s.reason FROM outputs o LEFT JOIN scores s USING (run_id, item_index, run_index) "
        "WHERE o.run_id = '<run id>' AND (o.status <> 'ok' OR s.status <> 'ok' OR NOT s.passed) "
        "ORDER BY o.item_index, o.run_index",
    "each item's input and expected output":
        "SELECT item_index, input->>'$.input' AS input, input->>'$.expected_output' AS expected, output "
        "FROM outputs WHERE run_id = '<run id>' ORDER BY item_index",
    "the newest completed run of each experiment that passed its gates":
        "SELECT experiment, max(started_at) AS newest FROM runs WHERE status = 'completed' AND passed "
        "GROUP BY experiment",
}


class ColumnInfo(BaseModel):
    name: str
    type: str
    description: str


class TableInfo(BaseModel):
    name: str
    description: str
    columns: list[ColumnInfo]


class QueryResult(BaseModel):
    """A query's rows (at most `limit`, and at most `max_bytes` of JSON), as dicts of JSON values;
    `truncated` when rows were left out or a value was cut, and `note` says which."""

    columns: list[str]
    rows: list[dict[str, Any]]
    row_count: int
    truncated: bool
    limit: int
    max_bytes: int = MAX_ANSWER_BYTES
    note: str | None = None


def store_dialect(config: Config) -> str:
    """The SQL dialect cobalt_query speaks on the project's store: `duckdb`, or `postgres` for a team store."""
    return "postgres" if config.store.team_url() else "duckdb"


def store_schema() -> list[TableInfo]:
    """The store's tables and columns, each with one line saying what it holds."""
    return [TableInfo(name=table, description=TABLE_NOTES[table],
                      columns=[ColumnInfo(name=name, type=kind.replace(" PRIMARY KEY", ""),
                                          description=COLUMN_NOTES[table].get(name, ""))
                               for name, kind in cols])
            for table, cols in TABLES.items()]


def check_select(sql: str) -> str:
    """The statement, if `sql` is exactly one SELECT (WITH ... SELECT, VALUES, FROM-first); else ConfigError."""
    import duckdb

    text = sql.strip().rstrip(";").strip()
    if not text:
        raise ConfigError("The query is empty; write one SELECT statement, e.g. SELECT * FROM runs LIMIT 5.")
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise ConfigError(f"The query does not parse: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise ConfigError(f"The query holds {len(statements)} statements; send one SELECT (or WITH ... SELECT) "
                          "at a time.")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise ConfigError(f"Only a single SELECT (or WITH ... SELECT) is allowed: the store is read-only here, "
                          f"and this is a {kind.name} statement.")
    writes = sorted(set(_nodes(_parsed(text))) - READ_NODES)
    if writes:
        names = ", ".join(node.removesuffix("_QUERY_NODE").removesuffix("_NODE") for node in writes)
        raise ConfigError(f"Only reading is allowed: the query holds {names} (inside a CTE or subquery); "
                          "send a plain SELECT.")
    return text


def _parsed(text: str) -> Any:
    """DuckDB's parse tree of one SELECT statement, as JSON."""
    import duckdb

    with duckdb.connect(":memory:") as con:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [text]).fetchall()[0][0])
    if tree.get("error"):
        raise ConfigError(f"The query cannot be checked: {tree.get('error_message', 'unknown')}; "
                          "send a plain SELECT.")
    return tree


def _nodes(tree: Any) -> Iterator[str]:
    """The type of every query node in a parse tree (`SELECT_NODE`, `DELETE_QUERY_NODE`...)."""
    if isinstance(tree, dict):
        kind = tree.get("type")
        if isinstance(kind, str) and kind.endswith("_NODE"):
            yield kind
        for value in tree.values():
            yield from _nodes(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _nodes(value)


def run_query(config: Config, sql: str, limit: int = DEFAULT_LIMIT, *, seconds: float = QUERY_SECONDS) -> QueryResult:
    """Run one read-only SELECT on the store; at most `limit` rows and `MAX_ANSWER_BYTES` come back, and
    after `seconds` (running and fetching) it is stopped."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}.")
    import duckdb

    text = check_select(sql)
    store = Store.for_config(config)
    if store.backend.name == "postgres":
        return _run_postgres(store, text, limit, seconds)
    with read_only_connection(store, memory_limit=QUERY_MEMORY, threads=QUERY_THREADS) as con:
        timer = threading.Timer(seconds, con.interrupt)
        timer.start()  # running and fetching, both: the store is held until the block ends
        try:
            cursor = con.execute(text)
            columns = [d[0] for d in cursor.description or []]
            types = [str(d[1]) for d in cursor.description or []]
            answer = _Answer(columns, types, limit)
            while answer.wants_more() and (fetched := cursor.fetchmany(16)):
                answer.add(fetched)
            more = answer.left_out or bool(cursor.fetchmany(1))
        except duckdb.InterruptException:
            raise ConfigError(f"The query ran for more than {as_seconds(seconds)} (running and fetching) and was "
                              "stopped; narrow it (filter on run_id or experiment, add LIMIT).") from None
        except duckdb.OutOfMemoryException:
            raise ConfigError(f"The query needs more than its {QUERY_MEMORY} of memory; aggregate, filter or "
                              "select fewer columns.") from None
        except duckdb.PermissionException:
            raise ConfigError("The query failed: it reads a file, and only the store's tables can be read here "
                              "(cobalt://schema lists them).") from None
        except duckdb.Error as exc:
            raise ConfigError(f"The query failed: {_first_line(exc)} (cobalt://schema lists the tables and "
                              "columns).") from None
        finally:
            timer.cancel()
    return answer.result(more)


def _run_postgres(store: Store, text: str, limit: int, seconds: float) -> QueryResult:
    """`run_query` on a team store: only cobalt's tables, in a READ ONLY transaction that Postgres stops
    after `seconds`; the same caps on the answer."""
    import psycopg

    only_the_store(_parsed(text))
    if not store.exists():
        raise ConfigError(f"No results store at {store.where} yet; run an experiment first.")
    with read_only_postgres(store, seconds=seconds) as con:
        try:
            cursor = con.execute(text)
            columns = [d[0] for d in cursor.description or []]
            answer = _Answer(columns, [""] * len(columns), limit)
            while answer.wants_more() and (fetched := cursor.fetchmany(16)):
                answer.add(fetched)
            more = answer.left_out or bool(cursor.fetchmany(1))
        except psycopg.errors.QueryCanceled:
            raise ConfigError(f"The query ran for more than {as_seconds(seconds)} and was stopped; narrow it "
                              "(filter on run_id or experiment, add LIMIT).") from None
        except psycopg.Error as exc:
            raise ConfigError(f"The query failed: {_first_line(exc)} (cobalt://schema lists the tables and "
                              "columns).") from None
    return answer.result(more)


#: Functions a query on Postgres may not call: the server's files, settings, large objects and other databases.
_DENIED_FUNCTIONS = ("pg_", "lo_", "dblink", "set_config", "current_setting", "query_to_xml", "table_to_xml",
                     "cursor_to_xml", "schema_to_xml", "database_to_xml", "txid_", "inet_")


def only_the_store(tree: Any) -> None:
    """Refuse a query (its DuckDB parse tree) that reads anything but cobalt's tables (and its own CTEs)
    without a schema, or calls a function of the server's (`_DENIED_FUNCTIONS`)."""
    allowed = set(TABLES) | set(_cte_names(tree))
    for node in _dicts(tree):
        if node.get("type") == "BASE_TABLE":
            name, schema = str(node.get("table_name", "")), node.get("schema_name") or node.get("catalog_name")
            if schema or name.lower() not in allowed:
                shown = f"{schema}.{name}" if schema else name
                raise ConfigError(f"The query reads {shown}; only the store's tables can be read here, without a "
                                  "schema (cobalt://schema lists them).")
        if node.get("type") == "TABLE_FUNCTION" or (node.get("class") == "FUNCTION" and str(
                node.get("function_name", "")).lower().startswith(_DENIED_FUNCTIONS)):
            raise ConfigError(f"The query calls {node.get('function_name') or 'a table function'}; only the store's "
                              "tables can be read here (cobalt://schema lists them).")


def _dicts(tree: Any) -> Iterator[dict[str, Any]]:
    if isinstance(tree, dict):
        yield tree
        for value in tree.values():
            yield from _dicts(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _dicts(value)


def _cte_names(tree: Any) -> Iterator[str]:
    for node in _dicts(tree):
        for entry in (node.get("cte_map") or {}).get("map", []) if isinstance(node.get("cte_map"), dict) else []:
            if isinstance(entry, dict) and entry.get("key"):
                yield str(entry["key"]).lower()


class _Answer:
    """Rows kept until `limit` rows or `MAX_ANSWER_BYTES` of JSON; a first row too big alone is cut."""

    def __init__(self, columns: list[str], types: list[str], limit: int) -> None:
        self.columns, self.types, self.limit = columns, types, limit
        self.rows: list[dict[str, Any]] = []
        self.size = 0
        self.full = self.cut = self.left_out = False

    @property
    def truncated(self) -> bool:
        return self.full or self.cut

    def wants_more(self) -> bool:
        return not self.full and len(self.rows) < self.limit

    def add(self, fetched: list[tuple[Any, ...]]) -> None:
        for values in fetched:
            if not self.wants_more():
                self.left_out = True
                return
            row = {_unique(self.columns, i): _json_value(v, self.types[i]) for i, v in enumerate(values)}
            size = len(json.dumps(row, ensure_ascii=False, default=str).encode())
            if self.size + size > MAX_ANSWER_BYTES:
                self.full = True
                if self.rows:
                    self.left_out = True
                    return
                row, self.cut = _cut(row, MAX_ANSWER_BYTES), True
            self.rows.append(row)
            self.size += size

    def result(self, more: bool) -> QueryResult:
        note = None
        if self.full:
            note = (f"the answer reached its cap of {MAX_ANSWER_BYTES:,} bytes: only the first {len(self.rows)} "
                    "rows are shown" + (", and long values are cut (marked 'cut')" if self.cut else "")
                    + " (select fewer or shorter columns, e.g. left(output, 200), or aggregate)")
        elif more:
            note = f"more rows matched; only the first {self.limit} are shown (raise limit, or aggregate)"
        return QueryResult(columns=self.columns, rows=self.rows, row_count=len(self.rows),
                           truncated=self.truncated or more, limit=self.limit, note=note)


def _cut(row: dict[str, Any], budget: int) -> dict[str, Any]:
    """`row` with every value longer than its share of `budget` cut to it, saying how long it was."""
    share = max(budget // max(len(row), 1) - 100, 100)
    cut = {}
    for key, value in row.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if len(text.encode()) > share:
            kept = text.encode()[:share].decode(errors="ignore")
            cut[key] = f"{kept}… [cut: {len(text):,} characters in all]"
        else:
            cut[key] = value
    return cut


def _unique(columns: list[str], index: int) -> str:
    """A column's key in a row dict: its name, suffixed with its position when the name repeats."""
    name = columns[index]
    return name if columns.count(name) == 1 else f"{name}_{index}"


def _json_value(value: Any, sql_type: str) -> Any:
    """A DuckDB value as JSON data: JSON columns decoded, times as ISO text, decimals as floats."""
    if value is None:
        return None
    if sql_type == "JSON" and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_json_value(v, "") for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v, "") for k, v in value.items()}
    return value


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

