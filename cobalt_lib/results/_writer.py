"""The run's rows on their way to the store: a background thread writes them in batches.

Rows arrive as items finish; about once a second (or every `max_rows`) the thread writes what
has come in one transaction. A crash loses at most the rows not yet written, and no reader ever
sees half a batch. The last batch goes with the stage's working time, in the caller's thread.
"""

from __future__ import annotations

import threading
from typing import Any

from .._errors import StoreError
from ._store import Store

#: How many times a batch is written before its rows are given up (each attempt waits out a lock
#: for the store's lock_timeout).
MAX_BATCH_ATTEMPTS = 3


class BatchWriter:
    """Collects rows from the run and writes them in batches from a background thread. A batch that
    fails (another process held the file past the lock timeout, say) is kept and tried again."""

    # Each batch opens the file anew (so readers are never locked out for long), which costs 15-60 ms
    # of the run's CPU: about one batch a second keeps that small at any rate, and the rows waiting
    # are bounded by `max_rows`.
    def __init__(self, store: Store, *, max_rows: int = 10_000, max_delay: float = 1.0) -> None:
        self.store = store
        self.max_rows = max_rows
        self.max_delay = max_delay
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self._error: BaseException | None = None
        self._failures = 0
        self._thread = threading.Thread(target=self._loop, name="cobalt-store-writer", daemon=True)
        self._thread.start()

    def add(self, table: str, row: dict[str, Any]) -> None:
        with self._cond:
            self._pending.setdefault(table, []).append(row)
            self._count += 1
            if self._count >= self.max_rows:
                self._cond.notify()

    def close(self, *, work: tuple[str, float] | None = None) -> float | None:
        """Stop the thread, then write what is still pending, with `work=(run_id, ms)` added to the
        run's working time in the same transaction (one connection where two were). Returns the
        run's new working time when `work` is given; raises if a write failed."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        total = None
        for attempt in range(1, MAX_BATCH_ATTEMPTS + 1):
            try:
                if self._pending or work is not None:
                    total = self.store.write(self._pending, add_work=work)
                self._pending = {}
                break
            except BaseException as exc:
                if attempt == MAX_BATCH_ATTEMPTS or not isinstance(exc, Exception):
                    self._error = self._error or exc
                    break
        if self._error is not None:
            raise StoreError(f"Writing results to {self.store.path} failed: {self._error}") from self._error
        return total

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._closed and self._count < self.max_rows:
                    self._cond.wait(self.max_delay)
                if self._closed:
                    return  # close() writes what is left, with the run's working time
                batch, self._pending, self._count = self._pending, {}, 0
            if batch:
                try:
                    self.store.write(batch)
                    self._failures = 0
                except BaseException as exc:
                    self._failures += 1
                    if self._failures < MAX_BATCH_ATTEMPTS:  # keep the rows: the next cycle tries again
                        with self._cond:
                            for table, rows in batch.items():
                                self._pending[table] = rows + self._pending.get(table, [])
                            self._count += sum(len(rows) for rows in batch.values())
                        continue
                    self._error = self._error or exc  # surfaced by close(); the run and later batches go on
                    self._failures = 0
