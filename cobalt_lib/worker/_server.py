"""The worker's loop: one thread, one selector. It accepts `cobalt run`s on its socket, forks a child
for each (see `_child`), forwards the client's signals to it and sends back its exit status; it
answers `status` and `stop`, and exits once idle for its timeout."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import _wire
from ._child import run_child

#: The signals a client may forward to its run (Ctrl-C, SIGTERM, a closed terminal).
FORWARDED = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@dataclass
class Connection:
    sock: socket.socket
    lines: _wire.Lines
    fds: list[int] = field(default_factory=list)
    pid: int | None = None  # the child running this client's run
    closed: bool = False  # the client went away


@dataclass
class Worker:
    listener: socket.socket
    path: Path
    fingerprint: str
    idle_timeout: float
    log: Path
    keep_open: list[int]  # descriptors of the worker's own (the lock file) that a child must close
    inode: int  # of the socket file, which is unlinked at the end only while it is still this one
    started: float = field(default_factory=time.time)
    served: int = 0
    stopping: bool = False
    last_active: float = field(default_factory=time.monotonic)
    _conns: dict[int, Connection] = field(default_factory=dict)
    _children: dict[int, Connection] = field(default_factory=dict)
    _lingering: list[socket.socket] = field(default_factory=list)
    _terminated: bool = False

    def serve(self) -> None:
        """Until stopped (and its runs finished) or idle for `idle_timeout` seconds."""
        self._wake_r, self._wake_w = socket.socketpair()
        for end in (self._wake_r, self._wake_w):
            end.setblocking(False)
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup byte is written
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while not self._done():
                for key, _ in self._selector.select(timeout=self._timeout()):
                    self._dispatch(key)
                self._reap()
                if self._terminated and not self.stopping:
                    self._stop()
        finally:
            self._close_listener()

    def _on_sigterm(self, signum: int, frame: object) -> None:
        self._terminated = True  # acted on by the loop: a handler must not touch the selector mid-call

    def _done(self) -> bool:
        if self._children:
            return False
        return self.stopping or time.monotonic() - self.last_active >= self.idle_timeout

    def _timeout(self) -> float:
        return max(0.05, self.idle_timeout - (time.monotonic() - self.last_active))

    def _dispatch(self, key: selectors.SelectorKey) -> None:
        if key.data == "accept":
            self._accept()
        elif key.data == "wake":
            with contextlib.suppress(OSError):
                while self._wake_r.recv(4096):
                    pass
        else:
            self._readable(key.data)

    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        if not _same_user(sock):
            sock.close()
            return
        sock.setblocking(False)
        conn = Connection(sock, _wire.Lines(sock))
        self._conns[sock.fileno()] = conn
        self._selector.register(sock, selectors.EVENT_READ, conn)
        self.last_active = time.monotonic()

    def _readable(self, conn: Connection) -> None:
        try:
            if conn.pid is None and not conn.fds:
                data, fds, _, _ = socket.recv_fds(conn.sock, 65536, 3)
                conn.fds.extend(fds)
            else:
                data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._gone(conn)
            return
        conn.lines.feed(data)
        try:
            while (message := conn.lines.next_message()) is not None:
                self._handle(conn, message)
        except (ValueError, OSError) as exc:
            print(f"cobalt worker: dropped a client: {exc}", file=sys.stderr, flush=True)
            self._drop(conn)

    def _handle(self, conn: Connection, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "run" and conn.pid is None:
            self._run(conn, message)
        elif op == "signal" and conn.pid is not None:
            signum = int(message.get("signum", 0))
            if signum in FORWARDED:
                _signal_group(conn.pid, signum)
        elif op == "status":
            self._reply(conn, self.status())
            self._drop(conn)
        elif op == "stop":
            self._reply(conn, {"ok": True, "pid": os.getpid(), "running": len(self._children)})
            self._stop()
            self._linger(conn)  # closed when this process exits: the client waits for that
        else:
            self._drop(conn)

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "started": self.started, "served": self.served,
                "running": len(self._children), "fingerprint": self.fingerprint, "python": sys.executable,
                "idle_timeout": self.idle_timeout, "log": str(self.log), "socket": str(self.path)}

    def _run(self, conn: Connection, request: dict[str, Any]) -> None:
        if request.get("fingerprint") != self.fingerprint or len(conn.fds) != 3 or self.stopping:
            self._reply(conn, {"ok": False, "reason": "fingerprint" if len(conn.fds) == 3 else "descriptors"})
            self._drop(conn)
            return
        close = [self.listener.fileno(), self._wake_r.fileno(), self._wake_w.fileno(), *self.keep_open,
                 *(c.sock.fileno() for c in self._conns.values()), *(s.fileno() for s in self._lingering)]
        pid = os.fork()
        if pid == 0:  # the child: never returns into this loop
            run_child(request, conn.fds, close)
        for fd in conn.fds:
            os.close(fd)  # the child has them: a pipe the client reads must see EOF when the child exits
        conn.fds.clear()
        conn.pid = pid
        self._children[pid] = conn
        self.served += 1
        say(f"run {self.served}: process {pid} for `cobalt` pid {request.get('client_pid')} in {request.get('cwd')}")
        self._reply(conn, {"ok": True, "pid": pid})

    def _gone(self, conn: Connection) -> None:
        """The client closed the connection: a run still going is terminated, as a closed terminal would."""
        if conn.pid is not None and conn.pid in self._children:
            conn.closed = True
            _signal_group(conn.pid, signal.SIGTERM)
            self._selector.unregister(conn.sock)
            return
        self._drop(conn)

    def _reap(self) -> None:
        while self._children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self._children.pop(pid, None)
            if conn is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            self.last_active = time.monotonic()
            if not conn.closed:
                self._reply(conn, {"exit": code if code >= 0 else 128 - code})
            self._drop(conn)

    def _reply(self, conn: Connection, message: dict[str, Any]) -> None:
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(5)
            _wire.send(conn.sock, message)
            conn.sock.setblocking(False)
        except OSError:
            conn.closed = True

    def _drop(self, conn: Connection) -> None:
        for fd in conn.fds:
            os.close(fd)
        conn.fds.clear()
        self._conns.pop(conn.sock.fileno(), None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.sock.close()

    def _linger(self, conn: Connection) -> None:
        self._conns.pop(conn.sock.fileno(), None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        self._lingering.append(conn.sock)

    def _stop(self) -> None:
        """No new runs from now on; the loop ends once the runs in flight have finished."""
        self.stopping = True
        self._close_listener()

    def _close_listener(self) -> None:
        if self.listener.fileno() < 0:
            return
        with contextlib.suppress(KeyError, ValueError, AttributeError):
            self._selector.unregister(self.listener)
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self.inode:  # still ours, not a newer worker's
                self.path.unlink()
        self.listener.close()


def say(text: str) -> None:
    """A line of the worker's log (its stderr)."""
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} cobalt worker: {text}", file=sys.stderr, flush=True)


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _same_user(sock: socket.socket) -> bool:
    """The peer runs as this user (SO_PEERCRED on Linux); elsewhere the 0700 directory is the guard."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()
