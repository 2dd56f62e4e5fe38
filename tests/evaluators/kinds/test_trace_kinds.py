"""The kinds that read the agent's trace: has_span, max_model_calls, and the trajectory kinds with
source="trace" (execute_tool spans, or the tool calls model spans asked for), on spans given directly."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cobalt_lib import EvalContext, Evaluator, EvaluatorError, SpanRecord
from cobalt_lib.results import Evaluation


def span(name: str, kind: str, start: int, **attributes: Any) -> SpanRecord:
    return SpanRecord(span_id=f"{start:016x}", name=name, kind=kind, start_ns=start, duration_ms=1.0,
                      status=attributes.pop("status", "unset"), attributes=attributes)


def chat(start: int, calls: list[dict[str, Any]] | None = None) -> SpanRecord:
    parts: list[dict[str, Any]] = [{"type": "text", "content": "thinking"}]
    parts += [{"type": "tool_call", "id": f"c{i}", "name": c["name"], "arguments": c["arguments"]}
              for i, c in enumerate(calls or [])]
    return span("chat gpt-4o", "model", start, **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                                  "gen_ai.output.messages": json.dumps([{"role": "assistant",
                                                                                         "parts": parts}])})


def tool(start: int, name: str, **arguments: Any) -> SpanRecord:
    return span(f"execute_tool {name}", "tool", start, **{"gen_ai.operation.name": "execute_tool",
                                                           "gen_ai.tool.name": name,
                                                           "gen_ai.tool.call.arguments": json.dumps(arguments)})


TRACE = (chat(1), tool(3, "book", id=7), tool(2, "search", q="Paris"), chat(4))


def score(spans: tuple[SpanRecord, ...], kind: str, item: dict[str, Any] | None = None, **options: Any) -> Evaluation:
    evaluator = Evaluator(name="t", type=kind, **options)
    ctx = EvalContext(item=item or {}, output="done", spans=spans)
    return asyncio.run(evaluator.evaluate(ctx, None, None))


def test_tool_calls_come_from_execute_tool_spans_in_the_order_they_started() -> None:
    expected = {"expected_tool_calls": [{"name": "search", "arguments": {"q": "Paris"}}, {"name": "book"}]}
    assert score(TRACE, "tool_call_match", expected, source="trace").score == 1.0
    flipped = {"expected_tool_calls": [{"name": "book"}, {"name": "search"}]}
    got = score(TRACE, "tool_call_match", flipped, source="trace")
    assert (got.score, got.reason) == (0.5, "1/2 matched: search out of order")
    assert score(TRACE, "max_tool_calls", n=1, source="trace").reason == "2 tool calls, over 1"
    # the default still reads the agent's metadata, which reports none here
    assert score(TRACE, "max_tool_calls", n=0).reason == "0 tool calls, within 0"


def test_without_tool_spans_the_calls_the_model_asked_for_count() -> None:
    spans = (chat(1, [{"name": "search", "arguments": {"q": "Oslo"}}]), chat(2, [{"name": "book", "arguments": "{}"}]))
    got = score(spans, "tool_calls_valid", source="trace", schema={"search": {"required": ["q"]}})
    assert (got.score, got.reason) == (0.5, "1 of 2 tool calls invalid: unknown tool 'book' (known: search)")


@pytest.mark.parametrize(("options", "value", "reason"), [
    ({"span_name": "execute_tool book"}, 1.0, "1 of 4 spans match name 'execute_tool book': execute_tool book"),
    ({"name_matches": "^execute_tool ", "min_count": 3}, 0.0,
     "2 of 4 spans match name matching '^execute_tool ' (at least 3 wanted): execute_tool book, execute_tool search"),
    ({"span_kind": "model", "attributes": {"gen_ai.request.model": "gpt-4o"}, "min_count": 2}, 1.0,
     "2 of 4 spans match kind model, gen_ai.request.model='gpt-4o' (at least 2 wanted): chat gpt-4o"),
    # an attribute holding JSON text is compared as its JSON
    ({"attributes": {"gen_ai.tool.call.arguments": {"q": "Paris"}}}, 1.0,
     "1 of 4 spans match gen_ai.tool.call.arguments={'q': 'Paris'}: execute_tool search"),
    ({"span_kind": "tool", "status": "error"}, 0.0, "0 of 4 spans match kind tool, status error"),
    ({"span_kind": "tool", "status": "error", "negate": True}, 1.0,
     "not wanted: 0 of 4 spans match kind tool, status error"),
])
def test_has_span(options: dict[str, Any], value: float, reason: str) -> None:
    got = score(TRACE, "has_span", **options)
    assert (got.score, got.reason) == (value, reason)


def test_max_model_calls_counts_answers_not_embeddings() -> None:
    spans = (*TRACE, span("embeddings", "embeddings", 9, **{"gen_ai.operation.name": "embeddings"}))
    assert score(spans, "max_model_calls", n=2).reason == "2 model calls, within 2"
    assert score(spans, "max_model_calls", n=1).score == 0.0


@pytest.mark.parametrize(("kind", "options", "what"), [
    ("has_span", {"span_name": "x"}, "its spans"), ("max_model_calls", {"n": 1}, "its model calls"),
    ("max_tool_calls", {"n": 1, "source": "trace"}, "its tool calls")])
def test_an_item_without_spans_is_an_eval_error_saying_to_instrument(kind: str, options: dict[str, Any],
                                                                     what: str) -> None:
    got = score((), kind, **options)
    assert got.status == "eval-error"
    assert got.error is not None and got.error.startswith(f"the item's trace has no spans, so {what} cannot be read "
                                                          "from it: instrument the agent with OpenTelemetry")


@pytest.mark.parametrize(("options", "message"), [
    ({}, "Evaluator 'x' (has_span): give at least one of span_name, name_matches, span_kind, attributes or status."),
    ({"name_matches": "("}, "Evaluator 'x' (has_span): name_matches='(' is not a regular expression: missing ), "
                            "unterminated subpattern at position 0."),
    ({"span_kind": "llm"}, "Evaluator 'x' (has_span): span_kind='llm' is not valid: input should be 'model', "
                           "'embeddings', 'tool', 'agent' or 'other'."),
])
def test_has_span_declarations_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(EvaluatorError) as raised:
        Evaluator(name="x", type="has_span", **options)
    assert str(raised.value) == message


def test_source_is_checked_at_declaration() -> None:
    with pytest.raises(EvaluatorError, match=r"source='spans' is not valid: input should be 'metadata' or 'trace'"):
        Evaluator(name="x", type="max_tool_calls", n=1, source="spans")
