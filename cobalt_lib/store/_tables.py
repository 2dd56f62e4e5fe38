"""The store's tables, and how rows cross into DuckDB (through its JSON reader) and back out as dicts."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ._values import MAX_VALUE_BYTES, VALUES_DIR, cap_row

TABLES: dict[str, list[tuple[str, str]]] = {
    "runs": [
        ("run_id", "VARCHAR PRIMARY KEY"), ("experiment", "VARCHAR"), ("status", "VARCHAR"),
        ("started_at", "TIMESTAMPTZ"), ("finished_at", "TIMESTAMPTZ"), ("tags", "JSON"), ("config", "JSON"),
        ("source", "VARCHAR"), ("parent_run_id", "VARCHAR"), ("pid", "INTEGER"), ("host", "VARCHAR"),
        ("results_path", "VARCHAR"), ("summary", "JSON"), ("passed", "BOOLEAN"),
        # Milliseconds the stages spent working on the run, summed over every process that worked on it.
        ("worked_ms", "DOUBLE"),
        # Until when the run's process holds it (`_liveness`): a `running` run past this reads `incomplete`.
        ("lease_until", "TIMESTAMPTZ"),
        # The run group (the runs of every variant of one `cobalt run`) and this run's variant (docs/variants.md).
        ("group_id", "VARCHAR"), ("variant", "VARCHAR"),
        # The fenced claim (`_liveness`): set by one compare-and-set when a process takes the run, checked by
        # every write of its rows; `holder` is the holding process's start time, boot and pid namespace.
        ("lease_token", "VARCHAR"), ("lease_epoch", "BIGINT"), ("holder", "VARCHAR"),
    ],
    "outputs": [
        ("run_id", "VARCHAR"), ("item_index", "INTEGER"), ("run_index", "INTEGER"), ("input", "JSON"),
        ("output", "JSON"), ("metadata", "JSON"), ("status", "VARCHAR"), ("error", "VARCHAR"),
        ("traceback", "VARCHAR"), ("latency_ms", "DOUBLE"), ("tokens", "BIGINT"), ("cost_usd", "DOUBLE"),
        ("input_hash", "VARCHAR"),
        # The item's identity (`item_identity`: its `id`, else its content hash): what compare pairs by.
        ("item_id", "VARCHAR"),
        *((name, "JSON") for name in ("cut_values", "unheld_values")),
    ],
    "scores": [
        ("run_id", "VARCHAR"), ("item_index", "INTEGER"), ("run_index", "INTEGER"), ("evaluator", "VARCHAR"),
        ("score", "DOUBLE"), ("raw_score", "DOUBLE"), ("reason", "VARCHAR"), ("status", "VARCHAR"),
        ("passed", "BOOLEAN"), ("error", "VARCHAR"), ("raw_response", "VARCHAR"), ("cached", "BOOLEAN"),
        ("judge_model", "VARCHAR"), ("latency_ms", "DOUBLE"), ("tokens", "BIGINT"), ("cost_usd", "DOUBLE"),
        ("judge_calls", "INTEGER"),
        # A conversation item's per-turn verdicts ([{turn, score, reason, status, passed, error}]), else NULL.
        ("turns", "JSON"),
        *((name, "JSON") for name in ("cut_values", "unheld_values")),
    ],
    "aggregates": [
        ("run_id", "VARCHAR"), ("metric", "VARCHAR"), ("kind", "VARCHAR"), ("mean", "DOUBLE"),
        ("median", "DOUBLE"), ("p95", "DOUBLE"), ("p99", "DOUBLE"), ("min", "DOUBLE"), ("max", "DOUBLE"),
        ("stddev", "DOUBLE"), ("count", "BIGINT"), ("errors", "BIGINT"), ("coverage", "DOUBLE"),
        ("pass_rate", "DOUBLE"),
    ],
    "verdicts": [
        ("run_id", "VARCHAR"), ("name", "VARCHAR"), ("passed", "BOOLEAN"), ("message", "VARCHAR"),
        ("actual", "DOUBLE"), ("expected", "DOUBLE"),
        # the gate that produced it (no_regression yields one verdict per metric): what its check reads
        ("gate", "VARCHAR"),
    ],
    # Which runs Dagster holds, and as which Dagster run: `executed` (Dagster launched the run) or
    # `recorded` (a library run replayed into Dagster afterwards). A table of its own, as the run row
    # is replaced whenever a run starts, resumes or finishes.
    "dagster_runs": [
        ("run_id", "VARCHAR"), ("dagster_run_id", "VARCHAR"), ("how", "VARCHAR"), ("recorded_at", "TIMESTAMPTZ"),
    ],
    # The provider batches a run's judge calls went out in (`[judge] batch`): a resumed run waits on them.
    "judge_batches": [
        ("run_id", "VARCHAR"), ("batch_id", "VARCHAR"), ("endpoint", "VARCHAR"), ("status", "VARCHAR"),
        ("requests", "JSON"), ("counts", "JSON"), ("created_at", "TIMESTAMPTZ"), ("ended_at", "TIMESTAMPTZ"),
    ],
    # The OpenTelemetry spans each agent call emitted (`_spans.SpanRecord`), `seq` their order of ending.
    "spans": [
        ("run_id", "VARCHAR"), ("item_index", "INTEGER"), ("run_index", "INTEGER"), ("seq", "INTEGER"),
        ("span_id", "VARCHAR"), ("parent_id", "VARCHAR"), ("trace_id", "VARCHAR"), ("name", "VARCHAR"),
        ("kind", "VARCHAR"), ("start_ns", "BIGINT"), ("duration_ms", "DOUBLE"), ("status", "VARCHAR"),
        ("status_message", "VARCHAR"), ("attributes", "JSON"), ("events", "JSON"),
        *((name, "JSON") for name in ("cut_values", "unheld_values")),
    ],
    # Production spans received by `cobalt collect` or imported (`cobalt_lib/monitor`), grouped by `trace_id`;
    # they belong to no run (`run_id` stays NULL, so deleting runs leaves them): `keep_days` prunes them.
    "trace_spans": [
        ("run_id", "VARCHAR"), ("trace_id", "VARCHAR"), ("span_id", "VARCHAR"), ("parent_id", "VARCHAR"),
        ("service", "VARCHAR"), ("name", "VARCHAR"), ("kind", "VARCHAR"), ("start_ns", "BIGINT"),
        ("duration_ms", "DOUBLE"), ("status", "VARCHAR"), ("status_message", "VARCHAR"), ("attributes", "JSON"),
        ("events", "JSON"), ("received_at", "TIMESTAMPTZ"),
        *((name, "JSON") for name in ("cut_values", "unheld_values")),
    ],
    # One row per production trace as a commit of `trace_spans` held it (`monitor._trace.summary_row`): what a
    # window scores it by, read from its spans once, when they were received. It stands for the trace while
    # the trace has `spans` spans (a trace whose spans came in several requests has several rows, none whole).
    "trace_summaries": [
        ("run_id", "VARCHAR"), ("trace_id", "VARCHAR"), ("service", "VARCHAR"), ("start_ns", "BIGINT"),
        ("spans", "INTEGER"), ("failed", "BOOLEAN"), ("input", "JSON"), ("output", "JSON"), ("conversation", "JSON"),
        ("llm_calls", "INTEGER"), ("model_tokens", "JSON"), ("tool_calls", "JSON"), ("received_at", "TIMESTAMPTZ"),
        *((name, "JSON") for name in ("cut_values", "unheld_values")),
    ],
    # What each run measured with (`_evaluation_identity`), written once when it starts: a table of its
    # own, as the run row is replaced whenever a run starts, resumes or finishes.
    "identities": [("run_id", "VARCHAR"), ("identity", "JSON")],
    # The journal segments already in the store (`_segment`): a segment replayed again is skipped, so its
    # working time is never added twice.
    "segments": [("segment_id", "VARCHAR"), ("run_id", "VARCHAR"), ("applied_at", "TIMESTAMPTZ")],
}
#: The stored datasets (`_store_datasets`, docs/datasets.md): not keyed by run, so outside `TABLES` (deleting
#: or cleaning runs never takes a dataset), but written and read through the same helpers.
DATASET_TABLES: dict[str, list[tuple[str, str]]] = {
    # One row per immutable version: `hash` is the content hash of its items in order (as a run's
    # evaluation identity computes it), `splits` {split: item count}, `split_hash` a hash of which item is
    # in which split (a version differs from the last in its items or in its splits).
    "dataset_versions": [
        ("dataset", "VARCHAR"), ("version", "INTEGER"), ("hash", "VARCHAR"), ("items", "BIGINT"),
        ("splits", "JSON"), ("split_hash", "VARCHAR"), ("source", "VARCHAR"), ("note", "VARCHAR"),
        ("created_at", "TIMESTAMPTZ"),
    ],
    # Every item of every version, in order: `item_id` its identity (`id`, else its content hash),
    # `item_hash` its content hash (what tells a changed item), `origin` where an added item came from.
    "dataset_items": [
        ("dataset", "VARCHAR"), ("version", "INTEGER"), ("position", "BIGINT"), ("item_id", "VARCHAR"),
        ("item_hash", "VARCHAR"), ("split", "VARCHAR"), ("item", "JSON"), ("origin", "JSON"),
    ],
}
_ALL_TABLES = {**TABLES, **DATASET_TABLES}
#: In `outputs`, `scores` and `spans`: `cut_values` maps each column stored cut to its side file's digest
#: (`_values`), `unheld_values` each column whose value its type cannot hold to that value as text (the
#: column is NULL).
COLUMNS = {table: [name for name, _ in cols] for table, cols in _ALL_TABLES.items()}
#: The integer columns of each table, with their ranges.
_INT_RANGES = {"INTEGER": (-2**31, 2**31 - 1), "BIGINT": (-2**63, 2**63 - 1)}
_INTEGERS = {table: [(n, *_INT_RANGES[k]) for n, k in cols if k in _INT_RANGES] for table, cols in _ALL_TABLES.items()}
_DOUBLES = {table: [n for n, k in cols if k == "DOUBLE"] for table, cols in _ALL_TABLES.items()}
_NOTED = {"outputs", "scores", "spans", "trace_spans", "trace_summaries"}
JSON_COLUMNS = {name for cols in TABLES.values() for name, kind in cols if kind == "JSON"}


def duckdb_said(exc: BaseException) -> str:
    """What DuckDB said, its first line alone: the advice after it (`Try setting 'auto_detect' to true...`,
    a `LINE 1:` caret under cobalt's own SQL) is for the author of a query, not for a user of cobalt."""
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else type(exc).__name__


def fetch(con: Any, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    """A query's rows on `con` as dicts, JSON columns decoded."""
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    # column by column, the JSON ones alone: a window's 1,000 summary rows decode in a third of the time a
    # row-by-row check of every column took (benchmarks/RESULTS.md, issue 39)
    for column in JSON_COLUMNS.intersection(names):
        for row in rows:
            if type(value := row[column]) is str:
                row[column] = _decoded(value)
    return rows


def _decoded(text: str) -> Any:
    """A stored JSON text's value. The commonest two without the decoder: a string with no escape in it (its
    text between the quotes: valid JSON holds no bare quote or control character in a string) and `{}`."""
    if text[:1] == '"' and text[-1:] == '"' and len(text) > 1 and "\\" not in text:
        return text[1:-1]
    if text == "{}":
        return {}
    return _loads(text)


def insert(con: Any, table: str, rows: list[dict[str, Any]], directory: Path, *,
           limit: int = MAX_VALUE_BYTES) -> None:
    """Insert rows by column name through a newline-delimited JSON file that DuckDB reads itself.

    Binding thousands of parameters in a multi-row INSERT cost about 0.2 ms per row of Python
    and DuckDB time, in the thread that shares the GIL with the run; DuckDB's JSON reader takes
    the same rows about 6x faster (benchmarks/RESULTS.md). A value over `limit` bytes is cut
    (`_values`), its whole kept in a side file under `directory`.
    """
    if not rows:
        return
    # A team store's project may have no output directory yet (a DuckDB store's file made it)
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".batch-", suffix=".ndjson", dir=directory)
    os.close(fd)
    try:
        longest = write_rows(Path(name), table, rows, directory / VALUES_DIR, limit)
        insert_file(con, table, Path(name), longest)
    finally:
        os.unlink(name)


def write_rows(path: Path, table: str, rows: Iterable[dict[str, Any]], values: Path, limit: int) -> int:
    """Write a table's rows to `path` as DuckDB's JSON reader takes them, values over `limit` bytes cut
    (`_values.cap_row`). Returns the longest line's length in bytes (an upper bound)."""
    columns = COLUMNS[table]
    longest = 0
    # A lone surrogate (an agent's string cut in the middle of a pair) cannot be UTF-8: stored as `?`.
    with path.open("w", encoding="utf-8", errors="replace") as fh:
        for row in rows:
            row = _integral(table, held(table, row))
            line = _line(row, columns)
            if len(line) > limit // 4:  # perhaps over the cap in UTF-8: the exact check, value by value
                line = _line(cap_row(table, row, values, limit), columns)
            longest = max(longest, len(line))
            fh.write(line)
            fh.write("\n")
    return 4 * longest  # characters of up to 4 UTF-8 bytes each


#: The longest line DuckDB's JSON reader takes by default (its `maximum_object_size`).
_READER_OBJECT_BYTES = 16 * 1024 * 1024


def read_rows_sql(table: str, longest: int) -> str:
    """`SELECT <the table's columns> FROM read_json(?)` for a file from `write_rows`."""
    size = f", maximum_object_size={longest + 1024}" if longest >= _READER_OBJECT_BYTES else ""
    columns = ", ".join(COLUMNS[table])
    return f"SELECT {columns} FROM read_json(?, format='newline_delimited', columns={READ_SPECS[table]}{size})"


def insert_file(con: Any, table: str, path: Path, longest: int) -> None:
    """Insert the rows of a file from `write_rows` (its longest line `longest` bytes), as the connection's
    database takes them (DuckDB's JSON reader, Postgres's COPY)."""
    dialect = getattr(con, "dialect", None)  # a Postgres connection's: COPY (`_postgres`)
    if dialect is not None:
        dialect.insert_file(con, table, path, longest)
        return
    con.execute(f"INSERT INTO {table} ({', '.join(COLUMNS[table])}) {read_rows_sql(table, longest)}", [str(path)])


#: One encoder for every row (`json.dumps` with arguments builds a new one a call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False)


def _line(row: dict[str, Any], columns: list[str]) -> str:
    values = {c: row.get(c) for c in columns}
    for c, value in values.items():  # `finite` inline: this runs for every row the store takes
        if isinstance(value, float) and not math.isfinite(value):
            values[c] = None
    if "cut_values" in values and values["cut_values"] is None:
        values["cut_values"] = {}  # a row written now says what was cut: nothing (`_values.restore`)
    try:
        return _ENCODER.encode(values)
    except ValueError:  # a NaN or infinity inside a JSON value: kept as its text ("NaN")
        return json.dumps(_nan_as_text(values), ensure_ascii=False, default=str)


def _nan_as_text(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _nan_as_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nan_as_text(v) for v in value]
    return value


def held(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """`row` with each value its column's type cannot hold (a token count of 2**63, NaN or text where an
    integer goes, a number past a double's range) set to NULL, and, in `outputs`, `scores` and `spans`,
    kept as text under `unheld_values`: that row alone is changed, never refused."""
    unheld: dict[str, str] | None = None
    for name, low, high in _INTEGERS[table]:
        value = row.get(name)
        if value is None or (type(value) is int and low <= value <= high):
            continue
        if isinstance(value, float) and value.is_integer() and low <= value <= high:
            continue
        unheld = {**(unheld or {}), name: str(value)}
    for name in _DOUBLES[table]:
        value = row.get(name)
        if value is None or type(value) is float or (type(value) is int and abs(value) < 2**1023):
            continue
        if isinstance(value, bool | float):
            continue
        unheld = {**(unheld or {}), name: str(value)}
    if unheld is None:
        return row
    row = {**row, **dict.fromkeys(unheld)}
    if table in _NOTED:
        row["unheld_values"] = {**(row.get("unheld_values") or {}), **unheld}
    return row


def _integral(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """`row` with a whole float in an integer column (3.0 tokens) as an int: Postgres's JSON reader takes
    no `3.0` for an integer, where DuckDB's casts it."""
    for name, _, _ in _INTEGERS[table]:
        value = row.get(name)
        if type(value) is float and value.is_integer():
            row = {**row, name: int(value)}
    return row


def finite(value: Any) -> Any:
    """JSON has no NaN or infinity (DuckDB's reader rejects them): store them as NULL."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


#: The `columns={...}` argument of read_json for each table: every column, with its SQL type.
READ_SPECS = {table: "{" + ", ".join(f"'{n}': '{k.replace(' PRIMARY KEY', '')}'" for n, k in cols) + "}"
              for table, cols in _ALL_TABLES.items()}


_loads = json.JSONDecoder().decode  # json.loads without its per-call checks of the argument


def decode(row: dict[str, Any]) -> dict[str, Any]:
    for column in JSON_COLUMNS & row.keys():
        if isinstance(row[column], str):
            row[column] = json.loads(row[column])
    return row


def present_columns(con: Any, where: str) -> dict[str, set[str]]:
    """`{table: {column}}` of the tables `where` (a `duckdb_columns()` condition) selects."""
    present: dict[str, set[str]] = {}
    for table, column in con.execute(f"SELECT table_name, column_name FROM duckdb_columns() WHERE {where}").fetchall():
        present.setdefault(table, set()).add(column)
    return present


def make_tables(con: Any, present: dict[str, set[str]]) -> None:
    """Every table `present` lacks, and every column its tables lack (an older store), in the connection's
    dialect (`_backend`)."""
    dialect = getattr(con, "dialect", None)  # a Postgres connection says its dialect (`_backend`); DuckDB's is this
    kind_of = dialect.column_type if dialect is not None else str
    for table, cols in TABLES.items():
        if table not in present:
            con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(f'{n} {kind_of(k)}' for n, k in cols)})")
            continue
        for name, kind in cols:
            if name not in present[table]:
                con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {name} "
                            f"{kind_of(kind.replace(' PRIMARY KEY', ''))}")
