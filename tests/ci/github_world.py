"""A loopback GitHub REST server for the issue-comment endpoints a pull request comment uses: list (paginated
with `Link: rel="next"`, two comments a page), create and update; and the `pull_request` event file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from conftest import http_server

REPOSITORY = "acme/agent"
PULL = 7
TOKEN = "ghs_loopbacktoken0123456789"


@dataclass
class Hub:
    """What the server holds and saw: the pull request's comments, each request, and scripted refusals."""

    url: str
    comments: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: Statuses to answer the next requests with, first to last, before serving normally.
    refusals: list[tuple[int, dict[str, str]]] = field(default_factory=list)


class GitHub(BaseHTTPRequestHandler):
    hub: ClassVar[Hub]
    PAGE: ClassVar[int] = 2

    def _record(self, body: Any = None) -> bool:
        """Keep the request; answer a scripted refusal instead when one is queued (True: answered)."""
        self.hub.requests.append({"method": self.command, "path": self.path, "body": body,
                                  "authorization": self.headers.get("Authorization"),
                                  "api_version": self.headers.get("X-GitHub-Api-Version")})
        if self.hub.refusals:
            status, payload = self.hub.refusals.pop(0)
            self._json(status, payload)
            return True
        return False

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_GET(self) -> None:
        if self._record():
            return
        parts = urlsplit(self.path)
        if parts.path != f"/repos/{REPOSITORY}/issues/{PULL}/comments":
            return self._json(404, {"message": "Not Found"})
        query = parse_qs(parts.query)
        page, size = int(query.get("page", ["1"])[0]), min(int(query.get("per_page", ["30"])[0]), self.PAGE)
        start = (page - 1) * size
        headers = {}
        if start + size < len(self.hub.comments):
            headers["Link"] = (f'<http://{self.headers["Host"]}{parts.path}?per_page={size}&page={page + 1}>; '
                               f'rel="next"')
        self._json(200, self.hub.comments[start : start + size], headers)

    def do_POST(self) -> None:
        body = self._body()
        if self._record(body):
            return
        if self.path != f"/repos/{REPOSITORY}/issues/{PULL}/comments":
            return self._json(404, {"message": "Not Found"})
        number = 1000 + len(self.hub.comments)
        comment = {"id": number, "body": body["body"], "user": {"login": "github-actions[bot]"},
                   "html_url": f"https://github.com/{REPOSITORY}/pull/{PULL}#issuecomment-{number}"}
        self.hub.comments.append(comment)
        self._json(201, comment)

    def do_PATCH(self) -> None:
        body = self._body()
        if self._record(body):
            return
        prefix = f"/repos/{REPOSITORY}/issues/comments/"
        found = [c for c in self.hub.comments if self.path == f"{prefix}{c['id']}"]
        if not found:
            return self._json(404, {"message": "Not Found"})
        found[0]["body"] = body["body"]
        self._json(200, found[0])

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def github() -> Iterator[Hub]:
    """The server, its pull request already holding five comments of other people (three pages' worth)."""
    others = [{"id": 10 + i, "body": f"looks good {i}", "user": {"login": "someone"}} for i in range(5)]
    hub = Hub(url="", comments=others)
    handler = type("Served", (GitHub,), {"hub": hub})
    with http_server(handler) as url:
        hub.url = url
        yield hub


def event_file(directory: Path, *, pull_request: bool = True) -> Path:
    """A `pull_request` event as GitHub writes it (or a `push` event without one)."""
    path = directory / "event.json"
    event: dict[str, Any] = {"ref": "refs/heads/main", "after": "f" * 40}
    if pull_request:
        event = {"action": "synchronize", "number": PULL, "pull_request": {
            "number": PULL, "base": {"ref": "main", "sha": "a" * 40},
            "head": {"ref": "better-prompt", "sha": "b" * 40}}}
    path.write_text(json.dumps(event), encoding="utf-8")
    return path
