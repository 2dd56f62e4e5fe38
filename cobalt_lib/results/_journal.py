"""The journal: a run's rows on disk until a transaction of the store has taken them.

    <output_dir>/journal/<name>/.lock              held (flock) by the process writing there
                                000001.json        a sealed segment's header (`_segment`)
                                000001.outputs.ndjson, 000001.scores.ndjson

Every batch of rows is sealed here before its transaction and removed after it commits, so a batch
that meets another process's lock (a notebook holding the store for minutes) stays on disk, and is
tried again, however long that lasts. A process that ends (or dies) with segments left lets go of
its lock; the next cobalt command that writes the store (`replay_left`) puts them in, deleting any
row that went in just before the process died, so nothing is lost or doubled.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import StoreLocked
from ._segment import Segment, apply, read, seal
from ._tables import duckdb_said

if TYPE_CHECKING:  # the store calls `replay_left` before each write: this module only needs its type
    from ._store import Store

#: Journals, under the output directory.
JOURNAL_DIR = "journal"
#: Store files (resolved paths) a write of this process gave up on, holder and all: later writes of
#: the run try once rather than wait the whole lock timeout again.
_STALLED: dict[str, str] = {}


def stalled(store: Store) -> str | None:
    """What holds the store, when a write of this process last gave up on its lock."""
    return _STALLED.get(str(store.path.absolute()))


class Journal:
    """Batches of rows sealed on disk (`add`), then put into the store in one transaction (`flush`)."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.directory = store.path.parent / JOURNAL_DIR / name
        self._segments: list[Segment] = []
        self._number = 0
        self._lock: int | None = None

    def __len__(self) -> int:
        """Sealed segments not yet in the store."""
        return len(self._segments)

    @property
    def work_ms(self) -> float:
        """The working time the segments not yet in the store add."""
        return sum(s.add_work[1] for s in self._segments if s.add_work)

    def add(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
            delete_tables: Sequence[str] = (), add_work: tuple[str, float] | None = None) -> None:
        """Seal the rows (and what else their transaction does) as the next segment."""
        if self._lock is None:  # made and locked under a hidden name, so no replay ever sees it unlocked
            staging = self.directory.with_name(f".{self.directory.name}")
            staging.mkdir(parents=True, exist_ok=True)
            self._lock = _hold(staging / ".lock", wait=True)
            staging.rename(self.directory)
        self._number += 1
        self._segments.append(seal(self.directory, f"{self._number:06d}", batches, values=self.store.values_dir,
                                   limit=self.store.max_value_bytes, delete_run=delete_run,
                                   delete_tables=delete_tables, add_work=add_work))

    def flush(self, *, wait: float | None = None) -> float | None:
        """Put every sealed segment into the store, in order, in one transaction, then remove them. Returns
        the run's working time after the last `add_work`; raises StoreLocked when another process still
        holds the store after `wait` seconds (the store's lock timeout by default): the segments stay."""
        if not self._segments:
            return None
        total = None
        try:
            with self.store._transaction(ensure_schema=True, wait=wait) as con:
                for segment in self._segments:
                    done = apply(con, segment)
                    total = done if done is not None else total
        except StoreLocked as exc:
            _STALLED[str(self.store.path.absolute())] = exc.holder
            raise
        _STALLED.pop(str(self.store.path.absolute()), None)
        for segment in self._segments:
            segment.remove()
        self._segments.clear()
        return total

    def write(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
              delete_tables: Sequence[str] = (), add_work: tuple[str, float] | None = None) -> float | None:
        """`Store.write` through the journal: sealed, then flushed (trying once when the store was found
        held already); when the store stays held the rows stay here for the next command."""
        self.add(batches, delete_run=delete_run, delete_tables=delete_tables, add_work=add_work)
        with contextlib.suppress(StoreLocked):
            return self.flush(wait=0.0 if stalled(self.store) else None)
        return None

    def close(self) -> None:
        """Let go: an empty journal is removed; one with segments left stays for the next command."""
        if self._lock is None:
            return
        if not self._segments:
            shutil.rmtree(self.directory, ignore_errors=True)
        os.close(self._lock)
        self._lock = None


def _hold(path: Path, *, wait: bool) -> int | None:
    """An exclusive flock on `path` (made if missing): its descriptor, or None when another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def left(store: Store) -> list[Path]:
    """The journals left under the store's output directory (some may belong to live processes)."""
    root = store.path.parent / JOURNAL_DIR
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except FileNotFoundError:
        return []


def left_work(store: Store, run_id: str) -> float:
    """The working time of `run_id` that journals hold, not yet in the store."""
    total = 0.0
    for directory in left(store):
        for header in directory.glob("[0-9]*.json"):
            with contextlib.suppress(OSError, ValueError):
                work = read(header).add_work
                total += work[1] if work and work[0] == run_id else 0.0
    return total


def replay_left(store: Store, *, wait: float | None = None, quiet: bool = False) -> int:
    """Put into the store the journals that processes which have ended left behind (each one in a
    transaction of its own), and remove them. Returns the segments put in; a store still held after
    `wait` seconds leaves them where they are (saying so unless `quiet`)."""
    done = 0
    for directory in left(store):
        try:
            fd = _hold(directory / ".lock", wait=False)
        except FileNotFoundError:  # its process has just emptied and removed it
            continue
        if fd is None:  # a live process's: it puts them in itself
            continue
        try:
            segments = [read(h) for h in sorted(directory.glob("[0-9]*.json"))]
            if segments:
                with store._transaction(ensure_schema=True, wait=wait) as con:
                    for segment in segments:
                        apply(con, segment, replay=True)
            shutil.rmtree(directory, ignore_errors=True)
            done += len(segments)
        except StoreLocked as exc:
            if not quiet:
                print(f"cobalt: finished rows wait in {directory} for the results store {store.path}, which another "
                      f"process holds ({exc.holder}); the next cobalt command puts them in.", file=sys.stderr)
            break
        except Exception as exc:  # a journal the store refuses must not stop every later write
            aside = directory.with_name(f".refused-{directory.name}")
            directory.rename(aside)
            print(f"cobalt: the store refused the rows in {directory} ({duckdb_said(exc)}); they are kept in {aside}.",
                  file=sys.stderr)
        finally:
            os.close(fd)
    return done
