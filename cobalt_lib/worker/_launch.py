"""Starting, asking and stopping this user's run workers (`cobalt worker start|status|stop`), and the
background start an interactive `cobalt run` or `cobalt serve` makes for next time."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import _wire
from ._paths import (
    MAX_SOCKET_PATH,
    fingerprint,
    log_path,
    private_dir,
    socket_path,
    supported,
    switched_off,
)

#: Seconds `cobalt worker start` waits for a cold worker to warm up (imports, and the first time for
#: its fingerprint one warm-up run).
START_SECONDS = 180.0
STOP_SECONDS = 30.0
#: Idle timeout in seconds for workers started without `--idle-timeout`.
IDLE_VARIABLE = "COBALT_WORKER_IDLE_TIMEOUT"


class WorkerError(Exception):
    """A worker could not be started or reached (`cobalt worker` says why)."""


@dataclass(frozen=True)
class WorkerInfo:
    """One running worker, as it describes itself."""

    pid: int
    started: float
    served: int
    running: int
    matches: bool  # its fingerprint is this process's: it serves this `cobalt`'s runs
    python: str
    idle_timeout: float
    log: str
    socket: str

    @property
    def uptime(self) -> float:
        return max(0.0, time.time() - self.started)


def _directory(create: bool) -> Path:
    if not supported():
        raise WorkerError("this platform has no fork() or Unix sockets with descriptor passing; "
                          "`cobalt run` always runs in process here")
    directory = private_dir(create=create)
    if directory is None:
        raise WorkerError("the worker directory (COBALT_WORKER_DIR, else $XDG_RUNTIME_DIR/cobalt, else "
                          "/tmp/cobalt-<uid>) is not yours or is open to others; make it mode 0700")
    return directory


def default_idle_timeout() -> float:
    with contextlib.suppress(ValueError):
        return float(os.environ.get(IDLE_VARIABLE, ""))
    return 30 * 60.0


def _spawn(directory: Path, digest: str, idle_timeout: float | None, ready_fd: int | None) -> subprocess.Popen[bytes]:
    idle = default_idle_timeout() if idle_timeout is None else idle_timeout
    command = [sys.executable, "-m", "cobalt_lib.worker", "--idle-timeout", str(idle)]
    if ready_fd is not None:
        command += ["--ready-fd", str(ready_fd)]
    env = {**os.environ, "COBALT_WORKER": "off"}  # the worker's own children never look for a worker
    with open(log_path(directory, digest), "ab") as log:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                start_new_session=True, pass_fds=() if ready_fd is None else (ready_fd,),
                                cwd=directory)


def start(idle_timeout: float | None = None) -> WorkerInfo:
    """Start this process's worker detached (or find it running); return once it listens, warm."""
    directory = _directory(create=True)
    digest = fingerprint()
    path = socket_path(directory, digest)
    if len(str(path)) > MAX_SOCKET_PATH:
        raise WorkerError(f"the socket path {path} is longer than {MAX_SOCKET_PATH} characters; "
                          "set COBALT_WORKER_DIR to a shorter directory")
    running = _ask(path, {"op": "status"})
    if running:
        return _info(running, digest)
    read, write = os.pipe()
    try:
        process = _spawn(directory, digest, idle_timeout, write)
    finally:
        os.close(write)
    answer = _read_ready(read, process)
    if answer.startswith("ready") or answer == "busy":  # busy: another start won the race; wait for it
        info = _wait_until_listening(path, digest)
        if info:
            return info
    raise WorkerError(f"the worker did not start ({answer or 'no answer'}); see {log_path(directory, digest)}")


def _read_ready(read: int, process: subprocess.Popen[bytes]) -> str:
    with os.fdopen(read, encoding="utf-8") as pipe:
        ready, _, _ = select.select([pipe], [], [], START_SECONDS)
        text = pipe.readline().strip() if ready else "timed out"
    if text.startswith("error") or not text:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
    return text


def _wait_until_listening(path: Path, digest: str) -> WorkerInfo | None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        answer = _ask(path, {"op": "status"})
        if answer:
            return _info(answer, digest)
        time.sleep(0.1)
    return None


def start_in_background(idle_timeout: float | None = None) -> int | None:
    """Start this process's worker for next time without waiting, unless switched off or running.
    Returns the new worker's pid, None when none was started."""
    if switched_off() or not supported():
        return None
    directory = private_dir(create=True)
    if directory is None:
        return None
    digest = fingerprint()
    path = socket_path(directory, digest)
    if len(str(path)) > MAX_SOCKET_PATH or (path.with_suffix(".lock").exists() and _ask(path, {"op": "status"})):
        return None
    try:
        return _spawn(directory, digest, idle_timeout, None).pid
    except OSError:
        return None


def workers() -> list[WorkerInfo]:
    """This interpreter's running workers (the current fingerprint's and stale ones)."""
    directory = private_dir(create=False) if supported() else None
    if directory is None:
        return []  # no usable directory: no worker can be listening there
    digest = fingerprint()
    found = []
    for path in sorted(directory.glob("w-*.sock")):
        answer = _ask(path, {"op": "status"})
        if answer and answer.get("python") == sys.executable:
            found.append(_info(answer, digest))
    return found


def stop() -> list[WorkerInfo]:
    """Stop this interpreter's workers: each takes no new run and exits once its runs in flight have
    finished. Returns those asked to stop (`running` > 0: still finishing), having waited for the
    others' processes to exit."""
    stopped = []
    for info in workers():
        asked = info
        with contextlib.suppress(OSError, ValueError), _connect(Path(info.socket), STOP_SECONDS) as sock:
            lines = _wire.Lines(sock)
            _wire.send(sock, {"op": "stop"})
            answer = lines.read() or {}
            asked = replace(info, running=int(answer.get("running", info.running)))
            if not asked.running:
                lines.read()  # EOF: the worker's process has exited
        stopped.append(asked)
    return stopped


def _connect(path: Path, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    return sock


def _ask(path: Path, message: dict[str, Any]) -> dict[str, Any] | None:
    """One request and its answer; None when nothing answers there."""
    try:
        with _connect(path, 5.0) as sock:
            _wire.send(sock, message)
            return _wire.Lines(sock).read()
    except (OSError, ValueError):
        return None


def _info(answer: dict[str, Any], digest: str) -> WorkerInfo:
    return WorkerInfo(pid=int(answer["pid"]), started=float(answer["started"]), served=int(answer["served"]),
                      running=int(answer["running"]), matches=answer.get("fingerprint") == digest,
                      python=str(answer["python"]), idle_timeout=float(answer["idle_timeout"]),
                      log=str(answer["log"]), socket=str(answer["socket"]))
