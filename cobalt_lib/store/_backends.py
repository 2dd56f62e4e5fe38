"""Which backend a store location names: a `postgresql://` URL is the team store, anything else a DuckDB file."""

from __future__ import annotations

from pathlib import Path

from .._errors import ConfigError
from ._backend import Backend
from ._duckdb import DuckDBBackend
from ._postgres import SCHEMES, PostgresBackend, is_postgres


def backend_for(location: Path | str, home: Path | None = None) -> Backend:
    """The backend of a DuckDB file path or a Postgres URL; `home` is where a database's journal waits
    (the project's output directory), required for a URL."""
    if isinstance(location, str) and "://" in location:
        if not is_postgres(location):
            raise ConfigError(f"The store URL {location.split('://', 1)[0]}://... is not a Postgres URL; write "
                              f"{SCHEMES[0]}user@host:5432/database, or leave `[store] url` unset for the "
                              "embedded store.")
        if home is None:
            raise ValueError("a Postgres store needs the local directory its journal waits in")
        return PostgresBackend(location, home)
    return DuckDBBackend(Path(location))
