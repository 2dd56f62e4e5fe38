"""`cobalt grade`: a grader over labelled samples across models and iterations, with its calibration."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._numbers import fixed
from ._app import app
from ._common import console, print_json, project_config, warn

if TYPE_CHECKING:
    from ..grading._grade import GradeOutcome


@app.command()
def grade(
    input: Annotated[Path, typer.Option("--input", "-i", metavar="SAMPLES.jsonl",
                                        help="JSONL of {userMessage, assistantResponse, id?, score?, metadata?}.")],
    grader: Annotated[Path, typer.Option("--grader", "-g", metavar="GRADER.py",
                                         help="A Python file holding the grader (a variable named `grader`).")],
    model: Annotated[list[str], typer.Option("--model", metavar="PROVIDER/NAME",
                                             help="A judge model, e.g. openai/gpt-4o; repeat for several.")],
    iterations: Annotated[int, typer.Option(min=1, help="Gradings of each sample by each model.")] = 1,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Gradings in flight (default: config's).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Where to write the results JSONL.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag for the grading run; repeatable.")] = None,
    dagster: Annotated[bool, typer.Option("--dagster/--no-dagster",
                                          help="Also record the run in the project's Dagster history.")] = True,
    json_: Annotated[bool, typer.Option("--json", help="Print the results and calibration as JSON.")] = False,
) -> None:
    """Grade every sample with every model; with ground-truth scores, show how far to trust the grader.

    Calibration per model and for the panel (the median of the models): exact and within-one rates,
    mean absolute error, signed bias, quadratic weighted kappa with a bootstrap interval, Spearman,
    confusion matrix, self-consistency across iterations, coverage and the disagreements, and a
    verdict. The run is stored like any run: `cobalt history`, `show`, `compare` and `export` see it.
    Exit codes: 0 graded, 1 a model gave no usable answer (the stored run FAILED), 2 bad usage or input.
    """
    from ..grading._grade import GradeOptions
    from ..grading._grade import grade as run_grade

    config = project_config()
    options = GradeOptions(input=input, grader=grader, models=model, iterations=iterations, concurrency=concurrency,
                           output=output, dagster=dagster, tags=tag or [])
    outcome = run_grade(config, options)
    if json_:
        print_json(outcome.payload())
    else:
        _print(outcome)
    warn(outcome.warnings)
    if not outcome.passed:
        typer.echo(f"error: grading run {outcome.run_id} FAILED: {'; '.join(outcome.failures)}", err=True)
        raise typer.Exit(1)


def _print(outcome: GradeOutcome) -> None:
    from .._numbers import count
    from ..grading._render_calibration import print_calibration

    out = console()
    cal = outcome.calibration
    graded = sum(r.score is not None for r in outcome.results)
    out.print(f"Graded {count(cal.samples, 'sample')} x {count(len(cal.models), 'model')} x "
              f"{count(cal.iterations, 'iteration')} with "
              f"{outcome.grader} #{outcome.grader_hash[:12]}: {graded} of {len(outcome.results)} answers usable.")
    print_calibration(out, cal, previous=_previous_lines(outcome))
    out.print(f"Results: {outcome.results_path}")
    out.print(f"Run id: {outcome.run_id}  (cobalt export {outcome.run_id} --format markdown)")


def _previous_lines(outcome: GradeOutcome) -> list[str]:
    prev = outcome.previous
    if prev is None:
        return []
    rubric = "same rubric" if prev.same_rubric else f"rubric #{prev.grader_hash[:12]}"
    lines = []
    for model, c in outcome.calibration.models.items():
        before = prev.weighted_kappa.get(model)
        if before is not None and c.weighted_kappa is not None:
            lines.append(f"{model}: kappa {fixed(c.weighted_kappa, 2)}, was {fixed(before, 2)} in grading run "
                         f"{prev.run_id} ({rubric}); compare them: cobalt compare {prev.run_id} {outcome.run_id}")
    return lines
