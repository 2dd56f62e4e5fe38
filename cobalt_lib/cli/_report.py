"""`cobalt report RUN [--compare OTHER] -o report.html`: the run (or compare) page as one HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._numbers import data_size
from ._app import app
from ._common import project_config


@app.command()
def report(
    run: Annotated[str, typer.Argument(metavar="RUN", help="The run: its id, a prefix, `latest` or `previous` (with "
                                       "--group: a run group, or one of its runs).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")] = Path("report.html"),
    compare: Annotated[str | None, typer.Option(
        "--compare", metavar="OTHER", help="Write the compare page of RUN against OTHER (the baseline A) instead.")
    ] = None,
    group: Annotated[bool, typer.Option(
        "--group", help="Write the page of the run group RUN: its variant grid and every item's outputs side by side.")
    ] = False,
) -> None:
    """Write a run's page (or its comparison with a baseline run) as one self-contained HTML file.

    The data is inside and nothing is fetched when it opens, so it works from file://: the artifact a
    CI job uploads, or a file to attach to a pull request.

    Example: `cobalt report latest --compare previous -o report.html`
    """
    from ..pages import write_report

    if group and compare:
        from .._errors import ConfigError

        raise ConfigError("--group writes a run group's page, which compares every variant with its baseline already; "
                          "drop --compare.")
    written = write_report(project_config(), run, output, compare=compare, group=group)
    typer.echo(f"wrote {written} ({data_size(written.stat().st_size)})")
