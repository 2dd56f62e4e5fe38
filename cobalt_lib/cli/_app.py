"""The typer application that every command module registers on, with help that reads as prose."""

from __future__ import annotations

import importlib
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


#: Each top-level command and the module under `cobalt_lib.cli` that registers it, imported when the command
#: is used: `cobalt run` loads the run's command and use cases, not the grading studio's. `cobalt --help` lists
#: the commands in this order, the order a user meets them: set up and run, read the results, share and serve
#: them, then the evaluators and their calibration, CI, housekeeping. A new command takes its place here.
LAZY_COMMANDS: dict[str, str] = {
    "init": "_init", "import": "_import", "run": "_run", "show": "_show", "history": "_history",
    "compare": "_history", "report": "_report", "export": "_manage", "rescore": "_manage", "serve": "_serve",
    "request": "_serve", "mcp": "_mcp", "collect": "_collect", "traces": "_collect", "monitor": "_collect",
    "evaluators": "_evaluators", "dataset": "_dataset", "labels": "_grading", "calibrate": "_grading",
    "grade": "_grading", "studio": "_studio", "grader": "_grading", "ci": "_ci", "store": "_store",
    "clean": "_manage",
}
COMMAND_ORDER = tuple(LAZY_COMMANDS)


def load_commands(*names: str) -> None:
    """Import the modules that register `names` (every command when none is given) on `app`."""
    for module in sorted({LAZY_COMMANDS[name] for name in names or LAZY_COMMANDS if name in LAZY_COMMANDS}):
        importlib.import_module(f"{__package__}.{module}")


class Group(_Readable, TyperGroup):
    command_class = Command

    def list_commands(self, ctx: Any) -> list[str]:
        names: list[str] = super().list_commands(ctx)
        if ctx.parent is not None:  # a group's own subcommands keep the order they were written in
            return names
        place = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted({*names, *LAZY_COMMANDS}, key=lambda name: (place.get(name, len(place)), name))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and ctx.parent is None and cmd_name in LAZY_COMMANDS:
            load_commands(cmd_name)
            command = _registered(cmd_name)
            if command is not None:
                self.add_command(command, cmd_name)
        return command


def _registered(name: str) -> Any:
    """The click command (or group) registered on `app` as `name` once its module was imported, built as
    typer builds the commands it knew of when the app was called."""
    for info in app.registered_commands:
        if (info.name or typer.main.get_command_name(info.callback.__name__)) == name:  # type: ignore[union-attr]
            return typer.main.get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                                    rich_markup_mode=app.rich_markup_mode)
    for group in app.registered_groups:
        if group.name == name:
            return typer.main.get_group_from_info(group, pretty_exceptions_short=app.pretty_exceptions_short,
                                                  suggest_commands=app.suggest_commands,
                                                  rich_markup_mode=app.rich_markup_mode)
    return None


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
