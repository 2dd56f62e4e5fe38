"""`tool_calls_valid`: every tool call the agent reported names a known tool, with valid arguments."""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field, PrivateAttr, model_validator

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic
from .._toolcalls import Source, ToolCall, made_calls, source_field
from ._json_schema import error_text, path_text


class ToolCallsValid(Deterministic):
    """The share of tool calls made (reported, or in the trace with source="trace") that name a tool of `schema`
    with arguments valid against its JSON Schema (1 when there are none); passes only when all are valid."""

    kind = "tool_calls_valid"
    default_threshold = 1.0

    schema_: dict[str, Any] | list[dict[str, Any]] = Field(
        alias="schema", description="the tools: {name: JSON Schema of its arguments}, or a list of OpenAI "
                                    "({type, function: {name, parameters}}) or Anthropic ({name, input_schema}) tools")
    source: Source = source_field()
    _validators: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _valid_tools(self) -> Self:
        from jsonschema import Draft202012Validator, SchemaError, validators

        for name, parameters in _tools(self.schema_).items():
            cls = validators.validator_for(parameters, default=Draft202012Validator)
            try:
                cls.check_schema(parameters)
            except SchemaError as exc:
                raise ValueError(f"the arguments schema of tool {name!r} is not a valid JSON Schema: {exc.message}") \
                    from None
            self._validators[name] = cls(parameters)
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
        errors = sorted(validator.iter_errors(call.arguments if call.arguments is not None else {}),
                        key=lambda e: [str(p) for p in e.absolute_path])
        if not errors:
            return None
        return f"{call.name}: at {path_text(errors[0].absolute_path)}: {error_text(errors[0])}"


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
