"""`cobalt import deepeval`: a DeepEval test file's metrics (read from its syntax tree, never run) and its
goldens as an experiment, run against the loopback judge with DeepEval's pass/fail per golden."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply, text
from imports_world import cobalt, copy_fixture, files_under, messages_text

from cobalt_lib import load_file

REFUNDS, ADDRESS = "How long do refunds take?", "Can I change my delivery address?"


def judged(kind: str, body: dict[str, Any]) -> Reply:
    """The stand-in model answers; the judges find every claim supported and every statement relevant, score the
    answers 4/5, and find the refund passage useful but the address one not."""
    asked = messages_text(body)
    routes: list[tuple[str, Any]] = [
        ("factual claims", {"claims": ["the answer states a fact"]}),
        ("context supports it", {"verdicts": [{"supported": True, "reason": "stated"}]}),
        ("helps answer the question", {"statements": [{"statement": "it answers", "relevant": True}]}),
        ("was useful to arrive", {"verdicts": [{"useful": REFUNDS in asked}]}),
        ("evaluation steps, then give a score", {"score": 4, "reason": "mostly right"}),
    ]
    for marker, answer in routes:
        if marker in asked:
            return text(json.dumps(answer))
    return text("Within 5 business days." if REFUNDS in asked else "Yes, from the order page.")


@pytest.fixture
def imported(judged_project: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    source = copy_fixture("deepeval", judged_project)
    code, out, err = cobalt(capsys, "import", "deepeval", str(source / "support_bot_eval.py"))
    assert code == 0, err
    assert "created  data/support-bot-eval.jsonl (2 items)" in out
    return judged_project / "experiments" / "support-bot-eval.cobalt.py"


def test_the_goldens_key_names_map_onto_cobalts_fields(imported: Path) -> None:
    items = [json.loads(line) for line in (imported.parent.parent / "data" / "support-bot-eval.jsonl").open()]
    assert items[0] == {"input": REFUNDS, "expected_output": "Refunds reach your card within 5 business days.",
                        "contexts": ["Refunds are issued to the original card and arrive within 5 business days."]}
    text_ = imported.read_text()
    assert "DeepEval's test file made actual_output with its own app (`answer_with_sources(golden.input)`)" in text_
    assert '        Evaluator(name="contextual_precision", type="context_precision", threshold=1.0),' in text_  # strict


def test_each_metric_passes_and_fails_the_goldens_its_threshold_says(imported: Path, llm: FakeLLM) -> None:
    llm.respond = judged
    [experiment] = load_file(imported)
    report = experiment.run()
    got = {name: [(item.evaluations[name].score, item.evaluations[name].passed) for item in report.items]
           for name in report.items[0].evaluations}
    assert got == {"Correctness": [(0.75, True)] * 2, "answer_relevancy": [(1.0, True)] * 2,
                   "faithfulness": [(1.0, True)] * 2, "contextual_precision": [(1.0, True), (0.0, False)]}
    judges = {r["body"]["model"] for r in llm.requests if "evaluation steps, then" in messages_text(r["body"])}
    assert judges == {"gpt-4o"}  # GEval's model= is its judge
    asked = [messages_text(r["body"]) for r in llm.requests if r["body"]["messages"][0]["role"] == "user"]
    assert REFUNDS in asked and ADDRESS in asked  # the stand-in agent asked the goldens' inputs as they are


def test_metrics_without_a_kind_and_computed_arguments_are_refused_by_line(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = copy_fixture("deepeval", project)
    test_file = source / "support_bot_eval.py"
    test_file.write_text(test_file.read_text().replace(
        "faithfulness = FaithfulnessMetric(threshold=0.8)",
        "faithfulness = FaithfulnessMetric(threshold=LIMITS['faithful'])\nbias = BiasMetric(threshold=0.5)"))
    code, _, err = cobalt(capsys, "import", "deepeval", str(source))
    assert code == 2
    assert err.splitlines()[1:] == [
        "  - support_bot_eval.py, line 34: argument threshold= is computed (`LIMITS['faithful']`), and an import reads "
        "literals only; write its value out",
        "  - support_bot_eval.py, line 35: BiasMetric has no cobalt kind (cobalt has GEval as g_eval, "
        "AnswerRelevancyMetric, FaithfulnessMetric, ContextualPrecisionMetric, ContextualRecallMetric); write it as "
        "a GEval with criteria, or leave it out"]
    assert files_under(project) == [f"source/{name}" for name in files_under(source)]
