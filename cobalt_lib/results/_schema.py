"""The store's tables and how their rows cross into Python: the schema `Store` creates and every
reader of the store's files (the exchange's Parquet parts included) shares."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["COLUMNS", "TABLES"]

TABLES: dict[str, list[tuple[str, str]]] = {
    "runs": [
        ("run_id", "VARCHAR PRIMARY KEY"), ("experiment", "VARCHAR"), ("status", "VARCHAR"),
        ("started_at", "TIMESTAMPTZ"), ("finished_at", "TIMESTAMPTZ"), ("tags", "JSON"), ("config", "JSON"),
        ("source", "VARCHAR"), ("parent_run_id", "VARCHAR"), ("pid", "INTEGER"), ("host", "VARCHAR"),
        ("results_path", "VARCHAR"), ("summary", "JSON"), ("passed", "BOOLEAN"),
        # Milliseconds the stages spent working on the run, summed over every process that worked on it.
        ("worked_ms", "DOUBLE"),
    ],
    "outputs": [
        ("run_id", "VARCHAR"), ("item_index", "INTEGER"), ("run_index", "INTEGER"), ("input", "JSON"),
        ("output", "JSON"), ("metadata", "JSON"), ("status", "VARCHAR"), ("error", "VARCHAR"),
        ("traceback", "VARCHAR"), ("latency_ms", "DOUBLE"), ("tokens", "BIGINT"), ("cost_usd", "DOUBLE"),
        ("input_hash", "VARCHAR"),
    ],
    "scores": [
        ("run_id", "VARCHAR"), ("item_index", "INTEGER"), ("run_index", "INTEGER"), ("evaluator", "VARCHAR"),
        ("score", "DOUBLE"), ("raw_score", "DOUBLE"), ("reason", "VARCHAR"), ("status", "VARCHAR"),
        ("passed", "BOOLEAN"), ("error", "VARCHAR"), ("raw_response", "VARCHAR"), ("cached", "BOOLEAN"),
        ("judge_model", "VARCHAR"), ("latency_ms", "DOUBLE"), ("tokens", "BIGINT"), ("cost_usd", "DOUBLE"),
        ("judge_calls", "INTEGER"),
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
    ],
    # Which runs Dagster holds, and as which Dagster run: `executed` (Dagster launched the run) or
    # `recorded` (a library run replayed into Dagster afterwards). A table of its own, as the run row
    # is replaced whenever a run starts, resumes or finishes.
    "dagster_runs": [
        ("run_id", "VARCHAR"), ("dagster_run_id", "VARCHAR"), ("how", "VARCHAR"), ("recorded_at", "TIMESTAMPTZ"),
    ],
}
COLUMNS = {table: [name for name, _ in cols] for table, cols in TABLES.items()}
_JSON_COLUMNS = {name for cols in TABLES.values() for name, kind in cols if kind == "JSON"}


#: The `columns={...}` argument of read_json for each table: every column, with its SQL type.
_READ_SPECS = {table: "{" + ", ".join(f"'{n}': '{k.replace(' PRIMARY KEY', '')}'" for n, k in cols) + "}"
               for table, cols in TABLES.items()}


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity (DuckDB's reader rejects them): store them as NULL."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    for column in _JSON_COLUMNS & row.keys():
        if isinstance(row[column], str):
            row[column] = json.loads(row[column])
    return row


def _fetch(con: Any, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [_decode(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]
