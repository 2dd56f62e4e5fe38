"""`cobalt_query` on a team store (a real Postgres, tests/pg.py): cobalt's tables only, live statuses, a READ
ONLY transaction Postgres stops at the time limit, the same caps; `cobalt://schema` names the dialect."""

from __future__ import annotations

from pathlib import Path

import pytest

from cobalt_lib import ConfigError, Store, load_config
from cobalt_lib.ops._query import run_query, store_dialect

pytestmark = pytest.mark.slow


@pytest.fixture
def team(project: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("COBALT_STORE_URL", pg_url)
    store = Store.for_config(load_config())
    store.start_run({"run_id": "q1", "experiment": "qa", "started_at": "2026-01-01T00:00:00+00:00", "tags": [],
                     "config": {}, "lease_until": "2026-01-01T00:01:00+00:00"})
    store.write({"outputs": [{"run_id": "q1", "item_index": i, "run_index": 0, "input": {"q": i}, "output": "x" * 50,
                              "status": "ok"} for i in range(30)]})
    return store


def test_a_select_reads_the_store_with_live_statuses_and_the_caps(team: Store) -> None:
    config = load_config()
    assert store_dialect(config) == "postgres"
    found = run_query(config, "SELECT run_id, status FROM runs")
    assert found.rows == [{"run_id": "q1", "status": "incomplete"}]  # its lease ran out long ago
    found = run_query(config, "WITH o AS (SELECT * FROM outputs) SELECT item_index, input FROM o ORDER BY 1", limit=5)
    assert [r["input"] for r in found.rows] == [{"q": i} for i in range(5)] and found.truncated


@pytest.mark.parametrize(("sql", "said"), [
    ("SELECT * FROM pg_catalog.pg_roles", "reads pg_catalog.pg_roles; only the store's tables"),
    ("SELECT * FROM pg_tables", "reads pg_tables"),
    ("SELECT * FROM information_schema.tables", "reads information_schema.tables"),
    ("SELECT pg_read_file('/etc/passwd')", "calls pg_read_file"),
    ("SELECT * FROM generate_series(1, 3)", "calls a table function"),
    ("DELETE FROM runs", "Only a single SELECT"),
])
def test_anything_but_reading_the_store_is_refused(team: Store, sql: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(".", r"\.")):
        run_query(load_config(), sql)
    assert team.query("SELECT count(*) AS n FROM runs") == [{"n": 1}]


def test_the_transaction_is_read_only_and_stopped_at_its_time_limit(team: Store) -> None:
    with pytest.raises(ConfigError, match="ran for more than"):
        run_query(load_config(), "SELECT count(*) FROM outputs a, outputs b, outputs c, outputs d, outputs e",
                  seconds=0.2)
    with team._transaction() as con:
        con.execute("CREATE SEQUENCE IF NOT EXISTS counter")
    with pytest.raises(ConfigError, match="cannot execute nextval\\(\\) in a read-only transaction"):
        run_query(load_config(), "SELECT nextval('counter') FROM outputs")
