"""The grading wing: graders, their calibration against human labels, the `calibrated` gate, and the use
cases of grading, labelling, calibrating and the grader studio, with their renderers. The commands, pages
and MCP tools of grading are thin adapters over the names here.

    graded = grade(config, GradeOptions(input=..., grader=..., models=[...]))  # GradeOutcome: results, calibration
    outcome = calibrate_evaluator(config, "qa", "helpful")                   # an evaluator against its labels
    studio = Studio(config, Path("samples.jsonl"))                           # one grader, refined

`graders/` holds the decks and their files, `calibration/` the figures and verdicts. Each name loads its
module on first use: the `calibrated` gate does not load the studio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._calibrate import CalibrateOutcome, calibrate_evaluator, stored_judge_calibrations
    from ._calibrated import Calibrated, calibrated
    from ._calibration_view import calibration_view, gate_calibrations, run_page_calibrations
    from ._grade import GradeOptions, GradeOutcome, GradeResult, grade
    from ._grader_draft import Drafted, default_model, draft_grader
    from ._grader_versions import Exported, GraderVersion, comparison, export_grader, export_version, grader_versions
    from ._labels import Label, LabelQueue, current_labels, label_queue, run_labels, set_label, who_default
    from ._labels_file import Imported, export_lines, import_labels, samples_from_labels, write_export
    from ._studio import Studio

#: Where each name lives; `__getattr__` imports its module on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "._calibrate": "CalibrateOutcome calibrate_evaluator stored_judge_calibrations",
    "._calibrated": "Calibrated calibrated",
    "._calibration_view": "calibration_view gate_calibrations run_page_calibrations",
    "._grade": "GradeOptions GradeOutcome GradeResult grade",
    "._grader_draft": "Drafted default_model draft_grader",
    "._grader_versions": "Exported GraderVersion comparison export_grader export_version grader_versions",
    "._labels": "Label LabelQueue current_labels label_queue run_labels set_label who_default",
    "._labels_file": "Imported export_lines import_labels samples_from_labels write_export",
    "._studio": "Studio",
}.items() for name in names.split()}

__all__ = [
    "CalibrateOutcome",
    "Calibrated",
    "Drafted",
    "Exported",
    "GradeOptions",
    "GradeOutcome",
    "GradeResult",
    "GraderVersion",
    "Imported",
    "Label",
    "LabelQueue",
    "Studio",
    "calibrate_evaluator",
    "calibrated",
    "calibration_view",
    "comparison",
    "current_labels",
    "default_model",
    "draft_grader",
    "export_grader",
    "export_lines",
    "export_version",
    "gate_calibrations",
    "grade",
    "grader_versions",
    "import_labels",
    "label_queue",
    "run_labels",
    "run_page_calibrations",
    "samples_from_labels",
    "set_label",
    "stored_judge_calibrations",
    "who_default",
    "write_export",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__, globals())
