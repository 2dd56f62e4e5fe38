"""The team store: the same tables in a Postgres database (`[store] url`, `COBALT_STORE_URL`; docs/store.md).

Many processes on many machines write at once: Postgres's row locks and MVCC do what DuckDB's one
writer did, so nothing here holds more than a transaction. Rows go in through `COPY` (the journal's
files, decoded and typed here), connections are kept open per process (a new one costs a TLS-less
SCRAM handshake, a few ms) and dropped whole when the server went away, so the next use opens anew.

A server that cannot be reached is `StoreAway` (a `StoreLocked`): the journal keeps the rows on disk,
as it does while another process holds a DuckDB file, and the next command puts them in. psycopg is
imported on first use: an embedded store never loads it.
"""

from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._errors import StoreAway, StoreError
from .._secrets import register_url, safe_url
from ._backend import Dialect, file_rows
from ._tables import COLUMNS, TABLES

#: The URL schemes that name a Postgres store.
SCHEMES = ("postgresql://", "postgres://")
#: The advisory lock that makes the schema one process at a time (an arbitrary constant: "cobalt").
_SCHEMA_LOCK = 0x636F62616C74
#: Team stores this process has seen made (a store's tables are never dropped by cobalt while it runs).
_MADE: set[str] = set()
#: Idle connections per (process, URL): a forked process never uses its parent's.
_IDLE: dict[tuple[int, str], list[Any]] = {}
_IDLE_LOCK = threading.Lock()
_KEPT = 8
#: The longest a connection is tried for (a DuckDB file's lock is waited on for `lock_timeout`).
_CONNECT_WAIT = 10.0
_KINDS = {table: {n: k.replace(" PRIMARY KEY", "") for n, k in cols} for table, cols in TABLES.items()}
_ARRAYS = {"INTEGER": "int[]", "BIGINT": "bigint[]", "VARCHAR": "text[]"}


def is_postgres(location: str) -> bool:
    return location.startswith(SCHEMES)


class PostgresDialect(Dialect):
    name = "postgres"
    row_lock = " FOR UPDATE"

    def column_type(self, kind: str) -> str:
        return kind.replace("DOUBLE", "DOUBLE PRECISION")

    def regexp_extract(self, text: str, pattern: str) -> str:
        return f"substring({text} from {pattern})"

    def present_columns(self, con: Any) -> dict[str, set[str]]:
        present: dict[str, set[str]] = {}
        for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                         "WHERE table_schema = current_schema()").fetchall():
            present.setdefault(table, set()).add(column)
        return present

    def insert_file(self, con: Any, table: str, path: Path, longest: int) -> None:
        """The file's JSON lines go in as they are, through COPY, and the server reads them into rows
        (`json_populate_record`): no row is decoded in Python, whose thread shares the GIL with the run."""
        con.execute("CREATE TEMP TABLE IF NOT EXISTS cobalt_lines (line text) ON COMMIT DELETE ROWS")
        # CSV whose quote and delimiter are control characters JSON text never holds raw: each line one value
        with con.raw.cursor() as cursor, cursor.copy(
                "COPY cobalt_lines (line) FROM STDIN WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')") as copy, \
                path.open("rb") as fh:
            for line in fh:
                copy.write(line.replace(b"\\u0000", b"\\ufffd"))  # Postgres text holds no NUL
        columns = ", ".join(COLUMNS[table])
        picked = ", ".join(f"r.{c}" for c in COLUMNS[table])
        con.execute(f"INSERT INTO {table} ({columns}) SELECT {picked} FROM cobalt_lines l, "
                    f"json_populate_record(NULL::{table}, l.line::json) r")
        con.execute("DELETE FROM cobalt_lines")

    def delete_again(self, con: Any, table: str, keys: Sequence[str], path: Path, longest: int) -> None:
        columns = ("run_id", *keys)
        rows = file_rows(path)
        arrays = [[_cell(r.get(c), _KINDS[table][c]) for r in rows] for c in columns]
        unnest = ", ".join(f"CAST(? AS {_ARRAYS[_KINDS[table][c]]})" for c in columns)
        con.execute(f"DELETE FROM {table} WHERE ({', '.join(columns)}) IN (SELECT * FROM unnest({unnest}))", arrays)

    def serialize(self, con: Any, name: str) -> None:
        con.execute("SELECT pg_advisory_xact_lock(hashtext(?))", [name])

    def data_error(self, exc: BaseException) -> bool:
        import psycopg

        return isinstance(exc, psycopg.DataError | psycopg.IntegrityError)


POSTGRES = PostgresDialect()


def _cell(value: Any, kind: str) -> Any:
    """A value of a journal row (decoded JSON) as COPY takes it for a column of type `kind`."""
    if value is None:
        return None
    if kind == "JSON":
        return json.dumps(value, ensure_ascii=False)
    if kind == "VARCHAR":
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text.replace("\x00", "\ufffd")  # Postgres text cannot hold NUL (DuckDB's can)
    if kind in ("INTEGER", "BIGINT") and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "DOUBLE" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(float(value)) else None
    return value


@lru_cache(maxsize=512)
def _translated(sql: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """`sql` cut at each `?` or `$n` placeholder (with `%` doubled, as psycopg's `%s` style needs), and
    which parameter each placeholder takes."""
    parts: list[str] = []
    out: list[str] = []
    order: list[int] = []
    quoted = False
    plain = 0
    i = 0
    while i < len(sql):
        ch = sql[i]
        if ch == "'":
            quoted = not quoted
        if ch == "%":
            out.append("%%")
        elif not quoted and ch == "?":
            parts.append("".join(out))
            out = []
            order.append(plain)
            plain += 1
        elif not quoted and ch == "$" and i + 1 < len(sql) and sql[i + 1].isdigit():
            j = i + 1
            while j < len(sql) and sql[j].isdigit():
                j += 1
            parts.append("".join(out))
            out = []
            order.append(int(sql[i + 1:j]) - 1)
            i = j
            continue
        else:
            out.append(ch)
        i += 1
    parts.append("".join(out))
    return tuple(parts), tuple(order)


def _placeholder(value: Any) -> str:
    """psycopg's placeholder for a value: a list of strings typed `text[]` (psycopg sends strings untyped,
    and `unnest` of an untyped array is ambiguous)."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "%s::text[]"
    return "%s"


class Connection:
    """A psycopg connection that takes the store's SQL (`?` placeholders) and says its dialect."""

    dialect: Dialect = POSTGRES

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        cursor = self.raw.cursor()
        if not params:
            cursor.execute(sql)
            return cursor
        parts, order = _translated(sql)
        values = [params[n] for n in order]
        text = parts[0] + "".join(_placeholder(v) + part for v, part in zip(values, parts[1:], strict=True))
        cursor.execute(text, values)
        return cursor

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        parts, order = _translated(sql)
        with self.raw.cursor() as cursor:
            cursor.executemany("%s".join(parts), [[row[n] for n in order] for row in rows])


class PostgresBackend:
    """A Postgres database; `home` is the project's output directory, where the journal waits."""

    name = "postgres"
    dialect: Dialect = POSTGRES

    def __init__(self, url: str, home: Path) -> None:
        register_url(url)  # its password is scrubbed from every message, log and stored text
        self.url = url
        self.home = Path(home)
        self.where = safe_url(url)
        self.key = self.where
        self._made = False

    def exists(self) -> bool:
        if self._made or self.key in _MADE:
            return True
        with self.connect(read_only=True, wait=0.0) as con:
            self._made = bool(con.execute("SELECT to_regclass('runs') IS NOT NULL").fetchall()[0][0])
        if self._made:
            _MADE.add(self.key)
        return self._made

    def schema_key(self) -> tuple[str, int] | None:
        return (self.key, 0)

    def ensure(self, con: Any, make: Any) -> None:
        con.execute("BEGIN")
        try:
            con.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
            make(con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        self._made = True

    @contextmanager
    def connect(self, *, read_only: bool, wait: float) -> Iterator[Any]:
        import psycopg

        raw = self._checkout(wait)
        try:
            yield Connection(raw)
        except psycopg.OperationalError as exc:
            self.forget()  # the server went away: every idle connection of this process to it is dead too
            raw.close()
            raise StoreAway(self.where, _said(exc)) from None
        except BaseException:
            self._checkin(raw)
            raise
        self._checkin(raw)

    def forget(self) -> None:
        with _IDLE_LOCK:
            for raw in _IDLE.pop((os.getpid(), self.url), []):
                raw.close()

    def _checkout(self, wait: float) -> Any:
        import psycopg
        from psycopg.types.string import TextLoader

        with _IDLE_LOCK:
            idle = _IDLE.get((os.getpid(), self.url))
            if idle:
                return idle.pop()
        # A server that refuses connections is down, not busy: tried for a few seconds, not a lock's wait.
        deadline = time.monotonic() + min(wait, _CONNECT_WAIT)
        delay = 0.05
        while True:
            try:
                raw = psycopg.connect(self.url, autocommit=True, connect_timeout=max(2, math.ceil(min(wait, 10))),
                                      options="-c TimeZone=UTC", application_name="cobalt")
                # JSON columns come back as their text, as DuckDB gives them (`_tables.decode` parses them)
                raw.adapters.register_loader("json", TextLoader)
                return raw
            except psycopg.OperationalError as exc:
                if _refused_login(exc):
                    raise StoreError(f"The results store {self.where} refused the login ({_said(exc)}); check the "
                                     "user and password (the URL, PGPASSWORD or ~/.pgpass).") from None
                if time.monotonic() > deadline:
                    raise StoreAway(self.where, _said(exc)) from None
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)

    def _checkin(self, raw: Any) -> None:
        from psycopg.pq import TransactionStatus

        if raw.closed or raw.info.transaction_status != TransactionStatus.IDLE:
            raw.close()
            return
        with _IDLE_LOCK:
            idle = _IDLE.setdefault((os.getpid(), self.url), [])
            if len(idle) < _KEPT:
                idle.append(raw)
                return
        raw.close()


def _refused_login(exc: BaseException) -> bool:
    text = str(exc)
    return "password authentication failed" in text or ("database" in text and "does not exist" in text)


def _said(exc: BaseException) -> str:
    """What libpq said, its first line, without the server's address (the message names the URL):
    `connection to server at "h", port 5432 failed: Connection refused` says `Connection refused`."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0].rsplit("failed: ", 1)[-1]
