"""`cobalt calibrate` (ops) on a run of an llm-judge scripted to known scores, against labels with known
agreement: every figure equals its formula worked by hand; `calibrated()` passes and fails on it. And a
pass/fail evaluator's accuracy, precision, recall, F1 and Cohen's kappa, by hand too."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, answer

from cobalt_lib import Evaluator, calibrated, experiment, load_config
from cobalt_lib.grading._calibrate import calibrate_evaluator
from cobalt_lib.grading._labels import label_queue, run_labels, set_label

#: The judge's score of item i, and the person's label of it (0..1, no ties: Spearman by its d² formula).
JUDGE = [0.05, 0.15, 0.3, 0.35, 0.5, 0.55, 0.7, 0.85, 0.9, 0.95]
LABELS = [0.1, 0.0, 0.25, 0.5, 0.45, 0.75, 0.6, 1.0, 0.8, 0.9]
#: Item i's output says "yes" (the `says-yes` check passes) and the person's pass/fail for it.
SAYS_YES = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0]
PASS_LABELS = [1, 1, 1, 0, 1, 0, 0, 0, 1, 1]
Z = 1.959963984540054


def _judge(kind: str, body: dict[str, Any]) -> Any:
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    index = int(prompt.split("question ")[1].split()[0])
    return answer(JUDGE[index], f"judged item {index}")


def _run(root: Path, *gates: Any) -> Any:
    items = [{"id": f"q{i}", "input": f"question {i} ?"} for i in range(10)]
    exp = experiment("support", items, lambda ctx: "yes" if SAYS_YES[ctx.index] else "no",
                     evaluators=[Evaluator("helpful", prompt="Rate {{output}} for {{input}}"),
                                 Evaluator("says-yes", type="contains", value="yes")],
                     assertions=list(gates))
    return exp.run(config=load_config(root))


def _kappa(matrix: list[list[int]], weights: list[list[float]]) -> float:
    """1 - sum(w * O) / sum(w * E), E_ij = row_i * col_j / n: Cohen's formula, written out."""
    n = sum(map(sum, matrix))
    rows = [sum(r) for r in matrix]
    cols = [sum(r[j] for r in matrix) for j in range(len(matrix))]
    observed = sum(weights[i][j] * matrix[i][j] for i in range(len(matrix)) for j in range(len(matrix)))
    expected = sum(weights[i][j] * rows[i] * cols[j] / n for i in range(len(matrix)) for j in range(len(matrix)))
    return 1 - observed / expected


def _wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def test_llm_judge_calibrated_against_labels_by_hand(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = _judge
    report = _run(judged_project)
    config = load_config(judged_project)
    queue = label_queue(config, report.id, "helpful")
    assert queue.progress == "0 of 50 (this run has 10 items)"
    assert queue.order[:5] == [0, 2, 4, 6, 7]  # one item of each score band first: 0-.2, .2-.4, .4-.6, .6-.8, .8-1
    for i, value in enumerate(LABELS):
        set_label(config, report.id, i, "helpful", value, note=f"note {i}", who="ana")
    assert label_queue(config, report.id, "helpful").progress == "10 of 50 (this run has 10 items)"
    assert run_labels(config, report.id)["labels"][3]["helpful"]["value"] == 0.5

    cal = calibrate_evaluator(config, "support", "helpful").calibration
    assert (cal.scale, cal.labelled, cal.pairs, cal.model) == ("0..1", 10, 10, "openai/gpt-4o-mini")
    # Spearman: judge ranks 1..10, label ranks [2,1,3,5,4,7,6,10,8,9]: sum d² = 12, rho = 1 - 6*12 / (10*99)
    rho = 1 - 6 * 12 / (10 * (10 ** 2 - 1))
    spearman = cal.figure("spearman")
    assert spearman is not None and spearman.value == pytest.approx(rho)
    half = Z / math.sqrt(10 - 3)
    assert (spearman.low, spearman.high) == pytest.approx((math.tanh(math.atanh(rho) - half),
                                                           math.tanh(math.atanh(rho) + half)))
    # five bins: labels [0,0,1,2,2,3,3,4,4,4], judge [0,0,1,1,2,2,3,4,4,4]: two items one bin apart
    matrix = [[2, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 0, 3]]
    assert cal.confusion == matrix
    quadratic = [[(i - j) ** 2 / 16 for j in range(5)] for i in range(5)]
    binned = cal.figure("binned_kappa")
    assert binned is not None and binned.value == pytest.approx(_kappa(matrix, quadratic))
    assert cal.kappa == binned.value and binned.low is not None and binned.low <= binned.value <= binned.high
    mae = cal.figure("mae")
    bias = cal.figure("bias")
    errors = [abs(j - t) for j, t in zip(JUDGE, LABELS, strict=True)]
    assert mae is not None and mae.value == pytest.approx(sum(errors) / 10)
    assert mae.value == pytest.approx(0.105) and bias is not None and bias.value == pytest.approx(-0.005)
    assert [(d.item_index, d.label, d.judged, d.note) for d in cal.disagreements] == [
        (5, "0.75", "0.55", "note 5"), (3, "0.50", "0.35", "note 3")]
    assert cal.disagreements[0].reason == "judged item 5"
    assert cal.needed == 40 and "not yet reliable: only 10 labelled items (label 40 more" in cal.verdict.text

    kappa = _kappa(matrix, quadratic)
    too_few = _gate(_run(judged_project, calibrated("helpful", min_kappa=0.5)))
    assert not too_few.passed and "only 10 labelled items" in too_few.message and "label 40 more" in too_few.message
    passed = _gate(_run(judged_project, calibrated("helpful", min_kappa=0.9, min_labels=10)))
    assert passed.passed and passed.actual == pytest.approx(kappa), passed.message
    failed = _gate(_run(judged_project, calibrated("helpful", min_kappa=0.99, min_labels=10)))
    assert not failed.passed and f"kappa over 5 bins {kappa:.3f} < 0.99" in failed.message


def _gate(report: Any) -> Any:
    return next(a for a in report.assertions if a.name.startswith("calibrated"))


def test_prompt_change_needs_a_new_calibration(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = _judge
    report = _run(judged_project)
    config = load_config(judged_project)
    for i, value in enumerate(LABELS):
        set_label(config, report.id, i, "helpful", value)
    calibrate_evaluator(config, "support", "helpful", resamples=100)
    items = [{"id": f"q{i}", "input": f"question {i} ?"} for i in range(10)]
    changed = experiment("support", items, lambda ctx: "yes",
                         evaluators=[Evaluator("helpful", prompt="Be strict. Rate {{output}} for {{input}}")],
                         assertions=[calibrated("helpful", min_labels=10)]).run(config=config)
    gate = _gate(changed)
    assert not gate.passed and "changed since its last calibration" in gate.message
    assert "cobalt calibrate support --evaluator helpful" in gate.message
    # The new run answered "yes" where the first said "no" (items 4-7 and 9): those labels judged another answer.
    outcome = calibrate_evaluator(config, "support", "helpful", resamples=100)
    assert outcome.calibration.run_id == changed.id and outcome.calibration.stale_labels == 5
    assert outcome.warnings == [f"5 of the 10 labelled items were labelled on another answer than run {changed.id}'s "
                                "(the agent answered differently since): those labels judged the earlier answer; "
                                "re-check them on this run's page."]


def test_pass_fail_figures_by_hand(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = _judge
    report = _run(judged_project)
    config = load_config(judged_project)
    for i, value in enumerate(PASS_LABELS):
        set_label(config, report.id, i, "says-yes", "pass" if value else "fail")
    cal = calibrate_evaluator(config, "support", "says-yes").calibration
    # (label, verdict): tp = both pass, fp = verdict pass & label fail, fn = label pass & verdict fail
    pairs = list(zip(PASS_LABELS, SAYS_YES, strict=True))
    tp, fp = pairs.count((1, 1)), pairs.count((0, 1))
    fn, tn = pairs.count((1, 0)), pairs.count((0, 0))
    assert (tp, fp, fn, tn) == (4, 1, 2, 3)
    assert cal.confusion == [[tn, fp], [fn, tp]] and cal.scale == "pass/fail" and cal.model is None
    figures = {f.name: f for f in cal.figures}
    assert figures["accuracy"].value == pytest.approx((tp + tn) / 10)
    assert (figures["accuracy"].low, figures["accuracy"].high) == pytest.approx(_wilson(tp + tn, 10))
    assert figures["precision"].value == pytest.approx(tp / (tp + fp))
    assert (figures["precision"].low, figures["precision"].high) == pytest.approx(_wilson(tp, tp + fp))
    assert figures["recall"].value == pytest.approx(tp / (tp + fn))
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert figures["f1"].value == pytest.approx(2 * precision * recall / (precision + recall))
    # Cohen's kappa: (p_o - p_e) / (1 - p_e)
    p_o = (tp + tn) / 10
    p_e = ((tp + fn) * (tp + fp) + (tn + fp) * (tn + fn)) / 100
    assert figures["kappa"].value == pytest.approx((p_o - p_e) / (1 - p_e))
    assert cal.kappa == figures["kappa"].value
    assert [d.item_index for d in cal.disagreements] == [3, 4, 9]
