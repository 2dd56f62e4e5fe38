"""The proxy in front of Dagster's webserver, against a small loopback upstream standing in for it:
what passes (bodies, compressed answers, WebSockets) and what is refused (issue 22, finding 11)."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
from aiohttp import WSMsgType, web

from cobalt_lib.pages import DagsterProxy
from cobalt_lib.pages._served import ThreadedServer


@dataclass
class Seen:
    requests: list[tuple[str, str, str, bytes]] = field(default_factory=list)


class Upstream(ThreadedServer):
    """Records every request; `/gz` answers gzip-compressed; `/graphql` upgrades to an echoing WebSocket."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = Seen()

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            ws = web.WebSocketResponse(protocols=("graphql-ws",))
            await ws.prepare(request)
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    await ws.send_str(f"echo {message.data}")
            return ws
        body = await request.read()
        self.seen.requests.append((request.method, request.path_qs, request.headers.get("Host", ""), body))
        if request.path == "/gz":
            return web.Response(body=gzip.compress(b"compressed" * 1000), headers={"Content-Encoding": "gzip"})
        return web.json_response({"method": request.method, "body": body.decode()})


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[str, Upstream]]:
    upstream = Upstream()
    upstream.start()
    proxy = DagsterProxy(upstream.url, 0)
    try:
        yield proxy.start(), upstream
    finally:
        proxy.stop()
        upstream.stop()


def test_allowed_requests_pass_with_their_host_body_and_compression(proxied: tuple[str, Upstream]) -> None:
    url, upstream = proxied
    answer = httpx.post(f"{url}/graphql", json={"query": "mutation { x }"}, headers={"Origin": url}, timeout=10)
    assert answer.status_code == 200 and answer.json() == {"method": "POST", "body": '{"query":"mutation { x }"}'}
    assert upstream.seen.requests[-1][2] == url.removeprefix("http://")  # the Host the browser sent, kept
    scripted = httpx.post(f"{url}/report_asset_materialization/a", content=b"{}", timeout=10)
    assert scripted.status_code == 200  # a script: no Origin, no Sec-Fetch-Site
    compressed = httpx.get(f"{url}/gz", timeout=10)
    assert compressed.headers["content-encoding"] == "gzip" and compressed.text == "compressed" * 1000
    page = httpx.get(f"{url}/assets?view=x", headers={"Sec-Fetch-Site": "cross-site"}, timeout=10)
    assert page.status_code == 200  # a link from elsewhere opens the UI; it changes nothing


def test_other_sites_are_refused_before_the_webserver_sees_them(proxied: tuple[str, Upstream]) -> None:
    url, upstream = proxied
    port = url.rsplit(":", 1)[1]
    before = len(upstream.seen.requests)
    refused = [
        httpx.post(f"{url}/graphql", json={}, headers={"Origin": "http://evil.example"}, timeout=10),
        httpx.post(f"{url}/graphql", json={}, headers={"Origin": "null"}, timeout=10),
        httpx.delete(f"{url}/anything", headers={"Sec-Fetch-Site": "same-site"}, timeout=10),
        httpx.get(f"{url}/graphql", params={"query": "mutation { wipe }"}, headers={"Sec-Fetch-Site": "cross-site"},
                  timeout=10),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    rebound = httpx.get(f"{url}/graphql", params={"query": "{ runs }"}, headers={"Host": f"evil.example:{port}"},
                        timeout=10)
    assert rebound.status_code == 421 and "runs" not in rebound.text
    assert len(upstream.seen.requests) == before


def test_websockets_pass_from_the_own_origin_only(proxied: tuple[str, Upstream]) -> None:
    import aiohttp

    url, _ = proxied

    async def talk(origin: str) -> tuple[str | None, str]:
        async with aiohttp.ClientSession() as session, session.ws_connect(
                f"{url.replace('http', 'ws')}/graphql", protocols=("graphql-ws",), headers={"Origin": origin}) as ws:
            await ws.send_str(json.dumps({"type": "connection_init"}))
            message = await ws.receive(timeout=10)
            return ws.protocol, message.data

    assert asyncio.run(talk(url)) == ("graphql-ws", 'echo {"type": "connection_init"}')
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        asyncio.run(talk("http://evil.example"))
    assert refused.value.status == 403
