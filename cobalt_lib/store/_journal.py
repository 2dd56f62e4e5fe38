"""The journal: a run's rows on disk until a transaction of the store has taken them.

    <output_dir>/journal/<name>/.lock              held (flock) by the process writing there
                                000001.json        a sealed segment's header (`_segment`)
                                000001.outputs.ndjson, 000001.scores.ndjson

Every batch of rows is sealed here before its transaction and removed after it commits, so a batch
that meets another process's lock (a notebook holding the store for minutes) stays on disk, and is
tried again, however long that lasts. A process that ends (or dies) with segments left lets go of
its lock; the next cobalt command that writes the store (`replay_left`) puts them in, deleting any
row that went in just before the process died, so nothing is lost or doubled.

Each segment goes in in a transaction of its own, and is skipped when it already went in (its id is
in the store's `segments`). A segment the store refuses stays where it is, and the next command tries
again, unless the store names the rows it refuses: a data error that rows of their own cause (a value
no column can take). Those rows alone are set aside, kept under `journal/.set-aside/`, listed by
`cobalt store status` and put back by `cobalt store sync`; the segment's other rows go in. A disk that
is full, a store that cannot be read, any error no row can be blamed for: the segment stays, whole.
A segment written under a claim another process has since taken (`LeaseLost`) is dropped: that
process does the run's missing items itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import LeaseLost, StoreError, StoreLocked
from ._backend import dialect_of
from ._liveness import claimed, fences
from ._segment import Segment, apply, read, run_ids, seal
from ._tables import insert_file

if TYPE_CHECKING:  # the store calls `replay_left` before each write: this module only needs its type
    from ._store import Store

#: Journals, under the output directory.
JOURNAL_DIR = "journal"
#: Rows the store refused, each for a reason of its own, under the journal directory.
SET_ASIDE_DIR = ".set-aside"
#: Store files (resolved paths) a write of this process gave up on after its whole lock timeout, holder
#: and all: later writes of the run try once rather than wait the whole lock timeout again.
_STALLED: dict[str, str] = {}


def stalled(store: Store) -> str | None:
    """What holds the store, when a write of this process last gave up on its lock."""
    return _STALLED.get(store.key)


class Journal:
    """Batches of rows sealed on disk (`add`), then put into the store, each in a transaction of its own (`flush`)."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.directory = store.home / JOURNAL_DIR / name
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
        fence = fences(self.store.key, run_ids(batches, delete_run, add_work))
        self._segments.append(seal(self.directory, f"{self._number:06d}", batches, values=self.store.values_dir,
                                   limit=self.store.max_value_bytes, delete_run=delete_run,
                                   delete_tables=delete_tables, add_work=add_work,
                                   segment_id=secrets.token_hex(12), fence=fence))

    def flush(self, *, wait: float | None = None) -> float | None:
        """Put every sealed segment into the store, in order, each in a transaction of its own, removing
        each once in. Returns the run's working time after the last `add_work`; raises StoreLocked when
        another process still holds the store after `wait` seconds (the store's lock timeout by
        default), LeaseLost when another process took the run over: the segments not in stay."""
        total = None
        key = self.store.key
        while self._segments:
            segment = self._segments[0]
            try:
                done = put_in(self.store, segment, wait=wait)
            except StoreLocked as exc:
                if wait is None or wait >= self.store.lock_timeout:
                    _STALLED[key] = exc.holder
                raise
            except LeaseLost as lost:
                for run_id in segment.fence:
                    if (claim := claimed(self.store.key, run_id)) is not None:
                        claim.lost = str(lost)
                raise
            total = done if done is not None else total
            _STALLED.pop(key, None)
            segment.remove()
            self._segments.pop(0)
        return total

    def write(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
              delete_tables: Sequence[str] = (), add_work: tuple[str, float] | None = None) -> float | None:
        """`Store.write` through the journal: sealed, then flushed (trying once when the store was found
        held already); when the store stays held the rows stay here for the next command."""
        self.add(batches, delete_run=delete_run, delete_tables=delete_tables, add_work=add_work)
        try:
            return self.flush(wait=0.0 if stalled(self.store) else None)
        except StoreLocked:
            return None
        except LeaseLost:
            self.discard()  # refused: the run's new holder writes it
            raise

    def discard(self) -> None:
        """Drop the segments not yet in: writes of a run another process has taken over (`LeaseLost`)."""
        for segment in self._segments:
            segment.remove()
        self._segments.clear()

    def close(self) -> None:
        """Let go: an empty journal is removed; one with segments left stays for the next command."""
        if self._lock is None:
            return
        if not self._segments:
            shutil.rmtree(self.directory, ignore_errors=True)
        os.close(self._lock)
        self._lock = None


def put_in(store: Store, segment: Segment, *, wait: float | None = None, replay: bool = False) -> float | None:
    """One segment into the store, in one transaction. When the store refuses rows of it for a data error
    each of them causes, those rows are set aside (`SET_ASIDE_DIR`) and the others go in; any other
    error (a full disk, a lock, a claim lost) is raised with the segment untouched."""
    try:
        with store._transaction(ensure_schema=True, wait=wait) as con:
            return apply(con, segment, replay=replay)
    except Exception as exc:
        if not _data_error(exc, store):
            raise
        refused = exc
    with store.connect(wait=wait) as con:
        bad = {table: _bad_lines(con, segment, table) for table in segment.files}
    if not any(bad.values()):
        raise refused  # no row of its own is to blame: the segment stays whole
    for table, lines in bad.items():
        if lines:
            _set_aside(store, segment, table, lines)
            _keep_others(segment.rows(table), lines)
    with store._transaction(ensure_schema=True, wait=wait) as con:
        return apply(con, segment, replay=replay)


def _data_error(exc: Exception, store: Store) -> bool:
    """An error the rows' values cause (a data, conversion, constraint or input error), not the disk, a
    lock or the store's state."""
    return store.backend.dialect.data_error(exc)


def _bad_lines(con: Any, segment: Segment, table: str) -> dict[int, str]:
    """The lines of the segment's rows of `table` that the store refuses on their own, with why: halves
    tried in a transaction rolled back, down to single lines."""
    path = segment.rows(table)
    lines = _lines(path)
    longest = segment.files[table][1]
    probe = path.with_name(f".probe-{path.name}")
    bad: dict[int, str] = {}

    def refused(numbers: list[int]) -> str | None:
        probe.write_text("".join(lines[n] + "\n" for n in numbers), encoding="utf-8")
        con.execute("BEGIN TRANSACTION")
        try:
            for other in segment.delete_tables:
                con.execute(f"DELETE FROM {other} WHERE run_id = ?", [segment.delete_run])
            insert_file(con, table, probe, longest)
            return None
        except Exception as exc:
            if not dialect_of(con).data_error(exc):
                raise
            return re.sub(r' in file "[^"]*"(, in line \d+)?', "", str(exc).splitlines()[0])
        finally:
            con.execute("ROLLBACK")

    def search(numbers: list[int]) -> None:
        why = refused(numbers)
        if why is None:
            return
        if len(numbers) == 1:
            bad[numbers[0]] = why
            return
        search(numbers[:len(numbers) // 2])
        search(numbers[len(numbers) // 2:])

    try:
        search(list(range(len(lines))))
    finally:
        probe.unlink(missing_ok=True)
    return bad


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _keep_others(path: Path, bad: dict[int, str]) -> None:
    """The segment's file without the lines set aside (a new file, then a rename)."""
    kept = path.with_name(f".kept-{path.name}")
    kept.write_text("".join(line + "\n" for n, line in enumerate(_lines(path)) if n not in bad), encoding="utf-8")
    os.replace(kept, path)


@dataclass
class SetAside:
    """Rows of one table the store refused, kept aside: `path` their lines, `errors` why each was refused."""

    path: Path
    table: str
    run_id: str | None
    errors: list[str]
    journal: str

    @property
    def rows(self) -> int:
        return len(self.errors)


def _set_aside(store: Store, segment: Segment, table: str, bad: dict[int, str]) -> None:
    every = _lines(segment.rows(table))
    lines, errors = [every[n] for n in sorted(bad)], [bad[n] for n in sorted(bad)]
    directory = store.home / JOURNAL_DIR / SET_ASIDE_DIR
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{segment.directory.name}-{segment.stem}-{table}-{secrets.token_hex(3)}"
    rows = directory / f"{stem}.ndjson"
    rows.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    run_id = segment.delete_run or next(iter(segment.fence), None) or _run_of(lines[0])
    head = {"table": table, "run_id": run_id, "errors": errors, "journal": segment.directory.name}
    (directory / f"{stem}.json").write_text(json.dumps(head), encoding="utf-8")
    for line, error in zip(lines, errors, strict=True):
        print(f"cobalt: the store refused a row of {table} of run {_run_of(line) or run_id} ({error}); it is kept in "
              f"{rows}, listed by `cobalt store status`, and `cobalt store sync` puts it back.", file=sys.stderr)


def _run_of(line: str) -> str | None:
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(line).get("run_id"))
    return None


def set_aside(store: Store) -> list[SetAside]:
    """The rows kept aside under the store's journal directory, oldest first."""
    directory = store.home / JOURNAL_DIR / SET_ASIDE_DIR
    found = []
    for head in sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime) if directory.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(head.read_text(encoding="utf-8"))
            found.append(SetAside(head.with_suffix(".ndjson"), str(data["table"]), data.get("run_id"),
                                  [str(e) for e in data["errors"]], str(data.get("journal") or "")))
    return found


def put_back(store: Store) -> tuple[int, list[SetAside]]:
    """Try the rows kept aside again, each group in a transaction of its own, written anew (so values
    cobalt now stores differently go in); returns how many rows went in and the groups still aside. A
    group whose run is running elsewhere waits."""
    from ._segment import seal

    restored = 0
    for group in set_aside(store):
        run = store.get_run(group.run_id) if group.run_id else None
        if run is not None and run["status"] == "running":
            continue  # its process writes the run: a row put in now could be run twice
        rows = [json.loads(line) for line in group.path.read_text(encoding="utf-8").splitlines() if line.strip()]
        tmp = group.path.with_name(f".sync-{group.path.stem}")
        tmp.mkdir(exist_ok=True)
        try:
            segment = seal(tmp, "rows", {group.table: rows}, values=store.values_dir, limit=store.max_value_bytes)
            with store._transaction(ensure_schema=True) as con:
                apply(con, segment, replay=True)
        except Exception as exc:
            if not _data_error(exc, store):
                raise
            head = group.path.with_suffix(".json")
            data = json.loads(head.read_text(encoding="utf-8"))
            data["errors"] = [str(exc).splitlines()[0]] * len(rows)
            head.write_text(json.dumps(data), encoding="utf-8")
            continue
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        group.path.with_suffix(".json").unlink(missing_ok=True)
        group.path.unlink(missing_ok=True)
        restored += len(rows)
    return restored, set_aside(store)


def _hold(path: Path, *, wait: bool) -> int | None:
    """An exclusive flock on `path` (made if missing): its descriptor, or None when another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def in_use(directory: Path) -> bool:
    """Whether a live process holds the journal `directory` (it puts its segments in itself)."""
    try:
        fd = _hold(directory / ".lock", wait=False)
    except FileNotFoundError:
        return False
    if fd is not None:
        os.close(fd)
    return fd is None


def left(store: Store) -> list[Path]:
    """The journals left under the store's output directory (some may belong to live processes)."""
    root = store.home / JOURNAL_DIR
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except FileNotFoundError:
        return []


def waiting(store: Store) -> dict[str, dict[str, Any]]:
    """Per run, what journals of ended processes still hold of it: `items` (its finished items' rows), the
    `journal` directory holding them and, when its final write is among them, the `status` it ended with. A read
    that could not put them in (the store held) shows them as waiting, not a run of 0 items to resume."""
    found: dict[str, dict[str, Any]] = {}
    for directory in left(store):
        if in_use(directory):  # a live process's: it puts them in itself, and its run reads running
            continue
        for header in sorted(directory.glob("[0-9]*.json")):
            with contextlib.suppress(OSError, ValueError):
                segment = read(header)
                for table in ("outputs", "runs"):
                    for line in _lines(segment.rows(table)) if table in segment.files else []:
                        row = json.loads(line)
                        entry = found.setdefault(str(row.get("run_id")), {"items": 0, "journal": str(directory.parent)})
                        if table == "outputs":
                            entry["items"] += 1
                        else:
                            entry["status"] = row.get("status")
    return found


def refused_before(store: Store) -> list[Path]:
    """Journals an older cobalt moved aside whole (`.refused-*`): `cobalt store sync` puts them back."""
    root = store.home / JOURNAL_DIR
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(".refused-"))
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
    """Put into the store the journals that processes which have ended left behind (each segment in a
    transaction of its own), and remove them. Returns the segments put in; a store still held after
    `wait` seconds, or refusing a segment for a reason no row of it causes (a full disk), leaves them
    where they are (saying so unless `quiet`)."""
    done = 0
    for directory in left(store):
        try:
            fd = _hold(directory / ".lock", wait=False)
        except FileNotFoundError:  # its process has just emptied and removed it
            continue
        if fd is None:  # a live process's: it puts them in itself
            continue
        try:
            done += _replay(store, directory, wait=wait)
            shutil.rmtree(directory, ignore_errors=True)
        except StoreLocked as exc:
            if not quiet:
                print(f"cobalt: finished rows wait in {directory} for the results store {store.where}, which another "
                      f"process holds ({exc.holder}); the next cobalt command puts them in.", file=sys.stderr)
            break
        except (StoreError, OSError) as exc:  # the disk, or the store's state: the rows stay for the next try
            if not quiet:
                print(f"cobalt: finished rows wait in {directory}: the results store {store.where} could not take "
                      f"them ({_said(exc)}); the next cobalt command tries again.", file=sys.stderr)
            break
        except Exception as exc:
            if not quiet:
                print(f"cobalt: finished rows wait in {directory}: the results store {store.where} refused them "
                      f"({_said(exc)}); the next cobalt command tries again.", file=sys.stderr)
            break
        finally:
            os.close(fd)
    return done


def _replay(store: Store, directory: Path, *, wait: float | None) -> int:
    """The segments of one ended process's journal, in order, each removed once in."""
    done = 0
    for header in sorted(directory.glob("[0-9]*.json")):
        segment = read(header)
        try:
            put_in(store, segment, wait=wait, replay=True)
        except LeaseLost as lost:
            print(f"cobalt: dropped the rows in {header} ({lost})", file=sys.stderr)
        segment.remove()
        done += 1
    return done


def _said(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
