"""The `cobalt` command line: a thin adapter over the public API."""

from __future__ import annotations

import sys

import click
import typer

from .._errors import CobaltError
from . import _history, _init, _manage, _run, _serve  # noqa: F401  (commands register on import)
from ._app import app

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point: known errors become one sentence and exit code 2; Ctrl-C exits 130."""
    try:
        code = app(args=argv, standalone_mode=False)
    except CobaltError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except click.UsageError as exc:
        exc.show()
        sys.exit(2)
    except (click.Abort, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
