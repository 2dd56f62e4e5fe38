"""Read-only SQL over the run assets: one SELECT (or WITH ... SELECT) on a snapshot of the store.

The query runs on an in-memory copy of the tables (`Store.snapshot`), so it cannot change the
store, cannot reach other files, and never holds the file while it runs: a run in progress keeps
writing. Anything but a single SELECT statement is refused before anything is read.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import threading
import uuid
from typing import Any

from pydantic import BaseModel

from .._errors import ConfigError
from ..config._config import Config
from ..results._store import TABLES, Store

#: Rows returned when the caller gives no limit, and the most it may ask for.
DEFAULT_LIMIT = 200
MAX_LIMIT = 5000
#: A query still running after this many seconds is stopped (a runaway cross join, say).
QUERY_SECONDS = 30.0

#: One line per table and column, for `cobalt://schema`; tests check that every stored column has one.
TABLE_NOTES = {
    "runs": "one row per run: which experiment, when, its status, gates and summary",
    "outputs": "one row per agent call (item x repetition): input, output, status, latency, cost",
    "scores": "one row per evaluator per agent call: score 0..1, reason, status, judge cost",
    "aggregates": "one row per metric per run: statistics of an evaluator's scores or of latency/cost/tokens",
    "verdicts": "one row per quality gate per run: passed, message, actual and expected values",
    "dagster_runs": "one row per run Dagster holds (executed or recorded) or must never record (skipped)",
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
        "passed": "every gate passed (NULL until the run finishes)",
        "worked_ms": "milliseconds the stages worked on the run",
        "lease_until": "until when the process working on a running run holds it; past it, the run is incomplete",
    },
    "outputs": {
        "run_id": "the run", "item_index": "the dataset item's index", "run_index": "repetition (0 unless runs > 1)",
        "input": "JSON: the item's input", "output": "JSON: the agent's output",
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
        "status": "ok | eval-error", "passed": "score reached the evaluator's pass mark",
        "error": "why the evaluation failed", "raw_response": "the judge's raw answer",
        "cached": "answer came from the judge cache", "judge_model": "provider/model of the judge",
        "latency_ms": "evaluation time in ms", "tokens": "judge tokens", "cost_usd": "judge cost in US dollars",
        "judge_calls": "model calls made for this score",
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
    },
    "dagster_runs": {
        "run_id": "the cobalt run", "dagster_run_id": "its Dagster run (NULL when skipped)",
        "how": "executed (Dagster launched it) | recorded (replayed into Dagster afterwards) | skipped (--no-dagster)",
        "recorded_at": "when this row was written (UTC)",
    },
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
    """A query's rows (at most `limit`), as dicts of JSON values; `truncated` when more rows matched."""

    columns: list[str]
    rows: list[dict[str, Any]]
    row_count: int
    truncated: bool
    limit: int
    note: str | None = None


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
    return text


def run_query(config: Config, sql: str, limit: int = DEFAULT_LIMIT) -> QueryResult:
    """Run one read-only SELECT over a snapshot of the store; at most `limit` rows come back."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}.")
    import duckdb

    text = check_select(sql)
    store = Store.for_config(config)
    with store.snapshot() as con:
        timer = threading.Timer(QUERY_SECONDS, con.interrupt)
        timer.start()
        try:
            cursor = con.execute(text)
            columns = [d[0] for d in cursor.description or []]
            types = [str(d[1]) for d in cursor.description or []]
            fetched = cursor.fetchmany(limit + 1)
        except duckdb.InterruptException:
            raise ConfigError(f"The query ran for more than {QUERY_SECONDS:g} s and was stopped; narrow it "
                              "(filter on run_id or experiment, add LIMIT).") from None
        except duckdb.Error as exc:
            raise ConfigError(f"The query failed: {_first_line(exc)} (cobalt://schema lists the tables and "
                              "columns).") from None
        finally:
            timer.cancel()
    rows = [{_unique(columns, i): _json_value(value, types[i]) for i, value in enumerate(row)}
            for row in fetched[:limit]]
    truncated = len(fetched) > limit
    note = f"more rows matched; only the first {limit} are shown (raise limit, or aggregate)" if truncated else None
    return QueryResult(columns=columns, rows=rows, row_count=len(rows), truncated=truncated, limit=limit, note=note)


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

