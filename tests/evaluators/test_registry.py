"""The evaluator registry: kinds register by name, options are validated at declaration, and the
shared work (failures as records, the pass mark) holds for any kind."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from cobalt_lib import (
    EVALUATOR_TYPES,
    Dataset,
    EvalContext,
    EvalResult,
    Evaluator,
    EvaluatorError,
    EvaluatorKind,
    evaluator_kinds,
    experiment,
)
from cobalt_lib.evaluators import Scoring, describe_kinds
from cobalt_lib.evaluators._catalog import type_name
from cobalt_lib.evaluators._registry import KINDS

BUILT_IN = {"llm-judge", "function", "exact-match", "similarity", "contains", "regex", "starts_with", "equals_json",
            "numeric_match", "json_valid", "json_schema", "levenshtein", "rouge", "bleu", "max_latency", "max_cost",
            "max_tokens", "tool_call_match", "tool_calls_valid", "max_tool_calls", "faithfulness", "answer_relevancy",
            "context_precision", "context_recall", "factuality", "g_eval", "task_completion", "checks",
            "goal_completion", "role_adherence", "knowledge_retention", "turn_relevancy"}


@pytest.fixture
def registry() -> Iterator[None]:
    """Kinds a test defines are forgotten after it."""
    before = dict(KINDS)
    yield
    KINDS.clear()
    KINDS.update(before)


def _word_count_kind() -> type[EvaluatorKind]:
    class WordCount(EvaluatorKind):
        """1 when the output has at most `max_words` words."""

        kind = "word-count"
        default_threshold = 1.0

        max_words: int = Field(50, description="the most words a passing output may have")
        field: str | None = Field(None, description="count this item field instead of the output")

        def score(self, ctx: EvalContext, scoring: Scoring) -> EvalResult:
            words = len(str(ctx.output).split())
            return EvalResult(score=1.0 if words <= self.max_words else 0.0, reason=f"{words} words")

    return WordCount


def test_the_built_in_kinds_are_registered_with_their_options() -> None:
    kinds = evaluator_kinds()
    assert set(kinds) >= BUILT_IN
    assert all(issubclass(cls, EvaluatorKind) for cls in kinds.values())
    assert kinds["exact-match"].option_names() == ["field", "ignore_case", "ignore_whitespace", "negate"]
    assert kinds["similarity"].default_threshold == 0.85
    assert "Cosine similarity" in EVALUATOR_TYPES["similarity"]
    assert set(EVALUATOR_TYPES) == set(kinds)


def test_describe_kinds_gives_types_defaults_and_required_options() -> None:
    info = {k.name: k for k in describe_kinds()}
    prompt = next(o for o in info["llm-judge"].options if o.name == "prompt")
    assert (prompt.type, prompt.required, prompt.default) == ("str", True, None)
    case = next(o for o in info["exact-match"].options if o.name == "ignore_case")
    assert (case.type, case.required, case.default) == ("bool", False, False)
    assert next(o for o in info["function"].options).type == "callable"
    assert info["llm-judge"].source == "built-in"
    assert type_name(str | None) == "str | None" and type_name(list[str]) == "list[str]"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"type": "exact-match", "ignore_cas": True},
      r"\(exact-match\) has no option 'ignore_cas'; did you mean 'ignore_case'\? \(its options are field, "
      r"ignore_case, ignore_whitespace, negate\)"),
     ({"type": "exact-match", "banana": 1}, r"has no option 'banana'; its options are field, ignore_case"),
     ({"type": "exact-match", "model": "gpt-4o"}, r"does not use model=; it is for llm-judge, similarity, "
                                              r"answer_relevancy and \d+ more evaluators"),
     ({"type": "exact-match", "ignore_case": "maybe"}, r"ignore_case='maybe' is not valid: input should be a valid"),
     ({"type": "llm-judge", "prompt": "   "}, r"prompt='   ' is not valid: .*the prompt is empty"),
     ({"type": "function", "fn": 3}, r"fn=3 is not valid: input should be callable"),
     ({"type": "llm-judge"}, r"needs prompt=\.\.\. \(the judge's instructions"),
     ({"type": "exact-match", "threshold": True}, "must be a number within 0..1")],
)
def test_options_are_checked_at_declaration(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(EvaluatorError, match=message):
        Evaluator(name="e", **kwargs)


def test_options_read_back_as_attributes_and_are_stored_with_the_run() -> None:
    judge = Evaluator(name="rel", prompt="Rate {{output}}", base_url="http://localhost:9/v1", model="m")
    assert judge.prompt == "Rate {{output}}" and judge.model == "m"
    described = judge.describe()
    assert described["prompt"] == "Rate {{output}}" and described["threshold"] == 0.5
    assert "base_url" not in described  # a server address may carry credentials: never stored
    with pytest.raises(AttributeError):
        _ = judge.ignore_case


def test_a_kind_defined_in_user_code_runs_like_a_built_in(project: Path, registry: None) -> None:
    _word_count_kind()
    assert "word-count" in evaluator_kinds()
    short = Evaluator(name="short", type="word-count", max_words=2)
    assert short.threshold == 1.0  # the kind's default pass mark
    data = Dataset([{"input": "a"}, {"input": "b"}])
    exp = experiment("words", data, lambda ctx: "one two" if ctx.item["input"] == "a" else "one two three",
                     evaluators=[short])
    report = exp.run()
    scores = [(i.evaluations["short"].score, i.evaluations["short"].passed, i.evaluations["short"].reason)
              for i in report.items]
    assert scores == [(1.0, True, "2 words"), (0.0, False, "3 words")]
    assert report.config["evaluators"][0] == {"name": "short", "type": "word-count", "threshold": 1.0,
                                              "max_words": 2, "field": None}


def test_failures_and_unusable_values_in_any_kind_become_eval_errors(registry: None) -> None:
    class Flaky(EvaluatorKind):
        """Raises on 'boom', returns garbage on 'junk', awaits otherwise."""

        kind = "flaky"

        async def score(self, ctx: EvalContext, scoring: Scoring) -> Any:
            await asyncio.sleep(0)
            if ctx.output == "boom":
                raise RuntimeError("kaboom")
            return {"junk": "no score"} if ctx.output == "junk" else 0.75

    evaluator = Evaluator(name="f", type="flaky", threshold=0.8)

    def run(output: str) -> Any:
        return asyncio.run(evaluator.evaluate(EvalContext(item={}, output=output), None, None))

    boom, junk, fine = run("boom"), run("junk"), run("ok")
    assert (boom.status, boom.error) == ("eval-error", "RuntimeError: kaboom")
    assert junk.status == "eval-error" and "evaluator 'f' returned a dict without 'score'" in (junk.error or "")
    assert (fine.status, fine.score, fine.passed) == ("ok", 0.75, False)  # the pass mark is applied for it


def test_one_name_cannot_belong_to_two_kinds_but_a_redefinition_replaces(registry: None) -> None:
    first = _word_count_kind()
    second = _word_count_kind()  # the same class defined again (a notebook cell re-run)
    assert evaluator_kinds()["word-count"] is second and first is not second
    with pytest.raises(EvaluatorError, match=r"Evaluator kind 'exact-match' is defined twice: by "
                                             r"cobalt_lib\.evaluators\.kinds\._exact_match\.ExactMatch"):
        class Impostor(EvaluatorKind):
            kind = "exact-match"

            def score(self, ctx: EvalContext, scoring: Scoring) -> float:
                return 1.0


def test_an_unknown_type_names_the_closest_kind_including_user_kinds(registry: None) -> None:
    _word_count_kind()
    with pytest.raises(EvaluatorError, match=r"unknown type 'word-cont'; did you mean 'word-count'\?"):
        Evaluator(name="e", type="word-cont")
