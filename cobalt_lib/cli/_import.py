"""`cobalt import FORMAT PATH`: evals of another tool as a cobalt experiment file and its dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import app

_FORMATS = "promptfoo, openai-evals, openai-registry, deepeval, or inspect (logs into history)"


@app.command("import")
def import_(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=f"The source's tool: {_FORMATS}.")],
    path: Annotated[Path, typer.Argument(help="The source: a config, eval spec or test file (or its folder).")],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="The experiment file (default experiments/NAME.cobalt.py).")] = None,
    dataset_dir: Annotated[Path, typer.Option("--dataset-dir", metavar="DIR",
                                                         help="Where the dataset file goes.")] = Path("data"),
    skip_unsupported: Annotated[bool, typer.Option(
        "--skip-unsupported",
        help="Import what can be, and list what was left out (also in the file's header).")] = False,
) -> None:
    """Write a runnable experiment from another eval tool's source; nothing is written when any of it is refused.

    Example: cobalt import promptfoo promptfooconfig.yaml && cobalt run
    """
    if fmt == "inspect":
        _record(path)
        return
    from ..imports import import_source
    from ._common import project_config

    written = import_source(fmt, path, output=output, dataset_dir=dataset_dir, skip_unsupported=skip_unsupported,
                            config=project_config() if fmt == "openai-evals" else None)
    typer.echo(f"created  {written.experiment}")
    typer.echo(f"created  {written.dataset} ({written.items} items)")
    for run_id in written.runs:
        typer.echo(f"recorded run {run_id}: the source's results, in history")
    for sentence in written.skipped:
        typer.echo(f"left out {sentence}")
    typer.echo(f"next: cobalt run {written.experiment}")


def _record(path: Path) -> None:
    """Inspect logs become runs in history, not an experiment file."""
    from ..imports import record_logs
    from ._common import project_config

    for report in record_logs(project_config(), path):
        typer.echo(f"recorded run {report.id}: {report.name}, {len(report.items)} samples of "
                   f"{report.config.get('model')} from {report.config.get('log')}")
    typer.echo("next: cobalt history")
