"""The `grader` evaluator inside an experiment, gated by `calibrated(...)`: never calibrated, calibrated,
below the bar, and the rubric changed since its calibration."""

from __future__ import annotations

from pathlib import Path

import pytest
from grading_setup import TRUTH, grading_project, write_grader  # noqa: F401  (the `grading` fixture)

from cobalt_lib import Evaluator, calibrated, experiment, load_config
from cobalt_lib.grading._grade import GradeOptions, grade

ITEMS = [{"input": f"question {key}", "answer": answer} for key, (answer, _) in list(TRUTH.items())[:4]]


def _run(root: Path, gate: object) -> object:
    exp = experiment("graded", ITEMS, lambda ctx: ctx.item["answer"],
                     evaluators=[Evaluator("numbers", type="grader", grader="graders/numbers.py", model="agree")],
                     assertions=[gate])  # type: ignore[list-item]
    return exp.run(config=load_config(root))


def _grade(root: Path, *models: str) -> str:
    options = GradeOptions(input=root / "samples.jsonl", grader=root / "graders" / "numbers.py",
                           models=list(models))
    return grade(load_config(root), options).run_id


def _gate(report: object) -> object:
    return next(a for a in report.assertions if a.name.startswith("calibrated"))  # type: ignore[attr-defined]


def test_grader_as_evaluator_gated_by_its_calibration(grading: Path) -> None:
    gate = calibrated("graders/numbers.py", min_kappa=0.7)
    report = _run(grading, gate)
    item = report.items[0].evaluations["numbers"]  # type: ignore[attr-defined]
    assert (item.raw_score, item.score, item.passed) == (-3.0, 0.0, False)  # truth -3 -> (raw + 3) / 6
    assert item.reason == "agree says -3" and item.judge_model == "openai/agree"
    failed = _gate(report)
    assert not failed.passed  # type: ignore[attr-defined]
    assert "has never been calibrated for openai/agree; run: cobalt grade --input samples.jsonl --grader " \
           f"{grading / 'graders' / 'numbers.py'} --model openai/agree" in failed.message  # type: ignore[attr-defined]

    run_id = _grade(grading, "openai/agree", "openai/off")
    few = _gate(_run(grading, gate))  # perfect agreement, but on 10 labels: 50 by default
    assert not few.passed and "10 labelled samples < 50 (label more" in few.message  # type: ignore[attr-defined]
    gate = calibrated("graders/numbers.py", min_kappa=0.7, min_labels=10)
    passed = _gate(_run(grading, gate))
    assert passed.passed and passed.actual == 1.0 and run_id in passed.message  # type: ignore[attr-defined]
    assert "kappa 1.000 >= 0.7, 100% within one step >= 90%, 10 labelled samples >= 10" in passed.message  # type: ignore[attr-defined]
    strict = _gate(_run(grading, calibrated("graders/numbers.py", min_kappa=0.95, model="openai/off", min_labels=10)))
    assert not strict.passed and "kappa 0.922 < 0.95" in strict.message  # type: ignore[attr-defined]
    assert strict.actual == pytest.approx(0.9223, abs=1e-4)  # type: ignore[attr-defined]

    write_grader(grading, "Be lenient.")  # the rubric changes: a new content hash, no calibration yet
    changed = _gate(_run(grading, gate))
    assert not changed.passed  # type: ignore[attr-defined]
    assert "changed since its last calibration for openai/agree" in changed.message  # type: ignore[attr-defined]
    assert f"cobalt grade --input {grading / 'samples.jsonl'} --grader" in changed.message  # type: ignore[attr-defined]


def test_gate_without_a_grader_evaluator_says_what_to_do(grading: Path) -> None:
    exp = experiment("plain", ITEMS, lambda ctx: ctx.item["answer"],
                     evaluators=[Evaluator("len", type="function", fn=lambda ctx: 1.0)],
                     assertions=[calibrated("graders/numbers.py")])
    gate = _gate(exp.run(config=load_config(grading)))
    assert not gate.passed and "pass model= to calibrated" in gate.message  # type: ignore[attr-defined]
    with pytest.raises(Exception, match="min_kappa"):
        calibrated("graders/numbers.py", min_kappa=2)
