"""`cobalt collect`'s OTLP/HTTP receiver: `POST /v1/traces`, protobuf or JSON, gzip or plain.

Who may send: the Host header must name this server (its loopback names, the address it is bound to,
and, bound to every interface, the names the caller allows): another Host is a DNS-rebinding page's
request and gets 421. Bound anywhere but loopback, every request needs `Authorization: Bearer TOKEN`
(401 otherwise, compared in constant time), as `cobalt mcp --http`. A body past `max_body_bytes` gets
413, one that is not OTLP 400, both with one sentence (in an OTLP `Status` for protobuf and JSON
clients alike) and nothing of it stored; a store held by another process answers 503 with Retry-After,
which OTLP exporters retry, so a span is stored once accepted or sent again.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .._errors import StoreLocked
from .._secrets import scrub
from ._ingest import Ingest, TooLarge, decode, decompress
from ._otlp import BadPayload

DEFAULT_PORT = 4318
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: OTLP's status code for an argument the server cannot take (google.rpc.Code.INVALID_ARGUMENT).
_INVALID = 3


class Collector(ThreadingHTTPServer):
    """The receiver, bound; `serve_forever()` (or `start()` for a thread of its own) serves it."""

    daemon_threads = True

    def __init__(self, ingest: Ingest, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
                 token: str | None = None, hosts: Sequence[str] = (), max_body_bytes: int = 16 * 1024 * 1024) -> None:
        self.ingest = ingest
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.accepted = 0
        self._count_lock = threading.Lock()
        super().__init__((host, port), _Handler)
        port = self.server_address[1]
        names = [*LOOPBACK[:2], "[::1]", *([] if host in ("0.0.0.0", "::", "") else [host]), *hosts]
        # a client leaves the port out of Host only when it is HTTP's default
        self.allowed_hosts = {f"{n}:{port}" for n in names} | (set(names) if port == 80 else set())

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="cobalt-collect", daemon=True)
        thread.start()
        return thread

    def server_close(self) -> None:
        super().server_close()
        self.ingest.close()  # the store let go: another process may open it now

    def count(self, n: int) -> None:
        with self._count_lock:
            self.accepted += n


def needs_token(host: str) -> bool:
    """Whether a server bound to `host` must ask for a token: anything but loopback."""
    return host not in LOOPBACK


class _Handler(BaseHTTPRequestHandler):
    server: Collector
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per request would drown the one line that matters (errors, said in the answer)

    def do_GET(self) -> None:
        self._answer(405, "Only POST /v1/traces is served here (OTLP/HTTP traces).", "text/plain")

    def do_POST(self) -> None:
        refusal = self._refusal()
        if refusal is not None:
            self._close_after()
            self._answer(*refusal)
            return
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        kind = self.headers.get("Content-Type", "")
        try:
            spans = decode(decompress(body, self.headers.get("Content-Encoding", ""), self.server.max_body_bytes), kind)
            stored = self.server.ingest.accept(spans)
        except TooLarge as exc:
            self._status(413, str(exc), kind)
            return
        except BadPayload as exc:
            self._status(400, str(exc), kind)
            return
        except StoreLocked as exc:
            self._status(503, f"The store is busy ({exc}); send the batch again.", kind, retry=True)
            return
        self.server.count(stored)
        if kind.startswith("application/json"):
            self._answer(200, "{}", "application/json")
        else:
            self._answer(200, b"", "application/x-protobuf")

    def _refusal(self) -> tuple[int, str, str] | None:
        """Why the request is refused before its body is read (status, sentence, type), or None."""
        if self.path.split("?")[0] != "/v1/traces":
            return 404, f"No {self.path.split('?')[0]} here; OTLP traces go to POST /v1/traces.", "text/plain"
        if self.headers.get("Host", "") not in self.server.allowed_hosts:
            return 421, "The Host header does not name this server.", "text/plain"
        if self.server.token is not None:
            given = self.headers.get_all("Authorization") or []
            if len(given) != 1 or not secrets.compare_digest(given[0].encode(), f"Bearer {self.server.token}".encode()):
                return 401, "Unauthorized: send the collector's token as 'Authorization: Bearer TOKEN'.", "text/plain"
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return 411, "Send the body with a Content-Length.", "text/plain"
        if int(length) > self.server.max_body_bytes:
            return 413, (f"The body is {int(length):,} bytes, over the {self.server.max_body_bytes:,} taken "
                         "([monitor] max_body_bytes); send smaller batches."), "text/plain"
        return None

    def _close_after(self) -> None:
        """Close after a refusal: the unread body would be taken for the next request."""
        self.close_connection = True

    def _status(self, code: int, message: str, kind: str, *, retry: bool = False) -> None:
        message = scrub(message)
        if kind.startswith("application/json"):
            self._answer(code, json.dumps({"code": _INVALID, "message": message}), "application/json", retry=retry)
        elif "protobuf" in kind:
            self._answer(code, _status_protobuf(_INVALID, message), "application/x-protobuf", retry=retry)
        else:
            self._answer(code, message, "text/plain", retry=retry)

    def _answer(self, code: int, body: str | bytes, kind: str, *, retry: bool = False) -> None:
        data = body.encode() if isinstance(body, str) else body
        if kind == "text/plain":
            data += b"\n"
            kind = "text/plain; charset=utf-8"
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        if retry:
            self.send_header("Retry-After", "1")
        if code == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="cobalt collect"')
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


def _status_protobuf(code: int, message: str) -> bytes:
    """A `google.rpc.Status` (code = field 1, message = field 2), encoded by hand: two fields, no schema."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def serve(collector: Collector) -> None:
    """Serve until interrupted, saying where and how many spans were stored at the end."""
    print(f"cobalt collect: OTLP/HTTP traces at {collector.url}/v1/traces", file=sys.stderr, flush=True)
    try:
        collector.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        collector.server_close()
        print(f"cobalt collect: {collector.accepted:,} spans stored.", file=sys.stderr)
