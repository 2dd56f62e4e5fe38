"""`run_query`: one SELECT over a snapshot of the store; `store_schema` describes every stored column."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import killed_and_live_runs

from cobalt_lib import CobaltError, ConfigError, Store, load_config
from cobalt_lib.ops import check_select, run_query, store_schema
from cobalt_lib.store import TABLES


def test_every_stored_column_has_a_line_in_the_schema() -> None:
    schema = {t.name: t for t in store_schema()}
    assert set(schema) == set(TABLES)
    for table, columns in TABLES.items():
        assert [c.name for c in schema[table].columns] == [name for name, _ in columns]
        missing = [c.name for c in schema[table].columns if not c.description]
        assert not missing, f"describe {table}.{missing} in cobalt_lib/ops/_query.py COLUMN_NOTES"


@pytest.mark.parametrize("sql", ["SELECT 1", "  with a AS (SELECT 1 AS x) SELECT x FROM a;  ", "FROM runs",
                                 "VALUES (1)"])
def test_a_single_select_is_accepted(sql: str) -> None:
    assert check_select(sql)


@pytest.mark.parametrize(("sql", "message"), [
    ("", "empty"), ("DELETE FROM runs", "DELETE statement"), ("SELECT 1; SELECT 2", "2 statements"),
    ("ATTACH 'x.duckdb'", "ATTACH statement"), ("COPY runs TO 'x.csv'", "COPY statement"),
    ("SELEC 1", "does not parse"),
])
def test_anything_else_is_refused_with_what_to_do(sql: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_select(sql)


def test_a_query_reads_live_statuses_and_cannot_reach_files(project: Path) -> None:
    killed_and_live_runs(project)
    config = load_config()
    result = run_query(config, "SELECT run_id, status, tags FROM runs ORDER BY run_id")
    assert result.rows == [{"run_id": "r-killed", "status": "incomplete", "tags": []},
                           {"run_id": "r-live", "status": "running", "tags": []}]
    with pytest.raises(ConfigError, match="it reads a file, and only the store's tables"):
        run_query(config, f"SELECT * FROM read_text('{project / 'cobalt.toml'}')")
    with pytest.raises(ConfigError, match="limit must be between 1 and"):
        run_query(config, "SELECT 1", limit=0)
    assert Store(project / ".cobalt" / "cobalt.duckdb").get_run("r-killed")["status"] == "incomplete"  # type: ignore[index]


def test_no_store_yet_says_to_run_first(project: Path) -> None:
    with pytest.raises(CobaltError, match="run an experiment first"):
        run_query(load_config(), "SELECT 1")
