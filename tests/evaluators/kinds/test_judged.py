"""The model-judged kinds against scripted answers of the loopback server: exact scores, reasons naming
the unsupported claims or missing context, summed usage, cache hits on a re-run, request counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply, text

from cobalt_lib import Dataset, Evaluator, EvaluatorError, experiment, load_config

CONTEXTS = ["Paris is the capital of France.", "France is in Europe.", "Bananas are yellow."]


def route(llm: FakeLLM, answers: dict[str, Any]) -> None:
    """Answer each chat call with the JSON of the first entry whose key appears in its first user message."""

    def respond(kind: str, body: dict[str, Any]) -> Reply:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        for marker, value in answers.items():
            if marker in prompt:
                return text(value if isinstance(value, str) else json.dumps(value))
        return text("no route for this prompt")

    llm.respond = respond


def prompts(llm: FakeLLM) -> list[str]:
    return [next(m["content"] for m in r["body"]["messages"] if m["role"] == "user")
            for r in llm.requests if r["kind"] == "chat"]


def test_faithfulness_scores_supported_claims_names_the_others_and_caches(judged_project: Path,
                                                                          llm: FakeLLM) -> None:
    route(llm, {"factual claims": {"claims": ["Paris is the capital of France", "Paris has 2 million people"]},
                "context supports it": {"verdicts": [{"supported": True, "reason": "stated"},
                                                     {"supported": False, "reason": "no population given"}]}})
    data = Dataset([{"input": "Tell me about Paris", "contexts": CONTEXTS}])
    exp = experiment("rag", data, lambda ctx: "Paris is the capital. It has 2 million people.",
                     evaluators=[Evaluator(name="faithful", type="faithfulness")])
    report = exp.run(config=load_config())
    ev = report.items[0].evaluations["faithful"]
    assert (ev.status, ev.score) == ("ok", 0.5)
    assert ev.reason == "1/2 claims supported by the contexts; unsupported: 'Paris has 2 million people'"
    assert (ev.judge_calls, ev.input_tokens, ev.output_tokens, ev.cached) == (2, 40, 20, False)
    assert ev.cost_usd is not None and ev.cost_usd > 0
    verdict_prompt = next(p for p in prompts(llm) if "context supports it" in p)
    assert "[1] Paris is the capital of France." in verdict_prompt and "2. Paris has 2 million people" in verdict_prompt
    assert llm.count("chat") == 2
    again = exp.run(config=load_config()).items[0].evaluations["faithful"]
    assert (again.score, again.cached, again.judge_calls, again.reason) == (0.5, True, 0, ev.reason)
    assert llm.count("chat") == 2  # the re-run asked nothing: both answers came from the cache


def test_an_unusable_answer_is_an_eval_error_with_the_raw_text(judged_project: Path, llm: FakeLLM) -> None:
    route(llm, {"factual claims": "I think the answer is fine.", "could not be used": "Still fine, honestly."})
    exp = experiment("rag", [{"input": "q", "contexts": CONTEXTS}], lambda ctx: "Paris.",
                     evaluators=[Evaluator(name="faithful", type="faithfulness")])
    ev = exp.run(config=load_config()).items[0].evaluations["faithful"]
    assert ev.status == "eval-error" and ev.score is None and ev.judge_calls == 2
    assert ev.error is not None and ev.error.startswith("claims: unusable judge answer after a stricter retry")
    assert "I think the answer is fine." in (ev.raw_response or "")


def test_each_rag_kind_scores_exactly(judged_project: Path, llm: FakeLLM) -> None:
    route(llm, {
        "helps answer the question": {"statements": [
            {"statement": "Paris is the capital", "relevant": True},
            {"statement": "It is sunny today", "relevant": False},
            {"statement": "It is in France", "relevant": "yes"}]},
        "was useful to arrive": {"verdicts": [{"useful": False}, {"useful": True}, {"useful": True}]},
        "contain the information": {"statements": [
            {"statement": "Paris is the capital of France", "attributed": True},
            {"statement": "Paris hosted the 2024 Olympics", "attributed": False}]},
        "[BEGIN DATA]": {"choice": "B", "reason": "adds a detail"},
        "accomplished its task": {"score": 0.5, "reason": "searched but did not book"},
    })
    item = {"input": "What is the capital of France?", "contexts": CONTEXTS,
            "expected_output": "Paris is the capital of France and hosted the 2024 Olympics."}
    evaluators = [Evaluator(name=k, type=k) for k in ("answer_relevancy", "context_precision", "context_recall",
                                                       "factuality", "task_completion")]

    def agent(ctx: Any) -> dict[str, Any]:
        return {"output": "Paris.", "metadata": {"tool_calls": [
            {"function": {"name": "search", "arguments": '{"q": "capital of France"}'}}]}}

    report = experiment("rag", [item], agent, evaluators=evaluators).run(config=load_config())
    got = {name: (ev.score, ev.reason) for name, ev in report.items[0].evaluations.items()}
    assert got["answer_relevancy"] == (pytest.approx(2 / 3), "2/3 statements address the input; irrelevant: "
                                                             "'It is sunny today'")
    assert got["context_precision"][0] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert got["context_precision"][1] == ("2/3 contexts useful (ranks 2, 3); not useful: "
                                           "'Paris is the capital of France.'")
    assert got["context_recall"] == (0.5, "1/2 statements of the expected output found in the contexts; missing "
                                          "from the contexts: 'Paris hosted the 2024 Olympics'")
    assert got["factuality"] == (0.6, "(B) superset: adds a detail")
    assert got["task_completion"] == (0.5, "searched but did not book")
    assert llm.count("chat") == 5
    task_prompt = next(p for p in prompts(llm) if "accomplished its task" in p)
    assert '1. search({"q": "capital of France"})' in task_prompt


def test_g_eval_writes_its_steps_once_per_run(judged_project: Path, llm: FakeLLM) -> None:
    route(llm, {"evaluation steps a": {"steps": ["Check the tone", "Check the length"]},
                "by following the evaluation steps": {"score": 4, "reason": "polite, a little long"}})
    data = Dataset([{"input": f"q{i}"} for i in range(3)])
    ev = Evaluator(name="polite", type="g_eval", criteria="The answer is short and polite.")
    report = experiment("tone", data, lambda ctx: f"Sure! {ctx.input}", evaluators=[ev]).run(config=load_config())
    scores = [i.evaluations["polite"] for i in report.items]
    assert [(s.score, s.raw_score, s.reason) for s in scores] == [(0.75, 4.0, "4/5: polite, a little long")] * 3
    assert llm.count("chat") == 4  # the steps once, then one score per item
    assert sum(s.judge_calls for s in scores) == 4
    assert "1. Check the tone\n2. Check the length" in prompts(llm)[-1]


def test_judged_kinds_check_their_items_and_options_at_declaration(judged_project: Path, llm: FakeLLM) -> None:
    with pytest.raises(EvaluatorError, match=r"\(g_eval\) needs criteria="):
        Evaluator(name="g", type="g_eval")
    with pytest.raises(EvaluatorError, match=r"has no option 'critera'; did you mean 'criteria'"):
        Evaluator(name="g", type="g_eval", critera="x")
    exp = experiment("rag", [{"input": "q", "contexts": "one passage"}, {"input": "q"}], lambda ctx: "a",
                     evaluators=[Evaluator(name="faithful", type="faithfulness")])
    with pytest.raises(EvaluatorError, match="needs the retrieved passages in the item field 'contexts' "
                                             r"\(a list of strings\), which dataset item 1 lacks it"):
        exp.run(config=load_config())
    recall = experiment("rag", [{"input": "q", "contexts": ["c"]}], lambda ctx: "a",
                        evaluators=[Evaluator(name="recall", type="context_recall")])
    with pytest.raises(EvaluatorError, match="needs the item field 'expected_output'"):
        recall.run(config=load_config())
    done = experiment("done", [{"input": "book a flight", "task": None}], lambda ctx: "a",
                      evaluators=[Evaluator(name="done", type="task_completion")])
    with pytest.raises(EvaluatorError, match=r"Evaluator 'done': dataset item 0 has an empty 'task' \(None\); "
                                             "give it the agent's goal, or remove the field to use 'input'"):
        done.run(config=load_config())
    assert llm.count() == 0
