"""`json_schema`: 1 when the output is JSON valid against a JSON Schema (draft 2020-12 by default)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field, PrivateAttr, model_validator

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, NotJson, parse_json, verdict
from .._jsonschema import compile_schema, schema_problem


class JsonSchema(Deterministic):
    """1 when the output is JSON valid against `schema` (JSON Schema, draft 2020-12 unless `$schema` says
    otherwise; `format` checked); the reason names the first failing path."""

    kind = "json_schema"

    schema_: dict[str, Any] | bool = Field(alias="schema", description="the JSON Schema, as a dict")
    _validator: Any = PrivateAttr(None)

    @model_validator(mode="after")
    def _valid_schema(self) -> Self:
        self._validator = compile_schema(self.schema_, "schema")
        return self

    def describe(self) -> dict[str, Any]:
        return {"schema": self.schema_, "negate": self.negate}

    def check(self, ctx: EvalContext) -> Evaluation:
        try:
            instance = parse_json(ctx.output)
        except NotJson as exc:
            return verdict(False, str(exc))
        problem = schema_problem(self._validator, instance)
        return verdict(problem is None, problem or "valid against the schema")
