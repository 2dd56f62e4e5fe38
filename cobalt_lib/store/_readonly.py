"""The store opened for ad-hoc SQL (`cobalt_query`): read-only, bounded, and cut off from every other file.

An in-memory DuckDB connection attaches the store file READ_ONLY and names a view after each table
(`runs` reads live statuses: a `running` run whose lease expired is `incomplete`), so nothing is
copied. Then external access is switched off (no `read_csv('/etc/passwd')`, no other file, no
ATTACH) and the configuration locked, with the query's own `memory_limit` and `threads` and no
spilling to disk.

A read-only connection holds a shared lock on the file: a writer in another process waits (and
retries) while it is open. The caller keeps the `with` block short: `ops._query` interrupts the
query at its time limit, so the file is held at most that long (benchmarks/RESULTS.md, "cobalt_query").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._errors import StoreError
from ._liveness import gone, lease_seconds
from ._tables import TABLES, present_columns

if TYPE_CHECKING:
    from ._store import Store


@contextmanager
def read_only_connection(store: Store, *, memory_limit: str, threads: int) -> Iterator[Any]:
    """A connection whose tables are views over the store file, unable to write or reach files."""
    import duckdb

    if not store.exists():
        raise StoreError(f"No results store at {store.where} yet; run an experiment first.")
    con = duckdb.connect(":memory:", config={"memory_limit": memory_limit, "threads": threads,
                                             "temp_directory": "", "autoload_known_extensions": False,
                                             "autoinstall_known_extensions": False})
    try:
        store.attach_read_only(con)
        present = present_columns(con, "database_name = 'store'")
        ended = _ended(con, store) if "runs" in present else []
        for table in TABLES:
            con.execute(f"CREATE VIEW {table} AS {_select(table, present.get(table), ended)}")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        yield con
    finally:
        con.close()


@contextmanager
def read_only_postgres(store: Store, *, seconds: float) -> Iterator[Any]:
    """A team store's connection for one query: its own (never a pooled one), the `runs` table shadowed by a
    temporary view reading live statuses, then a READ ONLY transaction with a `statement_timeout` of
    `seconds` (Postgres stops the query itself). Closed after, the view with it."""
    from ._postgres import Connection

    with store.backend.connect(read_only=True, wait=store.lock_timeout) as pooled:
        schema = pooled.execute("SELECT current_schema()").fetchall()[0][0]
        running = pooled.execute("SELECT * FROM runs WHERE status = 'running'")
        names = [d[0] for d in running.description]
        ended = gone(store.key, [dict(zip(names, r, strict=True)) for r in running.fetchall()], store.now(),
                     lease_seconds())
    import psycopg

    raw = psycopg.connect(store.backend.url, autocommit=True, options="-c TimeZone=UTC",  # type: ignore[attr-defined]
                          application_name="cobalt_query")
    try:
        con = Connection(raw)
        # pg_temp comes first in the search path: `runs` in a query is this view
        con.execute(f'CREATE TEMP VIEW runs AS {_select("runs", {n for n, _ in TABLES["runs"]}, ended)}'
                    .replace("FROM store.main.runs", f'FROM "{schema}".runs'))
        con.execute("BEGIN READ ONLY")
        con.execute(f"SET LOCAL statement_timeout = {max(1, int(seconds * 1000))}")
        yield con
    finally:
        raw.close()


def _ended(con: Any, store: Store) -> list[str]:
    """The `running` runs no process works on any more (`_liveness.gone`): their holder's process is
    gone where this host can tell, else their lease ran out."""
    cursor = con.execute("SELECT * FROM store.main.runs WHERE status = 'running'")
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return gone(store.key, rows, store.now(), lease_seconds())


def _select(table: str, present: set[str] | None, ended: list[str]) -> str:
    """The view's query: the stored columns in the schema's order, NULL for a column an older store
    lacks, no rows for a table it lacks; `runs.status` as read live."""
    columns = []
    for name, kind in TABLES[table]:
        sql_type = kind.replace(" PRIMARY KEY", "")
        if present is None or name not in present:
            columns.append(f"CAST(NULL AS {sql_type}) AS {name}")
        elif table == "runs" and name == "status":
            columns.append(_live_status(ended))
        else:
            columns.append(name)
    source = f"store.main.{table}" if present is not None else "(SELECT 1) WHERE false"
    return f"SELECT {', '.join(columns)} FROM {source}"


def _live_status(ended: list[str]) -> str:
    if not ended:
        return "status"
    ids = ", ".join("'" + run_id.replace("'", "''") + "'" for run_id in ended)
    return f"CASE WHEN status = 'running' AND run_id IN ({ids}) THEN 'incomplete' ELSE status END AS status"
