"""A grading run calibrated with `cobalt calibrate` (the samples' truths, by hand), its page showing its
calibration beside the previous grading of the same samples, and labels moved out and back in as JSONL:
graders' in the seed's sample shape, bad lines named one by one, nothing imported then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from grading_setup import TRUTH, grading_project  # noqa: F401  (the `grading` fixture)

from cobalt_lib import Store, load_config
from cobalt_lib._errors import ConfigError, DatasetError
from cobalt_lib.cli import main
from cobalt_lib.grading._calibrate import calibrate_evaluator
from cobalt_lib.grading._grade import GradeOptions, grade
from cobalt_lib.grading._labels import set_label
from cobalt_lib.grading._labels_file import export_lines, import_labels, write_export
from cobalt_lib.pages import PagesServer

TRUTHS = [truth for _, truth in TRUTH.values()]


def _grade(root: Path, *models: str) -> str:
    options = GradeOptions(input=root / "samples.jsonl", grader=root / "graders" / "numbers.py", models=list(models))
    return grade(load_config(root), options).run_id


def test_calibrate_a_grader_of_a_grading_run_by_hand(grading: Path) -> None:
    run_id = _grade(grading, "openai/agree", "openai/off")
    cal = calibrate_evaluator(load_config(grading), "grade:numbers", "openai/off").calibration
    grades = [min(3, t + 1) for t in TRUTHS]  # `off` grades one step above the truth, capped at +3
    assert (cal.scale, cal.labelled, cal.run_id, cal.model) == ("-3..3", 10, run_id, "openai/off")
    figures = {f.name: f.value for f in cal.figures}
    assert figures["exact"] == pytest.approx(sum(g == t for g, t in zip(grades, TRUTHS, strict=True)) / 10)
    assert figures["exact"] == pytest.approx(0.2) and figures["within_one"] == 1.0
    assert figures["mae"] == pytest.approx(0.8) and figures["bias"] == pytest.approx(0.8)
    # quadratic weighted kappa over -3..3: 1 - sum (g - t)^2 / sum over all (label, grade) pairs of (g' - t)^2 / n
    observed = sum((g - t) ** 2 for g, t in zip(grades, TRUTHS, strict=True))
    expected = sum((g - t) ** 2 for g in grades for t in TRUTHS) / 10
    assert figures["weighted_kappa"] == pytest.approx(1 - observed / expected)
    assert cal.kappa == figures["weighted_kappa"] and cal.disagreements[0].note == "from the samples file"
    assert cal.confusion[0] == [0, 3, 0, 0, 0, 0, 0]  # three -3s graded -2


def test_grading_run_page_shows_its_calibration_and_the_change(grading: Path) -> None:
    first = _grade(grading, "openai/off")
    second = _grade(grading, "openai/agree", "openai/off")
    server = PagesServer(load_config(grading))
    url = server.start()
    try:
        page = httpx.get(f"{url}/runs/{second}", timeout=10).text
    finally:
        server.stop()
    assert 'id="calibration"' in page and "weighted kappa" in page
    assert "pass mark 0.667</span>" in page  # computed (4 / 6): as the scores read, never 0.6666666666666666
    assert f'previous grading of the same samples, <a href="/runs/{first}">' in page
    assert '<td class="reason">off says -2</td>' in page  # a disagreement's grader notes, beside the sample
    assert "<td class=\"text\">answer number 0</td>" in page  # ... beside the sample's response
    assert "<td>exact</td><td>20%</td><td>20%</td><td>+0 points</td>" in page


def test_labels_export_in_the_sample_shape_and_import_round_trip(grading: Path, tmp_path: Path) -> None:
    run_id = _grade(grading, "openai/off")
    config = load_config(grading)
    set_label(config, run_id, 1, "openai/off", 2, note="better than the samples say", who="ana")
    set_label(config, run_id, 3, "openai/off", -2, who="bo")
    lines = export_lines(config, "grade:numbers")
    assert [(line["id"], line["score"], line["userMessage"], line["assistantResponse"]) for line in lines] == [
        ("s1", 2, "question s1", "answer number 1"), ("s3", -2, "question s3", "answer number 3")]
    assert lines[0]["notes"] == "better than the samples say" and lines[0]["who"] == "ana"
    exported = tmp_path / "labels.jsonl"
    write_export(lines, exported)
    set_label(config, run_id, 1, "openai/off", -3, who="ana")  # Ana changed her mind after the export
    done = import_labels(config, exported)
    assert done.written == 2 and done.per_evaluator == {"grade:numbers / openai/off": 2}
    assert export_lines(config, "grade:numbers") == lines  # the file's labels won again, who and when kept
    history = Store.for_config(config).labels("grade:numbers", history=True)
    assert [r["value"] for r in history] == [2.0, -2.0, -3.0, 2.0, -2.0]


def test_import_names_every_bad_line_and_writes_nothing(grading: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    _grade(grading, "openai/off")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"experiment": "grade:numbers", "evaluator": "openai/off", "id": "s1", "score": 1}),
        "{not json",
        json.dumps({"experiment": "grade:numbers", "evaluator": "openai/off", "id": "s2", "score": 5}),
        json.dumps({"experiment": "grade:numbers", "evaluator": "openai/of", "id": "s2", "score": 1}),
        json.dumps({"experiment": "nope", "evaluator": "x", "id": "s2", "score": 1}),
        json.dumps({"experiment": "grade:numbers", "evaluator": "openai/off", "score": 1}),
        json.dumps([1, 2]),
    ]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        import_labels(load_config(grading), bad)
    assert str(caught.value).splitlines() == [
        f"6 bad lines in {bad}, nothing imported:",
        f"{bad}:2: not valid JSON (Expecting property name enclosed in double quotes, column 2).",
        f"{bad}:3: \"value\" 5 is not a label of 'openai/off', which takes a whole number from -3 to 3.",
        f"{bad}:4: experiment 'grade:numbers' has no evaluator 'openai/of' (its evaluators: openai/off).",
        f"{bad}:5: experiment 'nope' has no stored run; run it first, so that its evaluators' scales are known.",
        f"{bad}:6: missing \"item_id\" (or \"id\"): the item's id, or its content hash as exported.",
        f"{bad}:7: each line must be a JSON object, got list.",
    ]
    assert Store.for_config(load_config(grading)).labels("grade:numbers") == []
    with pytest.raises(SystemExit) as exited:
        main(["labels", "import", str(bad)])
    assert exited.value.code == 2 and f"{bad}:3:" in capsys.readouterr().err


def test_a_grader_gated_on_labels_set_on_an_experiments_items(grading: Path) -> None:
    from cobalt_lib import Evaluator, calibrated, experiment

    items = [{"id": key, "input": f"question {key}", "answer": answer} for key, (answer, _) in list(TRUTH.items())[:6]]

    def run(gate: object) -> Any:
        exp = experiment("graded", items, lambda ctx: ctx.item["answer"],
                         evaluators=[Evaluator("numbers", type="grader", grader="graders/numbers.py", model="agree")],
                         assertions=[gate])  # type: ignore[list-item]
        return exp.run(config=load_config(grading))

    gate = calibrated("graders/numbers.py", min_labels=6)
    never = run(gate)
    assert "has never been calibrated" in _calibrated(never).message
    config = load_config(grading)
    for index, truth in enumerate(TRUTHS[:6]):
        set_label(config, never.id, index, "numbers", truth)
    calibrate_evaluator(config, "graded", "numbers", resamples=100)
    passed = _calibrated(run(gate))
    assert passed.passed and passed.actual == 1.0, passed.message
    assert "weighted kappa 1.000 >= 0.7 over 6 labelled items" in passed.message
    few = _calibrated(run(calibrated("graders/numbers.py")))
    assert not few.passed and "label 44 more" in few.message and "cobalt calibrate graded --evaluator numbers" \
        in few.message


def _calibrated(report: Any) -> Any:
    return next(a for a in report.assertions if a.name.startswith("calibrated"))


@pytest.mark.slow
def test_a_grade_labelled_by_keyboard_on_the_grading_runs_page(grading: Path, page: Any) -> None:
    from playwright.sync_api import expect

    run_id = _grade(grading, "openai/off")
    server = PagesServer(load_config(grading))
    url = server.start()
    try:
        page.goto(server.login_url)  # the link `cobalt serve` prints: the user's session, for the label writes
        page.goto(f"{url}/runs/{run_id}")
        expect(page.locator("#label-progress")).to_contain_text("0 of 50 (this run has 10 items) labelled for "
                                                                 "openai/off (scale -3..3)")
        page.locator("#item-table tr.item-row").first.wait_for()
        page.keyboard.press("q")  # the first of the queue: the lowest grade band first (-2: item 0)
        widget = page.locator(".label-widget[data-evaluator='openai/off']")
        expect(page.locator("#detail .labels-panel")).to_have_attribute("data-index", "0")
        page.keyboard.press("-")
        page.keyboard.press("3")
        expect(widget).to_have_attribute("data-value", "-3")  # a set label folds to one line: its value on the box
        page.keyboard.press("n")
        expect(page.locator("#detail .labels-panel")).to_have_attribute("data-index", "3")  # the -1 band next
        page.keyboard.press("2")
        expect(widget).to_have_attribute("data-value", "2")
        expect(page.locator("#label-progress")).to_contain_text("2 of 50")
    finally:
        server.stop()
    rows = Store.for_config(load_config(grading)).labels("grade:numbers", "openai/off")
    assert sorted((r["item_id"], r["value"]) for r in rows) == [("1", -3.0), ("s3", 2.0)]


def test_the_studio_starts_from_the_labels_set_on_an_experiments_grader(grading: Path) -> None:
    from cobalt_lib import Evaluator, experiment
    from cobalt_lib.grading._labels_file import samples_from_labels
    from cobalt_lib.grading._studio import Studio

    items = [{"id": key, "input": f"question {key}", "answer": answer} for key, (answer, _) in list(TRUTH.items())[:4]]
    report = experiment("graded", items, lambda ctx: ctx.item["answer"],
                        evaluators=[Evaluator("numbers", type="grader", grader="graders/numbers.py", model="agree"),
                                    Evaluator("exact", type="exact-match", field="answer")],
                        ).run(config=load_config(grading))
    config = load_config(grading)
    with pytest.raises(ConfigError, match="No labels set on 'numbers' in 'graded' yet"):
        samples_from_labels(config, "graded", "numbers")
    for index, truth in enumerate(TRUTHS[:4]):
        set_label(config, report.id, index, "numbers", truth, note=f"truth {truth}")
    set_label(config, report.id, 0, "exact", 1)
    with pytest.raises(ConfigError, match=r"not on a grader's -3\.\.3 scale"):
        samples_from_labels(config, "graded", "exact")
    path = samples_from_labels(config, "graded", "numbers")
    assert path == grading / ".cobalt" / "studio" / "labels" / "graded_numbers.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["id"], line["score"], line["userMessage"]) for line in lines] == [
        (key, truth, f"question {key}") for key, truth in zip(list(TRUTH)[:4], TRUTHS[:4], strict=True)]
    studio = Studio(config, path, grader=grading / "graders" / "numbers.py", models=["openai/agree"])
    assert len(studio.samples) == 4
