"""`cobalt_calibration`: how far an evaluator agrees with the people who labelled its items, and where not."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ..config._config import Config
from ..grading._calibrate import calibrate_evaluator, stored_judge_calibrations
from ..grading._render_judge_calibration import figure_text, headline
from ..grading.calibration._judge import JudgeCalibration
from ..ops._refs import resolve_ref
from ._budget import DEFAULT_TOKENS
from ._common import BudgetArg, Project, budgeted, tool_errors
from ._read_tools import READ_ONLY

CALIBRATION = """Read an evaluator's calibration against human labels (set in cobalt's pages or imported with
`cobalt labels import`; a grading run's samples carry their own): the figures of its scale, each with its 95%
interval (-3..3 graders: exact, within one step, MAE, bias, weighted kappa; pass/fail: accuracy, precision, recall,
F1, Cohen's kappa; 0..1: Spearman, kappa over 5 bins, MAE, bias), the confusion matrix (rows the label), the verdict
(gating, monitoring, exploration; not reliable under 50 labels) and the disagreements, largest first, each with the
item's input and output, the person's label and note and the evaluator's verdict and reason. Reads the calibration
`cobalt calibrate` stored for the run (default: the newest one of the experiment and evaluator); when none is
stored, computes it from the labels without storing it. Use the disagreements to fix the judge's prompt or the
labels. The answer stays within `budget` tokens (long texts clipped, disagreements counted)."""


def register(server: MCPServer, project: Project) -> None:
    @server.tool(name="cobalt_calibration", description=CALIBRATION, annotations=READ_ONLY)
    def cobalt_calibration(
        experiment: Annotated[str, Field(description="The experiment, e.g. 'support-bot' or 'grade:tone'.")],
        evaluator: Annotated[str, Field(description="The evaluator's name in that experiment.")],
        run_id: Annotated[str | None, Field(description="The run whose verdicts were calibrated (an id, a unique "
                                            "prefix, 'latest'); default: the newest stored calibration.")] = None,
        budget: BudgetArg = DEFAULT_TOKENS,
    ) -> Annotated[CallToolResult, JudgeCalibration]:
        with tool_errors():
            config = project.config()
            cal = _stored(config, experiment, evaluator, run_id)
            if cal is None:
                cal = calibrate_evaluator(config, experiment, evaluator, run=run_id, save=False).calibration
        lines = [f"Calibration of {headline(cal)}", *(f"{f.title}: {figure_text(f)}" for f in cal.figures),
                 f"verdict: {cal.verdict.text}", f"{len(cal.disagreements)} disagreements, largest first"]
        return budgeted(cal, "\n".join(lines), budget, "cobalt_results(run_id=<run>, item=<index>) shows an item whole")


def _stored(config: Config, experiment: str, evaluator: str, run_id: str | None) -> JudgeCalibration | None:
    wanted = resolve_ref(config, run_id, experiment).run_id if run_id else None
    for cal in stored_judge_calibrations(config, experiment=experiment, evaluator=evaluator):
        if wanted is None or cal.run_id == wanted:
            return cal
    return None
