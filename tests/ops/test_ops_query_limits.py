"""`cobalt_query` stays a bounded read (issue 22, finding 12): a write hidden in a CTE or subquery is
refused, the answer is capped by bytes as well as rows, the query has its own memory and thread
limits, its time limit covers fetching, it reads no other file, and the store is not copied per query."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import killed_and_live_runs

from cobalt_lib import ConfigError, Store, load_config
from cobalt_lib.ops import check_select, run_query
from cobalt_lib.ops._query import MAX_ANSWER_BYTES, QUERY_MEMORY, QUERY_THREADS
from cobalt_lib.store._tables import TABLES


@pytest.mark.parametrize(("sql", "held"), [
    ("WITH d AS (DELETE FROM runs RETURNING *) SELECT * FROM d", "DELETE"),
    ("WITH d AS (INSERT INTO runs (run_id) VALUES ('x') RETURNING *) SELECT * FROM d", "INSERT"),
    ("WITH d AS (UPDATE runs SET status = 'x' RETURNING *) SELECT count(*) FROM d", "UPDATE"),
    ("SELECT * FROM (WITH d AS (DELETE FROM scores RETURNING *) SELECT * FROM d) AS s", "DELETE"),
    ("WITH a AS (SELECT 1), d AS (DELETE FROM runs RETURNING run_id) SELECT * FROM a, d", "DELETE"),
])
def test_a_write_inside_a_cte_or_subquery_is_refused(sql: str, held: str) -> None:
    with pytest.raises(ConfigError, match=f"Only reading is allowed: the query holds {held}"):
        check_select(sql)


@pytest.mark.parametrize("sql", [
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT * FROM n",
    "SELECT 1 UNION SELECT 2 EXCEPT SELECT 3",
    "WITH a AS MATERIALIZED (SELECT 1 AS x) SELECT * FROM a WHERE x IN (SELECT 1)",
    "SELECT * FROM (VALUES ('a', 1)) t(k, v) PIVOT (sum(v) FOR k IN ('a'))",
])
def test_reads_of_every_shape_pass_the_check(sql: str) -> None:
    assert check_select(sql) == sql


def test_the_dml_in_a_cte_never_reaches_the_store(project: Path) -> None:
    killed_and_live_runs(project)
    with pytest.raises(ConfigError, match="Only reading is allowed"):
        run_query(load_config(), "WITH d AS (DELETE FROM runs RETURNING *) SELECT * FROM d")
    assert [r["run_id"] for r in Store(project / ".cobalt" / "cobalt.duckdb").runs()] == ["r-live", "r-killed"]


def test_a_20_mb_answer_is_capped_by_bytes_with_a_note(project: Path) -> None:
    killed_and_live_runs(project)
    started = time.monotonic()
    result = run_query(load_config(), "SELECT repeat('x', 20000000) AS big")
    assert time.monotonic() - started < 10  # 43 s before, past the time limit
    assert result.row_count == 1 and result.truncated and result.max_bytes == MAX_ANSWER_BYTES == 100_000
    value = result.rows[0]["big"]
    assert value.startswith("x" * 1000) and value.endswith("… [cut: 20,000,000 characters in all]")
    assert len(json.dumps(result.model_dump()).encode()) < 2 * MAX_ANSWER_BYTES
    assert result.note is not None and "cap of 100,000 bytes" in result.note and "cut" in result.note


def test_many_rows_stop_at_the_byte_cap_before_the_row_limit(project: Path) -> None:
    killed_and_live_runs(project)
    result = run_query(load_config(), "SELECT range AS i, repeat('y', 1000) AS pad FROM range(5000)", limit=5000)
    assert 90 <= result.row_count < 100 and [r["i"] for r in result.rows] == list(range(result.row_count))
    assert result.truncated and result.note is not None and "only the first" in result.note
    assert all(r["pad"] == "y" * 1000 for r in result.rows)  # whole rows, none cut
    rows = run_query(load_config(), "SELECT range AS i FROM range(300)", limit=200)
    assert rows.row_count == 200 and rows.truncated and rows.note is not None and "raise limit" in rows.note
    exact = run_query(load_config(), "SELECT range AS i FROM range(200)", limit=200)
    assert exact.row_count == 200 and not exact.truncated and exact.note is None


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM glob('/etc/*')", "SELECT * FROM read_parquet('/tmp/x.parquet')",
])
def test_another_file_cannot_be_read(project: Path, sql: str) -> None:
    killed_and_live_runs(project)
    with pytest.raises(ConfigError, match="it reads a file, and only the store's tables can be read"):
        run_query(load_config(), sql)


def test_memory_and_threads_are_set_for_the_query_and_locked(project: Path) -> None:
    killed_and_live_runs(project)
    result = run_query(load_config(), "SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t, "
                                      "current_setting('enable_external_access') AS e, "
                                      "current_setting('lock_configuration') AS l")
    memory = result.rows[0]["m"]
    assert memory.endswith("MiB") and float(memory.split()[0]) < 1000 and QUERY_MEMORY == "1GB"
    assert result.rows[0]["t"] == QUERY_THREADS and result.rows[0]["e"] is False and result.rows[0]["l"] is True
    with pytest.raises(ConfigError, match="more than its 1GB of memory"):
        run_query(load_config(), "SELECT list(repeat('x', 1000000)) FROM range(3000)")


def test_the_time_limit_stops_a_long_query(project: Path) -> None:
    killed_and_live_runs(project)
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"ran for more than 500ms \(running and fetching\)"):
        run_query(load_config(), "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = 7",
                  seconds=0.5)
    assert time.monotonic() - started < 5


def test_the_store_is_read_in_place_and_released_after_the_query(project: Path) -> None:
    store = killed_and_live_runs(project)
    result = run_query(load_config(), "SELECT database_name, path FROM duckdb_databases() WHERE NOT internal "
                                      "ORDER BY database_name")
    assert [r["database_name"] for r in result.rows] == ["memory", "store"]
    assert result.rows[1]["path"] == str(store.path)  # attached, not copied
    copied = run_query(load_config(), "SELECT table_name FROM duckdb_tables() WHERE database_name = 'memory'")
    assert copied.rows == []  # no table copied into memory: the names are views over the file
    views = run_query(load_config(), "SELECT view_name FROM duckdb_views() WHERE database_name = 'memory' "
                                     "AND NOT internal ORDER BY 1")
    assert [r["view_name"] for r in views.rows] == sorted(TABLES)  # the store's one table map
    store.start_run({"run_id": "r-after", "experiment": "qa", "started_at": "2026-01-03T00:00:00+00:00",
                     "tags": [], "config": {}})  # the file is free again
    assert run_query(load_config(), "SELECT count(*) AS n FROM runs").rows == [{"n": 3}]
