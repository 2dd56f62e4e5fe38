"""Messages between `cobalt` and a run worker: one JSON object per line on a Unix stream socket; a run
request carries the client's stdin, stdout and stderr along with its first bytes (SCM_RIGHTS)."""

from __future__ import annotations

import json
import socket
from typing import Any

#: Larger messages are not cobalt's (a run request is argv, cwd, the environment and sys.path).
MAX_MESSAGE = 4 * 1024 * 1024


class Lines:
    """Reads one message at a time from a stream socket, keeping what arrived beyond it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next_message(self) -> dict[str, Any] | None:
        """The next complete message already received, else None."""
        line, newline, rest = self._buffer.partition(b"\n")
        if not newline:
            if len(self._buffer) > MAX_MESSAGE:
                raise ValueError("message too long")
            return None
        self._buffer = rest
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a message must be a JSON object")
        return message

    def read(self) -> dict[str, Any] | None:
        """Block until a whole message arrives; None when the peer closed the connection first."""
        while True:
            message = self.next_message()
            if message is not None:
                return message
            data = self.sock.recv(65536)
            if not data:
                return None
            self.feed(data)


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = encode(message)
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:
        sock.sendall(data)
