"""A forked child of the worker: it becomes the client's `cobalt run` (its descriptors, environment,
working directory, argv and sys.path) and runs the CLI as the console script would, then exits."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import os
import signal
import sys
import threading
import traceback
import warnings
from typing import Any, NoReturn


def run_child(request: dict[str, Any], fds: list[int], close: list[int]) -> NoReturn:
    """Never returns: whatever happens, the process ends here with the run's exit code."""
    code = 1
    try:
        _become_client(request, fds, close)
        code = _run_cli(list(request["argv"])[1:])
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            code = _shut_down(code)
    os._exit(code)


def _become_client(request: dict[str, Any], fds: list[int], close: list[int]) -> None:
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for fd in close:
        with contextlib.suppress(OSError):
            os.close(fd)
    os.setpgid(0, 0)  # the client forwards a signal to the group, as a terminal's Ctrl-C reaches the job
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.umask(int(request["umask"]))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    sys.path[:] = list(request["path"])
    if os.environ.get("PYTHONWARNINGS"):  # read at startup by the client's interpreter, not by ours
        for option in os.environ["PYTHONWARNINGS"].split(","):
            with contextlib.suppress(Exception):
                warnings._setoption(option)  # type: ignore[attr-defined]
    importlib.invalidate_caches()
    _std_streams(request["streams"])


def _std_streams(streams: list[list[str]]) -> None:
    """New sys.stdin/stdout/stderr on descriptors 0-2 with the client's encodings, buffered as Python
    buffers them at startup (line by line on a terminal; stderr always)."""
    (in_enc, in_err), (out_enc, out_err), (err_enc, err_err) = streams
    stdin = open(0, encoding=in_enc, errors=in_err, closefd=False)  # noqa: SIM115
    stdout = open(1, "w", encoding=out_enc, errors=out_err, newline="\n", closefd=False)  # noqa: SIM115
    stdout.reconfigure(line_buffering=os.isatty(1))
    stderr = open(2, "w", encoding=err_enc, errors=err_err, newline="\n", closefd=False)  # noqa: SIM115
    stderr.reconfigure(line_buffering=True)
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = stdin, stdout, stderr  # type: ignore[misc]


def _run_cli(args: list[str]) -> int:
    """The console script's `main`, with the interpreter's handling of how it ends."""
    from cobalt_lib.cli import main

    try:
        main(args)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return 128 + signal.SIGINT
    return 0


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _shut_down(code: int) -> int:
    """What the interpreter does at exit: wait for non-daemon threads, run atexit, flush."""
    shutdown = getattr(threading, "_shutdown", None)
    if callable(shutdown):
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(io.UnsupportedOperation, ValueError, AttributeError):
        sys.stdin.close()
    return code
