"""Webhooks posted from synchronous code, also inside a running event loop, to a real local server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest
from conftest import http_server

from cobalt_lib import ExperimentReport
from cobalt_lib.ci import apost_webhooks, post_webhooks

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


class Flaky(BaseHTTPRequestHandler):
    """Answers each POST with the next scripted (status, Retry-After) pair, then 200."""

    script: ClassVar[list[tuple[int, str | None]]] = []
    posts: ClassVar[int] = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        status, retry_after = self.script.pop(0) if self.script else (200, None)
        type(self).posts += 1
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(("script", "waits", "warning"), [
    ([(503, None), (500, None)], [0.4, 0.8], None),  # the backoff, then success
    ([(429, "0"), (429, "3")], [0.0, 3.0], None),  # Retry-After honoured, 0 included
    ([(500, None)] * 3, [0.4, 0.8], "failed after 3 attempts: HTTP 500"),
])
def test_webhook_retries_wait_the_backoff_or_what_the_server_asks(
        script: list[tuple[int, str | None]], waits: list[float], warning: str | None) -> None:
    handler = type("Scripted", (Flaky,), {"script": list(script), "posts": 0})
    slept: list[float] = []

    async def sleep(seconds: float) -> None:  # records the wait instead of taking it
        slept.append(seconds)

    with http_server(handler) as url:
        warnings = post_webhooks([f"{url}/hook"], REPORT, sleep=sleep)
    assert slept == waits and handler.posts == len(waits) + 1
    assert warnings == ([] if warning is None else [f"webhook {url}/… {warning}"])
