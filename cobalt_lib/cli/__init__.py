"""The `cobalt` command line: a thin adapter over the public API."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn, TextIO, cast

import click
import typer

from .._errors import CobaltError
from . import _history, _init, _manage, _run, _serve  # noqa: F401  (commands register on import)
from ._app import app

__all__ = ["app", "main"]


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
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
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


def main(argv: list[str] | None = None) -> None:
    """Entry point: known errors become one sentence and exit code 2; Ctrl-C exits 130.

    A closed stdout (`cobalt run | head`) silences the output; the command still finishes.
    """
    stdout = sys.stdout
    sys.stdout = cast(TextIO, QuietWhenClosed(stdout))
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
        sys.exit(130)
    except OSError as exc:  # a path the user gave that cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}")
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        exc.show()  # type: ignore[attr-defined]
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def _is_usage_error(exc: Exception) -> bool:
    """A bad option, argument or command, from click or from the copy of click that typer >= 0.25 vendors
    (whose exceptions are not click's classes): both carry `show()` and an `exit_code`."""
    return isinstance(exc, click.ClickException) or (
        callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int))
