"""The typer application that every command module registers on."""

from __future__ import annotations

import typer

from .. import __version__

app = typer.Typer(
    name="cobalt",
    help="cobalt: test, evaluate and track AI agents.\n\nExample: cobalt init && cobalt run",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cobalt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """cobalt: test, evaluate and track AI agents."""
