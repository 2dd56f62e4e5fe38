"""Keeping a run alive in the store: its lease, renewed from a daemon thread while its work goes on.

A thread rather than an asyncio task, so the same renewer serves the library engine (an event loop
whose blocking work would delay a task) and a synchronous Dagster step in a process of its own. A
renewal is one short write; one that meets a busy store gives up quickly and quietly, and the next
tick tries again: a lease outlives two failed renewals, and a failed renewal never stops the run.
A renewal that finds the run taken over by another process (`LeaseLost`: its claim was fenced off)
stops renewing; the run's next write stops the run, saying why.

While a renewer runs, this process counts as working on the run (`_liveness.working`): on this host
the run reads `running` however long a reader holds the store, and once the renewer stops, a run
that did not finish reads `incomplete` at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from .._errors import LeaseLost
from ..store._liveness import lease_seconds, working
from ..store._store import Store

#: The longest a renewal waits for another process's lock before leaving it to the next tick.
_RENEWAL_WAIT = 2.0


class LeaseRenewer:
    """Renews run `run_id`'s lease of `seconds` (default `COBALT_LEASE_SECONDS`, 60 s) every `every`
    seconds (default a third of the lease) between `start()` and `stop()`, or in a `with` block.

    `renew()` is one renewal, callable directly (a step starting in a new process may renew at once).
    The lease's clock is the store's (`Store(path, now=...)`), so tests inject it there.
    """

    def __init__(self, store: Store, run_id: str, *, seconds: float | None = None,
                 every: float | None = None) -> None:
        self.run_id = run_id
        self.seconds = lease_seconds() if seconds is None else seconds
        self.every = self.seconds / 3 if every is None else every
        # Its own Store: a short, quiet wait for the lock (the run's writes keep the usual patience).
        self._store = store.like(lock_timeout=min(store.lock_timeout, self.every / 2, _RENEWAL_WAIT))
        #: Renewals that reached the store, and those that did not (the last one's error).
        self.renewals = 0
        self.failures = 0
        self.last_error: Exception | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def renew(self) -> bool:
        """Extend the lease now; False when the store could not be written (tried again at the next tick)."""
        try:
            self._store.renew_lease(self.run_id, self.seconds)
        except LeaseLost as exc:
            self.failures += 1
            self.last_error = exc
            self._stop.set()  # no use renewing a claim another process holds
            return False
        except Exception as exc:  # a busy or broken store must not end the run: the lease has slack
            self.failures += 1
            self.last_error = exc
            return False
        self.renewals += 1
        return True

    def start(self) -> LeaseRenewer:
        if self._thread is None:
            working(self._store.key, self.run_id, True)
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name=f"cobalt-lease-{self.run_id}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing; returns once no renewal is in flight (at most one short wait for the lock)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            working(self._store.key, self.run_id, False)

    def _loop(self) -> None:
        # The first renewal after one interval: whoever started the run has just written a fresh lease.
        while not self._stop.wait(self.every):
            self.renew()

    def __enter__(self) -> LeaseRenewer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


#: The renewer of each run this process keeps alive, with how many `lease` blocks hold it.
_HELD: dict[tuple[str, str], tuple[LeaseRenewer, int]] = {}
_HELD_LOCK = threading.Lock()


@contextmanager
def lease(store: Store, run_id: str) -> Iterator[LeaseRenewer]:
    """Keep run `run_id`'s lease renewed while the block runs, from sync or async code alike.

    Blocks for the same run nest (the engine holds one around the run, each stage one of its own):
    the process runs one renewer per run, stopped when the outermost block ends.
    """
    key = (store.key, run_id)
    with _HELD_LOCK:
        renewer, holders = _HELD.get(key) or (LeaseRenewer(store, run_id).start(), 0)
        _HELD[key] = (renewer, holders + 1)
    try:
        yield renewer
    finally:
        with _HELD_LOCK:
            renewer, holders = _HELD.pop(key)
            if holders > 1:
                _HELD[key] = (renewer, holders - 1)
        if holders == 1:
            renewer.stop()
