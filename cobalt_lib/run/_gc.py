"""The cyclic garbage collector, tuned while a run streams its items.

A run keeps every finished item (pydantic records) alive until its report is built, and each item
allocates a few hundred short-lived containers (requests, answers, rows). With the default gen-0
threshold of 700 the collector runs about every item and its older generations re-scan everything
alive: at 200 calls in flight that was a quarter of the run's CPU (benchmarks/RESULTS.md). While a
run streams, the objects that exist at its start (imports, the dataset, the plan) are frozen out of
the collector's reach and gen-0 collections run every RUN_GEN0_THRESHOLD allocations instead.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

RUN_GEN0_THRESHOLD = 20_000

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def collector_tuned_for_a_run() -> Iterator[None]:
    """Freeze what exists and raise the gen-0 threshold until the last concurrent run leaves."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(_saved[0], RUN_GEN0_THRESHOLD), _saved[1], _saved[2])
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                gc.unfreeze()  # the frozen objects go back to the oldest generation
                _saved = None
