"""Over streamable HTTP, a client that drops a request's connection cancels that request.

The MCP specification (revision 2026-07-28, "Transport-Specific Cancellation") says the server MUST
treat the close of a request's response stream as its cancellation. The SDK does so for clients that
speak that revision; for sessions of the 2025 revisions it keeps serving the request with nobody to
answer, so a `cobalt_run` would go on. This layer watches each such POST for `http.disconnect` before
its response has been sent and then hands the session a `notifications/cancelled` for the requests the
POST carried, exactly as a client's own cancel: `cobalt_run` then stops its run (finished items kept,
the run incomplete and resumable). cobalt's server keeps no event store, so a dropped stream could
never be resumed anyway: its answer would be lost.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Revisions whose POSTs the SDK serves on a session (and so does not cancel on a disconnect).
SESSION_ERA = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
_VERSION = b"mcp-protocol-version"


class CancelOnDisconnect:
    """ASGI middleware around the SDK's streamable-HTTP app (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _session_era(scope):
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # gone before its request was read: nothing started
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        ids = _request_ids(body)
        if not ids:
            await self.app(scope, _replay(body, receive), send)
            return
        await self._watched(scope, body, ids, receive, send)

    async def _watched(self, scope: Scope, body: bytes, ids: list[Any], receive: Receive, send: Send) -> None:
        answered = anyio.Event()
        gone = anyio.Event()
        first = [True]

        async def inner_receive() -> Message:
            if first[0]:
                first[0] = False
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()  # the app asks for more only to learn of a disconnect
            return {"type": "http.disconnect"}

        async def inner_send(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered.set()
            if gone.is_set():
                return  # nobody to send to
            try:
                await send(message)
            except OSError:
                gone.set()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            if not answered.is_set():
                await self._cancel(scope, ids)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            await self.app(scope, inner_receive, inner_send)
            tasks.cancel_scope.cancel()

    async def _cancel(self, scope: Scope, ids: list[Any]) -> None:
        """Hand the session a `notifications/cancelled` per request, as its client would have sent."""
        for request_id in ids:
            body = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": request_id, "reason": "the client went away"}}).encode()
            headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length", b"content-type")]
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await self.app({**scope, "headers": headers}, _replay(body, None), _discard)


def _session_era(scope: Scope) -> bool:
    """A POST the SDK serves on a 2025-era session (no version header yet, at the handshake, counts too)."""
    version = next((v.decode("latin-1") for k, v in scope["headers"] if k == _VERSION), None)
    return version is None or version in SESSION_ERA


def _request_ids(body: bytes) -> list[Any]:
    """The ids of the JSON-RPC requests (not notifications or responses) a POST body carries."""
    try:
        data = json.loads(body)
    except ValueError:
        return []
    messages = data if isinstance(data, list) else [data]
    return [m["id"] for m in messages
            if isinstance(m, dict) and "method" in m and m.get("id") is not None and m["method"] != "initialize"]


def _replay(body: bytes, receive: Receive | None) -> Receive:
    """A `receive` that gives `body` first, then what the real `receive` gives (or a disconnect)."""
    sent = [False]

    async def replay() -> Message:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        if receive is None:
            await anyio.sleep_forever()
        assert receive is not None
        return await receive()

    return replay


async def _discard(message: Message) -> None:
    """The answer to a cancellation handed over on the client's behalf goes nowhere."""
