"""An aiohttp application served from a background thread with its own event loop: the pages and the
Dagster proxy of `cobalt serve`, and both in tests. `start()` returns the URL once it listens."""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod

from aiohttp import web

from .._errors import ConfigError


class ThreadedServer(ABC):
    """Subclasses say what they serve (`application`) and what to do when the port is taken (`taken`)."""

    thread_name = "cobalt-server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    @abstractmethod
    def application(self) -> web.Application:
        """The aiohttp application this server serves."""

    def taken(self, error: BaseException) -> str:
        """The one sentence when the port cannot be bound."""
        return f"Cannot listen on {self.host}:{self.port}: {error}."

    def start(self) -> str:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,), name=self.thread_name, daemon=True)
        self._thread.start()
        ready.wait()
        if self._error is not None:
            raise ConfigError(self.taken(self._error)) from None
        return self.url

    def _main(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        runner = web.AppRunner(self.application(), access_log=None)
        loop.run_until_complete(runner.setup())
        try:
            loop.run_until_complete(web.TCPSite(runner, self.host, self.port).start())
            self.port = int(runner.addresses[0][1])
        except OSError as exc:
            self._error = exc
        ready.set()
        if self._error is None:
            loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
