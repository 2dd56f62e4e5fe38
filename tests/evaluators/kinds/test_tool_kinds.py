"""The trajectory kinds: tool_call_match in both argument shapes and every order, tool_calls_valid,
max_tool_calls, and the expected calls checked before any agent call."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from cobalt_lib import EvalContext, Evaluator, EvaluatorError, experiment
from cobalt_lib.results import Evaluation

EXPECTED = [{"name": "search", "arguments": {"q": "Paris"}}, {"name": "book"}]


def plain(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def openai(name: str, **arguments: Any) -> dict[str, Any]:
    """OpenAI's shape: the arguments as a JSON string."""
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def score(calls: list[dict[str, Any]] | None, expected: Any = EXPECTED, **options: Any) -> Evaluation:
    evaluator = Evaluator(name="t", type=options.pop("kind", "tool_call_match"), **options)
    metadata = {} if calls is None else {"tool_calls": calls}
    ctx = EvalContext(item={"expected_tool_calls": expected}, output="done", metadata=metadata)
    return asyncio.run(evaluator.evaluate(ctx, None, None))


@pytest.mark.parametrize("shape", [plain, openai], ids=["plain", "openai"])
@pytest.mark.parametrize(
    ("calls", "options", "value", "reason"),
    [([("search", {"q": "Paris", "limit": 3}), ("book", {"id": 7})], {}, 1.0, "all 2 expected calls made"),
     ([("book", {}), ("search", {"q": "Paris"})], {}, 0.5, "1/2 matched: book out of order"),
     ([("book", {}), ("search", {"q": "Paris"})], {"order": "any"}, 1.0, "all 2 expected calls made"),
     ([("search", {"q": "Lyon"}), ("book", {})], {}, 0.5,
      "1/2 matched: search(q='Paris'): arguments differ, got search(q='Lyon')"),
     ([("search", {"q": "Paris", "limit": 3}), ("book", {})], {"arguments": "exact"}, 0.5,
      "1/2 matched: search(q='Paris'): arguments differ, got search(q='Paris', limit=3)"),
     ([("search", {"q": "Paris"})], {}, 0.5, "1/2 matched: missing book"),
     ([], {}, 0.0, "0/2 matched: missing search(q='Paris'); missing book"),
     ([("search", {}), ("pay", {}), ("book", {})], {"order": "lcs"}, 0.8,
      "longest common sequence 2 of 2 expected and 3 made (precision 0.67, recall 1.00): expected search > book, "
      "made search > pay > book")],
)
def test_tool_call_match(shape: Any, calls: list[tuple[str, dict[str, Any]]], options: dict[str, Any],
                         value: float, reason: str) -> None:
    result = score([shape(name, **args) for name, args in calls], **options)
    assert (result.status, result.reason) == ("ok", reason)
    assert result.score == pytest.approx(value)


def test_in_order_takes_the_longest_common_subsequence_not_the_first_match() -> None:
    result = score([plain("b"), plain("c"), plain("a")], [{"name": "a"}, {"name": "b"}, {"name": "c"}])
    assert (result.score, result.reason) == (pytest.approx(2 / 3), "2/3 matched: a out of order")
    repeated = score([plain("a", n=2), plain("a", n=1)], [{"name": "a", "arguments": {"n": 1}},
                                                            {"name": "a", "arguments": {"n": 2}}])
    assert (repeated.score, repeated.reason) == (0.5, "1/2 matched: a(n=2) out of order")


def best_in_order(expected: list[tuple[str, int]], calls: list[tuple[str, int]]) -> int:
    """Brute force: the most expected calls that appear, as a subsequence, in the calls."""

    def embeds(sub: tuple[tuple[str, int], ...]) -> bool:
        it = iter(calls)
        return all(any(c == e for c in it) for e in sub)

    return max(r for r in range(len(expected) + 1) for sub in itertools.combinations(expected, r) if embeds(sub))


def test_in_order_and_any_order_match_brute_force_on_random_trajectories() -> None:
    rng = random.Random(7)
    for _ in range(300):
        expected = [(rng.choice("abc"), rng.randint(1, 2)) for _ in range(rng.randint(0, 5))]
        calls = [(rng.choice("abcd"), rng.randint(1, 2)) for _ in range(rng.randint(0, 6))]
        as_dicts = [{"name": n, "arguments": {"v": v}} for n, v in expected]
        made = [plain(n, v=v) for n, v in calls]
        in_order, any_order = score(made, as_dicts), score(made, as_dicts, order="any")
        want = best_in_order(expected, calls)
        unordered = sum(min(expected.count(c), calls.count(c)) for c in set(expected))
        if expected:
            assert in_order.score == pytest.approx(want / len(expected)), (expected, calls, in_order.reason)
            assert any_order.score == pytest.approx(unordered / len(expected)), (expected, calls)
            assert in_order.reason.count(";") + 1 == len(expected) - want or want == len(expected)


def test_unicode_arguments_a_json_string_of_expected_calls_and_no_reported_calls() -> None:
    expected = json.dumps([{"name": "search", "arguments": {"q": "Zürich 東京"}}])
    assert score([openai("search", q="Zürich 東京")], expected).score == 1.0
    assert score(None, expected).reason == "0/1 matched: missing search(q='Zürich 東京')"
    assert score(None, []).reason == "no calls expected (0 made)"
    assert score([{"type": "tool_use", "name": "search", "input": {"q": "x"}}], [{"name": "search"}]).score == 1.0
    broken = score([{"function": {"arguments": "{}"}}])
    assert broken.status == "eval-error" and "metadata['tool_calls'][0] has no tool name" in (broken.error or "")


TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "required": ["q"], "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}}}}}]


def test_tool_calls_valid_in_openai_and_plain_tool_shapes() -> None:
    valid = score([openai("search", q="a", limit=2)], kind="tool_calls_valid", schema=TOOLS)
    assert (valid.score, valid.reason, valid.passed) == (1.0, "all 1 tool calls valid", True)
    bad = score([openai("search", limit="two"), plain("delete_all")], kind="tool_calls_valid",
                schema={"search": TOOLS[0]["function"]["parameters"]})
    assert bad.score == 0.0 and bad.passed is False
    assert bad.reason == ("2 of 2 tool calls invalid: search: at $: missing required property 'q' (and 1 more); "
                          "unknown tool 'delete_all' (known: search)")
    half = score([openai("search", q="a"), plain("nope")], kind="tool_calls_valid", schema=TOOLS)
    assert half.score == 0.5 and half.passed is False  # its pass mark is 1: every call must be valid
    assert score(None, kind="tool_calls_valid", schema=TOOLS).reason == "no tool calls made"
    with pytest.raises(EvaluatorError, match="the arguments schema of tool 'search' is not a valid JSON Schema"):
        Evaluator(name="v", type="tool_calls_valid", schema={"search": {"type": 3}})


def test_max_tool_calls() -> None:
    calls = [plain("search")] * 3
    assert score(calls, kind="max_tool_calls", n=3).reason == "3 tool calls, within 3"
    assert score([*calls, plain("search")], kind="max_tool_calls", n=3).score == 0.0
    assert score(None, kind="max_tool_calls", n=0).score == 1.0


def test_expected_calls_are_checked_before_any_agent_call(project: Path) -> None:
    calls: list[int] = []
    exp = experiment("agent", [{"input": "a", "expected_tool_calls": EXPECTED}, {"input": "b",
                                                                                 "expected_tool_calls": [{"args": 1}]}],
                     lambda ctx: calls.append(1) or "x",
                     evaluators=[Evaluator(name="trajectory", type="tool_call_match")])
    with pytest.raises(EvaluatorError, match=r"Evaluator 'trajectory': dataset item 1: item field "
                                             r"'expected_tool_calls'\[0\] has no tool name"):
        exp.run()
    assert calls == []
