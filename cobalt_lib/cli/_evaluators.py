"""`cobalt evaluators`: every evaluator kind with its options."""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from .._numbers import threshold
from ._app import app
from ._common import console, print_json

if TYPE_CHECKING:
    from ..evaluators._catalog import KindInfo, OptionInfo


def _option_text(option: OptionInfo) -> str:
    """`prompt: str (required)`, `ignore_case: bool = False`."""
    if option.required:
        return f"{option.name}: {option.type} (required)"
    return f"{option.name}: {option.type} = {option.default!r}"


def _kinds_table(kinds: list[KindInfo]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for column in ("type", "description", "options", "pass mark", "source"):
        table.add_column(column, overflow="fold", no_wrap=column in ("type", "pass mark"))
    for kind in kinds:
        options = "\n".join(_option_text(o) for o in kind.options) or "-"
        table.add_row(Text(kind.name), Text(kind.description), Text(options), threshold(kind.default_threshold),
                      Text(kind.source))
    return table


@app.command()
def evaluators(
    json_output: Annotated[bool, typer.Option("--json", help="Print the kinds and their options as JSON.")] = False,
) -> None:
    """List every evaluator type with its options, their types and defaults.

    Built-in types and those of installed plugins (entry point group `cobalt.evaluators`), each with
    its default pass mark (`threshold`).

    Example: `cobalt evaluators --json`
    """
    from ..evaluators._catalog import broken_plugins, describe_kinds

    with warnings.catch_warnings():  # said once below, in the CLI's words
        warnings.simplefilter("ignore")
        kinds = describe_kinds()
    for name, error in broken_plugins().items():
        print(f"warning: evaluator plugin {name!r} from {error}; its kind cannot be used", file=sys.stderr)
    if json_output:
        print_json([kind.model_dump(mode="json") for kind in kinds])
        return
    console().print(_kinds_table(kinds))
