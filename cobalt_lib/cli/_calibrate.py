"""`cobalt calibrate EXPERIMENT --evaluator NAME`: any evaluator against the human labels of its experiment."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import app
from ._common import console, print_json, project_config, warn


@app.command()
def calibrate(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="The experiment whose labels to use.")],
    evaluator: Annotated[str, typer.Option("--evaluator", metavar="NAME", help="The evaluator to calibrate.")],
    run: Annotated[str | None, typer.Option("--run", metavar="RUN",
                                            help="The run whose verdicts to use (default: the newest completed "
                                                 "one with the evaluator).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the calibration as JSON.")] = False,
) -> None:
    """How far an evaluator agrees with the people who labelled its items, with the figures its scale needs.

    -3..3 (graders): exact, within one step, MAE, bias, weighted kappa. pass/fail: accuracy, precision,
    recall, F1, Cohen's kappa. 0..1: Spearman, kappa over five bins, MAE, bias. Each with its 95%
    interval, the confusion matrix, the disagreements (with the judge's reason and the person's note) and
    the verdict. The calibration is stored, keyed by the evaluator's prompt hash and model, for the
    `calibrated()` gate. Labels come from the pages (`cobalt serve`) or `cobalt labels import`.
    """
    from ..grading._calibrate import calibrate_evaluator

    outcome = calibrate_evaluator(project_config(), experiment, evaluator, run=run)
    cal, prev = outcome.calibration, outcome.previous
    if json_:
        print_json({**cal.model_dump(mode="json"),
                    "previous": prev.model_dump(mode="json") if prev else None, "warnings": outcome.warnings})
    else:
        from ..grading._render_judge_calibration import print_judge_calibration
        from ..render._units import decimal

        line = None
        if prev is not None:
            prompt = "same prompt" if prev.same_prompt else f"prompt #{prev.prompt_hash[:12]}"
            line = (f"previous calibration (run {prev.run_id}, {prompt}): {cal.kappa_name} {decimal(prev.kappa)} "
                    f"-> {decimal(cal.kappa)}")
        print_judge_calibration(console(), cal, line)
    warn(outcome.warnings)
