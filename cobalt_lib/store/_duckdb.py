"""The embedded store: one DuckDB file under the project's output directory (`.cobalt/cobalt.duckdb`).

DuckDB admits one writing process, and a reader's lock blocks a writer too, so every connection
is short (open, one transaction, close) and opening retries with backoff while another process
holds the file, saying who after a few seconds.
"""

from __future__ import annotations

import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import StoreError, StoreLocked
from ._backend import DUCKDB, Dialect
from ._tables import duckdb_said

#: The store's file name under the project's output directory.
STORE_FILE = "cobalt.duckdb"

_LOCK_WORDS = ("lock", "Conflicting", "being used", "Could not set")
#: What DuckDB says of a store file that is cut short or is not a database.
_DAMAGE_WORDS = ("Could not read enough bytes", "not a valid DuckDB database", "Corrupt", "checksum")
#: After this long waiting for another process's lock on the store, say so on stderr (once).
WAIT_NOTICE_SECONDS = 3.0

#: DuckDB connections opened to store files by this process (`Store.connections_opened`).
OPENED = [0]
_OPENED_LOCK = threading.Lock()
#: Per store file, the lock every write connection of this process holds: DuckDB lets two connections of
#: one process write at once, and a lease renewal meeting the run's own final write failed it
#: ("Conflict on tuple deletion"). One writer at a time, in the process as across processes.
_WRITE_LOCKS: dict[str, threading.RLock] = {}
#: Per store file, the connection a long-lived writer keeps open (`DuckDBBackend.hold`) and how many holds
#: it has: while it is open, every connection of this process to the file shares its database.
_HELD: dict[str, list[Any]] = {}


def _write_lock(path: Path) -> threading.RLock:
    with _OPENED_LOCK:
        return _WRITE_LOCKS.setdefault(str(path.absolute()), threading.RLock())


def unusable(path: Path, exc: Exception) -> StoreError:
    """A store file DuckDB cannot use (not a lock): one sentence saying what to do."""
    said = duckdb_said(exc)
    if "No space left on device" in said:
        return StoreError(f"The disk holding the results store {path} is full ({said}); free some space and "
                          "run the command again.")
    if any(word in said for word in _DAMAGE_WORDS):
        return StoreError(f"The results store {path} is damaged ({said}); move it aside (`mv {path} "
                          f"{path}.damaged`) and the next run starts a new one; the results files under "
                          f"{path.parent / 'results'} still hold every finished run.")
    return StoreError(f"Cannot open the results store {path}: {said}")


def holder(message: str) -> str:
    """DuckDB's lock error names the holder: `Conflicting lock is held in /usr/bin/python3 (PID 42)`."""
    found = re.search(r"held in (.+?\(PID \d+\))", message)
    return found.group(1) if found else "its lock"


def locked(exc: BaseException) -> bool:
    """Whether DuckDB refused a file because another connection holds it."""
    return any(word in str(exc) for word in _LOCK_WORDS)


class DuckDBBackend:
    """A DuckDB file; `home` is its directory."""

    name = "duckdb"
    dialect: Dialect = DUCKDB

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.home = self.path.parent
        self.key = str(self.path.absolute())
        self.where = str(self.path)

    def exists(self) -> bool:
        return self.path.exists()

    def schema_key(self) -> tuple[str, int] | None:
        """The file's identity: a store deleted and made again (by `cobalt clean`) is a new file."""
        try:
            return str(self.path.resolve()), self.path.stat().st_ino
        except OSError:
            return None

    def ensure(self, con: Any, make: Any) -> None:
        make(con)  # one process writes the file at a time: no other can make the tables meanwhile

    @contextmanager
    def connect(self, *, read_only: bool, wait: float) -> Iterator[Any]:
        if read_only and not self.path.exists():
            raise StoreError(f"No results store at {self.path} yet; run an experiment first.")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        deadline = started + wait
        lock = None if read_only else _write_lock(self.path)
        if lock is not None and not lock.acquire(timeout=max(0.0, deadline - started)):
            raise StoreLocked(f"Cannot open the results store {self.path}: another thread of this process is "
                              "writing it.", f"this process (PID {os.getpid()})")
        try:
            with self._opened(read_only, started, deadline) as con:
                yield con
        finally:
            if lock is not None:
                lock.release()

    def hold(self, wait: float) -> Callable[[], None]:
        """Keep the file open in this process until the returned function is called (once): meanwhile
        every connection this process asks for shares its database, which opens nothing (an open and
        the checkpoint at its close cost 40-60 ms a transaction), each write still one transaction under
        the write lock. Other processes cannot open the file while it is held: hold it only while writes
        keep coming (`cobalt collect`). StoreLocked when another process holds it past `wait` seconds."""
        with _OPENED_LOCK:
            held = _HELD.get(self.key)
            if held is not None:
                held[1] += 1
                return self._releaser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        opening = self._opened(False, started, started + wait)
        con = opening.__enter__()
        with _OPENED_LOCK:
            held = _HELD.get(self.key)
            if held is None:
                _HELD[self.key] = [con, 1, opening]
                return self._releaser()
            held[1] += 1  # another thread held it meanwhile: keep that one
        opening.__exit__(None, None, None)
        return self._releaser()

    def _releaser(self) -> Callable[[], None]:
        done = [False]

        def release() -> None:
            with _OPENED_LOCK:
                if done[0]:
                    return
                done[0] = True
                held = _HELD[self.key]
                held[1] -= 1
                if held[1]:
                    return
                del _HELD[self.key]
            held[2].__exit__(None, None, None)  # a connection still sharing it keeps the database open

        return release

    @contextmanager
    def _opened(self, read_only: bool, started: float, deadline: float) -> Iterator[Any]:
        import duckdb

        with _OPENED_LOCK:
            # another connection to the database the held one keeps open (read-write, its configuration): it
            # opens no file, and outlives the held one's release (a cursor would close with it)
            shared = duckdb.connect(str(self.path)) if self.key in _HELD else None
        if shared is not None:
            try:
                yield shared
            finally:
                shared.close()
            return
        delay = 0.02
        told = False
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
                with _OPENED_LOCK:
                    OPENED[0] += 1
                break
            except duckdb.Error as exc:
                # Another thread of this process holds the file read-only while this one wants to write (or
                # the reverse): DuckDB refuses until that connection closes, as it would a lock.
                held = isinstance(exc, duckdb.IOException) and locked(exc)
                mixed = isinstance(exc, duckdb.ConnectionException) and "different configuration" in str(exc)
                if not (held or mixed):
                    raise unusable(self.path, exc) from None
                if time.monotonic() > deadline:
                    raise StoreLocked(f"Cannot open the results store {self.path}: {duckdb_said(exc)}",
                                      holder(str(exc))) from None
                if not told and time.monotonic() - started > WAIT_NOTICE_SECONDS:
                    told = True  # a long silent stall looks like a hang: say who holds the file
                    print(f"cobalt: waiting for the results store {self.path}, which another process holds "
                          f"({holder(str(exc))}); close it (a notebook's DuckDB connection?) to go on.",
                          file=sys.stderr)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.5)
        try:
            yield con
        except duckdb.Error as exc:
            if any(word in str(exc) for word in (*_DAMAGE_WORDS, "No space left on device")):
                raise unusable(self.path, exc) from None
            raise
        finally:
            con.close()

    def attach_read_only(self, con: Any, wait: float) -> None:
        """ATTACH the store file to `con` as `store`, read-only, retried while another process holds it."""
        import duckdb

        deadline = time.monotonic() + wait
        delay = 0.02
        while True:
            try:
                con.execute("ATTACH ? AS store (READ_ONLY)", [str(self.path)])
                return
            except duckdb.IOException as exc:
                if not locked(exc) or time.monotonic() > deadline:
                    raise StoreError(f"Cannot open the results store {self.path}: {duckdb_said(exc)}") from None
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.5)
