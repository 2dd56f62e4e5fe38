"""The run's rows on their way to the store: a background thread writes them in batches.

Rows arrive as items finish; about once a second (or every `max_rows`) the thread seals what has
come in the run's journal on disk (`_journal`) and puts it into the store in one transaction. A
crash loses at most the rows not yet sealed, and no reader ever sees half a batch. A batch that
meets another process's lock stays sealed on disk and is tried again at the next cycle, however
long the lock lasts; the last batch goes with the stage's working time, in the caller's thread.
"""

from __future__ import annotations

import secrets
import sys
import threading
from typing import Any

from .._errors import LeaseLost, StoreError, StoreLocked
from ._journal import Journal, stalled
from ._liveness import Claim, claimed
from ._store import Store

#: How long one cycle of the thread waits for a lock before it leaves the batch for the next cycle.
CYCLE_WAIT_SECONDS = 1.0


class BatchWriter:
    """Collects rows from the run and writes them in batches from a background thread, through a journal
    on disk (`name`, default a fresh one): a batch is never dropped."""

    # Each batch opens the file anew (so readers are never locked out for long), which costs 15-60 ms
    # of the run's CPU: about one batch a second keeps that small at any rate, and the rows waiting
    # are bounded by `max_rows`.
    def __init__(self, store: Store, *, max_rows: int = 10_000, max_delay: float = 1.0,
                 name: str | None = None) -> None:
        self.store = store
        self.max_rows = max_rows
        self.max_delay = max_delay
        self.journal = Journal(store, name or f"rows-{secrets.token_hex(6)}")
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self._error: BaseException | None = None
        self._failures = 0
        self._told = False
        #: The claim of each run whose rows come in, where this process holds one: once it is lost (another
        #: process took the run over), `add` raises LeaseLost, which stops the stage.
        self._claims: dict[object, Claim | None] = {}
        self._thread = threading.Thread(target=self._loop, name="cobalt-store-writer", daemon=True)
        self._thread.start()

    def add(self, table: str, row: dict[str, Any]) -> None:
        run_id = row.get("run_id")
        if run_id not in self._claims:
            self._claims[run_id] = claimed(self.store.key, run_id) if isinstance(run_id, str) else None
        if (claim := self._claims[run_id]) is not None and claim.lost is not None:
            raise LeaseLost(str(run_id), claim.lost)
        with self._cond:
            self._pending.setdefault(table, []).append(row)
            self._count += 1
            if self._count >= self.max_rows:
                self._cond.notify()

    @property
    def left(self) -> int:
        """Sealed batches not yet in the store."""
        return len(self.journal)

    def close(self, *, work: tuple[str, float] | None = None) -> float | None:
        """Stop the thread, then write what is still pending, with `work=(run_id, ms)` added to the
        run's working time in the same transaction (one connection where two were). Returns the
        run's new working time when `work` is given and the store took it; None when the store is
        still held after its lock timeout: the rows then stay in the journal for the next command.
        Raises if a write failed otherwise (a full disk, say)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        try:
            if self._pending or work is not None:
                self.journal.add(self._pending, add_work=work)
                self._pending = {}
            return self.journal.flush(wait=0.0 if stalled(self.store) else None)
        except StoreLocked as exc:
            self._tell(exc)
            return None
        except LeaseLost:
            self.journal.discard()  # refused writes: the run's new holder does these items itself
            raise
        except Exception as exc:
            error = exc
        finally:
            self.journal.close()
        raise StoreError(f"Writing results to {self.store.where} failed: {error}") from error

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._closed and self._count < self.max_rows:
                    self._cond.wait(self.max_delay)
                if self._closed:
                    return  # close() writes what is left, with the run's working time
                batch, self._pending, self._count = self._pending, {}, 0
            try:
                if batch:
                    self.journal.add(batch)
            except BaseException as exc:  # not even sealed (a full disk): keep the rows, close() says why
                with self._cond:
                    self._error = exc
                    for table, rows in batch.items():
                        self._pending[table] = rows + self._pending.get(table, [])
                return
            if len(self.journal):
                self._flush()

    def _tell(self, exc: StoreLocked) -> None:
        """Say once what the rows wait for, and where they are meanwhile."""
        if not self._told:
            self._told = True
            print(f"cobalt: waiting for the results store {self.store.where}, which another process holds "
                  f"({exc.holder}); close it (a notebook's DuckDB connection?) to go on. Finished items are "
                  f"kept on disk in {self.journal.directory} meanwhile.", file=sys.stderr)

    def _flush(self) -> None:
        try:
            self.journal.flush(wait=min(self.store.lock_timeout, CYCLE_WAIT_SECONDS))
            self._failures = 0
        except StoreLocked as exc:  # the batches stay sealed on disk: the next cycle tries again
            self._failures += 1
            self._tell(exc)
        except LeaseLost:  # the claim is marked lost: `add` stops the stage, and nothing more is written
            self._failures += 1
        except Exception:  # the batches stay sealed on disk; the next cycle and close() try again
            self._failures += 1
