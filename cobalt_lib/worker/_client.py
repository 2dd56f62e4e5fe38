"""`cobalt run` handing its run to a warm worker: the console script calls `hand_over` before it imports
the CLI. Any failure to reach a worker of the same fingerprint means the run stays in process."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from . import _wire
from ._paths import MAX_SOCKET_PATH, fingerprint, private_dir, socket_path, supported, switched_off

#: Connecting and the worker's answer (it forks at once): past this, run in process.
HANDSHAKE_SECONDS = 5.0
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def wants_worker(args: list[str]) -> bool:
    """A Dagster-tracked `cobalt run`, on a platform that can fork, with the worker not switched off."""
    return (bool(args) and args[0] == "run" and "--no-dagster" not in args and not switched_off()
            and supported())


def hand_over(args: list[str]) -> int | None:
    """Run `cobalt <args>` in a worker and return its exit code; None when no worker took it."""
    directory = private_dir(create=False)
    if directory is None:
        return None
    digest = fingerprint()
    path = socket_path(directory, digest)
    if len(str(path)) > MAX_SOCKET_PATH:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(HANDSHAKE_SECONDS)
        sock.connect(str(path))
        lines = _wire.Lines(sock)
        _wire.send(sock, _request(args, digest), [0, 1, 2])
        answer = lines.read()
        if not answer or not answer.get("ok"):
            sock.close()
            return None
    except (OSError, ValueError):
        sock.close()
        return None
    return _wait_for_exit(sock, lines)


def _request(args: list[str], digest: str) -> dict[str, Any]:
    for fd in (0, 1, 2):
        os.fstat(fd)  # raises OSError for a closed descriptor: then the run stays in process
    umask = os.umask(0o022)
    os.umask(umask)
    return {"op": "run", "fingerprint": digest, "argv": [sys.argv[0], *args], "cwd": os.getcwd(),
            "client_pid": os.getpid(), "env": dict(os.environ), "path": list(sys.path), "umask": umask,
            "streams": [_stream(sys.stdin), _stream(sys.stdout), _stream(sys.stderr)]}


def _stream(stream: Any) -> list[str]:
    return [getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict"]


def _wait_for_exit(sock: socket.socket, lines: _wire.Lines) -> int:
    """Forward Ctrl-C, SIGTERM and SIGHUP to the run until the worker says how it ended."""
    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            _wire.send(sock, {"op": "signal", "signum": signum})

    previous = {signum: signal.signal(signum, forward) for signum in _FORWARDED}
    try:
        sock.settimeout(None)
        while True:
            try:
                message = lines.read()
            except (OSError, ValueError):
                message = None
            if message is None:
                print("cobalt: lost the connection to the run worker; the run's outcome is unknown "
                      "(see `cobalt worker status`)", file=sys.stderr)
                return 1
            if "exit" in message:
                return int(message["exit"])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sock.close()


def socket_for_this_process() -> Path | None:
    """Where a worker that may serve this process's runs listens (None: no usable directory)."""
    directory = private_dir(create=False)
    return None if directory is None else socket_path(directory, fingerprint())
