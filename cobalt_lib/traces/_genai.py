"""What spans mean under the OpenTelemetry GenAI semantic conventions: model calls with their model,
messages and token usage, tool calls with their arguments and results.

The conventions (`gen_ai.*`) are what the OpenAI and Anthropic instrumentations, pydantic-ai, LangChain and
others emit: `gen_ai.operation.name` says what a span is (`chat`, `text_completion`, `generate_content`,
`embeddings`, `execute_tool`, `invoke_agent`, `create_agent`); model spans carry `gen_ai.request.model`,
`gen_ai.response.model`, `gen_ai.usage.input_tokens`/`output_tokens` and the JSON attributes
`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`; tool spans carry
`gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..llm._json import loads_strict
from ..llm._pricing import cost_usd
from ..results._spans import SpanRecord

#: The operations that call a model for an answer (what `max_model_calls` counts).
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_KINDS = {**{op: "model" for op in MODEL_OPERATIONS}, "embeddings": "embeddings", "execute_tool": "tool",
          "invoke_agent": "agent", "create_agent": "agent"}
#: The attributes holding messages (JSON text on spans).
MESSAGE_KEYS = ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages")


def kind_of(attributes: Mapping[str, Any]) -> str:
    """`model`, `embeddings`, `tool`, `agent` or `other`: by `gen_ai.operation.name`, else (instrumentations
    older than it) a span with a requested model is a model call and one with a tool name a tool call."""
    operation = attributes.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation in _KINDS:
        return _KINDS[operation]
    if "gen_ai.tool.name" in attributes:
        return "tool"
    if "gen_ai.request.model" in attributes or "gen_ai.usage.input_tokens" in attributes:
        return "model"
    return "other"


def json_value(value: Any) -> Any:
    """An attribute that holds JSON text, parsed (a text that is not JSON stays text)."""
    if isinstance(value, str) and value[:1] in "[{":
        with contextlib.suppress(ValueError):  # NaN and Infinity too: JSON has none
            return loads_strict(value)
    return value


def model_of(span: SpanRecord) -> str | None:
    model = span.attributes.get("gen_ai.response.model") or span.attributes.get("gen_ai.request.model")
    return str(model) if model else None


def tokens_of(span: SpanRecord) -> tuple[int | None, int | None]:
    """A model span's (input, output) tokens; the older `prompt_tokens`/`completion_tokens` names too."""
    a = span.attributes
    return (_int(a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))),
            _int(a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))))


def model_calls(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    """The spans that called a model for an answer (chat, text completion, content generation)."""
    return [s for s in spans if s.kind == "model"]


def usage_metadata(spans: Sequence[SpanRecord], prices: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """The item metadata the model spans amount to (the keys `track_usage` writes): `llm_calls`,
    `input_tokens`, `output_tokens`, `model` (one model answered them all) and `cost_usd` (every model
    priced); none when no model span reported tokens."""
    calls, tally = usage_tally(spans)
    return usage_of_tally(calls, tally, prices)


def usage_tally(spans: Sequence[SpanRecord]) -> tuple[int, dict[str, list[int]]]:
    """The model calls that reported tokens, and `{model: [input tokens, output tokens]}` over them: what
    `usage_metadata` prices (kept as it is by a production trace's summary, priced when it is read)."""
    tally: dict[str, list[int]] = {}
    calls = 0
    for span in spans:
        if span.kind not in ("model", "embeddings"):
            continue
        tokens_in, tokens_out = tokens_of(span)
        if tokens_in is None and tokens_out is None:
            continue
        calls += 1
        counted = tally.setdefault(model_of(span) or "unknown", [0, 0])
        counted[0] += tokens_in or 0
        counted[1] += tokens_out or 0
    return calls, tally


def usage_of_tally(calls: int, tally: Mapping[str, Sequence[int]],
                   prices: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """`usage_metadata` from a `usage_tally`."""
    if not calls:
        return {}
    found: dict[str, Any] = {"llm_calls": calls, "input_tokens": sum(t[0] for t in tally.values()),
                             "output_tokens": sum(t[1] for t in tally.values())}
    if len(tally) == 1:
        found["model"] = next(iter(tally))
    costs = [cost_usd(model, t[0], t[1], prices) for model, t in tally.items()]
    if all(c is not None for c in costs):
        found["cost_usd"] = sum(c for c in costs if c is not None)
    return found


@dataclass(frozen=True)
class TraceToolCall:
    """A tool call read from a trace: its name, arguments and result (None when the span has none)."""

    name: str
    arguments: Any = None
    result: Any = None
    call_id: str | None = None


def tool_calls(spans: Sequence[SpanRecord]) -> list[TraceToolCall]:
    """The tool calls of a trace in the order they started: its `execute_tool` spans; a trace without any
    (an instrumented model client, tools run by plain code) gives the calls its model spans asked for
    (`tool_call` parts of `gen_ai.output.messages`).

    Not counted as made: pydantic-ai's output-function spans (`final_result`: the model giving its answer
    through a tool, no tool of the agent's), and calls deferred for approval or for an outside executor
    (they did not run; an approved one runs later, in a span of its own)."""
    ordered = sorted(spans, key=lambda s: s.start_ns)
    tools = [s for s in ordered if s.kind == "tool"]
    if tools:
        return [TraceToolCall(str(s.attributes.get("gen_ai.tool.name") or s.name), tool_arguments(s.attributes),
                              tool_result(s.attributes), _str(s.attributes.get("gen_ai.tool.call.id")))
                for s in tools if not is_output_function(s) and not is_deferred(s)]
    return [call for s in ordered if s.kind == "model" for call in _requested(s)]


#: Where a tool span keeps its arguments and result: the GenAI conventions' names, then pydantic-ai's
#: instrumentation version 2 (`tool_arguments`, `tool_response`), which its users may still set.
_ARGUMENT_KEYS = ("gen_ai.tool.call.arguments", "tool_arguments")
_RESULT_KEYS = ("gen_ai.tool.call.result", "tool_response")
#: pydantic-ai's marks: an output function's span says so in its message (version 2 in its name too), a
#: deferred call carries the deferral's name (`ApprovalRequired`, `CallDeferred`).
_OUTPUT_FUNCTION = "running output function"
DEFERRAL_KEY = "pydantic_ai.tool.deferral.name"


def tool_arguments(attributes: Mapping[str, Any]) -> Any:
    """A tool span's arguments (parsed when JSON), under either name; None when it records none."""
    return json_value(next((attributes[k] for k in _ARGUMENT_KEYS if k in attributes), None))


def tool_result(attributes: Mapping[str, Any]) -> Any:
    """A tool span's result (parsed when JSON), under either name; None when it records none."""
    return json_value(next((attributes[k] for k in _RESULT_KEYS if k in attributes), None))


def is_output_function(span: SpanRecord) -> bool:
    """pydantic-ai's span of an output function (the model's answer given through `final_result`)."""
    message = span.attributes.get("logfire.msg")
    return span.name.startswith(_OUTPUT_FUNCTION) or (isinstance(message, str)
                                                     and message.startswith(_OUTPUT_FUNCTION))


def is_deferred(span: SpanRecord) -> bool:
    """A tool call deferred (pydantic-ai's ApprovalRequired or CallDeferred): asked for, not run."""
    return bool(span.attributes.get(DEFERRAL_KEY))


def _requested(span: SpanRecord) -> list[TraceToolCall]:
    calls = []
    for message in messages(span.attributes.get("gen_ai.output.messages")):
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name"):
                calls.append(TraceToolCall(str(part["name"]), json_value(part.get("arguments")),
                                           call_id=_str(part.get("id"))))
    return calls


def messages(value: Any) -> list[dict[str, Any]]:
    """A messages attribute as a list of `{role, parts: [...]}` (the conventions' shape); a bare list of
    parts (`gen_ai.system_instructions`) as one system message; anything else as none."""
    value = json_value(value)
    if isinstance(value, str):
        return [{"role": "system", "parts": [{"type": "text", "content": value}]}]
    if not isinstance(value, list):
        return []
    if value and all(isinstance(v, dict) and "role" not in v and "type" in v for v in value):
        return [{"role": "system", "parts": value}]
    return [v for v in value if isinstance(v, dict)]


def message_text(message: Mapping[str, Any]) -> str:
    """A message as one line of text: its text parts, and each tool call or tool result in short."""
    pieces = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            pieces.append(str(part.get("content", "")))
        elif kind == "tool_call":
            pieces.append(f"[tool call {part.get('name')}({_compact(part.get('arguments'))})]")
        elif kind == "tool_call_response":
            pieces.append(f"[tool result {_compact(part.get('response', part.get('result')))}]")
        else:
            pieces.append(f"[{kind}]")
    if not pieces and "content" in message:  # the older {role, content} shape
        pieces.append(message["content"] if isinstance(message["content"], str) else _compact(message["content"]))
    return " ".join(pieces)


def _compact(value: Any) -> str:
    value = json_value(value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)
