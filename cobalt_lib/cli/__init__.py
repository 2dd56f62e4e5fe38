"""The `cobalt` command line: a thin adapter over the public API."""

from __future__ import annotations

import sys
from typing import NoReturn

import click
import typer

from .._errors import CobaltError
from . import _history, _init, _manage, _run, _serve  # noqa: F401  (commands register on import)
from ._app import app

__all__ = ["app", "main"]


#: Ctrl-C, also at a prompt: click's Abort and, in typer releases that vendor click, typer's own.
_INTERRUPTS: tuple[type[BaseException], ...] = (KeyboardInterrupt, click.Abort, getattr(typer, "Abort", click.Abort))


def main(argv: list[str] | None = None) -> None:
    """Entry point: known errors become one sentence and exit code 2; Ctrl-C exits 130."""
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
