"""The seam between the store and its database: DuckDB embedded (`_duckdb`) or a Postgres server (`_postgres`).

`Store` speaks one SQL to both, the part the two share (`IN (SELECT unnest(?))`, `RETURNING`,
`IS NOT DISTINCT FROM`, `?` placeholders: the Postgres connection turns them into its own). What
differs goes through a `Dialect`: column types, how a file of rows goes in (DuckDB's JSON reader,
Postgres's COPY), a regexp extraction, the row lock a fenced write takes, which errors are the rows'
own. A connection says its dialect (`dialect_of`); DuckDB's, a C object, is the default.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol


class Dialect:
    """DuckDB's SQL; `_postgres.PostgresDialect` overrides what Postgres says otherwise."""

    name = "duckdb"
    #: Appended to the SELECT a fenced write checks its claim with: Postgres locks the row, so a claim
    #: taken by another process between the check and the commit waits for this transaction.
    row_lock = ""

    def column_type(self, kind: str) -> str:
        """A `_tables.TABLES` type as this database spells it."""
        return kind

    def regexp_extract(self, text: str, pattern: str) -> str:
        """SQL for the first group of the first match of `pattern` (an SQL string literal) in `text`."""
        return f"regexp_extract({text}, {pattern}, 1)"

    def present_columns(self, con: Any) -> dict[str, set[str]]:
        """`{table: {column}}` of the store's own tables."""
        from ._tables import present_columns

        return present_columns(con, "schema_name = 'main' AND database_name = current_database()")

    def insert_file(self, con: Any, table: str, path: Path, longest: int) -> None:
        """Insert the rows of a file from `_tables.write_rows` into `table`."""
        from ._tables import insert_file

        insert_file(con, table, path, longest)

    def delete_again(self, con: Any, table: str, keys: Sequence[str], path: Path, longest: int) -> None:
        """Delete the rows of `table` that the file's rows would write again (same run and `keys`)."""
        from ._tables import read_rows_sql

        match = " AND ".join(f"f.{c} = t.{c}" for c in ("run_id", *keys))
        con.execute(f"DELETE FROM {table} t WHERE EXISTS (SELECT 1 FROM ({read_rows_sql(table, longest)}) f "
                    f"WHERE {match})", [str(path)])

    def serialize(self, con: Any, name: str) -> None:
        """Inside a transaction: wait for every other transaction that serialized on `name` (one writer
        of a DuckDB file at a time already)."""

    def data_error(self, exc: BaseException) -> bool:
        """An error the rows' values cause (a value no column can take), not the disk, a lock or the store."""
        import duckdb

        kinds = (duckdb.ConversionException, duckdb.InvalidInputException, duckdb.ConstraintException,
                 duckdb.OutOfRangeException, duckdb.TypeMismatchException)
        return isinstance(exc, kinds) and "No space left" not in str(exc)


DUCKDB = Dialect()


def dialect_of(con: Any) -> Dialect:
    """The dialect of an open connection (a Postgres connection carries its own)."""
    found = getattr(con, "dialect", None)
    return found if isinstance(found, Dialect) else DUCKDB


def file_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a file from `_tables.write_rows`."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class Backend(Protocol):
    """Where the store's tables live, and how a connection to them is opened."""

    #: `duckdb` or `postgres`.
    name: str
    dialect: Dialect
    #: The store's identity in this process (claims, caches): the file's absolute path, or the URL.
    key: str
    #: What messages name: the file, or the URL without its password.
    where: str
    #: The local directory beside it: journals (`_journal`), whole values (`_values`), temporary files.
    home: Path

    def exists(self) -> bool:
        """Whether the store was made (a file, a database holding cobalt's tables)."""
        ...

    def connect(self, *, read_only: bool, wait: float) -> AbstractContextManager[Any]:
        """A short connection, tried again for up to `wait` seconds while the store is held or away
        (then `StoreLocked`)."""
        ...

    def schema_key(self) -> tuple[str, int] | None:
        """What this process's schema check is remembered by: a store made again is a new one."""
        ...

    def ensure(self, con: Any, make: Any) -> None:
        """Run `make(con)` (tables, columns, the schema version) as this database needs: Postgres in a
        transaction under an advisory lock, as many machines may make it at once."""
        ...
