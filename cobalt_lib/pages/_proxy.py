"""The Dagster UI's port under `cobalt serve`: a loopback reverse proxy in front of dagster-webserver.

Dagster's webserver (1.13) checks neither Host nor Origin and has no option to: `dagster-webserver
--help` offers `--read-only` (no mutations at all, so no launching runs from the UI) and a path
prefix, nothing about hosts or origins. So the webserver listens on another loopback port, and the
port the user opens is this proxy, which applies `_guard`'s rule:

- a foreign Host (DNS rebinding) gets 421;
- a request that can change state from another site's page gets 403: any method but GET/HEAD/
  OPTIONS, every WebSocket (GraphQL subscriptions), and a GET of `/graphql` with a `query` (Dagster
  executes GraphQL from a GET too, mutations included, and a cross-site `<img src>` sends no Origin,
  so `Sec-Fetch-Site` decides there).

Everything else is passed through as is (Host kept, bodies streamed, compression untouched). Under
`cobalt serve` the webserver listens on a Unix socket in a directory only the user can enter and answers only
requests carrying a secret header that this proxy adds (`cobalt_dagster._webserver`): it is the only door.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import ClientError, ClientSession, ClientTimeout, DummyCookieJar, UnixConnector, WSMsgType, web

from ._guard import SAFE_METHODS, from_elsewhere, host_allowed, refusal
from ._served import ThreadedServer

UPSTREAM: web.AppKey[str] = web.AppKey("upstream")
SESSION: web.AppKey[ClientSession] = web.AppKey("session")
#: The Unix socket the webserver listens on (None: `upstream` is a TCP address).
SOCKET: web.AppKey[str | None] = web.AppKey("socket")
#: The header (name, secret) added to every request passed on, which the webserver requires.
PASS: web.AppKey[tuple[str, str] | None] = web.AppKey("pass")
#: Headers that belong to one connection, not to the request or response passed on.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade"})


def create_proxy(upstream: str, *, socket: str | None = None,
                 secret: tuple[str, str] | None = None) -> web.Application:
    """An app passing every allowed request to `upstream` (`http://127.0.0.1:PORT`, or through the Unix
    `socket`), with the header `secret` (name, value) added."""
    app = web.Application(client_max_size=0)
    app[UPSTREAM] = upstream
    app[SOCKET] = socket
    app[PASS] = secret
    app.cleanup_ctx.append(_session)
    app.router.add_route("*", "/{tail:.*}", _proxy)
    return app


async def _session(app: web.Application) -> Any:
    timeout = ClientTimeout(total=None, sock_connect=30)  # streams and long polls run as long as they run
    socket = app[SOCKET]
    connector = UnixConnector(path=socket) if socket else None
    async with ClientSession(timeout=timeout, auto_decompress=False, cookie_jar=DummyCookieJar(),
                             connector=connector) as session:
        app[SESSION] = session
        yield


def changes_state(request: web.Request) -> bool:
    """Whether a request may change Dagster's state (so must come from the UI's own origin)."""
    if request.method not in SAFE_METHODS or _is_websocket(request):
        return True
    return request.path.rstrip("/").endswith("/graphql") and "query" in request.query


def _is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


async def _proxy(request: web.Request) -> web.StreamResponse:
    address = request.transport.get_extra_info("sockname") if request.transport else None
    port = int(address[1]) if address else 0
    host = request.headers.get("Host")
    if not host_allowed(host, port):
        return _refused(421, "Misdirected request (another Host)", port)
    if changes_state(request) and from_elsewhere(request.headers, host or ""):
        return _refused(403, "Refused: a change to Dagster from another site's page", port)
    try:
        return await (_websocket(request) if _is_websocket(request) else _http(request))
    except ClientError:
        return web.Response(text="Dagster's webserver is not answering (yet); `cobalt serve` prints when it is.\n",
                            status=502)


def _refused(status: int, what: str, port: int) -> web.Response:
    status, body = refusal(status, what, port)
    return web.Response(status=status, text=body, headers={"X-Content-Type-Options": "nosniff"})


def _passed(headers: Any, secret: tuple[str, str] | None = None) -> dict[str, str]:
    """`headers` without the hop-by-hop ones (and without any copy of the secret header a client sent), the
    proxy's `secret` header added."""
    passed = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP
              and (secret is None or k.lower() != secret[0])}
    if secret is not None:
        passed[secret[0]] = secret[1]
    return passed


async def _http(request: web.Request) -> web.StreamResponse:
    session = request.app[SESSION]
    url = request.app[UPSTREAM] + str(request.rel_url)
    body = request.content if request.body_exists else None
    async with session.request(request.method, url, headers=_passed(request.headers, request.app[PASS]), data=body,
                               allow_redirects=False) as upstream:
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason,
                                      headers=_passed(upstream.headers))
        await response.prepare(request)
        try:
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
        except ClientError:  # the webserver went away mid-answer: the client sees a cut response
            return response
        await response.write_eof()
        return response


async def _websocket(request: web.Request) -> web.StreamResponse:
    """Both ends of a WebSocket joined: Dagster's GraphQL subscriptions (`graphql-ws`)."""
    session = request.app[SESSION]
    protocols = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    url = request.app[UPSTREAM] + str(request.rel_url)
    headers = _passed({k: v for k, v in request.headers.items()
                       if k.lower() in ("host", "origin", "cookie", "user-agent")}, request.app[PASS])
    async with session.ws_connect(url, protocols=protocols, headers=headers, max_msg_size=0) as upstream:
        client = web.WebSocketResponse(protocols=[upstream.protocol] if upstream.protocol else (),
                                       max_msg_size=0)
        await client.prepare(request)
        pumps = [asyncio.ensure_future(_pump(client, upstream)), asyncio.ensure_future(_pump(upstream, client))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await upstream.close()
            await client.close()
        return client


async def _pump(source: Any, sink: Any) -> None:
    async for message in source:
        if message.type == WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type == WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        else:
            return


class DagsterProxy(ThreadedServer):
    """The proxy on 127.0.0.1:`port` in a background thread, passing allowed requests to `upstream`."""

    thread_name = "cobalt-dagster-proxy"

    def __init__(self, upstream: str, port: int, *, socket: str | None = None,
                 secret: tuple[str, str] | None = None) -> None:
        super().__init__("127.0.0.1", port)
        self.upstream = upstream
        self.socket = socket
        self.secret = secret

    def application(self) -> web.Application:
        return create_proxy(self.upstream, socket=self.socket, secret=self.secret)

    def taken(self, error: BaseException) -> str:
        return f"Cannot serve the Dagster UI on 127.0.0.1:{self.port}: {error}; pass --port another port."
