"""The store's schema version, recorded in the store itself (`cobalt_schema`), and what a cobalt does
with a store of another version.

Version 1 is every store made before versions were recorded (its tables, no `cobalt_schema`);
version 2 records itself. A store newer than this cobalt is refused with one sentence naming both
versions. An older one: the embedded file is upgraded at once (one process owns it, as before); a
team store only by `cobalt store migrate` (other machines may run an older cobalt on it), unless it
holds no runs yet. An upgrade adds the missing tables and columns and records the version, in one
transaction.
"""

from __future__ import annotations

from typing import Any

from .._errors import StoreError
from ._backend import dialect_of
from ._tables import make_tables

#: This cobalt's schema version.
SCHEMA_VERSION = 2
#: The table the version is recorded in (not a table of runs: `TABLES` leaves it out).
VERSION_TABLE = "cobalt_schema"


def stored_version(con: Any, present: dict[str, set[str]]) -> int | None:
    """The store's schema version; None for a store with no tables yet."""
    if VERSION_TABLE in present:
        found = con.execute(f"SELECT max(version) FROM {VERSION_TABLE}").fetchall()
        if found and found[0][0] is not None:
            return int(found[0][0])
    return 1 if "runs" in present else None


def ensure_tables(con: Any, where: str, backend: str, *, migrate: bool = False) -> int | None:
    """Make the tables (or check them), as the store's version allows; returns the version found
    before (None for a new store)."""
    present = dialect_of(con).present_columns(con)
    found = stored_version(con, present)
    if found is not None and found > SCHEMA_VERSION:
        raise StoreError(f"The results store {where} has schema version {found}, newer than this cobalt's "
                         f"({SCHEMA_VERSION}); upgrade cobalt (`pip install -U cobalt-evals`) to use it.")
    if found == SCHEMA_VERSION and _complete(present):
        return found
    if found is not None and found < SCHEMA_VERSION and backend != "duckdb" and not migrate and _has_runs(con):
        raise StoreError(f"The results store {where} has schema version {found}, older than this cobalt's "
                         f"({SCHEMA_VERSION}); run `cobalt store migrate` to upgrade it (every cobalt writing it "
                         "must then be this version or newer).")
    make_tables(con, present)
    _label_tables(con)
    kind = dialect_of(con).column_type
    con.execute(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER, cobalt VARCHAR, "
                f"migrated_at {kind('TIMESTAMPTZ')})")
    if found != SCHEMA_VERSION:
        con.execute(f"INSERT INTO {VERSION_TABLE} VALUES (?, ?, current_timestamp)", [SCHEMA_VERSION, _cobalt()])
    return found


def check_version(con: Any, where: str) -> None:
    """Refuse a team store whose schema this cobalt cannot use: newer than its own, or older with runs in
    it (`cobalt store migrate` upgrades it); an empty one is made on the first write."""
    present = dialect_of(con).present_columns(con)
    found = stored_version(con, present)
    if found is not None and found > SCHEMA_VERSION:
        raise StoreError(f"The results store {where} has schema version {found}, newer than this cobalt's "
                         f"({SCHEMA_VERSION}); upgrade cobalt (`pip install -U cobalt-evals`) to use it.")
    if found is not None and found < SCHEMA_VERSION and _has_runs(con):
        raise StoreError(f"The results store {where} has schema version {found}, older than this cobalt's "
                         f"({SCHEMA_VERSION}); run `cobalt store migrate` to upgrade it (every cobalt writing it "
                         "must then be this version or newer).")


def _label_tables(con: Any) -> None:
    """The label and calibration tables (not a run's: `TABLES` leaves them out), made with the others, so a
    team store read before anyone labelled has them."""
    from ._store_datasets import DatasetRows
    from ._store_labels import LabelRows

    LabelRows._label_tables(None, con)  # type: ignore[arg-type]
    DatasetRows._dataset_tables(None, con)  # type: ignore[arg-type]


def _complete(present: dict[str, set[str]]) -> bool:
    from ._store_labels import LABEL_TABLES
    from ._tables import COLUMNS, DATASET_TABLES

    wanted = {**COLUMNS, **{table: [n for n, _ in cols] for table, cols in {**LABEL_TABLES, **DATASET_TABLES}.items()}}
    return all(table in present and set(columns) <= present[table] for table, columns in wanted.items())


def _has_runs(con: Any) -> bool:
    return bool(con.execute("SELECT EXISTS (SELECT 1 FROM runs)").fetchall()[0][0])


def _cobalt() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cobalt-evals")
    except PackageNotFoundError:
        return "unknown"


def store_figures(store: Any) -> tuple[int | None, int]:
    """The store's schema version and how many runs it holds (None and 0 for a store not made yet)."""
    if not store.exists():
        return None, 0
    with store.connect(read_only=True) as con:
        present = dialect_of(con).present_columns(con)
        version = stored_version(con, present)
        runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0] if "runs" in present else 0
    return version, int(runs)
