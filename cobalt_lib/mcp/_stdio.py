"""Serving stdio so that a client that goes away stops what it started.

The SDK keeps serving the requests in flight after the client's end of stdin closes (the client
exited, was killed, or shut down), so a `cobalt_run` would go on with nobody to answer. Here the end
of the input cancels every request in flight: `cobalt_run` then stops its run as cancellation does
(the child gets SIGTERM, finished items are kept, the run is incomplete and resumable).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server


class _UntilEnd:
    """A receive stream that calls `at_end` once its sender has closed (the client's stdin reached EOF)."""

    def __init__(self, inner: Any, at_end: Callable[[], None]) -> None:
        self._inner = inner
        self._at_end = at_end

    @property
    def last_context(self) -> Any:
        return self._inner.last_context

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except anyio.EndOfStream:
            self._at_end()
            raise

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _UntilEnd:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _UntilEnd:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


async def serve_stdio_until_eof(server: MCPServer) -> None:
    """`server.run_stdio_async()`, except that the end of stdin cancels the requests still in flight."""
    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async drives this same object
    async with stdio_server() as (read_stream, write_stream):
        with anyio.CancelScope() as scope:
            await lowlevel.run(_UntilEnd(read_stream, scope.cancel), write_stream,
                               lowlevel.create_initialization_options())
