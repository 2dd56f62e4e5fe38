"""The store: `runs`, `outputs`, `scores`, `aggregates`, `verdicts`, every row keyed by run_id.

It lives in a DuckDB file (`_duckdb`, the embedded default) or a Postgres database (`_postgres`, the
team store), behind one seam (`_backend`). Every connection is short (open, one transaction, close):
DuckDB admits one writing process, and a reader's lock blocks a writer too. Rows arrive from the
run as items finish and a background thread (`_writer.BatchWriter`) writes them in batches, each in one
transaction: a crash loses at most the batch in flight, and no reader ever sees half of one. The
tables themselves are in `_tables`, what makes a run live in `_liveness`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import ConfigError, LeaseLost, StoreError
from ._backend import Backend
from ._backends import backend_for
from ._duckdb import OPENED, STORE_FILE
from ._liveness import (
    Claim,
    Clock,
    claimed,
    fences,
    gone,
    hold,
    holder_fields,
    lease_end,
    lease_seconds,
    live,
    utc_now,
)
from ._schema import check_version, ensure_tables
from ._segment import apply, check_fence, run_ids, seal
from ._store_batches import JudgeBatches
from ._store_dagster import DagsterRuns
from ._store_datasets import DatasetRows
from ._store_history import RunPages
from ._store_identity import RunIdentities
from ._store_items import ItemReads
from ._store_labels import LabelRows
from ._store_spans import SpanRows
from ._store_traces import TraceRows
from ._store_variants import VariantRuns
from ._tables import TABLES, decode
from ._values import MAX_VALUE_BYTES, VALUES_DIR, restore

if TYPE_CHECKING:
    from ..config._config import Config

#: Stores whose schema this process has already checked: a run opens many Store objects.
_SCHEMA_READY: set[tuple[str, int]] = set()
#: Team stores whose schema version this process has found usable.
_VERSION_CHECKED: set[str] = set()


class Writer(Protocol):
    """What takes a transaction's rows: the store itself, or a journal (`_journal.Journal`) on its way there."""

    def write(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
              delete_tables: Sequence[str] = (), add_work: tuple[str, float] | None = None) -> float | None: ...


#: Per thread, the read-only connection each open `Store.reading()` block shares, by store.
_SHARED = threading.local()


def _shared() -> dict[str, Any]:
    held: dict[str, Any] | None = getattr(_SHARED, "held", None)
    if held is None:
        held = _SHARED.held = {}
    return held


class Store(DagsterRuns, DatasetRows, JudgeBatches, LabelRows, SpanRows, TraceRows, VariantRuns, RunIdentities,
            RunPages, ItemReads):
    """The DuckDB file under `.cobalt/`, and the one place that speaks SQL to it: every read and write
    of the tables is a method here. Every method opens its own short connection, except that
    reads inside a `reading()` block share the block's."""

    def __init__(self, path: Path | str, *, home: Path | None = None, lock_timeout: float = 60.0,
                 now: Clock = utc_now, max_value_bytes: int = MAX_VALUE_BYTES) -> None:
        #: Where the store is: a DuckDB file's path, or a Postgres URL (`_backends`).
        self.location = path
        self.backend: Backend = backend_for(path, home)
        #: The local directory beside the store: its journal, whole values, temporary files.
        self.home = self.backend.home
        #: The store's identity in this process (claims, caches); `where` what messages name (no password).
        self.key = self.backend.key
        self.where = self.backend.where
        #: The DuckDB file (a Postgres store has none: a name under `home` that is never made).
        self.path = Path(path) if self.backend.name == "duckdb" else self.home / "postgres-store"
        self.lock_timeout = lock_timeout
        #: The clock leases are written and judged by (tests inject one).
        self.now = now
        #: A value longer than this (UTF-8 bytes) is stored cut, whole in a side file (`_values`).
        self.max_value_bytes = max_value_bytes

    @classmethod
    def for_config(cls, config: Config) -> Store:
        """The project's store: the team store at `[store] url` (or COBALT_STORE_URL) when set, else
        `cobalt.duckdb` under the config's `output_dir`; with its `[store]` settings."""
        url = config.store.team_url()
        return cls(url or config.output_path / STORE_FILE, home=config.output_path,
                   lock_timeout=config.store.lock_timeout, max_value_bytes=config.store.max_value_bytes)

    def like(self, **settings: Any) -> Store:
        """Another Store object on the same store (`lock_timeout`, `now`... as given, else this one's)."""
        kept = {"lock_timeout": self.lock_timeout, "now": self.now, "max_value_bytes": self.max_value_bytes}
        return Store(self.location, home=self.home, **{**kept, **settings})

    def exists(self) -> bool:
        """Whether the store was made: its file, or cobalt's tables in the database."""
        return self.backend.exists()

    @property
    def values_dir(self) -> Path:
        """Where the whole values of cut ones are kept (`_values`)."""
        return self.home / VALUES_DIR

    @staticmethod
    def connections_opened() -> int:
        """How many DuckDB connections this process has opened to store files so far (each open costs
        9-20 ms): what tests and profiles count."""
        return OPENED[0]

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Every read of this store file in the block, in this thread, shares one read-only connection
        (where each would open its own). For a few reads in a row only: no await, no user code and no
        write inside (a write raises), as no other process can write while the block lasts."""
        held = _shared()
        key = self.key
        if key in held or not self.exists():  # nested, or nothing to read: each read as usual
            yield
            return
        self._take_waiting()  # the one write a read may need, before the block's reads (which cannot write)
        with self.connect(read_only=True) as con:
            held[key] = con
            try:
                yield
            finally:
                del held[key]

    @contextmanager
    def connect(self, *, read_only: bool = False, wait: float | None = None) -> Iterator[Any]:
        """A short connection, retried while another process holds the file (or the database is away), for
        up to `wait` seconds (default `lock_timeout`; then StoreLocked). Inside `reading()`, the block's."""
        held = getattr(_SHARED, "held", None)
        if held and (shared := held.get(self.key)) is not None:
            if not read_only:
                raise RuntimeError(f"A write to {self.where} inside Store.reading(): end the block first.")
            yield shared
            return
        with self.backend.connect(read_only=read_only, wait=self.lock_timeout if wait is None else wait) as con:
            if self.backend.name != "duckdb" and self.key not in _VERSION_CHECKED:
                check_version(con, self.where)  # a team store another cobalt may have moved on (or not yet)
                _VERSION_CHECKED.add(self.key)
            yield con

    def hold_open(self, *, wait: float = 0.0) -> Callable[[], None] | None:
        """Keep a DuckDB store file open in this process until the returned function is called: the
        connections of this process share it meanwhile, so a write opens nothing (`_duckdb.hold`); other
        processes wait until it is released. None when the file is held elsewhere past `wait` seconds, and
        for a team store, whose connections are kept open already."""
        hold = getattr(self.backend, "hold", None)
        if hold is None:
            return None
        try:
            release: Callable[[], None] = hold(wait)
        except StoreError:
            return None
        return release

    def ensure_schema(self) -> None:
        """Create the tables, and add the columns an older store lacks (checked once per process)."""
        if self.backend.schema_key() in _SCHEMA_READY:
            return
        with self.connect() as con:
            self._ensure(con)
        self._schema_ready()

    def _ensure(self, con: Any) -> None:
        """`ensure_schema` on an open connection: one catalogue query when the schema is current. The
        caller marks the schema ready (`_schema_ready`) once this has committed."""
        if self.backend.schema_key() in _SCHEMA_READY:
            return
        self.backend.ensure(con, lambda con: ensure_tables(con, self.where, self.backend.name))

    def _schema_ready(self) -> None:
        if (key := self.backend.schema_key()) is not None:
            _SCHEMA_READY.add(key)

    @contextmanager
    def _transaction(self, *, ensure_schema: bool = False, wait: float | None = None) -> Iterator[Any]:
        """A short connection holding one transaction: committed when the block ends, rolled back if it raises.

        With `ensure_schema`, the schema is checked first on the same connection, outside the
        transaction: tables made for a batch that then fails stay made. `wait`: as `connect`'s."""
        with self.connect(wait=wait) as con:
            if ensure_schema:
                self._ensure(con)
                self._schema_ready()
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                # The transaction's own error is the one to report: a ROLLBACK failing too (a full disk)
                # says less, and DuckDB drops the transaction with the connection anyway.
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                raise

    def write(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
              delete_tables: Sequence[str] = (), add_work: tuple[str, float] | None = None) -> float | None:
        """Insert rows into several tables in one transaction (optionally replacing a run's rows).

        `add_work=(run_id, ms)` also adds to that run's working time, in the same transaction, and
        returns the run's new total (None when the run has no row). Journals that ended processes left
        behind (`_journal`) go in first. The rows of a run this process claimed go in only while it
        holds the claim (else LeaseLost)."""
        return self._write(batches, delete_run=delete_run, delete_tables=delete_tables, add_work=add_work)

    def _write(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
               delete_tables: Sequence[str] = (), add_work: tuple[str, float] | None = None,
               claim: tuple[str, str] | None = None) -> float | None:
        """`write`; with `claim=(run_id, token)`, the run is first claimed for this process, in the same
        transaction (`_claim`), its rows written unfenced."""
        from ._journal import replay_left

        replay_left(self)
        self.home.mkdir(parents=True, exist_ok=True)
        fence = {} if claim else fences(self.key, run_ids(batches, delete_run, add_work))
        with tempfile.TemporaryDirectory(prefix=".write-", dir=self.home) as tmp:
            segment = seal(Path(tmp), "rows", batches, values=self.values_dir, limit=self.max_value_bytes,
                           delete_run=delete_run, delete_tables=delete_tables, add_work=add_work, fence=fence)
            with self._transaction(ensure_schema=True) as con:
                if claim is None:
                    return apply(con, segment)
                epoch = self._claim(con, *claim)
                done = apply(con, segment)
                con.execute("UPDATE runs SET lease_token = ?, lease_epoch = ? WHERE run_id = ?",
                            [claim[1], epoch, claim[0]])
            hold(self.key, claim[0], Claim(claim[1], epoch))
            return done

    def delete_items(self, run_id: str, table: str, keys: Sequence[tuple[int, int]]) -> None:
        """Delete the rows of some (item_index, run_index) pairs of a run, in one transaction."""
        with self._transaction() as con:
            for index, run_index in keys:
                con.execute(f"DELETE FROM {table} WHERE run_id = ? AND item_index = ? AND run_index = ?",
                            [run_id, index, run_index])

    def start_run(self, row: dict[str, Any], *, identity: dict[str, Any] | None = None, claim: bool = False) -> None:
        """Write the run's row as `running` with a fresh lease (a resumed run keeps the working time
        already stored), and its evaluation `identity` in the same transaction when given (a new run's).

        With `claim`, this process takes the run (`_claim`: refused with one sentence while another
        process works on it) and names itself its holder (`_liveness`); its later writes of the run's
        rows are fenced by the claim. Without, `pid` and `host` are for people to read, and liveness is
        the lease alone (a Dagster run, whose steps run in many processes)."""
        row = {"pid": os.getpid(), "host": socket.gethostname(), "status": "running",
               "lease_until": lease_end(self.now(), lease_seconds()).isoformat(),
               **(holder_fields() if claim else {}), **row}
        batches: dict[str, list[dict[str, Any]]] = {"runs": [row]}
        if identity is not None:
            batches["identities"] = [{"run_id": row["run_id"], "identity": identity}]
        self._write(batches, delete_run=row["run_id"], delete_tables=list(batches),
                    claim=(row["run_id"], secrets.token_hex(16)) if claim else None)

    def _claim(self, con: Any, run_id: str, token: str) -> int:
        """Inside the caller's transaction: take run `run_id` for this process, one compare-and-set on its
        lease as read here (so a renewal or another claim in between makes it fail), and return the new
        epoch. Refused (ConfigError) while another process works on the run, or once it is completed."""
        columns = ["run_id", "experiment", "status", "started_at", "lease_until", "lease_token", "lease_epoch",
                   "pid", "host", "holder"]
        found = con.execute(f"SELECT {', '.join(columns)} FROM runs WHERE run_id = ?", [run_id]).fetchall()
        if not found:
            return 1
        row = dict(zip(columns, found[0], strict=True))
        if row["status"] == "completed":
            raise ConfigError(f"Run {run_id} of {row['experiment']!r} is already completed; there is nothing to "
                              "resume.")
        if row["status"] == "running" and live(self.key, row, self.now(), lease_seconds()):
            raise ConfigError(held_message(row))
        taken = con.execute(
            "UPDATE runs SET lease_epoch = ?, lease_token = ? WHERE run_id = ? AND status = ? "
            "AND lease_epoch IS NOT DISTINCT FROM ? AND lease_token IS NOT DISTINCT FROM ? "
            "AND lease_until IS NOT DISTINCT FROM ? RETURNING lease_epoch",
            [(row["lease_epoch"] or 0) + 1, token, run_id, row["status"], row["lease_epoch"], row["lease_token"],
             row["lease_until"]]).fetchall()
        if not taken:
            raise ConfigError(held_message(row, just=True))
        return int(taken[0][0])

    def renew_lease(self, run_id: str, seconds: float) -> bool:
        """Extend a `running` run's lease to `seconds` from now, in one short write; False when the run
        is not running here (finished, or no such row). A busy store raises StoreError after
        `lock_timeout`. A run this process claimed is renewed only while the claim holds: else LeaseLost
        (and the claim is marked lost, which stops the process's writes)."""
        claim = claimed(self.key, run_id)
        fence = " AND lease_token = ?" if claim is not None else ""
        params = [lease_end(self.now(), seconds), run_id, *([claim.token] if claim is not None else [])]
        with self.connect() as con:
            found = con.execute(f"UPDATE runs SET lease_until = ? WHERE run_id = ? AND status = 'running'{fence} "
                                "RETURNING run_id", params).fetchall()
            if found or claim is None:
                return bool(found)
            try:
                check_fence(con, run_id, claim.epoch, claim.token)
            except LeaseLost as lost:
                claim.lost = str(lost)
                raise
        return False

    def finish_run(self, run_row: dict[str, Any], aggregates: list[dict[str, Any]],
                   verdicts: list[dict[str, Any]], *, via: Writer | None = None) -> None:
        """Replace the run row and its aggregates and verdicts in one transaction (through `via`, a
        journal, when given)."""
        run_id = run_row["run_id"]
        row = {"pid": os.getpid(), "host": socket.gethostname(), **run_row}
        if (claim := claimed(self.key, run_id)) is not None:  # the row keeps the claim: a resume takes it next
            row.update(holder_fields(), lease_token=claim.token, lease_epoch=claim.epoch)
        (self if via is None else via).write({"runs": [row], "aggregates": aggregates, "verdicts": verdicts},
                            delete_run=run_id, delete_tables=["runs", "aggregates", "verdicts"])

    def add_work(self, run_id: str, ms: float) -> float | None:
        """Add `ms` milliseconds to the run's working time (each stage does when it stops, even
        interrupted); returns the new total, None when the run has no row."""
        return self.write({}, add_work=(run_id, ms))

    def worked_ms(self, run_id: str) -> float:
        """The run's working time so far, summed over every process that worked on it (0 if unknown)."""
        import duckdb

        if not self.exists():
            return 0.0
        try:
            rows = self.query("SELECT worked_ms FROM runs WHERE run_id = ?", [run_id])
        except (duckdb.CatalogException, duckdb.BinderException):  # no tables yet, or a store older than the column
            return 0.0
        return float(rows[0]["worked_ms"] or 0.0) if rows else 0.0

    def delete_runs(self, run_ids: Sequence[str]) -> None:
        """Every row of these runs, in every table, in one transaction."""
        if not run_ids or not self.exists():
            return
        with self._transaction() as con:
            for table in TABLES:
                con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT unnest(?))", [list(run_ids)])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Rows of a read-only query as dicts (JSON columns decoded)."""
        with self.connect(read_only=True) as con:
            cursor = con.execute(sql, list(params))
            names = [d[0] for d in cursor.description]
            return [decode(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]

    def runs(self, experiment: str | None = None, limit: int | None = None, *,
             missing_ok: bool = False) -> list[dict[str, Any]]:
        """Runs newest first; a `running` run whose lease expired reads as `incomplete`.

        A store not made yet is a StoreError, or no runs with `missing_ok`."""
        sql = "SELECT * FROM runs" + (" WHERE experiment = ?" if experiment else "")
        sql += " ORDER BY started_at DESC" + (f" LIMIT {int(limit)}" if limit else "")
        return self._runs(sql, [experiment] if experiment else [], missing_ok=missing_ok)

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run's row with its live status; None when there is no such run (or no store yet)."""
        found = self._runs("SELECT * FROM runs WHERE run_id = ?", [run_id], missing_ok=True)
        return found[0] if found else None

    def run_status(self, run_id: str) -> str | None:
        """`running`, `completed`, `incomplete` or `failed` (a run whose lease expired reads as incomplete)."""
        run = self.get_run(run_id)
        return str(run["status"]) if run else None

    def require_run(self, run_id: str) -> dict[str, Any]:
        """`get_run`, with a missing run an error that says where the stored runs are listed."""
        run = self.get_run(run_id)
        if run is None:
            raise ConfigError(f"No run has id {run_id!r}; `cobalt history` lists the stored runs.")
        return run

    def experiment_of(self, run_id: str) -> str:
        """The name of the experiment the run belongs to."""
        return str(self.require_run(run_id)["experiment"])

    def previous_completed_run(self, experiment: str, run_id: str) -> str | None:
        """The experiment's newest completed run started before `run_id` (of the same variant, for a
        variant's run), if any."""
        return self.previous_of_variant(experiment, run_id)

    def evaluator_means(self, run_ids: Sequence[str]) -> dict[str, dict[str, float | None]]:
        """`{run_id: {evaluator: mean}}` from the stored aggregates, evaluators in name order."""
        if not run_ids:
            return {}
        rows = self.query("SELECT run_id, metric, mean FROM aggregates WHERE kind = 'evaluator' "
                          "AND run_id IN (SELECT unnest(?)) ORDER BY metric", [list(run_ids)])
        means: dict[str, dict[str, float | None]] = {}
        for row in rows:
            means.setdefault(row["run_id"], {})[row["metric"]] = row["mean"]
        return means

    def _runs(self, sql: str, params: Sequence[Any], *, missing_ok: bool) -> list[dict[str, Any]]:
        import duckdb

        if not self.exists():
            if missing_ok:
                return []
            # DuckDB says so on opening a missing file; a database without cobalt's tables must say it here
            raise StoreError(f"No results store at {self.where} yet; run an experiment first.")
        self._take_waiting()
        try:
            return self._with_waiting(self.with_live_status(self.query(sql, params)))
        except duckdb.CatalogException:  # a file without the tables yet: no run was ever started in it
            if missing_ok:
                return []
            raise

    def _take_waiting(self) -> None:
        """Rows that ended processes left in journals (their store was held) go in before a read of the
        runs, when the store is free this moment: a page, the MCP server or the sensor reading the runs
        sees them as a CLI command would, not a finished run with 0 items."""
        from ._journal import left, replay_left

        if self.key in _shared() or not left(self):
            return
        with contextlib.suppress(StoreError):
            replay_left(self, wait=0.0, quiet=True)

    def _with_waiting(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A run whose rows still wait in an ended process's journal (the store is held: no read could put
        them in) carries `waiting` (`_journal.waiting`), so the pages and MCP say so rather than show a run
        of 0 items and advise a resume."""
        from ._journal import left, waiting

        if not rows or not left(self):
            return rows
        held = waiting(self)
        for row in rows:
            if row["run_id"] in held:
                row["waiting"] = held[row["run_id"]]
        return rows

    def with_live_status(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Mark `running` runs whose lease expired as `incomplete` (a killed run cannot say so itself).
        The rows need `status`, `lease_until` and `started_at` (see `_liveness` for a row without a lease)."""
        ended = set(gone(self.key, rows, self.now(), lease_seconds()))
        for row in rows:
            if row["run_id"] in ended:
                row["status"] = "incomplete"
        return rows

    def rows(self, table: str, run_id: str) -> list[dict[str, Any]]:
        """A run's rows of one table, in a stable order (items by index, aggregates by metric...), cut
        values whole again (`_values`)."""
        order = {"outputs": " ORDER BY item_index, run_index", "scores": " ORDER BY item_index, run_index, evaluator",
                 "aggregates": " ORDER BY metric", "verdicts": " ORDER BY name"}.get(table, "")
        rows = self.query(f"SELECT * FROM {table} WHERE run_id = ?{order}", [run_id])
        restore(rows, self.values_dir)
        return rows

    def attach_read_only(self, con: Any) -> None:
        """ATTACH a DuckDB store file to `con` as `store`, read-only, retried while another process holds it."""
        self.backend.attach_read_only(con, self.lock_timeout)  # type: ignore[attr-defined]


def held_message(row: dict[str, Any], *, just: bool = False) -> str:
    """One sentence: the run is another process's, which works on it still (or has `just` taken it)."""
    until = row.get("lease_until")
    held = f"its lease runs until {until:%Y-%m-%d %H:%M:%S %Z}" if until is not None else "it has no lease yet"
    if just:
        return (f"Run {row['run_id']} of {row['experiment']!r} was just taken by another process; only one process "
                "works on a run: wait for that one to finish.")
    return (f"Run {row['run_id']} of {row['experiment']!r} is still running (started by process {row.get('pid')} on "
            f"{row.get('host')}; {held}); stop it first, or wait for it to finish. A run whose process "
            "died reads incomplete at once on its host, elsewhere once its lease runs out.")
