"""The `cobalt` command line: a thin adapter over the public API."""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, NoReturn, TextIO, cast

import click
import typer

from .._errors import CobaltError
from .._secrets import scrub_stream
from .._testing import pause_point
from ._app import app, load_commands

__all__ = ["app", "load_commands", "main"]

# Each command module registers its commands on `app` when the command is first used (`_app.LAZY_COMMANDS`).
pause_point("import")  # tests: an interrupt while the CLI is still being imported



#: Ctrl-C, also at a prompt: click's Abort and, in typer releases that vendor click, typer's own.
_INTERRUPTS: tuple[type[BaseException], ...] = (KeyboardInterrupt, click.Abort, getattr(typer, "Abort", click.Abort))


class QuietWhenClosed:
    """stdout that goes quiet once its reader has gone (`cobalt run | head -3`).

    A closed pipe must not end a run half-done: the agent calls already spent would be lost and the
    exit code would say the gates failed. So a write to a closed stdout is dropped, and the file
    descriptor is pointed at /dev/null so that later writes and the flush at exit succeed too.
    Everything else is the wrapped stream's.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            if not _gone(exc):
                raise
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if not _gone(exc):
                raise
            self._to_devnull()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _to_devnull(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError):  # no file descriptor (an in-memory stream): replace the stream
            self._stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  (lives as long as stdout)
        finally:
            os.close(devnull)


def _gone(exc: OSError) -> bool:
    """The reader has gone: a closed pipe, or a closed terminal (EIO)."""
    return isinstance(exc, BrokenPipeError) or exc.errno == errno.EIO


def main(argv: list[str] | None = None) -> None:
    """Entry point: known errors and usage errors become one line and exit code 2; Ctrl-C exits 130.

    A closed stdout (`cobalt run | head`) silences the output; the command still finishes.
    """
    for stream in (sys.stdout, sys.stderr):  # a stdout that cannot encode a character shows its escape
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    stdout = sys.stdout
    sys.stdout = cast(TextIO, QuietWhenClosed(scrub_stream(stdout)))
    # stderr stays scrubbed after the command: a traceback printed at exit goes through it too
    sys.stderr = cast(TextIO, scrub_stream(sys.stderr))
    try:
        _main(argv)
    finally:
        sys.stdout.flush()  # while still wrapped: buffered text for a closed pipe must not fail at exit
        sys.stdout = stdout


def _main(argv: list[str] | None) -> None:
    try:
        code = app(args=argv, standalone_mode=False)
    except CobaltError as exc:
        _fail(str(exc))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except _INTERRUPTS:
        print("interrupted", file=sys.stderr)
        sys.exit(_interrupted_code())
    except OSError as exc:  # a path the user gave that cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}")
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":  # `cobalt` alone: the help is the answer
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        _fail(usage_message(exc))
    if code == 130:  # typer returns Ctrl-C inside a command as exit code 130, having said nothing
        from .._signals import EXPLAINED

        if not EXPLAINED.is_set():
            print("interrupted", file=sys.stderr)
        code = _interrupted_code()
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted_code() -> int:
    """130 for Ctrl-C; 128 + the signal's number when SIGTERM (143) or SIGHUP (129) stopped a run (it
    stops as Ctrl-C does, but says what it was)."""
    from .._signals import stopped_by

    signum = stopped_by()
    return 130 if signum is None else 128 + signum


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


#: Pydantic's error types for a number out of range (typer >= 0.25 validates options with pydantic),
#: as the comparison and the `ctx` key holding the bound.
_BOUNDS = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"), "less_than_equal": ("<=", "le"),
           "less_than": ("<", "lt")}


def usage_message(exc: Exception) -> str:
    """A usage error as one line: click's message, the offending value when typer's validation knows
    it, and where the help is (instead of click's usage block, hint and `Error:` line)."""
    detail = _value_detail(exc)
    if detail is not None and isinstance(getattr(exc, "message", None), str):
        setattr(exc, "message", detail)  # noqa: B010  (BadParameter puts the option's name before it)
    format_message = getattr(exc, "format_message", None)
    text = " ".join(str(format_message() if callable(format_message) else exc).split()).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None)
    return f"{text} (see `{path} --help`)" if path else text


def _value_detail(exc: Exception) -> str | None:
    """`0 is not in the range x>=1`, `'abc' is not a valid integer`: the value the user gave, from the
    pydantic error typer's validation raised; None when there is none to improve on."""
    errors = getattr(exc.__cause__, "errors", None)
    try:
        first = errors()[0] if callable(errors) else None
    except (TypeError, IndexError):
        return None
    if not isinstance(first, dict):
        return None
    kind, value, limits = first.get("type"), first.get("input"), first.get("ctx") or {}
    if kind in _BOUNDS and _BOUNDS[kind][1] in limits:
        op, key = _BOUNDS[kind]
        return f"{value} is not in the range x{op}{limits[key]}"
    if kind == "int_parsing":
        return f"{value!r} is not a valid integer"
    if kind == "float_parsing":
        return f"{value!r} is not a valid number"
    return None


def _is_usage_error(exc: Exception) -> bool:
    """A bad option, argument or command, from click or from the copy of click that typer >= 0.25 vendors
    (whose exceptions are not click's classes): both carry `show()` and an `exit_code`."""
    return isinstance(exc, click.ClickException) or (
        callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int))
