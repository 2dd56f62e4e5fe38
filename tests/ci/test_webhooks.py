"""Webhooks posted from synchronous code, also inside a running event loop, to a real local server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest
from conftest import http_server
from http_world import Say, judge_server

from cobalt_lib import ExperimentReport
from cobalt_lib.ci import apost_webhooks, post_webhooks
from cobalt_lib.llm._retry import Timing

REPORT = ExperimentReport(id="r-1", name="qa", timestamp="2026-01-01T00:00:00+00:00")


class Receiver(BaseHTTPRequestHandler):
    """Answers 404 under /missing, else 200; keeps every body it was sent."""

    bodies: ClassVar[list[tuple[str, dict[str, object]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append((self.path, body))
        self.send_response(404 if self.path.startswith("/missing") else 200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    handler = type("Received", (Receiver,), {"bodies": []})
    with http_server(handler) as url:
        yield url, handler


def test_post_webhooks_works_inside_a_running_event_loop(receiver: tuple[str, type[Receiver]]) -> None:
    url, handler = receiver

    async def notebook_cell() -> list[str]:  # as a notebook or an MCP server's handler would call it
        return post_webhooks([f"{url}/hook", f"{url}/missing/secret-token"], REPORT, attempts=1)

    warnings = asyncio.run(notebook_cell())
    assert warnings == [f"webhook {url}/… failed: HTTP 404"]  # the token in the path is not shown
    assert sorted(path for path, _ in handler.bodies) == ["/hook", "/missing/secret-token"]
    assert all(body["id"] == "r-1" and body["name"] == "qa" for _, body in handler.bodies)


def test_the_async_form_awaits_in_the_callers_loop(receiver: tuple[str, type[Receiver]]) -> None:
    url, handler = receiver
    assert asyncio.run(apost_webhooks([f"{url}/hook"], REPORT)) == []
    assert post_webhooks([f"{url}/again"], REPORT) == []  # and outside a loop, as the CLI calls it
    assert [path for path, _ in handler.bodies] == ["/hook", "/again"]
    assert post_webhooks([], REPORT) == []


class VirtualClock:
    """Time that only the retries' waits advance; the SDKs' backoff without its jitter."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def timing(self) -> Timing:
        return Timing(backoff=lambda retry: 0.5 * 2**retry, monotonic=lambda: self.now, sleep=self.sleep)


@pytest.mark.parametrize(("script", "warning", "posts", "waits"), [
    ([Say(503), Say()], None, 2, [0.5]),
    ([Say(429, {"Retry-After": "0"}), Say()], None, 2, [0.5]),  # 0 counts as absent: the backoff, not a storm
    ([Say(429, {"Retry-After": "2"}), Say()], None, 2, [2.0]),
    ([Say(409), Say()], None, 2, [0.5]),
    ([Say(503, {"x-should-retry": "false"})], "HTTP 503", 1, []),
    ([Say(302, {"Location": "http://127.0.0.1:9/"})], "HTTP 302", 1, []),  # not followed, not delivered
    ([Say(500)] * 3, "HTTP 500 (gave up after 3 attempts)", 3, [0.5, 1.0]),
    ([Say(429, {"Retry-After": "3600"})], "HTTP 429 (not retried: the server asked to wait 1h 00m, more than the 30s "
     "left of the retry budget (the webhooks' budget))", 1, []),
], ids=["503", "retry-after-0", "retry-after-2", "409", "x-should-retry-false", "302", "gives-up", "beyond-budget"])
def test_webhooks_retry_by_the_judges_rules(script: list[Say], warning: str | None, posts: int,
                                            waits: list[float]) -> None:
    clock = VirtualClock()
    with judge_server(*script) as server:
        url = server.url.replace("://", "://hook:hook-PASSWORD-1@") + "/hooks/secret-TOKEN?sig=abc"
        warnings = post_webhooks([url], REPORT, timing=clock.timing())
    assert warnings == ([f"webhook {server.url}/… failed: {warning}"] if warning else [])
    assert len(server.received) == posts and clock.waits == waits
    assert all(h["headers"]["authorization"].startswith("Basic ") for h in server.received)
