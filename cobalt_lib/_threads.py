"""Daemon worker threads for sync agents and evaluators: a hung call cannot keep the process alive."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

#: How many sync calls stuck past their timeout a run gives up on (their slots go back to the
#: run); past this many, a stuck call keeps its slot until it returns.
MAX_ABANDONED_CALLS = 32


class UserExit(Exception):
    """User code (an agent or a scoring function) called `sys.exit()`: the error of that one call, never
    the end of the run. A SystemExit is turned into this where user code is called."""

    def __init__(self, code: object) -> None:
        self.code = code
        super().__init__(f"sys.exit({code!r}) was called; raise an exception to fail one item (the run went on)")


class DaemonThreads:
    """Worker threads for sync agents and evaluators. Daemon threads, so a call that hangs forever
    cannot keep the process alive after the run has recorded it as a timeout."""

    def __init__(self, max_workers: int, *, name: str = "cobalt-agent") -> None:
        self.max_workers = max_workers
        self.name = name
        self.abandoned = 0
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def abandon(self) -> bool:
        """Give up on one stuck call: one more thread may start in its place. False past the cap."""
        with self._lock:
            if self.abandoned >= MAX_ABANDONED_CALLS:
                return False
            self.abandoned += 1
            return True

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._jobs.put((fn, loop, future))
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
            elif len(self._threads) < self.max_workers + self.abandoned:
                thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._threads.append(thread)
                thread.start()
        return future

    def shutdown(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, loop, future = job
            error: BaseException | None
            try:
                result, error = fn(), None
            except SystemExit as exc:  # settled as an error of this call: it must not end the run's loop
                result, error = None, UserExit(exc.code)
            except BaseException as exc:
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the run ended (loop closed) while this call hung past its timeout
                return
            with self._lock:
                self._idle += 1


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
