"""`cobalt store migrate` and `cobalt store copy`: a store's schema upgraded in place, and a history moved
from one store to another (a laptop's DuckDB file into the team's Postgres, or back).

A copy goes run by run, each in one transaction of the target that first deletes what the target holds
of that run: copied twice, a history is there once; stopped halfway, the runs copied are whole and
the next copy skips them (a run whose row there already says the same status and end). Labels and
calibrations, not a run's, go in when the target lacks them (by who labelled what, when; by id).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .._errors import ConfigError
from .._secrets import safe_url
from ..config._config import Config
from ..store._schema import SCHEMA_VERSION, ensure_tables
from ..store._store import TABLES, Store
from ..store._store_labels import LABEL_TABLES

#: A run's tables a copy moves (`segments` is the journal's own bookkeeping, of one store).
_RUN_TABLES = [t for t in TABLES if t != "segments"]
#: What says a label row is already in the target.
_LABEL_KEY = ("experiment", "evaluator", "item_id", "who", "set_at")


class Migrated(BaseModel):
    store: str
    before: int | None
    after: int


class Copied(BaseModel):
    source: str
    target: str
    runs: int
    skipped: int
    rows: int
    labels: int
    calibrations: int
    dataset_versions: int = 0


def migrate_store(config: Config) -> Migrated:
    """Upgrade the project's store to this cobalt's schema, in one transaction."""
    store = Store.for_config(config)
    with store.backend.connect(read_only=False, wait=store.lock_timeout) as con:  # not refused for its version
        found: list[int | None] = []
        store.backend.ensure(con, lambda c: found.append(ensure_tables(c, store.where, store.backend.name,
                                                                        migrate=True)))
    return Migrated(store=store.where, before=found[0] if found else None, after=SCHEMA_VERSION)


def open_store(location: str, config: Config) -> Store:
    """A store named on the command line: a Postgres URL, or a DuckDB file's path."""
    if "://" in location:
        return Store(location, home=config.output_path, lock_timeout=config.store.lock_timeout)
    path = Path(location).expanduser()
    if path.is_dir():
        path = path / "cobalt.duckdb"
    return Store(path, lock_timeout=config.store.lock_timeout)


def copy_store(config: Config, to: str, source: str | None = None) -> Copied:
    """Copy every run (its rows in every table), label and calibration of the source store (the project's
    by default) into `to`."""
    origin = open_store(source, config) if source else Store.for_config(config)
    target = open_store(to, config)
    if origin.key == target.key:
        raise ConfigError(f"--to names the store copied from ({target.where}); name another store.")
    if not origin.exists():
        raise ConfigError(f"There is no results store at {origin.where} to copy from.")
    target.ensure_schema()
    there = {r["run_id"]: r for r in target.query("SELECT run_id, status, finished_at FROM runs")}
    copied = Copied(source=_shown(origin), target=_shown(target), runs=0, skipped=0, rows=0, labels=0, calibrations=0)
    for run in origin.query("SELECT run_id, status, finished_at FROM runs ORDER BY started_at"):
        if (found := there.get(run["run_id"])) and (found["status"], found["finished_at"]) == (
                run["status"], run["finished_at"]) and run["status"] != "running":
            copied.skipped += 1
            continue
        copied.rows += _copy_run(origin, target, str(run["run_id"]))
        copied.runs += 1
    copied.labels, copied.calibrations = _copy_labels(origin, target)
    copied.dataset_versions = _copy_datasets(origin, target)
    return copied


def _copy_datasets(origin: Store, target: Store) -> int:
    """The dataset versions the target lacks (by dataset and version), each with its items, in one
    transaction each; a version the target numbers otherwise (pushed there meanwhile) is left alone."""
    if "dataset_versions" not in _tables(origin):
        return 0
    have = {(v["dataset"], v["version"]) for v in target.dataset_versions()}
    done = 0
    for version in origin.dataset_versions():
        if (version["dataset"], version["version"]) in have:
            continue
        items = origin.dataset_items(version["dataset"], version["version"])
        target.put_dataset_version(version, items)
        done += 1
    return done


def _copy_run(origin: Store, target: Store, run_id: str) -> int:
    batches = {table: origin.query(f"SELECT * FROM {table} WHERE run_id = ?", [run_id]) for table in _RUN_TABLES}
    target.write(batches, delete_run=run_id, delete_tables=_RUN_TABLES)
    return sum(len(rows) for rows in batches.values())


def _copy_labels(origin: Store, target: Store) -> tuple[int, int]:
    """The label and calibration rows the target lacks; labels keep their order (new seqs after the target's)."""
    present = _tables(origin)
    labels = origin.query("SELECT * FROM labels ORDER BY seq") if "labels" in present else []
    calibrations = origin.query("SELECT * FROM calibrations") if "calibrations" in present else []
    have = _tables(target)
    known = {_label_key(r) for r in target.query("SELECT * FROM labels")} if "labels" in have else set()
    new_labels = [r for r in labels if _label_key(r) not in known]
    added = target.add_labels(new_labels) if new_labels else 0
    ids = {r["calibration_id"] for r in target.query("SELECT calibration_id FROM calibrations")} \
        if "calibrations" in have else set()
    new = [r for r in calibrations if r["calibration_id"] not in ids]
    if new:
        _insert_calibrations(target, new)
    return added, len(new)


def _insert_calibrations(target: Store, rows: list[dict[str, Any]]) -> None:
    import json

    names = [n for n, _ in LABEL_TABLES["calibrations"]]
    with target._transaction(ensure_schema=True) as con:
        target._label_tables(con)
        con.executemany(f"INSERT INTO calibrations ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                        [[json.dumps(r[n]) if n == "figures" and r[n] is not None else r[n] for n in names]
                         for r in rows])


def _label_key(row: dict[str, Any]) -> tuple[str, ...]:
    from datetime import UTC, datetime

    def text(value: Any) -> str:  # a moment as the same text from either backend
        return value.astimezone(UTC).isoformat() if isinstance(value, datetime) else str(value)

    return tuple(text(row.get(n)) for n in _LABEL_KEY)


def _tables(store: Store) -> set[str]:
    with store.connect(read_only=True) as con:
        return set(store.backend.dialect.present_columns(con))


def _shown(store: Store) -> str:
    return safe_url(store.where) if "://" in store.where else store.where
