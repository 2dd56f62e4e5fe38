"""Tool calls as agents report them, or as their trace shows them, read into one shape for the trajectory
kinds (`source="metadata"` or `source="trace"`).

Accepted per reported call: `{"name", "arguments"}` (also `args` or Anthropic's `input`), OpenAI's
`{"function": {"name", "arguments": "<JSON string>"}}` and Anthropic's `{"type": "tool_use", "name",
"input"}`; arguments given as a JSON string are parsed.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..llm._json import NonFiniteJson, loads_strict
from ..results._report import Evaluation
from ..traces._genai import tool_calls
from ._deterministic import quote

if TYPE_CHECKING:
    from ._context import EvalContext

#: Where the trajectory kinds find the calls the agent made: `metadata["tool_calls"]`.
METADATA_KEY = "tool_calls"


@dataclass(frozen=True)
class ToolCall:
    """One call: the tool's name and its arguments (`None` when an expected call does not fix them)."""

    name: str
    arguments: Any = None

    def show(self) -> str:
        if self.arguments is None:
            return self.name
        if isinstance(self.arguments, dict):
            args = ", ".join(f"{k}={quote(v, 40)}" for k, v in self.arguments.items())
            return f"{self.name}({args})"
        return f"{self.name}({quote(self.arguments, 60)})"


def read_calls(value: Any, what: str) -> list[ToolCall]:
    """The calls in `value` (a list, or a JSON string of one); ValueError naming `what` when malformed."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = loads_strict(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} is not valid JSON ({exc.msg})") from None
        except NonFiniteJson as exc:
            raise ValueError(f"{what} is not valid JSON ({exc})") from None
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of tool calls, got {type(value).__name__}")
    return [_read_call(call, f"{what}[{i}]") for i, call in enumerate(value)]


def _read_call(call: Any, where: str) -> ToolCall:
    if not isinstance(call, dict):
        raise ValueError(f"{where} must be an object with a name, got {quote(call, 60)}")
    body = call["function"] if isinstance(call.get("function"), dict) else call
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where} has no tool name (give {{'name': ..., 'arguments': {{...}}}})")
    arguments = next((body[key] for key in ("arguments", "args", "input") if key in body), None)
    if isinstance(arguments, str):
        # a text that is not JSON is kept as text: only an identical expected text can match it
        with contextlib.suppress(ValueError):  # broken JSON, or NaN/Infinity, which JSON has not
            arguments = loads_strict(arguments) if arguments.strip() else {}
    return ToolCall(name, arguments)


def reported_calls(metadata: dict[str, Any]) -> list[ToolCall]:
    """The calls the agent reported in its metadata (none when it reported none)."""
    return read_calls(metadata.get(METADATA_KEY), f"metadata[{METADATA_KEY!r}]")


#: Where a trajectory kind reads the calls made: the agent's metadata["tool_calls"], or its trace's spans.
Source = Literal["metadata", "trace"]
def source_field() -> Any:
    """The `source` option of the trajectory kinds."""
    return Field("metadata", description='where the calls made are read: "metadata" (the agent\'s '
                                         'metadata["tool_calls"]) or "trace" (its execute_tool spans, else the '
                                         'tool calls its model spans asked for)')

def no_trace(what: str) -> str:
    """Why an item whose trace holds no span cannot be scored on `what` (its tool calls, its model calls...)."""
    return (f"the item's trace has no spans, so {what} cannot be read from it: instrument the agent with "
            "OpenTelemetry (docs/traces.md)")


def made_calls(ctx: EvalContext, source: Source) -> list[ToolCall] | Evaluation:
    """The calls the agent made, read from `source`; an eval-error when they cannot be read."""
    if source == "trace":
        if not ctx.spans:
            return Evaluation(status="eval-error", error=no_trace("its tool calls") + ', or read the calls it '
                              'reports (source="metadata")')
        return [ToolCall(call.name, call.arguments) for call in tool_calls(ctx.spans)]
    try:
        return reported_calls(ctx.metadata)
    except ValueError as exc:
        return Evaluation(status="eval-error", error=f"the agent's {exc}")


def arguments_match(expected: Any, actual: Any, *, exact: bool) -> bool:
    """Whether `actual` arguments satisfy `expected` ones: equal with `exact`, else every expected key
    present with a matching value (recursively for objects). `None` expected: any arguments."""
    if expected is None:
        return True
    if exact:
        return same_json(expected, actual)
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and arguments_match(value, actual[key], exact=False) for key, value in expected.items())
    return same_json(expected, actual)


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: key order ignored, 1 == 1.0, but true != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
