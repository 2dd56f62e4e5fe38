"""The typer application that every command module registers on, with help that reads as prose."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from .. import __version__

#: The metavar an option without its own gets, by the name of its value's type (`--limit N`).
_METAVARS = {"int": "N", "float": "NUMBER", "Path": "FILE", "str": "TEXT"}


class _Argument(TyperArgument):
    """An argument shown by its metavar alone (`FILE...`), without typer's `<list[Path]>` type column."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    @property
    def display_name_raw(self) -> str:
        return (self.metavar or self.name or "VALUE") + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        name = self.metavar or self.name or "VALUE"
        return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")


def _type_name(param: Any) -> str:
    """The name of the Python type of `param`'s value (`int`, `Path`, `str`), '' when unknown."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    annotation = getattr(annotation, "__args__", (annotation,))[0] if hasattr(annotation, "__origin__") else annotation
    return getattr(annotation, "__name__", "")


def readable(param: Any) -> None:
    """Help for people, not for Python: a flag shows no metavar (typer >= 0.2x shows `<bool>`), a value
    a word (`N`, `TEXT`, `FILE`) rather than a type (`<int>`, `<list[str]>`), an argument its metavar."""
    if getattr(param, "param_type_name", "") == "option":
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif param.metavar is None:
            param.metavar = _METAVARS.get(_type_name(param), "VALUE")
    elif isinstance(param, TyperArgument) and not isinstance(param, _Argument):
        param.metavar = param.metavar or (param.name or "value").upper()
        param.__class__ = _Argument


class _Readable:
    """Every parameter of the command, the help option included, made `readable` when listed."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            readable(param)
        return params


class Command(_Readable, TyperCommand):
    pass


#: `cobalt --help` lists the commands in the order a user meets them: set up and run, read the results, share
#: and serve them, then the evaluators and their calibration, CI, housekeeping. A new command takes its place here.
COMMAND_ORDER = ("init", "import", "run", "show", "history", "compare", "report", "export", "rescore", "serve",
                 "request", "mcp", "collect", "traces", "monitor", "evaluators", "dataset", "labels", "calibrate",
                 "grade", "studio", "grader", "ci", "store", "clean")


class Group(_Readable, TyperGroup):
    command_class = Command

    def list_commands(self, ctx: Any) -> list[str]:
        names: list[str] = super().list_commands(ctx)
        if ctx.parent is not None:  # a group's own subcommands keep the order they were written in
            return names
        place = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda name: (place.get(name, len(place)), name))


class _App(typer.Typer):
    """A Typer whose commands are `Command`s, so no command module has to ask for it."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


app = _App(
    name="cobalt",
    help="cobalt: test, evaluate and track AI agents.\n\nExample: cobalt init && cobalt run",
    cls=Group,
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
