"""`cobalt labels export|import`: human labels as JSONL (graders' in the seed's sample shape)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ._app import Group, _App, app
from ._common import project_config, warn

labels = _App(name="labels", cls=Group, no_args_is_help=True, rich_markup_mode="markdown",
              help="Move human labels in and out of the store as JSONL.")
app.add_typer(labels, name="labels")


@labels.command("export")
def export(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="The experiment whose labels to export.")],
    evaluator: Annotated[str | None, typer.Option("--evaluator", metavar="NAME",
                                                  help="Only this evaluator's labels.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE.jsonl",
                                                help="Write here (default: stdout).")] = None,
) -> None:
    """Write the experiment's current labels, one JSON object a line.

    Each line has experiment, evaluator, item_id, value, note, who and set_at. A grader's labels also
    carry the seed's sample fields (id, userMessage, assistantResponse, score), so the file is a samples
    file for `cobalt grade --input` too.
    """
    from ..grading._labels_file import export_lines, write_export

    lines = export_lines(project_config(), experiment, evaluator)
    text = write_export(lines, output)
    if output is None:
        sys.stdout.write(text)
    else:
        typer.echo(f"Wrote {len(lines)} label{'s' if len(lines) != 1 else ''} to {output}", err=True)


@labels.command("import")
def import_(
    file: Annotated[Path, typer.Argument(metavar="FILE.jsonl", help="Labels, one JSON object a line.")],
    experiment: Annotated[str | None, typer.Option("--experiment", metavar="NAME",
                                                   help="For lines without an experiment.")] = None,
    evaluator: Annotated[str | None, typer.Option("--evaluator", metavar="NAME",
                                                  help="For lines without an evaluator.")] = None,
    who: Annotated[str | None, typer.Option("--who", help="Who labelled, for lines that do not say.")] = None,
) -> None:
    """Add labels from a JSONL file (as `export` writes, or the seed's samples with --experiment and --evaluator).

    Every line is checked first: a bad line (not JSON, an unknown evaluator, a value off the evaluator's
    scale) is named with what to fix, nothing is imported and the exit code is 2. The newest label of an
    item wins; earlier ones stay in the store's history.
    """
    from ..grading._labels_file import import_labels

    done = import_labels(project_config(), file, experiment=experiment, evaluator=evaluator, who=who)
    for key, n in done.per_evaluator.items():
        typer.echo(f"{key}: {n} label{'s' if n != 1 else ''}")
    typer.echo(f"Imported {done.written} label{'s' if done.written != 1 else ''} from {file}")
    warn(done.warnings)
