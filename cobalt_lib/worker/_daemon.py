"""The worker process (`python -m cobalt_lib.worker`): warm up, listen, serve until idle or stopped.

Started detached by `cobalt worker start` (or in the background by `cobalt run` and `cobalt serve`),
in its own session, its output in the log file beside its socket.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import socket
import sys
import time
from typing import IO

from ._paths import fingerprint, log_path, modules_path, private_dir, socket_path
from ._server import Worker, say
from ._warm import import_all, modules_to_import, thread_count, warm_caches

#: Runs longer than this from a user's last one end the worker (seconds; `--idle-timeout`).
DEFAULT_IDLE_TIMEOUT = 30 * 60.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cobalt_lib.worker")
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT)
    parser.add_argument("--ready-fd", type=int, default=-1)
    args = parser.parse_args(argv)
    ready = os.fdopen(args.ready_fd, "w", encoding="utf-8") if args.ready_fd >= 0 else None
    try:
        say(f"starting (pid {os.getpid()}, {sys.executable})")
        worker = _prepare(args.idle_timeout)
    except Exception as exc:
        say(f"could not start: {exc}")
        _tell(ready, f"error {exc}")
        sys.exit(1)
    if worker is None:
        _tell(ready, "busy")
        return
    say(f"listening on {worker.path}")
    _tell(ready, f"ready {os.getpid()}")
    worker.serve()
    say(f"exiting after {worker.served} runs")
    # Nothing to tear down (the worker never ran a run itself); finalising thousands of modules would
    # only keep `cobalt worker stop` waiting.
    os._exit(0)


def _prepare(idle_timeout: float) -> Worker | None:
    """Lock, warm up and listen; None when another worker of this fingerprint holds the lock."""
    directory = private_dir(create=True)
    if directory is None:
        raise RuntimeError("the worker directory is missing, not yours or open to others (it must be mode 0700)")
    digest = fingerprint()
    path = socket_path(directory, digest)
    lock = open(path.with_suffix(".lock"), "a")  # noqa: SIM115  (held for the worker's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    started = time.monotonic()
    failed = import_all(modules_to_import(modules_path(directory, digest)))
    warm_caches()
    say(f"imported what a run imports in {time.monotonic() - started:.1f} s"
         + (f" ({len(failed)} modules skipped: {', '.join(failed[:5])})" if failed else ""))
    if thread_count() != 1:
        raise RuntimeError(f"{thread_count()} threads after the imports: a forking worker must have one")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a stale socket of a worker that died: the lock says none is alive
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(64)
    return Worker(listener=listener, path=path, fingerprint=digest, idle_timeout=idle_timeout,
                  log=log_path(directory, digest), keep_open=[lock.fileno()], inode=path.stat().st_ino)


def _tell(ready: IO[str] | None, text: str) -> None:
    if ready is None:
        return
    with contextlib.suppress(OSError):
        ready.write(text + "\n")
        ready.close()
