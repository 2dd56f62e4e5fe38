"""`tool_calls_valid`: every tool call the agent reported names a known tool, with valid arguments."""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field, PrivateAttr, model_validator

from ...llm._json import non_finite
from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic
from .._jsonschema import compile_schema, schema_problem
from .._toolcalls import Source, ToolCall, made_calls, source_field


class ToolCallsValid(Deterministic):
    """The share of tool calls made (reported, or in the trace with source="trace") that name a tool of `schema`
    with arguments valid against its JSON Schema (1 when there are none); passes only when all are valid."""

    kind = "tool_calls_valid"
    default_threshold = 1.0

    schema_: dict[str, Any] | list[dict[str, Any]] = Field(
        alias="schema", description="the tools: {name: JSON Schema of its arguments}, or a list of OpenAI "
                                    "({type, function: {name, parameters}}) or Anthropic ({name, input_schema}) tools")
    source: Source = source_field()

    @property
    def reads_spans(self) -> bool:
        return self.source == "trace"
    _validators: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _valid_tools(self) -> Self:
        for name, parameters in _tools(self.schema_).items():
            self._validators[name] = compile_schema(parameters, f"the arguments schema of tool {name!r}")
        return self

    def describe(self) -> dict[str, Any]:
        return {"schema": self.schema_, "source": self.source, "negate": self.negate}

    def check(self, ctx: EvalContext) -> Evaluation:
        calls = made_calls(ctx, self.source)
        if isinstance(calls, Evaluation):
            return calls
        if not calls:
            return Evaluation(score=1.0, reason="no tool calls made")
        problems = [p for p in (self._problem(call) for call in calls) if p]
        if not problems:
            return Evaluation(score=1.0, reason=f"all {len(calls)} tool calls valid")
        return Evaluation(score=(len(calls) - len(problems)) / len(calls),
                          reason=f"{len(problems)} of {len(calls)} tool calls invalid: {'; '.join(problems[:5])}")

    def _problem(self, call: ToolCall) -> str | None:
        validator = self._validators.get(call.name)
        if validator is None:
            return f"unknown tool {call.name!r} (known: {', '.join(self._validators) or 'none'})"
        found = non_finite(call.arguments)
        if found is not None:
            return f"{call.name}: at {found[0]}: {found[1]!r} is not a JSON value (JSON has no NaN or Infinity)"
        problem = schema_problem(validator, call.arguments if call.arguments is not None else {})
        return f"{call.name}: {problem}" if problem else None


def _tools(schema: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
    """{tool name: arguments schema} from any of the accepted shapes."""
    if isinstance(schema, dict):
        return dict(schema)
    tools = {}
    for i, tool in enumerate(schema):
        body = tool["function"] if isinstance(tool.get("function"), dict) else tool
        name = body.get("name")
        if not isinstance(name, str):
            raise ValueError(f"tool {i} of schema has no name")
        tools[name] = body.get("parameters", body.get("input_schema", {}))
    return tools
