"""The `cobalt` console script: a Ctrl-C while Python is still importing the CLI is a clean exit 130
too, not a KeyboardInterrupt traceback (the CLI's own handler is not installed yet)."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    cli_main()
