"""Checks carried by dataset items: run on their own item, reported under one `checks` evaluator (the share
passed, the failed ones named), gated like any evaluator, validated where they are declared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import FakeLLM, answer

from cobalt_lib import Dataset, Evaluator, EvaluatorError, experiment, load_config, threshold

ITEMS = [
    {"input": "capital of France", "checks": [{"type": "contains", "value": "Paris"},
                                               {"type": "regex", "pattern": r"\d+"}]},
    {"input": "capital of Spain", "checks": [{"type": "contains", "value": "Madrid", "name": "says Madrid"},
                                              {"type": "starts_with", "value": "The", "negate": True}]},
    {"input": "no checks here"},
]
ANSWERS = {"capital of France": "Paris", "capital of Spain": "Madrid, since 1561", "no checks here": "ok"}


def test_item_checks_run_on_their_item_and_report_under_one_evaluator(project: Path) -> None:
    exp = experiment("capitals", Dataset(ITEMS), lambda ctx: ANSWERS[ctx.input],
                     assertions=[threshold("checks", 0.9)])
    assert [e.name for e in exp.evaluators] == ["checks"]
    report = exp.run()
    first, second, third = (i.evaluations["checks"] for i in report.items)
    assert (first.score, first.passed) == (0.5, False)
    assert first.reason == r"1/2 checks passed; failed: regex #2: no match for /\d+/"
    assert (second.score, second.reason, second.passed) == (1.0, "2/2 checks passed", True)
    assert (third.score, third.reason) == (1.0, "no checks on this item")
    stats = report.summary.scores["checks"]
    assert stats.avg == pytest.approx(2.5 / 3) and stats.pass_rate == pytest.approx(2 / 3)
    assert report.passed is False and report.assertions[0].actual == pytest.approx(2.5 / 3)


def test_checks_beside_other_evaluators_and_a_declared_checks_pass_mark(project: Path) -> None:
    exp = experiment("capitals", ITEMS, lambda ctx: ANSWERS[ctx.input],
                     evaluators=[Evaluator(name="exact", type="exact-match", field="input"),
                                 Evaluator(name="checks", type="checks", threshold=0.5)])
    report = exp.run()
    assert [e.name for e in exp.evaluators] == ["exact", "checks"]
    assert [i.evaluations["checks"].passed for i in report.items] == [True, True, True]
    with pytest.raises(EvaluatorError, match="evaluator 'checks' has type 'contains'; rename it"):
        experiment("clash", ITEMS, lambda ctx: "x", evaluators=[Evaluator(name="checks", type="contains", value="x")])


def test_model_judged_checks_use_the_judge_and_sum_its_usage(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(answer(0.9, "fine"))
    items = [{"input": "q", "checks": [{"type": "llm-judge", "prompt": "Rate {{output}}", "threshold": 0.8},
                                       {"type": "json_valid"}]}]
    report = experiment("judged", items, lambda ctx: "not json").run(config=load_config())
    ev = report.items[0].evaluations["checks"]
    assert ev.score == 0.5 and ev.judge_calls == 1 and ev.input_tokens == 20
    assert ev.reason is not None and ev.reason.startswith("1/2 checks passed; failed: json_valid #2: the output is not")
    assert llm.count("chat") == 1


def test_a_missing_key_for_a_judged_check_fails_before_any_agent_call(project: Path) -> None:
    calls: list[str] = []
    items = [{"input": "q", "checks": [{"type": "llm-judge", "prompt": "Rate {{output}}"}]}]
    exp = experiment("judged", items, lambda ctx: calls.append("x") or "a")
    with pytest.raises(Exception, match="OPENAI_API_KEY is not set"):
        exp.run()
    assert calls == []


@pytest.mark.parametrize(
    ("checks", "message"),
    [([{"type": "regx", "pattern": "a"}], r"Dataset item 0: check 1 has unknown type 'regx'; did you mean 'regex'"),
     ([{"type": "regex", "patern": "a"}], r"Dataset item 0: check 1 \(regex\) has no option 'patern'; did you mean"),
     ([{"value": "a"}], r"Dataset item 0: check 1 must be an object with a 'type'"),
     ({"type": "regex"}, r"Dataset item 0: 'checks' must be a list of checks"),
     ([{"type": "contains", "value": "a", "threshold": 2}], r"check 1: threshold=2 must be a number within 0..1")],
)
def test_bad_checks_in_memory_items_fail_before_any_agent_call(project: Path, checks: object, message: str) -> None:
    calls: list[str] = []
    exp = experiment("bad", [{"input": "q", "checks": checks}], lambda ctx: calls.append("x") or "a")
    with pytest.raises(EvaluatorError, match=message):
        exp.run()
    assert calls == []


def test_checks_from_a_csv_column_holding_json(project: Path) -> None:
    rows = [["input", "checks"], ["France", json.dumps([{"type": "contains", "value": "Paris"}])], ["Spain", ""]]
    path = project / "capitals.csv"
    path.write_text("\n".join(",".join(f'"{c.replace(chr(34), chr(34) * 2)}"' for c in row) for row in rows) + "\n")
    data = Dataset.from_file(path)
    assert data[0]["checks"] == [{"type": "contains", "value": "Paris"}] and "checks" not in data[1]
    report = experiment("csv", data, lambda ctx: "Paris").run()
    assert [i.evaluations["checks"].reason for i in report.items] == ["1/1 checks passed", "no checks on this item"]
