"""`json_schema`: 1 when the output is JSON valid against a JSON Schema (draft 2020-12 by default)."""

from __future__ import annotations

import re
from typing import Any, Self

from pydantic import Field, PrivateAttr, model_validator

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, NotJson, parse_json, verdict

_REQUIRED = re.compile(r"^(.*) is a required property$")


class JsonSchema(Deterministic):
    """1 when the output is JSON valid against `schema` (JSON Schema, draft 2020-12 unless `$schema` says
    otherwise; `format` checked); the reason names the first failing path."""

    kind = "json_schema"

    schema_: dict[str, Any] | bool = Field(alias="schema", description="the JSON Schema, as a dict")
    _validator: Any = PrivateAttr(None)

    @model_validator(mode="after")
    def _valid_schema(self) -> Self:
        from jsonschema import Draft202012Validator, SchemaError, validators

        cls = validators.validator_for(self.schema_, default=Draft202012Validator)
        try:
            cls.check_schema(self.schema_)
        except SchemaError as exc:
            where = path_text(exc.absolute_path)
            raise ValueError(f"schema is not a valid JSON Schema: {exc.message} (at {where} of the schema)") from None
        self._validator = cls(self.schema_, format_checker=cls.FORMAT_CHECKER)
        return self

    def describe(self) -> dict[str, Any]:
        return {"schema": self.schema_, "negate": self.negate}

    def check(self, ctx: EvalContext) -> Evaluation:
        try:
            instance = parse_json(ctx.output)
        except NotJson as exc:
            return verdict(False, str(exc))
        errors = sorted(self._validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
        if not errors:
            return verdict(True, "valid against the schema")
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return verdict(False, f"at {path_text(errors[0].absolute_path)}: {error_text(errors[0])}{more}")


def path_text(path: Any) -> str:
    """`$`, `$.address.country`, `$.items[0]`."""
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def error_text(error: Any) -> str:
    if error.validator == "required":
        match = _REQUIRED.match(error.message)
        if match:
            return f"missing required property {match.group(1)}"
    return str(error.message)
