"""Traces as OpenLLMetry, OpenInference and pydantic-ai/Logfire emit them, read for the same input, output,
tool calls and usage (the attributes as those instrumentations name them)."""

from __future__ import annotations

import json

from cobalt_lib.monitor import read_trace
from cobalt_lib.results._spans import SpanRecord

QUESTION, ANSWER = "Where is parcel 1234?", "In Lyon."


def span(span_id: str, name: str, start: int, parent: str | None = None, **attributes: object) -> SpanRecord:
    return SpanRecord(span_id=span_id, parent_id=parent, trace_id="t" * 32, name=name, start_ns=start,
                      duration_ms=1.0, attributes=attributes)


def test_openllmetry_flattened_prompts_and_completions() -> None:
    spans = [
        span("a", "support.workflow", 1, **{"traceloop.span.kind": "workflow",
                                          "traceloop.entity.input": json.dumps(QUESTION)}),
        span("b", "openai.chat", 2, "a", **{"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                            "gen_ai.usage.prompt_tokens": 50, "gen_ai.usage.completion_tokens": 5,
                                            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": QUESTION,
                                            "gen_ai.completion.0.role": "assistant",
                                            "gen_ai.completion.0.tool_calls.0.name": "track",
                                            "gen_ai.completion.0.tool_calls.0.arguments": '{"parcel": "1234"}'}),
        span("c", "track.tool", 3, "a", **{"traceloop.span.kind": "tool",
                                           "traceloop.entity.input": '{"parcel": "1234"}',
                                           "traceloop.entity.output": '{"city": "Lyon"}'}),
        span("d", "openai.chat", 4, "a", **{"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.prompt_tokens": 70,
                                            "gen_ai.usage.completion_tokens": 4, "gen_ai.prompt.0.role": "user",
                                            "gen_ai.prompt.0.content": QUESTION,
                                            "gen_ai.completion.0.role": "assistant",
                                            "gen_ai.completion.0.content": ANSWER}),
    ]
    trace = read_trace("t" * 32, spans)
    assert (trace.input, trace.output) == (QUESTION, ANSWER)
    assert [(c.name, c.arguments, c.result) for c in trace.tool_calls] == [("track.tool", {"parcel": "1234"},
                                                                            {"city": "Lyon"})]
    assert (trace.usage["llm_calls"], trace.usage["input_tokens"], trace.usage["output_tokens"]) == (2, 120, 9)
    assert trace.conversation == [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": ANSWER}]


def test_openinference_messages_values_and_token_counts() -> None:
    spans = [
        span("a", "agent", 1, **{"openinference.span.kind": "AGENT", "input.value": QUESTION, "output.value": ANSWER}),
        span("b", "ChatCompletion", 2, "a", **{"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                                               "llm.token_count.prompt": 30, "llm.token_count.completion": 3,
                                               "llm.input_messages.0.message.role": "user",
                                               "llm.input_messages.0.message.content": QUESTION,
                                               "llm.output_messages.0.message.role": "assistant",
                                               "llm.output_messages.0.message.content": ANSWER}),
        span("c", "track", 3, "a", **{"openinference.span.kind": "TOOL", "tool.name": "track",
                                      "tool.parameters": '{"parcel": "1234"}', "output.value": "Lyon"}),
    ]
    trace = read_trace("t" * 32, spans, prices={"gpt-4o-mini": (1.0, 2.0)})
    assert (trace.input, trace.output) == (QUESTION, ANSWER)
    assert [(c.name, c.arguments, c.result) for c in trace.tool_calls] == [("track", {"parcel": "1234"}, "Lyon")]
    assert (trace.usage["model"], trace.usage["cost_usd"]) == ("gpt-4o-mini", (30 * 1.0 + 3 * 2.0) / 1e6)
    assert trace.spans[0].attributes["input.value"] == QUESTION  # the instrumentation's own names are kept


def test_pydantic_ai_agent_run_gives_its_final_result() -> None:
    asked = json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}])
    spans = [
        span("a", "agent run", 1, **{"gen_ai.operation.name": "invoke_agent", "final_result": ANSWER}),
        span("b", "chat gpt-4o", 2, "a", **{"gen_ai.operation.name": "chat", "gen_ai.input.messages": asked,
                                            "gen_ai.request.model": "gpt-4o"}),
    ]
    trace = read_trace("t" * 32, spans)
    assert (trace.input, trace.output, trace.tool_calls) == (QUESTION, ANSWER, [])
